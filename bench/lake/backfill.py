"""Benchmark (not a test): an Airflow backfill of days through the platform's real scheduler,
its wall time and days per minute, and its gold against one rebuild of the same days.

1. **Silver.** ``--days`` days (default 7) of synthetic silver ending on ``--last-day``, about
   ``--rows-per-day`` rows a day across the topics (default 1,000,000), written straight into
   the silver tables by :mod:`bench.lake.synthetic_silver`, in a scratch runtime
   (``--work-dir``, default a new ``/tmp/adlake-bench-backfill-*``) with a broker of its own
   (empty topics: bronze and silver find nothing new, as in a backfill of history).
2. **Airflow.** The lake engine of that runtime (on a free port: Airflow's tasks run as its
   sessions, as under ``make up``), then the platform's own Airflow on that runtime (:mod:`adlake.local.platform`:
   metadata database, the lake pool, api-server, scheduler, dag-processor, triggerer), with the
   scheduler's own schedules off (``AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE=false``: no hourly run
   and no view run beside the backfill) and only ``lake_daily`` unpaused.
3. **The backfill**, as the runbook gives it: ``airflow backfill create --dag-id lake_daily
   --from-date D1 --to-date Dn --max-active-runs 1 --reprocess-behavior completed``. Timed from
   the command to the scheduler marking the backfill complete; every run and task must succeed.
   Figures: the wall time, days per minute, each run's time and each task's, summed over the
   runs (from the metadata database).
4. **Row for row.** Gold as the backfill left it is copied aside; then one rebuild of every
   gold table over the whole span (``gold.rebuild`` in this process's session, timed: the
   backfill's floor without Airflow and per-day fixed costs), and the two are compared as
   multisets (``exceptAll`` both ways, per table).

Goals: the backfill of 7 days at 1M rows a day within 10 minutes on 2 cores; its gold equal to
the single rebuild. Written as ``backfill.json`` (``--out-dir``). ``--quick``: 2 days of 2,000
rows (a smoke run of the tool, several minutes: Airflow's start is most of it).

    .venv/lake/bin/python -m bench.lake.backfill --out-dir .runtime/reports/bench
    .venv/lake/bin/python -m bench.lake.backfill --quick --out-dir /tmp/backfill-quick
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local import platform
from adlake.local.kafka import free_port
from bench import harness
from bench.harness import cores, load_average, timed
from bench.lake import scale, synthetic_silver
from bench.lake.backfill_report import (
    FILE,
    Backfill,
    BackfillTiming,
    DayRun,
    Equal,
    TableCheck,
)
from bench.report_kit import StatedGoal

GOAL_MINUTES = 10.0
GOAL_DAYS, GOAL_ROWS_PER_DAY = 7, 1_000_000
QUICK_DAYS, QUICK_ROWS_PER_DAY, QUICK_FILES_PER_DAY = 2, 2_000, 4
GOLD_TABLES = scale.DAILY_TABLES
POLL_S = 10.0


# -- the metadata database -------------------------------------------------------------------


def _daily_dag_id() -> str:
    """``lake_daily``, from the DAG factory: imported when needed, since importing Airflow reads
    its configuration once (a test session sets its own Airflow home before that)."""
    from adlake.airflow.factory import DAILY_DAG_ID

    return DAILY_DAG_ID


def backfill_state(db: Path, backfill_id: int) -> dict:
    """The backfill's completion and its runs with their tasks, read from the metadata DB."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        completed = conn.execute(
            "SELECT completed_at FROM backfill WHERE id = ?", (backfill_id,)
        ).fetchone()[0]
        runs = conn.execute(
            "SELECT run_id, data_interval_start, state, start_date, end_date FROM dag_run "
            "WHERE backfill_id = ? ORDER BY data_interval_start",
            (backfill_id,),
        ).fetchall()
        tasks = conn.execute(
            "SELECT run_id, task_id, state, start_date, end_date FROM task_instance "
            "WHERE dag_id = ? AND run_id IN (SELECT run_id FROM dag_run WHERE backfill_id = ?)",
            (_daily_dag_id(), backfill_id),
        ).fetchall()
    by_run: dict[str, dict] = {r[0]: {} for r in runs}
    for run_id, task_id, state, start, end in tasks:
        by_run[run_id][task_id] = {
            "state": state,
            "start": harness.airflow_utc(start),
            "end": harness.airflow_utc(end),
        }
    return {
        "completed": completed is not None,
        "runs": [
            {
                "run_id": run_id,
                "day": harness.airflow_utc(interval).date().isoformat(),
                "state": state,
                "start": harness.airflow_utc(start),
                "end": harness.airflow_utc(end),
                "tasks": by_run[run_id],
            }
            for run_id, interval, state, start, end in runs
        ],
    }


