"""A lost worker costs nothing: click-surge runs through the lifecycle (``adlake.apps``: started
detached by ``act``, holding its lock; the real supervisor's pass every second) with
``spark_master_ops`` a Spark standalone cluster of two workers (one core each, on loopback,
started from the ops runtime's ``spark-class``: :mod:`tests.support.standalone`) and a real
broker (``fresh_kafka``). Clicks flow; while a micro-batch has tasks on both workers' executors,
``kill -9`` takes one worker and its executor down together (the worker's process group: a
machine lost); more clicks follow. Every surging window is then reported with its exact final
count and every rejected click is in the DLQ, as computed from the input by
``test_click_surge_app``'s own reading of the rules (``expected_output``, ``check``): nothing
lost, nothing counted twice.

**Micro-batches, not Real-Time Mode.** Real-Time Mode runs every task of its long-lived batch at
once: one per source partition plus one per shuffle partition (here 4 + 2 = 6 slots,
:func:`spark_apps.common.streaming.triggers.required_slots`). Two one-core workers have 2; the
app's own check covers ``local[N]`` masters only, and Spark fails the query at its first batch
(``CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT``: 6 slots needed, 2 free; tried). The app runs with
``trigger processing_time`` (a batch as soon as the previous one ends): the same code and
output mode (update).

What Spark does when the executor is lost, and why the output is complete:

* The master sees the worker's connection drop, marks it ``DEAD`` and tells the driver that the
  executor is lost. The driver fails the executor's running tasks (``ExecutorLostFailure``, not
  counted against ``spark.task.maxFailures``) and runs them again on the survivor; the map
  output the lost executor held (the batch's shuffle files: there is no external shuffle
  service) is recomputed when a reduce task's fetch fails (the map stage is resubmitted). The
  query, and the app, run on: the batch takes longer, then the next batches run on one executor.
* The window counts are the stateful aggregation's state, partitioned by shuffle partition. A
  partition's state store is loaded by the task that owns it from the checkpoint (RocksDB with
  changelog checkpointing, on the shared file system) at the last committed version, so the
  batch's retried task on the survivor starts from exactly the state the lost one started from;
  the batch's offsets are in ``offsets/N`` already, so it reads the same records.
* The Kafka sink is at-least-once: records a dead task attempt had sent before dying are sent
  again by the retry. A surge is keyed ``page_id|window_start`` and re-emitted as it grows;
  consumers keep the highest count per key (``reported`` compacts so), and a DLQ record is keyed
  by its source coordinates: duplicates are allowed, a lost or wrong count is not.

If the query did fail (a stage retried past its limit), the runner exits non-zero with an exit
record and the supervisor's pass (run here every second, as the ``apps_supervisor`` DAG runs it
every minute) restarts it on its checkpoint: the output is complete either way, and the test
says which happened. Without a surviving worker the query waits for executors that never come,
commits nothing more, and the deadline (``APP_TIMEOUT_S``) fails the test.

An exhaustive variant (the apps' kills are in ``make test``: ``test_faults.py``): ``make
test-e2e``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from adlake import apps, generator, registry
from adlake.status import read_status
from tests.spark_apps.ops.conftest import committed_offsets, read_topic, wait_for
from tests.spark_apps.ops.test_click_surge_app import (
    CLICKS,
    THRESHOLD,
    check,
    expected_output,
    input_end,
    summary,
    traffic,
)
from tests.support.app_processes import kill_lock_holders
from tests.support.standalone import (
    active_executors,
    app_api,
    executors_on_each_worker,
    lost_tasks,
    running_tasks,
    standalone_cluster,
    worker_dead,
)

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

APP = registry.app("click_surge")
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"  # Spark's default executor memory: one executor per worker
# Clicks before the kill and after it (seconds of the generator's real-time traffic, ~40/s).
BEFORE_S, AFTER_S = 8.0, 5.0
# Backstop for the app to get somewhere (start, catch up, stop) on a loaded 2-core machine.
APP_TIMEOUT_S = 300
# How often the driver's REST API is asked which tasks run where.
POLL_S = 0.02


@pytest.fixture
def cluster(tmp_path):
    with standalone_cluster(
        tmp_path / "cluster", workers=WORKERS, cores=WORKER_CORES, memory=WORKER_MEMORY
    ) as cluster:
        yield cluster


@pytest.fixture
def settings(fresh_kafka, cluster):
    """The app on the cluster, its UI on (any free port: its REST API says where tasks run), a
    short supervisor backoff; whatever the test leaves running is killed before the cluster and
    the broker go."""
    settings = fresh_kafka.settings.with_overrides(
        spark_master_ops=cluster.url,
        spark_metrics=True,
        spark_ui_port=0,
        app_backoff_min_s=1,
        app_backoff_max_s=2,
    )
    try:
        yield settings
    finally:
        kill_lock_holders(settings)


def log(settings) -> str:
    return apps.log_tail(settings, APP.name, 60)


def driver_api(settings) -> str:
    """The REST API of the app's driver, from its status (``metrics_url``: the UI's address)."""
    url = wait_for(
        lambda: (read_status(settings, APP.name) or {}).get("metrics_url"),
        APP_TIMEOUT_S,
        0.5,
        lambda: log(settings),
    )
    return app_api(url.split("/metrics/")[0])


def committed_clicks(settings) -> int:
    return sum(committed_offsets(settings.checkpoint_path(APP.name)).values())


def generate(settings, tmp_path, seed: int, duration_s: float) -> dict:
    return generator.run(
        traffic(seed, duration_s),
        settings.kafka_bootstrap,
        tmp_path / f"report-{seed}.json",
        progress=False,
    )


def test_a_worker_killed_under_click_surge_loses_nothing(settings, cluster, tmp_path):
    apps.act(
        settings,
        APP.name,
        "start",
        trigger="processing_time",
        knobs={"threshold": THRESHOLD},
        reason="worker loss test",
    )
    pid = apps.holder(settings, APP.name).pid
    api = driver_api(settings)
    placed = executors_on_each_worker(cluster, api, APP_TIMEOUT_S)
    executor = sorted(placed)[-1]
    victim = placed[executor]
    victim_id, victim_pids = victim.state()["id"], list(victim.executors().values())
    alive_before = cluster.alive_workers()

    with ThreadPoolExecutor(1) as pool:
        # Clicks flow until the kill (more of them if the app is slow to get going).
        feeds = [pool.submit(generate, settings, tmp_path, 91, BEFORE_S)]
        # The moment: windows in the state (a batch committed) and a batch's tasks running on
        # both workers' executors at once.
        deadline = time.monotonic() + APP_TIMEOUT_S
        while not (
            committed_clicks(settings) > 0 and set(running := running_tasks(api)) >= set(placed)
        ):
            assert apps.holder(settings, APP.name) is not None, f"the app is gone\n{log(settings)}"
            assert time.monotonic() < deadline, f"no batch on both workers\n{log(settings)}"
            if feeds[-1].done():
                feeds[-1].result()
                feeds.append(pool.submit(generate, settings, tmp_path, 91 + len(feeds), 2.0))
            time.sleep(POLL_S)
        killed = victim.kill(victim_pids)
        # mid-run: the app (its driver, on no worker) runs on
        assert apps.holder(settings, APP.name) is not None, f"the app is gone\n{log(settings)}"
        at_kill = committed_offsets(settings.checkpoint_path(APP.name))
        feeds[-1].result()
    # More clicks, with one worker left.
    generate(settings, tmp_path, 90, AFTER_S)
    expected = expected_output(read_topic(settings.kafka_bootstrap, CLICKS.name), THRESHOLD)
    assert len(expected.surges) >= 3 and expected.below, expected
    end = input_end(settings.kafka_bootstrap)

    # Until every click is committed, with the supervisor's pass every second (it restarts the
    # app if its query failed, which a lost executor should not make it do).
    actions: list[dict] = []

    def caught_up() -> bool:
        actions.extend(a for a in apps.supervise(settings) if a.get("app") == APP.name)
        return committed_offsets(settings.checkpoint_path(APP.name)) == end

    wait_for(
        caught_up,
        APP_TIMEOUT_S,
        1.0,
        lambda: (
            f"committed {committed_offsets(settings.checkpoint_path(APP.name))} of {end}; "
            f"supervisor actions {actions}\n{log(settings)}"
        ),
    )
    out = check(settings.kafka_bootstrap, expected)

    # The master saw the worker lost; the driver that carried on dropped its executor.
    wait_for(
        lambda: worker_dead(cluster, victim_id, alive_before),
        60,
        0.2,
        lambda: f"the master still has {victim_id}: {cluster.state()}",
    )
    holder = apps.holder(settings, APP.name)
    assert holder is not None, f"the app is not running\n{log(settings)}"
    restarts = apps.read_restarts(settings, APP.name).count
    kept = holder.pid == pid and restarts == 0
    if kept:
        assert executor not in active_executors(api)
        lost = lost_tasks(api, executor) or "nothing"
    else:  # a new driver: its executors are the survivor's new one
        lost = f"the query failed; the supervisor restarted the app {restarts} time(s): {actions}"
    stopped = apps.act(settings, APP.name, "stop", reason="worker loss test")["result"]["stopped"]
    assert stopped["how"] == "exited", f"{stopped}\n{log(settings)}"
    print(
        f"\nkilled {victim.name} (pids {killed}, executor {executor}) with tasks running on "
        f"executors {dict(running)}, {sum(at_kill.values())} clicks committed; the app "
        f"{'kept running' if kept else 'was restarted'}; lost and recomputed: {lost}; "
        f"{summary(expected, out)}"
    )
