"""Silver: bronze rows parsed with the registry's schemas, validated, deduplicated, by event date.

An ``AvailableNow`` stream per table reads its bronze table (Delta as a streaming source) and, for
each micro-batch:

1. parses and validates every row with the registry's rules (``spark_apps.common.parsing``, the
   same rules the operational apps apply); a row that fails goes to the ``quarantine`` table with
   the reason, the raw value and its bronze coordinates;
2. deduplicates the valid rows. **An event is its id and its event date**: of the records with
   one id and one event date, silver keeps the earliest Kafka record (timestamp, partition,
   offset), whatever the batching. Within a batch a window picks it; across batches a ``MERGE``
   inserts a row whose (id, date) silver lacks and replaces one that silver holds from a later
   Kafka record. Both paths give the same table for the same bronze rows, in one run or many.

Why the date is part of the identity: a duplicate (a producer's retry, the generator's
duplicates) carries its original's payload, hence its event time and date, so the ``MERGE``
looks only at the batch's own date partitions, at a cost that does not grow with the table.
An id unique across dates would need every date partition read (or an index) for every batch.
Two records with one id and different dates are two rows (not a retry: their payloads differ);
grouping the table by id and keeping counts above 1 finds them.

Every bronze row ends up in exactly one of: silver (its coordinates are there), quarantine (its
coordinates are there), or the duplicates (valid, but an earlier record of its id and date is in
silver); :func:`accounting` counts the three.

Exactly once: the quarantine write is an insert-if-absent MERGE keyed by bronze coordinates, and
the silver write skips every row whose (id, date) silver already holds from the same or an
earlier record, so replaying a batch after a crash changes nothing; the checkpoint then records
the batch and the stream moves on.

A topic whose checkpoint has read bronze's latest version starts no query (:func:`nothing_new`),
and when no topic has anything new the job starts no Spark session (:func:`nothing_to_do`, from
the checkpoints and each bronze table's newest commit and checksum).

    .venv/lake/bin/python -m spark_apps.lake.silver --start 2026-11-21 --end 2026-11-22
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.frames import null_safe_join, null_safe_sql
from spark_apps.lake.tables import ensure_table, merge_into, read_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

QUARANTINE = registry.table("quarantine")


def silver_table(topic: str) -> registry.Table:
    return registry.table(f"silver_{topic}")


def transform_validate(bronze: DataFrame, topic: str) -> tuple[DataFrame, DataFrame]:
    """Bronze rows of ``topic`` → (typed valid rows with silver columns, quarantine rows)."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import RAW, REASON, parse_json, split_valid

    table = silver_table(topic)
    parsed = parse_json(
        bronze, registry.topic(topic), value_col="value", received_col="kafka_timestamp"
    )
    valid, bad = split_valid(parsed)
    valid = valid.withColumn("event_date", F.to_date(F.col(registry.silver_time_field(topic))))
    quarantine = bad.select(
        F.lit(table.name).alias("source_table"),
        REASON,
        F.col(RAW).alias("raw_value"),
        "topic",
        "partition",
        "offset",
        "kafka_timestamp",
        "ingest_date",
    )
    return valid.select(*table.schema.names), quarantine.select(*QUARANTINE.schema.names)


# Which of two records of one event silver keeps: the earliest in Kafka.
_EARLIEST_FIRST = ("kafka_timestamp", "partition", "offset")


def event_key(topic: str) -> list[str]:
    """The columns that identify one event of ``topic`` in silver: its id fields and its date."""
    return [*silver_table(topic).keys, "event_date"]


def transform_dedup_batch(valid: DataFrame, topic: str) -> DataFrame:
    """Keep the earliest Kafka record (timestamp, partition, offset) of each event (id, date)."""
    from pyspark.sql import Window, functions as F

    first = Window.partitionBy(*event_key(topic)).orderBy(*_EARLIEST_FIRST)
    return valid.withColumn("_n", F.row_number().over(first)).where("_n = 1").drop("_n")


def _earlier(a: str, b: str) -> str:
    """SQL: record ``a`` is earlier in Kafka than record ``b`` (aliases of silver rows)."""

    def coords(alias: str) -> str:
        return "struct(" + ", ".join(f"{alias}.`{c}`" for c in _EARLIEST_FIRST) + ")"

    return f"{coords(a)} < {coords(b)}"