def summarize(state: dict) -> tuple[list[DayRun], dict[str, float], list[str]]:
    """Each run's seconds and tasks' seconds, the tasks' seconds summed over the runs, and what
    did not succeed.

    >>> t = lambda s: datetime(2026, 11, 26, 0, 0, s, tzinfo=UTC)
    >>> task = lambda a, b: {"state": "success", "start": t(a), "end": t(b)}
    >>> run = {"run_id": "r", "day": "2026-11-20", "state": "success", "start": t(0),
    ...        "end": t(30), "tasks": {"gold_daily": task(1, 21), "bronze": task(0, 1)}}
    >>> runs, task_seconds, failed = summarize({"completed": True, "runs": [run]})
    >>> task_seconds, runs[0].seconds, failed
    ({'bronze': 1.0, 'gold_daily': 20.0}, 30.0, [])
    """

    def seconds(a: datetime | None, b: datetime | None) -> float | None:
        return round((b - a).total_seconds(), 1) if a and b else None

    runs, totals, failed = [], {}, []
    for run in state["runs"]:
        tasks = {
            task_id: seconds(t["start"], t["end"]) for task_id, t in sorted(run["tasks"].items())
        }
        for task_id, value in tasks.items():
            totals[task_id] = round(totals.get(task_id, 0.0) + (value or 0.0), 1)
        failed += [
            f"{run['day']} {task_id}: {t['state']}"
            for task_id, t in run["tasks"].items()
            if t["state"] != "success"
        ]
        if run["state"] != "success":
            failed.append(f"{run['day']}: run {run['state']}")
        runs.append(
            DayRun(
                day=run["day"],
                state=run["state"],
                seconds=seconds(run["start"], run["end"]),
                tasks=tasks,
            )
        )
    return runs, dict(sorted(totals.items())), failed


# -- the steps -------------------------------------------------------------------------------


def backfill_rows(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute(
            "SELECT count(*) FROM backfill WHERE dag_id = ?", (_daily_dag_id(),)
        ).fetchone()[0]


def run_backfill(
    settings: Settings, first: date, last: date, timeout_s: float, say
) -> BackfillTiming:
    """Step 3: the runbook's command, then the metadata DB polled until the backfill is
    complete; its figures."""
    started = time.monotonic()
    load_start = load_average()
    db = platform.airflow_home(settings) / "airflow.db"
    for attempt in range(1, 4):
        done = platform.run_airflow(settings, *platform.backfill_args(first, last), check=False)
        # SQLite takes one writer at a time: under load the scheduler or the dag-processor may
        # hold it past the CLI's wait. The failed command rolled back (no backfill row), so it
        # is created again; any other failure is the command's own.
        if done.returncode and "database is locked" in done.stderr and not backfill_rows(db):
            say(f"backfill create: the metadata database was locked (attempt {attempt}); again")
            continue
        break
    if done.returncode:
        raise RuntimeError(f"backfill create: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    say(f"backfill of {first} to {last} created")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        backfill_id = conn.execute(
            "SELECT max(id) FROM backfill WHERE dag_id = ?", (_daily_dag_id(),)
        ).fetchone()[0]
    finished: set[str] = set()
    while True:
        state = backfill_state(db, backfill_id)
        for run in state["runs"]:
            if run["state"] in ("success", "failed") and run["day"] not in finished:
                finished.add(run["day"])
                say(f"backfill: {run['day']} {run['state']} ({len(finished)} runs done)")
        if state["completed"]:
            break
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"backfill {backfill_id} not complete after {timeout_s:.0f} s")
        time.sleep(POLL_S)
    wall_s = time.monotonic() - started
    days = len(state["runs"])
    runs, task_seconds, failed = summarize(state)
    return BackfillTiming(
        backfill_id=backfill_id,
        wall_s=round(wall_s, 1),
        days=days,
        days_per_minute=round(days / (wall_s / 60), 2),
        load_average=(load_start, load_average()),
        runs=runs,
        task_seconds=task_seconds,
        failed=failed,
    )


