"""Bronze: every Kafka topic of the registry into its own Delta table, raw, with an
``AvailableNow`` trigger.

Each record lands as it was: key, value and headers as text, plus its Kafka topic, partition,
offset and timestamp and the ingestion time; nothing is parsed away, so any later job can be
replayed from bronze. Tables are partitioned by ingestion date.

Exactly once: the Kafka offsets of each micro-batch are recorded in the query's checkpoint and the
Delta sink commits the batch with the batch id as its transaction version, so a run interrupted
anywhere and rerun neither skips nor repeats a record: a batch whose Delta commit happened is
recognised and skipped, one whose commit did not is written again from the same offsets.

Bronze catches up; it is never backfilled by interval. ``AvailableNow`` reads everything the
topics hold past the checkpoint when the run starts, then stops. The Airflow data interval
(``--start``/``--end``) is printed in the log and limits nothing: a run, whatever its interval,
ingests what is new, so a backfill of bronze over past dates ingests nothing more than the latest
run would (usually nothing). The interval could not select records anyway: a record's Kafka
timestamp says when it arrived, not what day it is about, and the topics keep only their
retention. Bronze keeps every record it ever ingested, so it, not Kafka, is what later layers are
rebuilt from: silver catches up from bronze through its own checkpoint, and gold rebuilds any
interval from silver (see ``spark_apps/lake/gold.py``).

An hour with nothing new costs no Spark: before starting a query for a topic, bronze compares
its checkpoint's newest committed batch with the broker's end offsets (:func:`nothing_new`), and
when every topic is read to its end it does not even start a session (:func:`nothing_to_do`).
A skipped topic has no record to ingest, so exactly-once is untouched; any doubt (a planned batch
not committed, a file that does not read, a broker that does not answer) runs the query.

    .venv/lake/bin/python -m spark_apps.lake.bronze --start 2026-11-21 --end 2026-11-22
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
from adlake.helpformat import HelpFormatter
from spark_apps.lake.tables import ensure_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery


def bronze_table(topic: str) -> registry.Table:
    return registry.table(f"bronze_{topic}")


def transform_bronze(raw: DataFrame) -> DataFrame:
    """Kafka source rows (with headers) → the registry's bronze columns."""
    from pyspark.sql import functions as F

    return raw.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.when(F.col("headers").isNotNull(), F.to_json("headers")).alias("headers_json"),
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.current_timestamp().alias("ingest_time"),
        F.to_date(F.current_timestamp()).alias("ingest_date"),
    )


def start_ingest(
    spark: SparkSession, settings: Settings, topic: str, max_offsets: int | None = None
) -> StreamingQuery:
    """Start the AvailableNow query of one topic (Kafka → its bronze table)."""
    table = bronze_table(topic)
    path = ensure_table(spark, settings, table)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        # Retention may delete offsets the checkpoint has not read yet; that is data loss
        # upstream of us, logged by Spark, and must not wedge every later run.
        .option("failOnDataLoss", "false")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return (
        transform_bronze(reader.load())
        .writeStream.format("delta")
        .option("checkpointLocation", str(settings.checkpoint_path(table.name)))
        .queryName(table.name)
        .trigger(availableNow=True)
        .outputMode("append")
        .start(path)
    )


def committed_source_offset(checkpoint: Path) -> dict | None:
    """The source offset (JSON) of the newest batch of the streaming checkpoint at
    ``checkpoint``, if that batch is committed. ``{}`` for a checkpoint that planned no batch
    yet; None when its newest batch was planned (``offsets/N``) but not committed
    (``commits/N``), or its files do not read as expected: then only the query knows what is
    left to do. Used by bronze (Kafka offsets) and silver (Delta versions)."""
    from spark_apps.lake.errors import numbered_files

    offsets, commits = (
        numbered_files(checkpoint / "offsets"),
        numbered_files(checkpoint / "commits"),
    )
    if not offsets and not commits:
        return {}
    if not offsets or max(offsets) != max(commits, default=None):
        return None
    try:
        # offsets/N: a version line, the batch's metadata, then the offset of its one source.
        offset = json.loads(offsets[max(offsets)].read_text().splitlines()[2])
    except (OSError, ValueError, IndexError):
        return None
    return offset if isinstance(offset, dict) else None


