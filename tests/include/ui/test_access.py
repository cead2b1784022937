"""Who may see and do what on the plugin's pages, as Airflow's auth manager (``make up``'s,
:mod:`adlake.airflow.auth`) answers for real users of each role and for a user refused some DAGs
by the deny list: the pages for a user with a role, an app's card for a reader of its DAG and its
buttons for one who may run it, a table's quality and Data Docs for a reader of a DAG validating
it, also through a Data Docs link signed for another page."""

from __future__ import annotations

import pytest

from adlake.quality.rules import GOLD_SUITES, VIEW_SUITES
from tests.include.quality.test_history import at, store
from tests.support.data_docs import PAGE, write_site

PAGES = [
    "/adlake/",
    "/adlake/apps/",
    "/adlake/quality/",
    "/adlake/static/apps.js",
    "/adlake/apps/api/status",
    "/adlake/apps/api/status/click_surge",
    "/adlake/quality/api/summary",
    "/adlake/data-docs/",
]


def apps_of(client) -> dict[str, bool]:
    """The apps the status JSON shows, each with whether the user may act on it."""
    response = client.get("/adlake/apps/api/status")
    assert response.status_code == 200, response.text
    return {a["app"]: a["can_act"] for a in response.json()["apps"]}


@pytest.mark.parametrize("route", PAGES)
def test_a_user_without_a_role_is_refused_every_page(as_user, route):
    response = as_user("nobody", None).get(route, follow_redirects=False)
    assert response.status_code == 403, response.text


def test_a_viewer_sees_every_app_and_may_act_on_none(as_user):
    assert apps_of(as_user("admin", "ADMIN")) == {"attribution": True, "click_surge": True}
    viewer = as_user("viewer", "VIEWER")
    assert apps_of(viewer) == {"attribution": False, "click_surge": False}
    one = viewer.get("/adlake/apps/api/status/click_surge").json()["app"]
    assert (one["app"], one["can_act"], one["actions"]["dag_id"]) == (
        "click_surge",
        False,
        "app_click_surge",
    )
    for page in ("/adlake/apps/", "/adlake/quality/"):
        assert viewer.get(page).status_code == 200


def test_an_app_whose_dag_is_refused_is_neither_listed_nor_served(as_user, deny):
    deny({"analyst": ["app_attribution"]})
    analyst = as_user("analyst", "USER")
    assert apps_of(analyst) == {"click_surge": True}
    refused = analyst.get("/adlake/apps/api/status/attribution")
    assert refused.status_code == 403
    assert "argv" not in refused.text and "log" not in refused.json()["detail"]
    assert analyst.get("/adlake/apps/api/status/click_surge").json()["app"]["can_act"]
    assert analyst.get("/adlake/apps/api/status/no_such_app").status_code == 404
    assert analyst.get("/adlake/apps/api/status/bronze").status_code == 404  # a job, no app
    # the list follows the file, read again when it changes: no restart
    deny({})
    assert apps_of(analyst) == {"attribution": True, "click_surge": True}
    # others are not touched by the analyst's list
    deny({"analyst": ["app_attribution"]})
    assert apps_of(as_user("viewer", "VIEWER")) == {"attribution": False, "click_surge": False}


def test_quality_shows_the_tables_and_runs_of_the_dags_the_user_may_read(as_user, runtime, deny):
    store(runtime, "campaign_delivery", "lake_hourly__h1", at(13), [])
    store(runtime, "campaign_delivery", "lake_daily__d1", at(14), ["error"])
    store(runtime, "page_clicks_hourly", "view_page_clicks_hourly__v1", at(13), [])
    store(runtime, "retired_table", "lake_hourly__h0", at(12), [])  # no gate validates it now
    deny({"analyst": ["lake_daily", "view_page_clicks_hourly", "lake_maintenance"]})

    def summary(client) -> dict:
        response = client.get("/adlake/quality/api/summary")
        assert response.status_code == 200, response.text
        return response.json()

    everything = summary(as_user("viewer", "VIEWER"))
    assert [t["table"] for t in everything["tables"]] == [
        *GOLD_SUITES,
        *VIEW_SUITES,
        "retired_table",
    ]
    assert everything["all_data_docs"] and everything["maintenance_allowed"]

    mine = summary(as_user("analyst", "USER"))
    tables = {t["table"]: t for t in mine["tables"]}
    # attribution's two tables are validated in lake_daily only, page_clicks_hourly in its
    # view's DAG; a suite no gate validates is for a reader of every gate's DAG
    assert list(tables) == [
        "campaign_delivery",
        "page_traffic",
        "surge_history",
        "campaign_daily_totals",
        "household_reach_by_geo",
    ]
    delivery = tables["campaign_delivery"]
    assert [r["run_name"] for r in delivery["history"]] == ["lake_hourly__h1"]
    assert (delivery["runs"], delivery["pass_rate"]) == (1, 1.0)
    assert mine["all_data_docs"] is False
    assert (mine["maintenance_allowed"], mine["maintenance"]) == (False, None)


