"""Silver's writes on Delta tables (``silver.write_batch``): the same bronze rows give the same
silver and quarantine tables in one run or in several, whichever batch brings a duplicate.

The rule under test (``spark_apps/lake/silver.py``): an event is its id and its event date; of
its records silver keeps the earliest in Kafka (timestamp, partition, offset). Expected tables
are written out by hand.
"""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from spark_apps.lake import silver
from spark_apps.lake.tables import ensure_table, read_table

pytest.importorskip("delta")


@pytest.fixture
def lake(settings, tmp_path):
    """Settings whose tables live under this test's own directory."""
    return settings.with_overrides(runtime_dir=tmp_path / "runtime")


def at(hms: str, day: int = 21) -> datetime:
    return datetime.fromisoformat(f"2026-11-{day:02d}T{hms}+00:00")


def click_json(click_id: str, day: int) -> str:
    return json.dumps(
        {
            "click_id": click_id,
            "page_id": "home",
            "event_time": f"2026-11-{day:02d}T09:00:00.000Z",
            "user_id": "u-1",
        }
    )


# name: (value, partition, offset, Kafka timestamp)
RECORDS = {
    "c1 on the 21st": (click_json("c1", 21), 0, 0, at("10:00:05")),
    "c1 on the 21st, earlier in Kafka": (click_json("c1", 21), 1, 0, at("10:00:01")),
    "c1 on the 22nd": (click_json("c1", 22), 0, 1, at("10:00:06", 22)),
    "c2": (click_json("c2", 21), 0, 2, at("10:00:07")),
    "c2, later in Kafka": (click_json("c2", 21), 1, 1, at("10:00:08")),
    "c3": (click_json("c3", 22), 1, 2, at("10:00:02", 22)),
    "c5": (click_json("c5", 21), 0, 3, at("10:00:09")),
    "c5 again, same time, next offset": (click_json("c5", 21), 0, 4, at("10:00:09")),
    "c4 with trailing text": (click_json("c4", 21) + " xyz", 1, 3, at("10:00:03")),
}
# The first batch holds the later records of c1; the earlier one comes in the second.
FIRST = ["c1 on the 21st", "c1 on the 22nd", "c2", "c5"]
SECOND = [name for name in RECORDS if name not in FIRST]


def bronze(spark, names: list[str]):
    """Bronze rows of page_clicks for the named records."""
    return spark.createDataFrame(
        [
            (
                "home",
                value,
                None,
                "page_clicks",
                partition,
                offset,
                kafka_ts,
                at("12:00:00"),
                date(2026, 11, 21),
            )
            for value, partition, offset, kafka_ts in (RECORDS[n] for n in names)
        ],
        registry.table("bronze_page_clicks").schema.spark(),
    )


def refine(spark, lake, batches: list[list[str]]):
    """Write each batch of named records with silver's ``write_batch``; return the silver and
    quarantine tables."""
    ensure_table(spark, lake, silver.silver_table("page_clicks"))
    ensure_table(spark, lake, silver.QUARANTINE)
    for names in batches:
        silver.write_batch(spark, lake, "page_clicks", bronze(spark, names))
    return (read_table(spark, lake, "silver_page_clicks"), read_table(spark, lake, "quarantine"))


def merge_metrics(spark, lake, since: int = -1) -> list[dict[str, str]]:
    """Rows inserted, rows updated and files removed by each silver commit after ``since``."""
    from spark_apps.lake.tables import table_path

    history = spark.sql(f"DESCRIBE HISTORY delta.`{table_path(lake, 'silver_page_clicks')}`")
    commits = sorted(history.where(f"version > {since}").collect(), key=lambda c: c.version)
    return [
        {
            k: c.operationMetrics[k]
            for k in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetFilesRemoved")
        }
        for c in commits
        if c.operation == "MERGE"
    ]