def compare(spark, settings: Settings, start: datetime, end: datetime, work: Path, say) -> Equal:
    """Step 4: the backfill's gold against one rebuild of ``[start, end)``, table by table."""
    from spark_apps.lake import gold as gold_job
    from spark_apps.lake.tables import read_table

    aside = work / "backfill-gold"
    for name in GOLD_TABLES:
        read_table(spark, settings, name).write.mode("overwrite").parquet(str(aside / name))
    load_start = load_average()
    rebuilt, seconds = {}, {}
    for name in GOLD_TABLES:
        rebuilt[name], seconds[name] = timed(gold_job.rebuild, spark, settings, name, start, end)
        say(f"single rebuild: {name} {seconds[name]:.1f} s, {rebuilt[name]} rows")
    tables = {}
    for name in GOLD_TABLES:
        backfilled = spark.read.parquet(str(aside / name))
        single = read_table(spark, settings, name).select(*backfilled.columns)
        tables[name] = TableCheck(
            rows=single.count(),
            only_backfill=backfilled.exceptAll(single).count(),
            only_single=single.exceptAll(backfilled).count(),
        )
    differences = sum(t.only_backfill + t.only_single for t in tables.values())
    say(f"row for row: {differences} differences ({tables})")
    return Equal(
        tables=tables,
        differences=differences,
        rebuild_s={k: round(v, 1) for k, v in seconds.items()},
        rebuild_total_s=round(sum(seconds.values()), 1),
        rebuild_load_average=(load_start, load_average()),
    )


def goals(
    backfill: BackfillTiming, rows: dict[str, int], equal: Equal, args: argparse.Namespace
) -> list[StatedGoal]:
    at_scale = args.days >= GOAL_DAYS and args.rows_per_day >= GOAL_ROWS_PER_DAY
    minutes = backfill.wall_s / 60
    return [
        StatedGoal(
            goal=f"a backfill of {GOAL_DAYS} days at {GOAL_ROWS_PER_DAY:,} silver rows a day "
            "through the scheduler",
            target=f"<= {GOAL_MINUTES:.0f} min",
            measured=f"{minutes:.1f} min for {backfill.days} days of "
            f"{sum(rows.values()) / args.days:,.0f} rows ({backfill.days_per_minute} days/min)",
            met=at_scale and minutes <= GOAL_MINUTES,
            bound=bound(backfill),
        ),
        StatedGoal(
            goal="the backfill's gold equals one rebuild of the same days, row for row",
            target="0 differences",
            measured=f"{equal.differences} differences",
            met=equal.differences == 0,
            bound="",
        ),
    ]


