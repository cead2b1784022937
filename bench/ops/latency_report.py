"""The apps' latency suite's part of the benchmark report: ``ops.json`` (``bench.ops.suite``),
per run the latency percentiles, 1001 quantiles (the CDF), a 5 s timeline, the interval
boundaries with their stall and durations; the bare Kafka hop. Its reader, which reads each run
as the type the suite writes (:class:`~bench.ops.latency_result.Result`), its tables, the
latency CDFs and the Real-Time Mode runs' timelines."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adlake import registry
from bench.harness import save_plot
from bench.ops.latency_result import (
    MODE_NAMES,
    WHOLE,
    Result,
    read_percentiles,
    read_quantiles,
    read_result,
)
from bench.report_kit import (
    NOT_RUN,
    QUANTILES,
    Goal,
    Load,
    MalformedReport,
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

FILE = "ops.json"


@dataclass(frozen=True)
class KafkaHop:
    rate: float
    duration_s: float
    whole: dict[str, float | None]
    quantiles_ms: list[float]
    load: tuple[float, float] | None


# The apps a run may be of: the registry's operational apps, in its order (the plots' too).
APPS = tuple(name for name, app in registry.APPS.items() if app.runtime == "ops")
SLICE_S = 5.0  # a timeline entry's span


def timer_table(runs: Sequence[Result]) -> list[str]:
    """The timer-driven records (closes, orphans) of the runs that had them, against how late
    each may come: window + lateness (+ the interval in Real-Time Mode, timers fire at a
    boundary) + 1 s."""
    rows = [
        [
            r.label,
            *(ms(r.timer_driven[k]) for k in ("p50", "p99", "max")),
            fmt(r.timer_driven["n"], digits=0),
            ms(r.timer_driven["bound_ms"]),
            fmt(r.timer_driven["within_bound"], digits=0),
        ]
        for r in runs
        if r.timer_driven
    ]
    if not rows:
        return []
    return [
        "",
        "Records a timer drives (a close, an orphan), apart from those an input drives: they are "
        "due a window plus the lateness after their key's last input and fire at the next "
        "boundary, so their latency is measured against that bound:",
        "",
        table(["run", "p50", "p99", "max", "records", "bound", "within the bound"], rows),
    ]


@dataclass(frozen=True)
class Ops:
    """``ops.json``: the suite's runs and the bare Kafka hop (None: not measured)."""

    runs: list[Result]
    kafka_hop: KafkaHop | None


def read_ops(node: Node) -> tuple[Ops, list[Goal]]:
    runs = []
    for r in node.items("runs"):
        app, mode = r.text("app"), r.text("mode")
        if app not in APPS:
            raise MalformedReport(r.file, f"{r.where}.app", f"expected one of {APPS}, got {app!r}")
        if mode not in MODE_NAMES:
            raise MalformedReport(
                r.file, f"{r.where}.mode", f"expected one of {tuple(MODE_NAMES)}, got {mode!r}"
            )
        runs.append(read_result(r))
    hop = None
    # The suite leaves the hop's `whole` empty when measuring it failed (its `errors` say why).
    if node.has("kafka_hop") and node.get("kafka_hop").value.get("whole") != {}:
        h = node.get("kafka_hop")
        whole = read_percentiles(h, "whole", WHOLE)
        hop = KafkaHop(
            h.num("rate"),
            h.num("duration_s"),
            whole,
            read_quantiles(h, whole),
            load_average(h) if h.has("load_average") else None,
        )
    goals = [Goal.read("ops", g) for g in node.items("goals")] if node.has("goals") else []
    return Ops(runs, hop), goals


