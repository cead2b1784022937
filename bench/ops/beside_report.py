"""The apps beside the lake and backfills of days: their shared part of the benchmark report.

``beside.json`` (``bench.ops.beside``): the apps' latency with the lake idle and while the lake
engine runs the hourly chain and the views' refreshes; ``backfill.json``
(``bench.lake.backfill``, its type in :mod:`bench.lake.backfill_report`): a backfill of days
through the real scheduler, against one rebuild.
Both are long (``make bench`` runs them, ``make bench-quick`` does not): when absent, their
section says how to run them. One section of both, and the plot of the apps' CDFs idle and
beside."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.lake.backfill_report import FILE as BACKFILL_FILE, Backfill, read_backfill
from bench.ops.latency_result import Result, read_result
from bench.report_kit import (
    QUANTILES,
    Goal,
    Load,
    Node,
    Plot,
    Section,
    StatedGoal,
    cdf_axes,
    fmt,
    load_text,
    ms,
    pyplot,
    table,
)

BESIDE_FILE = "beside.json"


@dataclass(frozen=True, kw_only=True)
class LakeRound:
    """One round of the lake's loop (``bench.lake.pool``'s ``run_round``): seconds from
    silver's commit until every view is published, from the round's start until gold's gate
    passed, and the whole round. ``slots`` and ``jobs`` (each job's start and end) are not shown."""

    slots: int | None = None
    jobs: dict[str, list[float]] | None = None
    views_s: float
    gold_s: float
    round_s: float


@dataclass(frozen=True, kw_only=True)
class Lake:
    """What ran beside the apps: the lake pool's slots, the engine's niceness, its rounds."""

    slots: int
    nice: int
    rounds: list[LakeRound]


RUN_KEYS = ("idle", "beside")


@dataclass(frozen=True, kw_only=True)
class Beside:
    """``beside.json``, as ``bench.ops.beside`` writes it: each app in its default trigger, with
    the lake idle and beside the lake (its engine running the chain and the view refreshes), and
    the lake's rounds meanwhile. The fields the report does not show are None in a file that
    lacks them (its summary, a test's file)."""

    apps: list[str]
    scenarios: list[str] | None = None
    rate: float  # events/s, each app
    warmup_s: float | None = None
    duration_s: float | None = None  # measured, each run
    rtm_interval: str
    lake: Lake
    cores: int | None = None
    runs: dict[str, dict[str, Result]]  # RUN_KEYS -> app -> its run
    p99_ratio: dict[str, float | None]  # app -> its p99 beside / idle
    goals: list[StatedGoal]
    errors: list[str]
    load_average_end: float | None = None  # the 1-minute load average at the end
    workdir: str | None = None

    def run(self, app: str, key: str) -> Result:
        return self.runs[key][app]


# The fields of an app's run this section does not show (see read_result).
UNSHOWN = frozenset({"timeline", "notes", "timer_driven", "rtm_interval", "between_boundaries"})


def read_round(r: Node) -> LakeRound:
    return LakeRound(
        slots=r.unshown("slots", lambda n: int(n.num())),
        jobs=r.unshown("jobs", lambda n: {k: [float(t) for t in v] for k, v in n.value.items()}),
        views_s=r.num("views_s"),
        gold_s=r.num("gold_s"),
        round_s=r.num("round_s"),
    )


def read_beside(node: Node) -> tuple[Beside, list[Goal]]:
    apps = [a.text_value() for a in node.items("apps")]
    runs = {
        key: {app: read_result(node.get("runs").get(key).get(app), UNSHOWN) for app in apps}
        for key in RUN_KEYS
    }
    lake = node.get("lake")
    ratios = node.get("p99_ratio")
    beside = Beside(
        apps=apps,
        scenarios=node.unshown("scenarios", lambda n: [s.text_value() for s in n.items()]),
        rate=node.num("rate"),
        warmup_s=node.unshown("warmup_s", Node.num),
        duration_s=node.unshown("duration_s", Node.num),
        rtm_interval=node.text("rtm_interval"),
        lake=Lake(
            slots=int(lake.num("slots")),
            nice=int(lake.num("nice")),
            rounds=[read_round(r) for r in lake.items("rounds")],
        ),
        cores=node.unshown("cores", lambda n: int(n.num())),
        runs=runs,
        p99_ratio={app: ratios.num(app, optional=True) for app in apps},
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        errors=node.unshown("errors", lambda n: [e.text_value() for e in n.items()]) or [],
        load_average_end=node.unshown("load_average_end", Node.num),
        workdir=node.unshown("workdir", Node.text_value),
    )
    return beside, [Goal.of("beside", g) for g in beside.goals]


def lake_beside_section(beside: Beside | None, backfill: Backfill | None) -> str:
    out = ["## The lake beside the apps, and backfills of days", ""]
    if beside is None:
        out.append(
            f"Apps beside the lake: no `{BESIDE_FILE}` here (`make bench-beside` writes it)."
        )
    else:
        lake = "; ".join(
            f"views {fmt(r.views_s, ' s', 0)} after silver, gold {fmt(r.gold_s, ' s', 0)}"
            for r in beside.lake.rounds
        )
        out += [
            f"The apps at once, each in its default trigger at {fmt(beside.rate, '/s', 0)} "
            f"(Real-Time Mode's checkpoint interval {beside.rtm_interval}), on fresh "
            "checkpoints: with the lake idle, then while the lake engine runs the hourly chain "
            "and every view's refresh and gate in rounds, as the platform's pool runs them "
            f"({beside.lake.slots} slot(s), niceness {beside.lake.nice}). Latency after the warm-up "
            "(`beside.json`):",
            "",
            table(
                ["app", "lake", "p50", "p99", "max", "outputs", "load average"],
                [
                    [
                        run.label,
                        key,
                        ms(run.whole["p50"]),
                        ms(run.whole["p99"]),
                        ms(run.whole["max"]),
                        fmt(run.whole["n"], digits=0),
                        load_text(run.load_average),
                    ]
                    for app in beside.apps
                    for key in RUN_KEYS
                    for run in (beside.run(app, key),)
                ]
                + [
                    [f"**{app}**", "**beside / idle**", "", f"**{fmt(r, '×', 2)}**", "", "", ""]
                    for app, r in beside.p99_ratio.items()
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
    run = backfill.backfill
    tasks = ", ".join(f"`{t}` {fmt(s, ' s', 0)}" for t, s in run.task_seconds.items())
    out += [
        f"A backfill of {backfill.days} days of synthetic silver (about "
        f"{fmt(backfill.rows_per_day, digits=0)} rows a day) through the platform's scheduler "
        f"(`{backfill.command}`, `backfill.json`): **{fmt(run.wall_s / 60, ' min')}** "
        f"({fmt(run.days_per_minute, ' days/min', 2)}; load average "
        f"{load_text(run.load_average)}). One rebuild of every gold table over the same days in "
        f"a warm session took {fmt(backfill.equal.rebuild_total_s, ' s', 0)}; the backfill's "
        f"gold differs from it in {backfill.equal.differences} rows.",
        "",
        table(
            ["day", *(r.day for r in run.runs)],
            [["run", *(fmt(r.seconds, " s", 0) for r in run.runs)]],
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
    for app in beside.apps:
        for key, style in zip(RUN_KEYS, (":", "-")):
            run = beside.run(app, key)
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
            (f"{app}, lake {key}", beside.run(app, key).load_average)
            for app in beside.apps
            for key in RUN_KEYS
        ]
    if backfill:
        out.append((f"backfill of {backfill.days} days", backfill.backfill.load_average))
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
