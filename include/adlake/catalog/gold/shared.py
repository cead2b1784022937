"""What the gold-table modules share: the contract of a module, what its build may read, and the
column logic more than one table uses. :mod:`adlake.catalog.gold` re-exports every public name here.

A gold module is a :class:`Model`: ``TABLE``, ``BUSINESS_RULES``, ``DERIVED_COLUMNS`` and
``build(inputs)``. Its build reads silver only through an :class:`Inputs`, which the gold job
(``spark_apps/lake/gold.py``) creates for one interval of days ``[start, end)``: the modules
import neither the registry (which imports them) nor the attribution contract (which imports the
registry), so the job hands them silver, the attribution tunables and batch attribution.

PySpark is imported inside the functions: the registry imports the gold modules, and Airflow
imports the registry when it parses the DAG files.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from adlake.catalog.expectations import Rule
    from adlake.catalog.types import Table

DAY_MS = 24 * 60 * 60 * 1000
HOUR_MS = 60 * 60 * 1000
# A gold table's grain: the smallest interval its rows can be rebuilt for. An ``hour`` table's
# row is about one instant of one hour (a minute, a window, an hour of the day), so the hourly
# chain rebuilds just its hour; a ``day`` table's row sums a whole day (distinct requests of a
# campaign, a day's reconciliation), so it is rebuilt whole days at a time, by the daily run.
HOUR, DAY = "hour", "day"
GRAINS = (HOUR, DAY)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
    """What a gold module's ``build`` may read, for the interval ``[start, end)`` it rebuilds
    (UTC instants: whole hours for an ``hour`` table, whole days for a ``day`` table).

    ``silver(topic)`` is silver table ``silver_<topic>``'s rows of the interval (by the topic's
    own time, the one its ``event_date`` comes from); ``silver_around(topic, before_ms,
    after_ms)`` its rows whose ``event_time`` lies from ``before_ms`` before ``start`` to
    ``after_ms`` after ``end`` (:func:`around`), for a row of the interval that depends on events
    just outside it; ``silver_from(topic, before_ms)`` its rows from ``before_ms`` before
    ``start`` on, to the newest (pruned by ``event_date``: what came before never costs). A
    silver table no run has created yet reads as empty. ``attribute_batch(requests,
    impressions, callbacks)`` runs the attribution rules in batch over silver rows (the rules
    the operational app streams) and returns ``attributed_events`` records.
    """

    @property
    def start(self) -> datetime: ...

    @property
    def end(self) -> datetime: ...

    @property
    def config(self) -> AttributionWindow: ...

    def silver(self, topic: str) -> DataFrame: ...

    def silver_around(self, topic: str, before_ms: int, after_ms: int) -> DataFrame: ...

    def silver_from(self, topic: str, before_ms: int) -> DataFrame: ...

    def attribute_batch(
        self, requests: DataFrame, impressions: DataFrame, callbacks: DataFrame
    ) -> DataFrame: ...


class Model(Protocol):
    """A gold-table module: its declaration, its grain, its business rules and its build."""

    TABLE: Table
    # HOUR or DAY (see GRAINS); an HOUR table names the instant a row is about (ROW_TIME, a Spark
    # SQL expression of its columns, within the row's event_date), which selects its hours.
    GRAIN: str
    ROW_TIME: str | None
    # Hand-written expectations, after those the quality layer derives from TABLE.
    BUSINESS_RULES: tuple[Rule, ...]
    # Columns computed from each row before validation: (name, Spark SQL expression).
    DERIVED_COLUMNS: tuple[tuple[str, str], ...]

    def build(self, inputs: Inputs) -> DataFrame:
        """The table's rows that the interval's silver makes; the gold job keeps those of the
        interval (:func:`slice_condition`) and replaces exactly them."""
        ...


def instant(value: date | datetime) -> datetime:
    """A UTC instant: a date is its midnight, a naive datetime is taken as UTC.

    >>> instant(date(2026, 11, 21))
    datetime.datetime(2026, 11, 21, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def instant_sql(value: datetime) -> str:
    """A Spark SQL timestamp literal of a UTC instant that no time zone reinterprets: epoch
    microseconds, never wall-clock text or a Python datetime (which PySpark converts through the
    process's local zone, where a DST night's repeated hour is ambiguous).

    >>> instant_sql(datetime(2026, 10, 25, 1, 30, tzinfo=UTC))
    'timestamp_micros(1792891800000000)'
    """
    return f"timestamp_micros({(instant(value) - _EPOCH) // timedelta(microseconds=1)})"


def covering(grain: str, start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The smallest interval of whole ``grain`` units (hours or UTC days) covering ``[start,
    end)``: what a table of that grain rebuilds for it.

    >>> t = lambda h, m=0, day=21: datetime(2026, 11, day, h, m, tzinfo=UTC)
    >>> [x.isoformat() for x in covering(HOUR, t(13, 20), t(14, 5))]
    ['2026-11-21T13:00:00+00:00', '2026-11-21T15:00:00+00:00']
    >>> [x.isoformat() for x in covering(DAY, t(13), t(0, day=22))]
    ['2026-11-21T00:00:00+00:00', '2026-11-22T00:00:00+00:00']
    """
    unit = timedelta(hours=1) if grain == HOUR else timedelta(days=1)
    start, end = instant(start), instant(end)
    first = _EPOCH + (start - _EPOCH) // unit * unit
    after = _EPOCH + -((_EPOCH - end) // unit) * unit
    return first, after


def date_range_sql(start: datetime, end: datetime, column: str = "event_date") -> str:
    """The ``event_date`` partitions that hold the instants ``[start, end)``.

    >>> t = datetime(2026, 11, 21, 13, tzinfo=UTC)
    >>> date_range_sql(t, t + timedelta(hours=1))
    "event_date >= DATE'2026-11-21' AND event_date < DATE'2026-11-22'"
    """
    after = (end - timedelta(microseconds=1)).date() + timedelta(days=1)
    return f"{column} >= DATE'{start.date()}' AND {column} < DATE'{after}'"


def slice_condition(model: Model, start: datetime, end: datetime) -> str:
    """The rows of ``model``'s table in ``[start, end)`` (an interval of whole units of its
    grain, :func:`covering`) as Spark SQL: what a rebuild replaces (Delta's ``replaceWhere``)
    and keeps of its build, and what the quality gate validates. Partitions first, so Delta
    prunes to the interval's dates before it tests a row.

    >>> from types import SimpleNamespace
    >>> hourly = SimpleNamespace(GRAIN=HOUR, ROW_TIME="minute")
    >>> t = datetime(2026, 11, 21, 13, tzinfo=UTC)
    >>> print(slice_condition(hourly, t, t + timedelta(hours=1)))
    event_date >= DATE'2026-11-21' AND event_date < DATE'2026-11-22' AND minute >= timestamp_micros(1795266000000000) AND minute < timestamp_micros(1795269600000000)
    """
    dates = date_range_sql(start, end)
    if model.GRAIN == DAY:
        return dates
    return (
        f"{dates} AND {model.ROW_TIME} >= {instant_sql(start)} "
        f"AND {model.ROW_TIME} < {instant_sql(end)}"
    )


def around(
    df: DataFrame,
    start: datetime,
    end: datetime,
    before_ms: int,
    after_ms: int,
    time_col: str = "event_time",
) -> DataFrame:
    """Rows whose ``time_col`` lies in ``[start - before_ms, end + after_ms)`` (UTC instants).
    The ``event_date`` bounds only let Delta skip the partitions that cannot hold such a row.

    For ``[2026-11-21, 2026-11-22)`` with 5 minutes before and 10 s after: from
    2026-11-20T23:55:00 to 2026-11-22T00:00:10, in partitions 2026-11-20 to 2026-11-22.
    """
    from pyspark.sql import functions as F

    first = instant(start) - timedelta(milliseconds=before_ms)
    after = instant(end) + timedelta(milliseconds=after_ms)
    return df.where(
        F.expr(date_range_sql(first, after))
        & F.expr(f"{time_col} >= {instant_sql(first)} AND {time_col} < {instant_sql(after)}")
    )


def since(df: DataFrame, start: datetime) -> DataFrame:
    """Rows of the ``event_date`` partitions from ``start``'s date on: the newest data, however
    long the history before it."""
    from pyspark.sql import functions as F

    return df.where(F.expr(f"event_date >= DATE'{instant(start).date()}'"))


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
