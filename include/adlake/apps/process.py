"""The apps' processes (:mod:`adlake.apps`' docstring: no task hosts an app): the launcher's
command line, the lock and who holds it, the per-app control lock, the leftovers of a dead app,
:func:`start`, :func:`stop` and :func:`restart`."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from adlake.apps.checkpoints import prepare_checkpoint
from adlake.apps.launcher import LOCK_HELD, checkpoint_lock
from adlake.apps.state import (
    AlreadyRunning,
    AppStartError,
    AppStopError,
    Busy,
    Holder,
    StopResult,
    app_argv,
    app_spec,
    check_knobs,
    check_rules,
    check_trigger,
    control_path,
    exit_path,
    iso_time,
    lock_path,
    log_path,
    read_json,
    rtm_interval_s,
)
from adlake.config import REPO_ROOT, Settings, settings_env
from adlake.processes import boot_time, holds_flock, is_process, seen_here
from adlake.status import read_status, stop_marker

LAUNCHER = "adlake.apps.launcher"

# How long start() waits for the new process to hold the lock (the launcher takes it before
# PySpark is imported: well under a second on an idle machine).
LOCK_TIMEOUT_S = 60.0
# Once it holds its lock, an app that fails this fast (arguments, imports) fails its start.
START_SETTLE_S = 5.0
# After the app's driver has exited, its JVM (which sees its stdin close) gets this long to exit
# by itself before its process group is killed.
LEFTOVER_GRACE_S = 15.0
# How long a held lock's record may take to name its process before holder() calls the holder
# unseen: the lifecycle's actions wait long enough for any launcher to write its record; a status
# reader (the page every 5 s, make status) waits a moment only, so an app that runs where it
# cannot be seen costs it no more than that.
HOLDER_TIMEOUT_S = 2.0
STATUS_HOLDER_TIMEOUT_S = 0.25


# -- the lock --------------------------------------------------------------------------------------


def holder(settings: Settings, app: str, timeout_s: float | None = None) -> Holder | None:
    """Who holds the app's lock right now, or None if nobody does.

    A non-blocking ``flock`` attempt: if it succeeds, nobody holds the lock (it is released at
    once; the launcher retries for a moment, so this probe cannot make a start fail). If it fails,
    the lock is held, and its record (written by the launcher) is believed only as far as it can
    be checked:

    * a record from another kernel or PID namespace (its ``boot_id`` and ``pid_ns``): the app
      runs where its pid means nothing here; returned at once, ``elsewhere`` saying so, no pid;
    * a record naming a process here that holds the lock, as the kernel says
      (:func:`adlake.processes.holds_flock`), and is the one that wrote the record (started
      when the record says: :func:`adlake.processes.is_process`): that process. Anyone who can
      write the lock file can write any pid into it; only the kernel's word makes it a pid to
      signal;
    * no record, or one naming a process that is gone or whose pid another process has since
      taken: the lock is being taken (a launcher writes its record right after taking it) or is
      held for an instant by another probe like this one. The attempt is repeated until the lock
      is free (None) or its record names its process, at most ``timeout_s``
      (:data:`HOLDER_TIMEOUT_S`); after that the holder is one not seen here (``elsewhere``, no
      pid, nothing of the stale record).

    A holder without a pid is never signalled: a stale record's pid may be anyone's now."""
    return lock_holder(lock_path(settings, app), timeout_s)


def lock_holder(path: Path, timeout_s: float | None = None) -> Holder | None:
    """Who holds the lock file ``path`` (an app's, the reconcile loop's), as :func:`holder`
    says."""
    deadline = time.monotonic() + (HOLDER_TIMEOUT_S if timeout_s is None else timeout_s)
    while True:
        # Read-only: a reader (the api-server's page) may have the locks mounted read-only, and
        # flock(2) needs no write access. No file: nobody holds it (a launcher creates it first).
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
                return None
        finally:
            os.close(fd)
        record = read_json(path) or {}
        pid = record.get("pid")
        mode, started_at, argv = _recorded(record)
        if pid and not seen_here(record):
            return Holder(
                None,
                mode,
                started_at,
                argv,
                f"pid {pid} on another host or in another PID namespace",
            )
        if isinstance(pid, int) and pid > 0 and holds_flock(pid, path) and is_process(pid, record):
            return Holder(pid, mode, started_at, argv)
        if time.monotonic() >= deadline:
            stale = (
                f"; its record names pid {pid}, which is gone or another process than the lock's holder"
                if pid
                else ""
            )
            return Holder(
                None, None, None, [], f"the lock is held by a process not seen here{stale}"
            )
        time.sleep(0.02)


def _recorded(record: dict) -> tuple[str | None, float | None, list[str]]:
    """Mode, start (wall clock) and command line as a lock record has them, each if well formed."""
    mode, started, argv = record.get("mode"), record.get("started_at"), record.get("argv")
    return (
        mode if isinstance(mode, str) else None,
        float(started) if isinstance(started, (int, float)) and started > 0 else None,
        [str(arg) for arg in argv] if isinstance(argv, list) else [],
    )


@contextlib.contextmanager
def control(settings: Settings, app: str, timeout_s: float | None = None) -> Iterator[None]:
    """One lifecycle action at a time per app (act, supervise, start, stop, restart), across
    processes: the supervisor must not restart an app a user is stopping. Not reentrant: inside
    it, start and stop are :func:`launch` and :func:`terminate`."""
    path = control_path(settings, app)
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout_s = (
        settings.app_drain_timeout_s + 2 * LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    )
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() >= deadline:
                raise Busy(
                    f"another action on {app} has been in progress for {timeout_s:.0f}s "
                    f"(it holds {path}); try again later"
                )
            time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the flock


# -- leftover processes ----------------------------------------------------------------------------


def _session_members(sid: int, since: float, lock: Path) -> list[int]:
    """Live processes of session ``sid`` started at or after ``since`` (epoch s), when the
    session's leader is gone, that an app holding ``lock`` started: their environment names it
    (:data:`APP_LOCK_VAR`, which :func:`launch` gives the app and Spark's JVM and workers
    inherit). The session and start come from a record anyone who can write it could forge;
    the environment is what keeps a forged one from naming another program's processes. A
    leader alive again under that id means the id was reused by a new session: nothing of the
    old one can remain (Linux reuses no id still naming a session), so nothing is returned.
    Linux only (``/proc``); elsewhere nothing is found."""
    proc = Path("/proc")
    if sid <= 0 or not proc.is_dir():
        return []
    ticks, boot = os.sysconf("SC_CLK_TCK"), boot_time()
    members, leader_alive = [], False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, session, start_ticks = fields[0], int(fields[3]), int(fields[19])
        if session != sid or state in ("Z", "X"):
            continue
        pid = int(entry.name)
        if pid == sid:
            leader_alive = True
        elif boot + start_ticks / ticks >= since - 5 and _started_for(pid, lock):
            members.append(pid)
    return [] if leader_alive else members


def _started_for(pid: int, lock: Path) -> bool:
    """Whether process ``pid`` was started for the app holding ``lock`` (its environment)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{APP_LOCK_VAR}={lock}".encode() in environ.split(b"\0")


