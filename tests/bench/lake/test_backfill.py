"""The backfill benchmark (``bench.lake.backfill``): its pure parts here, and its smoke run in
the e2e tier (a real Airflow scheduler backfilling two days, several minutes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from adlake.config import REPO_ROOT
from bench.lake import backfill
from bench.lake.backfill_report import BackfillTiming, Equal
from tests.conftest import private_settings


def test_quick_is_two_small_days_and_the_goal_needs_the_full_size():
    full, quick = backfill.parse_args([]), backfill.parse_args(["--quick"])
    assert (full.days, full.rows_per_day) == (7, 1_000_000)
    assert (quick.days, quick.rows_per_day) == (2, 2_000)

    run = BackfillTiming(
        wall_s=120.0,
        days=2,
        days_per_minute=1.0,
        load_average=(1.0, 2.0),
        runs=[],
        task_seconds={"gold": 60.0},
    )
    rows = {"ad_requests": 2_000, "page_clicks": 2_000}
    equal = Equal(differences=0, rebuild_total_s=30.0)
    quick_goal, same = backfill.goals(run, rows, equal, quick)
    assert not quick_goal.met  # 2 minutes, but not the benchmark's size
    assert same.met and "0 differences" in same.measured
    assert "`gold` 60 s of 60 s in tasks" in quick_goal.bound


def test_a_file_as_written_is_the_value_the_report_reads():
    from dataclasses import asdict

    from bench.lake import backfill_report as report
    from bench.report_kit import Node, summary

    t = lambda s: datetime(2026, 11, 20, 0, 0, s, tzinfo=UTC)  # noqa: E731
    task = {"state": "success", "start": t(1), "end": t(21)}
    runs, task_seconds, failed = backfill.summarize(
        {
            "completed": True,
            "runs": [
                {
                    "day": "2026-11-20",
                    "state": "success",
                    "start": t(0),
                    "end": t(30),
                    "tasks": {"gold_daily": task},
                },
            ],
        }
    )
    timing = BackfillTiming(
        backfill_id=3,
        wall_s=95.0,
        days=1,
        days_per_minute=0.63,
        load_average=(1.0, 2.5),
        runs=runs,
        task_seconds=task_seconds,
        failed=failed,
    )
    equal = Equal(
        tables={"gold_daily_campaign": report.TableCheck(rows=40, only_backfill=0, only_single=0)},
        differences=0,
        rebuild_s={"gold_daily_campaign": 12.5},
        rebuild_total_s=12.5,
        rebuild_load_average=(2.0, 2.1),
    )
    args = backfill.parse_args(["--quick"])
    rows = {"ad_requests": 2_000}
    written = report.Backfill(
        errors=[],
        quick=True,
        cores=2,
        days=1,
        first_day="2026-11-20",
        last_day="2026-11-20",
        rows_per_day=2_000,
        silver_rows=rows,
        silver_s=4.2,
        backfill=timing,
        equal=equal,
        goals=backfill.goals(timing, rows, equal, args),
        command="airflow backfill create --dag-id lake_daily",
        work_dir="/tmp/adlake-bench-backfill-x",
        seconds=180.0,
    )
    as_json = json.loads(json.dumps(asdict(written)))
    trail: set = set()
    read, goals = report.read_backfill(Node("backfill.json", "", as_json, trail=trail))
    assert read == written and [g.benchmark for g in goals] == ["backfill", "backfill"]
    kept = summary(as_json, trail)
    assert "tables" not in kept["equal"] and "tasks" not in kept["backfill"]["runs"][0]
    assert report.read_backfill(Node("backfill.json", "", kept))[0].backfill.wall_s == 95.0


@pytest.mark.e2e
def test_the_quick_backfill_runs_every_day_through_the_scheduler_and_matches_a_rebuild(tmp_path):
    settings = private_settings(tmp_path / "runtime")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADLAKE_", "AIRFLOW"))}
    env |= {"ADLAKE_PROFILE": "local", "ADLAKE_RUNTIME_DIR": str(settings.runtime_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "bench.lake.backfill", "--quick", "--out-dir", str(tmp_path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30 * 60,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    report = json.loads((tmp_path / "backfill.json").read_text())
    assert [r["day"] for r in report["backfill"]["runs"]] == ["2026-11-19", "2026-11-20"]
    assert all(r["state"] == "success" for r in report["backfill"]["runs"])
    assert {"day_final", "bronze", "silver", "gold_daily", "quality_gold_daily"} <= set(
        report["backfill"]["task_seconds"]
    )
    assert report["equal"]["differences"] == 0
    assert all(t["rows"] > 0 for t in report["equal"]["tables"].values())
