"""Benchmark (not a test): how fresh the lake is under ``make up`` with traffic, from an event's
time to its row being published (its quality gate passed) in gold and in each view, per
scheduled hour.

1. **The platform** as ``make up`` starts it (:mod:`adlake.local.platform` ``up``: the broker,
   the lake engine, Airflow with every DAG unpaused, both streaming apps) on a runtime of its own
   (``--work-dir``, default a new ``/tmp/adlake-bench-freshness-*``), with the default
   configuration: its schedules, its pool, its priorities. Unpausing runs what a new user's
   ``make up`` runs at once: the latest hour and the previous day.
2. **Traffic** from :mod:`adlake.generator` at ``--rate`` events/s until the ``--hours``'th hour
   closes (the first measured hour is the one ``up`` finishes in, so its traffic is partial).
3. **Publication**, read from Airflow's metadata database every ``POLL_S`` s until the last hour
   is published everywhere (or ``--settle-min`` after its close):

   * a gold table of hour grain publishes hour H when ``lake_hourly``'s run of [H, H+1) passes
     its verdict task ``quality_<table>``;
   * hour H reaches silver when the first ``silver`` task ends whose run's ``bronze`` started
     after H closed (bronze reads the topics up to its start: every event of H by then);
   * a view publishes hour H when the first run of its DAG whose refresh started after that
     passes its verdict (a view is refreshed when silver is updated; it catches up to silver's
     latest version).

Figures per hour and table: seconds from the hour's close to publication (the last event of the
hour waited that long; its first event one hour more), and the chain's task times of that hour.
Goal: every hour published in gold and in every view within 5 minutes of its close. The runtime
is kept for its logs; the platform is stopped at the end.

    .venv/lake/bin/python -m bench.lake.freshness --hours 2 --out-dir .runtime/reports/bench
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import REPO_ROOT, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local import platform
from bench import harness
from bench.harness import cores, load_average

GOAL_S = 300.0
POLL_S = 15.0
HOUR = timedelta(hours=1)
CHAIN_TASKS = ("bronze", "silver", "gold", "quality_gold")


def hourly_dag_id() -> str:
    from adlake.airflow.factory import LAKE_DAG_ID

    return LAKE_DAG_ID


def hour_tables() -> list[str]:
    """The gold tables ``lake_hourly``'s gate publishes by the hour."""
    return sorted(t for j in registry.JOBS.values() if j.gate and j.runs("hourly") for t in j.reads)


def view_jobs() -> dict[str, str]:
    """Each view refresh's DAG id (its job's name) and the view it writes."""
    return {
        j.name: j.writes[0] for j in registry.JOBS.values() if j.runs("on_update") and not j.gate
    }


# -- what the metadata database says -------------------------------------------------------------


