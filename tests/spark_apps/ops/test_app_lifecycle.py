"""Trigger switches of the streaming-app lifecycle (``adlake.apps``) with the real apps and a real
broker: each app started by ``act`` as a detached process holding its lock, stopped gracefully
(committing everything), started again in the other trigger mode.

The rest of the lifecycle (start through the app's DAG, a second start refused, ``kill -9``
repaired by the scheduler's supervisor runs, a scheduler restart, stops through the DAGs) runs
through Airflow in ``tests/dags/test_app_lifecycle_dags.py``.

What the app must have written comes from ``test_click_surge_app``'s own reading of the rules
(``expected_output``: every surging window with its exact final count, every reject in the DLQ),
computed from the clicks read back from the broker. Output written twice (a batch interrupted by
the kill, re-run after the restart) is compacted by key as any consumer does; the exact final
counts then prove that nothing was lost and nothing counted twice, and, for windows counted partly
before a switch and partly after it, that the state crossed the switch.

Attribution's checkpoint cannot switch trigger (Spark refuses to change its output mode on a
checkpoint), so its switch starts a new checkpoint at the old one's committed offsets (given to
the app as ``--starting-offsets`` JSON).

The apps' Real-Time Mode checkpoint interval is 5 s here (``app_rtm_interval_s``) instead of 30,
so that commits, stops and the staleness bound come sooner. Traffic is produced in a background
thread while the apps run, stop and start; the tests wait on conditions (the broker's offsets,
the checkpoint's commits, the status file), never for a fixed time.
"""

from __future__ import annotations

import dataclasses
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from adlake import apps, generator, registry
from adlake.status import read_status
from tests.spark_apps.ops.conftest import (
    committed_offsets,
    end_offsets,
    read_topic,
    wait_for,
)
from tests.spark_apps.ops.test_click_surge_app import (
    CLICKS,
    THRESHOLD,
    Expected,
    check,
    complete,
    counted_before,
    expected_output,
    input_end,
    summary,
    traffic,
)
from tests.support.app_processes import kill_lock_holders, launchers as app_launchers

pytestmark = pytest.mark.integration

APP = registry.app("click_surge")
# Backstop for an app to get somewhere (start, catch up, stop) on a loaded 2-core machine.
APP_TIMEOUT_S = 300


@pytest.fixture
def settings(fresh_kafka):
    return fresh_kafka.settings.with_overrides(app_rtm_interval_s=5)


@pytest.fixture(autouse=True)
def _stop_apps_left_running(fresh_kafka):
    """Kill whatever app a failed test leaves holding its lock, before the broker goes."""
    yield
    kill_lock_holders(fresh_kafka.settings)


# -- helpers -------------------------------------------------------------------------------------


def log(settings) -> str:
    return apps.log_tail(settings, APP.name, 60)


def state(settings) -> str:
    return apps.app_status(settings, APP.name)["state"]


def wait_state(settings, wanted: str, timeout_s: float = APP_TIMEOUT_S) -> None:
    """Wait until the app's derived state is ``wanted``; fail at once, with the log, if it
    fails or stops meanwhile."""

    def reached():
        now = state(settings)
        assert now not in ("failed", "stopped") or now == wanted, f"app {now}\n{log(settings)}"
        return now == wanted

    wait_for(reached, timeout_s, 0.5, lambda: f"app {state(settings)}\n{log(settings)}")


def launchers(settings) -> list[int]:
    return app_launchers(settings, APP.name)


def clicks_in_broker(settings) -> int:
    return sum(end_offsets(settings.kafka_bootstrap, CLICKS.name).values())


def committed_clicks(settings) -> int:
    return sum(committed_offsets(settings.checkpoint_path(APP.name)).values())


def produce_in_background(
    pool: ThreadPoolExecutor, settings, tmp_path, seed: int, duration_s: float
) -> Future:
    """The generator's click traffic for ``duration_s`` (real time), in a thread."""
    return pool.submit(
        generator.run,
        traffic(seed, duration_s),
        settings.kafka_bootstrap,
        tmp_path / f"report-{seed}.json",
        progress=False,
    )


