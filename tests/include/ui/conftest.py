"""The plugin's tests: Airflow's session home of ``tests/dags/conftest.py`` (imported for it: set
before Airflow is first imported), its metadata DB (token revocation is checked there), and a
client of the plugin's app mounted as Airflow mounts it, with Airflow's auth manager."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator

import pytest

from adlake import apps
from adlake.processes import identity
from tests.dags.conftest import airflow_db  # noqa: F401  (the fixture; sets AIRFLOW_HOME first)


@pytest.fixture()
def runtime(settings, tmp_path):
    """The settings of a runtime directory of this test's own."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime")


@pytest.fixture(scope="session")
def auth_manager(airflow_db, tmp_path_factory):
    """Airflow's auth manager as ``make up`` configures it (:mod:`adlake.airflow.auth`), its deny
    list in a file of this session's own (none yet: nobody is refused a DAG)."""
    from airflow.api_fastapi.app import init_auth_manager

    from adlake.airflow.auth import AdlakeAuthManager

    manager = init_auth_manager()
    assert isinstance(manager, AdlakeAuthManager)
    manager.denied_dags_file = tmp_path_factory.mktemp("auth") / "denied_dags.json"
    return manager


@pytest.fixture()
def deny(auth_manager):
    """Refuse DAGs to users, as the deny list's file says (``{user: [dag_id, ...]}``); none
    after the test."""
    path = auth_manager.denied_dags_file

    def write(rules: dict[str, list[str]]) -> None:
        path.write_text(json.dumps(rules))

    yield write
    path.unlink(missing_ok=True)


def jwt_for(auth_manager, name: str, role: str | None) -> str:
    """A JWT for the user ``name`` with ``role`` (None: no role), minted as Airflow's login
    does (the auth manager's signer)."""
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return auth_manager.generate_jwt(SimpleAuthManagerUser(username=name, role=role))


@pytest.fixture(scope="session")
def token(auth_manager) -> str:
    """A JWT for the admin."""
    return jwt_for(auth_manager, "admin", "ADMIN")


@pytest.fixture()
def as_user(client, auth_manager):
    """``as_user(name, role)``: the client signed in as that user (the UI's _token cookie)."""

    def sign_in(name: str, role: str | None):
        client.cookies.set("_token", jwt_for(auth_manager, name, role))
        return client

    return sign_in


@pytest.fixture()
def client(runtime, auth_manager) -> Iterator:
    """An anonymous client of the plugin's app, mounted at /adlake like the api-server does."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from adlake.ui import URL_PREFIX, create_app

    root = FastAPI()
    root.mount(URL_PREFIX, create_app(runtime))
    with TestClient(root) as client:
        yield client


@pytest.fixture()
def user(client, token):
    """The same client with the admin's token as the Airflow UI sends it (the _token cookie)."""
    client.cookies.set("_token", token)
    return client


@pytest.fixture()
def hold_lock(runtime):
    """Hold ``app``'s lock as its launcher does (this process, a file description of its own)."""
    held = []

    def hold(app: str, mode: str, started_at: float) -> int:
        path = apps.lock_path(runtime, app)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(
            fd,
            json.dumps(
                {
                    "pid": os.getpid(),
                    "mode": mode,
                    "started_at": started_at,
                    "argv": ["click_surge"],
                    **identity(),  # this process, as the launcher identifies itself
                }
            ).encode(),
        )
        held.append(fd)
        return os.getpid()

    yield hold
    for fd in held:
        os.close(fd)
