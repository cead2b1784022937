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
FIELD_TYPES = ("string", "timestamp", "long", "int", "double", "boolean")

CALLBACK_EVENT_TYPES = (
    "click", "first_quartile", "midpoint", "third_quartile", "complete", "conversion",
)


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
            "string": T.StringType(), "timestamp": T.TimestampType(), "long": T.LongType(),
            "int": T.IntegerType(), "double": T.DoubleType(), "boolean": T.BooleanType(),
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
class App:
    name: str
    runtime: str  # "ops" or "lake"
    module: str  # spark-submit entry point, "package.module" with a main(argv)
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dlq: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Table:
    name: str
    layer: str  # bronze, silver, gold, quarantine, view
    source: str  # a topic or another table
    partition_by: tuple[str, ...] = field(default=())
    description: str = ""


# Input topics get 4 partitions: Real-Time Mode needs one task slot per source partition plus
# one per shuffle partition at the same time (see config: local[8], 4 shuffle partitions).
_INPUT_PARTITIONS = 4

_TOPIC_LIST = [
    Topic("ad_requests", _INPUT_PARTITIONS, "request_id", _schema(
        "request_id:string", "event_time:timestamp", "device_id:string", "household_id:string",
        "content_id:string", "slot_id:string", "geo:string", "floor_price:double",
        "bid_count:int",
    ), id_fields=("request_id",), description="An ad slot offered to the auction."),
    Topic("ad_impressions", _INPUT_PARTITIONS, "request_id", _schema(
        "impression_id:string", "request_id:string", "campaign_id:string", "creative_id:string",
        "event_time:timestamp", "device_id:string", "win_price:double",
    ), id_fields=("impression_id",), description="An ad shown in answer to a request."),
    Topic("ad_callbacks", _INPUT_PARTITIONS, "request_id", _schema(
        "callback_id:string", "impression_id:string", "request_id:string", "event_type:string",
        "event_time:timestamp", "value:double?",
    ), id_fields=("callback_id",),
        description="A player or advertiser beacon: click, quartiles, complete, conversion."),
    Topic("page_clicks", _INPUT_PARTITIONS, "page_id", _schema(
        "click_id:string", "page_id:string", "event_time:timestamp", "user_id:string",
    ), id_fields=("click_id",), description="A click on a page."),
    Topic("attributed_events", _INPUT_PARTITIONS, "request_id", _schema(
        "record_type:string", "request_id:string", "impression_id:string?",
        "callback_id:string?", "campaign_id:string?", "creative_id:string?",
        "event_type:string?", "value:double?", "request_time:timestamp?",
        "impression_time:timestamp?", "callback_time:timestamp?", "impressions:long?",
        "callbacks:long?", "filled:boolean?", "source_kafka_ts:timestamp",
    ), id_fields=("record_type", "request_id", "impression_id", "callback_id"), description="Output of the attribution app."),
    Topic("page_surges", _INPUT_PARTITIONS, "page_id", _schema(
        "page_id:string", "window_start:timestamp", "window_end:timestamp",
        "click_count:long", "max_event_time:timestamp", "source_kafka_ts:timestamp",
    ), id_fields=("page_id", "window_start"),
        description="Output of click-surge detection, key page_id|window_start."),
]

# Dead-letter topics: one record per input record that could not be parsed or validated.
DLQ_SCHEMA = _schema(
    "raw_value:string?", "reason:string", "source_topic:string", "source_partition:int",
    "source_offset:long", "source_kafka_ts:timestamp",
)
_TOPIC_LIST += [
    Topic("ad_events_dlq", 1, "source_topic", DLQ_SCHEMA, id_fields=("source_topic", "source_partition", "source_offset"),
          description="Malformed ad requests, impressions and callbacks, with the reason."),
    Topic("page_clicks_dlq", 1, "source_topic", DLQ_SCHEMA, id_fields=("source_topic", "source_partition", "source_offset"),
          description="Malformed page clicks, with the reason."),
]

TOPICS: dict[str, Topic] = {t.name: t for t in _TOPIC_LIST}

APPS: dict[str, App] = {a.name: a for a in [
    App("attribution", "ops", "spark_apps.ops.attribution",
        inputs=("ad_requests", "ad_impressions", "ad_callbacks"),
        outputs=("attributed_events",), dlq="ad_events_dlq",
        description="Correlates requests, impressions and callbacks (transformWithState)."),
    App("click_surge", "ops", "spark_apps.ops.click_surge",
        inputs=("page_clicks",), outputs=("page_surges",), dlq="page_clicks_dlq",
        description="Pages with more clicks than a threshold in a 5-second window (RTM)."),
]}

# Bronze keeps every topic raw, so any later job can be replayed from it.
TABLES: dict[str, Table] = {t.name: t for t in [
    Table(f"bronze_{name}", "bronze", name, partition_by=("ingest_date",),
          description=f"Raw records of topic {name} with Kafka metadata.")
    for name in TOPICS
]}


def _lookup(kind: str, mapping: dict, name: str):
    try:
        return mapping[name]
    except KeyError:
        raise KeyError(f"unknown {kind} {name!r}; registered {kind}s: {', '.join(mapping)}") from None


def topic(name: str) -> Topic:
    return _lookup("topic", TOPICS, name)


def app(name: str) -> App:
    return _lookup("app", APPS, name)


def table(name: str) -> Table:
    return _lookup("table", TABLES, name)