def silver_version(spark, lake) -> int:
    from spark_apps.lake.delta_log import latest_version
    from spark_apps.lake.tables import table_path

    return latest_version(table_path(lake, "silver_page_clicks"))


def expected_silver(spark):
    def row(click_id: str, day: int, partition: int, offset: int, kafka_ts: datetime) -> tuple:
        return (
            click_id,
            "home",
            at("09:00:00", day),
            "u-1",
            "page_clicks",
            partition,
            offset,
            kafka_ts,
            date(2026, 11, day),
        )

    return spark.createDataFrame(
        [
            row("c1", 21, 1, 0, at("10:00:01")),  # the earliest record of c1 on the 21st
            row("c1", 22, 0, 1, at("10:00:06", 22)),  # the same id on another date: its own event
            row("c2", 21, 0, 2, at("10:00:07")),
            row("c3", 22, 1, 2, at("10:00:02", 22)),
            row("c5", 21, 0, 3, at("10:00:09")),
        ],
        registry.table("silver_page_clicks").schema.spark(),
    )


def test_one_run_and_two_runs_give_the_same_silver(spark, lake, tmp_path):
    one_silver, one_quarantine = refine(
        spark, lake.with_overrides(runtime_dir=tmp_path / "one"), [list(RECORDS)]
    )
    two = lake.with_overrides(runtime_dir=tmp_path / "two")
    two_silver, two_quarantine = refine(spark, two, [FIRST, SECOND])

    assertDataFrameEqual(one_silver, expected_silver(spark))
    assertDataFrameEqual(two_silver, one_silver)
    assertDataFrameEqual(two_quarantine, one_quarantine)
    assert [(r.reason, r.offset) for r in two_quarantine.collect()] == [("invalid_json", 3)]
    # The second run replaced c1's stored record with its earlier one and inserted c3; c2's and
    # c5's later records changed nothing.
    assert merge_metrics(spark, two)[-1] == {
        "numTargetRowsInserted": "1",
        "numTargetRowsUpdated": "1",
        "numTargetFilesRemoved": "1",
    }


def test_a_replayed_batch_changes_nothing(spark, lake):
    refine(spark, lake, [FIRST, SECOND])
    before = silver_version(spark, lake)
    silver_rows, quarantine_rows = refine(spark, lake, [SECOND, FIRST])  # replays, both orders

    assertDataFrameEqual(silver_rows, expected_silver(spark))
    assert quarantine_rows.count() == 1
    # Every replayed row was already held, from the same or an earlier record: no row written,
    # no file rewritten (Delta may skip the commit of a MERGE that changes nothing).
    assert all(
        m
        == {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "0", "numTargetFilesRemoved": "0"}
        for m in merge_metrics(spark, lake, before)
    )


def test_a_first_run_over_an_empty_bronze_starts_no_query_and_the_next_reads_it_all(
    spark, lake, capsys
):
    """A silver query that has planned no batch starts at bronze's latest snapshot: over an
    empty bronze the run starts none (and creates silver's tables, as the query would have);
    the first run once bronze holds rows reads every one of them."""
    from spark_apps.lake.tables import table_path

    ensure_table(spark, lake, registry.table("bronze_page_clicks"))
    assert silver.run(spark, lake, ["page_clicks"]) == {"page_clicks": 0}
    assert "page_clicks: nothing new in bronze, no query" in capsys.readouterr().out
    assert not lake.checkpoint_path("silver_page_clicks").exists()
    assert read_table(spark, lake, "silver_page_clicks").count() == 0
    assert read_table(spark, lake, "quarantine").count() == 0

    (
        bronze(spark, list(RECORDS))
        .write.format("delta")
        .mode("append")
        .save(table_path(lake, "bronze_page_clicks"))
    )
    assert silver.run(spark, lake, ["page_clicks"]) == {"page_clicks": len(RECORDS)}
    assertDataFrameEqual(read_table(spark, lake, "silver_page_clicks"), expected_silver(spark))
    assert read_table(spark, lake, "quarantine").count() == 1
