"""Parse and validate JSON payloads against the registry's schemas; route failures with a reason.

Shared by the operational apps (Kafka → DLQ topic) and the silver jobs (bronze → quarantine), on
both runtimes. One rule set, derived from the registry's field declarations:

==================  =====================================================================
reason              when
==================  =====================================================================
``invalid_json``    the value is not a JSON object (unparseable, an array, a scalar, null)
``missing_field:F`` required field ``F`` is absent or JSON null
``wrong_type:F``    ``F`` has the wrong JSON type (e.g. a string for a double), or is not an
                    ISO-8601 timestamp with a time of day where one is declared (a bare date
                    is not an event time)
``invalid_value:F`` ``F`` is outside its declared enumeration or range, a number too large
                    to be finite (``1e400``), or a time that is not plausible: before
                    ``EARLIEST_TIME``, or more than ``MAX_AHEAD_OF_KAFKA`` after the record's
                    Kafka timestamp (where the caller names that column)
==================  =====================================================================

The first failing rule, in field order, is the reason. A valid row has ``dlq_reason`` null.

>>> parsed = parse_json(df, registry.topic("ad_callbacks"))          # doctest: +SKIP
>>> valid, rejected = split_valid(parsed)                             # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake import registry

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REASON = "dlq_reason"
RAW = "raw_value"

# JSON types (as Spark's schema_of_variant names them) accepted for each declared field type.
_JSON_TYPES = {
    "string": ("STRING",),
    "timestamp": ("STRING",),
    "long": ("BIGINT",),
    "int": ("BIGINT",),
    "double": ("BIGINT", "DOUBLE", "DECIMAL"),
    "boolean": ("BOOLEAN",),
}

# Value rules beyond type, per topic and field.
ENUMERATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ad_callbacks", "event_type"): registry.CALLBACK_EVENT_TYPES,
}
NON_NEGATIVE: frozenset[tuple[str, str]] = frozenset({
    ("ad_requests", "floor_price"), ("ad_requests", "bid_count"),
    ("ad_impressions", "win_price"), ("ad_callbacks", "value"),
})
# Plausible times, for every timestamp field. Nothing happened before EARLIEST_TIME: an epoch-0
# default or seconds read as milliseconds land in 1970. Nothing is sent from the future: an event
# time more than MAX_AHEAD_OF_KAFKA after its record reached Kafka is a broken clock or
# milliseconds read as seconds (thousands of years ahead). Let through, one such event would
# move a streaming app's watermark to its time, and every later event would be late; in silver
# it would create a partition for that date. The bound is the record's own Kafka timestamp, not
# the clock, so a rerun over the same records classifies them the same way.
EARLIEST_TIME = "2000-01-01 00:00:00"
MAX_AHEAD_OF_KAFKA = "1 hour"
# What a timestamp's text starts with: a date and a time of day. Spark alone would read a bare
# date ("2026-11-22") as midnight, which no producer of events means.
_DATE_AND_TIME = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"


def _type_ok(json_type: Column, field: registry.Field) -> Column:
    from pyspark.sql import functions as F

    base = F.regexp_extract(json_type, r"^([A-Z]+)", 1)
    return base.isin(*_JSON_TYPES[field.type])


def reason_column(variant: Column, topic: registry.Topic, parsed: Column,
                  received: Column | None = None) -> Column:
    """The reason a raw JSON value (``variant``: ``try_parse_json`` of it) fails ``topic``'s
    rules, or null if it passes. ``received``: the record's Kafka timestamp, the upper bound of
    a plausible time (without it, only the lower bound is checked)."""
    from pyspark.sql import functions as F

    checks: list[tuple[Column, Column]] = [
        (variant.isNull() | ~F.schema_of_variant(variant).startswith("OBJECT"),
         F.lit("invalid_json")),
    ]
    for field in topic.schema.fields:
        json_type = F.schema_of_variant(F.variant_get(variant, f"$.{field.name}", "variant"))
        present = F.variant_get(variant, f"$.{field.name}", "variant").isNotNull() & \
            (json_type != "VOID")
        value = parsed[field.name]
        if field.required:
            checks.append((~present, F.lit(f"missing_field:{field.name}")))
        wrong = ~_type_ok(json_type, field) | value.isNull()
        if field.type == "timestamp":
            text = F.variant_get(variant, f"$.{field.name}", "string")
            wrong = wrong | ~F.coalesce(text.rlike(_DATE_AND_TIME), F.lit(False))
        checks.append((present & wrong, F.lit(f"wrong_type:{field.name}")))
        allowed = ENUMERATIONS.get((topic.name, field.name))
        if allowed:
            checks.append((present & ~value.isin(*allowed), F.lit(f"invalid_value:{field.name}")))
        if field.type == "double":
            # JSON has no Infinity or NaN, but a literal beyond the double range (1e400)
            # parses as Infinity: no price or value is infinite.
            checks.append((present & (F.isnan(value) | (F.abs(value) == F.lit(float("inf")))),
                           F.lit(f"invalid_value:{field.name}")))
        if (topic.name, field.name) in NON_NEGATIVE:
            checks.append((present & (value < 0), F.lit(f"invalid_value:{field.name}")))
        if field.type == "timestamp":
            implausible = value < F.to_timestamp(F.lit(EARLIEST_TIME))
            if received is not None:
                implausible = implausible | (
                    value > received + F.expr(f"INTERVAL {MAX_AHEAD_OF_KAFKA}"))
            checks.append((present & F.coalesce(implausible, F.lit(False)),
                           F.lit(f"invalid_value:{field.name}")))
    reason = F.lit(None).cast("string")
    for condition, label in reversed(checks):
        reason = F.when(condition, label).otherwise(reason)
    return reason


def parse_json(df: DataFrame, topic: registry.Topic, value_col: str = "value",
               received_col: str | None = None) -> DataFrame:
    """Add the registry schema's fields (parsed from ``value_col``), ``raw_value`` and
    ``dlq_reason`` to ``df``; the other columns (Kafka metadata) are kept. ``received_col``: the
    column of the record's Kafka timestamp, which bounds a plausible event time."""
    from pyspark.sql import functions as F

    raw = F.col(value_col).cast("string")
    with_parsed = (df.withColumn(RAW, raw)
                   .withColumn("_parsed", F.from_json(F.col(RAW), topic.schema.spark()))
                   .withColumn("_variant", F.try_parse_json(F.col(RAW))))
    reason = reason_column(F.col("_variant"), topic, F.col("_parsed"),
                           F.col(received_col) if received_col else None)
    # The source value is replaced by raw_value; its other columns stay unless a payload field
    # has the same name (the payload wins: ``value`` of a callback is the callback's value).
    kept = [c for c in df.columns if c != value_col and c not in topic.schema.names]
    return (with_parsed.withColumn(REASON, reason)
            .select(*kept, RAW, REASON,
                    *[F.col(f"_parsed.{name}").alias(name) for name in topic.schema.names]))


