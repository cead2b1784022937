"""The registry: every Kafka topic, table and app of Adlake, declared once.

DAGs, Spark apps, the event generator, topic creation and the tests read this module; nothing else
names a topic, a table or a path. Adding a topic or a table is one entry here; a gold table is
one module of :mod:`adlake.gold` (its declaration, build and business rules), whose ``TABLE``
this module collects into :data:`TABLES`, in :data:`adlake.gold.MODELS`' order.

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

from typing import Protocol

from adlake import gold
from adlake.declarations import (
    AGGREGATE_KINDS as AGGREGATE_KINDS,
)
from adlake.declarations import (
    APP_ACTIONS as APP_ACTIONS,
)
from adlake.declarations import (
    ATTRIBUTED_EVENT_IDS,
    SURGE_THRESHOLD,
    lookup,
    schema,
)
from adlake.declarations import (
    CALLBACK_EVENT_TYPES as CALLBACK_EVENT_TYPES,
)
from adlake.declarations import (
    CLICK as CLICK,
)
from adlake.declarations import (
    COLUMN_ENUMERATIONS as COLUMN_ENUMERATIONS,
)
from adlake.declarations import (
    CONVERSION as CONVERSION,
)
from adlake.declarations import (  # re-exported: registry.Table, registry.CLICK...
    FIELD_TYPES as FIELD_TYPES,
)
from adlake.declarations import (
    RECORD_TYPES as RECORD_TYPES,
)
from adlake.declarations import (
    SCHEDULES as SCHEDULES,
)
from adlake.declarations import (
    SURGE_WINDOW_S as SURGE_WINDOW_S,
)
from adlake.declarations import (
    TRIGGERS as TRIGGERS,
)
from adlake.declarations import (
    Aggregate as Aggregate,
)
from adlake.declarations import (
    App as App,
)
from adlake.declarations import (
    Field as Field,
)
from adlake.declarations import (
    Job as Job,
)
from adlake.declarations import (
    Knob as Knob,
)
from adlake.declarations import (
    KnobRule as KnobRule,
)
from adlake.declarations import (
    Schema as Schema,
)
from adlake.declarations import (
    StateClose as StateClose,
)
from adlake.declarations import (
    Table as Table,
)
from adlake.declarations import (
    Topic as Topic,
)
from adlake.declarations import (
    View as View,
)

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

# The trigger form of table maintenance (spark_apps.lake.maintenance); a scheduled run takes
# the defaults.
MAINTENANCE_PARAMS = (
    Knob(
        "dry_run",
        "boolean",
        False,
        "list what would be compacted and removed, change nothing",
    ),
    Knob(
        "retention_hours",
        "integer",
        None,
        "VACUUM keeps files removed within this many hours; empty: the configuration's "
        "(ADLAKE_LAKE_RETENTION_HOURS). Less than any reader needs is refused",
        minimum=0,
        # ten years, the most ADLAKE_LAKE_RETENTION_HOURS takes
        maximum=10 * 365 * 24,
    ),
    Knob("tables", "string", "all", "comma-separated tables, or all"),
)

# The partitions of the apps' input and output topics unless ADLAKE_TOPIC_PARTITIONS says
# otherwise (:func:`partitions`). Real-Time Mode runs one task per source partition and one per
# shuffle partition at the same time (see config: local[8], 4 shuffle partitions).
_INPUT_PARTITIONS = 4

_TOPIC_LIST = [
    Topic(
        "ad_requests",
        _INPUT_PARTITIONS,
        "request_id",
        schema(
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
        schema(
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
        schema(
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
        schema(
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
        schema(
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
        id_fields=ATTRIBUTED_EVENT_IDS,
        description="Output of the attribution app.",
    ),
    Topic(
        "page_surges",
        _INPUT_PARTITIONS,
        "page_id",
        schema(
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
DLQ_SCHEMA = schema(
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
# The apps' input and output topics: their partition count is a deployment setting
# (ADLAKE_TOPIC_PARTITIONS); the DLQs keep theirs.
SCALED_TOPICS = frozenset(t.name for t in _TOPIC_LIST if t.partitions == _INPUT_PARTITIONS)


class PartitionSettings(Protocol):
    """What :func:`partitions` reads: the Settings, or the generator's config."""

    @property
    def topic_partitions(self) -> int | None: ...


