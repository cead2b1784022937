"""The operational apps' part of the benchmark report (``python -m bench.ops.suite``):
the report's scenarios, each app in Real-Time Mode (and in micro-batch when that is its
comparison) measured by :func:`bench.ops.latency.run_scenario` on one private broker, the bare
Kafka hop beside them, each app's p99 goal, written as ``ops.json`` (:func:`run_suite`)::

    .venv/ops/bin/python -m bench.ops.suite --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.suite --quick
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import cores, say
from bench.ops import kafka_hop
from bench.ops.latency import (
    MODE_NAMES,
    Result,
    Scenario,
    default_engine,
    ops_apps,
    own_interval,
    rtm_slots,
    run_scenario,
)

# What bounds the suite's p99 in Real-Time Mode (each app's goal: App.bench.suite_p99_ms).
SUITE_GOAL_BOUND = "the interval boundary: see docs/bench/attribution-boundary.md"


def warmup_s(app: registry.App, settings: Settings) -> float:
    """The full suite's warm-up: 60 s per 8 Real-Time Mode task slots (the JIT of long-lived
    tasks on 2 cores takes the first 30-40 s of traffic; attribution's 16 need 120 s)."""
    return 60.0 * math.ceil(rtm_slots(app, settings) / 8)


# The full suite: seconds measured in Real-Time Mode and in micro-batch, and of the Kafka hop.
SUITE_RTM_S, SUITE_MICROBATCH_S, SUITE_HOP_S = 600.0, 120.0, 60.0
# The quick suite (a smoke run of the tool and the report, about half a minute): one app (see
# suite_scenarios), a few seconds of traffic, and Spark's shortest Real-Time Mode checkpoint
# interval (spark.sql.streaming.realTimeMode.minBatchDuration) so that the run holds a boundary.
QUICK_RATE, QUICK_WARMUP_S, QUICK_MEASURED_S, QUICK_HOP_S = 200.0, 1.0, 7.0, 2.0
QUICK_RTM_INTERVAL = "5 seconds"
QUICK_SETTLE_S, QUICK_DRAIN_S, QUICK_CATCH_UP_S = 1.0, 1.0, 20.0


def first_realtime_app() -> registry.App:
    """The app of the quick runs (the suite's and the crash recovery's): the registry's first
    whose default trigger is Real-Time Mode, else its first.

    >>> first_realtime_app().name
    'click_surge'
    """
    apps = ops_apps()
    return next((a for a in apps if a.default_trigger == "realtime"), apps[0])


def suite_scenarios(settings: Settings, quick: bool, rate: float) -> list[Scenario]:
    """The report's runs, the registry's apps in its order: each in Real-Time Mode (at its own
    checkpoint interval, ``App.rtm_interval_s``, as the lifecycle starts it) with :func:`warmup_s`, :data:`SUITE_RTM_S` measured, and an app whose
    default trigger is Real-Time Mode also in micro-batch (``processing_time`` 0 s,
    :data:`SUITE_MICROBATCH_S`); each in its ``engine`` knob's default. ``quick``: one run, of
    the first app whose default trigger is Real-Time Mode (its boundaries and timeline are what
    the report draws; every app's run is the same :func:`run_scenario`, and each app start is a
    Spark start of 10-20 s), with the quick figures above."""
    apps = ops_apps()
    if quick:
        app = first_realtime_app()
        return [
            Scenario(
                app,
                app.default_trigger,
                rate,
                QUICK_WARMUP_S,
                QUICK_MEASURED_S,
                default_engine(app),
                QUICK_RTM_INTERVAL,
            )
        ]
    scenarios = []
    for app in apps:
        warm, engine = warmup_s(app, settings), default_engine(app)
        scenarios.append(Scenario(app, "realtime", rate, warm, SUITE_RTM_S, engine))
        if app.default_trigger == "realtime":
            scenarios.append(
                Scenario(app, "processing_time", rate, warm, SUITE_MICROBATCH_S, engine)
            )
    return scenarios


def p99_goals(runs: list[Result], rate: float, quick: bool) -> list[dict]:
    """Each app's goal for its Real-Time Mode run (``App.bench.suite_p99_ms``), against that run
    (not met when the run did not happen), at the interval the run had."""
    by_key = {(r.app, r.mode): r for r in runs}
    goals, mode = [], "realtime"
    for app in ops_apps():
        target = app.bench.suite_p99_ms
        if target is None:
            continue
        run = by_key.get((app.name, mode))
        p99 = run.whole.get("p99") if run else None
        interval = (run and run.rtm_interval) or (
            QUICK_RTM_INTERVAL if quick else own_interval(app)
        )
        goals.append(
            {
                "goal": f"{app.name} whole-run p99 in {MODE_NAMES[mode]} at {rate:,.0f} events/s "
                f"({interval} checkpoint interval)",
                "target": f"<= {target:.0f} ms",
                "measured": f"{p99} ms (between boundaries {run.between_boundaries.get('p99')} ms)"
                if run
                else "not measured in this run",
                "met": p99 is not None and p99 <= target,
                "bound": SUITE_GOAL_BOUND,
            }
        )
    return goals


