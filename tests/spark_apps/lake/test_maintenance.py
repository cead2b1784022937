"""Table maintenance (``spark_apps.lake.maintenance``) on real Delta tables: the retention guard
refuses, naming the reader, what a streaming checkpoint, Delta's own check or the promised time
travel still needs, and removes nothing; once the readers have caught up, a dry run lists what
the run then does, and the run compacts and removes files while every table reads the same.

Bronze rows of page_clicks come in two appends (two files in one partition); silver reads the
first, so its checkpoint still needs the second's version."""

from __future__ import annotations

import pytest

from adlake import registry
from adlake.maintenance import RetentionRefused, read_latest
from spark_apps.lake import maintenance, silver
from spark_apps.lake.tables import ensure_table, table_path
from tests.spark_apps.lake.test_silver import FIRST, SECOND, bronze

pytest.importorskip("delta")

TOPIC = "page_clicks"
BRONZE, SILVER = f"bronze_{TOPIC}", f"silver_{TOPIC}"


@pytest.fixture
def lake(settings, tmp_path):
    """This test's tables; the time travel it promises: none (retention 0 is allowed by it)."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime", lake_retention_hours=0)


def allow_short_retention(spark, lake, tables) -> None:
    """Lower Delta's own minimum on ``tables`` (7 days unless set), as a deployment that
    configures a short retention must."""
    for name in tables:
        spark.sql(
            f"ALTER TABLE delta.`{table_path(lake, name)}` SET TBLPROPERTIES "
            "('delta.deletedFileRetentionDuration' = 'interval 0 hours')"
        )


def on_disk(lake, tables) -> dict[str, tuple[int, int]]:
    from pathlib import Path

    return {t: maintenance.disk_usage(Path(table_path(lake, t))) for t in tables}


def content(spark, lake, name):
    return spark.read.format("delta").load(table_path(lake, name))


def same_rows(a, b) -> bool:
    """Equal as multisets, compared in Spark (no timestamp through Python)."""
    return a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()


def test_the_guard_names_each_reader_then_maintenance_compacts_and_removes(lake, spark):
    path = ensure_table(spark, lake, registry.table(BRONZE))
    bronze(spark, FIRST).write.format("delta").mode("append").save(path)
    silver.run(spark, lake, [TOPIC])  # the checkpoint has read version 1
    bronze(spark, SECOND).write.format("delta").mode("append").save(path)  # version 2, unread
    tables = [BRONZE, SILVER, "quarantine"]
    before = on_disk(lake, tables)

    # Delta's own minimum (7 days on every table here), then the silver checkpoint.
    with pytest.raises(RetentionRefused) as refused:
        maintenance.run(spark, lake, tables, 0, dry_run=False)
    assert f"* {BRONZE}: Delta's own safety check keeps removed files for" in str(refused.value)
    allow_short_retention(spark, lake, tables)
    with pytest.raises(RetentionRefused) as refused:
        maintenance.run(spark, lake, tables, 0, dry_run=False)
    message = str(refused.value)
    assert f"* {BRONZE}: the silver checkpoint {SILVER} has not processed version 2" in message
    assert "Delta's own" not in message and "nothing was removed" in message
    # 24 h would cover it (version 2 is seconds old), but not the time travel promised.
    with pytest.raises(RetentionRefused) as refused:
        maintenance.run(spark, lake.with_overrides(lake_retention_hours=48), tables, 24, False)
    assert "time travel is promised over the configured retention" in str(refused.value)
    assert "needs at least 48 h" in str(refused.value)
    assert on_disk(lake, tables) == before

    # The reader catches up: a dry run lists, and changes nothing.
    silver.run(spark, lake, [TOPIC])
    snapshots = {t: content(spark, lake, t).localCheckpoint() for t in tables}
    before = on_disk(lake, tables)
    dry = {r["table"]: r for r in maintenance.run(spark, lake, tables, 0, dry_run=True)}
    assert on_disk(lake, tables) == before
    appended = dry[BRONZE]["live_files_before"]  # the two appends' files, one partition
    assert appended >= 2 and dry[BRONZE]["partitions_compacted"] == 1
    assert f"would compact {appended} files in 1 partition(s)" in dry[BRONZE]["detail"]
    assert all(r["dry_run"] and r.get("live_files_after") is None for r in dry.values())
    assert read_latest(lake) is None  # the page shows runs, not dry runs

    # The run: one file per partition, nothing on disk but the latest version's files, the
    # same rows; what the dry run said it would remove is gone (and what OPTIMIZE replaced).
    done = {r["table"]: r for r in maintenance.run(spark, lake, tables, 0, dry_run=False)}
    for name in tables:
        row = done[name]
        assert row["disk_files_after"] == row["live_files_after"], row
        assert row["files_removed"] >= dry[name]["files_removed"], row
        assert same_rows(content(spark, lake, name), snapshots[name]), name
    assert done[BRONZE]["live_files_after"] == 1  # one partition, compacted
    assert done[BRONZE]["files_removed"] == appended  # the appends' files, replaced

    latest = read_latest(lake)  # what the Data quality page shows
    assert [t["table"] for t in latest["tables"]] == tables and latest["retention_hours"] == 0
    assert latest["tables"][0]["files_removed"] == appended

    history = content(spark, lake, maintenance.HISTORY)
    assert history.where("dry_run").count() == len(tables)
    assert history.where("NOT dry_run").count() == len(tables)
    assert history.select("dag_id").distinct().first()[0] == "manual"


@pytest.mark.parametrize(
    "hours, refusal",
    [
        ("87601", "'87601' is out of range: allowed integers from 0 to 87600"),
        ("9" * 30, f"'{'9' * 30}' is out of range: allowed integers from 0 to 87600"),
        ("-1", "'-1' is out of range"),
        ("nan", "'nan' is not a valid integer"),
    ],
)
def test_a_retention_outside_the_forms_range_is_refused_before_spark_starts(hours, refusal, capsys):
    with pytest.raises(SystemExit) as exit_:
        maintenance.parse_args(["--retention-hours", hours])
    assert exit_.value.code == 2
    assert f"--retention-hours: {refusal}" in capsys.readouterr().err


def test_the_configurations_retention_is_taken_when_the_form_leaves_it_empty(monkeypatch):
    monkeypatch.setenv("ADLAKE_LAKE_RETENTION_HOURS", "336")
    assert maintenance.parse_args(["--retention-hours", ""]).retention_hours == 336
    assert maintenance.parse_args(["--retention-hours", "87600"]).retention_hours == 87_600
