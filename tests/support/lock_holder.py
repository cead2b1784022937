"""A process holding an app's lock (an exclusive ``flock``) with the record a test chooses: its
own (``SELF``: its pid, mode ``realtime``, its start, argv ``holder``, as a launcher records
itself), or any record (a stale one naming another process, one from another PID namespace, none
at all), so that tests see what the lifecycle does with each without starting an app."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

SELF = "self"

_HOLD = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
record = json.loads(sys.argv[2])
if record == "self":
    record = {"pid": os.getpid(), "mode": "realtime", "started_at": time.time(), "argv": ["holder"]}
os.ftruncate(fd, 0)
os.write(fd, json.dumps(record).encode() if record is not None else b"")
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@contextlib.contextmanager
def lock_held(lock: Path, record: dict | str | None = SELF) -> Iterator[subprocess.Popen]:
    """A process holding ``lock`` for the block, ``record`` written in it (None: empty)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(lock), json.dumps(record)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
