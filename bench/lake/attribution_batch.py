"""Benchmark of the reconciliation's batch attribution (not a test): a day of about 1M silver rows
attributed with the processor's state in memory against ``transformWithState`` and its state
server, and the gold job's rebuild of the reconciliation's day as Airflow runs it.

On tables of its own (a temporary runtime): one day of synthetic silver
(:func:`bench.lake.synthetic_silver.write_days`, ``--rows-per-day``), then in this process's warm
session the batch attribution of the day's events with their margins (the reconciliation's input),
both forms, written to Spark's ``noop`` sink (the attribution alone, no table); then, with a lake
engine of its own started, ``spark_apps.lake.gold --tables attribution_reconciliation`` over the
day as a client process, twice (the first run pays the engine's warm-up): task start to commit.
Written to ``--out`` (unset: ``<reports>/bench/attribution-batch.json``).

    .venv/lake/bin/python -m bench.lake.attribution_batch --rows-per-day 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake.catalog.gold.attribution_reconciliation import attribution_margin_ms
from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.kafka import free_port
from bench import harness
from bench.lake import synthetic_silver

say = harness.progress("attribution-batch")


def attribution_seconds(spark, settings, day: datetime, state_server: bool) -> tuple[float, int]:
    """The day's batch attribution with the reconciliation's margins, to the noop sink."""
    from pyspark.sql import functions as F

    from spark_apps.common.attribution.batch import (
        CALLBACK,
        IMPRESSION,
        REQUEST,
        as_input,
        transform_attribute,
    )
    from spark_apps.common.attribution.contract import AttributionConfig
    from spark_apps.lake.gold import SilverInputs

    inputs = SilverInputs(spark, settings, day, day + timedelta(days=1))
    margin = attribution_margin_ms(inputs.config)
    config = dataclasses.replace(AttributionConfig(), close_at_end_of_input=True)
    events = (
        as_input(
            inputs.silver_around("ad_requests", margin, margin), F.lit(REQUEST), "kafka_timestamp"
        )
        .unionByName(
            as_input(
                inputs.silver_around("ad_impressions", margin, margin),
                F.lit(IMPRESSION),
                "kafka_timestamp",
            )
        )
        .unionByName(
            as_input(
                inputs.silver_around("ad_callbacks", margin, margin),
                F.lit(CALLBACK),
                "kafka_timestamp",
            )
        )
    )
    rows = events.count()
    started = time.monotonic()
    transform_attribute(events, config, state_server=state_server).write.format("noop").mode(
        "overwrite"
    ).save()
    return round(time.monotonic() - started, 1), rows


def measure(args: argparse.Namespace) -> dict:
    from adlake.local.engine import LakeEngine
    from adlake.spark_session import get_session

    base = load_settings()
    work = harness.work_dir("attribution-batch")
    settings = base.with_overrides(runtime_dir=work, lake_engine="local")
    spark = get_session("lake", "bench-attribution-batch", settings)
    scale_args = argparse.Namespace(
        rows_per_day=args.rows_per_day,
        last_day=args.day,
        seed=7,
        files_per_day=synthetic_silver.DEFAULT_FILES_PER_DAY,
    )
    written = synthetic_silver.write_days(spark, settings, (0, 1), scale_args)
    say(f"silver: {written}")
    day = synthetic_silver.midnight(args.day)
    result: dict = {"rows_per_day": args.rows_per_day, "silver_rows": written}
    # the first attribution of a session pays its Python workers' start: once, untimed
    attribution_seconds(spark, settings, day - timedelta(days=1), state_server=False)
    for state_server in (False, True):
        seconds, rows = attribution_seconds(spark, settings, day, state_server)
        key = "state_server" if state_server else "in_memory"
        result[key] = {"seconds": seconds, "input_rows": rows}
        say(f"attribution {key}: {seconds} s over {rows:,} events")
    engine_settings = settings.with_overrides(lake_engine="connect", lake_engine_port=free_port())
    engine = LakeEngine(engine_settings)
    engine.start()
    try:
        runs = []
        for _ in range(2):
            job = harness.run_module(
                engine_settings,
                "spark_apps.lake.gold",
                "--start",
                day.isoformat(),
                "--end",
                (day + timedelta(days=1)).isoformat(),
                "--tables",
                "attribution_reconciliation",
            )
            runs.append(job["seconds"])
            # the memo would skip the second run: it measures the rebuild, so forget it
            for memo in (work / "slices").rglob("*.json"):
                memo.unlink()
            say(f"gold job on the engine: {job['seconds']} s {job['log']}")
        result["gold_job_on_engine_s"] = runs
    finally:
        engine.stop()
    result["load"] = harness.load_average()
    result["cores"] = harness.cores()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.lake.attribution_batch",
        formatter_class=HelpFormatter,
        description="The reconciliation's batch attribution: in memory against the state server.",
    )
    parser.add_argument("--rows-per-day", type=int, default=1_000_000, help="silver rows a day")
    parser.add_argument(
        "--day",
        type=lambda t: datetime.fromisoformat(t).date(),
        default=datetime(2026, 11, 21, tzinfo=UTC).date(),
        help="the day generated and measured",
    )
    parser.add_argument(
        "--out", help="the JSON's path (unset: <reports>/bench/attribution-batch.json)"
    )
    args = parser.parse_args(argv)
    result = measure(args)
    out = (
        Path(args.out)
        if args.out
        else harness.report_dir(load_settings()) / "attribution-batch.json"
    )
    harness.write_json(out, result)
    say(f"{result}; {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
