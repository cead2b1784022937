"""A lost worker costs nothing: the lake engine runs on a Spark standalone cluster of two workers
(one core each, on loopback: :mod:`tests.support.standalone`), a lake job runs as its client,
and ``kill -9`` takes one worker and its executor down together (the worker's process group: a
machine lost) while tasks of the job run on both. The job finishes by itself, exit 0, without a
rerun, and its tables equal the uninterrupted run's (:func:`tests.faults.harness.compare_job`).

What Spark does, and why nothing is lost or written twice:

* The master sees the worker's connection drop and marks it ``DEAD``; it tells the driver (the
  engine) that the worker's executor is lost. The driver marks the executor's running tasks
  failed (``ExecutorLostFailure``, not counted against ``spark.task.maxFailures``: the loss was
  not the task's doing) and schedules them again on the surviving executor.
* The lost executor's block manager held map output (shuffle files) of finished tasks: with no
  external shuffle service those are gone, so the driver unregisters them; a reduce task that
  needed them fails with a fetch failure and the map stage is resubmitted for the missing
  partitions only (stage attempt 1), then the reduce stage again.
* A task attempt that died had written, at most, data files into a table's directory that no
  Delta commit names: the retried attempt writes its own files, and only the driver's commit of
  the operation, after every task succeeded, makes files part of the table. Delta's commits are
  made by the driver (the engine), which did not die, so every ``replaceWhere`` and ``MERGE`` of
  the job is committed once.

The moment is read off the engine's UI REST API: a task of the job running on each worker's
executor. The kill follows within milliseconds, so it lands mid-task most times (the test prints
the task attempts the loss failed and the stages resubmitted); a task may also end in those
milliseconds, which leaves the other losses (the executor's shuffle files and cached blocks, a
job finishing on one executor). What is asserted holds either way: the job had not finished (it
ran, and its last table was still to be written, when the worker and its executor were gone),
the master marked the worker dead, the engine dropped the executor, the job exited 0 and its
tables equal the reference.

The cluster asks for nothing more: the master has no free core to give a replacement executor
until a worker joins, and the job runs on with one. Without a surviving worker (the lost one
held every slot), the driver waits for resources it will never get and the job does not finish:
the test's deadline (``JOB_TIMEOUT_S``) fails it.

The two cases, gold's rebuilds (``replaceWhere`` of two tables) and a view's incremental
refresh (``MERGE``, then the progress row), are exhaustive variants of the kill-and-rerun
property ``make test`` covers in local mode (``test_kill.py``, ``test_engine_kill.py``), so
they run in ``make test-e2e``. Each case has a cluster and an engine of its own (the engine's
master is the cluster's ``spark://`` URL), so each starts with two fresh executors: in a trial
where the second case ran on the first one's engine with a new worker in place of the lost one,
the new executor never ran a task beside the survivor's during the whole view refresh (perhaps
because the survivor held the engine's cached blocks, which tasks prefer to run beside).
"""

from __future__ import annotations

import subprocess
import time

import pytest

