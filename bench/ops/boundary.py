"""Real-Time Mode's checkpoint boundary against deployment settings: the partitions, the state
store's and the checkpoint's settings, and the timer burst, each measured the same way.

Not a test: it measures and reports. Each :func:`configurations` entry is one latency run per
app (:func:`bench.ops.latency.run_scenario`: Real-Time Mode, :data:`RATE` events/s, the default
30 s checkpoint interval, :data:`WARMUP_S` of warm-up and :data:`MEASURED_S` measured) on its
own private broker, whose topics have the configuration's partitions. Runs go one after another
(on 2 cores two at once would measure each other). Each run's JSON is kept as
``<out-dir>/boundary/<configuration>-<app>[-r<n>].json``; a run already there is not run again
(delete its file to measure it again), so an interrupted matrix resumes where it stopped. Then
``<out-dir>/boundary.json`` summarises every run file present (:func:`summarise`) for the
benchmark report (``bench.report``: a table per run and the CDF of the best configuration).
The run files are raw output and stay under the runtime's reports; a committed report keeps
only ``boundary.json``::

    .venv/ops/bin/python -m bench.ops.boundary --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.boundary --out-dir .runtime/reports/bench --only 2-2,2-2-min-deltas-100
    .venv/ops/bin/python -m bench.ops.boundary --out-dir .runtime/reports/bench --repeat 2 --only 2-2
    .venv/ops/bin/python -m bench.ops.boundary --out-dir .runtime/reports/bench --summarise-only
    .venv/ops/bin/python -m bench.ops.boundary --out-dir .runtime/reports/bench --summarise-only \\
        --keep docs/bench/boundary.json

What a boundary is and how its stall is measured: ``bench.ops.latency.boundaries`` and
docs/bench/attribution-boundary.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from adlake import registry
from adlake.apps import interval_s
from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import cores, say
from bench.ops.boundary_report import BoundaryMatrix, BoundaryRun, LocalDefault, read_matrix
from bench.ops.latency import (
    Scenario,
    default_engine,
    knob_flags,
    ops_apps,
    rtm_slots,
    run_scenario,
)
from bench.report_kit import Node, StatedGoal
from spark_apps.common.streaming.triggers import DEFAULT_RTM_INTERVAL

RATE, WARMUP_S, MEASURED_S = 1000.0, 60.0, 120.0
# A run of a longer interval lasts this many intervals, so that it crosses that many boundaries.
MIN_BOUNDARIES = 3
# The checkpoint intervals compared at the local default (Spark's own default is 5 minutes).
INTERVALS = (("1min", "1 minute"), ("5min", "5 minutes"))
SUMMARY_FILE = "boundary.json"
RUNS_DIR = "boundary"
GOAL_BOUND = (
    "the batch end and restart at each boundary (planning, offset and commit logs, task "
    "relaunch), and for attribution the closes fired behind it once they fall due: see "
    "docs/bench/attribution-boundary.md"
)


@dataclass(frozen=True)
class Configuration:
    """One deployment setting to measure: the topics' and the state store's partitions, the
    checkpoint's file checksums (ADLAKE_CHECKPOINT_CHECKSUMS), Spark settings for the app's
    session (``--conf``), arguments for the app, and the apps it concerns."""

    name: str
    changes: str  # what the report calls it
    topic_partitions: int
    shuffle_partitions: int
    checkpoint_checksums: bool = True  # Spark's default, and the local one before it was measured
    conf: tuple[str, ...] = ()
    app_args: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    rtm_interval: str = DEFAULT_RTM_INTERVAL  # the checkpoint interval (``--trigger-interval``)

    @property
    def measured_s(self) -> float:
        """Seconds measured: :data:`MEASURED_S`, or at least :data:`MIN_BOUNDARIES` intervals.

        >>> by_name()["2-2"].measured_s, by_name()["2-2-no-file-checksum-5min"].measured_s
        (120.0, 900.0)
        """
        return max(MEASURED_S, MIN_BOUNDARIES * interval_s(self.rtm_interval))


def matrix_apps() -> tuple[registry.App, ...]:
    """The apps the matrix measures: every operational app of the registry, those whose default
    trigger is Real-Time Mode (the mode measured here) first, then the others, each in the
    registry's order.

    >>> [a.name for a in matrix_apps()]
    ['click_surge', 'attribution']
    """
    return tuple(sorted(ops_apps(), key=lambda a: a.default_trigger != "realtime"))


def p99_goal_ms() -> dict[str, float]:
    """Whole-run p99 goals at :data:`RATE` with the default interval, on 2 cores, for the best
    configuration, by app (``App.bench.boundary_p99_ms``; an app without one has no goal)."""
    return {
        a.name: a.bench.boundary_p99_ms
        for a in matrix_apps()
        if a.bench.boundary_p99_ms is not None
    }


MIN_DELTAS_100 = ("spark.sql.streaming.stateStore.minDeltasForSnapshot=100",)


def configurations() -> tuple[Configuration, ...]:
    """The matrix, for the registry's apps as they are now: each partition and checkpoint setting
    for every app, the state store's settings at (4, 4) for the apps deployed in Real-Time Mode,
    and each app's timer-burst rules (``App.bench.burst``) at (2, 2) and (1, 1)."""
    apps = matrix_apps()
    every = tuple(a.name for a in apps)
    realtime = tuple(a.name for a in apps if a.default_trigger == "realtime")
    return (
        Configuration("4-4", "checksums on: the earlier local default", 4, 4, apps=every),
        Configuration("2-2", "checksums on", 2, 2, apps=every),
        Configuration("1-1", "checksums on", 1, 1, apps=every),
        Configuration(
            "4-4-min-deltas-100",
            "stateStore.minDeltasForSnapshot=100 (default 10)",
            4,
            4,
            conf=MIN_DELTAS_100,
            apps=realtime,
        ),
        Configuration(
            "4-4-maintenance-600s",
            "stateStore.maintenanceInterval=600s (default 60s)",
            4,
            4,
            conf=("spark.sql.streaming.stateStore.maintenanceInterval=600s",),
            apps=realtime,
        ),
        Configuration(
            "2-2-min-deltas-100",
            "stateStore.minDeltasForSnapshot=100 (default 10)",
            2,
            2,
            conf=MIN_DELTAS_100,
            apps=every,
        ),
        Configuration(
            "2-2-no-file-checksum", "checksums off: the local default", 2, 2, False, apps=every
        ),
        Configuration("1-1-no-file-checksum", "checksums off", 1, 1, False, apps=every),
        *(
            Configuration(
                f"2-2-no-file-checksum-{short}",
                f"checksums off, a {interval} checkpoint interval",
                2,
                2,
                False,
                apps=realtime,
                rtm_interval=interval,
            )
            for short, interval in INTERVALS
        ),
        *(
            Configuration(
                f"{n}-{n}-{burst.name}",
                burst.changes,
                n,
                n,
                app_args=tuple(knob_flags(app, burst.knobs)),
                apps=(app.name,),
            )
            for n in (2, 1)
            for app in apps
            if (burst := app.bench.burst) is not None
        ),
    )


