"""The apps beside the lake and backfills of days: their shared part of the benchmark report.

``beside.json`` (``bench.ops.beside``): the apps' latency with the lake idle and while the lake
engine runs the hourly chain and the views' refreshes; ``backfill.json``
(``bench.lake.backfill``): a backfill of days through the real scheduler, against one rebuild.
Both are long (``make bench`` runs them, ``make bench-quick`` does not): when absent, their
section says how to run them. One section of both, and the plot of the apps' CDFs idle and
beside."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.ops.latency_result import (
    BETWEEN,
    WHOLE,
    Result,
    read_boundaries,
    read_percentiles,
    read_quantiles,
)
from bench.report_kit import (
    QUANTILES,
    Goal,
    Load,
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

BESIDE_FILE, BACKFILL_FILE = "beside.json", "backfill.json"


@dataclass(frozen=True)
class Beside:
    """``beside.json``: each app in its default trigger, with the lake idle and beside the lake
    (its engine running the chain and the view refreshes), and the lake's rounds meanwhile."""

    rate: float
    rtm_interval: str
    runs: dict[str, dict[str, Result]]  # app -> "idle" / "beside" -> its run
    ratios: dict[str, float | None]  # app -> its p99 beside / idle
    slots: int
    nice: int
    rounds: list[dict[str, float]]  # views_s, gold_s, round_s of each of the lake's rounds


def read_beside(node: Node) -> tuple[Beside, list[Goal]]:
    runs: dict[str, dict[str, Result]] = {}
    for key in ("idle", "beside"):
        by_app = node.get("runs").get(key)
        for app in node.items("apps"):
            name = app.text_value()
            r = by_app.get(name)
            whole = read_percentiles(r, "whole", WHOLE)
            runs.setdefault(name, {})[key] = Result(
                app=name,
                mode=r.text("mode"),
                rate=r.num("rate"),
                duration_s=r.num("duration_s"),
                whole=whole,
                between_boundaries=read_percentiles(r, "between_boundaries", BETWEEN),
                quantiles_ms=read_quantiles(r, whole),
                timeline=[],
                notes=[],
                boundaries=read_boundaries(r),
                load_average=load_average(r),
                timer_driven={},
            )
    lake = node.get("lake")
    rounds = [{k: r.num(k) for k in ("views_s", "gold_s", "round_s")} for r in lake.items("rounds")]
    beside = Beside(
        node.num("rate"),
        node.text("rtm_interval"),
        runs,
        {name: node.get("p99_ratio").num(name, optional=True) for name in runs},
        int(lake.num("slots")),
        int(lake.num("nice")),
        rounds,
    )
    return beside, [Goal.read("beside", g) for g in node.items("goals")]


@dataclass(frozen=True)
class Backfill:
    """``backfill.json``: a backfill of days through the scheduler, against one rebuild."""

    days: int
    rows_per_day: int
    command: str
    wall_s: float
    days_per_minute: float
    runs: list[tuple[str, float | None]]  # (day, seconds)
    task_seconds: dict[str, float]
    rebuild_s: float
    differences: int
    load: tuple[float, float]


def read_backfill(node: Node) -> tuple[Backfill, list[Goal]]:
    run = node.get("backfill")
    backfill = Backfill(
        int(node.num("days")),
        int(node.num("rows_per_day")),
        node.text("command"),
        run.num("wall_s"),
        run.num("days_per_minute"),
        [(r.text("day"), r.num("seconds", optional=True)) for r in run.items("runs")],
        run.mapping("task_seconds"),
        node.get("equal").num("rebuild_total_s"),
        int(node.get("equal").num("differences")),
        load_average(run),
    )
    return backfill, [Goal.read("backfill", g) for g in node.items("goals")]


