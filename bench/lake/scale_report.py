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
    StatedGoal,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "scale.json"


@dataclass(frozen=True, kw_only=True)
class TableRun:
    """One table's rebuild in a gold run: its seconds and the rows it wrote."""

    seconds: float
    rows: int | None = None


@dataclass(frozen=True, kw_only=True)
class GoldRun:
    """One gold run: its wall time, its interval, each table's, the load around it."""

    seconds: float
    interval: list[str] | None = None  # [start, end), as the gold job takes them
    tables: dict[str, TableRun]
    load_average: tuple[float, float]  # start, end

    def table_seconds(self, name: str) -> float | None:
        table = self.tables.get(name)
        return table.seconds if table else None


@dataclass(frozen=True, kw_only=True)
class ScaleStep:
    """One size of silver's history and gold's runs at it."""

    days: int
    rows_written: dict[str, int]  # the rows added for this size, by topic
    write_s: float | None = None
    files: int  # silver's files, all tables
    bytes: int | None = None
    hourly: GoldRun
    daily: GoldRun
    process: GoldRun | None  # the hourly run as a process; None: not measured

    @property
    def rows(self) -> int:
        return sum(self.rows_written.values())


@dataclass(frozen=True, kw_only=True)
class HourRuns:
    """The hourly run over one hour of D, repeated: each run's seconds, the median and its
    tables, the load from the first run's start to the last run's end."""

    interval: list[str]
    runs_s: list[float]
    median_s: float
    tables: dict[str, TableRun]  # the median run's
    load_average: tuple[float, float]

    @property
    def label(self) -> str:
        return " to ".join(self.interval)


@dataclass(frozen=True, kw_only=True)
class Position:
    """The day's first and last hour, alternated."""

    first: HourRuns
    last: HourRuns
    ratio: float | None = None  # last / first medians


@dataclass(frozen=True, kw_only=True)
class Scale:
    """``scale.json``, as ``bench.lake.scale`` writes it. The fields the report does not show
    are None in a file that lacks them (the report's summary, a test's file)."""

    history: list[ScaleStep]
    ratios: dict[str, float | None] | None = None  # the largest history's time over the smallest
    position: Position
    goals: list[StatedGoal]
    goal_ratio: float  # a run's goal: at most this many times its smallest history's time
    rows_per_day: int
    plan: dict[str, int] | None = None  # synthetic_silver.plan
    files_per_day: int | None = None
    last_day: str
    hourly_tables: list[str]
    daily_tables: list[str]
    seed: int | None = None
    quick: bool | None = None
    work_dir: str | None = None
    kept: bool | None = None
    cores: int | None = None
    master: str | None = None
    session_s: float | None = None
    started_at: str | None = None
    seconds: float | None = None
    load_average: tuple[float, float] | None = None


def _int(node: Node) -> int:
    return int(node.num())


def _counts(node: Node) -> dict[str, int]:
    if not isinstance(node.value, Mapping):
        raise node._fail("an object")
    return {k: _int(node.get(k)) for k in node.value}


def _tables(node: Node) -> dict[str, TableRun]:
    tables = node.get("tables")
    if not isinstance(tables.value, Mapping):
        raise tables._fail("an object")
    return {
        name: TableRun(seconds=t.num("seconds"), rows=t.unshown("rows", _int))
        for name, t in ((name, tables.get(name)) for name in tables.value)
    }


def _interval(node: Node) -> list[str]:
    return [n.text_value() for n in node.items()]


def _gold_run(node: Node) -> GoldRun:
    return GoldRun(
        seconds=node.num("seconds"),
        interval=node.unshown("interval", _interval),
        tables=_tables(node),
        load_average=load_average(node),
    )


def _hour_runs(node: Node) -> HourRuns:
    return HourRuns(
        interval=_interval(node.get("interval")),
        runs_s=node.numbers("runs_s"),
        median_s=node.num("median_s"),
        tables=_tables(node),
        load_average=load_average(node),
    )


def _texts(node: Node) -> list[str]:
    return [n.text_value() for n in node.items()]


def read_step(step: Node) -> ScaleStep:
    return ScaleStep(
        days=_int(step.get("days")),
        rows_written=_counts(step.get("rows_written")),
        write_s=step.unshown("write_s", Node.num),
        files=_int(step.get("files")),
        bytes=step.unshown("bytes", _int),
        hourly=_gold_run(step.get("hourly")),
        daily=_gold_run(step.get("daily")),
        process=_gold_run(step.get("process")) if step.has("process") else None,
    )


def read_scale(node: Node) -> tuple[Scale, list[Goal]]:
    history = [read_step(step) for step in node.items("history")]
    if not history:
        raise MalformedReport(node.file, "history", "expected at least one size")
    position = node.get("position")
    scale = Scale(
        history=history,
        ratios=node.unshown("ratios", lambda n: {k: n.num(k, optional=True) for k in n.value}),
        position=Position(
            first=_hour_runs(position.get("first")),
            last=_hour_runs(position.get("last")),
            ratio=position.unshown("ratio", Node.num),
        ),
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        goal_ratio=node.num("goal_ratio"),
        rows_per_day=_int(node.get("rows_per_day")),
        plan=node.unshown("plan", _counts),
        files_per_day=node.unshown("files_per_day", _int),
        last_day=node.text("last_day"),
        hourly_tables=_texts(node.get("hourly_tables")),
        daily_tables=_texts(node.get("daily_tables")),
        seed=node.unshown("seed", _int),
        quick=node.unshown("quick", Node.flag_value),
        work_dir=node.unshown("work_dir", Node.text_value),
        kept=node.unshown("kept", Node.flag_value),
        cores=node.unshown("cores", _int),
        master=node.unshown("master", Node.text_value),
        session_s=node.unshown("session_s", Node.num),
        started_at=node.unshown("started_at", Node.text_value),
        seconds=node.unshown("seconds", Node.num),
        load_average=node.unshown("load_average", lambda n: tuple(x.num() for x in n.items())),
    )
    return scale, [Goal.of("scale", g) for g in scale.goals]


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
            f"{load_text(step.hourly.load_average)}, {load_text(step.daily.load_average)}",
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
            [[days, kind, *(fmt(run.table_seconds(n)) for n in names)] for days, kind, run in runs],
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
                    load_text(hour.load_average),
                ]
                for name, hour in (("1st", scale.position.first), ("24th", scale.position.last))
            ]
            + [
                [
                    "**24th / 1st**",
                    "",
                    "",
                    f"**{_ratio(scale.position.last.median_s, scale.position.first.median_s)}**",
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
            (f"gold hourly run, {step.days} days of history", step.hourly.load_average),
            (f"gold daily run, {step.days} days of history", step.daily.load_average),
        ]
    return out + [
        ("gold hourly runs, the day's 1st hour", scale.position.first.load_average),
        ("gold hourly runs, the day's 24th hour", scale.position.last.load_average),
    ]


SECTION = Section(
    "scale",
    {FILE: read_scale},
    scale_section,
    plots=(Plot("scale", "gold-scale.png", "Gold run time vs days of history", FILE, plot_scale),),
    loads=loads,
)