def transform_supersede(rows: DataFrame, stored: DataFrame, topic: str) -> DataFrame:
    """The deduplicated batch ``rows`` that change silver, given the ``stored`` silver rows of
    their dates: an event silver lacks, or holds from a later Kafka record. A row whose event
    silver holds from the same record (a replay) or an earlier one is dropped."""
    from pyspark.sql import functions as F

    keep_stored = F.expr(f"NOT ({_earlier('s', 't')})")
    return rows.alias("s").join(
        stored.select(*event_key(topic), *_EARLIEST_FIRST).alias("t"),
        null_safe_join("s", "t", event_key(topic)) & keep_stored,
        "left_anti",
    )


def write_batch(spark: SparkSession, settings: Settings, topic: str, batch: DataFrame) -> None:
    """One micro-batch of bronze rows → silver and quarantine, idempotently."""
    batch = batch.persist()  # read once, written to two tables
    try:
        _write_batch(spark, settings, topic, batch)
    finally:
        batch.unpersist()


def _write_batch(spark: SparkSession, settings: Settings, topic: str, batch: DataFrame) -> None:
    valid, quarantine = transform_validate(batch, topic)
    merge_into(
        spark,
        table_path(settings, QUARANTINE),
        quarantine,
        null_safe_sql("t", "s", ["source_table", *registry.BRONZE_COORDINATES]),
        "WHEN NOT MATCHED THEN INSERT *",
    )
    rows = transform_dedup_batch(valid, topic).persist()
    try:
        dates = [r.event_date for r in rows.select("event_date").distinct().collect()]
        if not dates:
            return
        # The literal date list lets Delta prune the target to the batch's own partitions.
        in_dates = ", ".join(f"DATE'{d.isoformat()}'" for d in dates)
        target = table_path(settings, silver_table(topic))
        stored = spark.read.format("delta").load(target).where(f"event_date IN ({in_dates})")
        # Only new events and earlier records of stored ones reach the MERGE, so it rewrites
        # no file for a plain duplicate (a matched row would make Delta rewrite its file).
        changes = transform_supersede(rows, stored, topic)
        merge_into(
            spark,
            target,
            changes,
            f"t.event_date IN ({in_dates}) AND {null_safe_sql('t', 's', event_key(topic))}",
            f"WHEN MATCHED AND {_earlier('s', 't')} THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *",
        )
    finally:
        rows.unpersist()


def start_refine(
    spark: SparkSession, settings: Settings, topic: str, max_files: int | None = None
) -> StreamingQuery:
    """Start the AvailableNow query of one topic (bronze → silver + quarantine)."""
    from spark_apps.lake.bronze import bronze_table

    source = ensure_table(spark, settings, bronze_table(topic))
    ensure_table(spark, settings, silver_table(topic))
    ensure_table(spark, settings, QUARANTINE)
    reader = spark.readStream.format("delta")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    return (
        reader.load(source)
        # the batch's own session: over Spark Connect this function runs in the engine's
        # Python worker, where the client's session does not exist
        .writeStream.foreachBatch(
            lambda batch, _batch_id: write_batch(batch.sparkSession, settings, topic, batch)
        )
        .option("checkpointLocation", str(settings.checkpoint_path(silver_table(topic).name)))
        .queryName(silver_table(topic).name)
        .trigger(availableNow=True)
        .start()
    )


def run(
    spark: SparkSession, settings: Settings, topics: list[str], max_files: int | None = None
) -> dict[str, int]:
    """Refine every topic in ``topics``, one after the other (each MERGEs into the shared
    quarantine table, and Delta would make concurrent MERGEs into it conflict).

    A failure that a damaged checkpoint or Delta log, or a full disk, explains is raised as the
    typed error of :mod:`spark_apps.lake.errors`, naming the file and the runbook step."""
    from spark_apps.lake.bronze import bronze_table
    from spark_apps.lake.errors import diagnosed

    tables = [bronze_table(t) for t in topics] + [silver_table(t) for t in topics] + [QUARANTINE]
    with diagnosed(
        "silver",
        settings.runtime_dir,
        [settings.checkpoint_path(silver_table(t).name) for t in topics],
        [settings.table_path(t.name) for t in tables],
    ):
        return _run(spark, settings, topics, max_files)


