"""The plugin's tests: Airflow's session home of ``tests/dags/conftest.py`` (imported for it: set
before Airflow is first imported), its metadata DB (token revocation is checked there), and a
client of the plugin's app mounted as Airflow mounts it, with Airflow's auth manager."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dags.conftest import airflow_db  # noqa: F401  (the fixture; sets AIRFLOW_HOME first)


@pytest.fixture()
def runtime(settings, tmp_path):
    """The settings of a runtime directory of this test's own."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime")


@pytest.fixture(scope="session")
def auth_manager(airflow_db):
    from airflow.api_fastapi.app import init_auth_manager

    return init_auth_manager()


@pytest.fixture(scope="session")
def token(auth_manager) -> str:
    """A JWT for the admin, minted as Airflow's login does (the auth manager's signer)."""
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return auth_manager.generate_jwt(SimpleAuthManagerUser(username="admin", role="ADMIN"))


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
