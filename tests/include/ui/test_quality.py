"""The "Data quality" page's JSON and the Data Docs site, from a GX result store written as GX
writes it (``store`` of the history's tests: the layout :mod:`adlake.quality.history` reads)."""

from __future__ import annotations

import logging

import pytest

from adlake.config import REPO_ROOT
from adlake.quality.history import validations_dir
from adlake.quality.project import data_docs_index
from adlake.quality.rules import GOLD_SUITES, VIEW_SUITES
from adlake.ui.deps import STATIC_DIR
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
    assert str(runtime.runtime_dir) not in response.text  # no file system path to a user


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


def test_summary_skips_a_result_file_that_is_not_json_and_names_it_in_the_log(
    user, runtime, caplog
):
    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    store(runtime, "page_traffic", "lake_hourly__r14", at(14), ["warn"])
    store(runtime, "page_clicks_hourly", "view_page_clicks_hourly__a", at(13), [])
    # the newest run's file cut short, as a crash or a full disk leaves it
    (truncated,) = (validations_dir(runtime) / "page_traffic").glob("lake_hourly__r14/*/*.json")
    truncated.write_text(truncated.read_text()[:40])
    not_a_result = validations_dir(runtime) / "page_traffic" / "x" / "20261121T160500.000000Z"
    not_a_result.mkdir(parents=True)
    (not_a_result / "b.json").write_text('["valid JSON, not a result"]')

    with caplog.at_level(logging.WARNING, logger="adlake.quality.history"):
        response = user.get("/adlake/quality/api/summary", params={"last": 1})
    assert response.status_code == 200
    tables = {t["table"]: t for t in response.json()["tables"]}
    # the last good run stands in for the bad ones, and the other tables are untouched
    assert [r["run_name"] for r in tables["page_traffic"]["history"]] == ["lake_hourly__r13"]
    assert tables["page_clicks_hourly"]["runs"] == 1
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2
    assert any(str(truncated) in w for w in warned)
    assert any(str(not_a_result / "b.json") in w for w in warned)
    # the body never says where the store is
    assert str(runtime.runtime_dir) not in response.text


@pytest.mark.parametrize(
    "url",
    [
        "/adlake/data-docs/index%00.html",
        "/adlake/data-docs/%00",
        "/adlake/data-docs/" + "a" * 256,
        "/adlake/data-docs/validations/" + "é" * 128 + "/b.html",  # 256 bytes in UTF-8
        "/adlake/static/quality%00.js",
        "/adlake/static/" + "a" * 300 + ".js",
    ],
    ids=["nul-in-a-name", "nul-alone", "long-segment", "long-utf8-segment", "static-nul", "long"],
)
def test_a_path_no_file_can_have_is_a_400_that_says_no_file_system_path(user, runtime, url):
    index = data_docs_index(runtime)
    index.parent.mkdir(parents=True)
    index.write_text("<html>index of runs</html>")
    response = user.get(url)
    assert response.status_code == 400
    assert "path" in response.json()["detail"]
    for where in (str(runtime.runtime_dir), str(STATIC_DIR), str(REPO_ROOT)):
        assert where not in response.text


def test_a_path_of_255_bytes_is_an_ordinary_miss(user, runtime):
    index = data_docs_index(runtime)
    index.parent.mkdir(parents=True)
    index.write_text("<html>index of runs</html>")
    assert user.get("/adlake/data-docs/" + "a" * 255).status_code == 404
    assert user.get("/adlake/static/" + "a" * 252 + ".js").status_code == 404


def test_an_anonymous_request_is_refused_before_its_path_is_judged(client):
    assert client.get("/adlake/data-docs/%00").status_code == 401
