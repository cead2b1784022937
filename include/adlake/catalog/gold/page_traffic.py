"""``page_traffic`` — per page and minute: clicks and distinct users.

The partition of date ``D``: the clicks of ``D``; no margin (a minute never crosses midnight).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake.catalog.expectations import DAY_END, DAY_START, ERROR, at_least, expect, param
from adlake.catalog.gold.shared import HOUR
from adlake.catalog.types import Table, schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from adlake.catalog.gold.shared import Inputs

TABLE = Table(
    "page_traffic",
    "gold",
    ("silver_page_clicks",),
    partition_by=("event_date",),
    schema=schema(
        "page_id:string",
        "event_date:date",
        "minute:timestamp",
        "clicks:long",
        "distinct_users:long",
    ),
    keys=("page_id", "minute"),
    description="Clicks and distinct users per page and minute.",
)

GRAIN = HOUR
ROW_TIME = "minute"

DERIVED_COLUMNS: tuple[tuple[str, str], ...] = ()

BUSINESS_RULES = (
    at_least(
        "clicks",
        "distinct_users",
        ERROR,
        "Clicks ≥ distinct users: each user counted clicked at least once.",
    ),
    expect(
        "column_values_to_be_between",
        ERROR,
        "Each minute lies within the event dates the interval touches.",
        column="minute",
        min_value=param(DAY_START),
        max_value=param(DAY_END),
        strict_max=True,
    ),
)


def transform_page_traffic(clicks: DataFrame) -> DataFrame:
    """Silver page clicks → rows per page and minute."""
    from pyspark.sql import functions as F

    return (
        clicks.withColumn("minute", F.date_trunc("minute", "event_time"))
        .groupBy("page_id", "event_date", "minute")
        .agg(F.count(F.lit(1)).alias("clicks"), F.countDistinct("user_id").alias("distinct_users"))
        .select(*TABLE.schema.names)
    )


def build(inputs: Inputs) -> DataFrame:
    # The interval's clicks make exactly the interval's rows: a row's date is its clicks'.
    return transform_page_traffic(inputs.silver("page_clicks"))
