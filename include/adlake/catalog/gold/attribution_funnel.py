"""``attribution_funnel`` — per campaign and date: filled requests (distinct requests with an
impression of the campaign), impressions, clicks, conversions; campaign ``*``
(:data:`ALL_CAMPAIGNS`) is the day's total, the only row with requests and a fill rate (a request
has no campaign until filled).

The partition of date ``D``: requests, impressions and callbacks of ``D`` by their own event
time; the ``*`` row counts every callback of ``D``, a campaign's row those paired with its
impressions as in ``campaign_delivery``
(:func:`~adlake.catalog.gold.shared.transform_paired_callbacks`, same margins: impressions from
``window`` before the interval to ``skew`` after it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake.catalog.expectations import ERROR, WARN, at_least, expect, where
from adlake.catalog.gold.shared import DAY, rate, transform_paired_callbacks
from adlake.catalog.types import CLICK, CONVERSION, Table, schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from adlake.catalog.gold.shared import AttributionWindow, Inputs

# The campaign_id of a day's total row.
ALL_CAMPAIGNS = "*"

TABLE = Table(
    "attribution_funnel",
    "gold",
    ("silver_ad_requests", "silver_ad_impressions", "silver_ad_callbacks"),
    partition_by=("event_date",),
    schema=schema(
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
)

# Distinct requests per campaign and day do not add up over hours: rebuilt whole days.
GRAIN = DAY
ROW_TIME = None

DERIVED_COLUMNS: tuple[tuple[str, str], ...] = ()

BUSINESS_RULES = (
    # A count is at least the count of distinct requests among the same rows: always.
    at_least(
        "impressions",
        "filled_requests",
        ERROR,
        "Impressions ≥ filled requests: each filled request has an impression.",
    ),
    expect(
        "column_values_to_not_be_null",
        ERROR,
        "The day's total row ('*') carries the day's requests.",
        column="requests",
        row_condition=where("campaign_id", "==", ALL_CAMPAIGNS),
    ),
    expect(
        "column_values_to_be_null",
        ERROR,
        "A campaign's row has no requests (a request has no campaign until filled).",
        column="requests",
        row_condition=where("campaign_id", "!=", ALL_CAMPAIGNS),
    ),
    expect(
        "column_values_to_be_null",
        ERROR,
        "A campaign's row has no fill rate (only the day's total has one).",
        column="fill_rate",
        row_condition=where("campaign_id", "!=", ALL_CAMPAIGNS),
    ),
    # Clicks and conversions of date D may belong to impressions of D-1 (the attribution
    # window crosses midnight), and the '*' row counts unpaired callbacks too: warns.
    at_least(
        "impressions",
        "clicks",
        WARN,
        "Funnel: impressions ≥ clicks (callbacks after midnight count on their own date).",
    ),
    at_least(
        "clicks",
        "conversions",
        WARN,
        "Funnel: clicks ≥ conversions (a conversion needs no click in the data model).",
    ),
    at_least(
        "requests",
        "filled_requests",
        WARN,
        "The day's requests ≥ its filled requests (an impression just after midnight "
        "fills a request of the day before).",
        row_condition=where("campaign_id", "==", ALL_CAMPAIGNS),
    ),
)


def transform_attribution_funnel(
    requests: DataFrame,
    impressions: DataFrame,
    callbacks: DataFrame,
    config: AttributionWindow,
) -> DataFrame:
    """Silver requests, impressions and callbacks → rows per campaign and date, each event on
    its own date; a campaign's clicks and conversions are the callbacks that belong to its
    impressions (``transform_paired_callbacks``), the day's total (``*``) counts them all."""
    from pyspark.sql import functions as F

    def funnel_callbacks() -> list:
        return [
            F.count(F.when(F.col("event_type") == CLICK, 1)).alias("clicks"),
            F.count(F.when(F.col("event_type") == CONVERSION, 1)).alias("conversions"),
        ]

    per_campaign = impressions.groupBy("campaign_id", "event_date").agg(
        F.countDistinct("request_id").alias("filled_requests"),
        F.count(F.lit(1)).alias("impressions"),
    )
    cb = (
        transform_paired_callbacks(impressions, callbacks, config)
        .groupBy("campaign_id", "event_date")
        .agg(*funnel_callbacks())
    )
    campaigns = (
        per_campaign.join(cb, ["campaign_id", "event_date"], "full_outer")
        .fillna(0)
        .withColumn("requests", F.lit(None).cast("long"))
        .withColumn("fill_rate", F.lit(None).cast("double"))
    )
    day_requests = requests.groupBy("event_date").agg(F.count(F.lit(1)).alias("requests"))
    day_fills = impressions.groupBy("event_date").agg(
        F.countDistinct("request_id").alias("filled_requests"),
        F.count(F.lit(1)).alias("impressions"),
    )
    day_cbs = callbacks.groupBy("event_date").agg(*funnel_callbacks())
    totals = (
        day_requests.join(day_fills, "event_date", "full_outer")
        .join(day_cbs, "event_date", "full_outer")
        .fillna(0)
        .withColumn("campaign_id", F.lit(ALL_CAMPAIGNS))
        .withColumn("fill_rate", rate("filled_requests", "requests"))
    )
    names = TABLE.schema.names
    return campaigns.select(*names).unionByName(totals.select(*names))


def build(inputs: Inputs) -> DataFrame:
    config = inputs.config
    # As campaign_delivery: every impression a callback of the interval can belong to.
    impressions = inputs.silver_around("ad_impressions", config.window_ms, config.skew_ms)
    # Impressions of the day before make rows of that day too: the job keeps the interval's.
    return transform_attribution_funnel(
        inputs.silver("ad_requests"), impressions, inputs.silver("ad_callbacks"), config
    )
