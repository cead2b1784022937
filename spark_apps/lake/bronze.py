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

    .venv/lake/bin/python -m spark_apps.lake.bronze --start 2026-11-21 --end 2026-11-22
"""

from __future__ import annotations

import argparse
import sys
import time
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
        F.col("topic"), F.col("partition"), F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.current_timestamp().alias("ingest_time"),
        F.to_date(F.current_timestamp()).alias("ingest_date"),
    )


def start_ingest(spark: SparkSession, settings: Settings, topic: str,
                 max_offsets: int | None = None) -> StreamingQuery:
    """Start the AvailableNow query of one topic (Kafka → its bronze table)."""
    table = bronze_table(topic)
    path = ensure_table(spark, settings, table)
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest")
              .option("includeHeaders", "true")
              # Retention may delete offsets the checkpoint has not read yet; that is data loss
              # upstream of us, logged by Spark, and must not wedge every later run.
              .option("failOnDataLoss", "false"))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return (transform_bronze(reader.load()).writeStream.format("delta")
            .option("checkpointLocation", str(settings.checkpoint_path(table.name)))
            .queryName(table.name)
            .trigger(availableNow=True)
            .outputMode("append")
            .start(path))


def run(spark: SparkSession, settings: Settings, topics: list[str],
        max_offsets: int | None = None) -> dict[str, int]:
    """Ingest every topic in ``topics`` (concurrently); returns rows written per table.

    A failure that a damaged checkpoint or Delta log, or a full disk, explains is raised as the
    typed error of :mod:`spark_apps.lake.errors`, naming the file and the runbook step.
    """
    from spark_apps.lake.errors import diagnosed

    tables = [bronze_table(t) for t in topics]
    with diagnosed("bronze", settings.runtime_dir,
                   [settings.checkpoint_path(t.name) for t in tables],
                   [settings.table_path(t.name) for t in tables]):
        for table in tables:
            check_sink_caught_up(spark, settings, table)
        return _run(spark, settings, topics, max_offsets)


def check_sink_caught_up(spark: SparkSession, settings: Settings, table: registry.Table) -> None:
    """Raise :class:`~spark_apps.lake.errors.DeltaLogCorrupted` if ``table``'s Delta log lacks
    batches its checkpoint committed (see :func:`spark_apps.lake.errors.sink_behind`): the one
    damage no file shows, a newest commit deleted together with its checksum."""
    from spark_apps.lake import errors
    from spark_apps.lake.tables import delta_snapshot

    query_id, committed = errors.committed_batch(settings.checkpoint_path(table.name))
    if query_id is None or committed is None:
        return
    path = settings.table_path(table.name)
    recorded = None
    if (path / "_delta_log").is_dir():
        txn = delta_snapshot(spark, str(path)).transactions().get(query_id)
        recorded = int(txn.get()) if txn.isDefined() else None
    problem = errors.sink_behind(path, query_id, committed, recorded)
    if problem:
        raise errors.DeltaLogCorrupted(
            f"Delta table {path} is damaged: {problem}. Do not write to it; follow "
            f"{errors.DELTA_LOG_STEP}", path)


def _run(spark: SparkSession, settings: Settings, topics: list[str],
         max_offsets: int | None) -> dict[str, int]:
    queries: dict[str, StreamingQuery] = {}
    try:
        for t in topics:
            queries[t] = start_ingest(spark, settings, t, max_offsets)
        written: dict[str, int] = {}
        for topic, query in queries.items():
            query.awaitTermination()
            rows = sum(p["numInputRows"] for p in query.recentProgress)
            written[bronze_table(topic).name] = rows
            print(f"[bronze] {topic} -> {table_path(settings, bronze_table(topic))}: {rows} "
                  f"rows in {len(query.recentProgress)} batches", flush=True)
        return written
    finally:
        for query in queries.values():  # one topic failed: stop the others before raising
            if query.isActive:
                query.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_apps.lake.bronze", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--start", help="data interval start (logged; see above)")
    parser.add_argument("--end", help="data interval end (logged; see above)")
    parser.add_argument("--topics", default=",".join(registry.TOPICS),
                        help="comma-separated registry topics")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None,
                        help="cap on records per micro-batch (unset: no cap)")
    args = parser.parse_args(argv)
    for name in args.topics.split(","):
        registry.topic(name)  # an unknown topic fails here, naming the registered ones
    return args


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    spark = get_session("lake", "bronze", settings)
    started = time.monotonic()
    print(f"[bronze] interval {args.start} .. {args.end}", flush=True)
    written = run(spark, settings, args.topics.split(","), args.max_offsets_per_trigger)
    print(f"[bronze] {sum(written.values())} rows in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
