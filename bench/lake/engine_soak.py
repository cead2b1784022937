"""Benchmark of the lake engine's memory over a soak (not a test): whether its resident memory
stays flat while the lake's jobs come and go as its sessions.

On a broker and runtime of its own (free loopback ports, a temporary directory): the lake engine
started, generated traffic at ``--rate`` events/s for the whole run, and every ``--every-s``
seconds the hourly chain's jobs (bronze, silver, gold's hour tables over the current hour, their
quality gate) and a refresh of ``page_clicks_hourly``, each a client process as Airflow runs it,
for ``--minutes``. The engine JVM's resident memory (``VmRSS``) is sampled every 10 s. The
figure: the median of the last 10 minutes against the median of the first 10 (goal: within
10%), beside each round's seconds.

Written to ``--out`` (unset: ``<reports>/bench/engine-soak.json`` of the configured runtime);
the work directory (engine and job logs) is kept.

    .venv/lake/bin/python -m bench.lake.engine_soak --minutes 30 --every-s 180
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import generator, registry
from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.kafka import free_port
from bench import harness

say = harness.progress("engine-soak")
SAMPLE_S = 10.0
WINDOW_S = 600.0
VIEW = "page_clicks_hourly"


def chain_round(settings) -> dict[str, float]:
    """One round: the hourly chain's jobs over the current hour, then the view refresh, each a
    client process of the engine; seconds by job."""
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    interval = ["--start", hour.isoformat(), "--end", (hour + timedelta(hours=1)).isoformat()]
    outcomes = str(settings.runtime_dir / "outcomes")
    seconds = {}
    for job in (j for j in registry.JOBS.values() if j.runs("hourly")):
        gate = ["--outcome-dir", outcomes] if job.gate else []
        seconds[job.name] = harness.run_module(settings, job.module, *job.args, *interval, *gate)[
            "seconds"
        ]
    seconds["view_refresh"] = harness.run_module(settings, "spark_apps.lake.views", "--view", VIEW)[
        "seconds"
    ]
    return seconds


def soak(args: argparse.Namespace) -> dict:
    from adlake.local.engine import LakeEngine

    base = load_settings()
    with harness.private_broker("engine-soak", base) as (scratch, work):
        settings = scratch.with_overrides(lake_engine="connect", lake_engine_port=free_port())
        engine = LakeEngine(settings)
        began = time.monotonic()
        engine.start()
        say(
            f"engine up in {time.monotonic() - began:.1f} s on :{settings.lake_engine_port}; work {work}"
        )
        total_s = args.minutes * 60
        traffic = generator.GeneratorConfig(
            rate=args.rate, duration_s=total_s, seed=3, topic_partitions=settings.topic_partitions
        )
        producer = threading.Thread(
            target=generator.run,
            args=(traffic, settings.kafka_bootstrap),
            kwargs={"progress": False},
            daemon=True,
        )
        producer.start()
        samples: list[tuple[float, float]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                rss = engine.status().get("rss_mb")
                if rss is not None:
                    samples.append((round(time.monotonic() - began, 1), rss))
                stop.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        rounds = []
        try:
            deadline = time.monotonic() + total_s
            while time.monotonic() < deadline:
                round_began = time.monotonic()
                seconds = chain_round(settings)
                rounds.append({"at_s": round(round_began - began, 1), "seconds": seconds})
                say(
                    f"round {len(rounds)}: {sum(seconds.values()):.1f} s {seconds}; rss {samples[-1][1] if samples else None} MB"
                )
                time.sleep(max(0.0, args.every_s - (time.monotonic() - round_began)))
        finally:
            stop.set()
            sampler.join()
            engine.stop()
    return summary(args, samples, rounds)


def summary(args: argparse.Namespace, samples: list[tuple[float, float]], rounds: list) -> dict:
    """The run's figures: RSS medians of the first and last :data:`WINDOW_S`, their ratio.

    >>> a = argparse.Namespace(minutes=30, every_s=180, rate=50)
    >>> s = summary(a, [(0, 900), (300, 1000), (1500, 1050), (1790, 1040)], [])
    >>> s["rss_first_10_min_mb"], s["rss_last_10_min_mb"], s["ratio"]
    (950.0, 1045.0, 1.1)
    """
    end = samples[-1][0] if samples else 0
    first = [rss for t, rss in samples if t <= WINDOW_S]
    last = [rss for t, rss in samples if t >= end - WINDOW_S]
    a, b = (statistics.median(first), statistics.median(last)) if samples else (None, None)
    return {
        "minutes": args.minutes,
        "every_s": args.every_s,
        "rate": args.rate,
        "rss_first_10_min_mb": a,
        "rss_last_10_min_mb": b,
        "ratio": round(b / a, 2) if a else None,
        "rss_max_mb": max((rss for _, rss in samples), default=None),
        "rounds": rounds,
        "samples": samples,
        "load": harness.load_average(),
        "cores": harness.cores(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.lake.engine_soak",
        formatter_class=HelpFormatter,
        description="The lake engine's resident memory while the hourly chain runs on it.",
    )
    parser.add_argument("--minutes", type=float, default=30, help="how long")
    parser.add_argument("--every-s", type=float, default=180, help="a chain round every this")
    parser.add_argument("--rate", type=float, default=50, help="generated events/s")
    parser.add_argument("--out", help="the JSON's path (unset: <reports>/bench/engine-soak.json)")
    args = parser.parse_args(argv)
    # SIGTERM ends the run through its cleanup (the engine, its keeper and the broker stopped)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    result = soak(args)
    out = Path(args.out) if args.out else harness.report_dir(load_settings()) / "engine-soak.json"
    harness.write_json(out, result)
    say(
        f"RSS first 10 min {result['rss_first_10_min_mb']} MB, last 10 min "
        f"{result['rss_last_10_min_mb']} MB (ratio {result['ratio']}), max {result['rss_max_mb']} MB; {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
