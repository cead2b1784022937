"""Parse and validate JSON payloads against the registry's schemas; route failures with a reason.

Shared by the operational apps (Kafka → DLQ topic) and the silver jobs (bronze → quarantine), on
both runtimes. The rules are declared in :mod:`adlake.payload_rules` (reasons, JSON types, enumerations,
ranges, plausible times, the timestamp pattern) and built into Spark columns here, check by check
in :func:`adlake.payload_rules.checks` order: the first failing check is the reason, the same one
:func:`adlake.payload_rules.check_record` gives in plain Python. A valid row has ``reason`` null.

The record limit comes first: a value longer than ``max_bytes`` (its ``octet_length``, in bytes;
by default the configured ``ADLAKE_MAX_RECORD_BYTES``) is ``too_large``, is never handed to a
JSON parser, and its ``raw_value`` is only what :func:`adlake.payload_rules.kept_raw` keeps (its first
characters and its size), so a megabyte value is not copied into state, a DLQ record or the
quarantine.

>>> parsed = parse_json(df, registry.topic("ad_callbacks"))          # doctest: +SKIP
>>> valid, rejected = split_valid(parsed)                             # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake import payload_rules, registry

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REASON = (
    payload_rules.REASON
)  # "reason": the DataFrame column, the DLQ field, the quarantine column
RAW = "raw_value"

# Spark's names (schema_of_variant) of the JSON kinds adlake.payload_rules declares.
_VARIANT_TYPES = {
    payload_rules.STRING: ("STRING",),
    payload_rules.INTEGER: ("BIGINT",),  # a literal beyond 64 bits is a DECIMAL or a DOUBLE
    payload_rules.NUMBER: ("DECIMAL", "DOUBLE"),
    payload_rules.BOOLEAN: ("BOOLEAN",),
}
# The whole text, not a prefix: Java's "$" would also match before a final line break.
_TIMESTAMP_TEXT = f"^(?:{payload_rules.TIMESTAMP_PATTERN})\\z"


def json_document(raw: Column) -> Column:
    """``try_parse_json(raw)`` where ``raw`` is UTF-8 text of exactly one JSON value (whitespace
    around it allowed), else null.

    Spark's JSON parsers stop after the first value: ``{"a":1} xyz`` and ``{"a":1}{"b":2}``
    parse as ``{"a":1}``. Wrapped in brackets, the text must be an array of exactly one element,
    and with ``,0`` appended one of exactly two. Trailing text either breaks the array or closes
    it early, inside ``raw`` (``{"a":1}] xyz``), where the appended element is never reached.
    """
    from pyspark.sql import functions as F

    one = F.json_array_length(F.concat(F.lit("["), raw, F.lit("]"))) == 1
    two = F.json_array_length(F.concat(F.lit("["), raw, F.lit(",0]"))) == 2
    return F.when(F.is_valid_utf8(raw) & one & two, F.try_parse_json(raw))


def _condition(
    check: payload_rules.Check,
    topic: registry.Topic,
    variant: Column,
    parsed: Column,
    received: Column | None,
) -> Column:
    """Where ``check`` fails, as a Spark condition (see :func:`adlake.payload_rules.validate`)."""
    from pyspark.sql import functions as F

    name = check.field.name
    json_value = F.variant_get(variant, f"$.{name}", "variant")
    json_type = F.schema_of_variant(json_value)
    present = json_value.isNotNull() & (json_type != "VOID")
    if check.rule == payload_rules.REQUIRED:
        return ~present
    value = parsed[name]
    if check.rule == payload_rules.TYPE:
        accepted = [
            t for kind in payload_rules.JSON_KINDS[check.field.type] for t in _VARIANT_TYPES[kind]
        ]
        wrong = ~F.regexp_extract(json_type, r"^([A-Z]+)", 1).isin(*accepted) | value.isNull()
        if check.field.type == "timestamp":
            text = F.variant_get(variant, f"$.{name}", "string")
            wrong = wrong | ~F.coalesce(text.rlike(_TIMESTAMP_TEXT), F.lit(False))
        failed = wrong
    elif check.rule == payload_rules.ENUMERATION:
        failed = ~value.isin(*check.allowed)
    elif check.rule == payload_rules.FINITE:
        failed = F.isnan(value) | (F.abs(value) == F.lit(float("inf")))
    elif check.rule == payload_rules.NON_NEGATIVE_CHECK:
        failed = value < 0
    elif check.rule == payload_rules.PLAUSIBLE_TIME:
        micros = F.unix_micros(value)
        failed = micros < F.lit(payload_rules.EARLIEST_US)
        if received is not None:
            failed = failed | (micros > F.unix_micros(received) + F.lit(payload_rules.MAX_AHEAD_US))
        failed = F.coalesce(failed, F.lit(False))
    else:
        raise ValueError(f"{topic.name}: no Spark condition for rule {check.rule!r}")
    return present & failed


def reason_column(
    variant: Column, topic: registry.Topic, parsed: Column, received: Column | None = None
) -> Column:
    """The reason a raw JSON value fails ``topic``'s rules, or null if it passes. ``variant``:
    :func:`json_document` of the value; ``parsed``: ``from_json`` of it with the topic's schema;
    ``received``: the record's Kafka timestamp, the upper bound of a plausible time (without
    it, only the lower bound is checked)."""
    from pyspark.sql import functions as F

    checks: list[tuple[Column, str]] = [
        (
            variant.isNull() | ~F.schema_of_variant(variant).startswith("OBJECT"),
            payload_rules.INVALID_JSON,
        )
    ]
    checks += [
        (_condition(c, topic, variant, parsed, received), c.reason)
        for c in payload_rules.checks(topic.name)
    ]
    reason = F.lit(None).cast("string")
    for condition, label in reversed(checks):
        reason = F.when(condition, F.lit(label)).otherwise(reason)
    return reason


def _guard_size(df: DataFrame, value_col: str, max_bytes: int | None) -> DataFrame:
    """``df`` with ``_too_large`` (the value is over the record limit), ``_text`` (the value as
    text, null when too large: the only column the JSON parsers read) and :data:`RAW` (the value
    as text, or :func:`adlake.payload_rules.kept_raw` of a too-large one)."""
    from pyspark.sql import functions as F

    value = F.col(value_col)
    limit = payload_rules.max_record_bytes(max_bytes)
    # octet_length counts bytes of a binary (Kafka) and of a string (bronze) value alike.
    oversized = F.coalesce(F.octet_length(value) > F.lit(limit), F.lit(False))
    text = value.cast("string")
    # make_valid_utf8 replaces what is not UTF-8 as Python's decode(errors="replace") does,
    # so the kept characters are the same in both implementations.
    kept = F.format_string(
        payload_rules.TOO_LARGE_RAW_FORMAT,
        F.substring(F.make_valid_utf8(text), 1, payload_rules.TOO_LARGE_KEPT_CHARS),
        F.octet_length(value),
    )
    return (
        df.withColumn("_too_large", oversized)
        .withColumn("_text", F.when(~F.col("_too_large"), text))
        .withColumn(RAW, F.when(F.col("_too_large"), kept).otherwise(text))
    )


def _refuse_clash(schema: registry.Schema) -> None:
    clash = [n for n in (RAW, REASON) if n in schema.names]
    if clash:
        raise ValueError(f"payload fields {clash} would clash with parsing's own columns")


def parse_json(
    df: DataFrame,
    topic: registry.Topic,
    value_col: str = "value",
    received_col: str | None = None,
    max_bytes: int | None = None,
) -> DataFrame:
    """Add the registry schema's fields (parsed from ``value_col``), ``raw_value`` and
    ``reason`` to ``df``; the other columns (Kafka metadata) are kept. ``received_col``: the
    column of the record's Kafka timestamp, which bounds a plausible event time; ``max_bytes``:
    the record limit (default: the configured one)."""
    from pyspark.sql import functions as F

    _refuse_clash(topic.schema)
    with_parsed = (
        _guard_size(df, value_col, max_bytes)
        .withColumn("_parsed", F.from_json(F.col("_text"), topic.schema.spark()))
        .withColumn("_variant", json_document(F.col("_text")))
    )
    reason = F.when(F.col("_too_large"), F.lit(payload_rules.TOO_LARGE)).otherwise(
        reason_column(
            F.col("_variant"),
            topic,
            F.col("_parsed"),
            F.col(received_col) if received_col else None,
        )
    )
    # The source value is replaced by raw_value; its other columns stay unless a payload field
    # has the same name (the payload wins: ``value`` of a callback is the callback's value).
    kept = [c for c in df.columns if c != value_col and c not in topic.schema.names]
    return with_parsed.withColumn(REASON, reason).select(
        *kept, RAW, REASON, *[F.col(f"_parsed.{name}").alias(name) for name in topic.schema.names]
    )


def parse_json_by_topic(
    df: DataFrame,
    topics: list[registry.Topic],
    value_col: str = "value",
    topic_col: str = "topic",
    received_col: str | None = None,
    max_bytes: int | None = None,
) -> DataFrame:
    """:func:`parse_json` for records of several topics in one pass: each row is validated
    against the schema of the topic named in its ``topic_col``. The result has the union of the
    topics' fields (a field another topic declares is null), ``raw_value`` and ``reason``.

    One projection, so a streaming source feeding it is read once per batch; filtering the
    source per topic would instead plan (and read and count) one source scan per branch. A
    value over the record limit is ``too_large`` whatever its topic.
    """
    from pyspark.sql import functions as F

    fields: dict[str, registry.Field] = {}
    for topic in topics:
        for field in topic.schema.fields:
            other = fields.setdefault(field.name, field)
            if other.type != field.type:
                raise ValueError(
                    f"field {field.name!r} is {other.type} in one topic and "
                    f"{field.type} in {topic.name}: they cannot be parsed together"
                )
    merged = registry.Schema(tuple(fields.values()))
    _refuse_clash(merged)
    with_parsed = (
        _guard_size(df, value_col, max_bytes)
        .withColumn("_parsed", F.from_json(F.col("_text"), merged.spark()))
        .withColumn("_variant", json_document(F.col("_text")))
    )
    reason = F.lit(payload_rules.UNKNOWN_TOPIC)
    for topic in reversed(topics):
        reason = F.when(
            F.col(topic_col) == topic.name,
            reason_column(
                F.col("_variant"),
                topic,
                F.col("_parsed"),
                F.col(received_col) if received_col else None,
            ),
        ).otherwise(reason)
    reason = F.when(F.col("_too_large"), F.lit(payload_rules.TOO_LARGE)).otherwise(reason)
    kept = [c for c in df.columns if c != value_col and c not in merged.names]

    def own(name: str):
        """The field, only where the row's topic declares it (a stray field stays out)."""
        owners = [t.name for t in topics if name in t.schema.names]
        return F.when(F.col(topic_col).isin(*owners), F.col(f"_parsed.{name}")).alias(name)

    return with_parsed.withColumn(REASON, reason).select(
        *kept, RAW, REASON, *[own(name) for name in merged.names]
    )


def split_valid(parsed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(rows that passed, rows that failed) of a :func:`parse_json` result."""
    from pyspark.sql import functions as F

    return parsed.where(F.col(REASON).isNull()), parsed.where(F.col(REASON).isNotNull())
