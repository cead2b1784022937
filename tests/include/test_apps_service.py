"""The streaming apps in a service of their own (``apps_host`` ``service``): the reconcile loop
(``python -m adlake.apps loop``) as a real process, actions handed to it by ``act``, the apps it
starts outliving their caller and the loop itself, and a new loop adopting them.

Real processes on one machine, no Spark: the fake app and fake ops interpreter of
``test_apps.py`` (the launcher, lock, session, log and records are the real ones). The loop
runs every second here; every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from adlake import apps
from adlake.apps import service
from adlake.apps.launcher import LOCK_HELD
from adlake.config import REPO_ROOT
from adlake.processes import parent
from tests.conftest import private_settings
from tests.include.test_apps import alive, wait_for, with_fake_app
from tests.support.app_processes import kill_lock_holders, launchers

APP = "click_surge"

# An Airflow-like caller: one act() in service mode, its summary printed, then it waits to be
# killed (as a task process of a scheduler that is restarted).
CALLER = """
import json, sys
from adlake import apps
from adlake.config import load_settings
summary = apps.act(load_settings(), sys.argv[1], sys.argv[2], reason="caller")
print(json.dumps(summary), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def here(tmp_path):
    """Settings of the loop's side (the apps live here), with the fake app; a loop every
    second. Whatever a failed test leaves holding a lock is killed."""
    settings = with_fake_app(private_settings(tmp_path / "runtime"), tmp_path / "fake")
    settings = settings.with_overrides(app_loop_interval_s=1)
    yield settings
    kill_lock_holders(settings)


@pytest.fixture
def asking(here):
    """The same runtime, as the Airflow side sees it: apps_host service."""
    return here.with_overrides(apps_host="service")


def env_of(settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADLAKE_")}
    return {**env, **apps.settings_env(settings)}


class Processes:
    """The processes a test starts, SIGKILLed (their groups) at its end."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path, self.started = tmp_path, []

    def start(self, settings, *args: str, name: str, **popen) -> subprocess.Popen:
        out = open(self.tmp_path / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO_ROOT,
            env=env_of(settings),
            stdout=popen.pop("stdout", out),
            stderr=out,
            start_new_session=True,
            **popen,
        )
        self.started.append((proc, out))
        return proc

    def loop(self, settings) -> subprocess.Popen:
        return self.start(settings, "-m", "adlake.apps", "loop", name="loop")

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text()


@pytest.fixture
def procs(tmp_path):
    processes = Processes(tmp_path)
    yield processes
    for proc, out in processes.started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()


def heartbeat(settings) -> dict:
    return json.loads(service.heartbeat_path(settings).read_text())


def a_pass_by(settings, loop: subprocess.Popen, since: float) -> bool:
    """Whether ``loop`` has finished a supervise pass after ``since``."""
    try:
        beat = heartbeat(settings)
    except (OSError, ValueError):
        return False
    return beat["pid"] == loop.pid and (beat["last_pass_at"] or 0) > since


def test_the_loop_starts_an_app_that_outlives_its_caller_and_the_loop_and_is_adopted(
    here, asking, procs
):
    first = procs.loop(here)
    wait_for(lambda: service.loop_health(here)["ok"], message=procs.log("loop"))

    # the scheduler's side asks for a start, gets act's summary, and is killed
    caller = procs.start(
        asking,
        "-c",
        CALLER,
        APP,
        "start",
        name="caller",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    summary = json.loads(caller.stdout.readline() or procs.log("caller"))
    pid = summary["result"]["started"]["pid"]
    assert (summary["app"], summary["action"], summary["reason"]) == (APP, "start", "caller")
    assert summary["status"]["holder"]["pid"] == pid
    assert parent(pid) == first.pid  # the app is the loop's child, not the caller's
    os.killpg(caller.pid, signal.SIGKILL)
    caller.wait()
    wait_for(lambda: apps.app_status(here, APP)["state"] == "running")
    assert alive(pid) and apps.holder(here, APP).pid == pid

    # kill -9 of the loop: the app runs on, holding its lock
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert not service.loop_health(here)["ok"]
    assert alive(pid) and apps.holder(here, APP).pid == pid

    # a new loop adopts it: same pid, one instance, and its passes leave it be
    second = procs.loop(here)
    since = time.time()
    wait_for(lambda: a_pass_by(here, second, since), message=procs.log("loop"))
    assert heartbeat(here)["adopted"][APP]["pid"] == pid
    assert apps.holder(here, APP).pid == pid and launchers(here, APP) == [pid]
    assert apps.app_status(here, APP)["restarts"]["count"] == 0
    # the lock is what refuses a second instance, whoever asks, and a second loop
    with pytest.raises(apps.AlreadyRunning, match=f"pid {pid}"):
        apps.start(here, APP)
    assert procs.loop(here).wait(timeout=30) == LOCK_HELD
    assert launchers(here, APP) == [pid]

    # SIGTERM (loop --stop sends it) ends the loop cleanly and leaves the app running
    stop = procs.start(here, "-m", "adlake.apps", "loop", "--stop", name="stop")
    assert stop.wait(timeout=30) == 0, procs.log("stop")
    assert second.wait(timeout=30) == 0
    assert alive(pid) and apps.holder(here, APP).pid == pid

    # a stop through act(), in service mode, is carried out by the next loop
    procs.loop(here)
    stopped = apps.act(asking, APP, "stop", reason="test")
    assert stopped["result"]["stopped"]["pid"] == pid
    assert stopped["result"]["stopped"]["graceful"] and not alive(pid)
    assert apps.holder(here, APP) is None and apps.read_desired(here, APP).state == "stopped"
    assert not list(service.requests_dir(here).iterdir())  # every request answered and read


def test_without_a_loop_an_action_fails_naming_the_service_and_its_intent_stands(asking):
    short = asking.with_overrides(app_request_timeout_s=1)
    with pytest.raises(apps.AppError, match="the streaming-apps service did not take") as failed:
        apps.act(short, APP, "start", knobs={"threshold": 50})
    assert "no reconcile loop runs" in str(failed.value)
    assert not list(service.requests_dir(asking).iterdir())  # withdrawn
    desired = apps.read_desired(asking, APP)
    assert (desired.state, desired.knobs) == ("running", {"threshold": 50})
    # the supervisor DAG's pass starts nothing here: it fails, naming the service
    with pytest.raises(apps.AppError, match="streaming-apps service's reconcile loop is not"):
        apps.supervise(asking)
    assert apps.holder(asking, APP) is None
    # status needs no loop
    assert apps.act(asking, APP, "status")["status"]["state"] == "failed"


def test_the_pass_leaves_an_app_with_a_pending_request_to_the_request(here):
    desired = apps.record_intent(here, APP, "start", None, None, "test")
    service.submit(here, APP, "start", desired, "test")
    assert apps.reconcile(here) == [] and apps.holder(here, APP) is None
    # a request its caller could not withdraw (killed) holds the pass back only so long
    assert not service.pending(here, APP, now=time.time() + here.app_request_timeout_s + 1)
    [request] = service.claim(here)
    assert not service.pending(here, APP)
    summary = apps.carry_out(here, APP, "start", service.desired_of(request), "test")
    assert apps.holder(here, APP).pid == summary["result"]["started"]["pid"]


def test_a_request_its_caller_gave_up_on_is_answered_expired_not_acted_on(here):
    from adlake.apps.loop import Loop

    desired = apps.record_intent(here, APP, "start", None, None, "test")
    request_id = service.submit(here, APP, "start", desired, "test")
    path = service.requests_dir(here) / f"{APP}.{request_id}.request.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "requested_at": time.time() - 121}))
    Loop(here, threading.Event()).serve_requests()
    with pytest.raises(apps.AppError, match="expired: requested 12.s ago"):
        service.await_answer(here, APP, request_id)
    assert apps.holder(here, APP) is None