def by_name() -> dict[str, Configuration]:
    """:func:`configurations` by name."""
    return {c.name: c for c in configurations()}


def run_file(out_dir: Path, config: Configuration, app: str, repeat: int = 1) -> Path:
    """Where one run's JSON is kept.

    >>> run_file(Path(".runtime/reports/bench"), by_name()["2-2"], "attribution", 2).as_posix()
    '.runtime/reports/bench/boundary/2-2-attribution-r2.json'
    """
    suffix = f"-r{repeat}" if repeat > 1 else ""
    return out_dir / RUNS_DIR / f"{config.name}-{app}{suffix}.json"


def measure(config: Configuration, app_name: str, path: Path) -> None:
    """One run of ``app_name`` under ``config`` on a private broker; its JSON at ``path`` (the
    shape ``bench.ops.latency --out`` writes, plus the configuration)."""
    app = registry.app(app_name)
    base = load_settings().with_overrides(
        topic_partitions=config.topic_partitions,
        shuffle_partitions=config.shuffle_partitions,
        checkpoint_checksums=config.checkpoint_checksums,
    )
    scenario = Scenario(
        app,
        "realtime",
        RATE,
        WARMUP_S,
        config.measured_s,
        default_engine(app),
        config.rtm_interval,
        config.app_args,
        config.conf,
    )
    with harness.private_broker(f"boundary-{config.name}-{app_name}", base) as (settings, work):
        result = run_scenario(settings, scenario, work)
    harness.write_json(
        path,
        {
            "app": app_name,
            "configuration": asdict(config),
            "duration_s": config.measured_s,
            "warmup_s": WARMUP_S,
            "cores": cores(),
            "results": [asdict(result)],
        },
    )


