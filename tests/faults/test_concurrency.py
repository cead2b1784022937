"""Two writers of one table at once, each its own process (a job's process beside the test's
own session): two refreshes of one view, two runs of one gold interval, and a backfill over days
overlapping the hourly gold run. Delta's optimistic concurrency lets one commit win; the other
finds the winner's commit or is retried (a log line), and the table equals a serial run. And
table maintenance beside gold and a view refresh (e2e): nothing lost, nothing doubled.

The second writer starts when the first has written its data files and not committed them, so
both are in flight; which of them commits first is the race's, and each test says which."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from adlake import registry
from adlake.maintenance import RetentionRefused
from spark_apps.lake import gold, maintenance, views
from spark_apps.lake.tables import ensure_table
from spark_apps.lake.views import PROGRESS_TABLE
from tests.faults import harness
from tests.tiers import variants

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


# the backfill over the hourly run in make test; the same interval twice in the e2e tier
@pytest.mark.parametrize(
    "case",
    variants(["same interval", "backfill over the hourly run"], {"backfill over the hourly run"}),
)
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


@pytest.mark.e2e
def test_maintenance_beside_gold_and_a_view_refresh_loses_and_doubles_nothing(
    spark, lake, tmp_path
):
    """From the lake before gold, with the view behind silver: a retention of 0 is refused (the
    view still needs silver's newer versions); at 1 h, ``lake_maintenance`` as a process
    compacts and vacuums every table while this session rebuilds gold and refreshes the view.
    Both tables equal the uninterrupted run's, and the chain run again changes nothing."""
    settings = lake.fork("silver", tmp_path / "runtime").with_overrides(lake_retention_hours=1)
    for name in harness.FAULTED_GOLD_TABLES:  # the hourly DAG's tables exist
        ensure_table(spark, settings, registry.table(name))
    # What the writers below write or read: the view, its source and progress, the gold tables.
    tables = (
        f"silver_{harness.VIEW_TOPIC}",
        harness.VIEW.name,
        PROGRESS_TABLE,
        *harness.FAULTED_GOLD_TABLES,
    )
    harness.allow_short_retention(spark, settings, tables, hours=1)
    view = harness.VIEW
    with pytest.raises(RetentionRefused, match=f"the view {view.name} has not processed"):
        maintenance.run(spark, settings, list(tables), 0, dry_run=False)

    argv = [
        "spark_apps.lake.maintenance",
        "--tables",
        ",".join(tables),
        "--retention-hours",
        "1",
    ]
    proc = harness.start_job(settings, argv, "maintenance")
    start, end = harness.interval(lake.report)
    try:
        for name in harness.FAULTED_GOLD_TABLES:
            gold.rebuild(spark, settings, name, start, end)
        views.refresh_view(spark, settings, view)
    finally:
        code = harness.finish(proc, timeout=1800)  # a table a few seconds idle, minutes loaded
    log = harness.log_text(settings, "maintenance")
    assert code == 0, f"maintenance failed ({code}):\n{log[-3000:]}"
    assert "compacted" in log, log[-3000:]

    def equal_to_the_reference() -> None:
        for name in (*harness.FAULTED_GOLD_TABLES, view.name):
            diff = harness.compare(spark, lake.settings, settings, name, harness.table_key(name))
            assert diff.equal and diff.got == diff.expected > 0, diff

    equal_to_the_reference()
    # The chain again: the view has no change left to apply (maintenance's OPTIMIZE of its
    # source may be a version it has not seen: a change of no rows), gold rebuilds the same rows.
    again = views.refresh_view(spark, settings, view)
    assert again.mode == "up_to_date" or (again.mode, again.change_rows) == ("incremental", 0)
    for name in harness.FAULTED_GOLD_TABLES:
        gold.rebuild(spark, settings, name, start, end)
    equal_to_the_reference()
