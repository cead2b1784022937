"""The supervisor's runs' part of the benchmark report: ``supervisor.json``
(``bench.ops.supervisor``), what one ``apps_supervisor`` run costs and the interval's trade-off.
It holds the file's type (:class:`Supervisor`, which the benchmark fills and writes as
``supervisor.json``), its reader and its table. The benchmark states no goal."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bench.report_kit import Goal, Node, Section, fmt, load_average, table

FILE = "supervisor.json"

# The fields the report does not show are read with Node.unshown: optional, as the report's
# summary of the file (and a test's file) lacks them.


@dataclass(frozen=True)
class Window:
    """One measured window (``paused``: every DAG paused; ``supervised``: the supervisor
    unpaused): its length, the CPU seconds of Airflow's processes and of the whole machine, and
    what it added to the metadata database and the task logs."""

    seconds: float
    airflow_cpu_s: float
    machine_cpu_s: float
    rows_added: dict[str, int]  # table → rows added, tables that grew only
    db_bytes_added: int
    log_files_added: int
    log_bytes_added: int
    load_average: tuple[float, float]  # start, end


@dataclass(frozen=True, kw_only=True)
class PerRun:
    """One supervisor run's share of the supervised window above the paused one."""

    airflow_cpu_s: float
    machine_cpu_s: float
    rows: float  # in the metadata database, every table
    rows_by_table: dict[str, float] | None = None
    db_bytes: int
    log_files: float | None = None
    log_bytes: int


@dataclass(frozen=True)
class Spread:
    """Seconds over the supervisor's runs."""

    median: float
    max: float


@dataclass(frozen=True, kw_only=True)
class Timing:
    """The runs' timing: due (scheduled) to the task's start, the task, due to done."""

    due_to_task_start_s: Spread | None = None
    task_s: Spread | None = None
    due_to_done_s: Spread


@dataclass(frozen=True)
class TradeOff:
    """A run every ``interval_min`` minutes: its runs, CPU, rows and task log a day, and how
    long a crashed app waits for its restart at most."""

    interval_min: int
    runs_per_day: int
    airflow_cpu_s_per_day: int
    cpu_share_of_cores: float  # of every core's day
    rows_per_day: int
    log_mib_per_day: float
    restart_wait_max_s: int


@dataclass(frozen=True)
class CleanDb:
    """Rows before and after ``platform clean-db`` at retention 0, per table."""

    dag_run: tuple[int, int]
    task_instance: tuple[int, int]
    log: tuple[int, int]


@dataclass(frozen=True, kw_only=True)
class Supervisor:
    """``supervisor.json``, as ``bench.ops.supervisor`` writes it: one ``apps_supervisor``
    run's cost and the interval's trade-off."""

    cores: int | None = None
    window_s: float
    paused: Window | None = None
    supervised: Window | None = None
    runs: int  # the supervisor's runs finished in the supervised window
    failed_runs: int | None = None
    per_run: PerRun
    timing: Timing
    trade_off: list[TradeOff]
    clean_db: CleanDb
    command: str | None = None


def read_window(node: Node) -> Window:
    return Window(
        node.num("seconds"),
        node.num("airflow_cpu_s"),
        node.num("machine_cpu_s"),
        {table: int(rows) for table, rows in node.mapping("rows_added").items()},
        int(node.num("db_bytes_added")),
        int(node.num("log_files_added")),
        int(node.num("log_bytes_added")),
        load_average(node),
    )


def read_spread(node: Node) -> Spread:
    return Spread(node.num("median"), node.num("max"))


def read_supervisor(node: Node) -> tuple[Supervisor, list[Goal]]:
    run, timing, cleaned = node.get("per_run"), node.get("timing"), node.get("clean_db")

    def rows(table: str) -> tuple[int, int]:
        before, after = cleaned.numbers(table, 2)
        return int(before), int(after)

    supervisor = Supervisor(
        cores=node.unshown("cores", lambda n: int(n.num())),
        window_s=node.num("window_s"),
        paused=node.unshown("paused", read_window),
        supervised=node.unshown("supervised", read_window),
        runs=int(node.num("runs")),
        failed_runs=node.unshown("failed_runs", lambda n: int(n.num())),
        per_run=PerRun(
            airflow_cpu_s=run.num("airflow_cpu_s"),
            machine_cpu_s=run.num("machine_cpu_s"),
            rows=run.num("rows"),
            rows_by_table=run.unshown("rows_by_table", Node.mapping),
            db_bytes=int(run.num("db_bytes")),
            log_files=run.unshown("log_files", Node.num),
            log_bytes=int(run.num("log_bytes")),
        ),
        timing=Timing(
            due_to_task_start_s=timing.unshown("due_to_task_start_s", read_spread),
            task_s=timing.unshown("task_s", read_spread),
            due_to_done_s=read_spread(timing.get("due_to_done_s")),
        ),
        trade_off=[
            TradeOff(
                int(row.num("interval_min")),
                int(row.num("runs_per_day")),
                int(row.num("airflow_cpu_s_per_day")),
                row.num("cpu_share_of_cores"),
                int(row.num("rows_per_day")),
                row.num("log_mib_per_day"),
                int(row.num("restart_wait_max_s")),
            )
            for row in node.items("trade_off")
        ],
        clean_db=CleanDb(rows("dag_run"), rows("task_instance"), rows("log")),
        command=node.unshown("command", Node.text_value),
    )
    return supervisor, []  # it states no goal


def supervisor_section(sv: Supervisor | None) -> str:
    out = ["## The supervisor's runs (`supervisor.json`)", ""]
    if sv is None:
        return "\n".join(out + [f"Not in this run: `make bench-supervisor` writes `{FILE}`."])
    run = sv.per_run
    out += [
        f"`apps_supervisor` every minute on the platform's Airflow, {sv.runs} runs in "
        f"{fmt(sv.window_s, ' s', 0)}, against as long with every DAG paused. One run: "
        f"{fmt(run.airflow_cpu_s, ' CPU s', 2)} in Airflow's processes, "
        f"{fmt(run.rows, ' rows', 0)} in the metadata database "
        f"({fmt(run.db_bytes / 1024, ' KiB')}), {fmt(run.log_bytes / 1024, ' KiB')} of "
        f"task log; due to done {fmt(sv.timing.due_to_done_s.median, ' s')} median, "
        f"{fmt(sv.timing.due_to_done_s.max, ' s')} max. `platform clean-db` at retention 0 left "
        + ", ".join(
            f"{name} {fmt(a, digits=0)} of {fmt(b, digits=0)}"
            for name, (b, a) in asdict(sv.clean_db).items()
        )
        + ".",
        "",
        table(
            [
                "interval",
                "runs a day",
                "CPU a day",
                "share of the cores",
                "rows a day",
                "task log a day",
                "a crashed app waits up to",
            ],
            [
                [
                    fmt(row.interval_min, " min", 0),
                    fmt(row.runs_per_day, digits=0),
                    fmt(row.airflow_cpu_s_per_day / 60, " CPU min", 0),
                    fmt(row.cpu_share_of_cores * 100, " %", 2),
                    fmt(row.rows_per_day, digits=0),
                    fmt(row.log_mib_per_day, " MiB"),
                    fmt(row.restart_wait_max_s, " s", 0),
                ]
                for row in sv.trade_off
            ],
        ),
    ]
    return "\n".join(out)


SECTION = Section("supervisor", {FILE: read_supervisor}, supervisor_section)
