"""``surge_history`` — one row per page and surging window: the highest count reported.

The partition of date ``D``: the reports of windows starting on ``D`` (silver dates a surge by
its window start); no margin. The app re-emits a window as its count grows (update mode), each
count its own record: the row keeps the highest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake.catalog.expectations import DAY_END, DAY_START, ERROR, WARN, expect, param
from adlake.catalog.gold.shared import HOUR
from adlake.catalog.types import SURGE_THRESHOLD, SURGE_WINDOW_S, Table, schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from adlake.catalog.gold.shared import Inputs

TABLE = Table(
    "surge_history",
    "gold",
    ("silver_page_surges",),
    partition_by=("event_date",),
    schema=schema(
        "page_id:string",
        "event_date:date",
        "window_start:timestamp",
        "window_end:timestamp",
        "click_count:long",
    ),
    keys=("page_id", "window_start"),
    description="One row per page and surging window, with the highest count reported.",
)

GRAIN = HOUR
ROW_TIME = "window_start"

DERIVED_COLUMNS = (
    ("dq_window_seconds", "(unix_millis(window_end) - unix_millis(window_start)) / 1000.0"),
)

BUSINESS_RULES = (
    expect(
        "column_values_to_be_between",
        ERROR,
        f"Windows are click_surge's tumbling {SURGE_WINDOW_S}-second windows.",
        column="dq_window_seconds",
        min_value=SURGE_WINDOW_S,
        max_value=SURGE_WINDOW_S,
    ),
    expect(
        "column_values_to_be_between",
        ERROR,
        "Each window starts within the event dates the interval touches.",
        column="window_start",
        min_value=param(DAY_START),
        max_value=param(DAY_END),
        strict_max=True,
    ),
    # The app may be started with a lower threshold (its trigger form's knob; `make up
    # THRESHOLD=50`), so only the default is known here: a warn.
    expect(
        "column_values_to_be_between",
        WARN,
        f"A surge's count is above click_surge's default threshold ({SURGE_THRESHOLD}); "
        "an app started with a lower threshold reports smaller surges.",
        column="click_count",
        min_value=SURGE_THRESHOLD,
        strict_min=True,
    ),
)


def transform_surge_history(surges: DataFrame) -> DataFrame:
    """Silver surge reports → one row per page and window, with the highest count reported."""
    from pyspark.sql import functions as F

    return (
        surges.groupBy("page_id", "event_date", "window_start")
        .agg(F.max("window_end").alias("window_end"), F.max("click_count").alias("click_count"))
        .select(*TABLE.schema.names)
    )


def build(inputs: Inputs) -> DataFrame:
    # The interval's reports make exactly the interval's rows: a row's date is its window's.
    return transform_surge_history(inputs.silver("page_surges"))
