"""Gold at scale's part of the benchmark report: ``scale.json`` (``bench.lake.scale``), gold's
hourly and daily runs at each size of silver's history (seconds, per table, as a process too),
and the day's first and last hour; its tables and its plot of run time against days of history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.report_kit import (
    NOT_RUN,
    Goal,
    Load,
    MalformedReport,
    Node,
    Plot,
    Section,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "scale.json"


@dataclass(frozen=True)
class GoldRun:
    """One gold run of ``scale.json``: its wall time, each table's seconds, the load around it."""

    seconds: float
    tables: dict[str, float]
    load: tuple[float, float]


@dataclass(frozen=True)
class ScaleStep:
    days: int
    rows: int  # the silver rows written for this size (the days added)
    files: int  # silver's files, all tables
    hourly: GoldRun
    daily: GoldRun
    process: GoldRun | None


@dataclass(frozen=True)
class HourRuns:
    label: str  # the hour's interval
    runs_s: list[float]
    median_s: float
    tables: dict[str, float]
    load: tuple[float, float]


@dataclass(frozen=True)
class Scale:
    rows_per_day: int
    last_day: str
    hourly_tables: list[str]
    daily_tables: list[str]
    history: list[ScaleStep]
    first_hour: HourRuns
    last_hour: HourRuns
    goal_ratio: float  # a run's goal: at most this many times its smallest history's time


def _table_seconds(node: Node) -> dict[str, float]:
    tables = node.get("tables")
    if not isinstance(tables.value, Mapping):
        raise tables._fail("an object")
    return {name: tables.get(name).num("seconds") for name in tables.value}


def _gold_run(node: Node) -> GoldRun:
    return GoldRun(node.num("seconds"), _table_seconds(node), load_average(node))


def _hour_runs(node: Node) -> HourRuns:
    interval = [n.value for n in node.items("interval")]
    return HourRuns(
        " to ".join(str(t) for t in interval),
        node.numbers("runs_s"),
        node.num("median_s"),
        _table_seconds(node),
        load_average(node),
    )


def read_scale(node: Node) -> tuple[Scale, list[Goal]]:
    history = []
    for step in node.items("history"):
        rows = step.get("rows_written")
        if not isinstance(rows.value, Mapping):
            raise rows._fail("an object")
        history.append(
            ScaleStep(
                int(step.num("days")),
                int(sum(rows.num(topic) for topic in rows.value)),
                int(step.num("files")),
                _gold_run(step.get("hourly")),
                _gold_run(step.get("daily")),
                _gold_run(step.get("process")) if step.has("process") else None,
            )
        )
    if not history:
        raise MalformedReport(node.file, "history", "expected at least one size")
    position = node.get("position")
    scale = Scale(
        int(node.num("rows_per_day")),
        node.text("last_day"),
        [n.value for n in node.items("hourly_tables")],
        [n.value for n in node.items("daily_tables")],
        history,
        _hour_runs(position.get("first")),
        _hour_runs(position.get("last")),
        node.num("goal_ratio"),
    )
    return scale, [Goal.read("scale", g) for g in node.items("goals")]


def _ratio(last: float | None, first: float | None) -> str:
    """``last / first`` as the report prints a ratio, '–' without both.

    >>> _ratio(5.25, 5.0), _ratio(None, 5.0)
    ('1.05×', '–')
    """
    return fmt(last / first, "×", 2) if last is not None and first else "–"


