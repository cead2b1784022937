"""Gold: business tables rebuilt from silver for a data interval, one event date at a time.

Every table is partitioned by ``event_date`` and rebuilt for ``[start, end)`` with Delta's
``replaceWhere``: the dates of the interval are recomputed from all of silver and swapped in one
commit. A rerun, an overlapping interval or an Airflow backfill therefore gives the same table:
no row is appended twice, and a date outside the interval is never touched.

Tables (registry ``TABLES``, layer ``gold``):

* ``campaign_delivery`` — per campaign, creative, date and hour: impressions, clicks, quartiles,
  completes, conversions, click-through and completion rates. A callback counts in the hour of
  its own event time, for the campaign of its impression.
* ``attribution_funnel`` — per campaign and date: filled requests (distinct requests with an
  impression of the campaign), impressions, clicks, conversions; campaign ``*`` is the day's
  total, the only row with requests and a fill rate (a request has no campaign until filled).
* ``page_traffic`` — per page and minute: clicks and distinct users.
* ``surge_history`` — one row per page and surging window: the highest count reported.
* ``attribution_reconciliation`` — per date and record type: the attribution processor run in
  batch over silver requests, impressions and callbacks (the rules the operational
  app streams, :func:`~spark_apps.common.attribution.batch.attribute_batch`), compared with
  the real-time ``attributed_events`` by record id: matched, missing in real time, extra in
  real time.

    .venv/lake/bin/python -m spark_apps.lake.gold --start 2026-11-21 --end 2026-11-22
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import date, datetime
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from spark_apps.lake.tables import ensure_table, read_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ALL_CAMPAIGNS = "*"


def _in_interval(df: DataFrame, start: date, end: date) -> DataFrame:
    from pyspark.sql import functions as F

    return df.where((F.col("event_date") >= F.lit(start)) & (F.col("event_date") < F.lit(end)))


def _callback_counts() -> list:
    from pyspark.sql import functions as F

    def count(event_type: str, name: str):
        return F.count(F.when(F.col("event_type") == event_type, 1)).alias(name)

    # campaign_delivery's columns are the plural of each event type: clicks, first_quartiles...
    return [count(event_type, f"{event_type}s") for event_type in registry.CALLBACK_EVENT_TYPES]


def _rate(numerator: str, denominator: str):
    from pyspark.sql import functions as F

    return F.when(F.col(denominator) > 0, F.col(numerator) / F.col(denominator))


def transform_campaign_delivery(impressions: DataFrame, callbacks: DataFrame) -> DataFrame:
    """Silver impressions and callbacks of the interval (callbacks joined to any impression)."""
    from pyspark.sql import functions as F

    keys = ["campaign_id", "creative_id", "event_date", "hour"]
    imp = (impressions.withColumn("hour", F.hour("event_time"))
           .groupBy(*keys).agg(F.count(F.lit(1)).alias("impressions")))
    campaign_of = impressions.select("impression_id", "campaign_id", "creative_id").distinct()
    cbs = (callbacks.join(campaign_of, "impression_id").withColumn("hour", F.hour("event_time"))
           .groupBy(*keys).agg(*_callback_counts()))
    table = registry.table("campaign_delivery")
    out = imp.join(cbs, keys, "full_outer").fillna(0)
    return (out.withColumn("click_through_rate", _rate("clicks", "impressions"))
            .withColumn("completion_rate", _rate("completes", "impressions"))
            .select(*table.schema.names))


def transform_attribution_funnel(requests: DataFrame, impressions: DataFrame,
                                 callbacks: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    campaign_of = impressions.select("impression_id", "campaign_id").distinct()
    per_campaign = (impressions.groupBy("campaign_id", "event_date")
                    .agg(F.countDistinct("request_id").alias("filled_requests"),
                         F.count(F.lit(1)).alias("impressions")))
    cb = (callbacks.join(campaign_of, "impression_id").groupBy("campaign_id", "event_date")
          .agg(F.count(F.when(F.col("event_type") == registry.CLICK, 1)).alias("clicks"),
               F.count(F.when(F.col("event_type") == registry.CONVERSION, 1)).alias("conversions")))
    campaigns = (per_campaign.join(cb, ["campaign_id", "event_date"], "full_outer").fillna(0)
                 .withColumn("requests", F.lit(None).cast("long"))
                 .withColumn("fill_rate", F.lit(None).cast("double")))
    day_requests = requests.groupBy("event_date").agg(F.count(F.lit(1)).alias("requests"))
    day_fills = impressions.groupBy("event_date").agg(
        F.countDistinct("request_id").alias("filled_requests"),
        F.count(F.lit(1)).alias("impressions"))
    day_cbs = callbacks.groupBy("event_date").agg(
        F.count(F.when(F.col("event_type") == registry.CLICK, 1)).alias("clicks"),
        F.count(F.when(F.col("event_type") == registry.CONVERSION, 1)).alias("conversions"))
    totals = (day_requests.join(day_fills, "event_date", "full_outer")
              .join(day_cbs, "event_date", "full_outer").fillna(0)
              .withColumn("campaign_id", F.lit(ALL_CAMPAIGNS))
              .withColumn("fill_rate", _rate("filled_requests", "requests")))
    names = registry.table("attribution_funnel").schema.names
    return campaigns.select(*names).unionByName(totals.select(*names))


def transform_page_traffic(clicks: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (clicks.withColumn("minute", F.date_trunc("minute", "event_time"))
            .groupBy("page_id", "event_date", "minute")
            .agg(F.count(F.lit(1)).alias("clicks"),
                 F.countDistinct("user_id").alias("distinct_users"))
            .select(*registry.table("page_traffic").schema.names))


def transform_surge_history(surges: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (surges.groupBy("page_id", "event_date", "window_start")
            .agg(F.max("window_end").alias("window_end"),
                 F.max("click_count").alias("click_count"))
            .select(*registry.table("surge_history").schema.names))


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
    dates = (batch.select(*ids, record_date().alias("event_date"))
             .unionByName(realtime.select(*ids, record_date().alias("event_date")))
             .groupBy(*ids).agg(F.min("event_date").alias("event_date")))
    joined = _null_safe_outer_join(b, r, ids)
    joined = _null_safe_outer_join(joined, dates, ids, how="left")
    return (joined.groupBy("event_date", "record_type")
            .agg(F.count(F.when(F.col("_in_batch") & F.col("_in_rt"), 1)).alias("matched"),
                 F.count(F.when(F.col("_in_batch") & F.col("_in_rt").isNull(), 1))
                 .alias("missing_in_realtime"),
                 F.count(F.when(F.col("_in_batch").isNull() & F.col("_in_rt"), 1))
                 .alias("extra_in_realtime"))
            .select(*registry.table("attribution_reconciliation").schema.names))


def _null_safe_outer_join(left: DataFrame, right: DataFrame, ids: list[str],
                          how: str = "full_outer") -> DataFrame:
    """Join on id columns that may be null (a request_closed record has no impression_id)."""
    from pyspark.sql import functions as F

    sentinel = "\u0000"
    lk = left.select("*", *[F.coalesce(F.col(c), F.lit(sentinel)).alias(f"_k_{c}") for c in ids])
    rk = right.select(*[F.coalesce(F.col(c), F.lit(sentinel)).alias(f"_k_{c}") for c in ids],
                      *[c for c in right.columns if c not in ids])
    joined = lk.join(rk, [f"_k_{c}" for c in ids], how)
    restored = [F.when(F.col(f"_k_{c}") != sentinel, F.col(f"_k_{c}")).alias(c) for c in ids]
    others = [c for c in joined.columns if c not in ids and not c.startswith("_k_")]
    return joined.select(*restored, *others)


def _reconciliation(spark: SparkSession, settings: Settings, start: date, end: date
                    ) -> DataFrame:
    from spark_apps.common.attribution.batch import attribute_batch

    def silver(name: str) -> DataFrame:
        ensure_table(spark, settings, registry.table(f"silver_{name}"))
        return _in_interval(read_table(spark, settings, f"silver_{name}"), start, end)

    batch = attribute_batch(silver("ad_requests"), silver("ad_impressions"),
                            silver("ad_callbacks"))
    ensure_table(spark, settings, registry.table("silver_attributed_events"))
    realtime = read_table(spark, settings, "silver_attributed_events")
    out = transform_reconciliation(batch, realtime)
    return _in_interval(out, start, end)


def _builders(spark: SparkSession, settings: Settings, start: date, end: date
              ) -> dict[str, Callable[[], DataFrame]]:
    def silver(name: str, interval: bool = True) -> DataFrame:
        # A silver table no run has created yet reads as empty, not as an error.
        ensure_table(spark, settings, registry.table(f"silver_{name}"))
        df = read_table(spark, settings, f"silver_{name}")
        return _in_interval(df, start, end) if interval else df

    return {
        # Every impression may give its campaign to a callback of the interval; only the
        # interval's own rows are kept.
        "campaign_delivery": lambda: _in_interval(transform_campaign_delivery(
            silver("ad_impressions", interval=False), silver("ad_callbacks")), start, end),
        "attribution_funnel": lambda: transform_attribution_funnel(
            silver("ad_requests"), silver("ad_impressions"), silver("ad_callbacks")),
        "page_traffic": lambda: transform_page_traffic(silver("page_clicks")),
        "surge_history": lambda: transform_surge_history(silver("page_surges")),
        "attribution_reconciliation": lambda: _reconciliation(spark, settings, start, end),
    }


GOLD_TABLES = tuple(t.name for t in registry.TABLES.values() if t.layer == "gold")


def rebuild(spark: SparkSession, settings: Settings, name: str, start: date, end: date) -> int:
    """Replace ``[start, end)`` of gold table ``name``; returns the rows written."""
    table = registry.table(name)
    path = ensure_table(spark, settings, table)
    rows = _builders(spark, settings, start, end)[name]().persist()
    try:
        (rows.write.format("delta").mode("overwrite")
         .option("replaceWhere", f"event_date >= '{start}' AND event_date < '{end}'")
         .save(path))
        return rows.count()
    finally:
        rows.unpersist()


def _date(text: str) -> date:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_apps.lake.gold", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("--start", required=True, type=_date,
                        help="interval start (inclusive); a date or ISO timestamp")
    parser.add_argument("--end", required=True, type=_date,
                        help="interval end (exclusive); a date or ISO timestamp")
    parser.add_argument("--tables", default=",".join(GOLD_TABLES),
                        help="comma-separated gold tables to rebuild")
    args = parser.parse_args(argv)
    if args.end <= args.start:
        parser.error(f"--end ({args.end}) must be after --start ({args.start})")
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
        print(f"[gold] {name} [{args.start}, {args.end}): {rows} rows -> "
              f"{table_path(settings, name)} in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
