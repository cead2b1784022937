"""The quality job on real Spark, Delta and Great Expectations.

Gold ``page_traffic`` and ``surge_history`` and the view ``page_clicks_hourly`` are built by the
real jobs from the silver rows of ``test_gold_intervals`` (clicks and surge windows around the
midnights of the 21st). The 21st's ``page_traffic`` partition passes; with a null page, a
duplicated key and a minute of the next day injected it fails with exactly those three
expectations; ``surge_history`` fails only a ``warn`` rule (its surges are below the default
threshold) and passes; reruns replace their ``dq_results`` rows; Data Docs list the runs. One job
validates both gold tables: each gets its own result and, with ``--outcome-dir``, its own outcome
file, which a per-table check passes or fails; a table whose validation raises does not stop the
others.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import functions as F

from adlake import registry, spark_session
from adlake.quality import rules
from adlake.quality.history import recent_runs
from adlake.quality.outcome import OutcomeMissing, ValidationRaised, check, read_outcome
from adlake.quality.project import data_docs_index
from adlake.quality.results import EXIT_EXPECTATIONS_FAILED, QualityCheckFailed
from spark_apps.lake import gold, quality
from spark_apps.lake.tables import ensure_table, read_table
from spark_apps.lake.views.engine import full_refresh
from tests.spark_apps.lake.test_gold_intervals import SILVER
from tests.spark_apps.lake.test_transforms import at, d, frame, silver

# lake_daily's run of the 21st: quality validates every table's 21st, as gold rebuilt it (an
# hourly run's gate, its hour: tests/dags/test_lake_dag_run.py).
START = datetime(2026, 11, 21, tzinfo=UTC)
INTERVAL = ["--start", START.isoformat(), "--end", (START + timedelta(days=1)).isoformat()]


@pytest.fixture(scope="module")
def lake(spark, settings, tmp_path_factory):
    """Silver clicks and surges; gold page_traffic and surge_history of the 21st; the view."""
    lake = settings.with_overrides(runtime_dir=tmp_path_factory.mktemp("quality"))
    for topic in ("page_clicks", "page_surges"):
        path = ensure_table(spark, lake, registry.table(f"silver_{topic}"))
        silver(spark, topic, SILVER[topic]).write.format("delta").mode("append").save(path)
    for name in ("page_traffic", "surge_history"):
        gold.rebuild(spark, lake, name, d(21), d(22))
    full_refresh(spark, lake, registry.view("page_clicks_hourly"))
    return lake


def run(lake, table: str, run_id: str, *args: str) -> int:
    """The job's exit status; ``table`` is ``--table``'s, or ``--tables``' with a comma."""
    which = "--tables" if "," in table else "--table"
    return quality.main(
        [which, table, *args, "--dag-id", "lake_daily", "--run-id", run_id], settings=lake
    )


def results(spark, lake, run_id: str):
    return read_table(spark, lake, "dq_results").where(F.col("run_id") == run_id)


def failed(spark, lake, run_id: str) -> dict[str, str]:
    return {
        r.expectation: r.severity
        for r in results(spark, lake, run_id).where(~F.col("success")).collect()
    }


def test_a_good_partition_passes_and_every_expectation_is_recorded(spark, lake):
    codegen = spark.conf.get("spark.sql.codegen.wholeStage")
    assert run(lake, "page_traffic", "good", *INTERVAL) == 0
    # validated interpreted, and the shared session given back as it was
    assert spark.conf.get("spark.sql.codegen.wholeStage") == codegen
    rows = results(spark, lake, "good").collect()
    assert sorted(r.expectation for r in rows) == sorted(
        r.name for r in rules.suite_rules("page_traffic")
    )
    assert all(r.success for r in rows)
    row = rows[0]
    assert (row.dag_id, row.table, row.suite) == ("lake_daily", "page_traffic", "page_traffic")
    assert (row.interval_start, row.interval_end) == (
        datetime(2026, 11, 21),
        datetime(2026, 11, 22),
    )