def expected_now(settings) -> Expected:
    expected = expected_output(read_topic(settings.kafka_bootstrap, CLICKS.name), THRESHOLD)
    assert len(expected.surges) >= 3 and expected.below, expected
    return expected


def wait_done(settings, expected: Expected, end: dict) -> None:
    """Until the app has committed every input offset or its output is complete; the app must
    keep holding its lock meanwhile."""

    def done():
        assert apps.holder(settings, APP.name) is not None, f"the app is gone\n{log(settings)}"
        return committed_offsets(settings.checkpoint_path(APP.name)) == end or complete(
            settings.kafka_bootstrap, expected
        )

    wait_for(
        done,
        APP_TIMEOUT_S,
        1.0,
        lambda: (
            f"committed {committed_offsets(settings.checkpoint_path(APP.name))} of {end}\n"
            f"{log(settings)}"
        ),
    )


def stop_gracefully(settings) -> dict:
    stopped = apps.act(settings, APP.name, "stop", reason="test")["result"]["stopped"]
    assert (stopped["how"], stopped["exit_code"]) == ("exited", 0), f"{stopped}\n{log(settings)}"
    assert apps.holder(settings, APP.name) is None and launchers(settings) == []
    assert read_status(settings, APP.name)["state"] == "stopped"
    return stopped


def split_windows(expected: Expected, committed: dict) -> dict:
    """Surging windows counted partly before ``committed`` and partly after it."""
    return {
        w: (counted_before(expected, w, committed), expected.surges[w][0])
        for w in expected.surges
        if 0 < counted_before(expected, w, committed) < expected.surges[w][0]
    }


# -- the tests -----------------------------------------------------------------------------------


# make test-e2e: the switch rules are unit-tested with a stand-in app (tests/include/test_apps.py);
# these run the real apps through both switches.
@pytest.mark.e2e
def test_switching_real_time_mode_to_micro_batches_and_back_keeps_the_input_and_the_state(
    settings, tmp_path
):
    checkpoint = settings.checkpoint_path(APP.name)
    apps.act(settings, APP.name, "start", trigger="realtime", knobs={"threshold": THRESHOLD})
    wait_state(settings, "running")
    committed_at_switch, modes = [], []
    with ThreadPoolExecutor(1) as pool:
        for seed, new_trigger in ((71, "processing_time"), (72, "realtime")):
            # Traffic runs across the switch, so windows are open when the old mode stops: the
            # stop comes once ~5 s of it (250 clicks, past the burst's first, partial windows)
            # are committed.
            before = clicks_in_broker(settings)
            traffic_done = produce_in_background(pool, settings, tmp_path, seed, duration_s=30)
            wait_for(
                lambda: traffic_done.done() or committed_clicks(settings) > before + 250,
                APP_TIMEOUT_S,
                0.5,
                lambda: log(settings),
            )
            # The switch, as the app's DAG does it (restart = stop, then start), in two steps
            # here to see what the old mode committed.
            stop_gracefully(settings)
            assert not traffic_done.done(), "the traffic ended before the switch"
            committed_at_switch.append(committed_offsets(checkpoint))
            started = apps.act(settings, APP.name, "start", trigger=new_trigger)
            assert started["result"]["started"]["mode"] == new_trigger
            assert "--starting-offsets" not in started["result"]["started"]["argv"]
            traffic_done.result()
            wait_state(settings, "running")
            modes.append(read_status(settings, APP.name)["mode"])
            if new_trigger == "processing_time":
                # Once it has read everything, the idle micro-batch app keeps its status fresh
                # with heartbeats (Spark's idle event), so the supervisor does not see it stale.
                idle_from = time.time()
                end = input_end(settings.kafka_bootstrap)
                wait_for(
                    lambda: committed_offsets(checkpoint) == end,
                    APP_TIMEOUT_S,
                    0.5,
                    lambda: log(settings),
                )
                wait_for(
                    lambda: (
                        (read_status(settings, APP.name) or {}).get("last_heartbeat_at", 0)
                        > idle_from
                    ),
                    60,
                    0.5,
                    lambda: f"no heartbeat: {read_status(settings, APP.name)}",
                )
                assert state(settings) == "running"

    assert modes == ["processing_time", "realtime"]
    # Spark resumed the same checkpoint each time: nothing moved aside
    assert [p.name for p in checkpoint.parent.iterdir() if p.is_dir()] == [APP.name]
    expected = expected_now(settings)
    end = input_end(settings.kafka_bootstrap)
    wait_done(settings, expected, end)
    out = check(settings.kafka_bootstrap, expected)
    stop_gracefully(settings)
    splits = [split_windows(expected, c) for c in committed_at_switch]
    assert all(splits), f"a switch split no surging window: {splits}"
    print(
        f"\nswitches realtime -> processing_time -> realtime: {summary(expected, out)}; "
        f"windows counted across each switch (clicks before, final count): {splits}"
    )


