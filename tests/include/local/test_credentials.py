"""Secrets are generated where first needed, private to their owner, shown once, never defaulted."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

from adlake.local import credentials
from tests.conftest import private_settings
from tests.dags import conftest as _airflow_home  # noqa: F401  (set before Airflow is imported)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_admin_password_is_generated_once_and_private(tmp_path):
    settings = private_settings(tmp_path)
    password, created = credentials.ensure_admin_password(settings)
    again, created_again = credentials.ensure_admin_password(settings)
    path = credentials.passwords_path(settings)
    assert (created, created_again) == (True, False)
    assert again == password and len(password) >= 16 and password != credentials.ADMIN
    assert path.is_relative_to(settings.runtime_dir)
    assert mode(path) == 0o600
    assert json.loads(path.read_text()) == {credentials.ADMIN: password}


def test_other_users_passwords_are_generated_once_beside_the_admins(tmp_path):
    settings = private_settings(tmp_path)
    admin, _ = credentials.ensure_admin_password(settings)
    new = credentials.ensure_user_passwords(settings, ["viewer", "analyst"])
    assert sorted(new) == ["analyst", "viewer"] and len(set(new.values())) == 2
    assert credentials.ensure_user_passwords(settings, ["viewer", "analyst"]) == {}
    path = credentials.passwords_path(settings)
    assert json.loads(path.read_text()) == {credentials.ADMIN: admin, **new}
    assert mode(path) == 0o600
    assert credentials.user_password(settings, "viewer") == new["viewer"]
    assert credentials.user_password(settings, "nobody") is None


def test_airflow_runs_adlakes_auth_manager_with_the_configured_users(tmp_path):
    from adlake.local.platform import airflow_env

    settings = private_settings(tmp_path).with_overrides(
        airflow_users=(("viewer", "VIEWER"), ("analyst", "USER"))
    )
    env = airflow_env(settings, base={})
    assert env["AIRFLOW__CORE__AUTH_MANAGER"] == "adlake.airflow.auth.AdlakeAuthManager"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == (
        "admin:admin,viewer:viewer,analyst:user"
    )
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(
        credentials.passwords_path(settings)
    )


def test_two_runtimes_get_different_passwords(tmp_path):
    first = credentials.ensure_admin_password(private_settings(tmp_path / "a"))[0]
    second = credentials.ensure_admin_password(private_settings(tmp_path / "b"))[0]
    assert first != second


def test_a_password_file_readable_by_others_is_made_private(tmp_path):
    settings = private_settings(tmp_path)
    credentials.ensure_admin_password(settings)
    path = credentials.passwords_path(settings)
    path.chmod(0o644)
    credentials.ensure_admin_password(settings)
    assert mode(path) == 0o600


def test_the_command_announces_the_password_only_when_it_generates_it(tmp_path):
    env = {
        "ADLAKE_PROFILE": "compose",
        "ADLAKE_RUNTIME_DIR": str(tmp_path / "data"),
        "PATH": "/usr/bin:/bin",
    }
    run = [sys.executable, "-m", "adlake.local.credentials", "admin-password"]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    second = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    password = first.stdout.strip()
    assert second.stdout.strip() == password
    assert password in first.stderr and "only this once" in first.stderr
    assert second.stderr == ""
    assert mode(tmp_path / "data" / "airflow" / "passwords.json") == 0o600


def test_the_airflow_admin_gets_the_generated_password_in_process_never_shown(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("ADLAKE_PROFILE", "compose")
    monkeypatch.setenv("ADLAKE_RUNTIME_DIR", str(tmp_path / "data"))
    calls: list[list[str]] = []
    # Airflow's `users create` (the FAB auth manager's, in the compose image), in this process
    monkeypatch.setattr(credentials, "_airflow_cli", calls.append)
    assert credentials.main(["airflow-admin"]) == 0
    assert credentials.main(["airflow-admin"]) == 0  # an init run again: the same password
    path = tmp_path / "data" / "airflow" / "passwords.json"
    password = json.loads(path.read_text())[credentials.ADMIN]
    (first, again) = calls
    assert first == again and first[:2] == ["users", "create"]
    assert first[first.index("--password") + 1] == password
    assert first[first.index("--username") + 1] == credentials.ADMIN
    shown = capsys.readouterr()
    assert password not in shown.out + shown.err  # the container log
    assert str(path) in shown.err and credentials.SHOW_PASSWORD_COMPOSE in shown.err
    assert mode(path) == 0o600


def test_airflows_commands_run_in_this_process(capsys):
    from airflow import __version__

    credentials._airflow_cli(["version"])
    assert capsys.readouterr().out.strip() == __version__


def test_compose_env_generates_every_secret_privately_and_keeps_existing_ones(tmp_path):
    path = tmp_path / ".env"
    assert credentials.ensure_compose_env(path) == list(credentials.COMPOSE_SECRETS)
    values = credentials.read_env_file(path)
    assert set(values) == set(credentials.COMPOSE_SECRETS) and all(values.values())
    assert len(set(values.values())) == len(values)
    assert mode(path) == 0o600
    assert credentials.ensure_compose_env(path) == []
    assert credentials.read_env_file(path) == values


def test_compose_env_adds_a_missing_secret_without_touching_the_others(tmp_path):
    path = tmp_path / ".env"
    path.write_text("POSTGRES_PASSWORD=kept\n")
    path.chmod(0o644)
    added = credentials.ensure_compose_env(path)
    values = credentials.read_env_file(path)
    assert added == [n for n in credentials.COMPOSE_SECRETS if n != "POSTGRES_PASSWORD"]
    assert values["POSTGRES_PASSWORD"] == "kept" and all(values.values())
    assert mode(path) == 0o600


def test_the_fernet_key_is_one_fernet_accepts():
    from cryptography.fernet import Fernet

    Fernet(credentials.new_compose_secret("AIRFLOW_FERNET_KEY").encode())


def test_the_compose_env_file_is_ignored_by_git():
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(credentials.COMPOSE_ENV_FILE)],
        cwd=credentials.REPO_ROOT,
        check=False,
    )
    assert ignored.returncode == 0
