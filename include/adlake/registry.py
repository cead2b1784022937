"""The registry: every Kafka topic, table and app of Adlake, declared once.

DAGs, Spark apps, the event generator, topic creation and the tests read this module; nothing else
names a topic, a table or a path. Adding a topic or a table is one entry here.

Schemas are declared in a neutral form (:class:`Field` lists) so this module imports without
PySpark (DAG files read it at parse time); :meth:`Schema.spark` derives the one ``StructType``
for Spark code, lazily.

>>> TOPICS["ad_impressions"].key_field
'request_id'
>>> [f.name for f in TOPICS["page_clicks"].schema.fields]
['click_id', 'page_id', 'event_time', 'user_id']
>>> topic("nope")
Traceback (most recent call last):
...
KeyError: "unknown topic 'nope'; registered topics: ad_requests, ad_impressions, ad_callbacks, \
page_clicks, attributed_events, page_surges, ad_events_dlq, page_clicks_dlq"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# JSON type of each neutral field type, as the generator writes and the validators check it.
# Timestamps travel as ISO-8601 UTC strings with milliseconds, e.g. "2026-11-21T23:40:44.123Z".
FIELD_TYPES = ("string", "timestamp", "long", "int", "double", "boolean", "date")

# Callback event types; gold counts each one (clicks, first_quartiles, ...) and the funnel's
# stages are CLICK and CONVERSION.
CLICK, CONVERSION = "click", "conversion"
CALLBACK_EVENT_TYPES = (
    CLICK,
    "first_quartile",
    "midpoint",
    "third_quartile",
    "complete",
    CONVERSION,
)
# The record types of attributed_events (the attribution app's output; see
# spark_apps.common.attribution.contract, which names each one).
RECORD_TYPES = (
    "attributed_impression",
    "attributed_callback",
    "request_closed",
    "orphan_impression",
    "orphan_callback",
)
# A column of this name holds one of these values in every table that has it.
COLUMN_ENUMERATIONS: dict[str, tuple[str, ...]] = {
    "event_type": CALLBACK_EVENT_TYPES,
    "record_type": RECORD_TYPES,
}
# click_surge's tumbling event-time window, in seconds (surge_history's windows are this long).
SURGE_WINDOW_S = 5


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool = True

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(f"field {self.name!r}: type {self.type!r} not in {FIELD_TYPES}")


@dataclass(frozen=True)
class Schema:
    fields: tuple[Field, ...]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def required(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r}; fields are {', '.join(self.names)}")

    def spark(self) -> StructType:
        """The Spark ``StructType`` of this schema (all fields nullable: validation, not the
        JSON parser, decides what a missing field means)."""
        from pyspark.sql import types as T

        spark_types = {
            "string": T.StringType(),
            "timestamp": T.TimestampType(),
            "long": T.LongType(),
            "int": T.IntegerType(),
            "double": T.DoubleType(),
            "boolean": T.BooleanType(),
            "date": T.DateType(),
        }
        return T.StructType([T.StructField(f.name, spark_types[f.type], True) for f in self.fields])


def _schema(*spec: str) -> Schema:
    """``"name:type"`` or ``"name:type?"`` (optional) for each field."""
    fields = []
    for item in spec:
        name, typ = item.split(":")
        fields.append(Field(name, typ.rstrip("?"), required=not typ.endswith("?")))
    return Schema(tuple(fields))


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int
    key_field: str
    schema: Schema
    # The fields that identify one record, so duplicates can be recognised downstream.
    id_fields: tuple[str, ...]
    description: str = ""
    retention_ms: int = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Knob:
    """A setting of a streaming app that a user may change when starting it: a ``--name`` flag
    of the app (dashes for underscores) and a typed field of the app's Airflow trigger form."""

    name: str
    type: str  # "integer", "number" or "string" (JSON Schema types, as Airflow Params use)
    default: int | float | str
    description: str
    minimum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


# How a view DAG refreshes its view (a field of its trigger form; asset-triggered runs take the
# default): see spark_apps.lake.views.
VIEW_MODE = Knob(
    "mode",
    "string",
    "incremental",
    "incremental: apply the source's change feed; full-refresh: recompute the view "
    "(after ChangeFeedUnavailable, SourceRewound or ViewInconsistent); verify: "
    "compare with a recomputation, change nothing",
    choices=("incremental", "full-refresh", "verify"),
)

TRIGGERS = ("realtime", "processing_time")
# What a user (or the app's DAG) can ask of a streaming app; see adlake.apps.
APP_ACTIONS = ("start", "stop", "restart", "status")


