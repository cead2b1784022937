"""Run one streaming app as the holder of its lock (``adlake.apps`` starts apps through this).

    <ops python> -m adlake.apps.launcher --lock L --exit-file E --mode realtime \\
        -- spark_apps.ops.click_surge --trigger realtime --threshold 50

1. Take an exclusive, non-blocking ``flock`` on the lock file ``L``. If another process holds it,
   say who and exit with :data:`LOCK_HELD` (75), before anything else happens. A reader that
   probes the lock (``adlake.apps.holder``) holds it for microseconds, so a held lock is retried
   for :data:`ACQUIRE_TIMEOUT_S` before giving up.
2. Write the holder (pid, mode, start time, argv) into ``L``, in place: the lock belongs to the
   file's inode, so the file is never replaced.
3. Run the app module as ``__main__`` in this very process (``runpy``, as ``python -m`` does). The
   lock is therefore held exactly as long as the app's driver process lives, and the kernel
   releases it when that process dies, however it dies (exit, crash, SIGKILL, OOM killer): the
   lock, not a pid file, says whether the app runs.
4. Record how the app ended in ``E`` (exit code, error), atomically, unless the process is killed
   (then there is no record newer than the start, which is how a kill is recognised).

Standard library only; it runs in the ops interpreter before PySpark is imported. The lock's file
descriptor is not inheritable, so the JVM and the Python workers Spark starts do not hold it.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import runpy
import sys
import tempfile
import time
import traceback
from pathlib import Path

# Exit status when another process holds the lock (EX_TEMPFAIL).
LOCK_HELD = 75
ACQUIRE_TIMEOUT_S = 2.0

# The open lock file, kept for the life of the process (closing it would release the lock).
_LOCK_FD: int | None = None


def acquire(lock: Path, timeout_s: float = ACQUIRE_TIMEOUT_S) -> int | None:
    """An open descriptor of ``lock`` holding an exclusive flock, or None when another process
    still holds it after ``timeout_s``."""
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
        if time.monotonic() >= deadline:
            os.close(fd)
            return None
        time.sleep(0.05)


def write_holder(fd: int, holder: dict) -> None:
    data = json.dumps(holder).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


def write_exit(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle)
    os.replace(tmp, path)


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

    fd = acquire(args.lock)
    if fd is None:
        try:
            held_by = args.lock.read_text()
        except OSError:
            held_by = "?"
        print(
            f"[app_launcher] {args.lock} is held by another process ({held_by}); not starting "
            f"{module}",
            file=sys.stderr,
            flush=True,
        )
        return LOCK_HELD
    _LOCK_FD = fd
    started_at = time.time()
    app_argv = [sys.executable, "-m", module, *app_args]
    write_holder(
        fd, {"pid": os.getpid(), "mode": args.mode, "started_at": started_at, "argv": app_argv}
    )
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
    sys.exit(main())