def _reap_leftovers(sid: int, since: float, lock: Path, grace_s: float | None = None) -> list[int]:
    """Wait up to ``grace_s`` (:data:`LEFTOVER_GRACE_S`) for what remains of a dead app's session
    (its JVM, Python workers) to exit, then SIGKILL it: a new app must not share the checkpoint
    with an old JVM. Returns the pids killed."""
    deadline = time.monotonic() + (LEFTOVER_GRACE_S if grace_s is None else grace_s)
    while (members := _session_members(sid, since, lock)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _session_members(sid, since, lock) and time.monotonic() < deadline:
        time.sleep(0.1)
    return members


# -- start -----------------------------------------------------------------------------------------


# Settings an app never uses and must not see: a secret-bearing URL (the webhook's address may
# carry its token) has no business in the environment of a process that runs user-supplied
# knobs and logs its environment's neighbours in tracebacks. The app reads their defaults.
_WITHHELD_SETTINGS = ("alerts_webhook_url",)
# Names the app's lock in the environment of everything an app's launcher starts (the driver,
# Spark's JVM and Python workers): how a dead app's leftovers are told from other processes.
APP_LOCK_VAR = "ADLAKE_APP_LOCK"

# Variables of the caller (Airflow's environment: the lake's Spark and Python) that must not
# reach an ops app.
_NOT_INHERITED = ("ADLAKE_", "AIRFLOW", "_AIRFLOW", "PYSPARK_", "SPARK_")
_NOT_INHERITED_NAMES = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}