@dataclass(frozen=True)
class App:
    name: str
    runtime: str  # "ops" or "lake"
    module: str  # spark-submit entry point, "package.module" with a main(argv)
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dlq: str | None = None
    description: str = ""
    default_trigger: str = "processing_time"
    knobs: tuple[Knob, ...] = ()

    def knob(self, name: str) -> Knob:
        return _lookup("knob", {k.name: k for k in self.knobs}, name)


@dataclass(frozen=True)
class Table:
    name: str
    layer: str  # bronze, silver, gold, quarantine, quality
    sources: tuple[str, ...]  # the topics or tables it is built from
    partition_by: tuple[str, ...] = field(default=())
    description: str = ""
    schema: Schema | None = None
    # The columns that identify one row (silver: the event id; gold: the grouping keys).
    keys: tuple[str, ...] = ()
    # Silver and gold sources of views record their changes (Delta Change Data Feed).
    change_feed: bool = False


AGGREGATE_KINDS = ("count", "sum", "min", "max", "avg", "approx_distinct")


@dataclass(frozen=True)
class Aggregate:
    """One output column of a view: ``kind`` over source ``column`` (``count`` takes none)."""

    name: str
    kind: str
    column: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in AGGREGATE_KINDS:
            raise ValueError(
                f"aggregate {self.name!r}: kind {self.kind!r} not in {AGGREGATE_KINDS}"
            )
        if (self.kind == "count") != (self.column is None):
            raise ValueError(f"aggregate {self.name!r}: count takes no column, the others one")


@dataclass(frozen=True)
class View:
    """An incremental materialized view: ``source`` table grouped by ``keys``; ``key_exprs``
    may derive a key from source columns (a Spark SQL expression per key name)."""

    name: str
    source: str
    keys: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]
    key_exprs: tuple[tuple[str, str], ...] = ()
    description: str = ""

    @property
    def time_key(self) -> str:
        """The key changes arrive by: the last one, a date or an hour. The view's table is laid
        out in ranges of it, so an hour's events touch the files of their own dates only."""
        return self.keys[-1]


# Input topics get 4 partitions: Real-Time Mode needs one task slot per source partition plus
# one per shuffle partition at the same time (see config: local[8], 4 shuffle partitions).
_INPUT_PARTITIONS = 4

_TOPIC_LIST = [
    Topic(
        "ad_requests",
        _INPUT_PARTITIONS,
        "request_id",
        _schema(
            "request_id:string",
            "event_time:timestamp",
            "device_id:string",
            "household_id:string",
            "content_id:string",
            "slot_id:string",
            "geo:string",
            "floor_price:double",
            "bid_count:int",
        ),
        id_fields=("request_id",),
        description="An ad slot offered to the auction.",
    ),
    Topic(
        "ad_impressions",
        _INPUT_PARTITIONS,
        "request_id",
        _schema(
            "impression_id:string",
            "request_id:string",
            "campaign_id:string",
            "creative_id:string",
            "event_time:timestamp",
            "device_id:string",
            "win_price:double",
        ),
        id_fields=("impression_id",),
        description="An ad shown in answer to a request.",
    ),
    Topic(
        "ad_callbacks",
        _INPUT_PARTITIONS,
        "request_id",
        _schema(
            "callback_id:string",
            "impression_id:string",
            "request_id:string",
            "event_type:string",
            "event_time:timestamp",
            "value:double?",
        ),
        id_fields=("callback_id",),
        description="A player or advertiser beacon: click, quartiles, complete, conversion.",
    ),
    Topic(
        "page_clicks",
        _INPUT_PARTITIONS,
        "page_id",
        _schema(
            "click_id:string",
            "page_id:string",
            "event_time:timestamp",
            "user_id:string",
        ),
        id_fields=("click_id",),
        description="A click on a page.",
    ),
    Topic(
        "attributed_events",
        _INPUT_PARTITIONS,
        "request_id",
        _schema(
            "record_type:string",
            "request_id:string",
            "impression_id:string?",
            "callback_id:string?",
            "campaign_id:string?",
            "creative_id:string?",
            "event_type:string?",
            "value:double?",
            "request_time:timestamp?",
            "impression_time:timestamp?",
            "callback_time:timestamp?",
            "impressions:long?",
            "callbacks:long?",
            "filled:boolean?",
            "source_kafka_ts:timestamp",
        ),
        id_fields=("record_type", "request_id", "impression_id", "callback_id"),
        description="Output of the attribution app.",
    ),
    Topic(
        "page_surges",
        _INPUT_PARTITIONS,
        "page_id",
        _schema(
            "page_id:string",
            "window_start:timestamp",
            "window_end:timestamp",
            "click_count:long",
            "max_event_time:timestamp",
            "source_kafka_ts:timestamp",
            # In update mode a window is re-emitted as its count grows: each count is its own record.
        ),
        id_fields=("page_id", "window_start", "click_count"),
        description="Output of click-surge detection, key page_id|window_start.",
    ),
]