# -- the summary --------------------------------------------------------------------------------

# The steps of a boundary, from the progress of the batches on either side of it (see
# bench.ops.latency.boundary_phases) and the stateful operator's metrics, summed over its
# state-store partitions: the state store's commit (of it the changelog file written and synced)
# and its reload for the next batch.
STEPS = ("commitOffsets", "latestOffset", "walCommit", "queryPlanning", "addBatchOverInterval")
STATE_STEPS = {
    "state_commit": "commitTimeMs",
    "changelog_sync": "rocksdbCommitFileSyncLatencyMs",
    "state_load": "rocksdbLoadLatencyMs",
    # the batch's time in expired timers (those that fire right after the boundary before it)
    "timer_processing": "timerProcessingTimeMs",
}


def _median(values: list[float | None]) -> float | None:
    """The median of the values present, to 0.1; None when there are none.

    >>> _median([3, None, 1, 2]), _median([None])
    (2, None)
    """
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


def _operator_sum(boundary: dict, metric: str) -> float | None:
    """``metric`` (an operator field or custom metric) summed over the stateful operators at a
    boundary; None when no operator reports it."""
    found = [
        op.get(metric, (op.get("customMetrics") or {}).get(metric))
        for op in boundary.get("state_operator_metrics") or []
    ]
    found = [v for v in found if v is not None]
    return float(sum(found)) if found else None


def summarise_run(run: dict, config: Configuration, repeat: int) -> BoundaryRun:
    """One run's row of ``boundary.json``: the configuration, the stalls (median, max), the
    whole run's and the between-boundary latencies, each step of the boundary (median over its
    boundaries), the timers fired, throughput, the load average and the 1001 quantiles."""
    result = run["results"][0]
    bounds = result["boundaries"]
    stalls = [b["stall_ms"] for b in bounds if b.get("stall_ms") is not None]
    app = registry.app(run["app"])
    settings = load_settings().with_overrides(
        topic_partitions=config.topic_partitions, shuffle_partitions=config.shuffle_partitions
    )
    return BoundaryRun(
        configuration=config.name,
        changes=config.changes,
        app=run["app"],
        repeat=repeat,
        topic_partitions=config.topic_partitions,
        shuffle_partitions=config.shuffle_partitions,
        checkpoint_checksums=config.checkpoint_checksums,
        tasks=rtm_slots(app, settings),
        conf=list(config.conf),
        app_args=list(config.app_args),
        boundaries=len(bounds),
        stall_ms={"median": _median(stalls), "max": max(stalls) if stalls else None},
        peak_ms={"median": _median([b.get("peak_ms") for b in bounds])},
        rtm_interval=config.rtm_interval,
        whole={
            **{k: result["whole"].get(k) for k in ("p50", "p99", "max")},
            # quantile 999 of 1000 (nearest rank)
            "p99.9": (result.get("quantiles_ms") or [None] * 1001)[999],
        },
        stalls_ms=stalls,
        between_boundaries={"p99": result["between_boundaries"].get("p99")},
        timer_driven=result.get("timer_driven") or {},
        steps_ms={
            **{s: _median([(b.get("durations_ms") or {}).get(s) for b in bounds]) for s in STEPS},
            **{k: _median([_operator_sum(b, m) for b in bounds]) for k, m in STATE_STEPS.items()},
        },
        timers_fired=_median([b.get("timers_fired") for b in bounds]),
        output_rows_per_s=result.get("output_rows_per_s"),
        lag_at_end_ms=result.get("lag_at_end_ms"),
        load_average=tuple(result["load_average"]),
        quantiles_ms=result.get("quantiles_ms") or [],
    )


