"""Benchmark (not a test): what ``apps_supervisor``'s run every minute costs, and what a longer
interval would trade for it.

The platform's own Airflow on a scratch runtime (:func:`bench.harness.platform_airflow`, every
schedule on), measured over two windows of ``--window`` seconds each (default 300):

1. **paused**: every DAG paused: Airflow's own idle cost (scheduler loop, dag-processor,
   triggerer, api-server);
2. **supervised**: only ``apps_supervisor`` unpaused, running every minute as in ``make up``.

No app is desired running, so each pass reads the apps' state and does nothing: the figures are
the cost of having a run, which is what the interval multiplies. Per window: the CPU seconds of
Airflow's processes (every process in the components' sessions, with their reaped children)
and of the whole machine; per supervisor run: the CPU above the paused window, the rows it
adds to each table of the metadata database, the database's and the task logs' growth, and its
timing (scheduled → running → done). Then ``airflow db clean`` as ``platform clean-db`` runs
it, with a retention that makes every finished run old: the rows it leaves.

The trade-off, from these figures: a run every ``I`` minutes costs ``1440 / I`` runs a day
(CPU, rows, log files, all bounded by ``clean-db`` and the task-log pruning at the lake's
retention), and a crashed app waits up to ``I`` minutes plus a run's start for its restart.

What it writes is :class:`~bench.ops.supervisor_report.Supervisor`, the type the report reads.

    .venv/lake/bin/python -m bench.ops.supervisor --out-dir .runtime/reports/bench
    .venv/lake/bin/python -m bench.ops.supervisor --window 120 --out-dir /tmp/sup
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local import platform
from bench import harness
from bench.harness import cores, load_average
from bench.ops.supervisor_report import (
    CleanDb,
    PerRun,
    Spread,
    Supervisor,
    Timing,
    TradeOff,
    Window,
)

INTERVALS_MIN = (1, 2, 5, 10)  # the trade-off's table: runs a day and the restart's wait


def _ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def process_cpu_s(sessions: set[int]) -> float:
    """CPU seconds of every live process in ``sessions`` (the components' session ids), with
    the children each has reaped (a finished task's process counts in its parent's)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in sessions:  # field 6 of stat: the session id
            total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / _ticks()


def machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot (every core)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / _ticks()


def table_rows(db: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        ]
        return {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}


def supervisor_runs(db: Path, dag_id: str) -> list[dict]:
    """The supervisor's finished runs: when each was due, queued, started its task, ended."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT r.run_after, r.queued_at, t.start_date, t.end_date, t.state FROM dag_run r "
            "JOIN task_instance t ON t.dag_id = r.dag_id AND t.run_id = r.run_id "
            "WHERE r.dag_id = ? AND t.end_date IS NOT NULL ORDER BY r.run_after",
            (dag_id,),
        ).fetchall()
    stamp = harness.airflow_utc
    return [
        {
            "due": stamp(due),
            "queued": stamp(queued),
            "started": stamp(start),
            "ended": stamp(end),
            "state": state,
        }
        for due, queued, start, end, state in rows
    ]


def bytes_under(path: Path) -> tuple[int, int]:
    """(files, bytes) under ``path``."""
    files = [p for p in path.rglob("*") if p.is_file()] if path.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


def window(settings: Settings, db: Path, seconds: float, say) -> Window:
    """CPU (Airflow's processes, the machine), rows and bytes over ``seconds``."""
    sessions = {
        pid for c in platform.AIRFLOW_COMPONENTS if (pid := platform.running_pid(settings, c))
    }
    logs = platform.airflow_home(settings) / "logs"
    before = (process_cpu_s(sessions), machine_cpu_s(), table_rows(db), db.stat().st_size)
    logs_before = bytes_under(logs)
    load_start, started = load_average(), time.monotonic()
    time.sleep(seconds)
    after = (process_cpu_s(sessions), machine_cpu_s(), table_rows(db), db.stat().st_size)
    logs_after = bytes_under(logs)
    elapsed = time.monotonic() - started
    rows = {n: after[2].get(n, 0) - before[2].get(n, 0) for n in after[2]}
    result = Window(
        seconds=round(elapsed, 1),
        airflow_cpu_s=round(after[0] - before[0], 1),
        machine_cpu_s=round(after[1] - before[1], 1),
        rows_added={n: d for n, d in sorted(rows.items()) if d},
        db_bytes_added=after[3] - before[3],
        log_files_added=logs_after[0] - logs_before[0],
        log_bytes_added=logs_after[1] - logs_before[1],
        load_average=(load_start, load_average()),
    )
    say(f"window of {elapsed:.0f} s: {asdict(result)}")
    return result


def per_run(paused: Window, supervised: Window, runs: int) -> PerRun:
    """One run's share of the supervised window above the paused one (same length)."""
    scale_to = supervised.seconds / paused.seconds
    return PerRun(
        airflow_cpu_s=round((supervised.airflow_cpu_s - paused.airflow_cpu_s * scale_to) / runs, 2),
        machine_cpu_s=round((supervised.machine_cpu_s - paused.machine_cpu_s * scale_to) / runs, 2),
        rows=round(sum(supervised.rows_added.values()) / runs, 1),
        rows_by_table={n: round(d / runs, 2) for n, d in supervised.rows_added.items()},
        db_bytes=round(supervised.db_bytes_added / runs),
        log_files=round(supervised.log_files_added / runs, 2),
        log_bytes=round(supervised.log_bytes_added / runs),
    )


def trade_off(run: PerRun, timing: Timing) -> list[TradeOff]:
    """Per interval: runs, CPU, rows and log bytes a day; the longest wait of a crashed app."""
    out = []
    for minutes in INTERVALS_MIN:
        runs = 1440 // minutes
        out.append(
            TradeOff(
                interval_min=minutes,
                runs_per_day=runs,
                airflow_cpu_s_per_day=round(run.airflow_cpu_s * runs),
                cpu_share_of_cores=round(run.airflow_cpu_s * runs / (86400 * cores()), 4),
                rows_per_day=round(run.rows * runs),
                log_mib_per_day=round(run.log_bytes * runs / 2**20, 1),
                restart_wait_max_s=round(minutes * 60 + timing.due_to_done_s.max),
            )
        )
    return out


def timing_of(runs: list[dict]) -> Timing:
    def stats(values: list[float]) -> Spread:
        return Spread(
            median=round(statistics.median(values), 1),
            max=round(max(values), 1),
        )

    return Timing(
        due_to_task_start_s=stats([(r["started"] - r["due"]).total_seconds() for r in runs]),
        task_s=stats([(r["ended"] - r["started"]).total_seconds() for r in runs]),
        due_to_done_s=stats([(r["ended"] - r["due"]).total_seconds() for r in runs]),
    )


def clean(settings: Settings, db: Path, say) -> CleanDb:
    """``platform clean-db``'s command with a zero retention: what stays of the supervisor."""
    before = table_rows(db)
    zero = settings.with_overrides(airflow_metadata_retention_hours=0)
    done = platform.run_airflow(zero, *platform.clean_db_args(zero, datetime.now(UTC)), check=False)
    if done.returncode:
        raise RuntimeError(f"airflow db clean: {done.stderr[-2000:]}")
    after = table_rows(db)
    result = CleanDb(
        dag_run=(before["dag_run"], after["dag_run"]),
        task_instance=(before["task_instance"], after["task_instance"]),
        log=(before.get("log", 0), after.get("log", 0)),
    )
    say(f"clean-db with retention 0: rows before → after {asdict(result)}")
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ops.supervisor",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--window", type=float, default=300.0, help="seconds of each measured window"
    )
    parser.add_argument("--out-dir", help="where supervisor.json goes (default: reports/bench)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.airflow.factory import SUPERVISOR_DAG_ID

    args = parse_args(argv)
    base = load_settings()
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(base)
    say = harness.progress("supervisor")

    work = harness.work_dir("supervisor")
    settings = base.with_overrides(runtime_dir=work)
    say(f"scratch runtime {work}")
    with harness.platform_airflow(settings, (), say, schedules=True) as db:
        paused = window(settings, db, args.window, say)
        done = platform.run_airflow(settings, "dags", "unpause", SUPERVISOR_DAG_ID, check=False)
        if done.returncode:
            raise RuntimeError(f"unpause {SUPERVISOR_DAG_ID}: {done.stderr[-2000:]}")
        first = len(supervisor_runs(db, SUPERVISOR_DAG_ID))
        supervised = window(settings, db, args.window, say)
        runs = supervisor_runs(db, SUPERVISOR_DAG_ID)[first:]
        if not runs:
            raise RuntimeError(f"no {SUPERVISOR_DAG_ID} run finished in {args.window:.0f} s")
        run = per_run(paused, supervised, len(runs))
        timing = timing_of(runs)
        cleaned = clean(settings, db, say)
    report = Supervisor(
        cores=cores(),
        window_s=args.window,
        paused=paused,
        supervised=supervised,
        runs=len(runs),
        failed_runs=sum(r["state"] != "success" for r in runs),
        per_run=run,
        timing=timing,
        trade_off=trade_off(run, timing),
        clean_db=cleaned,
        command="python -m bench.ops.supervisor",
    )
    out = harness.write_json(out_dir / "supervisor.json", asdict(report))
    say(f"{len(runs)} runs; per run {asdict(run)}; timing {asdict(timing)}; written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
