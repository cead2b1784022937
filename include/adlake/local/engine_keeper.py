"""The lake engine's keeper: the small process that runs the engine's JVM as its child and starts
it again when it dies unasked (``kill -9``, an out-of-memory kill, a crash), with an alert.

``python -m adlake.local.engine up`` starts a keeper (``python -m adlake.local.engine_keeper``, in a
session of its own) and waits until the engine answers a query; ``down`` sends the keeper
SIGTERM, and the keeper stops the JVM (SIGTERM, then SIGKILL of its process group: its Python
workers too) and exits. One keeper per runtime directory: it holds ``<runtime>/engine/keeper.lock``
for its whole life, and its pid is in the engine's record.

**What a restart costs the jobs.** Nothing is lost: a job's writes are Delta transactions, so an
engine that dies mid-write leaves the table at its last commit, and the task fails and is retried
by Airflow against the new engine (the writes are idempotent: ``replaceWhere``, MERGE by key,
streams from their checkpoints). Sessions do not survive: a client of the dead engine fails.

**Restart and back-off.** A JVM that dies after it once answered is started again at once and an
``engine_restarted`` alert is sent (grouped like every alert: one per window). One that dies
again within :data:`HEALTHY_AFTER_S` of its start waits :data:`RESTART_DELAYS_S` (growing) before
the next try, so a JVM that cannot live (a full disk, a port taken) does not spin. The first start
is not retried: ``up`` says why it failed (the log's last lines).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress

from adlake import alerts
from adlake.config import Settings
from adlake.local.engine_client import engine_dir, ensure_token
from adlake.local.engine_report import REPORT_EVERY_S, write_report
from adlake.local.kafka import port_open

# Seconds a restarted JVM waits after dying young (within HEALTHY_AFTER_S of its start), by the
# number of such deaths in a row.
RESTART_DELAYS_S = (0, 5, 15, 30, 60)
HEALTHY_AFTER_S = 60.0
# How long the first start may take to open its port before the keeper gives up.
OPEN_TIMEOUT_S = 120.0
LOCK_HELD = 75


def say(text: str) -> None:
    print(
        f"[engine keeper] {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {text}", flush=True
    )


def restart_delay(young_deaths: int) -> float:
    """Seconds before the next start after ``young_deaths`` deaths in a row within
    :data:`HEALTHY_AFTER_S` of their start (0: the JVM had lived; start again at once).

    >>> [restart_delay(n) for n in (0, 1, 2, 9)]
    [0, 0, 5, 60]
    """
    return RESTART_DELAYS_S[min(max(young_deaths - 1, 0), len(RESTART_DELAYS_S) - 1)]


def ended(code: int | None) -> str:
    """How a JVM ended, from its exit status.

    >>> ended(-9), ended(1)
    ('was killed by signal 9', 'exited with code 1')
    """
    return (
        f"was killed by signal {-code}"
        if code is not None and code < 0
        else f"exited with code {code}"
    )


def engine_alert(settings: Settings, code: int | None, up_for_s: float, log_tail: str) -> dict:
    """The ``engine_restarted`` alert: how it ended, after how long, and its log's last line."""
    alert = alerts.base_alert("engine_restarted")
    last = next((line for line in reversed(log_tail.splitlines()) if line.strip()), "")
    alert.update(
        error=(
            f"the lake engine's JVM {ended(code)} after {up_for_s:.0f}s, unasked; "
            f"started again. Its log's last line: {last[-300:]}"
        ),
        engine_log=str(settings.logs_dir / "lake-engine.log"),
        group="lake_engine:engine_restarted",
    )
    return alert


def _wait_open(engine, process: subprocess.Popen, stop: threading.Event) -> bool:
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while time.monotonic() < deadline and not stop.is_set():
        if process.poll() is not None:
            return False
        if port_open("127.0.0.1", engine.settings.lake_engine_port):
            return True
        stop.wait(0.5)
    return False


def _end(process: subprocess.Popen, timeout_s: float) -> int | None:
    """Stop the JVM (SIGTERM: Spark's shutdown hooks end its sessions), then SIGKILL its process
    group: the Python workers it started go with it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout_s)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.wait()


def keep(settings: Settings) -> int:
    """Run the engine until SIGTERM or SIGINT; 0 then, 1 if its first start failed,
    :data:`LOCK_HELD` if another keeper runs here."""
    from adlake.local.engine import STOP_TIMEOUT_S, LakeEngine

    directory = engine_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "keeper.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("another keeper runs this runtime's engine; not starting")
        return LOCK_HELD
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: stop.set())
    engine, token = LakeEngine(settings), ensure_token(settings)
    first, young_deaths = True, 0
    restarts: dict = {"count": 0, "last_at": None, "last_reason": None}

    def report(**extra: object) -> None:
        with suppress(OSError):  # a full disk must not stop the keeper
            write_report(settings, {**engine.status(), **extra}, restarts)

    try:
        while not stop.is_set():
            process = engine.spawn(token)
            began = time.monotonic()
            if first and not _wait_open(engine, process, stop):
                say(
                    f"the engine did not start (exit code {_end(process, 5)}); see {engine.log_path}"
                )
                return 1
            first = False
            say(f"engine pid {process.pid} started on localhost:{settings.lake_engine_port}")
            reported = 0.0
            while process.poll() is None and not stop.is_set():
                if time.monotonic() - reported >= REPORT_EVERY_S:
                    report()
                    reported = time.monotonic()
                stop.wait(0.5)
            if stop.is_set():
                say(f"stopping the engine (exit code {_end(process, STOP_TIMEOUT_S)})")
                break
            code = _end(process, 0)  # its leftover workers too
            up_for = time.monotonic() - began
            young_deaths = young_deaths + 1 if up_for < HEALTHY_AFTER_S else 1
            say(
                f"the engine exited unasked with code {code} after {up_for:.0f}s: starting it again"
            )
            restarts.update(
                count=restarts["count"] + 1, last_at=time.time(), last_reason=ended(code)
            )
            report()
            alerts.send(settings, engine_alert(settings, code, up_for, engine._tail(5)))
            stop.wait(restart_delay(young_deaths))
    finally:
        engine.record_path.unlink(missing_ok=True)
        report(stopped_at=time.time())
        os.close(fd)
    return 0


def main() -> int:
    from adlake.config import load_settings

    return keep(load_settings())


if __name__ == "__main__":
    sys.exit(main())
