"""The buttons' requests, sent as the page sends them (the UI's session cookie) to Airflow's own
REST API (its real app, this session's metadata DB with the repository's DAGs): each creates a
run of the app's DAG with the conf the app's form takes, by the logged-in user. The run itself
is the DAG's business (tests/dags); the runs made here are deleted, never run."""

from __future__ import annotations

import pytest

from adlake import apps
from adlake.ui.apps import buttons
from tests.dags.conftest import DAGS_DIR
from tests.include.ui.conftest import jwt_for


@pytest.fixture(scope="module")
def airflow_api(airflow_db, token):
    from airflow.api_fastapi.app import create_app
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import sync_bag_to_db
    from airflow.models import DagBag
    from fastapi.testclient import TestClient

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(str(DAGS_DIR))
    assert not bag.import_errors
    sync_bag_to_db(bag, "dags-folder", None)
    with TestClient(create_app("core")) as client:
        client.cookies.set("_token", token)
        yield client


@pytest.mark.parametrize("app", ["attribution", "click_surge"])
def test_every_button_is_a_dag_run_by_the_user(airflow_api, runtime, app):
    for button in buttons(app, apps.app_status(runtime, app)):
        response = airflow_api.post("/" + button["path"], json=button["body"])
        assert response.status_code == 200, (button["label"], response.text)
        run = response.json()
        assert (run["dag_id"], run["conf"], run["triggering_user_name"], run["note"]) == (
            f"app_{app}",
            button["body"]["conf"],
            "admin",
            button["body"]["note"],
        )
        assert run["run_type"] == "manual" and run["logical_date"] is None
        url = f"/api/v2/dags/app_{app}/dagRuns/{run['dag_run_id']}"
        polled = airflow_api.get(url)  # as the page polls it
        assert polled.status_code == 200 and polled.json()["state"] == run["state"]
        # a queued run must not start an app under a scheduler of a later test on this DB
        assert airflow_api.delete(url).status_code == 204


def test_airflow_refuses_the_buttons_of_a_user_who_may_not_run_the_dag(
    airflow_api, auth_manager, runtime, deny
):
    """The page's buttons go to Airflow's trigger route, which asks the same auth manager: a
    viewer may not run an app's DAG, nor a user refused that DAG by the deny list, which also
    drops it from their DAG list; a user's role still lets them run the others."""
    deny({"analyst": ["app_attribution"]})
    start = buttons("attribution", apps.app_status(runtime, "attribution"))[0]
    assert start["label"] == "start"
    for name, role, app in (
        ("viewer", "VIEWER", "click_surge"),
        ("viewer", "VIEWER", "attribution"),
        ("analyst", "USER", "attribution"),
    ):
        bearer = {"Authorization": f"Bearer {jwt_for(auth_manager, name, role)}"}
        refused = airflow_api.post(
            f"/api/v2/dags/app_{app}/dagRuns", json=start["body"], headers=bearer
        )
        assert refused.status_code == 403, (name, app, refused.text)
        if name == "analyst":
            listed = airflow_api.get("/api/v2/dags?limit=100", headers=bearer).json()["dags"]
            assert {d["dag_id"] for d in listed} >= {"app_click_surge", "lake_hourly"}
            assert "app_attribution" not in {d["dag_id"] for d in listed}
            got = airflow_api.get(f"/api/v2/dags/app_{app}", headers=bearer)
            assert got.status_code == 403
    assert runs_of(airflow_api, "app_attribution") == []


def runs_of(airflow_api, dag_id: str) -> list[dict]:
    return airflow_api.get(f"/api/v2/dags/{dag_id}/dagRuns").json()["dag_runs"]


def test_the_plugin_asks_airflow_what_its_dag_and_trigger_routes_ask(
    airflow_api, auth_manager, runtime, monkeypatch
):
    """``can_act`` and an app's card are Airflow's own answers: the plugin's questions
    (:class:`adlake.ui.access.DagAccess`) are those of ``GET /api/v2/dags/<dag_id>`` and of the
    trigger route its buttons post to, recorded here from both."""
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from adlake.ui.access import DagAccess

    real = auth_manager.is_authorized_dag
    asked: list[tuple] = []

    def recording(*, method, user, access_entity=None, details=None) -> bool:
        asked.append((user.get_name(), method, access_entity, details))
        return real(method=method, user=user, access_entity=access_entity, details=details)

    monkeypatch.setattr(auth_manager, "is_authorized_dag", recording)
    viewer = SimpleAuthManagerUser(username="viewer", role="VIEWER")
    bearer = {"Authorization": f"Bearer {jwt_for(auth_manager, 'viewer', 'VIEWER')}"}
    start = buttons("click_surge", apps.app_status(runtime, "click_surge"))[0]

    assert airflow_api.get("/api/v2/dags/app_click_surge", headers=bearer).status_code == 200
    airflows, asked[:] = asked[:], []
    assert DagAccess(viewer).may_read("app_click_surge") is True
    assert asked == airflows and len(asked) == 1
    asked.clear()

    refused = airflow_api.post(
        "/" + start["path"], json=start["body"], headers=bearer
    )  # a viewer may not run it: no run is made
    assert refused.status_code == 403
    airflows, asked[:] = asked[:], []
    assert DagAccess(viewer).may_trigger("app_click_surge") is False
    assert asked == airflows and len(asked) == 1
