"""``platform down`` leaves no process of its runtime, even one outside every component's process
group: Airflow's task supervisor puts each task runner in a process group of its own
(``setpgid``), so stopping the scheduler's group reaches a task only if the supervisor lives long
enough to forward the signal; a task that starts during the shutdown, or a supervisor killed
after the timeout, leaves the task, its spark-submit and its JVM running under init. Here the
scheduler is a stand-in with the same shape (a session leader whose child moves into a group of
its own and ignores nothing), so the test needs no Airflow; the real platform's ``down`` during a
Spark task is ``tests/dags/test_platform_ui.py``'s.

``down`` also goes on past a part that fails to stop (an app whose lock is still held after
SIGKILL, a component that cannot be signalled): it tries every other part, names each failure
as it happens, and fails at the end (``make down`` exits non-zero) listing them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from adlake import apps
from adlake.apps.process import APP_LOCK_VAR
from adlake.local import kafka, platform
from adlake.processes import alive
from tests.conftest import private_settings

# A scheduler that starts a task runner, which moves into a group of its own and prints its pid;
# the scheduler dies on SIGTERM (Python's default) without forwarding it.
SCHEDULER = textwrap.dedent(
    """
    import subprocess, sys, time
    runner = "import os, time\\nos.setpgid(0, 0)\\nprint(os.getpid(), flush=True)\\ntime.sleep(600)"
    subprocess.Popen([sys.executable, "-c", runner])
    time.sleep(600)
    """
)


@pytest.fixture
def stand_in(tmp_path) -> Iterator[tuple]:
    """(settings, scheduler, task pid): the stand-in scheduler running with its pid file, and
    the task runner it left in a group of its own; both killed at the end if still alive."""
    settings = private_settings(tmp_path / "rt")
    script = tmp_path / "scheduler.py"
    script.write_text(SCHEDULER)
    env = {**os.environ, "AIRFLOW_HOME": str(platform.airflow_home(settings))}
    scheduler = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, start_new_session=True
    )
    task = int(scheduler.stdout.readline())
    pid_file = platform.airflow_home(settings) / "pids" / "scheduler.pid"
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text(str(scheduler.pid))
    try:
        yield settings, scheduler, task
    finally:
        for pid in (task, scheduler.pid):
            if alive(pid):
                os.kill(pid, 9)
        scheduler.stdout.close()


def test_down_stops_a_task_runner_its_scheduler_left_in_a_group_of_its_own(stand_in, capsys):
    settings, scheduler, task = stand_in
    assert os.getpgid(task) == task != scheduler.pid  # the runner leads a group of its own
    assert platform.runtime_processes(settings) == sorted([scheduler.pid, task])

    platform.down(settings)

    scheduler.wait(timeout=10)
    assert not alive(task)
    assert platform.runtime_processes(settings) == []
    assert "stopped 1 process(es) Airflow's tasks had left" in capsys.readouterr().out


def fail_the_stop_of(monkeypatch, failing: str, calls: list) -> None:
    """Every ops app runs (its lock held); ``act(stop)`` of ``failing`` raises AppStopError,
    the others' succeed. Each call is appended to ``calls``."""
    monkeypatch.setattr(apps, "holder", lambda settings, app, *args, **kwargs: f"pid of {app}")

    def act(settings, app, action, *args, **kwargs):
        calls.append(("app", app, action))
        if app == failing:
            raise apps.AppStopError(f"the lock of {app} is still held after SIGKILL")
        return {"result": "stopped"}

    monkeypatch.setattr(apps, "act", act)


def test_down_tries_every_part_after_an_apps_stop_fails_and_exits_non_zero(
    tmp_path, monkeypatch, capsys
):
    settings = private_settings(tmp_path / "rt")
    first, *others = platform.ops_apps()
    assert others, "the registry has a second ops app to stop after the failing one"
    calls: list[tuple] = []
    fail_the_stop_of(monkeypatch, first, calls)
    monkeypatch.setattr(platform, "log", lambda message: calls.append(("log", message)))
    monkeypatch.setattr(
        platform, "stop_component", lambda s, component, **k: calls.append(("airflow", component))
    )
    monkeypatch.setattr(
        platform, "stop_runtime_processes", lambda s, **k: calls.append(("tasks",)) or []
    )
    monkeypatch.setattr(kafka.LocalKafka, "is_running", lambda self: True)
    monkeypatch.setattr(kafka.LocalKafka, "stop", lambda self: calls.append(("broker",)))
    monkeypatch.setattr(platform, "load_settings", lambda *args, **kwargs: settings)

    with pytest.raises(SystemExit) as exited:
        platform.main(["down"])  # `make down`

    stops = [call for call in calls if call[0] != "log"]
    assert stops == [
        *(("app", app, "stop") for app in [first, *others]),
        ("airflow", "scheduler"),
        ("tasks",),
        *(("airflow", c) for c in reversed(platform.AIRFLOW_COMPONENTS)),
        ("tasks",),
        ("broker",),
    ]
    # reported when it happens (before the next app's stop), naming the app and the error
    reported = [i for i, call in enumerate(calls) if call[0] == "log" and first in call[1]]
    assert reported and reported[0] < calls.index(("app", others[0], "stop"))
    assert "still held after SIGKILL" in calls[reported[0]][1]
    # and at the end: a message naming what failed, a non-zero exit status
    code = exited.value.code
    assert isinstance(code, str) and first in code and "still held after SIGKILL" in code
    assert not any(app in code for app in others)
    assert ("log", "platform stopped") not in calls


def test_down_leaves_no_process_of_the_runtime_after_an_apps_stop_fails(stand_in, monkeypatch):
    settings, scheduler, task = stand_in
    calls: list[tuple] = []
    failing = platform.ops_apps()[0]
    fail_the_stop_of(monkeypatch, failing, calls)
    # the app whose stop failed still runs: detached, in a session of its own, as launched
    lock = apps.lock_path(settings, failing)
    app = subprocess.Popen(["sleep", "600"], env={APP_LOCK_VAR: str(lock)}, start_new_session=True)

    with pytest.raises(SystemExit, match="still held after SIGKILL"):
        platform.down(settings)

    scheduler.wait(timeout=10)
    assert app.wait(timeout=10) < 0 and not alive(task)  # signalled, not left running
    assert platform.runtime_processes(settings) == []
    assert [app for _, app, _ in calls] == platform.ops_apps()
