"""A backfill of days through the scheduler: its result type, which ``bench.lake.backfill``
fills and writes (``backfill.json``) and the report reads back (its section is the lake's part
of :mod:`bench.ops.beside_report`). The fields the report does not show are None in a file that
lacks them (the report's summary, a file from before the field)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.report_kit import Goal, Node, StatedGoal, load_average

FILE = "backfill.json"


@dataclass(frozen=True, kw_only=True)
class DayRun:
    """One day's run of the backfill: its state, its seconds (None: it did not finish) and each
    task's."""

    day: str  # the run's data interval's start, a date
    state: str | None = None
    seconds: float | None
    tasks: dict[str, float | None] | None = None


@dataclass(frozen=True, kw_only=True)
class BackfillTiming:
    """The backfill as the scheduler ran it: from the command to its completion."""

    backfill_id: int | None = None
    wall_s: float
    days: int | None = None
    days_per_minute: float
    load_average: tuple[float, float]  # start, end
    runs: list[DayRun]
    task_seconds: dict[str, float]  # each task's seconds summed over the runs
    failed: list[str] | None = None  # a run or task that did not succeed, with its state


@dataclass(frozen=True, kw_only=True)
class TableCheck:
    """One gold table after the backfill against the single rebuild."""

    rows: int
    only_backfill: int
    only_single: int


@dataclass(frozen=True, kw_only=True)
class Equal:
    """The backfill's gold against one rebuild of the same days, row for row."""

    tables: dict[str, TableCheck] | None = None
    differences: int
    rebuild_s: dict[str, float] | None = None  # each table's rebuild
    rebuild_total_s: float
    rebuild_load_average: tuple[float, float] | None = None


@dataclass(frozen=True, kw_only=True)
class Backfill:
    """``backfill.json``, as ``bench.lake.backfill`` writes it."""

    errors: list[str]
    quick: bool | None = None
    cores: int | None = None
    days: int
    first_day: str | None = None
    last_day: str | None = None
    rows_per_day: int
    silver_rows: dict[str, int] | None = None  # by topic
    silver_s: float | None = None
    backfill: BackfillTiming
    equal: Equal
    goals: list[StatedGoal]
    command: str  # the backfill's, as the runbook gives it
    work_dir: str | None = None
    seconds: float | None = None  # the whole benchmark's


def _int(node: Node) -> int:
    return int(node.num())


def _numbers(node: Node) -> dict[str, float | None]:
    return {k: node.num(k, optional=True) for k in node.value}


def _pair(node: Node) -> tuple[float, float]:
    start, end = (n.num() for n in node.items())
    return start, end


def read_day(r: Node) -> DayRun:
    return DayRun(
        day=r.text("day"),
        state=r.unshown("state", Node.text_value),
        seconds=r.num("seconds", optional=True),
        tasks=r.unshown("tasks", _numbers),
    )


def read_timing(run: Node) -> BackfillTiming:
    return BackfillTiming(
        backfill_id=run.unshown("backfill_id", _int),
        wall_s=run.num("wall_s"),
        days=run.unshown("days", _int),
        days_per_minute=run.num("days_per_minute"),
        load_average=load_average(run),
        runs=[read_day(r) for r in run.items("runs")],
        task_seconds=run.mapping("task_seconds"),
        failed=run.unshown("failed", lambda n: [f.text_value() for f in n.items()]),
    )


def read_equal(node: Node) -> Equal:
    return Equal(
        tables=node.unshown(
            "tables",
            lambda n: {
                name: TableCheck(**{k: _int(t.get(k)) for k in t.value})
                for name, t in ((k, n.get(k)) for k in n.value)
            },
        ),
        differences=_int(node.get("differences")),
        rebuild_s=node.unshown("rebuild_s", lambda n: n.mapping()),
        rebuild_total_s=node.num("rebuild_total_s"),
        rebuild_load_average=node.unshown("rebuild_load_average", _pair),
    )


def read_backfill(node: Node) -> tuple[Backfill, list[Goal]]:
    backfill = Backfill(
        errors=node.unshown("errors", lambda n: [e.text_value() for e in n.items()]) or [],
        quick=node.unshown("quick", Node.flag_value),
        cores=node.unshown("cores", _int),
        days=_int(node.get("days")),
        first_day=node.unshown("first_day", Node.text_value),
        last_day=node.unshown("last_day", Node.text_value),
        rows_per_day=_int(node.get("rows_per_day")),
        silver_rows=node.unshown("silver_rows", lambda n: {k: _int(n.get(k)) for k in n.value}),
        silver_s=node.unshown("silver_s", Node.num),
        backfill=read_timing(node.get("backfill")),
        equal=read_equal(node.get("equal")),
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        command=node.text("command"),
        work_dir=node.unshown("work_dir", Node.text_value),
        seconds=node.unshown("seconds", Node.num),
    )
    return backfill, [Goal.of("backfill", g) for g in backfill.goals]
