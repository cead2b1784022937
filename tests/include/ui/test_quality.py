"""The "Data quality" page's JSON and the Data Docs site, from a GX result store written as GX
writes it (``store`` of the history's tests: the layout :mod:`adlake.quality.history` reads)."""

from __future__ import annotations

from adlake.quality.project import data_docs_index
from adlake.quality.rules import GOLD_SUITES, VIEW_SUITES
from tests.include.quality.test_history import at, store


def test_summary_lists_every_gold_table_and_view_with_its_latest_run_and_pass_rate(user, runtime):
    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    store(runtime, "page_traffic", "lake_hourly__r14", at(14), ["warn"])
    store(runtime, "page_traffic", "lake_hourly__r15", at(15), ["error", "warn"])
    store(runtime, "page_clicks_hourly", "view_page_clicks_hourly__a", at(13), [])

    body = user.get("/adlake/quality/api/summary").json()
    tables = {t["table"]: t for t in body["tables"]}
    assert list(tables) == [*GOLD_SUITES, *VIEW_SUITES]
    traffic = tables["page_traffic"]
    assert traffic["kind"] == "gold" and traffic["runs"] == 3
    assert round(traffic["pass_rate"], 2) == 0.67
    assert traffic["latest"] == {
        "run_name": "lake_hourly__r15",
        "dag_id": "lake_hourly",
        "run_id": "r15",
        "run_time": "2026-11-21T15:05:00+00:00",
        "passed": False,
        "evaluated": 3,
        "failed_errors": 1,
        "failed_warns": 1,
        "page": "validations/page_traffic/lake_hourly__r15/20261121T150500.000000Z/"
        "adlake_spark-page_traffic.html",
    }
    assert [r["run_name"] for r in traffic["history"]] == [  # oldest first, for the chart
        "lake_hourly__r13",
        "lake_hourly__r14",
        "lake_hourly__r15",
    ]
    assert [r["passed"] for r in traffic["history"]] == [True, True, False]
    clicks = tables["page_clicks_hourly"]
    assert (clicks["kind"], clicks["pass_rate"], clicks["latest"]["failed_warns"]) == (
        "view",
        1.0,
        0,
    )
    never = tables["campaign_delivery"]
    assert (never["latest"], never["pass_rate"], never["runs"], never["history"]) == (
        None,
        None,
        0,
        [],
    )
    assert body["data_docs"] is False

    last = user.get("/adlake/quality/api/summary", params={"last": 1}).json()
    assert {t["table"]: t["runs"] for t in last["tables"] if t["runs"]} == {
        "page_traffic": 1,
        "page_clicks_hourly": 1,
    }


def test_quality_page_and_its_scripts_are_served(user):
    page = user.get("/adlake/quality/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for src in ("../static/adlake.css", "../static/adlake.js", "../static/quality.js"):
        assert src in page.text
        asset = user.get("/adlake/quality/" + src)
        assert asset.status_code == 200, src
    assert user.get("/adlake/static/nope.js").status_code == 404


def test_data_docs_before_any_run_say_so(user, runtime):
    response = user.get("/adlake/data-docs/")
    assert response.status_code == 404
    assert "no Data Docs yet" in response.json()["detail"]


def test_data_docs_are_served_and_nothing_outside_the_site(user, runtime):
    index = data_docs_index(runtime)
    index.parent.mkdir(parents=True)
    index.write_text("<html>index of runs</html>")
    page = index.parent / "validations" / "page_traffic" / "r" / "t" / "b.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html>one run</html>")
    secret = runtime.runtime_dir / "secret.txt"
    secret.write_text("not for the browser")

    assert user.get("/adlake/data-docs/").text == "<html>index of runs</html>"
    assert user.get("/adlake/data-docs/index.html").text == "<html>index of runs</html>"
    assert (
        user.get("/adlake/data-docs/validations/page_traffic/r/t/b.html").text
        == "<html>one run</html>"
    )
    assert user.get("/adlake/data-docs/validations/missing.html").status_code == 404
    assert user.get("/adlake/quality/api/summary").json()["data_docs"] is True
    for sneaky in (
        "/adlake/data-docs/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "/adlake/data-docs/..%2F..%2F..%2Fsecret.txt",
        "/adlake/data-docs/%2Fetc%2Fpasswd",
    ):
        response = user.get(sneaky)
        assert response.status_code == 404, sneaky
        assert "not for the browser" not in response.text


def test_summary_has_the_latest_table_maintenance(user, runtime):
    from adlake.maintenance import SHOWN, write_latest

    assert user.get("/adlake/quality/api/summary").json()["maintenance"] is None
    row = dict.fromkeys(SHOWN, 1) | {"table": "page_traffic", "detail": "not shown"}
    run = {"dag_id": "lake_maintenance", "run_id": "scheduled__x", "finished_at": "2026-11-26"}
    write_latest(runtime, {**run, "retention_hours": 168}, [row])

    shown = user.get("/adlake/quality/api/summary").json()["maintenance"]
    assert shown == {**run, "retention_hours": 168, "tables": [{k: row[k] for k in SHOWN}]}