def test_one_job_validates_two_tables_and_each_passes_or_fails_on_its_own(
    spark, lake, capsys, tmp_path
):
    # page_traffic gets three faults (each an error expectation); surge_history fails a warn only.
    bad = frame(
        spark,
        "page_traffic",
        [
            (None, d(21), at("10:00:00"), 1, 1),  # a null in a required field
            ("home", d(21), at("00:00:00"), 2, 2),  # the key (home, 00:00) again
            ("news", d(21), at("00:05:00", day=22), 1, 1),  # a minute of the next day
        ],
    )
    table = read_table(spark, lake, "page_traffic")
    bad.select(*table.columns).write.format("delta").mode("append").save(
        str(lake.table_path("page_traffic"))
    )
    both = "page_traffic,surge_history"
    try:
        # Without --outcome-dir, as a view gate: the job fails, as a one-table gate did.
        assert run(lake, both, "faulty", *INTERVAL) == EXIT_EXPECTATIONS_FAILED
        faulty = capsys.readouterr()
        # With it: the job passes, each table's outcome says whether it did.
        gated = tmp_path / "outcomes"
        assert run(lake, both, "gated", *INTERVAL, "--outcome-dir", str(gated)) == 0
        gated_log = capsys.readouterr().out
    finally:
        gold.rebuild(spark, lake, "page_traffic", d(21), d(22))
    errors = {
        "expect_column_values_to_not_be_null(column=page_id)": "error",
        "expect_compound_columns_to_be_unique(column_list=[page_id, minute])": "error",
        "expect_column_values_to_be_between(column=minute, min_value=$day_start, "
        "max_value=$day_end, strict_max=true)": "error",
    }
    threshold = registry.app("click_surge").knob("threshold").default
    warn = (
        f"expect_column_values_to_be_between(column=click_count, min_value={threshold}, "
        "strict_min=true)"
    )
    for run_id in ("faulty", "gated"):  # dq_results: each table's rows, under its own name
        assert failed(spark, lake, run_id) == {**errors, warn: "warn"}
        counts = {
            r.table: r["count"]
            for r in results(spark, lake, run_id).groupBy("table").count().collect()
        }
        assert counts == {
            name: len(rules.suite_rules(name)) for name in ("page_traffic", "surge_history")
        }
    log = faulty.out
    assert "[error] expect_column_values_to_not_be_null(column=page_id)" in log
    assert "observed: 1 of 5 rows unexpected" in log
    assert "unexpected rows (sample): " in log and '"minute": "2026-11-22T00:05:00"' in log
    assert "[quality] page_traffic: 11 expectations, 3 failed (3 error) in " in log
    assert "[quality] surge_history: " in log and "1 failed (0 error)" in log
    assert "[quality] 2 table(s) in " in log and ": 1 passed, 1 failed, 0 raised" in log
    assert "[quality] FAILED: page_traffic: 3 error expectation(s) failed: " in faulty.err
    assert "surge_history" not in faulty.err

    assert sorted(p.name for p in gated.iterdir()) == ["page_traffic.json", "surge_history.json"]
    assert "; outcomes in " in gated_log
    traffic = read_outcome(gated, "page_traffic")
    assert (traffic["error_failed"], traffic["expectations"], traffic["error"]) == (True, 11, None)
    assert {f["expectation"]: f["severity"] for f in traffic["failed"]} == errors
    assert traffic["interval"] == [START.isoformat(), (START + timedelta(days=1)).isoformat()]
    assert (traffic["dag_id"], traffic["run_id"]) == ("lake_daily", "gated")
    assert traffic["failure_report"].startswith("page_traffic: 3 expectation(s) failed (3 error")
    assert traffic["data_docs"] == str(data_docs_index(lake)) and traffic["seconds"] > 0
    with pytest.raises(QualityCheckFailed, match="page_traffic: 3 error expectation") as fail:
        check(gated, "page_traffic")
    assert "observed: 1 of 5 rows unexpected" in str(fail.value)  # the report, in the task log
    surges = read_outcome(gated, "surge_history")
    assert (surges["error_failed"], [f["severity"] for f in surges["failed"]]) == (False, ["warn"])
    assert check(gated, "surge_history").startswith("surge_history passed: ")


