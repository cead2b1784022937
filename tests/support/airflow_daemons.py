"""Real Airflow processes for end-to-end tests: an ``airflow api-server`` serving the execution
API (task runners report to it) and an ``airflow scheduler`` with the LocalExecutor, on this test
session's metadata DB (``tests/dags/conftest.py``), each in a process group of its own."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from adlake.local import platform
from adlake.processes import group_alive

AIRFLOW = os.path.join(os.path.dirname(sys.executable), "airflow")


class Daemons:
    """Airflow processes started by a test, each leading its own process group (its executor's
    workers and their spark-submits go with it); :meth:`stop` ends every group."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        with open(self.log(name), "ab") as out:
            self.procs[name] = subprocess.Popen(
                [AIRFLOW, *args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self.procs[name]

    def log(self, name: str) -> Path:
        return self.logs / f"airflow-{name}.log"

    def tail(self, name: str, chars: int = 3000) -> str:
        return self.log(name).read_text(errors="replace")[-chars:]

    def kill(self, name: str, sig: int = signal.SIGKILL, wait_s: float = 30) -> None:
        """Send ``sig`` to the process group of ``name`` and wait until the group is gone
        (SIGKILL after ``wait_s``)."""
        proc = self.procs.pop(name)
        for each, timeout in ((sig, wait_s), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, each)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and group_alive(proc.pid):
                proc.poll()  # reap the leader: a zombie is no longer alive
                time.sleep(0.2)
            if not group_alive(proc.pid):
                break
        proc.wait(timeout=10)

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            self.kill(name, signal.SIGTERM)


def scheduler_env(port: int, **extra: str) -> dict[str, str]:
    """The environment of an api-server on ``port`` and a scheduler reporting to it: this
    process's (the session's Airflow home and DB), the LocalExecutor, a JWT secret of their own."""
    return {
        **os.environ,
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        # As the platform's: a task orphaned by a killed scheduler is failed within 90 s.
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(
            platform.TASK_HEARTBEAT_TIMEOUT_S
        ),
        **extra,
    }


def start_execution_api(daemons: Daemons, port: int, env: dict[str, str]) -> None:
    daemons.start(
        "api-server",
        [
            "api-server",
            "--apps",
            "execution",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env,
    )


def execution_api_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/execution/health", timeout=5
        ) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(condition, timeout_s: float, what: str, details=lambda: ""):
    """Poll ``condition`` until it returns something truthy; fail with ``details()``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"{what}: not within {timeout_s:.0f}s\n{details()}")
