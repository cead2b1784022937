"""The backfill benchmark (``bench.lake.backfill``): its pure parts here, and its smoke run in
the e2e tier (a real Airflow scheduler backfilling two days, several minutes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from adlake.config import REPO_ROOT
from bench.lake import backfill
from tests.conftest import private_settings


def test_quick_is_two_small_days_and_the_goal_needs_the_full_size():
    full, quick = backfill.parse_args([]), backfill.parse_args(["--quick"])
    assert (full.days, full.rows_per_day) == (7, 1_000_000)
    assert (quick.days, quick.rows_per_day) == (2, 2_000)

    run = {"wall_s": 120.0, "days": 2, "days_per_minute": 1.0, "task_seconds": {"gold": 60.0}}
    rows = {"ad_requests": 2_000, "page_clicks": 2_000}
    equal = {"differences": 0}
    quick_goal, same = backfill.goals(run, rows, equal, quick)
    assert not quick_goal["met"]  # 2 minutes, but not the benchmark's size
    assert same["met"] and "0 differences" in same["measured"]
    assert "`gold` 60 s of 60 s in tasks" in quick_goal["bound"]


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