def app_env(settings: Settings) -> dict[str, str]:
    """The environment an app runs in: this process's, without the caller's runtime
    (:data:`_NOT_INHERITED`), with ``settings`` (:func:`settings_env`) but those an app must not
    see (:data:`_WITHHELD_SETTINGS`)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_NOT_INHERITED) and k not in _NOT_INHERITED_NAMES
    }
    env.update(settings_env(settings))
    for name in _WITHHELD_SETTINGS:
        del env["ADLAKE_" + name.upper()]
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(
    settings: Settings,
    app: str,
    trigger: str | None = None,
    knobs: Mapping[str, object] | None = None,
    reason: str = "user",
) -> Holder:
    """Launch the app detached, holding its lock; return once the new process holds it.

    ``trigger`` defaults to the app's default trigger, ``knobs`` to the defaults (missing ones
    too). Does not change the desired state (:func:`act` does): the supervisor stops an app that
    should be stopped. Raises :class:`AlreadyRunning` if the lock is held, :class:`AppStartError`
    (with the log) if the process exits first."""
    with control(settings, app):
        return launch(settings, app, trigger, knobs, reason)


def launch(
    settings: Settings,
    app: str,
    trigger: str | None,
    knobs: Mapping[str, object] | None,
    reason: str,
) -> Holder:
    """:func:`start`, by a caller that holds the app's :func:`control` (``act``, the
    supervisor: a stop then a start, as one action)."""
    spec = app_spec(app)
    trigger = check_trigger(trigger or spec.default_trigger)
    knobs = check_knobs(app, knobs)
    check_rules(app, trigger, knobs)
    current = holder(settings, app)
    if current is not None:
        raise AlreadyRunning(app, current)
    python = settings.ops_python
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise AppStartError(
            f"the ops interpreter {python} does not exist: run `make setup`, or "
            "set ADLAKE_OPS_PYTHON"
        )
    # What remains of the previous run (its JVM, if its driver was killed) goes first: the run
    # the lock's record names (a killed run leaves it), else the one that recorded its exit (a
    # run that ended clears its lock record).
    previous = read_json(lock_path(settings, app)) or read_json(exit_path(settings, app)) or {}
    pid, started = previous.get("pid"), _recorded(previous)[1]
    if isinstance(pid, int) and pid > 0 and started is not None and seen_here(previous):
        _reap_leftovers(pid, started, lock_path(settings, app))
    # A copy of the app run by hand under another query name on this checkpoint (its runner
    # holds the checkpoint's lock): the checkpoint is not moved or shared under it.
    checkpoint = settings.checkpoint_path(app)
    if (user := lock_holder(checkpoint_lock(checkpoint))) is not None:
        who = f"pid {user.pid}" if user.pid else user.elsewhere
        raise AppStartError(
            f"{app}'s checkpoint {checkpoint} is in use by another driver ({who}, "
            f"{' '.join(user.argv) or 'no command line recorded'}): stop it first"
        )
    # A marker left by a stop that ended in a kill would stop the new run at once.
    stop_marker(settings, app).unlink(missing_ok=True)
    extra = prepare_checkpoint(settings, app, trigger, knobs)

    argv = [
        str(python),
        "-m",
        LAUNCHER,
        "--lock",
        str(lock_path(settings, app)),
        "--exit-file",
        str(exit_path(settings, app)),
        "--mode",
        trigger,
        "--",
        spec.module,
        *app_argv(app, trigger, knobs, rtm_interval_s(settings, app)),
        *extra,
    ]
    log = log_path(settings, app)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(
            f"\n=== {iso_time(time.time())} start {app} ({reason}): {' '.join(argv)}\n".encode()
        )
        out.flush()
        offset = out.tell()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
            env={**app_env(settings), APP_LOCK_VAR: str(lock_path(settings, app))},
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        current = holder(settings, app)
        if current is not None and current.pid == proc.pid:
            _settle(settings, app, proc, current, log, offset)
            return current
        code = proc.poll()
        if code is not None:
            if code == LOCK_HELD:
                raise AlreadyRunning(app, holder(settings, app))
            raise AppStartError(
                f"{app} exited with code {code} during its start\n{_log_since(log, offset)}"
            )
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise AppStartError(
                f"{app} did not take its lock within {LOCK_TIMEOUT_S:.0f}s "
                f"(killed)\n{_log_since(log, offset)}"
            )
        time.sleep(0.05)


def _settle(
    settings: Settings, app: str, proc: subprocess.Popen, current: Holder, log: Path, offset: int
) -> None:
    """Give the app :data:`START_SETTLE_S` to fail early (bad arguments, a missing jar), so that
    such a start raises instead of looking successful; an app that reports first is settled."""
    deadline = time.monotonic() + START_SETTLE_S
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise AppStartError(
                f"{app} exited with code {code} right after its start\n{_log_since(log, offset)}"
            )
        status = read_status(settings, app)
        if status and float(status.get("written_at", 0)) >= current.started_at:
            return
        time.sleep(0.1)


def _log_since(path: Path, offset: int, lines: int = 40) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            text = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"last {min(lines, len(text))} lines of {path}:\n" + "\n".join(text[-lines:])


def log_tail(settings: Settings, app: str, lines: int = 40) -> str:
    path = log_path(settings, app)
    try:
        size = path.stat().st_size
    except OSError:
        return f"(no log at {path})"
    return _log_since(path, max(0, size - 200 * lines), lines)


# -- stop ------------------------------------------------------------------------------------------


def stop(
    settings: Settings, app: str, drain_timeout_s: float | None = None, reason: str = "user"
) -> StopResult:
    """Stop marker, SIGTERM, wait up to the drain timeout (``settings.app_drain_timeout_s``) for
    the app to commit its batch and exit, then SIGKILL its process group; return once its lock
    is free (:class:`AppStopError` if it is not). Does not change the desired state."""
    with control(settings, app):
        return terminate(settings, app, drain_timeout_s, reason)


def terminate(
    settings: Settings, app: str, drain_timeout_s: float | None, reason: str
) -> StopResult:
    """:func:`stop`, by a caller that holds the app's :func:`control`."""
    app_spec(app)
    drain = settings.app_drain_timeout_s if drain_timeout_s is None else drain_timeout_s
    current = holder(settings, app)
    marker = stop_marker(settings, app)
    if current is None:
        marker.unlink(missing_ok=True)
        return StopResult(app, "not_running", reason=reason)
    started = time.monotonic()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    if current.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(current.pid, signal.SIGTERM)
    how = "exited"
    if not _wait_free(settings, app, drain):
        if not current.pid:  # not seen here: the stop marker is the one way to ask it
            raise AppStopError(
                f"{app}: the lock {lock_path(settings, app)} is still held after "
                f"{drain:.0f}s by a process that cannot be signalled from here "
                f"({current.elsewhere}); the stop marker {marker} is left for it: stop it "
                "where it runs"
            )
        how = "killed"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(current.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(current.pid, signal.SIGKILL)
        if not _wait_free(settings, app, 30):
            raise AppStopError(
                f"{app}: the lock {lock_path(settings, app)} is still held "
                f"after SIGKILL of pid {current.pid}: {holder(settings, app)}"
            )
    waited = time.monotonic() - started
    marker.unlink(missing_ok=True)
    if current.pid and current.started_at is not None:
        _reap_leftovers(current.pid, current.started_at, lock_path(settings, app))
    code = None
    record = read_json(exit_path(settings, app))
    if (
        how == "exited"
        and record
        and record.get("pid") == current.pid
        and float(record.get("started_at", -1)) == current.started_at
    ):
        code = record.get("code")
    return StopResult(app, how, current.pid, current.mode, code, round(waited, 1), reason)


def _wait_free(settings: Settings, app: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while holder(settings, app) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def restart(
    settings: Settings,
    app: str,
    trigger: str | None = None,
    knobs: Mapping[str, object] | None = None,
    reason: str = "user",
) -> Holder:
    """Stop the app if it runs (:func:`stop`), then start it (:func:`start`)."""
    with control(settings, app):
        terminate(settings, app, None, reason)
        return launch(settings, app, trigger, knobs, reason)