# Dead-letter topics: one record per input record that could not be parsed or validated.
DLQ_SCHEMA = _schema(
    "raw_value:string?",
    "reason:string",
    "source_topic:string",
    "source_partition:int",
    "source_offset:long",
    "source_kafka_ts:timestamp",
)
_TOPIC_LIST += [
    Topic(
        "ad_events_dlq",
        1,
        "source_topic",
        DLQ_SCHEMA,
        id_fields=("source_topic", "source_partition", "source_offset"),
        description="Malformed ad requests, impressions and callbacks, with the reason.",
    ),
    Topic(
        "page_clicks_dlq",
        1,
        "source_topic",
        DLQ_SCHEMA,
        id_fields=("source_topic", "source_partition", "source_offset"),
        description="Malformed page clicks, with the reason.",
    ),
]

TOPICS: dict[str, Topic] = {t.name: t for t in _TOPIC_LIST}

APPS: dict[str, App] = {
    a.name: a
    for a in [
        App(
            "attribution",
            "ops",
            "spark_apps.ops.attribution",
            inputs=("ad_requests", "ad_impressions", "ad_callbacks"),
            outputs=("attributed_events",),
            dlq="ad_events_dlq",
            description="Correlates ad requests, impressions and callbacks by request_id "
            "(transformWithState, event-time timers) and writes attributed_events.",
            default_trigger="processing_time",
            knobs=(
                Knob(
                    "window_s",
                    "number",
                    300.0,
                    "attribution window: partners match within it, a request closes at its end",
                    minimum=0.001,
                ),
                Knob(
                    "skew_s",
                    "number",
                    10.0,
                    "how far an item may precede its partner and still match",
                    minimum=0,
                ),
                Knob(
                    "lateness_s",
                    "number",
                    30.0,
                    "watermark delay on the Kafka timestamp",
                    minimum=0,
                ),
                Knob(
                    "ttl_s",
                    "number",
                    3600.0,
                    "lifetime bound of a key's state (safety net; more than 2 windows + lateness)",
                    minimum=0,
                ),
                Knob(
                    "engine",
                    "string",
                    "jvm",
                    "jvm: the Java port of the rules (micro-batch or "
                    "Real-Time Mode); python: the Python processor (micro-batch only); their "
                    "checkpoints are not interchangeable",
                    choices=("jvm", "python"),
                ),
            ),
        ),
        App(
            "click_surge",
            "ops",
            "spark_apps.ops.click_surge",
            inputs=("page_clicks",),
            outputs=("page_surges",),
            dlq="page_clicks_dlq",
            description="Pages with more clicks than a threshold in a 5-second event-time window, "
            "in Real-Time Mode; writes page_surges.",
            default_trigger="realtime",
            knobs=(
                Knob(
                    "threshold",
                    "integer",
                    5000,
                    "a window surges when its click count is greater than this",
                    minimum=0,
                ),
            ),
        ),
    ]
}

