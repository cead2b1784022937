"""``campaign_delivery`` — per campaign, creative, date and hour: impressions, clicks, quartiles,
completes, conversions, click-through and completion rates.

The partition of date ``D``: the impressions of ``D``, counted in their hour; the callbacks of
``D``, counted in the hour of their own event time, for the campaign of their impression **if
the callback falls in the attribution window of it** (``-skew <= callback - impression <=
window``, the contract's ``in_window``, the rule the attribution app pairs them by:
:func:`~adlake.catalog.gold.shared.transform_paired_callbacks`); a callback outside it counts for no
campaign. Impressions are read from ``window`` before the interval to ``skew`` after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake.catalog.expectations import WARN, at_least, expect
from adlake.catalog.gold.shared import HOUR, rate, transform_paired_callbacks
from adlake.catalog.types import CALLBACK_EVENT_TYPES, Table, schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from adlake.catalog.gold.shared import AttributionWindow, Inputs

TABLE = Table(
    "campaign_delivery",
    "gold",
    ("silver_ad_impressions", "silver_ad_callbacks"),
    partition_by=("event_date",),
    schema=schema(
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
)

# An hour of a day: the hourly chain rebuilds its own hour of the table.
GRAIN = HOUR
ROW_TIME = "timestamp_seconds(unix_date(event_date) * 86400 + hour * 3600)"

DERIVED_COLUMNS: tuple[tuple[str, str], ...] = ()

BUSINESS_RULES = (
    expect(
        "column_values_to_be_between",
        column="hour",
        min_value=0,
        max_value=23,
        description="An hour of the day, UTC.",
    ),
    # A callback counts in its own hour for an impression that may lie in the hour (or the
    # day) before, so an hour can show a click and no impression: a warn, not an error.
    at_least(
        "impressions",
        "clicks",
        WARN,
        "Impressions ≥ clicks in the row's hour (a click just after an hour boundary "
        "counts in the next hour, so this can fail on good data).",
    ),
    at_least(
        "impressions",
        "completes",
        WARN,
        "Impressions ≥ completes in the row's hour (as for clicks).",
    ),
)


def _callback_counts() -> list[Column]:
    from pyspark.sql import functions as F

    def count(event_type: str, name: str) -> Column:
        return F.count(F.when(F.col("event_type") == event_type, 1)).alias(name)

    # The table's columns are the plural of each event type: clicks, first_quartiles...
    return [count(event_type, f"{event_type}s") for event_type in CALLBACK_EVENT_TYPES]


def transform_campaign_delivery(
    impressions: DataFrame, callbacks: DataFrame, config: AttributionWindow
) -> DataFrame:
    """Silver impressions and callbacks → rows per campaign, creative, date and hour; a callback
    counts in its own hour for the impression it belongs to (``transform_paired_callbacks``).
    """
    from pyspark.sql import functions as F

    keys = ["campaign_id", "creative_id", "event_date", "hour"]
    imp = (
        impressions.withColumn("hour", F.hour("event_time"))
        .groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("impressions"))
    )
    cbs = (
        transform_paired_callbacks(impressions, callbacks, config)
        .withColumn("hour", F.hour("event_time"))
        .groupBy(*keys)
        .agg(*_callback_counts())
    )
    out = imp.join(cbs, keys, "full_outer").fillna(0)
    return (
        out.withColumn("click_through_rate", rate("clicks", "impressions"))
        .withColumn("completion_rate", rate("completes", "impressions"))
        .select(*TABLE.schema.names)
    )


def build(inputs: Inputs) -> DataFrame:
    config = inputs.config
    # Every impression a callback of the interval can belong to: from one window before the
    # interval (a click after midnight on an impression before it) to one skew after.
    impressions = inputs.silver_around("ad_impressions", config.window_ms, config.skew_ms)
    # Impressions of the hour before make rows of that hour too: the job keeps the interval's.
    return transform_campaign_delivery(impressions, inputs.silver("ad_callbacks"), config)
