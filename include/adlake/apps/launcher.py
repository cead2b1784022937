"""Run one streaming app as the holder of its lock (``adlake.apps`` starts apps through this).

    <ops python> -m adlake.apps.launcher --lock L --exit-file E --mode realtime \\
        -- spark_apps.ops.click_surge --trigger realtime --threshold 50

1. Take an exclusive, non-blocking ``flock`` on the lock file ``L``. If another process holds it,
   say who and exit with :data:`LOCK_HELD` (75), before anything else happens. A reader that
   probes the lock (``adlake.apps.holder``) holds it for microseconds, so a held lock is retried
   for :data:`ACQUIRE_TIMEOUT_S` before giving up.
2. Write the holder (pid, mode, start time, argv, and what identifies the process beyond its
   pid: its start as the kernel has it, the kernel's boot id, its PID namespace) into ``L``, in
   place: the lock belongs to the file's inode, so the file is never replaced.
3. Run the app module as ``__main__`` in this very process (``runpy``, as ``python -m`` does). The
   lock is therefore held exactly as long as the app's driver process lives, and the kernel
   releases it when that process dies, however it dies (exit, crash, SIGKILL, OOM killer): the
   lock, not a pid file, says whether the app runs.
4. Record how the app ended in ``E`` (exit code, error), atomically, unless the process is killed
   (then there is no record newer than the start, which is how a kill is recognised).
5. Blank its record in ``L`` as the process ends (the last exit handler), if the record is still
   its own: no record outlives the process it names, whose pid may later be another process's.
   A killed process leaves its record; readers check the pid's start against it.

An app started by hand (``python -m spark_apps.ops.click_surge``) takes the same lock through
:func:`holding`, which its runner calls: under this launcher the lock is held already and left
to it; without, the runner holds it for the app's life the same way, and a second copy is refused
at once, naming the one running. The runner also holds its checkpoint's lock
(:func:`checkpoint_lock`), whatever the query's name: two drivers on one checkpoint would
interleave their commits, so a copy under another ``--query-name`` on the same ``--checkpoint``
is refused too.

Standard library only (and Adlake's standard-library modules); it runs in the ops interpreter
before PySpark is imported. The lock's file descriptor is not inheritable, so the JVM and the
Python workers Spark starts do not hold it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import fcntl
import json
import os
import runpy
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

from adlake import atomic
from adlake.processes import holds_flock, identity, is_process, seen_here

# Exit status when another process holds the lock (EX_TEMPFAIL).
LOCK_HELD = 75
ACQUIRE_TIMEOUT_S = 2.0

# The open lock file, kept for the life of the process (closing it would release the lock).
_LOCK_FD: int | None = None
# Every lock this process holds, by the lock file's (device, inode): an app's runner asked for the
# lock its launcher holds already leaves it to the launcher.
_HELD: dict[tuple[int, int], int] = {}


class LockHeld(RuntimeError):
    """Another process holds the lock; ``record`` is what it wrote in it (None if nothing)."""

    def __init__(self, lock: Path, record: dict | None) -> None:
        self.lock, self.record = lock, record
        super().__init__(f"{lock} is held by {describe(record)}")


def describe(record: dict | None) -> str:
    """The process a lock record names: pid (and whether it is seen here), start, mode, argv."""
    if not record or not record.get("pid"):
        return "a process that has not recorded itself"
    where = "" if seen_here(record) else " (on another host or in another PID namespace)"
    started = record.get("started_at")
    when = (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
        if isinstance(started, (int, float))
        else "?"
    )
    argv = " ".join(str(arg) for arg in record.get("argv") or [])
    return f"pid {record['pid']}{where}, started {when}, mode {record.get('mode')}, argv {argv}"


def acquire(lock: Path, timeout_s: float = ACQUIRE_TIMEOUT_S) -> int | None:
    """An open descriptor of ``lock`` holding an exclusive flock, or None when another process
    still holds it after ``timeout_s``, or at once when the live process its record names holds
    it (a probe, which the wait is for, holds it while the record names a process now gone)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
        record = atomic.read_json(lock) or {}
        pid = record.get("pid")
        running = (
            isinstance(pid, int)
            and seen_here(record)
            and holds_flock(pid, lock)
            and is_process(pid, record)
        )
        if running or time.monotonic() >= deadline:
            os.close(fd)
            return None
        time.sleep(0.05)


def checkpoint_lock(checkpoint: Path) -> Path:
    """The lock of a streaming query's checkpoint directory: a file beside it (never inside: the
    directory is Spark's, and a mode switch moves it aside whole).

    >>> str(checkpoint_lock(Path("/rt/checkpoints/click_surge")))
    '/rt/checkpoints/click_surge.lock'
    """
    return checkpoint.with_name(checkpoint.name + ".lock")


