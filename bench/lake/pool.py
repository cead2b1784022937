"""Benchmark of the lake pool's size (not a test): how long a view refresh and the hour's gold
take to be published with one slot or two, the jobs on the warm lake engine.

On a broker and runtime of its own: the lake engine, generated traffic at ``--rate`` events/s
for the whole run, and rounds of the hourly chain (bronze, silver, gold's hour tables, their
gate) with a refresh of every view, each job a client process as Airflow runs it. Each view's
refresh is ready once silver committed (its Asset), as in the platform. The jobs are started as
Airflow's pool starts them: at most ``slots`` at once, a free slot to the ready job of the
highest priority weight (``adlake.airflow.factory.PRIORITY``: a view before the chain), then in
the chain's order. Rounds alternate 1 and 2 slots, so both see the same load.

Per round: seconds from silver's commit until every view is refreshed and its gate passed
(``views_s``, what publishes a view), from the
round's start until the gate passed (``gold_s``, what publishes gold) and the whole round
(``round_s``). Written to ``--out`` (unset: ``<reports>/bench/pool.json``).

    .venv/lake/bin/python -m bench.lake.pool --rounds 2
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import generator, registry
from adlake.airflow.factory import PRIORITY
from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.kafka import free_port
from bench import harness

say = harness.progress("pool")


def round_jobs(settings) -> dict[str, tuple[list[str], list[str], int]]:
    """The round's jobs: name -> (argv, the jobs it waits for, priority weight)."""
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    interval = ["--start", hour.isoformat(), "--end", (hour + timedelta(hours=1)).isoformat()]
    outcomes = ["--outcome-dir", str(settings.runtime_dir / "outcomes"), "--reuse-verdicts"]
    jobs: dict[str, tuple[list[str], list[str], int]] = {}
    before: list[str] = []
    for job in (j for j in registry.JOBS.values() if j.runs("hourly")):
        argv = [job.module, *job.args, *interval, *(outcomes if job.gate else [])]
        jobs[job.name] = (argv, before[-1:], PRIORITY["hourly"])
        before.append(job.name)
    for view in registry.VIEWS:
        refresh = ["spark_apps.lake.views", "--view", view]
        jobs[f"view_{view}"] = (refresh, ["silver"], PRIORITY["view"])
        # the view's gate publishes it
        gate = ["spark_apps.lake.quality", "--table", view]
        jobs[f"quality_{view}"] = (gate, [f"view_{view}"], PRIORITY["view"])
    return jobs


def run_round(settings, slots: int, python: str | None = None) -> dict:
    """The round's jobs through a pool of ``slots``; each job's start and end (s from the
    round's start) and the round's figures. ``python``: the lake environment's interpreter when
    this one is another's."""
    jobs = round_jobs(settings)
    order = list(jobs)
    began = time.monotonic()
    times: dict[str, list[float]] = {}
    running = {}
    with ThreadPoolExecutor(max_workers=slots) as pool:
        while len(times) < len(jobs) or running:
            finished = {n for n, t in times.items() if len(t) == 2}
            ready = [n for n in order if n not in times and all(d in finished for d in jobs[n][1])]
            ready.sort(key=lambda n: (-jobs[n][2], order.index(n)))
            for name in ready[: slots - len(running)]:
                times[name] = [round(time.monotonic() - began, 1)]
                running[
                    pool.submit(harness.run_module, settings, *jobs[name][0], python=python)
                ] = name
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                future.result()  # a failed job fails the benchmark, with its output
                times[name].append(round(time.monotonic() - began, 1))
    views = [times[f"quality_{v}"][1] for v in registry.VIEWS]
    gate = next(j.name for j in registry.JOBS.values() if j.runs("hourly") and j.gate)
    return {
        "slots": slots,
        "jobs": times,
        "views_s": round(max(views) - times["silver"][1], 1),
        "gold_s": times[gate][1],
        "round_s": round(time.monotonic() - began, 1),
    }


def measure(args: argparse.Namespace) -> dict:
    from adlake.local.engine import LakeEngine

    with harness.private_broker("pool", load_settings()) as (scratch, work):
        settings = scratch.with_overrides(lake_engine="connect", lake_engine_port=free_port())
        engine = LakeEngine(settings)
        engine.start()
        say(f"engine up on :{settings.lake_engine_port}; work {work}")
        traffic = generator.GeneratorConfig(
            rate=args.rate, duration_s=24 * 3600, seed=5, topic_partitions=settings.topic_partitions
        )
        threading.Thread(
            target=generator.run,
            args=(traffic, settings.kafka_bootstrap),
            kwargs={"progress": False},
            daemon=True,
        ).start()
        rounds = []
        try:
            run_round(settings, 2)  # warm-up: tables created, the engine's plans compiled
            for n in range(args.rounds):
                for slots in (1, 2) if n % 2 == 0 else (2, 1):
                    time.sleep(args.gap_s)  # a gap's worth of new events for the round
                    rounds.append(run_round(settings, slots))
                    r = rounds[-1]
                    say(
                        f"{slots} slot(s): views {r['views_s']} s, gold {r['gold_s']} s, round {r['round_s']} s"
                    )
        finally:
            engine.stop()
    by_slots = {
        slots: {
            key: statistics.median(r[key] for r in rounds if r["slots"] == slots)
            for key in ("views_s", "gold_s", "round_s")
        }
        for slots in (1, 2)
    }
    return {
        "rate": args.rate,
        "gap_s": args.gap_s,
        "medians": by_slots,
        "rounds": rounds,
        "load": harness.load_average(),
        "cores": harness.cores(),
    }


def loop(args: argparse.Namespace, out: Path) -> None:
    """``--loop``: rounds of ``--slots`` on the configured runtime and broker (another
    benchmark's: :mod:`bench.ops.beside`), on a lake engine of its own, until SIGTERM; the
    rounds written to ``out`` at the end."""
    from adlake.local.engine import LakeEngine

    settings = load_settings().with_overrides(lake_engine="connect", lake_engine_port=free_port())
    engine = LakeEngine(settings)
    engine.start()
    say(f"engine up on :{settings.lake_engine_port}; rounds of {args.slots} slot(s) until stopped")
    rounds: list[dict] = []
    try:
        while True:
            rounds.append(run_round(settings, args.slots))
            r = rounds[-1]
            say(f"views {r['views_s']} s, gold {r['gold_s']} s, round {r['round_s']} s")
    finally:
        engine.stop()
        harness.write_json(out, {"slots": args.slots, "rounds": rounds})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.lake.pool",
        formatter_class=HelpFormatter,
        description="The hour's views and gold published with one lake pool slot or two.",
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each size")
    parser.add_argument("--rate", type=float, default=200, help="generated events/s")
    parser.add_argument("--gap-s", type=float, default=30, help="traffic between rounds")
    parser.add_argument("--out", help="the JSON's path (unset: <reports>/bench/pool.json)")
    parser.add_argument(
        "--loop", action="store_true", help="rounds on the configured runtime until SIGTERM"
    )
    parser.add_argument("--slots", type=int, default=1, help="--loop's pool size")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else harness.report_dir(load_settings()) / "pool.json"
    if args.loop:
        # SIGTERM ends the loop through its cleanup (the engine stopped, the rounds written)
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        loop(args, out)
        return 0
    result = measure(args)
    harness.write_json(out, result)
    say(f"medians by slots {result['medians']}; {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
