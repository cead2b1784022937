"""A lake task's try killed mid-write on the lake engine, then its retry, as Airflow's task runs
them (:mod:`adlake.airflow.engine_task`): each try a client process under its own session id. A
dead client's ``AvailableNow`` stream is the engine's and would run on beside the retry; the retry
first releases the earlier try's session, so that nothing of it runs, then writes, and the
tables equal the uninterrupted run's. Silver, whose ``foreachBatch`` runs in the engine's own
Python workers, is the job killed; the engine is the test run's (a client's death harms it not).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from adlake.airflow.engine_task import earlier_sessions, session_id
from adlake.config import settings_env
from adlake.local.engine_client import TOKEN_VAR
from tests.faults import harness

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
TRY = ("lake_hourly", "silver", "manual__2026-11-27T10:00:00+00:00", -1)
# Connect clients run in processes of their own (one in this process would switch PySpark here to
# Connect, under the classic session the other tests share).
RELEASE_TWICE = """
import sys
from adlake.config import load_settings
from adlake.local.engine import release_sessions
settings = load_settings()
print(release_sessions(settings, sys.argv[1:]))
print(release_sessions(settings, sys.argv[1:]))
"""


def release(settings, token: str, sessions: list[str]) -> tuple[str, str]:
    """What releasing ``sessions`` said (the streams it stopped and operations it interrupted),
    then what a second release found (nothing, once the first has released them)."""
    env = {**os.environ, **settings_env(settings.with_overrides(lake_engine="connect"))}
    env[TOKEN_VAR] = token
    done = subprocess.run(
        [sys.executable, "-c", RELEASE_TWICE, *sessions],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first, again = done.stdout.strip().splitlines()[-2:]
    return first, again


def test_a_try_killed_mid_write_is_released_by_its_retry_which_is_exact(spark, lake, tmp_path):
    token = os.environ[TOKEN_VAR]
    settings = lake.fork(harness.STAGE["silver"], tmp_path / "runtime")
    first, second = session_id(*TRY, 1), session_id(*TRY, 2)
    assert earlier_sessions(*TRY, 2) == [first]
    argv = harness.job_argv("silver", lake.report)
    moment = harness.dangerous_moment(settings, "silver")
    try_1 = harness.start_job(settings, argv, "silver-try-1", token, first)
    kill = harness.kill_when("silver", try_1, moment)
    assert kill.hit, harness.log_text(settings, "silver-try-1")[-3000:]

    # the retry's first step: the earlier try's session released, its streams stopped
    said, again = release(settings, token, [first])
    assert again == "[]", f"the first try's session still held something: {again} ({said})"
    assert said == "[]" or "silver_" in said, said  # its stream, if it still ran, was stopped
    try_2 = harness.start_job(settings, argv, "silver-try-2", token, second)
    assert harness.finish(try_2) == 0, harness.log_text(settings, "silver-try-2")[-3000:]
    for diff in harness.compare_job(spark, lake.settings, settings, "silver"):
        assert diff.equal, f"silver, try 1 killed at {kill.observed}: {diff}"
        assert diff.got == diff.expected > 0, diff
