"""The exact question the plugin asks Airflow's auth manager, pinned: seeing a DAG's app or
table is ``is_authorized_dag(method="GET", details=DagDetails(id=<dag_id>, team_name=<its
team>))`` without an access entity, as Airflow's own ``GET /api/v2/dags/<dag_id>`` asks; acting
on an app (its start, stop, restart buttons) is ``method="POST"`` on ``DagAccessEntity.RUN``
with the same details, as Airflow's trigger route asks (``test_actions`` compares the two). The
DAG's team is passed, so a team-scoped user (multi-team Airflow) is refused another team's DAGs.

A recording stand-in for ``is_authorized_dag`` (on the real auth manager: the login and the
plugins-view check stay Airflow's own) answers yes and records each question."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from tests.include.quality.test_history import at, store
from tests.support.data_docs import PAGE, RUN_NAME, write_site

# Each DAG's team as the stand-in for Airflow's DagModel.get_team_name answers (a DAG bundle's
# team in multi-team Airflow); the others have none.
TEAMS = {"app_click_surge": "surge", "app_attribution": "attribution", "lake_hourly": "lake"}


@pytest.fixture()
def teams(monkeypatch):
    from airflow.models.dag import DagModel

    asked: list[str] = []

    def get_team_name(dag_id: str, session=None) -> str | None:
        asked.append(dag_id)
        return TEAMS.get(dag_id)

    monkeypatch.setattr(DagModel, "get_team_name", staticmethod(get_team_name))
    return asked


@pytest.fixture()
def questions(auth_manager, teams, monkeypatch):
    """Every ``is_authorized_dag`` question asked, as ``(user name, method, access entity, DAG
    id, team)``, each answered yes."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails

    asked: list[tuple] = []

    def is_authorized_dag(*, method, user, access_entity=None, details=None) -> bool:
        assert isinstance(details, DagDetails), details
        asked.append((user.get_name(), method, access_entity, details.id, details.team_name))
        return True

    monkeypatch.setattr(auth_manager, "is_authorized_dag", is_authorized_dag)
    return asked


def read(dag_id: str, user: str = "viewer") -> tuple:
    return (user, "GET", None, dag_id, TEAMS.get(dag_id))


def run(dag_id: str, user: str = "viewer") -> tuple:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity

    return (user, "POST", DagAccessEntity.RUN, dag_id, TEAMS.get(dag_id))


def test_an_apps_card_asks_to_read_its_dag_and_its_buttons_to_run_it(as_user, questions):
    viewer = as_user("viewer", "VIEWER")
    response = viewer.get("/adlake/apps/api/status/click_surge")
    assert response.status_code == 200 and response.json()["app"]["can_act"] is True
    assert questions == [read("app_click_surge"), run("app_click_surge")]

    questions.clear()
    listed = viewer.get("/adlake/apps/api/status").json()["apps"]
    assert [a["app"] for a in listed] == ["attribution", "click_surge"]
    # each question once per request, per app in registry order
    assert questions == [
        read("app_attribution"),
        run("app_attribution"),
        read("app_click_surge"),
        run("app_click_surge"),
    ]


def test_a_tables_quality_and_its_data_docs_ask_to_read_the_dags_validating_it(
    as_user, runtime, questions
):
    from adlake.airflow.factory import MAINTENANCE_DAG_ID, gate_dag_ids

    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    viewer = as_user("viewer", "VIEWER")
    assert viewer.get("/adlake/quality/api/summary").status_code == 200
    gates = set().union(*gate_dag_ids().values())
    assert {q[3] for q in questions} == gates | {MAINTENANCE_DAG_ID}
    assert sorted(questions, key=str) == sorted(
        (read(d) for d in gates | {MAINTENANCE_DAG_ID}), key=str
    )

    write_site(runtime)  # PAGE: page_traffic's run of lake_hourly
    questions.clear()
    entry = viewer.get(f"/adlake/data-docs/{PAGE}", follow_redirects=False)
    assert entry.status_code == 307
    # a DAG of its gates (the first the stand-in allows), then the DAG of its run (RUN_NAME)
    assert sorted(gate_dag_ids()["page_traffic"]) == ["lake_daily", "lake_hourly"]
    assert RUN_NAME.startswith("lake_hourly__")
    assert questions == [read("lake_daily"), read("lake_hourly")]
    # through the signed link (no session): asked again, as the user the link names
    questions.clear()
    viewer.cookies.clear()
    page = viewer.get(urljoin(str(entry.url), entry.headers["location"]))
    assert page.status_code == 200 and "/data-docs-signed/" in str(page.url)
    assert questions == [read("lake_daily"), read("lake_hourly")]


def test_a_team_scoped_user_is_refused_another_teams_dags(auth_manager, client, teams):
    """With Airflow's own answers: the DAG's team reaches the auth manager, which refuses a
    user of another team (``SimpleAuthManager``: a team not among the user's)."""
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    user = SimpleAuthManagerUser(username="surgeon", role="USER", teams=["surge"])
    client.cookies.set("_token", auth_manager.generate_jwt(user))
    apps = client.get("/adlake/apps/api/status").json()["apps"]
    assert [(a["app"], a["can_act"]) for a in apps] == [("click_surge", True)]
    assert client.get("/adlake/apps/api/status/attribution").status_code == 403
    assert "app_attribution" in teams  # asked for its team
