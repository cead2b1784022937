"""The lake's Delta tables: bronze (one per topic, raw), silver (typed, validated, deduplicated),
the quarantine, gold (one module of :mod:`adlake.catalog.gold` each, collected here in
:data:`adlake.catalog.gold.MODELS`' order) and the lake's own records (quality results,
maintenance history)."""

from __future__ import annotations

from adlake.catalog import gold
from adlake.catalog.topics import TOPICS
from adlake.catalog.types import Schema, Table, lookup, schema

# Bronze keeps every topic raw, so any later job can be replayed from it.
BRONZE_SCHEMA = schema(
    "key:string?",
    "value:string?",
    "headers_json:string?",
    "topic:string",
    "partition:int",
    "offset:long",
    "kafka_timestamp:timestamp",
    "ingest_time:timestamp",
    "ingest_date:date",
)
# Where a silver or quarantine row came from in bronze: the Kafka coordinates, unique per record.
BRONZE_COORDINATES = ("topic", "partition", "offset")
_SILVER_EXTRA = (
    "topic:string",
    "partition:int",
    "offset:long",
    "kafka_timestamp:timestamp",
    "event_date:date",
)
QUARANTINE_SCHEMA = schema(
    "source_table:string",
    "reason:string",
    "raw_value:string?",
    "topic:string",
    "partition:int",
    "offset:long",
    "kafka_timestamp:timestamp",
    "ingest_date:date",
)

# The topics that get a silver table, and the time field their event_date derives from.
SILVER_TOPICS = (
    "ad_requests",
    "ad_impressions",
    "ad_callbacks",
    "page_clicks",
    "attributed_events",
    "page_surges",
)
_SILVER_TIME = {"attributed_events": "source_kafka_ts", "page_surges": "window_start"}


def silver_time_field(topic_name: str) -> str:
    return _SILVER_TIME.get(topic_name, "event_time")


def _silver(topic_name: str) -> Table:
    t = TOPICS[topic_name]
    fields = t.schema.fields + schema(*_SILVER_EXTRA).fields
    return Table(
        f"silver_{topic_name}",
        "silver",
        (f"bronze_{topic_name}",),
        partition_by=("event_date",),
        schema=Schema(fields),
        keys=t.id_fields,
        change_feed=True,
        description=f"Typed, validated, deduplicated {topic_name} by event date.",
    )


_TABLE_LIST = [
    *[
        Table(
            f"bronze_{name}",
            "bronze",
            (name,),
            partition_by=("ingest_date",),
            schema=BRONZE_SCHEMA,
            keys=BRONZE_COORDINATES,
            description=f"Raw records of topic {name} with Kafka metadata.",
        )
        for name in TOPICS
    ],
    *[_silver(name) for name in SILVER_TOPICS],
    Table(
        "quarantine",
        "quarantine",
        tuple(f"bronze_{name}" for name in SILVER_TOPICS),
        partition_by=("ingest_date",),
        schema=QUARANTINE_SCHEMA,
        keys=("source_table", *BRONZE_COORDINATES),
        description="Bronze rows that failed a validation rule, with the rule.",
    ),
    # The gold tables, each declared in its own module with its build and its business rules.
    *gold.TABLES,
    # What the quality jobs found (adlake.quality): one row per expectation per validation run,
    # rewritten as a whole per (dag_id, run_id, table, interval), so a retried task does not
    # double its rows. interval_* are null for a view (an asset-triggered run has no interval).
    Table(
        "dq_results",
        "quality",
        (),
        partition_by=("table",),
        schema=schema(
            "dag_id:string",
            "run_id:string",
            "table:string",
            "interval_start:timestamp?",
            "interval_end:timestamp?",
            "suite:string",
            "expectation:string",
            "severity:string",
            "success:boolean",
            "observed_value:string?",
            "unexpected_count:long?",
            "run_time:timestamp",
        ),
        keys=("dag_id", "run_id", "table", "interval_start", "interval_end", "expectation"),
        description="Data-quality results: one row per expectation per validation run.",
    ),
    # What table maintenance did (spark_apps.lake.maintenance): one row per table per run,
    # rewritten as a whole per (dag_id, run_id). *_after are null for a dry run.
    Table(
        "maintenance_history",
        "maintenance",
        (),
        schema=schema(
            "dag_id:string",
            "run_id:string",
            "table:string",
            "dry_run:boolean",
            "retention_hours:long",
            "live_files_before:long",
            "live_bytes_before:long",
            "disk_files_before:long",
            "disk_bytes_before:long",
            "partitions_compacted:long",
            "files_compacted:long",
            "files_removed:long",
            "bytes_removed:long",
            "live_files_after:long?",
            "live_bytes_after:long?",
            "disk_files_after:long?",
            "disk_bytes_after:long?",
            "seconds:double",
            "detail:string",
            "run_time:timestamp",
        ),
        keys=("dag_id", "run_id", "table"),
        description="Table maintenance: files and bytes before and after, per table and run.",
    ),
]
TABLES: dict[str, Table] = {t.name: t for t in _TABLE_LIST}


def table(name: str) -> Table:
    return lookup("table", TABLES, name)