def read_tasks(db: Path) -> list[dict]:
    """Every task instance with its run's data interval end (None for an asset-triggered run)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT ti.dag_id, ti.run_id, ti.task_id, ti.state, ti.start_date, ti.end_date, "
            "dr.data_interval_end FROM task_instance ti JOIN dag_run dr "
            "ON ti.dag_id = dr.dag_id AND ti.run_id = dr.run_id"
        ).fetchall()
    keys = ("dag", "run", "task", "state", "start", "end", "interval_end")
    tasks = [dict(zip(keys, row, strict=True)) for row in rows]
    for t in tasks:
        for k in ("start", "end", "interval_end"):
            t[k] = harness.airflow_utc(t[k])
    return tasks


def published(tasks: list[dict], hour: datetime, tables: list[str], views: dict[str, str]) -> dict:
    """When ``hour`` was published in each gold table and view (None: not yet), and when it
    reached silver, by the rules of this module's docstring.

    >>> t = lambda m: datetime(2026, 11, 28, 11, m, tzinfo=UTC)
    >>> ok = lambda dag, run, task, a, b, end=None: dict(dag=dag, run=run, task=task,
    ...     state="success", start=t(a), end=t(b), interval_end=end)
    >>> tasks = [ok("lake_hourly", "h", "bronze", 0, 1, t(0)), ok("lake_hourly", "h", "silver", 1, 2, t(0)),
    ...          ok("lake_hourly", "h", "quality_page_traffic", 4, 5, t(0)),
    ...          ok("view_v", "early", "view_v", 1, 2), ok("view_v", "early", "quality_v", 3, 3),
    ...          ok("view_v", "late", "view_v", 2, 3), ok("view_v", "late", "quality_v", 3, 4)]
    >>> p = published(tasks, t(0) - HOUR, ["page_traffic"], {"view_v": "v"})
    >>> p["silver"].minute, p["page_traffic"].minute, p["v"].minute
    (2, 5, 4)
    """
    close = hour + HOUR
    done = [t for t in tasks if t["state"] == "success" and t["end"]]
    out: dict[str, datetime | None] = {}
    for table in tables:
        ends = [
            t["end"]
            for t in done
            if t["dag"] == hourly_dag_id()
            and t["task"] == f"quality_{table}"
            and t["interval_end"] == close
        ]
        out[table] = min(ends, default=None)
    bronze_after = {
        (t["dag"], t["run"])
        for t in tasks
        if t["task"] == "bronze" and t["start"] and t["start"] >= close
    }
    silver = [
        t["end"] for t in done if t["task"] == "silver" and (t["dag"], t["run"]) in bronze_after
    ]
    out["silver"] = min(silver, default=None)
    for dag, view in views.items():
        refreshed = {
            t["run"]
            for t in done
            if t["dag"] == dag
            and t["task"] == dag
            and out["silver"]
            and t["start"] >= out["silver"]
        }
        ends = [
            t["end"]
            for t in done
            if t["dag"] == dag and t["run"] in refreshed and t["task"] == f"quality_{view}"
        ]
        out[view] = min(ends, default=None)
    return out


def chain_seconds(tasks: list[dict], hour: datetime) -> dict[str, float | None]:
    """``lake_hourly``'s task times for the run of ``hour``, and its first task's wait after
    the close."""
    run = {
        t["task"]: t
        for t in tasks
        if t["dag"] == hourly_dag_id() and t["interval_end"] == hour + HOUR
    }
    out = {
        name: round((run[name]["end"] - run[name]["start"]).total_seconds(), 1)
        if name in run and run[name]["start"] and run[name]["end"]
        else None
        for name in CHAIN_TASKS
    }
    bronze = run.get("bronze")
    out["bronze_waited"] = (
        round((bronze["start"] - hour - HOUR).total_seconds(), 1)
        if bronze and bronze["start"]
        else None
    )
    return out


def other_runs(tasks: list[dict]) -> list[dict]:
    """The runs of the other scheduled DAGs meanwhile (``lake_daily``, maintenance): what shared
    the lake pool with the hours."""
    runs: dict[tuple[str, str], dict] = {}
    for t in tasks:
        if t["dag"].startswith(("lake_daily", "lake_maintenance")) and t["start"]:
            r = runs.setdefault(
                (t["dag"], t["run"]),
                {"dag": t["dag"], "run": t["run"], "start": t["start"], "end": t["end"]},
            )
            r["start"] = min(r["start"], t["start"])
            r["end"] = max(filter(None, (r["end"], t["end"])), default=None)
    return sorted(runs.values(), key=lambda r: r["start"])


def summarize(tasks: list[dict], hours: list[datetime], first_event: datetime) -> list[dict]:
    tables, views = hour_tables(), view_jobs()
    out = []
    for hour in hours:
        when = published(tasks, hour, tables, views)
        close = hour + HOUR
        out.append(
            {
                "hour": hour.isoformat(),
                "traffic_from": max(hour, first_event).isoformat(),
                "after_close_s": {
                    name: round((at - close).total_seconds(), 1) if at else None
                    for name, at in when.items()
                },
                "chain_s": chain_seconds(tasks, hour),
            }
        )
    return out


# -- the run ---------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake.freshness", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--hours", type=int, default=2, help="scheduled hours measured")
    parser.add_argument("--rate", type=int, default=200, help="generated events a second")
    parser.add_argument(
        "--settle-min", type=float, default=30.0, help="wait for the last hour after its close"
    )
    parser.add_argument("--seed", type=int, default=7, help="of the generated traffic")
    parser.add_argument("--work-dir", default=None, help="the runtime (unset: a new temporary one)")
    parser.add_argument("--out-dir", default=None, help="where freshness.json goes")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(load_settings())
    work = Path(args.work_dir) if args.work_dir else harness.work_dir("freshness")
    settings = load_settings({**os.environ, "ADLAKE_RUNTIME_DIR": str(work)})
    env = harness.process_env(settings)
    say = harness.progress("freshness")
    db = platform.airflow_home(settings) / "airflow.db"
    py = [sys.executable, "-m"]
    load_start = load_average()
    say(f"runtime {work}; make up")
    began = datetime.now(UTC)
    subprocess.run([*py, "adlake.local.platform", "up"], env=env, cwd=REPO_ROOT, check=True)
    first_event = datetime.now(UTC)
    first_hour = first_event.replace(minute=0, second=0, microsecond=0)
    hours = [first_hour + i * HOUR for i in range(args.hours)]
    last_close = hours[-1] + HOUR
    duration = int((last_close - first_event).total_seconds()) + 1
    say(
        f"up in {(first_event - began).total_seconds():.0f} s; traffic at {args.rate}/s for {duration} s"
    )
    traffic = subprocess.Popen(
        [
            *py,
            "adlake.generator",
            "--rate",
            str(args.rate),
            "--duration",
            str(duration),
            "--seed",
            str(args.seed),
        ],
        env=env,
        cwd=REPO_ROOT,
        stdout=(work / "generator.log").open("w"),
        stderr=subprocess.STDOUT,
    )
    deadline = last_close + timedelta(minutes=args.settle_min)
    seen: set[tuple[str, str]] = set()
    loads = []
    try:
        while True:
            time.sleep(POLL_S)
            loads.append(load_average())
            tasks = read_tasks(db)
            summary = summarize(tasks, hours, first_event)
            for h in summary:
                for name, s in h["after_close_s"].items():
                    if s is not None and (h["hour"], name) not in seen:
                        seen.add((h["hour"], name))
                        say(f"hour {h['hour'][11:16]} in {name}: {s:+.0f} s after its close")
            last = summary[-1]["after_close_s"]
            if all(s is not None for s in last.values()) or datetime.now(UTC) > deadline:
                break
    finally:
        traffic.terminate()
        traffic.wait(60)
        report_tasks = read_tasks(db)
        subprocess.run([*py, "adlake.local.platform", "down"], env=env, cwd=REPO_ROOT, check=False)
    hours_out = summarize(report_tasks, hours, first_event)
    worst = [s for h in hours_out for s in h["after_close_s"].values()]
    measured = max((s for s in worst if s is not None), default=None)
    report = {
        "cores": cores(),
        "rate": args.rate,
        "up_s": round((first_event - began).total_seconds(), 1),
        "hours": hours_out,
        "other_runs": other_runs(report_tasks),
        "load_average": [load_start, max(loads, default=None), load_average()],
        "goals": [
            {
                "goal": f"every hour published in gold and each view within {GOAL_S:.0f} s of its close",
                "measured": "not all published" if None in worst else f"worst {measured:.0f} s",
                "met": None not in worst and measured <= GOAL_S,
            }
        ],
        "work_dir": str(work),
    }
    out = harness.write_json(out_dir / "freshness.json", report)
    print(json.dumps(report["hours"], indent=1, default=str))
    say(f"written to {out}")
    return 0 if None not in worst else 1


if __name__ == "__main__":
    sys.exit(main())
