"""What the gold-table modules share: the contract of a module, what its build may read, and the
column logic more than one table uses. :mod:`adlake.gold` re-exports every public name here.

A gold module is a :class:`Model`: ``TABLE``, ``BUSINESS_RULES``, ``DERIVED_COLUMNS`` and
``build(inputs)``. Its build reads silver only through an :class:`Inputs`, which the gold job
(``spark_apps/lake/gold.py``) creates for one interval of days ``[start, end)``: the modules
import neither the registry (which imports them) nor the attribution contract (which imports the
registry), so the job hands them silver, the attribution tunables and batch attribution.

PySpark is imported inside the functions: the registry imports the gold modules, and Airflow
imports the registry when it parses the DAG files.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from adlake.declarations import Table
    from adlake.quality.expectations import Rule

DAY_MS = 24 * 60 * 60 * 1000


class AttributionWindow(Protocol):
    """The attribution tunables a gold table's rows depend on, in milliseconds (the contract's
    ``AttributionConfig`` is one): a callback belongs to an impression from ``skew_ms`` before it
    to ``window_ms`` after it; the stream holds a request's key at most ``ttl_ms``."""

    @property
    def window_ms(self) -> int: ...

    @property
    def skew_ms(self) -> int: ...

    @property
    def ttl_ms(self) -> int: ...


class Inputs(Protocol):
    """What a gold module's ``build`` may read, for the days ``[start, end)`` it rebuilds.

    ``silver(topic)`` is silver table ``silver_<topic>``'s rows of those days (by
    ``event_date``); ``silver_around(topic, before_ms, after_ms)`` its rows whose ``event_time``
    lies from ``before_ms`` before ``start`` to ``after_ms`` after ``end`` (:func:`around`), for a
    row of the interval that depends on events just outside it; ``silver_whole(topic)`` all of
    it. A silver table no run has created yet reads as empty. ``attribute_batch(requests,
    impressions, callbacks)`` runs the attribution rules in batch over silver rows (the rules
    the operational app streams) and returns ``attributed_events`` records.
    """

    @property
    def start(self) -> date: ...

    @property
    def end(self) -> date: ...

    @property
    def config(self) -> AttributionWindow: ...

    def silver(self, topic: str) -> DataFrame: ...

    def silver_around(self, topic: str, before_ms: int, after_ms: int) -> DataFrame: ...

    def silver_whole(self, topic: str) -> DataFrame: ...

    def attribute_batch(
        self, requests: DataFrame, impressions: DataFrame, callbacks: DataFrame
    ) -> DataFrame: ...


class Model(Protocol):
    """A gold-table module: its declaration, its business rules and its build."""

    TABLE: Table
    # Hand-written expectations, after those the quality layer derives from TABLE.
    BUSINESS_RULES: tuple[Rule, ...]
    # Columns computed from each row before validation: (name, Spark SQL expression).
    DERIVED_COLUMNS: tuple[tuple[str, str], ...]

    def build(self, inputs: Inputs) -> DataFrame:
        """The table's rows of the days ``[inputs.start, inputs.end)``, and no others."""
        ...


def in_interval(df: DataFrame, start: date, end: date) -> DataFrame:
    """The rows of ``df`` whose ``event_date`` is in ``[start, end)``."""
    from pyspark.sql import functions as F

    return df.where((F.col("event_date") >= F.lit(start)) & (F.col("event_date") < F.lit(end)))


def around(
    df: DataFrame,
    start: date,
    end: date,
    before_ms: int,
    after_ms: int,
    time_col: str = "event_time",
) -> DataFrame:
    """Rows whose ``time_col`` lies in ``[start - before_ms, end + after_ms)``, the interval's
    midnights taken in the session time zone (the one silver's ``event_date`` comes from). The
    ``event_date`` bounds only let Delta skip the partitions that cannot hold such a row.

    For ``[2026-11-21, 2026-11-22)`` with 5 minutes before and 10 s after: from
    2026-11-20T23:55:00 to 2026-11-22T00:00:10, in partitions 2026-11-20 to 2026-11-22.
    """
    from pyspark.sql import functions as F

    def shifted(day: date, ms: int) -> Column:
        return F.timestamp_millis(F.unix_millis(F.lit(day).cast("timestamp")) + F.lit(ms))

    first_day = start - timedelta(days=-(-before_ms // DAY_MS))
    after_day = end + timedelta(days=-(-after_ms // DAY_MS))
    return df.where(
        (F.col("event_date") >= F.lit(first_day))
        & (F.col("event_date") < F.lit(after_day))
        & (F.col(time_col) >= shifted(start, -before_ms))
        & (F.col(time_col) < shifted(end, after_ms))
    )


def transform_paired_callbacks(
    impressions: DataFrame, callbacks: DataFrame, config: AttributionWindow
) -> DataFrame:
    """The callbacks that belong to an impression, with its ``campaign_id`` and ``creative_id``.

    A callback belongs to the impression it names when it falls in the attribution window of
    it, the contract's ``in_window``: ``-skew <= callback.event_time - impression.event_time <=
    window``. With the defaults (5 min, 10 s), for an impression at 23:59:55 a click at 00:04:55
    the next day belongs to it, one at 00:04:55.001 belongs to no impression, and so does a
    callback whose impression is not in ``impressions``. ``campaign_delivery`` and
    ``attribution_funnel`` count callbacks by this pairing, the rule the attribution app pairs
    them by.
    """
    from pyspark.sql import functions as F

    shown = impressions.select(
        "impression_id", "campaign_id", "creative_id", F.col("event_time").alias("_impression_time")
    ).distinct()
    lag_ms = F.unix_millis(F.col("event_time")) - F.unix_millis(F.col("_impression_time"))
    return (
        callbacks.join(shown, "impression_id")
        .where(lag_ms.between(-config.skew_ms, config.window_ms))
        .drop("_impression_time")
    )


def rate(numerator: str, denominator: str) -> Column:
    """``numerator / denominator``, null where the denominator is 0 (no rate of nothing)."""
    from pyspark.sql import functions as F

    return F.when(F.col(denominator) > 0, F.col(numerator) / F.col(denominator))
