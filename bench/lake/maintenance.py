"""Benchmark (not a test): what 200 hourly runs leave on disk, and what table maintenance gives
back. Printed, and written as ``maintenance.json``.

In a scratch runtime and one warm Spark session, ``--hours`` (default 200) hourly runs of the
lake's writes on page clicks, hour after hour, as the hourly chain and the view DAG make them: the
hour's clicks appended to ``silver_page_clicks`` (synthetic, :mod:`bench.lake.synthetic_silver`'s
generator, ``--rows-per-day``), gold's ``page_traffic`` rebuilt over the hour (its
``replaceWhere``) and, after a day's last hour, over the day (``lake_daily``), and the view
``page_clicks_hourly`` refreshed from silver's change feed (``MERGE``). Then, measured after the
first hour, after the last without maintenance, and after one ``lake_maintenance`` run
(``spark_apps.lake.maintenance.run``, every table written):

* files per gold day-partition (``page_traffic``: mean and max);
* bytes on disk against the live data, every table written together;
* a gold read (``page_traffic`` aggregated over every day) and a view refresh (one more hour),
  each the median of ``--repeats`` runs.

The simulated hours pass in minutes, so every replaced file is younger than any real retention:
the maintenance run takes retention 0, with Delta's own minimum lowered on these tables (what
VACUUM removes after 7 days in a deployment, it removes here at once).

Goals: after maintenance at most 4 files per gold day-partition, bytes at most 1.5× the live
data, and the read and the refresh no slower than after the first hour.

What it writes is :class:`~bench.lake.maintenance_report.Maintenance`, the type the report reads.

    .venv/lake/bin/python -m bench.lake.maintenance --out-dir .runtime/reports/bench
    .venv/lake/bin/python -m bench.lake.maintenance --hours 24 --out-dir /tmp/m
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import cores, load_average
from bench.lake import synthetic_silver
from bench.lake.maintenance_report import (
    Clustering,
    Disk,
    GoldFiles,
    Maintenance,
    MaintenanceState,
    PointRead,
    TableMaintenance,
    Zordered,
)
from bench.report_kit import StatedGoal

VIEW = registry.view("page_clicks_hourly")
SOURCE, GOLD = VIEW.source, "page_traffic"
TABLES = (SOURCE, GOLD, VIEW.name)
GOAL_FILES, GOAL_BYTES_RATIO = 4, 1.5
HOUR = timedelta(hours=1)


def gold_partitions(spark, settings: Settings) -> GoldFiles:
    """Files per day-partition of the gold table (its latest version): mean, max, partitions."""
    from collections import Counter

    from spark_apps.lake.delta_log import log_state
    from spark_apps.lake.tables import table_path

    files = log_state(table_path(settings, GOLD), with_files=True).files or []
    counts = list(Counter(json.dumps(f["partitionValues"], sort_keys=True) for f in files).values())
    return GoldFiles(
        partitions=len(counts),
        mean=round(statistics.fmean(counts), 2) if counts else 0.0,
        max=max(counts, default=0),
    )


def disk(spark, settings: Settings) -> Disk:
    """Bytes of the written tables: live (latest versions) and on disk (every data file)."""
    from spark_apps.lake import maintenance
    from spark_apps.lake.tables import table_path

    live = on_disk = files = 0
    for name in TABLES:
        path = table_path(settings, name)
        live += maintenance.live(spark, path)[1]
        n, size = maintenance.disk_usage(Path(path))
        files, on_disk = files + n, on_disk + size
    return Disk(
        live_bytes=live,
        disk_bytes=on_disk,
        disk_files=files,
        ratio=round(on_disk / live, 2) if live else None,
    )


def median_s(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.monotonic()
        action()
        times.append(time.monotonic() - started)
    return round(statistics.median(times), 3)


class Simulation:
    """The hourly writes of the module docstring, on ``settings``' tables."""

    def __init__(self, spark, settings: Settings, clicks, first_hour: datetime) -> None:
        from spark_apps.lake.tables import ensure_table

        self.spark, self.settings, self.clicks = spark, settings, clicks
        self.next_hour = first_hour
        self.source = ensure_table(spark, settings, registry.table(SOURCE))

    def hour(self) -> None:
        from spark_apps.lake import gold, views

        start, end = self._append_hour()
        gold.rebuild(self.spark, self.settings, GOLD, start, end)
        if end.hour == 0:  # lake_daily: the day rebuilt once more, replacing its hours' files
            gold.rebuild(self.spark, self.settings, GOLD, end - 24 * HOUR, end)
        views.refresh_view(self.spark, self.settings, VIEW)

    def measure(self, repeats: int) -> MaintenanceState:
        """The figures of the module docstring; the view refresh's repeats each add an hour."""
        from pyspark.sql import functions as F

        from spark_apps.lake import views
        from spark_apps.lake.tables import read_table

        def read() -> object:
            return (
                read_table(self.spark, self.settings, GOLD)
                .groupBy("event_date")
                .agg(F.sum("clicks"))
                .collect()
            )

        def refresh() -> object:
            # The hour's writes before it (untimed) would skew nothing: only the refresh counts.
            return views.refresh_view(self.spark, self.settings, VIEW)

        read_s = median_s(read, repeats)
        refresh_times = []
        for _ in range(repeats):
            self._append_hour()
            refresh_times.append(median_s(refresh, 1))
        return MaintenanceState(
            gold_files=gold_partitions(self.spark, self.settings),
            disk=disk(self.spark, self.settings),
            gold_read_s=read_s,
            view_refresh_s=round(statistics.median(refresh_times), 3),
            load_average=load_average(),
        )

    def _append_hour(self) -> tuple[datetime, datetime]:
        """The next hour's clicks appended to silver (one commit); the hour."""
        from pyspark.sql import functions as F

        from adlake.catalog import gold as gold_models

        start, end = self.next_hour, self.next_hour + HOUR
        self.clicks.where(
            (F.col("event_time") >= F.expr(gold_models.instant_sql(start)))
            & (F.col("event_time") < F.expr(gold_models.instant_sql(end)))
        ).write.format("delta").mode("append").save(self.source)
        self.next_hour = end
        return start, end


