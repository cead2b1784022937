"""``attribution_reconciliation`` — per date and record type: the attribution processor run in
batch over silver requests, impressions and callbacks (the rules the operational app streams,
``spark_apps.common.attribution.batch.attribute_batch``), compared with the real-time
``attributed_events`` by record id: matched, missing in real time, extra in real time.

A record is dated by :func:`record_date` (its request's date, else its impression's, else its
callback's), the earlier side's if batch and real time disagree. Batch attribution runs over the
events from :func:`attribution_margin_ms` before the interval to as much after it, so a request of
23:59 on ``D`` keeps its impressions and callbacks of ``D+1`` and an impression of 00:01 on ``D``
its request of the day before; real-time records are read from the margin before the interval
to the newest (silver dates them by when they reached Kafka). The partition of ``D`` is exact
(the same as batch attribution over all of silver would give) for every request whose events lie
within the margin of each other: the margin is the key lifetime bound (``ttl``, at least two
windows plus skews), past which the stream itself no longer holds a request's key together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake.catalog.expectations import MIN_MATCH_RATE, WARN, expect, param
from adlake.catalog.gold.shared import DAY
from adlake.catalog.types import ATTRIBUTED_EVENT_IDS, Table, schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from adlake.catalog.gold.shared import AttributionWindow, Inputs

_ATTRIBUTION_INPUTS = ("silver_ad_requests", "silver_ad_impressions", "silver_ad_callbacks")

TABLE = Table(
    "attribution_reconciliation",
    "gold",
    ("silver_attributed_events", *_ATTRIBUTION_INPUTS),
    partition_by=("event_date",),
    schema=schema(
        "event_date:date",
        "record_type:string",
        "matched:long",
        "missing_in_realtime:long",
        "extra_in_realtime:long",
    ),
    keys=("event_date", "record_type"),
    description="Batch attribution over silver vs the real-time attributed_events.",
)

# A day's match counts: rebuilt whole days.
GRAIN = DAY
ROW_TIME = None

DERIVED_COLUMNS = (
    ("dq_match_rate", "matched / nullif(matched + missing_in_realtime + extra_in_realtime, 0)"),
)

BUSINESS_RULES = (
    expect(
        "column_values_to_be_between",
        WARN,
        "Batch and real-time attribution agree on at least ADLAKE_DQ_MIN_MATCH_RATE of "
        "the records of each date and type (the stream may lag or drop late events).",
        column="dq_match_rate",
        min_value=param(MIN_MATCH_RATE),
    ),
)


def attribution_margin_ms(config: AttributionWindow) -> int:
    """How far before and after the interval batch attribution reads events: the key lifetime
    bound ``ttl`` (the stream holds no request's key longer), and never less than the rules'
    own reach, a request → impression → callback chain (two windows plus two skews).

    >>> from types import SimpleNamespace
    >>> defaults = SimpleNamespace(ttl_ms=3_600_000, window_ms=300_000, skew_ms=10_000)
    >>> attribution_margin_ms(defaults)  # the contract's defaults: ttl 1 h, window 5 min, skew 10 s
    3600000
    >>> attribution_margin_ms(SimpleNamespace(ttl_ms=60_000, window_ms=300_000, skew_ms=10_000))
    620000
    """
    return max(config.ttl_ms, 2 * (config.window_ms + config.skew_ms))


def record_date() -> Column:
    """The date a record is about: its request's, else its impression's, else its callback's."""
    from pyspark.sql import functions as F

    return F.to_date(F.coalesce("request_time", "impression_time", "callback_time"))


def transform_reconciliation(batch: DataFrame, realtime: DataFrame) -> DataFrame:
    """Compare batch-attributed records with real-time ones by record id, per date and type.

    A record's id fields (:data:`~adlake.catalog.types.ATTRIBUTED_EVENT_IDS`) may be null (a
    ``request_closed`` record has no impression id): two records match when their ids are
    equal or both null, field by field."""
    from pyspark.sql import functions as F

    from adlake.frames import null_safe_join

    ids = list(ATTRIBUTED_EVENT_IDS)
    b = batch.select(*ids).distinct().withColumn("_in_batch", F.lit(True))
    r = realtime.select(*ids).distinct().withColumn("_in_rt", F.lit(True))
    dates = (
        batch.select(*ids, record_date().alias("event_date"))
        .unionByName(realtime.select(*ids, record_date().alias("event_date")))
        .groupBy(*ids)
        .agg(F.min("event_date").alias("event_date"))
    )
    # Each record once, from whichever side holds it; then its date (every record has one).
    records = (
        b.alias("b")
        .join(r.alias("r"), null_safe_join("b", "r", ids), "full_outer")
        .select(
            *[F.coalesce(F.col(f"b.{c}"), F.col(f"r.{c}")).alias(c) for c in ids],
            "_in_batch",
            "_in_rt",
        )
    )
    dated = (
        records.alias("j")
        .join(dates.alias("d"), null_safe_join("j", "d", ids), "left")
        .select("j.*", "d.event_date")
    )
    return (
        dated.groupBy("event_date", "record_type")
        .agg(
            F.count(F.when(F.col("_in_batch") & F.col("_in_rt"), 1)).alias("matched"),
            F.count(F.when(F.col("_in_batch") & F.col("_in_rt").isNull(), 1)).alias(
                "missing_in_realtime"
            ),
            F.count(F.when(F.col("_in_batch").isNull() & F.col("_in_rt"), 1)).alias(
                "extra_in_realtime"
            ),
        )
        .select(*TABLE.schema.names)
    )


def build(inputs: Inputs) -> DataFrame:
    margin = attribution_margin_ms(inputs.config)

    def events(topic: str) -> DataFrame:
        return inputs.silver_around(topic, margin, margin)

    batch = inputs.attribute_batch(
        events("ad_requests"), events("ad_impressions"), events("ad_callbacks")
    )
    # A real-time record is dated in silver by when it reached Kafka: after its events, which
    # are at most the margin before the interval for any record the interval can hold, and any
    # time later (the stream may lag, or catch up after an outage). So from the margin before
    # the interval to the newest: never the history before it, whose size grows every day.
    realtime = inputs.silver_from("attributed_events", margin)
    return transform_reconciliation(batch, realtime)
