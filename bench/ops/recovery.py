"""What a crash costs a Real-Time Mode app, per checkpoint interval: ``kill -9`` of its driver
in the middle of an interval, then a restart on the same checkpoint, as the supervisor does.

Not a test: it measures and reports. For each interval of ``--intervals``, on a private broker:
the app (Real-Time Mode, the knob values of its entry's ``bench.knobs``, so that every input
makes an output) gets :data:`RATE` events/s; after :data:`WARMUP_S` of traffic and the first
boundary after it, half an interval later, its process group (the Python driver and its JVM) is
killed with SIGKILL and the app is started again at once on the same checkpoint; the traffic
goes on for :data:`AFTER_S` after the restart. A crash loses the running batch: the restarted
query reads again from the offsets of the last boundary, so the inputs of that half interval are
processed twice and their outputs emitted twice (Real-Time Mode's Kafka sink is at-least-once;
consumers deduplicate by the topic's id fields, as silver does).

From the outputs read while it runs (:func:`analyse`): the outage (kill to the first output
after the restart), the inputs replayed (outputs of inputs sent before the kill that are emitted
after the restart), the duplicates (records whose id fields repeat an earlier record's), the
seconds from the restart until input sent after it comes out within the page's latency target
(the backlog then behind it) and within the pre-crash p99, the last output over the target (a
later boundary's pause counts too), and the p99 before and after. Each run's JSON (a
:class:`~bench.ops.recovery_report.RecoveryRun`) is kept as
``<out-dir>/recovery/<app>-<interval>.json`` (a run already there is not run again) and
``<out-dir>/recovery.json`` summarises them with each run's goal: back under the page's target
within :data:`~bench.ops.recovery_report.GOAL_S` of the restart. The benchmark report's section
(:mod:`bench.ops.recovery_report`) shows them. ``make bench`` does not run it: the three
intervals take about 25 minutes of both cores. ``make bench-recovery`` writes into the same
directory, so the next report there has the section.

``--quick`` is its smoke form (``make bench-quick`` runs it): one run of the registry's first
Real-Time Mode app at the quick suite's rate and Spark's shortest Real-Time Mode interval
(:data:`QUICK`: under a minute of traffic, and two app starts), always run again, kept apart from
the full runs as ``<out-dir>/recovery-quick/<app>-<interval>.json``::

    .venv/ops/bin/python -m bench.ops.recovery --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.recovery --out-dir .runtime/reports/bench \\
        --intervals "30 seconds" --app click_surge
    .venv/ops/bin/python -m bench.ops.recovery --quick --out-dir /tmp/bench-quick
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from adlake import generator, registry
from adlake.apps import interval_s
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import TopicReader, cores, latency_stats, load_average, say, start_app
from bench.ops.latency import Scenario, default_engine, launch, traffic
from bench.ops.recovery_report import FILE as SUMMARY_FILE, GOAL_S, RecoveryRun, goal_met, read_run
from bench.ops.suite import QUICK_RATE, QUICK_RTM_INTERVAL, first_realtime_app
from bench.ops.watchers import StatusWatcher, ts_ms
from bench.report_kit import Node

RATE, WARMUP_S, AFTER_S = 1000.0, 60.0, 120.0
INTERVALS = ("30 seconds", "1 minute", "5 minutes")
RUNS_DIR, QUICK_RUNS_DIR = "recovery", "recovery-quick"
RESTART_ALLOWANCE_S = 90.0  # a JVM and a query start on 2 cores, within the traffic's span
# What bounds the goal: most of the outage is the new JVM's and query's start.
GOAL_BOUND = "the restart: the new JVM's and query's start, then the half interval's replay"


@dataclass(frozen=True)
class Pace:
    """A run's traffic: its rate (events/s) and seconds of warm-up before the boundary the kill
    follows, of the restart's allowance and of traffic after it."""

    rate: float
    warmup_s: float
    restart_allowance_s: float
    after_s: float