def write_holder(fd: int, holder: dict) -> None:
    data = json.dumps(holder).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


def hold(lock: Path, mode: str, argv: list[str]) -> tuple[int, dict]:
    """Take ``lock`` (:func:`acquire`) and write this process's record in it; the descriptor
    (closing it releases the lock) and the record. :class:`LockHeld` if another process holds
    it."""
    fd = acquire(lock)
    if fd is None:
        raise LockHeld(lock, atomic.read_json(lock))
    record = {
        "pid": os.getpid(),
        "mode": mode,
        "started_at": time.time(),
        "argv": argv,
        **identity(),
    }
    write_holder(fd, record)
    stat = os.fstat(fd)
    _HELD[(stat.st_dev, stat.st_ino)] = fd
    return fd, record


def clear_holder(fd: int, record: dict) -> bool:
    """Blank the record in the lock file ``fd`` if it is still ``record`` (this process's own);
    True if it did. Never raises: it runs as the process ends."""
    try:
        if json.loads(os.pread(fd, 1 << 20, 0) or b"null") != record:
            return False
        os.ftruncate(fd, 0)
        os.fsync(fd)
    except (OSError, ValueError):
        return False
    return True


def held_here(lock: Path) -> bool:
    """Whether this process holds ``lock`` already (:func:`hold`)."""
    try:
        stat = lock.stat()
    except OSError:
        return False
    return (stat.st_dev, stat.st_ino) in _HELD


@contextlib.contextmanager
def holding(lock: Path, mode: str, argv: list[str]) -> Iterator[None]:
    """Hold ``lock`` for the block, recorded as :func:`main` records it, then clear the record
    and release the lock; if this process holds it already (an app's main, run by :func:`main`),
    leave it as it is. :class:`LockHeld` if another process holds it."""
    if held_here(lock):
        yield
        return
    fd, record = hold(lock, mode, argv)
    try:
        yield
    finally:
        stat = os.fstat(fd)
        _HELD.pop((stat.st_dev, stat.st_ino), None)
        clear_holder(fd, record)
        os.close(fd)


def write_exit(path: Path, record: dict) -> None:
    atomic.write_json(path, record)


def _exit_code(code: object) -> tuple[int, str | None]:
    """``sys.exit(code)`` as the status the process ends with, and the message if any."""
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, str(code)


def main(argv: list[str] | None = None) -> int:
    global _LOCK_FD
    from adlake.helpformat import HelpFormatter

    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(
        prog="python -m adlake.apps.launcher",
        formatter_class=HelpFormatter,
        usage="%(prog)s --lock L --exit-file E --mode M -- MODULE [ARGS...]",
        description="Run MODULE as __main__ holding an exclusive flock on L for the whole life "
        "of this process (adlake.apps starts every streaming app this way).",
    )
    parser.add_argument("--lock", type=Path, required=True, help="the app's lock file")
    parser.add_argument(
        "--exit-file",
        type=Path,
        required=True,
        help="where to record how the app ended (exit code, error)",
    )
    parser.add_argument("--mode", required=True, help="the app's trigger, kept in the lock file")
    args = parser.parse_args(argv[:split])
    if len(argv) < split + 2:
        parser.error("missing -- MODULE [ARGS...]")
    module, app_args = argv[split + 1], argv[split + 2 :]

    app_argv = [sys.executable, "-m", module, *app_args]
    try:
        fd, record = hold(args.lock, args.mode, app_argv)
    except LockHeld as held:
        print(
            f"[app_launcher] {args.lock} is held by another process "
            f"({json.dumps(held.record) if held.record else '?'}); not starting {module}",
            file=sys.stderr,
            flush=True,
        )
        return LOCK_HELD
    _LOCK_FD = fd
    # Registered first, so run last, after Spark's own exit handlers: the record goes only as
    # the process ends (the kernel then releases the lock), never while it still runs.
    atexit.register(clear_holder, fd, record)
    started_at = record["started_at"]
    print(
        f"[app_launcher] {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(started_at))} "
        f"pid {os.getpid()} holds {args.lock}: {' '.join(app_argv)}",
        flush=True,
    )

    code, error = 1, None
    sys.argv = [module, *app_args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code, error = _exit_code(stop.code)
        raise
    except BaseException:
        error = "".join(traceback.format_exc().splitlines(keepends=True)[-20:])
        raise
    finally:
        write_exit(
            args.exit_file,
            {
                "pid": os.getpid(),
                "started_at": started_at,
                "ended_at": time.time(),
                "code": code,
                "error": error,
            },
        )
    return code


if __name__ == "__main__":
    # ``python -m`` runs this file as a second module, __main__; main() runs in the importable
    # one, whose _HELD the app's runner sees when it asks for the lock held here.
    from adlake.apps import launcher

    sys.exit(launcher.main())
