"""A gate's outcome file per table, and the check a per-table task makes of it (no Spark, no GX)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from adlake.config import REPO_ROOT
from adlake.quality import outcome
from adlake.quality.outcome import (
    OutcomeMissing,
    ValidationRaised,
    check,
    clear_outcomes,
    make_outcome,
    outcome_dir,
    outcome_path,
    read_outcome,
    write_outcome,
)
from adlake.quality.results import QualityCheckFailed, RunContext

RUN_ID = "scheduled__2026-11-21T13:00:00+00:00"
CONTEXT = RunContext(
    "lake_hourly",
    RUN_ID,
    "page_traffic",
    datetime(2026, 11, 21, 13, tzinfo=UTC),
    datetime(2026, 11, 21, 14, tzinfo=UTC),
    datetime(2026, 11, 21, 14, 5, tzinfo=UTC),
)
NOT_NULL = "expect_column_values_to_not_be_null(column=page_id)"
FEW_CLICKS = "expect_column_values_to_be_between(column=clicks, min_value=1)"


def row(expectation: str, severity: str, success: bool, observed: str | None = None) -> dict:
    return {
        "expectation": expectation,
        "severity": severity,
        "success": success,
        "observed_value": observed,
    }


def test_a_passing_outcome_is_written_whole_and_summarised(tmp_path):
    rows = [row(NOT_NULL, "error", True), row(FEW_CLICKS, "warn", True)]
    path = write_outcome(tmp_path, make_outcome(CONTEXT, rows, None, "docs/index.html", 2.345))
    assert path == outcome_path(tmp_path, "page_traffic") == tmp_path / "page_traffic.json"
    assert [p.name for p in tmp_path.iterdir()] == ["page_traffic.json"]  # no temporary left
    record = json.loads(path.read_text())
    assert record == read_outcome(tmp_path, "page_traffic")
    assert {k: record[k] for k in record if k != "written_at"} == {
        "version": 1,
        "table": "page_traffic",
        "dag_id": "lake_hourly",
        "run_id": RUN_ID,
        "interval": ["2026-11-21T13:00:00+00:00", "2026-11-21T14:00:00+00:00"],
        "expectations": 2,
        "failed": [],
        "error_failed": False,
        "failure_report": None,
        "data_docs": "docs/index.html",
        "seconds": 2.345,
        "error": None,
    }
    assert check(tmp_path, "page_traffic") == (
        f"page_traffic passed: 2 expectation(s), 0 failed (0 error, 0 warn) in lake_hourly / "
        f"{RUN_ID} for [2026-11-21T13:00:00+00:00, 2026-11-21T14:00:00+00:00), validated in "
        "2.3 s. Data Docs: docs/index.html"
    )


def test_warn_failures_pass_and_are_named(tmp_path):
    rows = [row(NOT_NULL, "error", True), row(FEW_CLICKS, "warn", False, "2 of 9 rows unexpected")]
    write_outcome(tmp_path, make_outcome(CONTEXT, rows, "the report", "index.html", 1))
    summary = check(tmp_path, "page_traffic")
    assert summary.startswith("page_traffic passed: 2 expectation(s), 1 failed (0 error, 1 warn: ")
    assert f"{FEW_CLICKS} observed 2 of 9 rows unexpected" in summary


def test_a_failed_error_expectation_fails_the_check_with_the_report(tmp_path):
    rows = [row(NOT_NULL, "error", False, "1 of 5 rows unexpected"), row(FEW_CLICKS, "warn", False)]
    report = "page_traffic: 2 expectation(s) failed (1 error, 1 warn) ...\n  [error] ..."
    write_outcome(tmp_path, make_outcome(CONTEXT, rows, report, "index.html", 1))
    assert read_outcome(tmp_path, "page_traffic")["error_failed"] is True
    with pytest.raises(QualityCheckFailed) as failed:
        check(tmp_path, "page_traffic")
    message = str(failed.value)
    assert message.startswith(
        f"page_traffic: 1 error expectation(s) failed in lake_hourly / {RUN_ID} for ["
    )
    assert f"{NOT_NULL} (observed 1 of 5 rows unexpected)" in message
    assert FEW_CLICKS not in message.split("\n")[0]  # a warn is not why it failed
    assert report in message and "Data Docs: index.html" in message
    assert not isinstance(failed.value, OutcomeMissing)  # not retried as a missing outcome


def test_a_missing_outcome_is_its_own_error(tmp_path):
    with pytest.raises(OutcomeMissing, match="no quality outcome at .*page_traffic.json: its gate"):
        check(tmp_path / "nowhere", "page_traffic")
    with pytest.raises(OutcomeMissing, match="not JSON"):
        (tmp_path / "page_traffic.json").write_text('{"table": ')
        check(tmp_path, "page_traffic")
    write_outcome(tmp_path, make_outcome(CONTEXT, [], None, "index.html", 1))
    (tmp_path / "page_traffic.json").rename(tmp_path / "surge_history.json")
    with pytest.raises(OutcomeMissing, match="not this table's"):
        check(tmp_path, "surge_history")
    assert not issubclass(OutcomeMissing, QualityCheckFailed)
    assert issubclass(OutcomeMissing, RuntimeError)


def test_an_outcome_that_records_an_exception_is_no_pass(tmp_path):
    trace = "Traceback (most recent call last):\n  ...\npy4j.protocol.Py4JNetworkError: gone"
    write_outcome(tmp_path, make_outcome(CONTEXT, [], None, "index.html", 0.5, error=trace))
    with pytest.raises(ValidationRaised, match="validating it raised") as raised:
        check(tmp_path, "page_traffic")
    assert isinstance(raised.value, OutcomeMissing) and trace in str(raised.value)


def test_a_rewrite_replaces_and_clearing_removes(tmp_path):
    write_outcome(tmp_path, make_outcome(CONTEXT, [row(NOT_NULL, "error", False)], "r", "i", 1))
    write_outcome(tmp_path, make_outcome(CONTEXT, [row(NOT_NULL, "error", True)], None, "i", 1))
    assert check(tmp_path, "page_traffic").startswith("page_traffic passed")
    clear_outcomes(tmp_path, ["page_traffic", "surge_history"])  # the latter never was
    assert not any(tmp_path.iterdir())


def test_a_view_has_no_interval(tmp_path):
    view = RunContext("view_x", "manual", "page_clicks_hourly", None, None, CONTEXT.run_time)
    write_outcome(tmp_path, make_outcome(view, [], None, "i", 1))
    assert read_outcome(tmp_path, "page_clicks_hourly")["interval"] is None
    assert " in view_x / manual, validated" in check(tmp_path, "page_clicks_hourly")


def test_each_run_has_its_own_directory_under_the_runtime_dir(settings):
    here = outcome_dir(settings, "lake_hourly", RUN_ID)
    assert here.parent.parent == settings.runtime_dir / "dq_outcomes"
    assert here.name == "scheduled__2026-11-21T13%3A00%3A00%2B00%3A00"
    others = {
        outcome_dir(settings, "lake_hourly", r)
        for r in ("a/b", "a_b", "a%2Fb", "..", ".", "", "manual")
    }
    assert len(others) == 7 and all(p.parent == here.parent for p in others)


def test_the_module_imports_neither_spark_nor_gx():
    tree = ast.parse((REPO_ROOT / "include/adlake/quality/outcome.py").read_text())
    imported = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert not {m for m in imported if m.split(".")[0] in ("pyspark", "great_expectations")}
    code = (
        "import sys, adlake.quality.outcome\n"
        "print(sorted(m for m in ('pyspark', 'great_expectations', 'py4j') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", outcome.__name__