FULL = Pace(RATE, WARMUP_S, RESTART_ALLOWANCE_S, AFTER_S)
# The smoke form: the quick suite's rate, a few seconds either side of the kill, and an allowance
# for the restart (an app start is 10-20 s on 2 cores): at a 5 s interval, under 50 s of traffic.
QUICK = Pace(QUICK_RATE, 5.0, 25.0, 10.0)


class IdReader(TopicReader):
    """An app's output topic: (output Kafka ms, ``source_kafka_ts`` ms, the topic's id fields)
    per record."""

    def __init__(self, bootstrap: str, topic: registry.Topic) -> None:
        super().__init__(bootstrap, topic.name)
        self.id_fields = topic.id_fields

    def sample(self, msg) -> tuple[float, float, tuple] | None:
        value = json.loads(msg.value())
        source = value.get("source_kafka_ts")
        if not source:
            return None
        return (
            float(msg.timestamp()[1]),
            ts_ms(source),
            tuple(value.get(f) for f in self.id_fields),
        )


def analyse(
    samples: list[tuple[float, float, tuple]],
    measure_from: float,
    killed: float,
    restarted: float,
    target_ms: float,
) -> dict:
    """The recovery's figures from the outputs (``(output ms, source ms, ids)``), the end of the
    warm-up, the kill and the restart (epoch ms).

    >>> s = [(1000, 990, ("a",)), (2000, 1990, ("b",)), (9000, 1990, ("b",)),
    ...      (9100, 5000, ("c",)), (9500, 9495, ("d",))]
    >>> f = analyse(s, 0, 3000, 6000, 1000)
    >>> f["outage_s"], f["replayed_outputs"], f["duplicates"], f["last_over_target_s"]
    (6.0, 1, 1, 3.1)
    >>> f["back_under_target_s"], f["caught_up_s"], f["p99_before_ms"]
    (3.5, 3.5, 10)
    """
    ordered = sorted(samples)
    before = [out - src for out, src, _ in ordered if measure_from <= src and out < killed]
    after = [(out, src) for out, src, _ in ordered if out >= restarted]
    p99_before = latency_stats(before)["p99"]
    over = [out for out, src in after if out - src > target_ms]
    caught = next(
        (out for out, src in after if src >= restarted and out - src <= (p99_before or 0)), None
    )
    # the first input sent after the restart that came out within the target: the backlog is
    # behind it (a partition's records are read in order)
    under = next((out for out, src in after if src >= restarted and out - src <= target_ms), None)
    ids = Counter(i for _, _, i in ordered)
    first_after = after[0][0] if after else None
    settled = (over[-1] if over else restarted) + 1
    return {
        "outage_s": round((first_after - killed) / 1000, 1) if first_after else None,
        "replayed_outputs": sum(1 for _, src in after if src < killed),
        "duplicates": sum(n - 1 for n in ids.values()),
        "distinct_ids": len(ids),
        "back_under_target_s": round((under - restarted) / 1000, 1) if under else None,
        # the last output over the target after the restart: a later boundary's pause too
        "last_over_target_s": round((max(over[-1], restarted) - restarted) / 1000, 1)
        if over
        else 0.0,
        "caught_up_s": round((caught - restarted) / 1000, 1) if caught else None,
        "p99_before_ms": p99_before,
        "after": latency_stats([out - src for out, src in after if out >= settled]),
    }


