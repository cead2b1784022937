"""Each lake job's command line as Airflow runs it (``python -m spark_apps.lake.<job>``, a process
of its own) in both modes: as a client of the lake engine (the default; this test run's shared
engine) and in a Spark session of its own (``ADLAKE_LAKE_ENGINE=local``, a JVM per job). From the
fault tier's snapshots, each run writes exactly the uninterrupted reference's tables; the quality
gate validates the reference's gold and passes.

What a ``make test`` run holds: every job on the engine, and the gate in a session of its own
(the other jobs' own-session runs are the kill cases' reruns, :mod:`tests.faults.test_kill`);
``make test-e2e`` runs every pair.
"""

from __future__ import annotations

import os

import pytest

from adlake.local.engine_client import TOKEN_VAR
from adlake.quality.outcome import check
from tests.faults import harness

pytestmark = [pytest.mark.faults, pytest.mark.integration]
JOBS = (*harness.JOBS, "quality")


def argv(job: str, report: dict, outcomes: str) -> list[str]:
    if job != "quality":
        return harness.job_argv(job, report)
    start, end = harness.interval(report)
    tables = ",".join(harness.FAULTED_GOLD_TABLES)
    interval = ["--start", start.isoformat(), "--end", end.isoformat()]
    return ["spark_apps.lake.quality", "--tables", tables, *interval, "--outcome-dir", outcomes]


def cases():
    for job in JOBS:
        yield pytest.param(job, "engine", id=f"{job}-engine")
        marks = () if job == "quality" else (pytest.mark.e2e,)
        yield pytest.param(job, "local", id=f"{job}-local", marks=marks)


@pytest.mark.parametrize(("job", "mode"), cases())
def test_each_jobs_command_line_writes_the_reference_in_either_mode(
    spark, lake, tmp_path, job, mode
):
    settings = lake.fork(harness.STAGE.get(job, "gold"), tmp_path / "runtime")
    token = os.environ[TOKEN_VAR] if mode == "engine" else None  # the lake_engine fixture's
    outcomes = tmp_path / "outcomes"
    proc = harness.start_job(settings, argv(job, lake.report, str(outcomes)), job, token)
    assert harness.finish(proc) == 0, harness.log_text(settings, job)[-3000:]
    if job == "quality":
        for table in harness.FAULTED_GOLD_TABLES:
            assert check(outcomes, table).startswith(f"{table} passed")
        return
    for diff in harness.compare_job(spark, lake.settings, settings, job):
        assert diff.equal, f"{job} ({mode}): {diff}"
        assert diff.got == diff.expected > 0, diff
