"""Benchmark of the quality jobs (not a test): how long validating one hourly run's gold and a
view takes, next to the gold job it follows, on generated traffic.

A broker of its own on free loopback ports (runtime under a temporary directory) receives
``--events`` generated events (every anomaly at the generator's defaults); bronze, silver, gold
(the hour the traffic was sent in, so its day) and a full refresh of every view run in this
process. Then, timed:

* **in process** (one warm Spark session): each gold table's validation, and the view's
  (``--view``), as :func:`spark_apps.lake.quality.validate` does it for the DAG (read the slice,
  run the checkpoint, write ``dq_results`` and Data Docs);
* **as the DAG runs them** (a process each, what a spark-submit task costs: JVM, session, GX
  import, validation): ``python -m spark_apps.lake.gold`` over the hour, and
  ``python -m spark_apps.lake.quality`` for ``page_traffic`` and for the view.

There is no streaming app here, so ``surge_history`` and the real-time side of
``attribution_reconciliation`` are empty: the reconciliation's match-rate ``warn`` fails, and
every ``error`` expectation must pass on the generated data (the benchmark says so if not).

The figures are printed and written as JSON (``--out-dir DIR``: ``DIR/quality.json``; unset:
``<reports>/bench-quality-<time>.json``).

    .venv/lake/bin/python -m bench.lake.quality
    .venv/lake/bin/python -m bench.lake.quality --events 50000 --rate 5000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import generator, registry
from adlake.catalog.gold import NAMES as GOLD_TABLES
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.quality.results import RunContext
from bench import harness
from spark_apps.lake import bronze, gold, quality, silver
from spark_apps.lake.views.engine import full_refresh

INPUTS = [t.name for t in generator.INPUT_TOPICS]


def bench(spark, base: Settings, events: int, rate: float, view: str, workdir: Path) -> dict:
    with harness.private_broker("quality", base, workdir) as (settings, _):
        report = generator.run(
            generator.GeneratorConfig(
                rate=rate, count=events, seed=7, topic_partitions=settings.topic_partitions
            ),
            settings.kafka_bootstrap,
            progress=False,
        )
        bronze.run(spark, settings, list(INPUTS))
        silver.run(spark, settings, list(INPUTS))
    started_at = datetime.fromisoformat(report["started_at"].replace("Z", "+00:00"))
    hour = started_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    interval = (hour, hour + timedelta(hours=1))
    first, after = gold.days_of(*interval)
    for name in GOLD_TABLES:
        gold.rebuild(spark, settings, name, first, after)
    for name in registry.VIEWS:
        full_refresh(spark, settings, registry.view(name))

    def validate(name: str, start: datetime | None, end: datetime | None) -> dict:
        context = RunContext(
            "quality_benchmark", f"bench-{name}", name, start, end, datetime.now(UTC)
        )
        outcome = quality.validate(spark, settings, name, context)
        return {
            "seconds": round(outcome.seconds, 2),
            "expectations": len(outcome.rows),
            "failed": {r["expectation"]: r["severity"] for r in outcome.rows if not r["success"]},
        }

    in_process = {name: validate(name, *interval) for name in GOLD_TABLES}
    in_process[view] = validate(view, None, None)
    span = ["--start", interval[0].isoformat(), "--end", interval[1].isoformat()]
    settings = harness.own_session(settings)
    processes = {
        "gold (all tables)": harness.run_module(settings, "spark_apps.lake.gold", *span),
        "quality page_traffic": harness.run_module(
            settings, "spark_apps.lake.quality", "--table", "page_traffic", *span
        ),
        f"quality {view}": harness.run_module(settings, "spark_apps.lake.quality", "--table", view),
    }
    return {
        "events": report["sent"],
        "interval": [t.isoformat() for t in interval],
        "in_process_s": in_process,
        "gold_validation_total_s": round(sum(in_process[n]["seconds"] for n in GOLD_TABLES), 2),
        "process_s": {k: round(v["seconds"], 1) for k, v in processes.items()},
        "errors_failed": sorted(
            f"{n}: {e}"
            for n, r in in_process.items()
            for e, s in r["failed"].items()
            if s == "error"
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.spark_session import get_session

    parser = argparse.ArgumentParser(
        prog="bench.lake.quality", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--events", type=int, default=20_000, help="generated base events")
    parser.add_argument("--rate", type=float, default=5_000.0, help="events per second sent")
    parser.add_argument(
        "--view",
        default="page_clicks_hourly",
        choices=sorted(registry.VIEWS),
        help="the view validated after the gold tables",
    )
    parser.add_argument(
        "--out-dir",
        default=None,
        help="write DIR/quality.json (unset: <reports>/bench-quality-<time>.json)",
    )
    args = parser.parse_args(argv)
    base = load_settings()
    load_start = harness.load_average()
    with tempfile.TemporaryDirectory(prefix="adlake-quality-bench-") as tmp:
        spark = get_session(
            "lake",
            "quality-benchmark",
            base.with_overrides(runtime_dir=Path(tmp), lake_engine="local"),
        )
        result = bench(spark, base, args.events, args.rate, args.view, Path(tmp))
    result.update(cores=harness.cores(), load_average=[load_start, harness.load_average()])
    out = harness.write_json(
        Path(args.out_dir) / "quality.json"
        if args.out_dir
        else harness.stamped(base.reports_dir, "bench-quality"),
        result,
    )
    print(json.dumps(result, indent=2))
    harness.say(f"written to {out}")
    return 1 if result["errors_failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
