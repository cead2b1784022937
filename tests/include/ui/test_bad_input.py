"""Bad input is answered, never a 500: a Data Docs path longer than any file's path can be
(PATH_MAX) is a 4xx, and a record that is well-formed JSON with a value of the wrong type (a GX
result's run name, a freshness record's ``newest``, an app status's ``written_at``) is skipped by
its reader or the value treated as unknown, the page answering 200 with the rest."""

from __future__ import annotations

import json
import math
import time

import pytest

from adlake import freshness
from adlake.local import versions
from adlake.quality.history import recent_runs, validations_dir
from adlake.status import read_all, read_status, status_path, write_status
from tests.include.quality.test_history import at, store
from tests.include.ui.test_apps import desire
from tests.support.data_docs import write_site

# 4,200 bytes of one-byte segments: no segment is long, the path is longer than PATH_MAX (4,096)
LONG = "a/" * 2100 + "x.html"
# 4,000 bytes: under PATH_MAX by itself, over it under the site's directory
ALMOST = "a/" * 2000 + "x.html"


@pytest.fixture()
def site(runtime) -> str:
    return write_site(runtime)


@pytest.mark.parametrize(
    "path, code", [(LONG, 400), (ALMOST, 404)], ids=["over-path-max", "over-it-in-the-site"]
)
def test_a_data_docs_path_too_long_for_any_file_is_a_4xx(user, site, path, code):
    entry = user.get(f"/adlake/data-docs/{path}", follow_redirects=False)
    assert entry.status_code == code, entry.text
    # through a link signed for the admin, and among the vendored assets
    index = user.get("/adlake/data-docs/")
    assert index.status_code == 200
    signed = str(index.url).split("/data-docs-signed/")[1].split("/")[0]
    user.cookies.clear()
    response = user.get(f"/adlake/data-docs-signed/{signed}/{path}")
    assert response.status_code in (400, 404, 414), response.text
    jquery = f"jquery@{versions.DATA_DOCS_NPM['jquery'][0]}"
    response = user.get(f"/adlake/data-docs-assets/{jquery}/{path.replace('.html', '.js')}")
    assert response.status_code in (400, 404, 414), response.text


@pytest.mark.parametrize("run_name", [5, 2.5, {"dag": "lake_hourly"}, ["lake_hourly__r"], True])
def test_a_result_whose_run_name_is_not_text_is_skipped(user, runtime, run_name, caplog):
    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    store(runtime, "page_traffic", "lake_hourly__r14", at(14), [])
    (bad,) = (validations_dir(runtime) / "page_traffic").glob("lake_hourly__r14/*/*.json")
    doc = json.loads(bad.read_text())
    doc["meta"]["run_id"]["run_name"] = run_name
    bad.write_text(json.dumps(doc))

    response = user.get("/adlake/quality/api/summary")
    assert response.status_code == 200, response.text
    tables = {t["table"]: t for t in response.json()["tables"]}
    assert [r["run_name"] for r in tables["page_traffic"]["history"]] == ["lake_hourly__r13"]
    assert str(bad) in caplog.text
    assert [r.run_name for r in recent_runs(runtime)["page_traffic"]] == ["lake_hourly__r13"]


@pytest.mark.parametrize(
    "field, value",
    [
        ("run_time", 1795680000),
        ("suite_name", ["page_traffic"]),
        ("results", {"a": 1}),
        ("results", [{"success": "no", "expectation_config": {}}]),
        ("results", [{"success": False, "expectation_config": "error"}]),
    ],
)
def test_a_result_with_another_wrongly_typed_value_is_skipped(user, runtime, field, value):
    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    store(runtime, "page_traffic", "lake_hourly__r14", at(14), [])
    (bad,) = (validations_dir(runtime) / "page_traffic").glob("lake_hourly__r14/*/*.json")
    doc = json.loads(bad.read_text())
    if field == "run_time":
        doc["meta"]["run_id"]["run_time"] = value
    else:
        doc[field] = value
    bad.write_text(json.dumps(doc))

    assert user.get("/adlake/quality/api/summary").status_code == 200
    assert [r.run_name for r in recent_runs(runtime)["page_traffic"]] == ["lake_hourly__r13"]