def committed_offsets(checkpoint: Path, topic: str) -> dict[int, int] | None:
    """The Kafka offsets of ``topic`` up to which the bronze checkpoint at ``checkpoint`` has
    ingested, by partition (see :func:`committed_source_offset`)."""
    offset = committed_source_offset(checkpoint)
    if not offset:
        return offset
    try:
        return {int(p): int(o) for p, o in offset[topic].items()}
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


def broker_offsets(settings: Settings, topic: str) -> dict[int, tuple[int, int]] | None:
    """``{partition: (earliest, end)}`` offsets of ``topic`` on the broker; None if the broker
    does not answer within a few seconds (the query then runs and rides the outage out or fails
    as it would have)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "group.id": "adlake-bronze-offsets",
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
            "log_level": 0,
        }
    )  # an unreachable broker: None, not a page of logs
    try:
        partitions = consumer.list_topics(topic, timeout=5).topics[topic].partitions
        if not partitions:
            return None
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            for p in partitions
        }
    except (KafkaException, KeyError, TypeError):
        return None
    finally:
        consumer.close()


def nothing_new(
    committed: dict[int, int] | None, broker: dict[int, tuple[int, int]] | None
) -> bool:
    """True when a bronze query would ingest nothing: every partition of the topic is read up
    to its end offset (or, never read, holds no record). Anything else, including a checkpoint
    past the broker's end (a topic recreated) or a partition the checkpoint does not know,
    leaves the decision to the query.

    >>> nothing_new({0: 5, 1: 7}, {0: (0, 5), 1: (2, 7)})
    True
    >>> nothing_new({0: 5}, {0: (0, 6)})
    False
    >>> nothing_new({}, {0: (3, 3)})
    True
    """
    if committed is None or broker is None:
        return False
    if set(committed) - set(broker):
        return False
    return all(
        committed[p] == end if p in committed else earliest == end
        for p, (earliest, end) in broker.items()
    )


def run(
    spark: SparkSession, settings: Settings, topics: list[str], max_offsets: int | None = None
) -> dict[str, int]:
    """Ingest every topic in ``topics`` (concurrently); returns rows written per table.

    A topic with nothing new (:func:`nothing_new`: its checkpoint's newest batch is committed
    and ends at the broker's end offsets) starts no query: that query would plan an empty batch
    and write nothing, at a cost of seconds per topic. Exactly-once is untouched: a skipped topic
    has no record to ingest, and a checkpoint with a planned, uncommitted batch is never skipped.

    A failure that a damaged checkpoint or Delta log, or a full disk, explains is raised as the
    typed error of :mod:`spark_apps.lake.errors`, naming the file and the runbook step.
    """
    from spark_apps.lake.errors import diagnosed

    tables = [bronze_table(t) for t in topics]
    with diagnosed(
        "bronze",
        settings.runtime_dir,
        [settings.checkpoint_path(t.name) for t in tables],
        [settings.table_path(t.name) for t in tables],
    ):
        for table in tables:
            check_sink_caught_up(spark, settings, table)
        return _run(spark, settings, topics, max_offsets)


def check_sink_caught_up(spark: SparkSession, settings: Settings, table: registry.Table) -> None:
    """Raise :class:`~spark_apps.lake.errors.DeltaLogCorrupted` if ``table``'s Delta log lacks
    batches its checkpoint committed (see :func:`spark_apps.lake.errors.sink_behind`): the one
    damage no file shows, a newest commit deleted together with its checksum."""
    from spark_apps.lake import errors
    from spark_apps.lake.delta_log import log_state

    query_id, committed = errors.committed_batch(settings.checkpoint_path(table.name))
    if query_id is None or committed is None:
        return
    path = settings.table_path(table.name)
    if sink_recorded_in_newest_commit(path, query_id, committed):
        return
    recorded = None
    if (path / "_delta_log").is_dir():
        recorded = log_state(path).transactions.get(query_id)
    problem = errors.sink_behind(path, query_id, committed, recorded)
    if problem:
        raise errors.DeltaLogCorrupted(
            f"Delta table {path} is damaged: {problem}. Do not write to it; follow "
            f"{errors.DELTA_LOG_STEP}",
            path,
        )


def sink_recorded_in_newest_commit(table: Path, query_id: str, committed: int) -> bool:
    """Whether the newest commit of ``table``'s Delta log records batch ``committed`` (or a later
    one) of the query ``query_id``: the Delta sink writes a ``txn`` action (the query id and the
    batch id) into each batch's commit. Reads one file, no Spark job; False says only "look at
    the snapshot" (another writer may have committed since, or the newest commit was lost)."""
    log = table / "_delta_log"
    if not log.is_dir():
        return False
    versions = [p for p in log.glob("*.json") if p.stem.isdigit()]
    if not versions:
        return False
    try:
        lines = max(versions, key=lambda p: int(p.stem)).read_text().splitlines()
        txns = [json.loads(line)["txn"] for line in lines if line.startswith('{"txn"')]
    except (OSError, ValueError, KeyError):
        return False
    return any(t.get("appId") == query_id and int(t.get("version", -1)) >= committed for t in txns)


