"""Real-Time Mode's boundary against its settings: its part of the benchmark report.

``boundary.json`` (``bench.ops.boundary``): each app's run under each configuration of
partitions, checkpoint checksums, state-store settings and rules, with its boundary's stall and
steps; a table of them, each app's best run, and a plot of the CDFs of the local default's, the
earlier (4, 4) default's and the best run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.ops.latency_report import APPS
from bench.report_kit import (
    QUANTILES,
    Goal,
    Node,
    Plot,
    Section,
    StatedGoal,
    cdf_axes,
    fmt,
    load_average,
    load_text,
    ms,
    pyplot,
    table,
)

FILE = "boundary.json"
# An analysis a benchmark of the boundary may leave beside the report.
NOTE = "attribution-boundary.md"


@dataclass(frozen=True, kw_only=True)
class BoundaryRun:
    """A row of ``boundary.json``'s ``runs``: one app under one configuration, as
    ``bench.ops.boundary.summarise_run`` writes it. The fields the report does not show are None
    in a file that lacks them (the report's summary, a file from before the field)."""

    configuration: str
    changes: str  # what the report calls the configuration
    app: str
    repeat: int
    topic_partitions: int
    shuffle_partitions: int  # the state store's
    checkpoint_checksums: bool | None = None
    tasks: int
    conf: list[str]  # Spark settings of the app's session
    app_args: list[str]  # the app's own arguments (its rules)
    boundaries: int | None = None
    stall_ms: dict[str, float | None]  # median, max
    peak_ms: dict[str, float | None] | None = None  # median
    rtm_interval: str | None = None  # None: a row from before the field (the default's)
    whole: dict[str, float | None]  # p50, p99, max, p99.9
    stalls_ms: list[float] | None = None
    between_boundaries: dict[str, float | None]  # p99
    # the timer-driven records apart (p50/p99/max/n, bound_ms, within_bound); {}: none
    timer_driven: dict[str, float | None] | None = None
    # median per step (bench.ops.boundary.STEPS, STATE_STEPS); None: no boundary reported it
    steps_ms: dict[str, float | None]
    timers_fired: float | None
    output_rows_per_s: float | None
    lag_at_end_ms: float | None = None
    load_average: tuple[float, float]
    quantiles_ms: list[float]  # QUANTILES, or none

    @property
    def partitions(self) -> tuple[int, int]:
        """(topic, shuffle)"""
        return self.topic_partitions, self.shuffle_partitions

    @property
    def plain(self) -> bool:
        """Partitions only: no setting and no rule changed."""
        return not self.conf and not self.app_args

    @property
    def key(self) -> tuple[str, str, int]:
        """What a run measures: its configuration, app and repeat."""
        return self.configuration, self.app, self.repeat


@dataclass(frozen=True, kw_only=True)
class LocalDefault:
    """The local profile's (topic, shuffle) partitions and checkpoint checksums."""

    topic_partitions: int
    shuffle_partitions: int
    checkpoint_checksums: bool


@dataclass(frozen=True, kw_only=True)
class BoundaryMatrix:
    """``boundary.json``, as ``bench.ops.boundary.summarise`` writes it: the runs, their rate,
    interval and times, the local default, the goals."""

    rate: float
    rtm_interval: str
    warmup_s: float
    duration_s: float
    cores: int | None = None
    local_default: LocalDefault
    command: str | None = None
    p99_goal_ms: dict[str, float]  # per app
    goals: list[StatedGoal]
    runs: list[BoundaryRun]
    load_average: tuple[float, float] | None = None  # the runs' lowest start, highest end

    @property
    def default(self) -> tuple[int, int]:
        return self.local_default.topic_partitions, self.local_default.shuffle_partitions


def figures(node: Node, key: str) -> dict[str, float | None]:
    """An object of numbers as written, null ones None."""
    inner = node.get(key)
    if not isinstance(inner.value, Mapping):
        raise inner._fail("an object")
    return {k: inner.num(k, optional=True) for k in inner.value}


def texts(node: Node, key: str) -> list[str]:
    return [n.text_value() for n in node.items(key)]


def whole_number(node: Node) -> int:
    return int(node.num())


def read_run(r: Node) -> BoundaryRun:
    quantiles = r.numbers("quantiles_ms")
    if quantiles and len(quantiles) != QUANTILES:
        raise r.get("quantiles_ms")._fail(f"{QUANTILES} numbers or none")
    return BoundaryRun(
        configuration=r.text("configuration"),
        changes=r.text("changes"),
        app=r.text("app"),
        repeat=int(r.num("repeat")),
        topic_partitions=int(r.num("topic_partitions")),
        shuffle_partitions=int(r.num("shuffle_partitions")),
        checkpoint_checksums=r.unshown("checkpoint_checksums", Node.flag_value),
        tasks=int(r.num("tasks")),
        conf=texts(r, "conf"),
        app_args=texts(r, "app_args"),
        boundaries=r.unshown("boundaries", whole_number),
        stall_ms=figures(r, "stall_ms"),
        peak_ms=r.unshown("peak_ms", lambda n: {k: n.num(k, optional=True) for k in n.value}),
        rtm_interval=r.unshown("rtm_interval", Node.text_value),
        whole=figures(r, "whole"),
        stalls_ms=r.unshown("stalls_ms", lambda n: [s.num() for s in n.items()]),
        between_boundaries=figures(r, "between_boundaries"),
        timer_driven=r.unshown(
            "timer_driven", lambda n: {k: n.num(k, optional=True) for k in n.value}
        ),
        steps_ms=figures(r, "steps_ms"),
        timers_fired=r.num("timers_fired", optional=True),
        output_rows_per_s=r.num("output_rows_per_s", optional=True),
        lag_at_end_ms=r.unshown("lag_at_end_ms", Node.num),
        load_average=load_average(r),
        quantiles_ms=quantiles,
    )


def read_matrix(node: Node) -> BoundaryMatrix:
    default = node.get("local_default")
    return BoundaryMatrix(
        rate=node.num("rate"),
        rtm_interval=node.text("rtm_interval"),
        warmup_s=node.num("warmup_s"),
        duration_s=node.num("duration_s"),
        cores=node.unshown("cores", whole_number),
        local_default=LocalDefault(
            topic_partitions=int(default.num("topic_partitions")),
            shuffle_partitions=int(default.num("shuffle_partitions")),
            checkpoint_checksums=default.flag("checkpoint_checksums"),
        ),
        command=node.unshown("command", Node.text_value),
        p99_goal_ms=node.mapping("p99_goal_ms"),
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        runs=[read_run(r) for r in node.items("runs")],
        load_average=node.unshown("load_average", lambda n: tuple(x.num() for x in n.items())),
    )


def read_boundary(node: Node) -> tuple[BoundaryMatrix, list[Goal]]:
    matrix = read_matrix(node)
    return matrix, [Goal.of("boundary", g) for g in matrix.goals]


def best_runs(boundary: BoundaryMatrix) -> dict[str, BoundaryRun]:
    """Per app, the run with the lowest whole-run p99 among those at the app's usual rules (a
    timer-burst run changes the app's rules, so it is compared only with its own kind)."""
    best: dict[str, BoundaryRun] = {}
    for run in boundary.runs:
        p99 = run.whole.get("p99")
        if p99 is None or run.app_args:
            continue
        if run.app not in best or p99 < best[run.app].whole["p99"]:
            best[run.app] = run
    return best


def boundary_section(b: BoundaryMatrix | None) -> str:
    out = ["## Real-Time Mode's boundary against its settings (`boundary.json`)", ""]
    if b is None:
        return "\n".join(out + [f"Not in this run: `make bench-boundary` writes `{FILE}`."])
    out += [
        f"Each app in Real-Time Mode at {fmt(b.rate, ' events/s', 0)}, a checkpoint interval "
        f"of {b.rtm_interval}, {fmt(b.warmup_s, ' s', 0)} of warm-up and "
        f"{fmt(b.duration_s, ' s', 0)} measured, one run after another on a private broker "
        "whose topics have the configuration's partitions (`python -m bench.ops.boundary`). "
        "A boundary's **stall** is the longest gap in the output around the end of a "
        "long-running batch; the steps are medians over the run's boundaries: the ending "
        "batch's `addBatch` past the interval and `commitOffsets`, the next batch's "
        "`latestOffset`, `walCommit` and `queryPlanning`, and the stateful operator's state "
        "commit (of it the changelog file written and synced) and reload, summed over its "
        f"state-store partitions. The local default is ({b.default[0]}, {b.default[1]}) "
        "(topic, shuffle) partitions, checkpoint checksums "
        + ("on." if b.local_default.checkpoint_checksums else "off."),
        "",
        table(
            [
                "app",
                "configuration",
                "(topic, shuffle) partitions",
                "tasks",
                "stall median / max",
                "whole p50 / p99 / max",
                "between-boundary p99",
                "state commit (sync) / load",
                "planning + logs",
                "addBatch past interval",
                "timers fired (their time)",
                "outputs/s",
                "load avg",
            ],
            [
                [
                    r.app,
                    r.changes + (f" (run {r.repeat})" if r.repeat > 1 else ""),
                    f"({r.partitions[0]}, {r.partitions[1]})",
                    str(r.tasks),
                    f"{ms(r.stall_ms.get('median'))} / {ms(r.stall_ms.get('max'))}",
                    " / ".join(ms(r.whole.get(k)) for k in ("p50", "p99", "max")),
                    ms(r.between_boundaries.get("p99")),
                    f"{ms(r.steps_ms.get('state_commit'))} "
                    f"({ms(r.steps_ms.get('changelog_sync'))}) / "
                    f"{ms(r.steps_ms.get('state_load'))}",
                    ms(
                        sum(
                            r.steps_ms.get(k) or 0
                            for k in ("commitOffsets", "latestOffset", "walCommit", "queryPlanning")
                        )
                    ),
                    ms(r.steps_ms.get("addBatchOverInterval")),
                    fmt(r.timers_fired, digits=0)
                    + (
                        f" ({ms(r.steps_ms['timer_processing'])})"
                        if r.timers_fired and r.steps_ms.get("timer_processing") is not None
                        else ""
                    ),
                    fmt(r.output_rows_per_s, digits=0),
                    load_text(r.load_average),
                ]
                for r in sorted(b.runs, key=lambda r: APPS.index(r.app) if r.app in APPS else 99)
            ],
        ),
    ]
    best = best_runs(b)
    if best:
        out += [
            "",
            "Lowest whole-run p99 per app: "
            + "; ".join(
                f"{app} {ms(r.whole['p99'])} ({r.changes}, ({r.partitions[0]}, {r.partitions[1]}))"
                for app, r in best.items()
            )
            + ". Checksums: checkpoint file checksums (`ADLAKE_CHECKPOINT_CHECKSUMS`).",
        ]
    return "\n".join(out)


def plot_boundary(b: BoundaryMatrix, path: Path) -> None:
    """Per app, the latency CDF of the local default's run, the earlier (4, 4) default's and the
    best run's (:func:`best_runs`), the tail spread by the logit axis."""
    plt = pyplot()
    best = best_runs(b)
    apps = [a for a in APPS if a in best]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.5 * len(apps), 5.6), squeeze=False)
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    for ax, app in zip(axes[0], apps):
        shown = [
            run
            for run in b.runs
            if run.app == app
            and run.plain
            and run.repeat == 1
            and run.quantiles_ms
            and run.partitions in ((4, 4), b.default)
        ]
        if best[app] not in shown:
            shown.append(best[app])
        for run in shown:
            ax.plot(
                run.quantiles_ms[1:-1],
                fractions[1:-1],
                label=f"{run.changes} ({run.partitions[0]}, {run.partitions[1]}): p99 "
                f"{ms(run.whole['p99'])}, max {ms(run.whole['max'])}",
            )
        if app in b.p99_goal_ms:
            ax.axvline(b.p99_goal_ms[app], color="grey", linestyle="--", linewidth=1)
            ax.axhline(0.99, color="grey", linestyle=":", linewidth=1)
            ax.annotate(
                f"p99 goal {ms(b.p99_goal_ms[app])}",
                (b.p99_goal_ms[app], 0.99),
                xytext=(4, -14),
                textcoords="offset points",
                fontsize=8,
                color="dimgrey",
            )
        cdf_axes(ax)
        ax.set_title(f"{app.replace('_', '-')}, Real-Time Mode, {b.rate:,.0f} events/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    fig.suptitle(f"Latency CDFs by configuration (checkpoint interval {b.rtm_interval})")
    fig.tight_layout()
    save_plot(fig, path)


SECTION = Section(
    "boundary",
    {FILE: read_boundary},
    boundary_section,
    plots=(
        Plot(
            "boundary",
            "boundary-cdf.png",
            "Real-Time Mode's boundary: the best configuration's CDF",
            FILE,
            plot_boundary,
            missing=lambda b: None if b.runs else "no runs in it",
            target="make bench-boundary",
        ),
    ),
    note=(NOTE, "What an attribution boundary spends its time on"),
)