def clustering(spark, settings: Settings, repeats: int, files_per_day: int = 8) -> Clustering:
    """Whether clustering gold on its key pays: a read of one page over every day (the key's
    point read), the files it must open (those whose ``page_id`` min/max stats admit the page:
    Delta's data skipping) and its time, on gold as maintenance leaves it (one file a day), then
    with each day rewritten into ``files_per_day`` files as a day too big for one file is
    (unclustered: rows spread at random), then after ``OPTIMIZE … ZORDER BY (page_id)`` with
    files of that size. Gold's data is unchanged throughout (every rewrite is ``dataChange``
    false or replaces a day by itself)."""
    from pyspark.sql import functions as F

    from spark_apps.lake import maintenance
    from spark_apps.lake.delta_log import log_state
    from spark_apps.lake.tables import read_table, table_path

    path = table_path(settings, GOLD)
    key = registry.table(GOLD).keys[0]
    page = read_table(spark, settings, GOLD).groupBy(key).count().orderBy("count").first()[key]

    def measure() -> PointRead:
        files = log_state(path, with_files=True).files or []
        stats = [json.loads(f["stats"] or "{}") for f in files]
        opened = sum(
            1
            for s in stats
            if s.get("minValues", {}).get(key, page)
            <= page
            <= s.get("maxValues", {}).get(key, page)
        )

        def read() -> object:
            return read_table(spark, settings, GOLD).where(F.col(key) == page).count()

        return PointRead(files=len(files), files_opened=opened, read_s=median_s(read, repeats))

    one_file = measure()
    days = gold_partitions(spark, settings).partitions
    day_bytes = maintenance.live(spark, path)[1] // max(days, 1)
    bucket = (F.rand(7) * files_per_day).cast("int")  # a day's rows spread over its files
    (
        read_table(spark, settings, GOLD)
        .repartition(files_per_day * days, "event_date", bucket)
        .write.format("delta")
        .mode("overwrite")
        .option("dataChange", "false")
        .partitionBy(*registry.table(GOLD).partition_by)
        .save(path)
    )
    spread = measure()
    target = max(day_bytes // files_per_day, 1024)
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
    started = time.monotonic()
    try:
        spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY ({key})").collect()
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    zorder_s = round(time.monotonic() - started, 1)
    zordered = measure()
    return Clustering(
        key=key,
        page=page,
        files_per_day=files_per_day,
        max_file_bytes=target,
        one_file_a_day=one_file,
        spread=spread,
        zordered=Zordered(**asdict(zordered), optimize_s=zorder_s),
    )


def retention(spark, settings: Settings, interval: str) -> None:
    """Delta's own minimum retention (``delta.deletedFileRetentionDuration``) on the tables."""
    for name in TABLES:
        spark.sql(
            f"ALTER TABLE delta.`{settings.table_path(name)}` SET TBLPROPERTIES "
            f"('delta.deletedFileRetentionDuration' = '{interval}')"
        )


def goals(first: MaintenanceState, after: MaintenanceState) -> list[StatedGoal]:
    files, ratio = after.gold_files.max, after.disk.ratio
    return [
        StatedGoal(
            goal="files per gold day-partition after maintenance",
            target=f"<= {GOAL_FILES}",
            measured=f"max {files}, mean {after.gold_files.mean}",
            met=files <= GOAL_FILES,
            bound="OPTIMIZE bin-packs a day's files into one",
        ),
        StatedGoal(
            goal="bytes on disk over live bytes after maintenance",
            target=f"<= {GOAL_BYTES_RATIO}x",
            measured=f"{ratio}x",
            met=ratio is not None and ratio <= GOAL_BYTES_RATIO,
            bound="VACUUM at retention 0 leaves the latest version's files",
        ),
        StatedGoal(
            goal="gold read and view refresh after maintenance vs after the first hour",
            target="no slower",
            measured=f"read {after.gold_read_s} s vs {first.gold_read_s} s; refresh "
            f"{after.view_refresh_s} s vs {first.view_refresh_s} s",
            met=after.gold_read_s <= first.gold_read_s * 1.1
            and after.view_refresh_s <= first.view_refresh_s * 1.1,
            bound="more days to read than after the first hour (within 10% counts as met)",
        ),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake.maintenance", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--hours", type=int, default=200, help="hourly runs simulated")
    parser.add_argument(
        "--rows-per-day", type=int, default=100_000, help="silver rows a day (all topics)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each timed read")
    parser.add_argument("--seed", type=int, default=7, help="of the generated clicks")
    parser.add_argument("--work-dir", default=None, help="scratch runtime (unset: a new one)")
    parser.add_argument("--out-dir", default=None, help="where maintenance.json goes")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.spark_session import get_session
    from spark_apps.lake import maintenance

    args = parse_args(argv)
    base = load_settings()
    began = time.monotonic()
    say = harness.progress("maintenance")

    work = Path(args.work_dir) if args.work_dir else harness.work_dir("maintenance")
    settings = base.with_overrides(runtime_dir=work, lake_retention_hours=0)
    spark = get_session(
        "lake", "maintenance-benchmark", settings.with_overrides(lake_engine="local")
    )
    days = args.hours // 24 + 2
    last_day = date.fromisoformat(synthetic_silver.LAST_DAY)
    first_hour = datetime.combine(
        last_day - timedelta(days=days - 1), datetime.min.time(), tzinfo=UTC
    )
    plan = synthetic_silver.plan(args.rows_per_day)
    clicks = synthetic_silver.generate(
        spark, "page_clicks", (0, days), plan, last_day, args.seed, 1
    )
    clicks = clicks.localCheckpoint()
    say(f"scratch runtime {work}; {days} days of clicks ({plan['clicks']:,} a day)")
    sim = Simulation(spark, settings, clicks, first_hour)
    sim.hour()
    first = sim.measure(args.repeats)
    say(f"after the first hour: {asdict(first)}")
    for n in range(2, args.hours + 1):
        sim.hour()
        if n % 24 == 0:
            say(f"{n} hours")
    without = sim.measure(args.repeats)
    say(f"after {args.hours} hours, no maintenance: {asdict(without)}")
    retention(spark, settings, "interval 0 hours")
    started = time.monotonic()
    rows = maintenance.run(spark, settings, list(TABLES), 0, dry_run=False)
    maintenance_s = round(time.monotonic() - started, 1)
    # Delta refuses to read a change feed past that duration: 0 would fail the view's refresh.
    retention(spark, settings, "interval 1 weeks")
    after = sim.measure(args.repeats)
    say(f"maintenance in {maintenance_s} s; after it: {asdict(after)}")
    clustered = clustering(spark, settings, args.repeats)
    say(f"clustering: {asdict(clustered)}")
    report = asdict(
        Maintenance(
            hours=args.hours,
            rows_per_day=args.rows_per_day,
            clicks_per_day=plan["clicks"],
            tables=list(TABLES),
            first=first,
            without=without,
            after=after,
            maintenance_s=maintenance_s,
            maintenance=[TableMaintenance(r["table"], r["detail"], r["seconds"]) for r in rows],
            goals=goals(first, after),
            clustering=clustered,
            cores=cores(),
            seconds=round(time.monotonic() - began, 1),
        )
    )
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(base)
    path = harness.write_json(out_dir / "maintenance.json", report)
    print(json.dumps({k: report[k] for k in ("first", "without", "after", "goals")}, indent=1))
    say(f"written to {path}")
    spark.stop()
    shutil.rmtree(settings.tables_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
