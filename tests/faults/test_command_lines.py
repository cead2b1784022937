"""Each lake job's command line as Airflow runs it (``python -m spark_apps.lake.<job>``, a process
of its own) in both modes: as a client of the lake engine (the default; this test run's shared
engine) and in a Spark session of its own (``ADLAKE_LAKE_ENGINE=local``, a JVM per job). From the
fault tier's snapshots, each run writes exactly the uninterrupted reference's tables; the quality
gate validates the reference's gold and passes.

What a ``make test`` run holds: the gate on the engine. The other jobs' command lines run on the
engine in the lake DAG's run and the engine-kill reruns, and in sessions of their own in the
kill cases (:mod:`tests.faults.test_kill`: silver's and gold's killed processes);
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


# On the engine, the lake DAG's run by dag.test() (tests/dags/test_lake_dag_run.py) and the
# engine-kill reruns hold bronze, silver, gold and the view refresh in make test already.
IN_MAKE_TEST = {("quality", "engine")}


def cases():
    for job in JOBS:
        for mode in ("engine", "local"):
            marks = () if (job, mode) in IN_MAKE_TEST else (pytest.mark.e2e,)
            yield pytest.param(job, mode, id=f"{job}-{mode}", marks=marks)


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