# -- attribution: a switch Spark refuses on the same checkpoint ------------------------------------


@pytest.mark.e2e
def test_an_attribution_switch_starts_a_new_checkpoint_at_the_committed_offsets(
    fresh_kafka, tmp_path
):
    """Attribution's checkpoint cannot switch (output mode append in micro-batches, update in
    Real-Time Mode): the new checkpoint starts at the old one's committed offsets. Every rejected
    record leaves as one DLQ record at once (no state, no window), so the DLQ shows each input
    record read exactly once across the two checkpoints."""
    app = registry.app("attribution")
    settings = fresh_kafka.settings.with_overrides(
        spark_master_ops="local[16]", app_rtm_interval_s=5
    )
    checkpoint = settings.checkpoint_path(app.name)
    config = generator.GeneratorConfig(
        rate=400.0, count=300, seed=81, click_share=0.0, malformed=0.1
    )
    generator.run(config, settings.kafka_bootstrap, tmp_path / "r1.json", progress=False)
    apps.act(settings, app.name, "start", trigger="processing_time")
    first_end = {
        (t, p): o for t in app.inputs for p, o in end_offsets(settings.kafka_bootstrap, t).items()
    }
    wait_for(
        lambda: committed_offsets(checkpoint) == first_end,
        APP_TIMEOUT_S,
        1.0,
        lambda: apps.log_tail(settings, app.name),
    )
    old = committed_offsets(checkpoint)

    result = apps.act(settings, app.name, "restart", trigger="realtime")
    argv = result["result"]["started"]["argv"]
    carried = json.loads(argv[argv.index("--starting-offsets") + 1])
    assert {(t, int(p)): o for t, parts in carried.items() for p, o in parts.items()} == old
    [aside] = [p for p in checkpoint.parent.iterdir() if p.is_dir() and p.name != app.name]
    assert aside.name.startswith("attribution.processing_time.jvm.")
    assert committed_offsets(aside) == old  # moved, not deleted

    generator.run(
        dataclasses.replace(config, seed=82),
        settings.kafka_bootstrap,
        tmp_path / "r2.json",
        progress=False,
    )
    end = {
        (t, p): o for t in app.inputs for p, o in end_offsets(settings.kafka_bootstrap, t).items()
    }
    wait_for(
        lambda: committed_offsets(checkpoint) == end,
        APP_TIMEOUT_S,
        1.0,
        lambda: apps.log_tail(settings, app.name),
    )
    stopped = apps.act(settings, app.name, "stop")["result"]["stopped"]
    assert stopped["graceful"], stopped

    from tests.spark_apps.ops.test_attribution_app import (
        expected_output as attribution_output,
        read_inputs,
    )

    rejects = read_topic(settings.kafka_bootstrap, app.dlq)
    coords = [
        (r.json()["source_topic"], r.json()["source_partition"], r.json()["source_offset"])
        for r in rejects
    ]
    assert len(coords) == len(set(coords)), "a rejected record was read twice"
    assert set(coords) == set(attribution_output(read_inputs(settings.kafka_bootstrap)).dlq)
    before_switch = {c for c in coords if c[2] < old[(c[0], c[1])]}
    assert before_switch and set(coords) - before_switch, "rejects on both sides of the switch"