def lake_beside_section(beside: Beside | None, backfill: Backfill | None) -> str:
    out = ["## The lake beside the apps, and backfills of days", ""]
    if beside is None:
        out.append(
            f"Apps beside the lake: no `{BESIDE_FILE}` here (`make bench-beside` writes it)."
        )
    else:
        lake = "; ".join(
            f"views {fmt(r['views_s'], ' s', 0)} after silver, gold {fmt(r['gold_s'], ' s', 0)}"
            for r in beside.rounds
        )
        out += [
            f"The apps at once, each in its default trigger at {fmt(beside.rate, '/s', 0)} "
            f"(Real-Time Mode's checkpoint interval {beside.rtm_interval}), on fresh "
            "checkpoints: with the lake idle, then while the lake engine runs the hourly chain "
            "and every view's refresh and gate in rounds, as the platform's pool runs them "
            f"({beside.slots} slot(s), niceness {beside.nice}). Latency after the warm-up "
            "(`beside.json`):",
            "",
            table(
                ["app", "lake", "p50", "p99", "max", "outputs", "load average"],
                [
                    [
                        run.label,
                        name,
                        ms(run.whole["p50"]),
                        ms(run.whole["p99"]),
                        ms(run.whole["max"]),
                        fmt(run.whole["n"], digits=0),
                        load_text(run.load_average),
                    ]
                    for app, by_key in beside.runs.items()
                    for name, run in (("idle", by_key["idle"]), ("beside", by_key["beside"]))
                ]
                + [
                    [f"**{app}**", "**beside / idle**", "", f"**{fmt(r, '×', 2)}**", "", "", ""]
                    for app, r in beside.ratios.items()
                ],
            ),
            "",
            f"The lake's rounds meanwhile (each view published after silver's commit, gold "
            f"after the round's start): {lake or 'none finished'}.",
        ]
    out.append("")
    if backfill is None:
        out.append(
            f"Backfills of days: no `{BACKFILL_FILE}` here (`make bench-backfill` writes it)."
        )
        return "\n".join(out)
    tasks = ", ".join(f"`{t}` {fmt(s, ' s', 0)}" for t, s in backfill.task_seconds.items())
    out += [
        f"A backfill of {backfill.days} days of synthetic silver (about "
        f"{fmt(backfill.rows_per_day, digits=0)} rows a day) through the platform's scheduler "
        f"(`{backfill.command}`, `backfill.json`): **{fmt(backfill.wall_s / 60, ' min')}** "
        f"({fmt(backfill.days_per_minute, ' days/min', 2)}; load average "
        f"{load_text(backfill.load)}). One rebuild of every gold table over the same days in a "
        f"warm session took {fmt(backfill.rebuild_s, ' s', 0)}; the backfill's gold differs "
        f"from it in {backfill.differences} rows.",
        "",
        table(
            ["day", *(d for d, _ in backfill.runs)],
            [["run", *(fmt(s, " s", 0) for _, s in backfill.runs)]],
        ),
        "",
        f"Tasks' time summed over the runs: {tasks}.",
    ]
    return "\n".join(out)


def plot_beside(beside: Beside, path: Path) -> None:
    """Each app's latency CDF with the lake idle and beside the lake, on the CDF plot's axes."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.4))
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    colours = iter(("tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple", "tab:brown"))
    for by_key in beside.runs.values():
        for key, style in (("idle", ":"), ("beside", "-")):
            run = by_key[key]
            if run.quantiles_ms:
                ax.plot(
                    run.quantiles_ms[1:-1],
                    fractions[1:-1],
                    style,
                    color=next(colours),
                    label=f"{run.label}, lake {key} (p99 {ms(run.whole['p99'])}, max "
                    f"{ms(run.whole['max'])}; load {load_text(run.load_average)})",
                )
    cdf_axes(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    ax.set_title(
        f"The apps at {beside.rate:,.0f} events/s: lake idle vs beside the lake", fontsize=10
    )
    fig.tight_layout()
    save_plot(fig, path)


def loads(beside: Beside | None, backfill: Backfill | None) -> list[Load]:
    """Each app's runs' load averages, then the backfill's, for the machine table."""
    out = []
    if beside:
        out += [
            (f"{app}, lake {key}", by_key[key].load_average)
            for app, by_key in beside.runs.items()
            for key in ("idle", "beside")
        ]
    if backfill:
        out.append((f"backfill of {backfill.days} days", backfill.load))
    return out


SECTION = Section(
    "beside",
    {BESIDE_FILE: read_beside, BACKFILL_FILE: read_backfill},
    lake_beside_section,
    plots=(
        Plot(
            "beside",
            "latency-beside-lake.png",
            "Latency with the lake idle and beside the chain",
            BESIDE_FILE,
            plot_beside,
            target="make bench-beside",
        ),
    ),
    loads=loads,
)
