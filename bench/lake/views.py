"""Benchmark (not a test): incremental vs full refresh of a materialized view, in one run.

1. builds a synthetic, seeded source shaped like ``silver_ad_impressions`` (the registry's schema,
   partitioned by ``event_date``, Change Data Feed on) with ``--rows`` rows over ``--days`` days
   and ``--campaigns`` campaigns;
2. full-refreshes a view shaped like the registry's ``campaign_daily_totals`` over it (every
   aggregate kind: count, sum, min, max, avg, approx_distinct; ``--aggregates decomposable``
   keeps count, sum and avg only);
3. warms up: a small change (a tenth of the measured one) and an incremental refresh, not
   timed, so the JVM's first run of the change-feed and MERGE code is not billed to step 4;
4. changes ``--change-fraction`` of the rows in three commits: inserts (50%), updates of the
   price (30%), deletes (20%); ``--spread recent`` (default) puts them in the last two days, the
   usual shape of late data and corrections, ``--spread uniform`` anywhere (every group then
   has a retraction and, with min/max/sketches, is recomputed: the worst case);
5. times an incremental refresh, checks it against a recomputation (``--no-verify`` skips this),
   then times a full refresh of the same source version, and prints both times and their ratio;
6. measures what bounds the ratio (:func:`bounds`): the time of a refresh of a 1-row change, and
   the share of the source rows in the changed days, which the recompute rereads.

``--suite`` runs the report's cases instead (:func:`bench.lake.views_suite.suite`: the 1-row
refresh with its phases, Spark jobs and Delta commits; an append-only change and a delete/update
one at the first size; a fixed appended change at 10M, 30M and 100M rows) and writes
``views.json`` for the benchmark report (``make bench``); ``--quick`` makes it a smoke run on
small sources. The source and its changes are :mod:`bench.lake.views_source`'s.

``--rows`` takes several sizes: each is a run of its own (steps 1 to 5, in the same session), and
a table of the ratios closes the output, to show from which source size the incremental refresh
is 10× faster than the full one.

The JSON report goes to ``<reports_dir>/views_benchmark-<rows>-<spread>-<aggregates>.json`` (one
per size). The tables are ``bench_*`` under the configured tables directory (point
``ADLAKE_RUNTIME_DIR`` elsewhere to keep them apart) and are rebuilt on every run.

    .venv/lake/bin/python -m bench.lake.views                  # 10M rows
    .venv/lake/bin/python -m bench.lake.views --rows 10000000 30000000
    .venv/lake/bin/python -m bench.lake.views --rows 1000000 --spread uniform
    .venv/lake/bin/python -m bench.lake.views --suite --out-dir /tmp/bench
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import cores, load_average, timed
from bench.lake.views_source import (
    BASE_DATE,
    SOURCE,
    apply_changes,
    bench_view,
    first_changed_day,
    synthetic_rows,
)
from bench.lake.views_suite import QUICK_FIXED_CHANGE, QUICK_ROWS, suite
from spark_apps.lake import views
from spark_apps.lake.tables import ensure_table, table_path

SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake.views",
        description=__doc__.split("\n")[0],
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--rows",
        type=int,
        nargs="+",
        default=[10_000_000],
        help="source rows; several sizes are run one after the other",
    )
    parser.add_argument(
        "--change-fraction",
        type=float,
        default=0.01,
        help="share of the source rows changed (inserts, updates, deletes)",
    )
    parser.add_argument(
        "--spread",
        choices=("recent", "uniform"),
        default="recent",
        help="recent: the changes fall in the last two days; uniform: on any day",
    )
    parser.add_argument(
        "--aggregates",
        choices=("all", "decomposable"),
        default="all",
        help="decomposable: a view of count, sum and avg only (no min, max, HLL)",
    )
    parser.add_argument("--campaigns", type=int, default=500, help="distinct campaigns")
    parser.add_argument("--days", type=int, default=30, help="distinct event dates")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the generated data")
    parser.add_argument(
        "--no-verify",
        action="store_true",
        help="skip checking the incremental result against a recomputation",
    )
    parser.add_argument(
        "--suite",
        action="store_true",
        help="the report's cases instead (see suite()): the 1-row refresh, "
        "append-only and delete/update at the first size, a fixed appended "
        "change at every size; writes OUT_DIR/views.json",
    )
    parser.add_argument(
        "--out-dir",
        help="with --suite: where views.json goes (unset: <reports>/bench, or "
        "<reports>/bench-quick with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"with --suite: a smoke run of the tool on one small source ({QUICK_ROWS[0]:,} rows, "
        f"a change of {QUICK_FIXED_CHANGE:,} rows)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a session setting over the view engine's own (repeatable), e.g. "
        "spark.databricks.delta.snapshotPartitions=50 for Delta's default",
    )
    return parser.parse_args(argv)


def run(spark, settings: Settings, args: argparse.Namespace, rows: int) -> dict:
    """One benchmark (steps 1 to 5) over a source of ``rows`` rows."""
    args = argparse.Namespace(**{**vars(args), "rows": rows})
    view = bench_view(args.aggregates)
    src = table_path(settings, SOURCE.name)
    for path in (src, table_path(settings, view.name)):
        shutil.rmtree(path, ignore_errors=True)
    result = {
        "rows": args.rows,
        "change_fraction": args.change_fraction,
        "spread": args.spread,
        "aggregates": [f"{a.kind}({a.column or ''})" for a in view.aggregates],
        "campaigns": args.campaigns,
        "days": args.days,
        "seed": args.seed,
        "master": spark.sparkContext.master,
        "cores": cores(),
        "shuffle_partitions": settings.shuffle_partitions,
        "conf": {k: spark.conf.get(k) for k in (SNAPSHOT_PARTITIONS,)}
        | dict(item.split("=", 1) for item in args.conf),
        "load_average_at_start": load_average(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    def say(text: str) -> None:
        print(text, flush=True)

    ensure_table(spark, settings, SOURCE)
    _, result["build_source_s"] = timed(
        lambda: (
            synthetic_rows(
                spark, 0, args.rows, seed=args.seed, campaigns=args.campaigns, days=args.days
            )
            .write.format("delta")
            .mode("append")
            .save(src)
        )
    )
    say(f"source: {args.rows:,} rows in {result['build_source_s']:.1f} s")
    first, result["initial_full_refresh_s"] = timed(views.full_refresh, spark, settings, view)
    result["groups"] = spark.read.format("delta").load(table_path(settings, view.name)).count()
    say(
        f"initial full refresh: {result['groups']:,} groups in "
        f"{result['initial_full_refresh_s']:.1f} s"
    )

    warm_up = apply_changes(
        spark,
        src,
        rows=args.rows,
        fraction=args.change_fraction / 10,
        spread=args.spread,
        seed=args.seed + 100,
        campaigns=args.campaigns,
        days=args.days,
        first_new_id=args.rows,
    )
    _, result["warm_up_incremental_s"] = timed(views.refresh, spark, settings, view)
    say(f"warm-up: changes {warm_up}, incremental refresh {result['warm_up_incremental_s']:.1f} s")

    result["changes"] = apply_changes(
        spark,
        src,
        rows=args.rows,
        fraction=args.change_fraction,
        spread=args.spread,
        seed=args.seed,
        campaigns=args.campaigns,
        days=args.days,
        first_new_id=args.rows + warm_up["inserted"],
    )
    say(f"changes: {result['changes']}")

    incremental, result["incremental_s"] = timed(views.refresh, spark, settings, view)
    say(f"incremental refresh: {incremental.line()}")
    result["incremental"] = {
        "change_rows": incremental.change_rows,
        "phases": incremental.phases,
        "groups_touched": incremental.groups_touched,
        "groups_recomputed": incremental.groups_recomputed,
        "merge": incremental.merge,
    }
    if not args.no_verify:
        differences, result["verify_s"] = timed(views.verify, spark, settings, view)
        result["differences"] = len(differences)
        say(f"verify: {len(differences)} differing groups ({result['verify_s']:.1f} s)")
    full, result["full_s"] = timed(views.full_refresh, spark, settings, view)
    say(f"full refresh: {full.line()}")
    result["ratio_full_over_incremental"] = round(result["full_s"] / result["incremental_s"], 2)
    result.update(bounds(spark, settings, args, view, src))
    say(
        f"bounds: a 1-row change refreshes in {result['floor_s']:.1f} s (the fixed cost: change "
        f"feed, MERGE, bookkeeping); the changed days hold {result['reread_share']:.1%} of the "
        f"source rows, reread for the {incremental.groups_recomputed:,} of "
        f"{incremental.groups_touched:,} touched groups recomputed"
    )
    result["load_average_at_end"] = load_average()
    return result


def bounds(
    spark, settings: Settings, args: argparse.Namespace, view: registry.View, src: str
) -> dict:
    """What limits the ratio, measured after the comparison (so the timings above are those of
    the run as it was):

    * ``floor_s``: an incremental refresh of a 1-row insert: the cost of a refresh that has
      (almost) nothing to do. A full refresh must take 10× this for the target to be reachable;
    * ``reread_share``: the share of the source rows in the days the change touched. A group
      with a retraction and a min, max or sketch is recomputed from its rows; when (nearly) every
      touched group is, as with this change's deletes in every group, the incremental refresh
      rereads about this share of what the full refresh reads, and cannot be more than about
      its inverse faster.
    """
    from pyspark.sql import functions as F

    stored = spark.read.format("delta").load(table_path(settings, view.name))
    first_day = first_changed_day(args.days, args.spread)
    total, changed_days = stored.agg(
        F.sum(views.COUNT),
        F.sum(
            F.when(
                F.col("event_date") >= F.date_add(F.to_date(F.lit(BASE_DATE)), first_day),
                F.col(views.COUNT),
            )
        ),
    ).first()
    synthetic_rows(
        spark,
        10 * args.rows,
        1,
        seed=args.seed + 200,
        campaigns=args.campaigns,
        days=args.days,
        partitions=1,
    ).write.format("delta").mode("append").save(src)
    floor, floor_s = timed(views.refresh, spark, settings, view)
    return {
        "floor_s": floor_s,
        "floor": floor.line(),
        "reread_share": round(changed_days / total, 4),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    spark = get_session(
        "lake",
        "views-benchmark",
        settings.with_overrides(lake_engine="local"),  # the warm figure: a session of its own
        extra_conf=dict(item.split("=", 1) for item in args.conf),
    )
    settings.reports_dir.mkdir(parents=True, exist_ok=True)
    if args.suite:
        out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(settings, args.quick)
        report = suite(spark, settings, args, out_dir)
        return 1 if any(c.get("verify_differences") for c in report["cases"]) else 0
    results = []
    for rows in args.rows:
        result = run(spark, settings, args, rows)
        results.append(result)
        print(
            f"\nincremental {result['incremental_s']:.1f} s vs full {result['full_s']:.1f} s: "
            f"incremental is {result['ratio_full_over_incremental']}× faster "
            f"({rows:,} rows, {args.change_fraction:.1%} changed, {args.spread}, "
            f"{args.aggregates} aggregates)"
        )
        out = harness.write_json(
            settings.reports_dir / f"views_benchmark-{rows}-{args.spread}-{args.aggregates}.json",
            result,
        )
        print(f"report: {out}\n", flush=True)
    print(summary(results))
    return 1 if any(r.get("differences") for r in results) else 0


def summary(results: Sequence[dict]) -> str:
    """One line per source size: both refresh times, their ratio, whether it reaches 10×, what
    bounds it (the 1-row refresh time, the share of the source the recompute rereads; see
    :func:`bounds`), and the load average around the measurement (the machine may be shared)."""
    lines = [
        f"{'rows':>13} {'incremental s':>13} {'full s':>7} {'ratio':>6}  10x "
        f"{'1-row s':>8} {'reread':>7}  load"
    ]
    for r in results:
        ratio = r["ratio_full_over_incremental"]
        inc = r["incremental"]
        # The recompute's reread bounds the ratio only when it covers most touched groups.
        mostly = inc["groups_recomputed"] > inc["groups_touched"] / 2
        reread = f"{r['reread_share']:.1%}" if mostly else "-"
        lines.append(
            f"{r['rows']:>13,} {r['incremental_s']:>13.1f} {r['full_s']:>7.1f} "
            f"{ratio:>5.1f}x  {'yes' if ratio >= 10 else 'no ':3} "
            f"{r['floor_s']:>8.1f} {reread:>7}  "
            f"{r['load_average_at_start']:.1f}→{r['load_average_at_end']:.1f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