def bronze_read_to_end(offset: dict | None, table_id: str, version: int) -> bool:
    """True when a silver query, its newest committed batch ending at ``offset``, would read
    nothing of the bronze table (id ``table_id``, latest ``version``): the offset is the start of
    the version after the latest (Delta's source writes ``index -1`` of version ``v + 1`` once
    it has read all of ``v``). Any other offset leaves the decision to the query.

    >>> bronze_read_to_end({"reservoirId": "b", "reservoirVersion": 12, "index": -1,
    ...                     "isStartingVersion": False}, "b", 11)
    True
    >>> bronze_read_to_end({"reservoirId": "b", "reservoirVersion": 12, "index": -1,
    ...                     "isStartingVersion": False}, "b", 12)
    False
    """
    return bool(offset) and (
        offset.get("reservoirId") == table_id
        and offset.get("reservoirVersion") == version + 1
        and offset.get("index") == -1
        and offset.get("isStartingVersion") is False
    )


def nothing_new(spark: SparkSession, settings: Settings, topic: str) -> bool:
    """Whether ``topic``'s silver query would read no bronze row: read to the end
    (:func:`bronze_read_to_end`), or starting over an empty bronze (:func:`fresh_and_empty`);
    asks the bronze table's Delta log, no Spark job."""
    from spark_apps.lake.bronze import bronze_table, committed_source_offset
    from spark_apps.lake.delta_log import log_state

    offset = committed_source_offset(settings.checkpoint_path(silver_table(topic).name))
    path = settings.table_path(bronze_table(topic).name)
    if offset is None or not (path / "_delta_log").is_dir():
        return False
    if offset == {}:
        return fresh_and_empty(offset, newest_checksum(path))
    state = log_state(path)
    return bronze_read_to_end(offset, state.table_id, state.version)


def newest_checksum(table: Path) -> dict | None:
    """The checksum file (``N.crc``) of the newest commit of the Delta table at ``table``, with
    its ``version`` added: Delta writes one with each commit, carrying the table's metadata and
    its file count. None without them (then ask Delta)."""
    log = table / "_delta_log"
    versions = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()] if log.is_dir() else []
    if not versions:
        return None
    try:
        checksum = json.loads((log / f"{max(versions):020d}.crc").read_text())
    except (OSError, ValueError):
        return None
    return {**checksum, "version": max(versions)} if isinstance(checksum, dict) else None


def latest_from_files(table: Path) -> tuple[str, int] | None:
    """``(table id, latest version)`` of the Delta table at ``table``, from its newest checksum
    (:func:`newest_checksum`); None without it."""
    return id_and_version(newest_checksum(table))


def id_and_version(checksum: dict | None) -> tuple[str, int] | None:
    """``(table id, version)`` of a :func:`newest_checksum`; None when it lacks them.

    >>> id_and_version({"metadata": {"id": "b"}, "version": 3})
    ('b', 3)
    >>> id_and_version(None) is None
    True
    """
    try:
        return checksum["metadata"]["id"], checksum["version"]
    except (KeyError, TypeError):
        return None


def fresh_and_empty(offset: dict | None, checksum: dict | None) -> bool:
    """True when a silver query that has planned no batch yet (``offset`` ``{}``) would read
    nothing: such a query starts at the bronze table's latest snapshot, and that version's
    ``checksum`` counts no file in it. Bronze is only appended to, so the first query once it
    holds rows reads every one of them: nothing is skipped.

    >>> fresh_and_empty({}, {"numFiles": 0, "version": 0})
    True
    >>> fresh_and_empty({}, {"numFiles": 3, "version": 1})
    False
    >>> fresh_and_empty(None, {"numFiles": 0, "version": 0})  # planned, not committed
    False
    >>> fresh_and_empty({}, None)  # no checksum: ask the query
    False
    """
    return offset == {} and bool(checksum) and checksum.get("numFiles") == 0