from adlake.local.engine import LakeEngine
from adlake.local.engine_client import ensure_token
from adlake.local.kafka import free_port
from tests.conftest import private_settings
from tests.faults import harness
from tests.support.standalone import (
    active_executors,
    app_api,
    executors_on_each_worker,
    lost_tasks,
    placement,
    running_tasks,
    standalone_cluster,
    worker_dead,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"  # Spark's default executor memory: one executor per worker
# Backstops: an engine's executors registering, a job's run on a loaded 2-core machine.
EXECUTORS_TIMEOUT_S = 120
JOB_TIMEOUT_S = 600  # as harness.finish: its runs took up to 150 s at a load of 17
# How often the engine's REST API is asked which tasks run where (tasks take tens of ms here).
POLL_S = 0.02


@pytest.fixture
def cluster(tmp_path):
    with standalone_cluster(
        tmp_path / "cluster",
        workers=WORKERS,
        cores=WORKER_CORES,
        memory=WORKER_MEMORY,
    ) as cluster:
        yield cluster


@pytest.fixture
def engine(cluster, tmp_path):
    (tmp_path / "engine").mkdir()
    settings = private_settings(tmp_path / "engine").with_overrides(
        lake_engine="connect", lake_engine_port=free_port(), spark_master_lake=cluster.url
    )
    engine = LakeEngine(settings)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop()


# -- the test ------------------------------------------------------------------------------------


def last_table(job: str) -> str:
    """The table the job writes last: gold's second rebuild, the view's progress row."""
    from spark_apps.lake.views import PROGRESS_TABLE

    return {"gold": harness.FAULTED_GOLD_TABLES[-1], "views": PROGRESS_TABLE}[job]


@pytest.mark.parametrize("job", ["gold", "views"])
def test_a_worker_killed_under_a_job_costs_nothing(spark, lake, cluster, engine, tmp_path, job):
    api = app_api(engine.record()["ui_url"])
    placed = executors_on_each_worker(cluster, api, EXECUTORS_TIMEOUT_S)
    token = ensure_token(engine.settings)
    settings = lake.fork(harness.STAGE[job], tmp_path / "runtime").with_overrides(
        lake_engine_port=engine.settings.lake_engine_port
    )
    last = settings.table_path(last_table(job))
    last_before = max(harness.log_versions(last), default=-1)
    argv = harness.job_argv(job, lake.report)
    log_name = f"{job}-worker-lost"

    def log() -> str:
        return harness.log_text(settings, log_name)[-3000:]

    # The victim and what its kill waits for, known before the moment (which lasts milliseconds).
    executor = sorted(placed)[-1]
    victim = placed[executor]
    victim_id, victim_pids = victim.state()["id"], list(victim.executors().values())
    alive_before = cluster.alive_workers()

    client = harness.start_job(settings, argv, log_name, token)
    try:
        # The moment: tasks of the job running on both workers' executors at once.
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while set(running := running_tasks(api)) < set(placed):
            assert client.poll() is None, (
                f"{job} ended (exit {client.returncode}) before tasks ran on both workers "
                f"{sorted(placed)} (tasks by stage: {placement(api)}):\n" + log()
            )
            assert time.monotonic() < deadline, f"{job}: never had tasks on both workers"
            time.sleep(POLL_S)
        killed = victim.kill(victim_pids)  # returns once the worker and its executor are gone
        killed_at = time.monotonic()
        # The job had not finished when the worker died: it runs, and its last write is to come.
        assert client.poll() is None, f"{job} ended as the worker died:\n{log()}"
        assert max(harness.log_versions(last), default=-1) == last_before, (
            f"{job} had written {last.name} already: the kill came after its work"
        )
        observed = harness.job_state(settings, job)

        try:
            status = harness.finish(client, JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{job} did not finish within {JOB_TIMEOUT_S}s of the loss:\n{log()}")
    finally:
        if client.poll() is None:
            harness.kill_group(client)
    assert status == 0, f"{job} failed after the worker's loss (no rerun):\n{log()}"
    seconds = time.monotonic() - killed_at

    # The master saw the worker lost; the engine lost its executor and carried on without it.
    deadline = time.monotonic() + 60
    while not worker_dead(cluster, victim_id, alive_before):
        assert time.monotonic() < deadline, f"the master still has {victim_id}: {cluster.state()}"
        time.sleep(0.2)
    assert executor not in active_executors(api)
    assert max(harness.log_versions(last), default=-1) > last_before  # written after the loss

    for diff in harness.compare_job(spark, lake.settings, settings, job):
        assert diff.equal, f"{job}, worker killed at {observed}: {diff}"
        assert diff.got == diff.expected > 0, diff
    print(
        f"\n{job}: killed {victim.name} (pids {killed}, executor {executor}) with tasks running "
        f"on executors {dict(running)}, at {observed}; the job finished {seconds:.1f}s later; "
        f"lost and recomputed: {lost_tasks(api, executor) or 'nothing'}"
    )
