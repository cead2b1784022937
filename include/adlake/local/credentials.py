"""Secrets of the platform: generated where they are first needed, never written in the repository.

Two places hold secrets, each created once, readable only by its owner (mode 600), and shown
only at the moment it is made:

* the Airflow admin's password, under the runtime dir (``<runtime>/airflow/passwords.json``),
  in every profile: ``make up`` generates it at its first start (``local``); in the ``compose``
  profile the ``airflow-init`` service does, on the data volume, and creates the admin with it
  (``python -m adlake.local.credentials airflow-admin``: never on a command line, never in the
  container's log). There is no default password anywhere.
* the compose deployment's own secrets (Postgres, the JWT secret that signs task tokens, the
  Fernet key that encrypts connections): in ``.env`` beside ``docker-compose.yaml``, which
  Compose reads for ``${VAR}`` and git ignores. ``make compose-env`` writes it; the compose file
  refuses to start without it (``${VAR:?...}``) instead of falling back to a known value.

A file is created with ``O_EXCL`` at mode 600, so the secret is never readable by others, not
even between its creation and a ``chmod``, and two first starts racing cannot both write one.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "s"
>>> created = create_private(path, "x")
>>> created, create_private(path, "y"), path.read_text(), oct(path.stat().st_mode & 0o777)
(True, False, 'x', '0o600')
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter

ADMIN = "admin"
PRIVATE = 0o600
# Compose's own secrets, by the variable docker-compose.yaml reads (``${NAME:?...}``).
COMPOSE_ENV_FILE = REPO_ROOT / ".env"
COMPOSE_SECRETS: dict[str, str] = {
    "POSTGRES_PASSWORD": "the metadata database's password (Postgres and Airflow's connection)",
    "AIRFLOW_JWT_SECRET": "signs the task tokens the scheduler mints and the API server checks",
    "AIRFLOW_FERNET_KEY": "encrypts connections and variables in the metadata database",
}


def create_private(path: Path, text: str) -> bool:
    """Write ``text`` to a new file at ``path`` readable by its owner only; False (and nothing
    written) if the file exists already."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return True


def passwords_path(settings: Settings) -> Path:
    """The admin's password file (JSON ``{user: password}``, the format Airflow's
    SimpleAuthManager reads in the local profile)."""
    return settings.runtime_dir / "airflow" / "passwords.json"


def ensure_admin_password(settings: Settings) -> tuple[str, bool]:
    """The admin's password and whether this call generated it (the one time to show it)."""
    path = passwords_path(settings)
    created = create_private(path, json.dumps({ADMIN: secrets.token_urlsafe(12)}))
    if not created and path.stat().st_mode & 0o077:
        path.chmod(PRIVATE)  # a file from before this rule, or copied with a loose umask
    return json.loads(path.read_text())[ADMIN], created


# What the compose deployment's airflow-init tells the operator instead of the password.
SHOW_PASSWORD_COMPOSE = (
    "docker compose exec -u 0 airflow-apiserver python -m adlake.local.credentials admin-password"
)


def create_airflow_admin(
    settings: Settings, airflow: Callable[[list[str]], None] | None = None
) -> str:
    """Create the Airflow admin user with :func:`ensure_admin_password`'s password (the compose
    profile's FAB login; a user already there is left as it is) and say where the password is.

    The password goes to Airflow's own ``users create``, run in this process (``airflow``, a
    test's stand-in): never on a command line (``ps``, ``/proc/<pid>/cmdline``, the container's
    inspect output) and never printed, so the container log does not hold it."""
    password, _ = ensure_admin_password(settings)
    (airflow or _airflow_cli)(
        ["users", "create", "--role", "Admin", "--username", ADMIN, "--firstname", "Adlake"]
        + ["--lastname", "Admin", "--email", f"{ADMIN}@adlake.invalid", "--password", password]
    )
    return (
        f"[credentials] the Airflow admin is {ADMIN!r}; its password is kept in "
        f"{passwords_path(settings)} (mode 600) and printed by: {SHOW_PASSWORD_COMPOSE}"
    )


def _airflow_cli(argv: list[str]) -> None:
    """``airflow <argv>`` in this process, as Airflow's entry point runs it."""
    from airflow import configuration  # noqa: F401  (first, as airflow.__main__ imports it)
    from airflow.cli import cli_parser

    args = cli_parser.get_parser().parse_args(argv)
    args.func(args)


def new_compose_secret(name: str) -> str:
    if name == "AIRFLOW_FERNET_KEY":  # Fernet wants 32 url-safe base64-encoded bytes
        return base64.urlsafe_b64encode(os.urandom(32)).decode()
    return secrets.token_urlsafe(24)


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of an env file (comments and blank lines skipped)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, value = line.split("=", 1)
            out[name.strip()] = value.strip()
    return out


def ensure_compose_env(path: Path = COMPOSE_ENV_FILE) -> list[str]:
    """Create ``path`` with a generated value for each of :data:`COMPOSE_SECRETS`, or add the
    ones it lacks (values already there are kept: the database was initialised with them).
    Returns the names generated now."""
    lines = [
        f"# {name}: {what}\n{name}={new_compose_secret(name)}\n"
        for name, what in COMPOSE_SECRETS.items()
    ]
    if create_private(
        path, "# Generated by `make compose-env`; never commit this file.\n" + "".join(lines)
    ):
        return list(COMPOSE_SECRETS)
    present = read_env_file(path)
    missing = [n for n in COMPOSE_SECRETS if not present.get(n)]
    if missing:
        with path.open("a") as out:
            out.writelines(f"{n}={new_compose_secret(n)}\n" for n in missing)
    path.chmod(PRIVATE)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="adlake.local.credentials", description=__doc__, formatter_class=HelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "admin-password",
        help="print the admin's password on stdout (for a script), generating it "
        "at the first call, which alone also announces it on stderr",
    )
    sub.add_parser(
        "airflow-admin",
        help="create the Airflow admin user with the generated password (compose's "
        "airflow-init), never printing it nor passing it on a command line",
    )
    env = sub.add_parser("compose-env", help="write the compose deployment's .env")
    env.add_argument("--path", type=Path, default=COMPOSE_ENV_FILE)
    args = parser.parse_args(argv)
    if args.command == "admin-password":
        settings = load_settings()
        password, created = ensure_admin_password(settings)
        if created:
            print(
                f"[credentials] generated the Airflow admin password (user {ADMIN}): "
                f"{password}\n[credentials] kept in {passwords_path(settings)} (mode 600); "
                "it is shown only this once",
                file=sys.stderr,
                flush=True,
            )
        print(password)
        return 0
    if args.command == "airflow-admin":
        print(create_airflow_admin(load_settings()), file=sys.stderr, flush=True)
        return 0
    generated = ensure_compose_env(args.path)
    print(
        f"[credentials] {args.path}: "
        + (f"generated {', '.join(generated)}" if generated else "every secret already set")
        + " (mode 600)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