def test_data_docs_pages_of_a_table_the_user_may_not_see_are_refused(as_user, runtime, deny):
    site = write_site(runtime)  # the index and PAGE: page_traffic's run of lake_hourly
    assert site == PAGE
    deny({"analyst": ["view_page_clicks_hourly"], "hourly_off": ["lake_hourly"]})

    viewer = as_user("viewer", "VIEWER")
    for path in ("", "index.html", PAGE):
        assert viewer.get(f"/adlake/data-docs/{path}").status_code == 200, path

    refused = as_user("hourly_off", "VIEWER")
    page = refused.get(f"/adlake/data-docs/{PAGE}", follow_redirects=False)
    assert page.status_code == 403 and "never be null" not in page.text
    assert refused.get("/adlake/data-docs/", follow_redirects=False).status_code == 403
    # GX's own static files are nobody's table
    assert refused.get("/adlake/data-docs/static/images/favicon.ico").status_code == 200

    analyst = as_user("analyst", "USER")
    opened = analyst.get(f"/adlake/data-docs/{PAGE}")
    assert opened.status_code == 200 and "values must never be null" in opened.text
    # The link signed for that page is the analyst's: with it, another table's page, the index
    # (every table's runs), or a path spelled to reach them, are refused as at the entry.
    signed = str(opened.url).split("/data-docs-signed/")[1].split("/")[0]
    analyst.cookies.clear()  # the sandboxed page's requests carry no session
    for path in (
        "expectations/page_clicks_hourly.html",
        "validations/page_clicks_hourly/view_page_clicks_hourly__v1/x/y.html",
        "index.html",
        "static/../index.html",
        "",
    ):
        response = analyst.get(f"/adlake/data-docs-signed/{signed}/{path}")
        assert response.status_code == 403, path
        assert "ge-index-page" not in response.text
    assert analyst.get(f"/adlake/data-docs-signed/{signed}/{PAGE}").status_code == 200
    # a DAG refused after the link was signed is refused through the link too
    deny({"analyst": ["lake_hourly"]})
    assert analyst.get(f"/adlake/data-docs-signed/{signed}/{PAGE}").status_code == 403


def test_the_deny_list_refuses_its_users_dags_and_a_damaged_one_refuses_every_dag(
    auth_manager, deny, caplog
):
    from airflow.api_fastapi.auth.managers.models.resource_details import (
        DagAccessEntity,
        DagDetails,
    )
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    admin = SimpleAuthManagerUser(username="admin", role="ADMIN")
    analyst = SimpleAuthManagerUser(username="analyst", role="USER")

    def may(user, dag_id: str | None, method: str = "GET") -> bool:
        return auth_manager.is_authorized_dag(
            method=method,
            user=user,
            access_entity=DagAccessEntity.RUN if method == "POST" else None,
            details=DagDetails(id=dag_id),
        )

    assert may(analyst, "app_attribution", "POST")  # no file: the role decides
    deny({"analyst": ["app_attribution"], "admin": ["lake_daily"]})
    assert not may(analyst, "app_attribution") and not may(analyst, "app_attribution", "POST")
    assert may(analyst, "app_click_surge", "POST") and may(analyst, None)  # None: DAGs at all
    assert not may(admin, "lake_daily") and may(admin, "app_attribution")  # by name, any role
    auth_manager.denied_dags_file.write_text('{"analyst": "app_attribution"}')
    assert not may(analyst, "app_click_surge") and not may(admin, "app_attribution")
    assert "refused to everyone" in caplog.text
