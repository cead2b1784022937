"""Two writers of one table at once, each its own process (a job's process beside the test's
own session): two refreshes of one view, two runs of one gold interval, and a backfill over days
overlapping the hourly gold run. Delta's optimistic concurrency lets one commit win; the other
finds the winner's commit or is retried (a log line), and the table equals a serial run.

The second writer starts when the first has written its data files and not committed them, so
both are in flight; which of them commits first is the race's, and each test says which."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from adlake import registry
from spark_apps.lake import gold, views
from spark_apps.lake.tables import ensure_table
from tests.faults import harness

pytestmark = pytest.mark.faults

RETRIED = "a concurrent commit won"


def race(settings, argv, log_name, table, second):
    """Start ``argv`` as a process, run ``second()`` in this one once the process is writing
    ``table``'s data files; both must succeed. Returns the process's log and the result."""
    proc = harness.start_job(settings, argv, log_name)
    try:
        moment = harness.merge_writing(table)
        while proc.poll() is None and not moment.holds():  # polls the files every POLL_S
            time.sleep(harness.POLL_S)
        result = second()
    finally:
        code = harness.finish(proc)
    log = harness.log_text(settings, log_name)
    assert code == 0, f"the concurrent process failed ({code}):\n{log[-3000:]}"
    return log, result


def test_two_refreshes_of_one_view_at_once_count_each_change_once(spark, lake, tmp_path, capsys):
    settings = lake.fork("silver", tmp_path / "runtime")
    view_table = settings.table_path(harness.VIEW.name)
    before = max(harness.log_versions(view_table))

    log, report = race(
        settings,
        harness.job_argv("views", lake.report),
        "view-a",
        view_table,
        lambda: views.refresh_view(spark, settings, harness.VIEW),
    )

    diff = harness.compare(spark, lake.settings, settings, harness.VIEW.name, harness.VIEW.keys)
    assert diff.equal and diff.got == diff.expected, diff
    # One MERGE of the change in the view's log, whoever made it.
    merges = [v for v in harness.log_versions(view_table) if v > before]
    assert len(merges) == 1, merges
    print(
        f"[race] view: this process {report.mode} ({report.notes}); other: "
        f"{[line for line in log.splitlines() if harness.VIEW.name in line][-1:]}"
    )


def hourly(report) -> tuple[str, str]:
    day = dt.date.fromisoformat(report["started_at"][:10])
    return f"{day}T13:00:00", f"{day}T14:00:00"


@pytest.mark.parametrize("case", ["same interval", "backfill over the hourly run"])
def test_two_gold_runs_at_once_end_as_a_serial_run(spark, lake, tmp_path, capsys, case):
    settings = lake.fork("silver", tmp_path / "runtime")
    name = "page_traffic"
    ensure_table(spark, settings, registry.table(name))  # the hourly DAG's table exists
    start, end = harness.interval(lake.report)
    if case == "same interval":
        first = ["--start", start.isoformat(), "--end", end.isoformat()]
    else:  # the hourly run rebuilds its hour; the backfill its day and the ones around it
        first = ["--start", hourly(lake.report)[0], "--end", hourly(lake.report)[1]]
    argv = ["spark_apps.lake.gold", "--tables", name, *first]

    log, _ = race(
        settings,
        argv,
        "gold-a",
        settings.table_path(name),
        lambda: gold.rebuild(spark, settings, name, start, end),
    )

    diff = harness.compare(spark, lake.settings, settings, name, harness.table_key(name))
    assert diff.equal and diff.got == diff.expected, diff
    retried = RETRIED in log or RETRIED in capsys.readouterr().out
    print(f"[race] gold {case}: loser retried: {retried}")