def goals_of(rows: list[BoundaryRun]) -> list[StatedGoal]:
    """Each app's p99 goal against its best run (lowest whole-run p99) of two kinds: with the
    app's own rules, where a 3-minute attribution run fires no close (its window is 300 s),
    and, for an app measured so, with the timer-burst rules, where every boundary fires the
    closes of the interval before it, as a long-running attribution does once they fall due."""
    goals = []
    for burst in (False, True):
        for app, target in p99_goal_ms().items():
            runs = [
                r
                for r in rows
                if r.app == app
                and bool(r.app_args) == burst
                and (r.rtm_interval or DEFAULT_RTM_INTERVAL) == DEFAULT_RTM_INTERVAL
                and r.whole.get("p99") is not None
            ]
            if burst and not runs:
                continue
            best = min(runs, key=lambda r: r.whole["p99"], default=None)
            goals.append(
                StatedGoal(
                    goal=f"{app} whole-run p99 in Real-Time Mode at {RATE:,.0f} events/s "
                    f"({DEFAULT_RTM_INTERVAL} interval), best configuration"
                    + (", timers firing at every boundary" if burst else ""),
                    target=f"<= {target:.0f} ms",
                    measured=f"{best.whole['p99']:,.0f} ms ({best.changes}, "
                    f"({best.topic_partitions}, {best.shuffle_partitions}))"
                    if best
                    else "not measured",
                    met=best is not None and best.whole["p99"] <= target,
                    bound=GOAL_BOUND,
                )
            )
    goals += timer_goals(rows)
    return goals


def timer_goals(rows: list[BoundaryRun]) -> list[StatedGoal]:
    """Per app with timer-driven records measured: every such record emitted within its bound
    (the window + the lateness + the interval + 1 s after its key's newest input,
    ``bench.ops.latency.timer_bound_ms``), over all the runs that emitted any.

    >>> from types import SimpleNamespace
    >>> row = SimpleNamespace(app="attribution", timer_driven={"n": 4, "within_bound": 3,
    ...                                                       "max": 57000.0, "bound_ms": 56000.0})
    >>> [(g.measured, g.met) for g in timer_goals([row])]
    [('3 of 4 within (max 57,000 ms)', False)]
    """
    goals = []
    for app in dict.fromkeys(r.app for r in rows if (r.timer_driven or {}).get("n")):
        timed = [r.timer_driven for r in rows if r.app == app and r.timer_driven]
        n, within = sum(t["n"] for t in timed), sum(t["within_bound"] for t in timed)
        goals.append(
            StatedGoal(
                goal=f"{app}: timer-driven records (closes, orphans) emitted within window + "
                "lateness + interval + 1 s of their key's newest input",
                target="all",
                measured=f"{within:,} of {n:,} within (max {max(t['max'] for t in timed):,.0f} ms)",
                met=within == n,
                bound="timers fire at the first boundary after they fall due",
            )
        )
    return goals


def summarise(out_dir: Path, keep: BoundaryMatrix | None = None) -> BoundaryMatrix:
    """``boundary.json`` from every run file under ``out_dir/boundary``, in the order of
    :func:`configurations` then the apps' and the repeats'; written and returned. ``keep``: an
    earlier ``boundary.json`` (a committed one, whose run files are not kept) whose runs are
    kept unless a run file here measures the same configuration, app and repeat."""
    rows = []
    for config in configurations():
        for app in config.apps:
            repeat = 1
            while (path := run_file(out_dir, config, app, repeat)).is_file():
                rows.append(summarise_run(json.loads(path.read_text()), config, repeat))
                repeat += 1
    rows = merged(rows, keep.runs if keep else [])
    goals = goals_of(rows)
    defaults = load_settings({"ADLAKE_PROFILE": "local"})
    loads = [r.load_average for r in rows if r.load_average]
    summary = BoundaryMatrix(
        rate=RATE,
        rtm_interval=DEFAULT_RTM_INTERVAL,
        warmup_s=WARMUP_S,
        duration_s=MEASURED_S,
        cores=cores(),
        local_default=LocalDefault(
            topic_partitions=registry.partitions("page_clicks", defaults),
            shuffle_partitions=defaults.shuffle_partitions,
            checkpoint_checksums=defaults.checkpoint_checksums,
        ),
        command="python -m bench.ops.boundary --out-dir DIR",
        p99_goal_ms=p99_goal_ms(),
        goals=goals,
        runs=rows,
        load_average=(
            min((start for start, _ in loads), default=0.0),
            max((end for _, end in loads), default=0.0),
        ),
    )
    harness.write_json(out_dir / SUMMARY_FILE, asdict(summary), indent=1)
    return summary