def parse_json_by_topic(df: DataFrame, topics: list[registry.Topic],
                        value_col: str = "value", topic_col: str = "topic",
                        received_col: str | None = None) -> DataFrame:
    """:func:`parse_json` for records of several topics in one pass: each row is validated
    against the schema of the topic named in its ``topic_col``. The result has the union of the
    topics' fields (a field another topic declares is null), ``raw_value`` and ``dlq_reason``.

    One projection, so a streaming source feeding it is read once per batch; filtering the
    source per topic would instead plan (and read and count) one source scan per branch.
    """
    from pyspark.sql import functions as F

    fields: dict[str, registry.Field] = {}
    for topic in topics:
        for field in topic.schema.fields:
            other = fields.setdefault(field.name, field)
            if other.type != field.type:
                raise ValueError(f"field {field.name!r} is {other.type} in one topic and "
                                 f"{field.type} in {topic.name}: they cannot be parsed together")
    merged = registry.Schema(tuple(fields.values()))
    raw = F.col(value_col).cast("string")
    with_parsed = (df.withColumn(RAW, raw)
                   .withColumn("_parsed", F.from_json(F.col(RAW), merged.spark()))
                   .withColumn("_variant", F.try_parse_json(F.col(RAW))))
    reason = F.lit("unknown_topic")
    for topic in reversed(topics):
        reason = F.when(F.col(topic_col) == topic.name,
                        reason_column(F.col("_variant"), topic, F.col("_parsed"),
                                      F.col(received_col) if received_col else None)
                        ).otherwise(reason)
    kept = [c for c in df.columns if c != value_col and c not in merged.names]

    def own(name: str):
        """The field, only where the row's topic declares it (a stray field stays out)."""
        owners = [t.name for t in topics if name in t.schema.names]
        return F.when(F.col(topic_col).isin(*owners), F.col(f"_parsed.{name}")).alias(name)

    return (with_parsed.withColumn(REASON, reason)
            .select(*kept, RAW, REASON, *[own(name) for name in merged.names]))


def split_valid(parsed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(rows that passed, rows that failed) of a :func:`parse_json` result."""
    from pyspark.sql import functions as F

    return parsed.where(F.col(REASON).isNull()), parsed.where(F.col(REASON).isNotNull())
