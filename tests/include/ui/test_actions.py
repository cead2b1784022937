"""The buttons' requests, sent as the page sends them (the UI's session cookie) to Airflow's own
REST API (its real app, this session's metadata DB with the repository's DAGs): each creates a
run of the app's DAG with the conf the app's form takes, by the logged-in user. The run itself
is the DAG's business (tests/dags); the runs made here are deleted, never run."""

from __future__ import annotations

import pytest

from adlake import apps
from adlake.ui.apps import buttons
from tests.dags.conftest import DAGS_DIR


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