def ops_section(ops: Ops | None) -> str:
    out = ["## Operational apps (`ops.json`)", ""]
    if ops is None:
        return "\n".join(out + [NOT_RUN.format(file="ops.json")])
    runs, hop = ops.runs, ops.kafka_hop
    out += [
        "End-to-end latency, output Kafka timestamp − input Kafka timestamp, over each run's "
        "measured span; *between boundaries* leaves out the inputs a checkpoint-interval "
        "boundary held: from the first input its stall held to 1 s after the stall "
        "(`between_boundaries` in `bench/ops/boundaries.py`).",
        "",
    ]
    rows = [
        [
            r.app,
            r.mode_text,
            fmt(r.rate, "/s", 0),
            fmt(r.duration_s, " s", 0),
            *(ms(r.whole[k]) for k in ("p50", "p95", "p99", "max")),
            fmt(r.whole["n"], digits=0),
            *(
                (ms(r.between_boundaries[k]) for k in ("p50", "p99", "max"))
                if r.between_boundaries
                else ("–",) * 3
            ),
            str(len(r.boundaries)),
            load_text(r.load_average),
        ]
        for r in runs
    ]
    if hop is not None:
        rows.append(
            [
                "bare Kafka hop (produce → consume)",
                "–",
                fmt(hop.rate, "/s", 0),
                fmt(hop.duration_s, " s", 0),
                *(ms(hop.whole[k]) for k in ("p50", "p95", "p99", "max")),
                fmt(hop.whole["n"], digits=0),
                "–",
                "–",
                "–",
                "–",
                load_text(hop.load) if hop.load else "–",
            ]
        )
    out.append(
        table(
            [
                "app",
                "mode",
                "rate",
                "measured",
                "p50",
                "p95",
                "p99",
                "max",
                "records",
                "p50 between boundaries",
                "p99 between",
                "max between",
                "boundaries",
                "load average",
            ],
            rows,
        )
    )
    out += timer_table(runs)
    notes = [f"* {r.label} at {fmt(r.rate, '/s', 0)}: {note}" for r in runs for note in r.notes]
    if notes:
        out += ["", "Notes of the runs:", "", *notes]
    ratios = _hop_ratios(runs, hop)
    if ratios:
        out += [
            "",
            "Spark's latency as a multiple of the bare Kafka hop measured in the same run "
            "(same broker, same rate):",
            "",
            table(["run", "p50 / hop p50", "p99 / hop p99"], ratios),
        ]
    for run in runs:
        if run.boundaries:
            out += ["", boundary_table(run)]
    return "\n".join(out)


def _hop_ratios(runs: list[Result], hop: KafkaHop | None) -> list[list[str]]:
    if hop is None:
        return []
    rows = []
    for run in runs:
        cells = []
        for p in ("p50", "p99"):
            floor, value = hop.whole[p], run.whole[p]
            cells.append(fmt(value / floor, "×") if floor and value is not None else "–")
        rows.append([run.label, *cells])
    return rows


def boundaries(count: int) -> str:
    """How many boundaries, in words.

    >>> boundaries(1), boundaries(3)
    ('1 boundary', '3 boundaries')
    """
    return f"{count} boundar{'y' if count == 1 else 'ies'}"


def boundary_table(run: Result) -> str:
    """A run's checkpoint-interval boundaries: when, how long input waited, and on what."""
    names = list(dict.fromkeys(k for b in run.boundaries for k in b.durations_ms))
    rows = [
        [
            fmt(b.t_s, " s", 0),
            ms(b.stall_ms),
            *(ms(b.durations_ms.get(k)) for k in names),
            "–" if b.timers_fired is None else fmt(b.timers_fired, digits=0),
        ]
        for b in run.boundaries
    ]
    stalls = sorted(b.stall_ms for b in run.boundaries if b.stall_ms is not None)
    summary = f"{boundaries(len(run.boundaries))}, " + (
        f"stall median {ms(stalls[len(stalls) // 2])}, max {ms(stalls[-1])}"
        if stalls
        else "no stall measured"
    )
    return "\n".join(
        [
            f"**Boundaries of {run.label} at {fmt(run.rate, '/s', 0)}** ({summary}; the "
            "batch's durations from its progress event):",
            "",
            table(["t", "stall", *(f"`{k}`" for k in names), "timers fired"], rows),
        ]
    )


COLOURS = {"realtime": "tab:blue", "processing_time": "tab:orange", "hop": "tab:grey"}