def merged(rows: list[BoundaryRun], kept: list[BoundaryRun]) -> list[BoundaryRun]:
    """``rows`` and those of ``kept`` that no row of ``rows`` measures again (same configuration,
    app and repeat), in the matrix's order; a kept row of a configuration no longer in the matrix
    goes last.

    >>> from types import SimpleNamespace
    >>> row = lambda c, a, n: SimpleNamespace(configuration=c, app=a, repeat=n, key=(c, a, n))
    >>> [r.key for r in merged([row("2-2", "click_surge", 1)],
    ...     [row("2-2", "click_surge", 1), row("4-4", "click_surge", 1), row("gone", "x", 1)])]
    [('4-4', 'click_surge', 1), ('2-2', 'click_surge', 1), ('gone', 'x', 1)]
    """
    matrix = list(by_name().values())
    names = [c.name for c in matrix]

    def order(row: BoundaryRun) -> tuple:
        if row.configuration not in names:
            return (len(names), 0, row.repeat)
        apps = matrix[names.index(row.configuration)].apps
        app = apps.index(row.app) if row.app in apps else len(apps)
        return (names.index(row.configuration), app, row.repeat)

    measured = {r.key for r in rows}
    return sorted(rows + [r for r in kept if r.key not in measured], key=order)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.ops.boundary", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--out-dir", type=Path, required=True, help="where boundary.json and boundary/ go"
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated configurations to run (default: all): " + ", ".join(by_name()),
    )
    parser.add_argument(
        "--apps",
        default=",".join(a.name for a in ops_apps()),
        help="comma-separated apps to run (each configuration names the ones it concerns)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each configuration and app (default 1)"
    )
    parser.add_argument(
        "--summarise-only", action="store_true", help="write boundary.json from the runs present"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="an earlier boundary.json (say docs/bench/boundary.json) whose runs the summary "
        "keeps unless a run file measures them again",
    )
    return parser.parse_args(argv)


def plan(
    only: str, apps: str, repeats: int, out_dir: Path
) -> list[tuple[Configuration, str, Path]]:
    """The runs asked for, in the matrix's order: (configuration, app, run file) for each
    configuration of ``only`` (comma-separated; empty: all), each of its apps in ``apps``
    (comma-separated) and each repeat. ValueError for a configuration not in the matrix.

    >>> [(c.name, app) for c, app, _ in plan("2-2,2-2-window-20", "attribution", 1, Path("d"))]
    [('2-2', 'attribution'), ('2-2-window-20', 'attribution')]
    """
    matrix = by_name()
    names = [n for n in only.split(",") if n] or list(matrix)
    unknown = [n for n in names if n not in matrix]
    if unknown:
        raise ValueError(
            f"unknown configuration {', '.join(unknown)}; expected one of {', '.join(matrix)}"
        )
    wanted = set(apps.split(","))
    return [
        (matrix[n], app, run_file(out_dir, matrix[n], app, repeat))
        for n in names
        for app in matrix[n].apps
        if app in wanted
        for repeat in range(1, repeats + 1)
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        todo = plan(args.only, args.apps, args.repeat, args.out_dir)
    except ValueError as error:
        print(f"bench.ops.boundary: {error}", file=sys.stderr)
        return 2
    todo = [] if args.summarise_only else [t for t in todo if not t[2].is_file()]
    for i, (config, app, path) in enumerate(todo, 1):
        say(f"boundary: run {i}/{len(todo)}: {config.name} {app} ({config.changes})")
        measure(config, app, path)
    keep = (
        read_matrix(Node(str(args.keep), "", json.loads(args.keep.read_text())))
        if args.keep
        else None
    )
    summary = summarise(args.out_dir, keep)
    say(f"boundary: {len(summary.runs)} runs in {args.out_dir / SUMMARY_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