def nothing_to_do(settings: Settings, topics: list[str]) -> bool:
    """True when no topic of ``topics`` has anything new in bronze, decided from files alone
    (checkpoints, and each bronze table's newest commit and checksum: :func:`latest_from_files`);
    then the job needs no Spark session. Any doubt says False and the job runs as usual. Damage
    the files show is raised here, typed, as the run would raise it."""
    from spark_apps.lake import errors
    from spark_apps.lake.bronze import bronze_table, committed_source_offset

    checkpoints = [settings.checkpoint_path(silver_table(t).name) for t in topics]
    tables = [bronze_table(t) for t in topics] + [silver_table(t) for t in topics] + [QUARANTINE]
    errors.check_state(checkpoints, [settings.table_path(t.name) for t in tables])
    if not all((settings.table_path(t.name) / "_delta_log").is_dir() for t in tables):
        return False
    for topic, checkpoint in zip(topics, checkpoints):
        offset = committed_source_offset(checkpoint)
        checksum = newest_checksum(settings.table_path(bronze_table(topic).name))
        if fresh_and_empty(offset, checksum):
            continue
        latest = id_and_version(checksum)
        if latest is None or not bronze_read_to_end(offset, *latest):
            return False
    return True


def _run(
    spark: SparkSession, settings: Settings, topics: list[str], max_files: int | None
) -> dict[str, int]:
    """Each topic's query in turn; a topic whose bronze holds nothing new (:func:`nothing_new`)
    starts none: it would plan an empty batch and write nothing, at seconds per topic."""
    read: dict[str, int] = {}
    for topic in topics:
        if nothing_new(spark, settings, topic):
            read[topic] = 0
            # The tables the query would have created (a first run over an empty bronze).
            for table in (silver_table(topic), QUARANTINE):
                if not (settings.table_path(table.name) / "_delta_log").is_dir():
                    ensure_table(spark, settings, table)
            print(f"[silver] {topic}: nothing new in bronze, no query", flush=True)
            continue
        query = start_refine(spark, settings, topic, max_files)
        query.awaitTermination()
        read[topic] = sum(p.numInputRows for p in query.recentProgress)
        print(
            f"[silver] {topic}: {read[topic]} bronze rows read in "
            f"{len(query.recentProgress)} batches",
            flush=True,
        )
    return read


def accounting(spark: SparkSession, settings: Settings, topic: str) -> dict[str, int]:
    """Where each bronze row of ``topic`` went: silver, quarantine or duplicate (exactly one)."""
    from pyspark.sql import functions as F

    from spark_apps.lake.bronze import bronze_table

    coords = list(registry.BRONZE_COORDINATES)
    bronze = read_table(spark, settings, bronze_table(topic).name).select(*coords)
    silver = read_table(spark, settings, silver_table(topic).name).select(*coords)
    quarantined = (
        read_table(spark, settings, QUARANTINE.name)
        .where(F.col("source_table") == silver_table(topic).name)
        .select(*coords)
    )
    n_bronze, n_silver, n_quarantine = bronze.count(), silver.count(), quarantined.count()
    unaccounted = bronze.exceptAll(silver).exceptAll(quarantined)
    return {
        "bronze": n_bronze,
        "silver": n_silver,
        "quarantine": n_quarantine,
        "duplicates": unaccounted.count(),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from adlake.helpformat import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.silver", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--start",
        help="data interval start (logged: the stream reads what "
        "bronze holds, its checkpoint decides what is new)",
    )
    parser.add_argument("--end", help="data interval end (logged, like --start)")
    parser.add_argument(
        "--topics",
        default=",".join(registry.SILVER_TOPICS),
        help="comma-separated topics whose silver tables to refine",
    )
    parser.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        help="bronze files per micro-batch (default: all in one batch)",
    )
    args = parser.parse_args(argv)
    for name in args.topics.split(","):
        if name not in registry.SILVER_TOPICS:
            parser.error(
                f"no silver table for topic {name!r}; silver topics: "
                f"{', '.join(registry.SILVER_TOPICS)}"
            )
    return args


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    started = time.monotonic()
    print(f"[silver] interval {args.start} .. {args.end}", flush=True)
    if nothing_to_do(settings, args.topics.split(",")):
        # The common hour of a quiet topic set: no JVM, no session, nothing written.
        print(
            f"[silver] nothing new in bronze, no Spark session ({time.monotonic() - started:.1f}s)",
            flush=True,
        )
        return 0
    spark = get_session("lake", "silver", settings)
    read = run(spark, settings, args.topics.split(","), args.max_files_per_trigger)
    for topic in args.topics.split(","):
        # A topic that read nothing changed neither bronze nor silver: its accounting is the
        # last run's (and costs four scans of its tables).
        if read[topic]:
            print(f"[silver] {topic}: {accounting(spark, settings, topic)}", flush=True)
    print(f"[silver] done in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