def plot_cdf(runs: list[Result], hop: KafkaHop | None, path: Path) -> None:
    """Latency CDFs, one panel per app: each mode, and the bare Kafka hop as the floor."""
    plt = pyplot()
    apps = [a for a in APPS if any(r.app == a for r in runs)]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.5 * len(apps), 5.6), squeeze=False)
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    for ax, app in zip(axes[0], apps):
        for run in (r for r in runs if r.app == app):
            if not run.quantiles_ms:
                ax.plot(
                    [],
                    [],
                    color=COLOURS[run.mode],
                    linestyle=":",
                    label=f"{MODE_NAMES[run.mode]}, {run.rate:,.0f}/s: no output measured",
                )
                continue
            ax.plot(
                run.quantiles_ms[1:-1],
                fractions[1:-1],
                color=COLOURS[run.mode],
                label=f"{MODE_NAMES[run.mode]}, {run.rate:,.0f}/s (p99 "
                f"{ms(run.whole['p99'])}, max {ms(run.whole['max'])})",
            )
        if hop is not None and hop.quantiles_ms:
            ax.plot(
                hop.quantiles_ms[1:-1],
                fractions[1:-1],
                color=COLOURS["hop"],
                linestyle="--",
                label=f"bare Kafka hop, {hop.rate:,.0f}/s (p99 "
                f"{ms(hop.whole['p99'])}, max {ms(hop.whole['max'])})",
            )
        cdf_axes(ax)
        ax.set_title(app.replace("_", "-"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    fig.suptitle("Latency CDFs: Real-Time Mode vs micro-batch vs the bare Kafka hop")
    fig.tight_layout()
    save_plot(fig, path)


def plot_timeline(runs: list[Result], path: Path) -> None:
    """Per 5 s slice p50, p99 and max of each Real-Time Mode run; boundaries as vertical lines."""
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 3.6 * len(runs)), squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        # Each slice holds [t_s, t_s + 5): drawn as a step across it, so a boundary's line
        # falls inside the slice it stalled.
        t = [s.t_s for s in run.timeline]
        t.append(t[-1] + SLICE_S)
        for key, style in (("max", ":"), ("p99", "-"), ("p50", "-")):
            values = [getattr(s, key) for s in run.timeline]
            values = [math.nan if v is None else v for v in values]
            ax.step(t, [*values, values[-1]], where="post", linestyle=style, label=key)
        for i, b in enumerate(run.boundaries):
            ax.axvline(
                b.t_s,
                color="tab:red",
                alpha=0.6,
                linewidth=1,
                label="interval boundary" if i == 0 else None,
            )
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:,g}")
        ax.yaxis.set_minor_formatter(lambda v, _: f"{v:,g}" if str(v)[0] in "235" else "")
        top = max(
            (getattr(s, k) or 0 for s in run.timeline for k in ("p50", "p99", "max")), default=0
        )
        if top > 0:
            ax.set_ylim(top=top * 4)  # room for the legend above the lines
        ax.set_xlabel("seconds since the measured start")
        ax.set_ylabel("latency per 5 s slice (ms, log)")
        ax.set_title(
            f"{run.label}, {run.rate:,.0f} events/s: p50/p99 {ms(run.whole['p50'])}/"
            f"{ms(run.whole['p99'])}, {boundaries(len(run.boundaries))}"
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, ncol=4)
    fig.tight_layout()
    save_plot(fig, path)


def realtime_runs(ops: Ops) -> list[Result]:
    """The Real-Time Mode runs with a timeline: the timeline plot's."""
    return [r for r in ops.runs if r.mode == "realtime" and r.timeline]


def loads(ops: Ops | None) -> list[Load]:
    """Each run's load average, then the hop's, for the machine table."""
    if ops is None:
        return []
    out = [(f"{r.label} {fmt(r.rate, '/s', 0)}", r.load_average) for r in ops.runs]
    if ops.kafka_hop and ops.kafka_hop.load:
        out.append(("bare Kafka hop", ops.kafka_hop.load))
    return out


SECTION = Section(
    "ops",
    {FILE: read_ops},
    ops_section,
    plots=(
        Plot(
            "cdf",
            "latency-cdf.png",
            "Latency CDFs",
            FILE,
            lambda ops, path: plot_cdf(ops.runs, ops.kafka_hop, path),
            missing=lambda ops: None if ops.runs else "no runs in ops.json",
        ),
        Plot(
            "timeline",
            "latency-timeline.png",
            "Latency timeline, Real-Time Mode",
            FILE,
            lambda ops, path: plot_timeline(realtime_runs(ops), path),
            missing=lambda ops: (
                None if realtime_runs(ops) else "no Real-Time Mode run with a timeline"
            ),
        ),
    ),
    loads=loads,
)
