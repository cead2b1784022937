"""``platform down`` leaves no process of its runtime, even one outside every component's process
group: Airflow's task supervisor puts each task runner in a process group of its own
(``setpgid``), so stopping the scheduler's group reaches a task only if the supervisor lives long
enough to forward the signal; a task that starts during the shutdown, or a supervisor killed
after the timeout, leaves the task, its spark-submit and its JVM running under init. Here the
scheduler is a stand-in with the same shape (a session leader whose child moves into a group of
its own and ignores nothing), so the test needs no Airflow; the real platform's ``down`` during a
Spark task is ``tests/dags/test_platform_ui.py``'s."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from adlake.local import platform
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


def test_down_stops_a_task_runner_its_scheduler_left_in_a_group_of_its_own(tmp_path, capsys):
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
    assert os.getpgid(task) == task != scheduler.pid  # the runner leads a group of its own
    try:
        assert platform.runtime_processes(settings) == sorted([scheduler.pid, task])

        platform.down(settings)

        scheduler.wait(timeout=10)
        assert not alive(task)
        assert platform.runtime_processes(settings) == []
        assert "stopped 1 process(es) Airflow's tasks had left" in capsys.readouterr().out
    finally:
        for pid in (task, scheduler.pid):
            if alive(pid):
                os.kill(pid, 9)
