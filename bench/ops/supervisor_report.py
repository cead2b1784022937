"""The supervisor's runs' part of the benchmark report: ``supervisor.json``
(``bench.ops.supervisor``), what one ``apps_supervisor`` run costs and the interval's trade-off;
its table. The benchmark states no goal."""

from __future__ import annotations

from dataclasses import dataclass

from bench.report_kit import Goal, Node, Section, fmt, table

FILE = "supervisor.json"


@dataclass(frozen=True)
class Supervisor:
    """``supervisor.json``: one ``apps_supervisor`` run's cost and the interval's trade-off."""

    runs: int
    window_s: float
    per_run: dict[str, float]  # airflow_cpu_s, machine_cpu_s, rows, db_bytes, log_bytes
    due_to_done_s: tuple[float, float]  # median, max
    trade_off: list[dict[str, float]]
    clean_db: dict[str, tuple[float, float]]  # table: rows before, after clean-db


def read_supervisor(node: Node) -> tuple[Supervisor, list[Goal]]:
    run, timing = node.get("per_run"), node.get("timing").get("due_to_done_s")
    columns = (
        "interval_min",
        "runs_per_day",
        "airflow_cpu_s_per_day",
        "cpu_share_of_cores",
        "rows_per_day",
        "log_mib_per_day",
        "restart_wait_max_s",
    )
    supervisor = Supervisor(
        int(node.num("runs")),
        node.num("window_s"),
        {
            k: run.num(k)
            for k in ("airflow_cpu_s", "machine_cpu_s", "rows", "db_bytes", "log_bytes")
        },
        (timing.num("median"), timing.num("max")),
        [{k: row.num(k) for k in columns} for row in node.items("trade_off")],
        {
            name: tuple(node.get("clean_db").numbers(name, 2))
            for name in ("dag_run", "task_instance", "log")
        },
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
        f"{fmt(run['airflow_cpu_s'], ' CPU s', 2)} in Airflow's processes, "
        f"{fmt(run['rows'], ' rows', 0)} in the metadata database "
        f"({fmt(run['db_bytes'] / 1024, ' KiB')}), {fmt(run['log_bytes'] / 1024, ' KiB')} of "
        f"task log; due to done {fmt(sv.due_to_done_s[0], ' s')} median, "
        f"{fmt(sv.due_to_done_s[1], ' s')} max. `platform clean-db` at retention 0 left "
        + ", ".join(
            f"{name} {fmt(a, digits=0)} of {fmt(b, digits=0)}"
            for name, (b, a) in sv.clean_db.items()
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
                    fmt(row["interval_min"], " min", 0),
                    fmt(row["runs_per_day"], digits=0),
                    fmt(row["airflow_cpu_s_per_day"] / 60, " CPU min", 0),
                    fmt(row["cpu_share_of_cores"] * 100, " %", 2),
                    fmt(row["rows_per_day"], digits=0),
                    fmt(row["log_mib_per_day"], " MiB"),
                    fmt(row["restart_wait_max_s"], " s", 0),
                ]
                for row in sv.trade_off
            ],
        ),
    ]
    return "\n".join(out)


SECTION = Section("supervisor", {FILE: read_supervisor}, supervisor_section)
