"""What the attribution rules read and write: record kinds, record types, the DLQ fields, every
schema (input, output, key, one per state variable) and the tunables, declared once.

Both engines use these declarations: the Python processor (:mod:`.processor`) directly, and the
JVM port (``spark_apps/ops/jvm/io/adlake/ops/``) through :func:`contract_json`, which hands it
every schema and every name it compares or emits; the Java code declares none of them.

>>> RECORD_TYPES[:2]
('attributed_impression', 'attributed_callback')
>>> QUERY_OUTPUT_SCHEMA.names[-len(DLQ_FIELDS):] == [name for name, _ in DLQ_FIELDS]
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from adlake import registry
from spark_apps.common.parsing import RAW, REASON

_APP = registry.app("attribution")

# Input kinds, in the order rows of one key are handled when they arrive together.
REQUEST, IMPRESSION, CALLBACK = "request", "impression", "callback"
KINDS = (REQUEST, IMPRESSION, CALLBACK)

# Declared once in the registry (the quality suites check attribution_reconciliation against it).
RECORD_TYPES = registry.RECORD_TYPES
(ATTRIBUTED_IMPRESSION, ATTRIBUTED_CALLBACK, REQUEST_CLOSED, ORPHAN_IMPRESSION, ORPHAN_CALLBACK) = (
    RECORD_TYPES
)
# Records emitted when the watermark passes a time (a close, or what was still waiting then),
# not when an event arrives: request_closed and the orphans, declared in the app's registry entry
# (the latency probe counts them apart).
TIMER_DRIVEN = _APP.timer_driven

# The streaming query routes records that failed validation through the processor too (one
# stateful operator, one sink: see spark_apps/ops/attribution.py): such an input row has kind
# REJECT and is emitted at once as a REJECTED record carrying the DLQ fields below.
REJECT, REJECTED = "reject", "rejected"
DLQ_FIELDS = (
    (RAW, StringType()),
    (REASON, StringType()),
    ("source_topic", StringType()),
    ("source_partition", IntegerType()),
    ("source_offset", LongType()),
)
REJECT_KEY = "reject_key"


def _struct(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in fields])


INPUT_SCHEMA = _struct(
    ("kind", StringType()),
    ("request_id", StringType()),
    ("impression_id", StringType()),
    ("callback_id", StringType()),
    ("campaign_id", StringType()),
    ("creative_id", StringType()),
    ("event_type", StringType()),
    ("value", DoubleType()),
    ("event_time_ms", LongType()),
    ("kafka_ts_ms", LongType()),
)

OUTPUT_SCHEMA = _struct(
    ("record_type", StringType()),
    ("request_id", StringType()),
    ("impression_id", StringType()),
    ("callback_id", StringType()),
    ("campaign_id", StringType()),
    ("creative_id", StringType()),
    ("event_type", StringType()),
    ("value", DoubleType()),
    ("request_time_ms", LongType()),
    ("impression_time_ms", LongType()),
    ("callback_time_ms", LongType()),
    ("impressions", LongType()),
    ("callbacks", LongType()),
    ("filled", BooleanType()),
    ("source_kafka_ts_ms", LongType()),
)

# The streaming query's rows: the rules' rows plus the DLQ fields of a rejected record.
QUERY_INPUT_SCHEMA = StructType(INPUT_SCHEMA.fields + [StructField(n, t) for n, t in DLQ_FIELDS])
QUERY_OUTPUT_SCHEMA = StructType(OUTPUT_SCHEMA.fields + [StructField(n, t) for n, t in DLQ_FIELDS])
# The grouping key: the request, or a rejected record's own Kafka coordinates.
KEY_SCHEMA = _struct(("request_id", StringType()), (REJECT_KEY, StringType()))

# State variables, one schema each.
REQUEST_STATE = _struct(("event_time_ms", LongType()), ("kafka_ts_ms", LongType()))
ID_KEY = _struct(("id", StringType()))
IMPRESSION_STATE = _struct(
    ("campaign_id", StringType()),
    ("creative_id", StringType()),
    ("event_time_ms", LongType()),
    ("kafka_ts_ms", LongType()),
    ("attributed", BooleanType()),
)
CALLBACK_STATE = _struct(
    ("impression_id", StringType()),
    ("event_type", StringType()),
    ("value", DoubleType()),
    ("event_time_ms", LongType()),
    ("kafka_ts_ms", LongType()),
    ("attributed", BooleanType()),
)
# close_at_ms: when the open key closes; tombstone_until_ms: when a closed key's tombstone goes.
TIMER_STATE = _struct(("close_at_ms", LongType()), ("tombstone_until_ms", LongType()))
CLOSED_ID_STATE = _struct(("kind", StringType()))
# expire_at_ms: the key's lifetime bound (see "A lifetime bound" in the processor's rules).
EXPIRY_STATE = _struct(("expire_at_ms", LongType()))

STATE_NAMES = ("request", "impressions", "callbacks", "timers", "closed_ids", "expiry")
_STATE_SCHEMAS = {
    "request": REQUEST_STATE,
    "id_key": ID_KEY,
    "impression": IMPRESSION_STATE,
    "callback": CALLBACK_STATE,
    "timers": TIMER_STATE,
    "closed_id": CLOSED_ID_STATE,
    "expiry": EXPIRY_STATE,
}


def contract_json(
    input_schema: StructType = INPUT_SCHEMA, output_schema: StructType = OUTPUT_SCHEMA
) -> str:
    """Everything the JVM processor needs to know by name, as one JSON document: ``schemas``
    (input, output, key and one per state variable) and ``names`` (kinds, record types, the
    reject kind and record type, the DLQ fields, in that order of use)."""
    schemas = {"input": input_schema, "output": output_schema, "key": KEY_SCHEMA, **_STATE_SCHEMAS}
    names = {
        "request": REQUEST,
        "impression": IMPRESSION,
        "callback": CALLBACK,
        "attributed_impression": ATTRIBUTED_IMPRESSION,
        "attributed_callback": ATTRIBUTED_CALLBACK,
        "request_closed": REQUEST_CLOSED,
        "orphan_impression": ORPHAN_IMPRESSION,
        "orphan_callback": ORPHAN_CALLBACK,
        "reject": REJECT,
        "rejected": REJECTED,
        "reject_key": REJECT_KEY,
    }
    return json.dumps(
        {
            "schemas": {n: s.jsonValue() for n, s in schemas.items()},
            "names": names,
            "dlq_fields": [name for name, _ in DLQ_FIELDS],
        }
    )


@dataclass(frozen=True)
class AttributionConfig:
    """Attribution tunables, all in milliseconds."""

    # Defaults: the app's knobs in the registry (seconds there).
    window_ms: int = int(_APP.knob("window_s").default * 1000)
    skew_ms: int = int(_APP.knob("skew_s").default * 1000)
    # The watermark delay (set on the query, not used here) and the key lifetime bound.
    lateness_ms: int = int(_APP.knob("lateness_s").default * 1000)
    ttl_ms: int = int(_APP.knob("ttl_s").default * 1000)
    # Batch queries fire no event-time timers: there, each key is closed at the end of its input
    # (all its rows come in one call), as if the watermark had passed everything.
    close_at_end_of_input: bool = False

    def __post_init__(self) -> None:
        for name in ("window_ms", "skew_ms", "lateness_ms", "ttl_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.window_ms == 0:
            raise ValueError("window_ms must be > 0: a closed key's tombstone lasts one window")
        # the registry's rule for the knobs, the one the apps' requests are checked against
        problem = registry.ttl_refusal(self.window_ms, self.lateness_ms, self.ttl_ms, unit="ms")
        if problem:
            raise ValueError(problem)

    def in_window(self, partner_ms: int, item_ms: int) -> bool:
        return -self.skew_ms <= item_ms - partner_ms <= self.window_ms
