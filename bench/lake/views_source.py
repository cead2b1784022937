"""The views benchmark's source (:mod:`bench.lake.views`, its suite :mod:`bench.lake.views_suite`):
a synthetic, seeded table shaped like ``silver_ad_impressions`` (the registry's schema, partitioned
by ``event_date``, Change Data Feed on), the view over it shaped like ``campaign_daily_totals``,
and the changes made to the source between two refreshes (inserts, updates, deletes).

Every generated row is a pure function of its id and the seed (:func:`synthetic_rows`), and the
updates and deletes pick their rows by a hash of the id (:func:`apply_changes`).
"""

from __future__ import annotations

import dataclasses

from adlake import registry
from spark_apps.lake import views

SOURCE = dataclasses.replace(registry.table("silver_ad_impressions"), name="bench_ad_impressions")
BASE_DATE = "2026-10-01"
# Shares of the changed rows.
INSERTS, UPDATES, DELETES = 0.5, 0.3, 0.2


def bench_view(aggregates: str) -> registry.View:
    """The benchmark's view: the registry's ``campaign_daily_totals`` over :data:`SOURCE`, with
    every aggregate (``all``) or only those that are not in ``views.NON_DECOMPOSABLE``
    (``decomposable``)."""
    view = dataclasses.replace(
        registry.view("campaign_daily_totals"),
        name=f"bench_campaign_daily_totals_{aggregates}",
        source=SOURCE.name,
    )
    if aggregates == "decomposable":
        view = dataclasses.replace(
            view,
            aggregates=tuple(a for a in view.aggregates if a.kind not in views.NON_DECOMPOSABLE),
        )
    return view


def synthetic_rows(
    spark,
    first_id: int,
    n: int,
    *,
    seed: int,
    campaigns: int,
    days: int,
    day_offset: int = 0,
    partitions: int = 8,
):
    """``n`` impressions with ids from ``first_id``, a pure function of (id, seed): campaign,
    device, price and time derive from hashes of the id. Days are ``day_offset ..
    day_offset + days - 1`` after ``BASE_DATE``."""
    from pyspark.sql import functions as F

    def h(salt: int, modulo: int):
        return F.pmod(F.xxhash64(F.col("id"), F.lit(seed * 1000 + salt)), F.lit(modulo))

    event_time = F.to_timestamp(F.lit(BASE_DATE)) + F.make_dt_interval(
        h(3, days) + day_offset, F.lit(0), F.lit(0), h(4, 86400)
    )
    cols = {
        "impression_id": F.concat(F.lit("i"), F.col("id").cast("string")),
        "request_id": F.concat(F.lit("r"), F.col("id").cast("string")),
        "campaign_id": F.concat(F.lit("c"), h(1, campaigns).cast("string")),
        "creative_id": F.concat(F.lit("cr"), h(2, 5).cast("string")),
        "event_time": event_time,
        "device_id": F.concat(F.lit("d"), h(5, max(1, (first_id + n) // 10)).cast("string")),
        "win_price": h(6, 10_000) / F.lit(1000.0),
        "topic": F.lit("ad_impressions"),
        "partition": F.lit(0).cast("int"),
        "offset": F.col("id"),
        "kafka_timestamp": event_time,
        "event_date": F.to_date(event_time),
    }
    names = SOURCE.schema.names
    return spark.range(first_id, first_id + n, numPartitions=partitions).select(
        *(
            cols[c].cast(t).alias(c)
            for c, t in zip(names, [f.dataType for f in SOURCE.schema.spark().fields])
        )
    )


def first_changed_day(days: int, spread: str) -> int:
    """The first day (after ``BASE_DATE``) the changes touch: the last two days for ``recent``,
    every day for ``uniform``."""
    return days - 2 if spread == "recent" else 0


def apply_changes(
    spark,
    path: str,
    *,
    rows: int,
    fraction: float,
    spread: str,
    seed: int,
    campaigns: int,
    days: int,
    first_new_id: int,
) -> dict[str, int]:
    """Insert (ids from ``first_new_id``), update and delete about ``fraction`` of the ``rows``
    original rows in three commits; returns the numbers of rows each commit changed."""
    changed = int(rows * fraction)
    recent = spread == "recent"
    first_day = first_changed_day(days, spread)
    inserts = synthetic_rows(
        spark,
        first_new_id,
        int(changed * INSERTS),
        seed=seed + 1,
        campaigns=campaigns,
        days=days - first_day,
        day_offset=first_day,
    )
    inserts.write.format("delta").mode("append").save(path)
    # Updates and deletes pick disjoint slices of a hash of the row id, within the days in scope.
    in_scope = rows * (days - first_day) / days
    p_update, p_delete = changed * UPDATES / in_scope, changed * DELETES / in_scope
    scope = (
        f"event_date >= date_add(date'{BASE_DATE}', {first_day}) AND offset < {rows}"
        if recent
        else f"offset < {rows}"
    )
    slice_ = f"pmod(xxhash64(offset, {seed}), 1000000)"
    table = f"delta.`{path}`"
    updated = spark.sql(
        f"UPDATE {table} SET win_price = win_price + 0.5 WHERE {scope} AND "
        f"{slice_} < {int(p_update * 1e6)}"
    ).first()[0]
    deleted = spark.sql(
        f"DELETE FROM {table} WHERE {scope} AND {slice_} >= "
        f"{int(p_update * 1e6)} AND {slice_} < "
        f"{int((p_update + p_delete) * 1e6)}"
    ).first()[0]
    return {"inserted": int(changed * INSERTS), "updated": updated, "deleted": deleted}