def partitions(topic: Topic | str, settings: PartitionSettings | None = None) -> int:
    """The partitions ``topic`` has in this deployment, the one source of truth for topic
    creation, the generator's partitioner and Real-Time Mode's task slots:
    ``settings.topic_partitions`` (ADLAKE_TOPIC_PARTITIONS) for the apps' input and output
    topics when it is set, else the registry's count.

    >>> partitions("page_clicks"), partitions("page_clicks_dlq")
    (4, 1)
    >>> from adlake.config import load_settings
    >>> two = load_settings({"ADLAKE_TOPIC_PARTITIONS": "2"})
    >>> partitions("page_clicks", two), partitions(TOPICS["page_clicks_dlq"], two)
    (2, 1)
    """
    t = topic if isinstance(topic, Topic) else lookup("topic", TOPICS, topic)
    configured = settings.topic_partitions if settings is not None else None
    return configured if configured is not None and t.name in SCALED_TOPICS else t.partitions


def input_partitions(app: App, settings: PartitionSettings | None = None) -> int:
    """The partitions of every input topic of ``app`` (:func:`partitions`): the source tasks
    of a Real-Time Mode query.

    >>> input_partitions(APPS["attribution"]), input_partitions(APPS["click_surge"])
    (12, 4)
    """
    return sum(partitions(t, settings) for t in app.inputs)


def ttl_refusal(window: float, lateness: float, ttl: float, unit: str = "s") -> str | None:
    """Attribution's key lifetime against its close: a key's state must outlive its close (the
    watermark passing its time + window, ``lateness`` behind the newest input) and its
    tombstone's one more window, or TTL would drop keys still open. One rule for every place
    that checks it, in any unit (the registry's seconds, the processor's milliseconds).

    >>> ttl_refusal(300, 30, 3600) is None
    True
    >>> ttl_refusal(300, 30, 0)
    'ttl_s=0 must exceed 2 * window_s + lateness_s (630): it is a safety net, not the close'
    """
    if ttl > 2 * window + lateness:
        return None
    return (
        f"ttl_{unit}={ttl:.15g} must exceed 2 * window_{unit} + lateness_{unit} "
        f"({2 * window + lateness:.15g}): it is a safety net, not the close"
    )


_ATTRIBUTION_RULES = (
    KnobRule(
        "ttl_s > 2 * window_s + lateness_s",
        lambda trigger, k: ttl_refusal(k["window_s"], k["lateness_s"], k["ttl_s"]),  # type: ignore[arg-type]
    ),
    KnobRule(
        "engine python runs in micro-batches only",
        lambda trigger, k: (
            "engine python runs in micro-batches only (Spark rejects Python transformWithState "
            "in Real-Time Mode): use engine jvm or trigger processing_time"
            if k["engine"] == "python" and trigger == "realtime"
            else None
        ),
    ),
)


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
                    # a day: a request's partners arrive within seconds to minutes of it
                    maximum=86_400,
                ),
                Knob(
                    "skew_s",
                    "number",
                    10.0,
                    "how far an item may precede its partner and still match",
                    minimum=0,
                    # an hour of clock skew between the services that log the events
                    maximum=3_600,
                ),
                Knob(
                    "lateness_s",
                    "number",
                    30.0,
                    "watermark delay on the Kafka timestamp",
                    minimum=0,
                    # a day: everything arriving later than that is an orphan anyway
                    maximum=86_400,
                ),
                Knob(
                    "ttl_s",
                    "number",
                    3600.0,
                    "lifetime bound of a key's state (safety net; more than 2 windows + lateness)",
                    minimum=0,
                    # a week: more than 2 windows + lateness at their maximums (3 days)
                    maximum=7 * 86_400,
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
            # transformWithState: update output mode in Real-Time Mode, append in micro-batch;
            # Spark resumes neither as the other, nor one engine's operator as the other's.
            same_checkpoint_switches=(),
            checkpoint_knobs=("engine",),
            # a request's window closing, and what was still waiting then
            timer_driven=("request_closed", "orphan_impression", "orphan_callback"),
            rules=_ATTRIBUTION_RULES,
            state=StateClose(
                window="window_s",
                delay="lateness_s",
                holds="requests and items waiting for their partners, and tombstones of closed "
                "keys (kept one more window, {window:g} s, for stragglers). A request closes "
                "(request_closed, orphans) when the watermark (the newest Kafka timestamp read "
                "- {delay:g} s) passes its event time + {window:g} s. Requests still open have "
                "event times after {open_after}",
                closes_with="input with later timestamps (in Real-Time Mode, closes come at the "
                "first checkpoint boundary after that)",
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
                    SURGE_THRESHOLD,
                    "a window surges when its click count is greater than this",
                    minimum=0,
                    # ten million clicks on one page in one 5-second window: far above what
                    # the platform ingests, and well inside the long count it is compared with
                    maximum=10_000_000,
                ),
            ),
            # update output mode and one aggregation in both modes: open windows keep their
            # counts across a switch
            same_checkpoint_switches=(
                ("realtime", "processing_time"),
                ("processing_time", "realtime"),
            ),
            state=StateClose(
                window=SURGE_WINDOW_S,
                # the query's watermark: 5 s behind the newest click's event time
                delay=5,
                holds="open {window:g}-second windows (page, window start); a window closes "
                "when the watermark (the newest click's event time - {delay:g} s) passes its "
                "end. Open windows started at or after {open_after}",
                closes_with="clicks with later event times",
            ),
        ),
    ]
}

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

