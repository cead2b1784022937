"""Gold: business tables rebuilt from silver for a data interval, one event date at a time.

Every table is partitioned by ``event_date`` and rebuilt for ``[start, end)`` with Delta's
``replaceWhere``: the dates of the interval are recomputed from silver and swapped in one commit.
A rerun, an overlapping interval or an Airflow backfill therefore gives the same table: no row is
appended twice, and a date outside the interval is never touched. An interval is widened to the
whole days it touches (:func:`days_of`): the hourly lake DAG's run of 13:00-14:00 rebuilds its
day, as far as silver holds it.

**A day's partition is a function of silver alone**, never of the interval that recomputed it:
``[D, D+1)``, a week around ``D`` and a backfill over a year write the same rows for ``D``. Rows of
one day can depend on events of another (a click just after midnight on an impression just
before it), so each table reads what its rows need *around* the interval, a margin taken from
the attribution contract (:class:`~spark_apps.common.attribution.contract.AttributionConfig`),
and keeps only the interval's own dates. Per table, what the partition of date ``D`` is made of:

* ``campaign_delivery`` — per campaign, creative, date and hour: impressions, clicks, quartiles,
  completes, conversions, click-through and completion rates. The impressions of ``D``, counted
  in their hour; the callbacks of ``D``, counted in the hour of their own event time, for the
  campaign of their impression **if the callback falls in the attribution window of it**
  (``-skew <= callback - impression <= window``, the contract's ``in_window``, the rule the
  attribution app pairs them by); a callback outside it counts for no campaign. Impressions are
  read from ``window`` before the interval to ``skew`` after it.
* ``attribution_funnel`` — per campaign and date: filled requests (distinct requests with an
  impression of the campaign), impressions, clicks, conversions; campaign ``*`` is the day's
  total, the only row with requests and a fill rate (a request has no campaign until filled).
  Requests, impressions and callbacks of ``D`` by their own event time; the ``*`` row counts
  every callback of ``D``, a campaign's row those paired with its impressions as in
  ``campaign_delivery`` (same margins).
* ``page_traffic`` — per page and minute: clicks and distinct users. The clicks of ``D``; no
  margin (a minute never crosses midnight).
* ``surge_history`` — one row per page and surging window: the highest count reported. The
  reports of windows starting on ``D`` (silver dates a surge by its window start); no margin.
* ``attribution_reconciliation`` — per date and record type: the attribution processor run in
  batch over silver requests, impressions and callbacks (the rules the operational app streams,
  :func:`~spark_apps.common.attribution.batch.attribute_batch`), compared with the real-time
  ``attributed_events`` by record id: matched, missing in real time, extra in real time. A record
  is dated by :func:`record_date` (its request's date, else its impression's, else its
  callback's), the earlier side's if batch and real time disagree. Batch attribution runs over
  the events from :func:`attribution_margin_ms` before the interval to as much after it, so a
  request of 23:59 on ``D`` keeps its impressions and callbacks of ``D+1`` and an impression of
  00:01 on ``D`` its request of the day before; real-time records are read whole. The partition
  of ``D`` is exact (the same as batch attribution over all of silver would give) for every
  request whose events lie within the margin of each other: the margin is the key lifetime bound
  (``ttl``, at least two windows plus skews), past which the stream itself no longer holds a
  request's key together.

"Function of silver" means of silver as it is when the day is rebuilt: an event that reaches
silver later (a late event, or the next day's first minutes that a day's rows read within their
margin) shows in the day's rows once that day is rebuilt again, by a backfill over it.

    .venv/lake/bin/python -m spark_apps.lake.gold --start 2026-11-21 --end 2026-11-22
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from spark_apps.lake.tables import ensure_table, read_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_apps.common.attribution.contract import AttributionConfig

ALL_CAMPAIGNS = "*"
_DAY_MS = 24 * 60 * 60 * 1000


def _attribution_config(config: AttributionConfig | None = None) -> AttributionConfig:
    from spark_apps.common.attribution.contract import AttributionConfig

    return config or AttributionConfig()


def attribution_margin_ms(config: AttributionConfig | None = None) -> int:
    """How far before and after the interval batch attribution reads events: the key lifetime
    bound ``ttl`` (the stream holds no request's key longer), and never less than the rules'
    own reach, a request → impression → callback chain (two windows plus two skews).

    >>> attribution_margin_ms()  # the contract's defaults: ttl 1 h, window 5 min, skew 10 s
    3600000
    """
    config = _attribution_config(config)
    return max(config.ttl_ms, 2 * (config.window_ms + config.skew_ms))


def _in_interval(df: DataFrame, start: date, end: date) -> DataFrame:
    from pyspark.sql import functions as F

    return df.where((F.col("event_date") >= F.lit(start)) & (F.col("event_date") < F.lit(end)))


def _around(
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

    def shifted(day: date, ms: int):
        return F.timestamp_millis(F.unix_millis(F.lit(day).cast("timestamp")) + F.lit(ms))

    first_day = start - timedelta(days=-(-before_ms // _DAY_MS))
    after_day = end + timedelta(days=-(-after_ms // _DAY_MS))
    return df.where(
        (F.col("event_date") >= F.lit(first_day))
        & (F.col("event_date") < F.lit(after_day))
        & (F.col(time_col) >= shifted(start, -before_ms))
        & (F.col(time_col) < shifted(end, after_ms))
    )


def transform_paired_callbacks(
    impressions: DataFrame, callbacks: DataFrame, config: AttributionConfig | None = None
) -> DataFrame:
    """The callbacks that belong to an impression, with its ``campaign_id`` and ``creative_id``.

    A callback belongs to the impression it names when it falls in the attribution window of
    it, the contract's ``in_window``: ``-skew <= callback.event_time - impression.event_time <=
    window``. With the defaults (5 min, 10 s), for an impression at 23:59:55 a click at 00:04:55
    the next day belongs to it, one at 00:04:55.001 belongs to no impression, and so does a
    callback whose impression is not in ``impressions``.
    """
    from pyspark.sql import functions as F

    config = _attribution_config(config)
    shown = impressions.select(
        "impression_id", "campaign_id", "creative_id", F.col("event_time").alias("_impression_time")
    ).distinct()
    lag_ms = F.unix_millis(F.col("event_time")) - F.unix_millis(F.col("_impression_time"))
    return (
        callbacks.join(shown, "impression_id")
        .where(lag_ms.between(-config.skew_ms, config.window_ms))
        .drop("_impression_time")
    )


def _callback_counts() -> list:
    from pyspark.sql import functions as F

    def count(event_type: str, name: str):
        return F.count(F.when(F.col("event_type") == event_type, 1)).alias(name)

    # campaign_delivery's columns are the plural of each event type: clicks, first_quartiles...
    return [count(event_type, f"{event_type}s") for event_type in registry.CALLBACK_EVENT_TYPES]


def _rate(numerator: str, denominator: str):
    from pyspark.sql import functions as F

    return F.when(F.col(denominator) > 0, F.col(numerator) / F.col(denominator))


def transform_campaign_delivery(
    impressions: DataFrame, callbacks: DataFrame, config: AttributionConfig | None = None
) -> DataFrame:
    """Silver impressions and callbacks → rows per campaign, creative, date and hour; a callback
    counts in its own hour for the impression it belongs to (:func:`transform_paired_callbacks`).
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
    table = registry.table("campaign_delivery")
    out = imp.join(cbs, keys, "full_outer").fillna(0)
    return (
        out.withColumn("click_through_rate", _rate("clicks", "impressions"))
        .withColumn("completion_rate", _rate("completes", "impressions"))
        .select(*table.schema.names)
    )


def transform_attribution_funnel(
    requests: DataFrame,
    impressions: DataFrame,
    callbacks: DataFrame,
    config: AttributionConfig | None = None,
) -> DataFrame:
    """Silver requests, impressions and callbacks → rows per campaign and date, each event on
    its own date; a campaign's clicks and conversions are the callbacks that belong to its
    impressions (:func:`transform_paired_callbacks`), the day's total (``*``) counts them all."""
    from pyspark.sql import functions as F

    per_campaign = impressions.groupBy("campaign_id", "event_date").agg(
        F.countDistinct("request_id").alias("filled_requests"),
        F.count(F.lit(1)).alias("impressions"),
    )
    cb = (
        transform_paired_callbacks(impressions, callbacks, config)
        .groupBy("campaign_id", "event_date")
        .agg(
            F.count(F.when(F.col("event_type") == registry.CLICK, 1)).alias("clicks"),
            F.count(F.when(F.col("event_type") == registry.CONVERSION, 1)).alias("conversions"),
        )
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
    day_cbs = callbacks.groupBy("event_date").agg(
        F.count(F.when(F.col("event_type") == registry.CLICK, 1)).alias("clicks"),
        F.count(F.when(F.col("event_type") == registry.CONVERSION, 1)).alias("conversions"),
    )
    totals = (
        day_requests.join(day_fills, "event_date", "full_outer")
        .join(day_cbs, "event_date", "full_outer")
        .fillna(0)
        .withColumn("campaign_id", F.lit(ALL_CAMPAIGNS))
        .withColumn("fill_rate", _rate("filled_requests", "requests"))
    )
    names = registry.table("attribution_funnel").schema.names
    return campaigns.select(*names).unionByName(totals.select(*names))


def transform_page_traffic(clicks: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        clicks.withColumn("minute", F.date_trunc("minute", "event_time"))
        .groupBy("page_id", "event_date", "minute")
        .agg(F.count(F.lit(1)).alias("clicks"), F.countDistinct("user_id").alias("distinct_users"))
        .select(*registry.table("page_traffic").schema.names)
    )


def transform_surge_history(surges: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        surges.groupBy("page_id", "event_date", "window_start")
        .agg(F.max("window_end").alias("window_end"), F.max("click_count").alias("click_count"))
        .select(*registry.table("surge_history").schema.names)
    )


def record_date():
    """The date a record is about: its request's, else its impression's, else its callback's."""
    from pyspark.sql import functions as F

    return F.to_date(F.coalesce("request_time", "impression_time", "callback_time"))


def transform_reconciliation(batch: DataFrame, realtime: DataFrame) -> DataFrame:
    """Compare batch-attributed records with real-time ones by record id, per date and type."""
    from pyspark.sql import functions as F

    ids = list(registry.topic("attributed_events").id_fields)
    b = batch.select(*ids).distinct().withColumn("_in_batch", F.lit(True))
    r = realtime.select(*ids).distinct().withColumn("_in_rt", F.lit(True))
    dates = (
        batch.select(*ids, record_date().alias("event_date"))
        .unionByName(realtime.select(*ids, record_date().alias("event_date")))
        .groupBy(*ids)
        .agg(F.min("event_date").alias("event_date"))
    )
    joined = _null_safe_outer_join(b, r, ids)
    joined = _null_safe_outer_join(joined, dates, ids, how="left")
    return (
        joined.groupBy("event_date", "record_type")
        .agg(
            F.count(F.when(F.col("_in_batch") & F.col("_in_rt"), 1)).alias("matched"),
            F.count(F.when(F.col("_in_batch") & F.col("_in_rt").isNull(), 1)).alias(
                "missing_in_realtime"
            ),
            F.count(F.when(F.col("_in_batch").isNull() & F.col("_in_rt"), 1)).alias(
                "extra_in_realtime"
            ),
        )
        .select(*registry.table("attribution_reconciliation").schema.names)
    )


def _null_safe_outer_join(
    left: DataFrame, right: DataFrame, ids: list[str], how: str = "full_outer"
) -> DataFrame:
    """Join on id columns that may be null (a request_closed record has no impression_id)."""
    from pyspark.sql import functions as F

    sentinel = "\u0000"
    lk = left.select("*", *[F.coalesce(F.col(c), F.lit(sentinel)).alias(f"_k_{c}") for c in ids])
    rk = right.select(
        *[F.coalesce(F.col(c), F.lit(sentinel)).alias(f"_k_{c}") for c in ids],
        *[c for c in right.columns if c not in ids],
    )
    joined = lk.join(rk, [f"_k_{c}" for c in ids], how)
    restored = [F.when(F.col(f"_k_{c}") != sentinel, F.col(f"_k_{c}")).alias(c) for c in ids]
    others = [c for c in joined.columns if c not in ids and not c.startswith("_k_")]
    return joined.select(*restored, *others)


def _silver(spark: SparkSession, settings: Settings, topic: str) -> DataFrame:
    # A silver table no run has created yet reads as empty, not as an error.
    ensure_table(spark, settings, registry.table(f"silver_{topic}"))
    return read_table(spark, settings, f"silver_{topic}")


def _reconciliation(spark: SparkSession, settings: Settings, start: date, end: date) -> DataFrame:
    from spark_apps.common.attribution.batch import attribute_batch

    margin = attribution_margin_ms()

    def events(topic: str) -> DataFrame:
        return _around(_silver(spark, settings, topic), start, end, margin, margin)

    batch = attribute_batch(events("ad_requests"), events("ad_impressions"), events("ad_callbacks"))
    # Whole: a record's date is the earlier of its two sides', and a real-time record reaches
    # Kafka (silver's date for it) any time after its events.
    realtime = _silver(spark, settings, "attributed_events")
    return _in_interval(transform_reconciliation(batch, realtime), start, end)


def _builders(
    spark: SparkSession, settings: Settings, start: date, end: date
) -> dict[str, Callable[[], DataFrame]]:
    config = _attribution_config()

    def of_interval(topic: str) -> DataFrame:
        return _in_interval(_silver(spark, settings, topic), start, end)

    def impressions() -> DataFrame:
        # Every impression a callback of the interval can belong to: from one window before
        # the interval (a click after midnight on an impression before it) to one skew after.
        return _around(
            _silver(spark, settings, "ad_impressions"), start, end, config.window_ms, config.skew_ms
        )

    return {
        "campaign_delivery": lambda: _in_interval(
            transform_campaign_delivery(impressions(), of_interval("ad_callbacks"), config),
            start,
            end,
        ),
        "attribution_funnel": lambda: _in_interval(
            transform_attribution_funnel(
                of_interval("ad_requests"), impressions(), of_interval("ad_callbacks"), config
            ),
            start,
            end,
        ),
        "page_traffic": lambda: transform_page_traffic(of_interval("page_clicks")),
        "surge_history": lambda: transform_surge_history(of_interval("page_surges")),
        "attribution_reconciliation": lambda: _reconciliation(spark, settings, start, end),
    }


GOLD_TABLES = tuple(t.name for t in registry.TABLES.values() if t.layer == "gold")


def rebuild(spark: SparkSession, settings: Settings, name: str, start: date, end: date) -> int:
    """Replace ``[start, end)`` of gold table ``name``; returns the rows written.

    Two writers of one table at once (an hourly run and an overlapping backfill, or a retried
    task beside its first try) are resolved by Delta's optimistic concurrency: the first commit
    wins and the other's is rejected. The loser is retried (bounded, logged): gold is a pure
    function of silver, so the retry recomputes the same dates and replaces them again, and the
    table ends as a serial run leaves it. A damaged Delta log or a full disk fails with the
    typed error of :mod:`spark_apps.lake.errors`.
    """
    from spark_apps.lake.errors import diagnosed, retry_on_conflict

    table = registry.table(name)
    path = table_path(settings, table)
    sources = [settings.table_path(t) for t in table.sources]
    with diagnosed("gold", settings.runtime_dir, tables=[settings.table_path(name), *sources]):
        return retry_on_conflict(
            f"gold {name}", path, lambda: _replace(spark, settings, table, start, end)
        )


def _replace(
    spark: SparkSession, settings: Settings, table: registry.Table, start: date, end: date
) -> int:
    name = table.name
    path = ensure_table(spark, settings, table)
    rows = _builders(spark, settings, start, end)[name]().persist()
    try:
        (
            rows.write.format("delta")
            .mode("overwrite")
            .option("replaceWhere", f"event_date >= '{start}' AND event_date < '{end}'")
            .save(path)
        )
        return rows.count()
    finally:
        rows.unpersist()


def _instant(text: str) -> datetime:
    """A date (its midnight) or an ISO timestamp, in UTC (the session's time zone)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def days_of(start: datetime, end: datetime) -> tuple[date, date]:
    """The dates ``[first, after)`` an interval ``[start, end)`` touches: gold rebuilds whole
    days, so an hour's run rebuilds its day (so far) and a day's run that day.

    >>> days_of(datetime(2026, 11, 21, 13), datetime(2026, 11, 21, 14))
    (datetime.date(2026, 11, 21), datetime.date(2026, 11, 22))
    >>> days_of(datetime(2026, 11, 21, 23), datetime(2026, 11, 22))
    (datetime.date(2026, 11, 21), datetime.date(2026, 11, 22))
    """
    midnight = end.time() == datetime.min.time()
    return start.date(), end.date() if midnight else end.date() + timedelta(days=1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Arguments, with ``start``/``end`` the interval's dates (see :func:`days_of`)."""
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.gold", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--start",
        required=True,
        type=_instant,
        help="interval start (inclusive), a date or ISO timestamp: its day is the first rebuilt",
    )
    parser.add_argument(
        "--end",
        required=True,
        type=_instant,
        help="interval end (exclusive), a date or ISO timestamp: its day is the "
        "last rebuilt, unless it is a midnight",
    )
    parser.add_argument(
        "--tables", default=",".join(GOLD_TABLES), help="comma-separated gold tables to rebuild"
    )
    args = parser.parse_args(argv)
    if args.end <= args.start:
        parser.error(
            f"--end ({args.end.isoformat()}) must be after --start ({args.start.isoformat()})"
        )
    args.start, args.end = days_of(args.start, args.end)
    for name in args.tables.split(","):
        if name not in GOLD_TABLES:
            parser.error(f"unknown gold table {name!r}; gold tables: {', '.join(GOLD_TABLES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    spark = get_session("lake", "gold", settings)
    for name in args.tables.split(","):
        started = time.monotonic()
        rows = rebuild(spark, settings, name, args.start, args.end)
        print(
            f"[gold] {name} [{args.start}, {args.end}): {rows} rows -> "
            f"{table_path(settings, name)} in {time.monotonic() - started:.1f}s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
