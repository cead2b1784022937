"""kill -9 of the lake engine itself while a job writes through it: the engine's keeper starts it
again, the job is run again as a client of the new engine, and the tables equal the
uninterrupted run's. On the engine a client does not own its writes (killing the client is a
retry's business: :mod:`adlake.airflow.engine_task` releases the earlier try's session); the
engine's death is what ends them mid-write, at the same dangerous moments as
:mod:`tests.faults.test_kill`'s. The engine here is this module's own: its kill would end every
other test's sessions.

A MERGE with its bookkeeping (the view refresh) runs in ``make test``; bronze's stream, silver's
``foreachBatch`` and gold's rebuilds in ``make test-e2e``.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from adlake.local.engine import LakeEngine
from adlake.local.engine_client import ensure_token
from adlake.local.kafka import free_port
from tests.conftest import private_settings
from tests.faults import harness

pytestmark = [pytest.mark.faults, pytest.mark.integration]
RESTART_S = 60


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    settings = private_settings(tmp_path_factory.mktemp("faults-engine")).with_overrides(
        lake_engine="connect", lake_engine_port=free_port()
    )
    engine = LakeEngine(settings)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop()


def answering_again(engine: LakeEngine, killed_pid: int) -> float:
    """Seconds until the engine answers again as another process, at most :data:`RESTART_S`."""
    began = time.monotonic()
    while not ((now := engine.record()) and now["pid"] != killed_pid and engine.answers()):
        assert time.monotonic() - began < RESTART_S, f"not back: {engine._tail()}"
        time.sleep(1)
    return time.monotonic() - began


@pytest.mark.parametrize(
    "job",
    [
        "views",
        pytest.param("bronze", marks=pytest.mark.e2e),
        pytest.param("silver", marks=pytest.mark.e2e),
        pytest.param("gold", marks=pytest.mark.e2e),
    ],
)
def test_the_engine_killed_mid_write_then_rerun_equals_the_uninterrupted_run(
    spark, lake, engine, tmp_path, job
):
    token = ensure_token(engine.settings)
    settings = lake.fork(harness.STAGE[job], tmp_path / "runtime").with_overrides(
        lake_engine_port=engine.settings.lake_engine_port
    )
    moment = harness.dangerous_moment(settings, job)
    argv = harness.job_argv(job, lake.report)
    client = harness.start_job(settings, argv, f"{job}-engine-killed", token)
    deadline = time.monotonic() + 300
    while not moment.holds():
        assert client.poll() is None, (
            f"{job} ended (exit {client.returncode}) before {moment.name}:\n"
            + harness.log_text(settings, f"{job}-engine-killed")[-3000:]
        )
        assert time.monotonic() < deadline, f"{job}: {moment.name} did not happen"
        time.sleep(harness.POLL_S)
    killed = engine.record()["pid"]
    os.kill(killed, signal.SIGKILL)
    observed = moment.describe()
    # the client loses its engine mid-operation: it fails (a retry is Airflow's), never succeeds
    assert harness.finish(client) != 0, harness.log_text(settings, f"{job}-engine-killed")[-3000:]
    answering_again(engine, killed)

    rerun = harness.start_job(settings, argv, f"{job}-rerun", token)
    assert harness.finish(rerun) == 0, harness.log_text(settings, f"{job}-rerun")[-3000:]
    for diff in harness.compare_job(spark, lake.settings, settings, job):
        assert diff.equal, f"{job}, engine killed at {observed}: {diff}"
        assert diff.got == diff.expected > 0, diff