def bound(backfill: BackfillTiming) -> str:
    """What the backfill's time is made of: its largest task and the tasks' share of the wall."""
    totals = backfill.task_seconds
    if not totals:
        return "no task ran"
    top = max(totals, key=totals.get)
    busy = sum(totals.values())
    return (
        f"`{top}` {totals[top]:.0f} s of {busy:.0f} s in tasks "
        f"({backfill.wall_s - busy:.0f} s of the wall between tasks: scheduling, "
        "the sensor's reschedule)"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake.backfill", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--days", type=int, default=GOAL_DAYS, help="days backfilled")
    parser.add_argument(
        "--rows-per-day",
        type=int,
        default=GOAL_ROWS_PER_DAY,
        help="silver rows a day, across the topics",
    )
    parser.add_argument(
        "--files-per-day",
        type=int,
        default=synthetic_silver.DEFAULT_FILES_PER_DAY,
        help="silver files a day and table (as hourly silver runs leave them)",
    )
    parser.add_argument(
        "--last-day",
        type=date.fromisoformat,
        default=synthetic_silver.LAST_DAY,
        help="the backfill's last day",
    )
    parser.add_argument("--seed", type=int, default=7, help="of the generated silver")
    parser.add_argument(
        "--timeout-min", type=float, default=120.0, help="give up on the backfill after this"
    )
    parser.add_argument("--quick", action="store_true", help="2 days of 2,000 rows: a smoke run")
    parser.add_argument(
        "--work-dir", default=None, help="the scratch runtime (unset: a new temporary directory)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch runtime's tables")
    parser.add_argument("--out-dir", default=None, help="where backfill.json goes")
    args = parser.parse_args(argv)
    if args.quick:
        args.days, args.rows_per_day = QUICK_DAYS, QUICK_ROWS_PER_DAY
        args.files_per_day = QUICK_FILES_PER_DAY
    return args


def main(argv: Sequence[str] | None = None) -> int:
    from adlake.local.engine import LakeEngine
    from adlake.spark_session import get_session

    args = parse_args(argv)
    base = load_settings()
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(base)
    began = time.monotonic()
    say = harness.progress("backfill")

    workdir = Path(args.work_dir) if args.work_dir else harness.work_dir("backfill")
    first = args.last_day - timedelta(days=args.days - 1)
    start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(args.last_day, datetime.min.time(), tzinfo=UTC) + timedelta(days=1)
    with harness.private_broker("backfill", base, workdir) as (scratch, work):
        settings = scratch.with_overrides(lake_engine="connect", lake_engine_port=free_port())
        say(f"scratch runtime {work}; {args.days} days {first} to {args.last_day}")
        # the data is written from a session of this process; Airflow's tasks use the engine
        spark = get_session(
            "lake", "backfill-benchmark", settings.with_overrides(lake_engine="local")
        )
        try:
            rows, silver_s = timed(
                synthetic_silver.write_days, spark, settings, (0, args.days), args
            )
            say(f"silver written in {silver_s:.0f} s: {rows}")
            engine = LakeEngine(settings)
            engine.start()
            say(f"lake engine up on :{settings.lake_engine_port}")
            try:
                with harness.platform_airflow(settings, (_daily_dag_id(),), say, schedules=False):
                    backfill = run_backfill(
                        settings, first, args.last_day, args.timeout_min * 60, say
                    )
            finally:
                engine.stop()
            say(
                f"backfill: {backfill.wall_s:.0f} s for {backfill.days} days "
                f"({backfill.days_per_minute} days/min); tasks {backfill.task_seconds}"
            )
            equal = compare(spark, settings, start, end, work, say)
        finally:
            spark.stop()
            if not args.keep:
                shutil.rmtree(settings.tables_dir, ignore_errors=True)
    report = Backfill(
        errors=list(backfill.failed or []),
        quick=args.quick,
        cores=cores(),
        days=args.days,
        first_day=first.isoformat(),
        last_day=args.last_day.isoformat(),
        rows_per_day=args.rows_per_day,
        silver_rows=rows,
        silver_s=round(silver_s, 1),
        backfill=backfill,
        equal=equal,
        goals=goals(backfill, rows, equal, args),
        command=" ".join(["airflow", *platform.backfill_args(first, args.last_day)]),
        work_dir=str(work),
        seconds=round(time.monotonic() - began, 1),
    )
    out = harness.write_json(out_dir / FILE, asdict(report))
    for g in report.goals:
        say(f"goal {g.goal}: {g.measured} ({'met' if g.met else 'NOT met'})")
    print(json.dumps({"seconds": report.seconds, "goals": asdict(report)["goals"]}, indent=1))
    say(f"written to {out}")
    return 1 if report.errors or equal.differences else 0


if __name__ == "__main__":
    sys.exit(main())
