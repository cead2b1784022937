"""Real-Time Mode's boundary against its settings: its part of the benchmark report.

``boundary.json`` (``bench.ops.boundary``): each app's run under each configuration of
partitions, checkpoint checksums, state-store settings and rules, with its boundary's stall and
steps; a table of them, each app's best run, and a plot of the CDFs of the local default's, the
earlier (4, 4) default's and the best run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import save_plot
from bench.ops.latency_report import APPS
from bench.report_kit import (
    QUANTILES,
    Goal,
    Node,
    Plot,
    Section,
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


@dataclass(frozen=True)
class BoundaryRun:
    """One run of ``boundary.json``: an app under one configuration (bench.ops.boundary)."""

    configuration: str
    changes: str
    app: str
    repeat: int
    partitions: tuple[int, int]  # topic, shuffle (state store)
    tasks: int
    stall_ms: tuple[float | None, float | None]  # median, max
    whole: dict[str, float]  # p50, p99, max
    between_p99: float | None
    steps_ms: dict[str, float]  # median per step (bench.ops.boundary.STEPS, STATE_STEPS)
    timers_fired: float | None
    output_rows_per_s: float | None
    load: tuple[float, float]
    quantiles_ms: list[float]
    conf: tuple[str, ...] = ()  # Spark settings of the app's session
    app_args: tuple[str, ...] = ()  # the app's own arguments (its rules)

    @property
    def plain(self) -> bool:
        """Partitions only: no setting and no rule changed."""
        return not self.conf and not self.app_args


@dataclass(frozen=True)
class BoundaryMatrix:
    """``boundary.json``: the runs, their rate, interval and times, and the local default."""

    rate: float
    rtm_interval: str
    warmup_s: float
    duration_s: float
    default: tuple[int, int]  # the local profile's (topic, shuffle) partitions
    default_checksums: bool  # and its checkpoint checksums
    runs: list[BoundaryRun]
    p99_goal_ms: dict[str, float] = field(default_factory=dict)  # per app


def read_boundary(node: Node) -> tuple[BoundaryMatrix, list[Goal]]:
    runs = []
    for r in node.items("runs"):
        stall = r.get("stall_ms")
        quantiles = r.numbers("quantiles_ms")
        if quantiles and len(quantiles) != QUANTILES:
            raise r.get("quantiles_ms")._fail(f"{QUANTILES} numbers or none")
        runs.append(
            BoundaryRun(
                r.text("configuration"),
                r.text("changes"),
                r.text("app"),
                int(r.num("repeat")),
                (int(r.num("topic_partitions")), int(r.num("shuffle_partitions"))),
                int(r.num("tasks")),
                (stall.num("median", optional=True), stall.num("max", optional=True)),
                r.mapping("whole"),
                r.get("between_boundaries").num("p99", optional=True),
                r.mapping("steps_ms"),
                r.num("timers_fired", optional=True),
                r.num("output_rows_per_s", optional=True),
                load_average(r),
                quantiles,
                tuple(n.text_value() for n in r.items("conf")),
                tuple(n.text_value() for n in r.items("app_args")),
            )
        )
    default = node.get("local_default")
    boundary = BoundaryMatrix(
        node.num("rate"),
        node.text("rtm_interval"),
        node.num("warmup_s"),
        node.num("duration_s"),
        (int(default.num("topic_partitions")), int(default.num("shuffle_partitions"))),
        default.flag("checkpoint_checksums"),
        runs,
        node.mapping("p99_goal_ms"),
    )
    return boundary, [Goal.read("boundary", g) for g in node.items("goals")]


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
        + ("on." if b.default_checksums else "off."),
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
                    f"{ms(r.stall_ms[0])} / {ms(r.stall_ms[1])}",
                    " / ".join(ms(r.whole.get(k)) for k in ("p50", "p99", "max")),
                    ms(r.between_p99),
                    f"{ms(r.steps_ms.get('state_commit'))} "
                    f"({ms(r.steps_ms.get('changelog_sync'))}) / "
                    f"{ms(r.steps_ms.get('state_load'))}",
                    ms(
                        sum(
                            r.steps_ms.get(k, 0)
                            for k in ("commitOffsets", "latestOffset", "walCommit", "queryPlanning")
                        )
                    ),
                    ms(r.steps_ms.get("addBatchOverInterval")),
                    fmt(r.timers_fired, digits=0)
                    + (
                        f" ({ms(r.steps_ms['timer_processing'])})"
                        if r.timers_fired and "timer_processing" in r.steps_ms
                        else ""
                    ),
                    fmt(r.output_rows_per_s, digits=0),
                    load_text(r.load),
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