@pytest.mark.parametrize("newest", [1795680000, 1795680000.5, ["2026-11-26T08:00:00Z"], {}, True])
def test_a_freshness_record_whose_newest_is_not_a_time_is_skipped(user, runtime, newest):
    freshness.write_record(runtime, "page_clicks_hourly", "2026-11-26T08:00:00Z", 3)
    path = freshness.record_path(runtime, "page_traffic")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"table": "page_traffic", "newest": newest, "version": 1}))

    response = user.get("/adlake/quality/api/summary")
    assert response.status_code == 200, response.text
    shown = {t["table"]: t["freshness"] for t in response.json()["tables"]}
    # shown as never recorded (red); the other table's record as it is
    assert (shown["page_traffic"]["newest"], shown["page_traffic"]["late"]) == (None, True)
    assert shown["page_clicks_hourly"]["newest"] == "2026-11-26T08:00:00Z"
    assert freshness.read_record(runtime, "page_traffic") is None
    assert freshness.read_record(runtime, "page_clicks_hourly")["version"] == 3


@pytest.mark.parametrize(
    "field, value",
    [("version", "three"), ("recorded_at", "yesterday"), ("recorded_at", math.inf)],
)
def test_a_freshness_record_with_another_wrongly_typed_value_is_skipped(runtime, field, value):
    path = freshness.record_path(runtime, "page_traffic")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"table": "page_traffic", "newest": None, field: value}))
    (row,) = freshness.shown(runtime, ["page_traffic"])
    assert (row["newest"], row["version"], row["recorded_at"], row["late"]) == (
        None,
        None,
        None,
        True,
    )
    assert freshness.read_record(runtime, "page_traffic") is None


@pytest.mark.parametrize(
    "written_at",
    ["yesterday", "1795680000", {"t": 1}, [1795680000], True, math.nan, math.inf, 10**400],
)
def test_a_status_whose_written_at_is_not_a_number_loses_that_field(
    user,
    runtime,
    hold_lock,
    written_at,
):
    now = time.time()
    desire(runtime, "click_surge", "running", "realtime")
    hold_lock("click_surge", "realtime", now - 60)
    write_status(runtime, "click_surge", {"state": "running", "mode": "realtime", "batch_id": 7})
    path = status_path(runtime, "click_surge")
    path.write_text(json.dumps({**json.loads(path.read_text()), "written_at": written_at}))

    response = user.get("/adlake/apps/api/status")
    assert response.status_code == 200, response.text
    app = {a["app"]: a for a in response.json()["apps"]}["click_surge"]
    # the report time unknown: no report of this run yet, as the supervisor reads it
    assert (app["status"]["batch_id"], app["report_age_s"]) == (7, None)
    assert app["state"] == "starting"
    assert user.get("/adlake/apps/api/status/click_surge").status_code == 200
    status = read_status(runtime, "click_surge")
    assert "written_at" not in status and status["batch_id"] == 7
    assert [s["app"] for s in read_all(runtime)] == ["click_surge"]
    assert "written_at" not in read_all(runtime)[0]


def test_a_status_whose_written_at_is_a_number_keeps_it(runtime):
    write_status(runtime, "click_surge", {"state": "running"}, now=1795680000)
    assert read_status(runtime, "click_surge")["written_at"] == 1795680000
    write_status(runtime, "click_surge", {"state": "running"}, now=1795680000.25)
    assert read_status(runtime, "click_surge")["written_at"] == 1795680000.25


@pytest.mark.parametrize(
    "last_batch_at", [10**400, math.inf, "yesterday", {"t": 1}, [1], True, "0001-01-01T00:00:00"]
)
def test_a_status_whose_last_batch_time_is_not_a_time_shows_no_progress_age(
    user, runtime, last_batch_at
):
    write_status(runtime, "click_surge", {"state": "running", "last_batch_at": last_batch_at})
    response = user.get("/adlake/apps/api/status/click_surge")
    assert response.status_code == 200, response.text
    assert response.json()["app"]["progress_age_s"] is None