# Bronze keeps every topic raw, so any later job can be replayed from it.
BRONZE_SCHEMA = _schema(
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
QUARANTINE_SCHEMA = _schema(
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
    fields = t.schema.fields + _schema(*_SILVER_EXTRA).fields
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


_ATTRIBUTION_INPUTS = ("silver_ad_requests", "silver_ad_impressions", "silver_ad_callbacks")

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
    Table(
        "campaign_delivery",
        "gold",
        ("silver_ad_impressions", "silver_ad_callbacks"),
        partition_by=("event_date",),
        schema=_schema(
            "campaign_id:string",
            "creative_id:string",
            "event_date:date",
            "hour:int",
            "impressions:long",
            "clicks:long",
            "first_quartiles:long",
            "midpoints:long",
            "third_quartiles:long",
            "completes:long",
            "conversions:long",
            "click_through_rate:double?",
            "completion_rate:double?",
        ),
        keys=("campaign_id", "creative_id", "event_date", "hour"),
        change_feed=True,
        description="Delivery per campaign, creative and hour.",
    ),
    Table(
        "attribution_funnel",
        "gold",
        _ATTRIBUTION_INPUTS,
        partition_by=("event_date",),
        schema=_schema(
            "campaign_id:string",
            "event_date:date",
            "requests:long?",
            "filled_requests:long",
            "impressions:long",
            "clicks:long",
            "conversions:long",
            "fill_rate:double?",
        ),
        keys=("campaign_id", "event_date"),
        description="Requests → fills → impressions → clicks → conversions per campaign and "
        "day; campaign_id '*' is the day's total (requests exist only there).",
    ),
    Table(
        "page_traffic",
        "gold",
        ("silver_page_clicks",),
        partition_by=("event_date",),
        schema=_schema(
            "page_id:string",
            "event_date:date",
            "minute:timestamp",
            "clicks:long",
            "distinct_users:long",
        ),
        keys=("page_id", "minute"),
        description="Clicks and distinct users per page and minute.",
    ),
    Table(
        "surge_history",
        "gold",
        ("silver_page_surges",),
        partition_by=("event_date",),
        schema=_schema(
            "page_id:string",
            "event_date:date",
            "window_start:timestamp",
            "window_end:timestamp",
            "click_count:long",
        ),
        keys=("page_id", "window_start"),
        description="One row per page and surging window, with the highest count reported.",
    ),
    Table(
        "attribution_reconciliation",
        "gold",
        ("silver_attributed_events", *_ATTRIBUTION_INPUTS),
        partition_by=("event_date",),
        schema=_schema(
            "event_date:date",
            "record_type:string",
            "matched:long",
            "missing_in_realtime:long",
            "extra_in_realtime:long",
        ),
        keys=("event_date", "record_type"),
        description="Batch attribution over silver vs the real-time attributed_events.",
    ),
    # What the quality jobs found (adlake.quality): one row per expectation per validation run,
    # rewritten as a whole per (dag_id, run_id, table, interval), so a retried task does not
    # double its rows. interval_* are null for a view (an asset-triggered run has no interval).
    Table(
        "dq_results",
        "quality",
        (),
        partition_by=("table",),
        schema=_schema(
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
]
TABLES: dict[str, Table] = {t.name: t for t in _TABLE_LIST}

VIEWS: dict[str, View] = {
    v.name: v
    for v in [
        View(
            "campaign_daily_totals",
            "silver_ad_impressions",
            ("campaign_id", "event_date"),
            (
                Aggregate("impressions", "count"),
                Aggregate("spend", "sum", "win_price"),
                Aggregate("min_price", "min", "win_price"),
                Aggregate("max_price", "max", "win_price"),
                Aggregate("avg_price", "avg", "win_price"),
                Aggregate("devices", "approx_distinct", "device_id"),
            ),
            description="Impressions, spend and reach per campaign and day.",
        ),
        View(
            "page_clicks_hourly",
            "silver_page_clicks",
            ("page_id", "hour"),
            (
                Aggregate("clicks", "count"),
                Aggregate("users", "approx_distinct", "user_id"),
                Aggregate("first_click", "min", "event_time"),
                Aggregate("last_click", "max", "event_time"),
            ),
            key_exprs=(("hour", "date_trunc('hour', event_time)"),),
            description="Clicks and distinct users per page and hour.",
        ),
        View(
            "household_reach_by_geo",
            "silver_ad_requests",
            ("geo", "event_date"),
            (
                Aggregate("requests", "count"),
                Aggregate("households", "approx_distinct", "household_id"),
                Aggregate("floor_total", "sum", "floor_price"),
                Aggregate("avg_bids", "avg", "bid_count"),
            ),
            description="Requests and household reach per geo and day.",
        ),
    ]
}
# -- scheduled jobs ------------------------------------------------------------------------------

SCHEDULES = ("hourly", "on_update")


@dataclass(frozen=True)
class Job:
    """One scheduled Spark job: ``module`` (a ``main(argv)`` entry point) run with ``args`` by
    spark-submit on ``runtime``. ``reads`` and ``writes`` name tables (topics, for bronze's
    reads); the DAG factory turns them into task dependencies and Airflow Assets.

    ``hourly`` jobs make the lake chain: each takes its data interval as ``--start/--end`` and
    writes it idempotently, so a rerun or an Airflow backfill gives the same tables.
    ``on_update`` jobs run when a table they read is updated; they catch up to its latest state
    (an asset-triggered run has no data interval) and take none.
    """

    name: str
    module: str
    runtime: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    schedule: str
    args: tuple[str, ...] = ()
    description: str = ""
    # Every job writes idempotently (partition replace, insert-if-absent MERGE, a view's
    # versioned MERGE), so a retried attempt is safe.
    retries: int = 2
    # A quality gate validates the tables it reads (spark_apps.lake.quality): it runs right after
    # their writer, and what depends on them waits for it (its `error` expectations passing).
    gate: bool = False
    # Fields of the DAG's trigger form, each passed to the job as its flag (a run the form did
    # not start, e.g. asset-triggered, takes the defaults). Only for a job that owns its DAG.
    params: tuple[Knob, ...] = ()

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"job {self.name!r}: schedule {self.schedule!r} not in {SCHEDULES}")

    @property
    def takes_interval(self) -> bool:
        return self.schedule == "hourly"


_GOLD = [t for t in TABLES.values() if t.layer == "gold"]


JOBS: dict[str, Job] = {
    j.name: j
    for j in [
        Job(
            "bronze",
            "spark_apps.lake.bronze",
            "lake",
            tuple(TOPICS),
            tuple(t.name for t in TABLES.values() if t.layer == "bronze"),
            "hourly",
            description="Every topic → its bronze table, raw, with Kafka metadata (AvailableNow from "
            "the Kafka checkpoint: bronze catches up; the interval is logged only).",
        ),
        Job(
            "silver",
            "spark_apps.lake.silver",
            "lake",
            tuple(f"bronze_{name}" for name in SILVER_TOPICS),
            (*(f"silver_{name}" for name in SILVER_TOPICS), "quarantine"),
            "hourly",
            description="Bronze → typed, validated, deduplicated silver tables; failures to the "
            "quarantine table with the reason.",
        ),
        # One job, one Spark driver for every gold table: a driver's start costs more than most
        # tables' rebuild on this scale; each table is still its own Asset.
        Job(
            "gold",
            "spark_apps.lake.gold",
            "lake",
            tuple(dict.fromkeys(src for t in _GOLD for src in t.sources)),
            tuple(t.name for t in _GOLD),
            "hourly",
            description="Silver → the gold tables (" + ", ".join(t.name for t in _GOLD) + "): "
            "every day the interval touches is rebuilt from silver (read with the "
            "margin its rows need around it) and replaced in one commit.",
        ),
        *[
            Job(
                f"view_{v.name}",
                "spark_apps.lake.views",
                "lake",
                (v.source,),
                (v.name,),
                "on_update",
                args=("--view", v.name),
                params=(VIEW_MODE,),
                description=f"Incremental refresh of the view `{v.name}` (MERGE of the change feed of "
                f"`{v.source}`): {v.description}",
            )
            for v in VIEWS.values()
        ],
        # Quality: one job per gold table (in the hourly chain, after gold, over the run's interval)
        # and per view (when the view is updated). An `error` expectation that fails fails the job,
        # so nothing downstream of the table runs; one retry, for a transient Spark failure only (a
        # data failure fails again).
        *[
            Job(
                f"quality_{t.name}",
                "spark_apps.lake.quality",
                "lake",
                (t.name,),
                ("dq_results",),
                "hourly",
                args=("--table", t.name),
                retries=1,
                gate=True,
                description=f"Great Expectations suite `{t.name}` over the event dates the interval "
                f"touches; results to `dq_results` and Data Docs.",
            )
            for t in _GOLD
        ],
        *[
            Job(
                f"quality_{v.name}",
                "spark_apps.lake.quality",
                "lake",
                (v.name,),
                ("dq_results",),
                "on_update",
                args=("--table", v.name),
                retries=1,
                gate=True,
                description=f"Great Expectations suite `{v.name}` over the whole view, its count "
                f"checked against `{v.source}` at the version the view reflects; results "
                f"to `dq_results` and Data Docs.",
            )
            for v in VIEWS.values()
        ],
    ]
}


def _lookup(kind: str, mapping: dict, name: str):
    try:
        return mapping[name]
    except KeyError:
        raise KeyError(
            f"unknown {kind} {name!r}; registered {kind}s: {', '.join(mapping)}"
        ) from None


def topic(name: str) -> Topic:
    return _lookup("topic", TOPICS, name)


def app(name: str) -> App:
    return _lookup("app", APPS, name)


def table(name: str) -> Table:
    return _lookup("table", TABLES, name)


def view(name: str) -> View:
    return _lookup("view", VIEWS, name)


def job(name: str) -> Job:
    return _lookup("job", JOBS, name)