def run_suite(out_dir: Path, quick: bool = False, rate: float = 1000.0) -> dict:
    """The operational apps' part of the benchmark report, on one private broker: the runs of
    :func:`suite_scenarios` one after the other, with the bare Kafka hop (:mod:`.kafka_hop`,
    :data:`SUITE_HOP_S` at the same rate) right before the last app's runs, so the ratio of that
    app's latency to the hop's compares one machine state. A run that fails is recorded in
    ``errors`` and the others still run. ``quick`` runs at :data:`QUICK_RATE`, whatever
    ``rate``. Writes and returns ``out_dir/ops.json`` (the report's contract: ``runs``,
    ``kafka_hop``, ``goals``)."""
    base = load_settings()
    rate = QUICK_RATE if quick else rate
    scenarios = suite_scenarios(base, quick, rate)
    interval = (
        QUICK_RTM_INTERVAL
        if quick
        else "each app's own: "
        + ", ".join(f"{s.app.name} {s.interval}" for s in scenarios if s.mode == "realtime")
    )
    hop_s = QUICK_HOP_S if quick else SUITE_HOP_S
    pacing = (
        dict(settle_s=QUICK_SETTLE_S, drain_s=QUICK_DRAIN_S, catch_up_s=QUICK_CATCH_UP_S)
        if quick
        else {}
    )
    runs: list[Result] = []
    errors: list[str] = []
    hop_figures: dict = {"rate": rate, "duration_s": hop_s, "whole": {}}
    started = time.monotonic()

    def attempt(what: str, run) -> None:
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - the report says what failed
            errors.append(f"{what}: {type(exc).__name__}: {exc}")
            say(f"suite: {what} failed: {exc}")

    def hop() -> None:
        say(f"suite: kafka hop at {rate:.0f}/s for {hop_s:.0f} s")
        hop_figures.update(kafka_hop.figures(settings.kafka_bootstrap, rate, hop_s, quick))
        say(f"suite: kafka hop {hop_figures['whole']}")

    def measure(scenario: Scenario) -> None:
        attempt(
            f"{scenario.app.name} {scenario.mode}",
            lambda: runs.append(run_scenario(settings, scenario, workdir, **pacing)),
        )

    with harness.private_broker("suite", base) as (settings, workdir):
        last = scenarios[-1].app
        for i, scenario in enumerate(scenarios):
            if scenario.app == last and (i == 0 or scenarios[i - 1].app != last):
                attempt("kafka hop", hop)
            measure(scenario)
    hop_p99 = hop_figures["whole"].get("p99")
    for run in runs:
        if hop_p99 and run.whole.get("p99") is not None:
            run.notes.append(f"p99 / kafka hop p99 = {run.whole['p99'] / hop_p99:.1f}")
    summary = {
        "quick": quick,
        "cores": cores(),
        "rate": rate,
        "rtm_interval": interval,
        "elapsed_s": round(time.monotonic() - started, 1),
        "runs": [asdict(r) for r in runs],
        "kafka_hop": hop_figures,
        "goals": p99_goals(runs, rate, quick),
        "errors": errors,
        "workdir": str(workdir),
    }
    harness.write_json(out_dir / "ops.json", summary, indent=1)
    say(f"suite: written to {out_dir / 'ops.json'} in {summary['elapsed_s']} s; logs in {workdir}")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.ops.suite", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--out-dir",
        default=None,
        help="the report's directory (unset: <reports>/bench, or <reports>/bench-quick with "
        "--quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run of the tool and the report: one app in Real-Time Mode at "
        f"{QUICK_RATE:g} events/s, {QUICK_WARMUP_S:g} s warm-up and {QUICK_MEASURED_S:g} s "
        "measured (about half a minute)",
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="input rate, events/s")
    args = parser.parse_args(argv)
    base = load_settings()
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(base, args.quick)
    summary = run_suite(out_dir, args.quick, args.rate)
    return 1 if summary["errors"] else 0  # ops.json is written either way


if __name__ == "__main__":
    sys.exit(main())