def test_a_table_whose_validation_raises_does_not_stop_the_others(
    lake, capsys, monkeypatch, tmp_path
):
    validated = []

    def validate(spark, settings, name, context, runner=None):
        validated.append(name)
        if name == "page_traffic":
            raise OSError("disk gone")
        return quality.Outcome([], {}, None, "index.html", 0.1)

    monkeypatch.setattr(quality, "validate", validate)
    out = tmp_path / "outcomes"
    both = ["--outcome-dir", str(out), *INTERVAL]
    assert (
        run(lake, "page_traffic,surge_history", "raised", *both) == quality.EXIT_VALIDATION_RAISED
    )
    assert validated == ["page_traffic", "surge_history"]
    err = capsys.readouterr().err
    assert "[quality] page_traffic: validation raised after " in err and "OSError: disk gone" in err
    assert "[quality] FAILED: validating page_traffic raised" in err
    with pytest.raises(ValidationRaised, match="OSError: disk gone"):
        check(out, "page_traffic")
    assert check(out, "surge_history").startswith("surge_history passed: 0 expectation(s)")

    # An earlier attempt's outcomes go before the job starts: if it then dies, none is left.
    def no_jvm(*args, **kwargs):
        raise RuntimeError("Java gateway process exited")

    monkeypatch.setattr(spark_session, "get_session", no_jvm)
    with pytest.raises(RuntimeError, match="Java gateway"):
        run(lake, "page_traffic,surge_history", "raised", *both)
    with pytest.raises(OutcomeMissing, match="no quality outcome"):
        check(out, "surge_history")


def test_a_warn_failure_passes_and_is_recorded_and_a_rerun_replaces_its_rows(spark, lake):
    threshold = registry.app("click_surge").knob("threshold").default
    for _ in range(2):
        assert run(lake, "surge_history", "warned", *INTERVAL) == 0
    assert failed(spark, lake, "warned") == {
        f"expect_column_values_to_be_between(column=click_count, min_value={threshold}, "
        "strict_min=true)": "warn"
    }
    rows = results(spark, lake, "warned").collect()
    assert len(rows) == len(rules.suite_rules("surge_history"))  # not doubled by the rerun
    warned = next(r for r in rows if not r.success)
    assert (warned.observed_value, warned.unexpected_count) == ("1 of 1 rows unexpected", 1)


def test_a_view_is_validated_whole_against_its_sources_rows(spark, lake):
    assert run(lake, "page_clicks_hourly", "view") == 0
    rows = {r.expectation: r for r in results(spark, lake, "view").collect()}
    total = rows[
        "expect_column_sum_to_be_between(column=clicks, min_value=$source_rows, "
        "max_value=$source_rows)"
    ]
    assert total.success and float(total.observed_value) == len(SILVER["page_clicks"])
    assert total.interval_start is None and total.interval_end is None


def test_data_docs_live_under_the_runtime_dir_and_list_the_runs(lake):
    index = data_docs_index(lake)
    assert index.is_relative_to(lake.runtime_dir)
    html = index.read_text()
    for run_name in (
        "lake_daily__good",
        "lake_daily__faulty",
        "lake_daily__gated",
        "lake_daily__view",
    ):
        assert run_name in html
    assert not (lake.gx_dir / "work").exists() or not any((lake.gx_dir / "work").iterdir())
    # The history a person reads: a warn-only run passed, the faulty one did not; each run's page.
    runs = recent_runs(lake)
    faulty = next(r for r in runs["page_traffic"] if r.run_name == "lake_daily__faulty")
    assert (faulty.passed, faulty.failed_errors) == (False, 3)
    assert (index.parent / faulty.page).is_file()
    # surge_history: twice alone (warned), then with page_traffic in one job (faulty, gated).
    assert [(r.passed, r.failed_warns) for r in runs["surge_history"]] == [(True, 1)] * 4


def test_arguments_are_checked(capsys):
    assert quality.parse_args(["--table", "page_clicks_hourly"]).tables == ["page_clicks_hourly"]
    both = quality.parse_args(["--tables", "page_traffic,surge_history", *INTERVAL])
    assert (both.tables, both.outcome_dir) == (["page_traffic", "surge_history"], None)
    for wrong, says in [
        (["--table", "page_traffic"], "needs --start and --end"),
        (["--table", "page_clicks_hourly", *INTERVAL], "without --start/--end"),
        (["--tables", "page_traffic,page_clicks_hourly", *INTERVAL], "in separate jobs"),
        (["--tables", "page_traffic,nothing", *INTERVAL], "no suite for nothing"),
        (["--tables", "page_traffic", "--table", "surge_history", *INTERVAL], "not allowed with"),
        ([*INTERVAL], "one of the arguments --tables --table is required"),
    ]:
        with pytest.raises(SystemExit):
            quality.parse_args(wrong)
        assert says in capsys.readouterr().err


def test_an_empty_view_of_an_empty_source_has_nothing_to_validate(spark, lake):
    ensure_table(spark, lake, registry.table("silver_ad_requests"))
    full_refresh(spark, lake, registry.view("household_reach_by_geo"))
    assert run(lake, "household_reach_by_geo", "empty") == 0
    assert results(spark, lake, "empty").count() == 0