def kill_group(proc) -> None:
    """SIGKILL the app's process group (driver and JVM), as a crash ends it, and reap it."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run(
    settings: Settings, app: registry.App, interval: str, workdir: Path, pace: Pace = FULL
) -> RecoveryRun:
    """One recovery run (the module docstring's steps) on the broker of ``settings``."""
    every_s = interval_s(interval)
    scenario = Scenario(
        app, "realtime", pace.rate, pace.warmup_s, 0.0, default_engine(app), interval
    )
    settings, args, env = launch(settings, scenario, workdir)
    log, name = workdir / f"{scenario.name}.log", scenario.name
    target_ms = float(settings.latency_target_realtime_ms)
    load_start = load_average()
    proc = start_app(app, settings, args, log, env, own_group=True)
    watcher = StatusWatcher(settings, name)
    reader = None
    try:
        harness.wait_started(settings, name, proc, log)
        # once the query has started: its output topic then answers offset queries
        reader = IdReader(settings.kafka_bootstrap, registry.topic(app.outputs[0]))
        reader.start()
        watcher.start()
        time.sleep(5)  # the long-running batch's tasks are scheduled
        total_s = pace.warmup_s + 1.5 * every_s + pace.restart_allowance_s + pace.after_s
        config = generator.GeneratorConfig(
            rate=pace.rate,
            duration_s=total_s,
            seed=int(pace.rate),
            topic_partitions=settings.topic_partitions,
            **traffic(app),
        )
        sending = threading.Thread(
            target=generator.run,
            args=(config, settings.kafka_bootstrap),
            kwargs={"progress": False},
            daemon=True,
        )
        started = time.time() * 1000
        say(f"{name}: producing {pace.rate:.0f}/s for {total_s:.0f} s; kill -9 mid-interval")
        sending.start()
        measure_from = started + pace.warmup_s * 1000

        def boundary_after_warmup() -> float | None:
            ends = [
                b["started_ms"] + (b["duration_ms"] or 0)
                for b in watcher.batches.values()
                if b["duration_ms"]
            ]
            return next((e for e in sorted(ends) if e >= measure_from), None)

        harness.wait_until(lambda: boundary_after_warmup() is not None, total_s, poll_s=0.5)
        boundary = boundary_after_warmup()
        if boundary is None:
            raise RuntimeError(f"{name}: no boundary after the warm-up; see {log}")
        time.sleep(max(0.0, (boundary + every_s * 500) / 1000 - time.time()))
        killed = time.time() * 1000
        kill_group(proc)
        say(f"{name}: killed (kill -9) {(killed - boundary) / 1000:.0f} s after a boundary")
        restarted = time.time() * 1000
        proc = start_app(app, settings, args, log, env, own_group=True)
        sending.join()
        time.sleep(5)  # the outputs of the last inputs
    finally:
        if reader is not None:
            reader.stopping.set()
        watcher.stopping.set()
        harness.stop_app(proc)
    figures = analyse(reader.samples, measure_from, killed, restarted, target_ms)
    say(f"{name}: {figures}")
    return RecoveryRun(
        app=app.name,
        rtm_interval=interval,
        rate=pace.rate,
        warmup_s=pace.warmup_s,
        after_s=pace.after_s,
        target_ms=target_ms,
        killed_after_boundary_s=round((killed - boundary) / 1000, 1),
        cores=cores(),
        load_average=(load_start, load_average()),
        **figures,
    )


def run_file(out_dir: Path, app: str, interval: str, quick: bool = False) -> Path:
    """Where one run's JSON is kept (a quick run's apart from the full runs').

    >>> run_file(Path("r"), "click_surge", "5 minutes").as_posix()
    'r/recovery/click_surge-300s.json'
    >>> run_file(Path("r"), "click_surge", "5 seconds", quick=True).as_posix()
    'r/recovery-quick/click_surge-5s.json'
    """
    runs_dir = QUICK_RUNS_DIR if quick else RUNS_DIR
    return out_dir / runs_dir / f"{app}-{interval_s(interval):.0f}s.json"


def goal(run: RecoveryRun, older: bool) -> dict:
    """A run's goal, as the report's goals table reads it: back under the page's target within
    :data:`~bench.ops.recovery_report.GOAL_S` of the restart.

    >>> run = RecoveryRun("click_surge", "30 seconds", 1000, 60, 120, 1000, 15, 2, (1, 1),
    ...                   20.0, 9, 9, 99, 36.2, 70.0, 36.2, 60.0, {})
    >>> g = goal(run, older=False)
    >>> g["target"], g["measured"], g["met"]
    ('<= 60 s', '36.2 s (the last output over the target 70.0 s)', True)
    """
    if older:
        measured = (
            "not measured (a run file of the older field set; the last output over the "
            f"target {run.last_over_target_s} s)"
        )
    elif run.back_under_target_s is None:
        measured = "not back under it before the traffic ended"
    else:
        measured = (
            f"{run.back_under_target_s} s (the last output over the target "
            f"{run.last_over_target_s} s)"
        )
    return {
        "goal": f"{run.app} back under the page's {run.target_ms / 1000:g} s target after a "
        f"kill -9 mid-interval ({run.rtm_interval} checkpoint interval, {run.rate:,.0f} "
        "events/s), from the restart",
        "target": f"<= {GOAL_S:.0f} s",
        "measured": measured,
        "met": bool(goal_met(run, older)),
        "bound": GOAL_BOUND,
    }


def summarise(out_dir: Path, quick: bool = False) -> dict:
    """``recovery.json``: every run file present (the full runs' in the order of
    :data:`INTERVALS`, or the quick run's), as it was written, and each run's goal."""
    runs, goals = [], []
    for app in registry.ops_apps():
        for interval in (QUICK_RTM_INTERVAL,) if quick else INTERVALS:
            path = run_file(out_dir, app.name, interval, quick)
            if not path.is_file():
                continue
            value = json.loads(path.read_text())
            runs.append(value)
            goals.append(goal(*read_run(Node(path.relative_to(out_dir).as_posix(), "", value))))
    command = "python -m bench.ops.recovery" + (" --quick" if quick else "") + " --out-dir DIR"
    summary = {"quick": quick, "command": command, "runs": runs, "goals": goals}
    harness.write_json(out_dir / SUMMARY_FILE, summary, indent=1)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.ops.recovery", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="where recovery.json goes (unset: <reports>/bench, or <reports>/bench-quick with "
        "--quick)",
    )
    parser.add_argument(
        "--app",
        default=None,
        help="the app, run in Real-Time Mode (unset: the registry's first whose default trigger "
        "is Real-Time Mode)",
    )
    parser.add_argument(
        "--intervals",
        default=None,
        help=f"checkpoint intervals, comma-separated (unset: {', '.join(INTERVALS)}; with "
        f"--quick, {QUICK_RTM_INTERVAL})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the smoke form: one run at a checkpoint interval of {QUICK_RTM_INTERVAL}, "
        f"{QUICK.rate:g} events/s, {QUICK.warmup_s:g} s of warm-up and {QUICK.after_s:g} s "
        "after the restart's allowance, run again even if its file is there",
    )
    args = parser.parse_args(argv)
    if args.quick and args.intervals:
        parser.error(f"--quick runs one interval, {QUICK_RTM_INTERVAL}: drop --intervals")
    base = load_settings()
    out_dir = args.out_dir or harness.report_dir(base, args.quick)
    app = registry.app(args.app) if args.app else first_realtime_app()
    intervals = (
        [QUICK_RTM_INTERVAL] if args.quick else (args.intervals or ",".join(INTERVALS)).split(",")
    )
    for interval in intervals:
        path = run_file(out_dir, app.name, interval, args.quick)
        if path.is_file() and not args.quick:
            continue
        path.unlink(missing_ok=True)  # a smoke run's earlier figures are not this run's
        say(f"recovery: {app.name} at a {interval} interval")
        with harness.private_broker(f"recovery-{app.name}", base) as (settings, work):
            result = run(settings, app, interval, work, QUICK if args.quick else FULL)
            harness.write_json(path, asdict(result))
    summary = summarise(out_dir, args.quick)
    say(f"recovery: {len(summary['runs'])} runs in {out_dir / SUMMARY_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