def nothing_to_do(settings: Settings, topics: list[str]) -> bool:
    """True when no topic of ``topics`` has anything new in Kafka (:func:`nothing_new`), every
    bronze table exists and every sink holds its checkpoint's newest batch (read from files:
    :func:`sink_recorded_in_newest_commit`). Then the job needs no Spark session at all; any
    doubt (a broker that does not answer, a damaged or unexpected file) says False and the job
    runs as usual, with its full checks. Damage the files show is raised here, typed, as the
    run would raise it (:func:`spark_apps.lake.errors.check_state`)."""
    from spark_apps.lake import errors

    tables = [bronze_table(t) for t in topics]
    errors.check_state(
        [settings.checkpoint_path(t.name) for t in tables],
        [settings.table_path(t.name) for t in tables],
    )
    for topic, table in zip(topics, tables):
        checkpoint, path = settings.checkpoint_path(table.name), settings.table_path(table.name)
        if not (path / "_delta_log").is_dir():
            return False
        query_id, committed = errors.committed_batch(checkpoint)
        if committed is not None and not (
            query_id and sink_recorded_in_newest_commit(path, query_id, committed)
        ):
            return False
        if not nothing_new(committed_offsets(checkpoint, topic), broker_offsets(settings, topic)):
            return False
    return True


def _run(
    spark: SparkSession, settings: Settings, topics: list[str], max_offsets: int | None
) -> dict[str, int]:
    queries: dict[str, StreamingQuery] = {}
    written: dict[str, int] = {}
    try:
        for t in topics:
            table = bronze_table(t)
            if nothing_new(
                committed_offsets(settings.checkpoint_path(table.name), t),
                broker_offsets(settings, t),
            ):
                if not (settings.table_path(table.name) / "_delta_log").is_dir():
                    ensure_table(spark, settings, table)
                written[table.name] = 0
                print(f"[bronze] {t}: nothing new in Kafka, no query", flush=True)
                continue
            queries[t] = start_ingest(spark, settings, t, max_offsets)
        for topic, query in queries.items():
            query.awaitTermination()
            rows = sum(p.numInputRows for p in query.recentProgress)
            written[bronze_table(topic).name] = rows
            print(
                f"[bronze] {topic} -> {table_path(settings, bronze_table(topic))}: {rows} "
                f"rows in {len(query.recentProgress)} batches",
                flush=True,
            )
        return written
    finally:
        for query in queries.values():  # one topic failed: stop the others before raising
            if query.isActive:
                query.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.bronze", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--start", help="data interval start (logged; see above)")
    parser.add_argument("--end", help="data interval end (logged; see above)")
    parser.add_argument(
        "--topics", default=",".join(registry.TOPICS), help="comma-separated registry topics"
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=None,
        help="cap on records per micro-batch (unset: no cap)",
    )
    args = parser.parse_args(argv)
    for name in args.topics.split(","):
        registry.topic(name)  # an unknown topic fails here, naming the registered ones
    return args


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    started = time.monotonic()
    print(f"[bronze] interval {args.start} .. {args.end}", flush=True)
    topics = args.topics.split(",")
    if nothing_to_do(settings, topics):
        # The common hour of a quiet topic set: no JVM, no session, nothing written.
        print(
            f"[bronze] nothing new in Kafka for {len(topics)} topics, no Spark session "
            f"({time.monotonic() - started:.1f}s)",
            flush=True,
        )
        return 0
    spark = get_session("lake", "bronze", settings)
    written = run(spark, settings, topics, args.max_offsets_per_trigger)
    print(f"[bronze] {sum(written.values())} rows in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