# The gold tables the hourly chain rebuilds: those of hour grain (the others are rebuilt daily).
GOLD_HOURLY: tuple[str, ...] = tuple(n for n in gold.NAMES if gold.model(n).GRAIN == gold.HOUR)


def _sources(tables: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(src for t in tables for src in TABLES[t].sources))


JOBS: dict[str, Job] = {
    j.name: j
    for j in [
        # Bronze and silver catch up whatever is new, in both chains (a run with nothing new
        # starts no query).
        Job(
            "bronze",
            "spark_apps.lake.bronze",
            "lake",
            tuple(TOPICS),
            tuple(t.name for t in TABLES.values() if t.layer == "bronze"),
            ("hourly", "daily"),
            description="Every topic → its bronze table, raw, with Kafka metadata (AvailableNow from "
            "the Kafka checkpoint: bronze catches up; the interval is logged only).",
        ),
        Job(
            "silver",
            "spark_apps.lake.silver",
            "lake",
            tuple(f"bronze_{name}" for name in SILVER_TOPICS),
            (*(f"silver_{name}" for name in SILVER_TOPICS), "quarantine"),
            ("hourly", "daily"),
            description="Bronze → typed, validated, deduplicated silver tables; failures to the "
            "quarantine table with the reason.",
        ),
        # One job, one Spark driver for every gold table of a chain: a driver's start costs more
        # than most tables' rebuild on this scale; each table is still its own Asset. The hourly
        # chain rebuilds the hour tables' hour, the daily one every table's day, once it is final.
        Job(
            "gold",
            "spark_apps.lake.gold",
            "lake",
            _sources(GOLD_HOURLY),
            GOLD_HOURLY,
            "hourly",
            args=("--tables", ",".join(GOLD_HOURLY)),
            description="Silver → the hour tables (" + ", ".join(GOLD_HOURLY) + "): the "
            "interval's hour is rebuilt from silver (read with the margin its rows need around "
            "it) and replaced in one commit.",
        ),
        Job(
            "gold_daily",
            "spark_apps.lake.gold",
            "lake",
            _sources(gold.NAMES),
            gold.NAMES,
            "daily",
            args=("--tables", ",".join(gold.NAMES)),
            description="Silver → every gold table (" + ", ".join(gold.NAMES) + "): the final "
            "day is rebuilt from silver, late events included, and replaced in one commit.",
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
        Job(
            "maintenance",
            "spark_apps.lake.maintenance",
            "lake",
            (),
            ("maintenance_history",),
            "maintenance",
            retries=1,
            params=MAINTENANCE_PARAMS,
            description="Every Delta table: OPTIMIZE where a partition holds more than one file, "
            "VACUUM of the files removed longer ago than the retention (refused, with the "
            "reader named, when a streaming checkpoint or a view still needs them), and a row "
            "per table in `maintenance_history`.",
        ),
        # Quality: one gate job per chain validates its gold tables in one Spark driver (in the
        # chain, after gold, over the run's interval; each table still passes or fails as its
        # own task, `quality_<table>`), and one per view (when the view is updated). An `error`
        # expectation that fails fails the table's task, so nothing downstream of the table
        # runs; one retry, for a transient Spark failure only (a data failure fails again).
        *[
            Job(
                name,
                "spark_apps.lake.quality",
                "lake",
                tables,
                ("dq_results",),
                schedule,
                args=("--tables", ",".join(tables)),
                retries=1,
                gate=True,
                description=f"Great Expectations suites of {', '.join(tables)} over the "
                f"interval's slice of each, in one Spark driver; results to `dq_results` and "
                f"Data Docs, and each table's verdict to its `quality_<table>` task.",
            )
            for name, tables, schedule in (
                ("quality_gold", GOLD_HOURLY, "hourly"),
                ("quality_gold_daily", gold.NAMES, "daily"),
            )
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


def topic(name: str) -> Topic:
    return lookup("topic", TOPICS, name)


def app(name: str) -> App:
    return lookup("app", APPS, name)


def table(name: str) -> Table:
    return lookup("table", TABLES, name)


def view(name: str) -> View:
    return lookup("view", VIEWS, name)


def job(name: str) -> Job:
    return lookup("job", JOBS, name)
