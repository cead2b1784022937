"""Benchmark (not a test): the streaming apps' latency with the lake idle, and while the lake
runs on the same cores as the platform runs it on one machine.

Both runs are :func:`bench.ops.latency.run_scenario` of every app of ``--apps`` at once (default:
click-surge in Real-Time Mode and attribution in micro-batch, each its default trigger and
engine, at 200 events/s of its own traffic), on one private broker, each on fresh checkpoints,
measured after ``--warmup`` (120 s: "after their first two minutes"):

1. **idle**: nothing else runs;
2. **beside the lake**: ``bench.lake.pool --loop`` in the lake environment: its own lake engine
   (the platform's shape: one warm Spark Connect server) and, round after round, the hourly
   chain (bronze, silver, gold's hour tables, their gate) with every view's refresh and gate,
   at most ``--slots`` jobs at once and a free slot to a view first, as the Airflow pool runs
   them, measured once its first round (the idle run's traffic, the tables created) is done;
   the engine at niceness ``--nice`` (``ADLAKE_LAKE_NICE``). Bronze reads
   the same broker, so the lake ingests the apps' own traffic. The scheduler itself is not
   running: its share of the cores is not in the figure.

Figures: each app's p50/p99/max per run and its p99 ratio (beside / idle) against the targets
the apps' page shows (1 s in Real-Time Mode, 5 s in micro-batch; click-surge beside ≤ 1.5×
idle), and the lake's rounds (seconds from silver's commit until every view is published, from
a round's start until gold's gate passed). Written as ``beside.json`` (``--out-dir``; the
report's section "The lake beside the apps").

    .venv/ops/bin/python -m bench.ops.beside --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.beside --nice 10 --slots 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from adlake import registry
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.bootstrap import venv_python
from bench import harness
from bench.harness import cores, load_average, say
from bench.ops.beside_report import BESIDE_FILE, RUN_KEYS, Beside, Lake, LakeRound
from bench.ops.latency import Scenario, default_engine, ops_apps, run_scenario
from bench.ops.latency_result import Result
from bench.report_kit import StatedGoal

# The apps' latency targets, by trigger (the ones their page shows); an app's p99 beside the lake
# against idle has its entry's goal (App.bench.beside_p99_ratio).
_SETTINGS = load_settings()
TARGETS_MS = {
    "realtime": float(_SETTINGS.latency_target_realtime_ms),
    "processing_time": float(_SETTINGS.latency_target_processing_time_ms),
}
BOUND = "the cores the lake engine's work takes from the app's tasks"


def scenarios(args: argparse.Namespace) -> list[Scenario]:
    """Each app of ``--apps`` in its default trigger, at ``--rate``."""
    return [
        Scenario(
            app,
            app.default_trigger,
            args.rate,
            args.warmup,
            args.duration,
            default_engine(app),
            args.rtm_interval,
        )
        for app in (registry.app(name) for name in args.apps.split(","))
    ]


def run_apps(settings: Settings, runs: list[Scenario], workdir: Path) -> dict[str, Result]:
    """The scenarios at once, each app with its own traffic, on the broker of ``settings``."""
    results: dict[str, Result] = {}
    failures: list[BaseException] = []

    def one(scenario: Scenario) -> None:
        try:
            results[scenario.app.name] = run_scenario(settings, scenario, workdir)
        except BaseException as error:  # noqa: BLE001 - re-raised below, after the others
            failures.append(error)

    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return results


class EngineLake:
    """The lake as the platform runs it now: ``bench.lake.pool --loop`` in the lake
    environment, its own lake engine and rounds of the hourly chain with every view's refresh
    and gate, the pool's slots and priorities, until stopped. ``nice``: the engine's
    niceness (``lake_nice``)."""

    def __init__(self, settings: Settings, workdir: Path, slots: int, nice: int) -> None:
        self.out = workdir / "lake-rounds.json"
        self.log = workdir / "lake.log"
        argv = [str(venv_python("lake")), "-m", "bench.lake.pool", "--loop"]
        argv += ["--slots", str(slots), "--out", str(self.out)]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                argv,
                env=harness.process_env(settings.with_overrides(lake_nice=nice)),
                cwd=REPO_ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        # Its first round catches up what the idle run sent and creates the tables: the apps
        # are measured beside the rounds after it, the lake's steady state.
        if not harness.wait_until(lambda: ", round " in self.log.read_text(), 1200, 2.0):
            self.proc.kill()
            raise RuntimeError(f"the lake finished no first round; see {self.log}")

    def stop(self) -> list[LakeRound]:
        """Stops the loop (its running round's jobs end first); its rounds."""
        self.proc.terminate()
        try:
            self.proc.wait(600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        try:
            rounds = json.loads(self.out.read_text())["rounds"]
        except (OSError, ValueError, KeyError):
            return []
        return [LakeRound(**r) for r in rounds]


def measure(args: argparse.Namespace) -> Beside:
    runs = scenarios(args)
    apps: dict[str, dict[str, Result]] = {}
    errors: list[str] = []
    with harness.private_broker("beside", load_settings()) as (settings, workdir):
        names = ", ".join(s.name for s in runs)
        say(f"idle: {names} at once, {args.warmup:.0f} s warm-up, {args.duration:.0f} s", "beside")
        (workdir / "idle").mkdir()
        apps["idle"] = run_apps(settings, runs, workdir / "idle")
        (workdir / "lake").mkdir()
        say(f"beside: the lake on its engine, {args.slots} slot(s), nice {args.nice}", "beside")
        lake = EngineLake(settings, workdir / "lake", args.slots, args.nice)
        try:
            apps["beside"] = run_apps(settings, runs, workdir / "lake")
        finally:
            rounds = lake.stop()
        if not rounds:
            errors.append(f"the lake finished no round; see {lake.log}")
    goals, ratios = [], {}
    for scenario in runs:
        name = scenario.app.name
        idle, beside = (apps[k][name].whole.get("p99") for k in RUN_KEYS)
        ratios[name] = round(beside / idle, 2) if idle and beside else None
        target = TARGETS_MS[scenario.mode]
        goals.append(
            StatedGoal(
                goal=f"{name} ({scenario.mode}) p99 after its first {args.warmup:.0f} s at "
                f"{args.rate:,.0f} events/s, beside the lake's chain and view refreshes",
                target=f"<= {target:,.0f} ms (the target its page shows)",
                measured=f"{beside:,.0f} ms (lake idle: {idle:,.0f} ms)"
                if beside and idle
                else "not measured",
                met=beside is not None and beside <= target,
                bound=BOUND,
            )
        )
    for app in ops_apps():
        goal, ratio = app.bench.beside_p99_ratio, ratios.get(app.name)
        if goal is None:
            continue
        goals.append(
            StatedGoal(
                goal=f"{app.name} p99 beside the lake against idle",
                target=f"<= {goal}x",
                measured=f"{ratio}x" if ratio else "not measured",
                met=ratio is not None and ratio <= goal,
                bound=BOUND,
            )
        )
    return Beside(
        apps=[s.app.name for s in runs],
        scenarios=[s.name for s in runs],
        rate=args.rate,
        warmup_s=args.warmup,
        duration_s=args.duration,
        rtm_interval=args.rtm_interval
        or "each app's own: " + ", ".join(f"{s.app.name} {s.interval}" for s in runs),
        lake=Lake(slots=args.slots, nice=args.nice, rounds=rounds),
        cores=cores(),
        runs=apps,
        p99_ratio=ratios,
        goals=goals,
        errors=errors,
        load_average_end=load_average(),
        workdir=str(workdir),
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.ops.beside", description=__doc__, formatter_class=HelpFormatter
    )
    ops = [a.name for a in ops_apps()]
    parser.add_argument(
        "--apps", default=",".join(ops), help=f"the apps measured, at once (of {', '.join(ops)})"
    )
    parser.add_argument("--rate", type=float, default=200.0, help="events/s, each app")
    parser.add_argument("--warmup", type=float, default=120.0, help="seconds before measuring")
    parser.add_argument("--duration", type=float, default=240.0, help="measured seconds per run")
    parser.add_argument(
        "--rtm-interval",
        default=None,
        help="Real-Time Mode checkpoint interval (unset: each app's own, App.rtm_interval_s)",
    )
    parser.add_argument(
        "--slots", type=int, default=_SETTINGS.lake_pool_slots, help="the lake pool's slots"
    )
    parser.add_argument(
        "--nice", type=int, default=_SETTINGS.lake_nice, help="the lake's niceness (0-19)"
    )
    parser.add_argument("--out-dir", default=None, help="where beside.json goes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(load_settings())
    beside = measure(args)
    path = harness.write_json(out_dir / BESIDE_FILE, asdict(beside), indent=1)
    for app in beside.apps:
        idle, lake = (beside.run(app, key).whole.get("p99") for key in RUN_KEYS)
        say(
            f"{app}: p99 idle {idle} ms, beside the lake {lake} ms (x{beside.p99_ratio[app]})",
            "beside",
        )
    rounds = [(r.views_s, r.gold_s, r.round_s) for r in beside.lake.rounds]
    say(f"lake rounds (views, gold, round s) {rounds}; written to {path}", "beside")
    return 1 if beside.errors else 0


if __name__ == "__main__":
    sys.exit(main())