def scale_section(scale: Scale | None) -> str:
    out = ["## Gold at scale (`scale.json`)", ""]
    if scale is None:
        return "\n".join(out + [NOT_RUN.format(file=FILE)])
    first, last = scale.history[0], scale.history[-1]
    out += [
        f"Synthetic silver of about {fmt(scale.rows_per_day, digits=0)} rows a day, grown "
        f"backwards from {scale.last_day} (D): the same rows measured at every size. The "
        f"*hourly run* rebuilds {', '.join(f'`{t}`' for t in scale.hourly_tables)} over D's last "
        f"hour, the *daily run* {', '.join(f'`{t}`' for t in scale.daily_tables)} over D, in one "
        "warm Spark session; *as a process* is the hourly run as Airflow runs it, "
        "`python -m spark_apps.lake.gold` with its JVM start.",
        "",
    ]
    rows = [
        [
            str(step.days),
            fmt(step.rows, digits=0),
            fmt(step.files, digits=0),
            fmt(step.hourly.seconds, " s"),
            fmt(step.daily.seconds, " s"),
            fmt(step.process.seconds if step.process else None, " s"),
            f"{load_text(step.hourly.load)}, {load_text(step.daily.load)}",
        ]
        for step in scale.history
    ]
    if len(scale.history) > 1:
        rows.append(
            [
                f"**{last.days} / {first.days}**",
                "",
                _ratio(last.files, first.files),
                f"**{_ratio(last.hourly.seconds, first.hourly.seconds)}**",
                f"**{_ratio(last.daily.seconds, first.daily.seconds)}**",
                _ratio(
                    last.process.seconds if last.process else None,
                    first.process.seconds if first.process else None,
                ),
                "",
            ]
        )
    out.append(
        table(
            [
                "days of history",
                "silver rows added",
                "silver files",
                "hourly run",
                "daily run",
                "hourly run as a process",
                "load average (hourly, daily)",
            ],
            rows,
        )
    )
    names = list(dict.fromkeys(scale.hourly_tables + scale.daily_tables))
    runs = [
        (f"{step.days}", kind, run)
        for step in scale.history
        for kind, run in (("hourly", step.hourly), ("daily", step.daily), ("process", step.process))
        if run is not None
    ]
    out += [
        "",
        "Each table's seconds (the process's as it logged them, its start left out):",
        "",
        table(
            ["days", "run", *(f"`{n}`" for n in names)],
            [[days, kind, *(fmt(run.tables.get(n)) for n in names)] for days, kind, run in runs],
        ),
        "",
        f"**Position in the day** ({fmt(last.days, digits=0)} days of history): the hourly run "
        "over D's first and last hour, alternated:",
        "",
        table(
            ["hour of D", "interval", "runs", "median", "load average"],
            [
                [
                    name,
                    hour.label,
                    ", ".join(fmt(r, " s") for r in hour.runs_s),
                    fmt(hour.median_s, " s"),
                    load_text(hour.load),
                ]
                for name, hour in (("1st", scale.first_hour), ("24th", scale.last_hour))
            ]
            + [
                [
                    "**24th / 1st**",
                    "",
                    "",
                    f"**{_ratio(scale.last_hour.median_s, scale.first_hour.median_s)}**",
                    "",
                ]
            ],
        ),
    ]
    return "\n".join(out)


def plot_scale(scale: Scale, path: Path) -> None:
    """Run time against days of silver history, a panel each for the hourly run (in the warm
    session and as a process) and the daily run; each line with its goal, a dotted line at
    ``goal_ratio`` times its time at the smallest history."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2))
    days = [step.days for step in scale.history]
    hourly = [("warm session", "tab:blue", "-", [s.hourly.seconds for s in scale.history])]
    if all(s.process for s in scale.history):
        process = [s.process.seconds for s in scale.history if s.process]
        hourly.append(("as a process (JVM start included)", "tab:grey", "--", process))
    panels = (
        (axes[0], f"Hourly run: {', '.join(scale.hourly_tables)}, D's last hour", hourly),
        (
            axes[1],
            f"Daily run: {len(scale.daily_tables)} tables, day D",
            [("warm session", "tab:purple", "-", [s.daily.seconds for s in scale.history])],
        ),
    )
    for ax, title, lines in panels:
        top = 0.0
        for label, colour, style, seconds in lines:
            ax.plot(days, seconds, marker="o", color=colour, linestyle=style, label=label)
            for x, y in zip(days, seconds):
                ax.annotate(
                    f"{y:,.1f} s",
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, -14),
                    ha="center",
                    fontsize=8,
                    color=colour,
                )
            goal = seconds[0] * scale.goal_ratio
            ax.hlines(
                goal,
                days[0],
                days[-1],
                colors=colour,
                linestyles=":",
                label=f"goal: {scale.goal_ratio:g}× its {days[0]}-day time",
            )
            top = max(top, goal, *seconds)
        ax.set_xscale("log")
        ax.set_xticks(days, [str(d) for d in days])
        ax.xaxis.set_minor_formatter(lambda v, _: "")
        ax.set_ylim(0, top * 1.25)
        ax.set_xlabel("days of silver history (log scale)")
        ax.set_ylabel("run time (s)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"Gold run time vs silver history ({scale.rows_per_day:,} rows a day; D = {scale.last_day})"
    )
    fig.tight_layout()
    save_plot(fig, path)


def loads(scale: Scale | None) -> list[Load]:
    """Each run's load average, for the machine table: the history's, then the hours'."""
    if scale is None:
        return []
    out = []
    for step in scale.history:
        out += [
            (f"gold hourly run, {step.days} days of history", step.hourly.load),
            (f"gold daily run, {step.days} days of history", step.daily.load),
        ]
    return out + [
        ("gold hourly runs, the day's 1st hour", scale.first_hour.load),
        ("gold hourly runs, the day's 24th hour", scale.last_hour.load),
    ]


SECTION = Section(
    "scale",
    {FILE: read_scale},
    scale_section,
    plots=(Plot("scale", "gold-scale.png", "Gold run time vs days of history", FILE, plot_scale),),
    loads=loads,
)
