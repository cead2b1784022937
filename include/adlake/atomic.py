"""Small JSON files replaced whole, and read: the apps' records (desired state, restarts, exit,
checkpoint), their status files. Standard library only (the app launcher imports it before
PySpark).

A reader, or the machine after a crash, sees the old file or the new one, never a part or an empty
file: the new content goes to a temporary file in the same directory, is flushed to disk, renamed
over the old one, and the directory is flushed so that the rename itself survives a crash. A
write that fails (a full disk: ``ENOSPC`` from the write, the flush or the rename) leaves the old
file as it was and no temporary file behind, and raises.

>>> import tempfile
>>> from pathlib import Path
>>> path = Path(tempfile.mkdtemp()) / "record.json"
>>> write_json(path, {"state": "running"})
>>> path.read_text()
'{"state": "running"}'
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def write_json(path: Path, obj: object, **dump_kwargs: object) -> None:
    """Replace ``path`` with ``obj`` as JSON (``json.dump`` with ``dump_kwargs``), atomically and
    durably (the module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(obj, handle, **dump_kwargs)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def read_json(path: Path) -> dict | None:
    """The JSON object in ``path``; None when there is none (no file, unreadable, not JSON, not
    an object)."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def fsync_dir(directory: Path) -> None:
    """Flush ``directory`` itself to disk: the names created, renamed or removed in it."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, with its directory) for the block:
    processes that read-modify-write one file take turns. The kernel releases it if the holder
    dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
