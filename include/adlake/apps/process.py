"""Streaming-app lifecycle, in one module: start, stop, restart, status and supervision of the
operational apps (registry ``APPS`` of runtime ``ops``).

Used by the apps' Airflow DAGs (:func:`act`), the supervisor DAG (:func:`supervise`),
``make up``/``make down`` and the UI. Standard library only: no PySpark, no Airflow.

**No task hosts an app.** An Airflow task's supervisor escalates SIGTERM to SIGKILL within
seconds and a retried task could start a second driver, so a task only *acts*:

* :func:`start` launches the app as a detached process in a session of its own, with the ops
  interpreter (``settings.ops_python``): ``python -m adlake.app_launcher ... -- <app module>
  --trigger T --<knob> V ...``. The launcher takes an exclusive ``flock`` on
  ``<runtime>/locks/<app>.lock`` and runs the app in the same process, so the app holds the lock
  for its whole life and the kernel releases it when the process dies, however it dies. One
  instance, whatever Airflow does: a second start, from anywhere, is refused
  (:class:`AlreadyRunning`). :func:`holder` says who holds the lock (a non-blocking ``flock``
  attempt, not a pid file).
* :func:`stop` writes the stop marker, sends SIGTERM (the app lets its running batch commit and
  exits 0), waits up to the drain timeout, then SIGKILLs the app's process group; it returns once
  the lock is free.
* The desired state (running or stopped, trigger, knobs) lives in a file; :func:`act` changes it
  and acts; :func:`supervise` (every minute) restarts what should run and does not or whose status
  is stale or failed, with exponential backoff, and stops what should not run.

**Files** under the runtime directory::

    locks/<app>.lock              held by the running app; says who (pid, mode, start, argv)
    locks/<app>.control.lock      serialises act/supervise on one app (held for seconds)
    apps/<app>.desired.json       desired state: running|stopped, trigger, knobs, when, why
    apps/<app>.restarts.json      the supervisor's restarts: count, reason, last error, backoff
    apps/<app>.exit.json          how the last run ended (absent or older than the run: killed)
    apps/<app>.checkpoint.json    what the checkpoint was made by (trigger, engine), moved-aside
                                  checkpoints and, after a switch, where the new one starts
    logs/<app>.log                the app's output, appended run after run
    status/<app>.json             the app's own status (``adlake.status``), with a heartbeat
                                  when idle

**Staleness.** A micro-batch app reports after every batch and, when idle, a heartbeat (Spark's
idle event, about every 10 s), so it is stale after ``app_stale_after_s`` (120 s) without a
report. A Real-Time Mode batch lasts a checkpoint interval (``app_rtm_interval_s``, 30 s, given to
the app as ``--trigger-interval``) and the app reports at its end only, so it is stale after
2 intervals + ``app_stale_margin_s`` (60 s). A started app has ``app_start_grace_s`` more to
report at all.

**Backoff.** The first restart after a failure is immediate; each further one waits twice as
long as the last, from ``app_backoff_min_s`` (30 s) up to ``app_backoff_max_s`` (10 minutes);
once the app has been healthy for ``app_backoff_reset_s`` (10 minutes) the next failure is
restarted at once again. A start by a user resets the backoff.

**Restarts and trigger switches keep the checkpoint where Spark allows it** (measured with
Spark 4.3.0, both apps, each direction; see ``tests/spark_apps/ops/test_app_lifecycle.py``):

* click_surge (update output mode in both modes, one aggregation): Real-Time Mode ⇄ micro-batch
  resume on the same checkpoint, state included: open windows keep their counts across the
  switch.
* attribution (``transformWithState``; update output mode in Real-Time Mode, append in
  micro-batch): Spark refuses to resume either way (``STATE_STORE_INVALID_CONFIG_AFTER_RESTART``:
  "Cannot change outputMode from Append to Update between restarts", and back). Its engine
  (``jvm``/``python``) is a different operator too.

Where the checkpoint cannot be kept, :func:`start` moves it aside (renamed
``<app>.<trigger>[.<engine>].<UTC time>`` next to it, never deleted) and starts a new one from
the old one's **committed offsets** (``offsets/N`` of the latest ``commits/N``: the end of the
last committed batch in both modes), passed as ``--starting-offsets`` JSON. So no input record is
skipped, and nothing is read twice beyond what any restart rereads (an interrupted, uncommitted
batch). What is *not* carried is the state: the new query starts with no open keys. For
attribution, that means for the keys open at the switch (requests within their window, items
waiting for a partner, tombstones of closed keys):

* a request seen before the switch is never closed: no ``request_closed`` for it;
* an impression or callback arriving after the switch whose request (or impression) came
  before it is emitted as ``orphan_*`` when its window closes, not as ``attributed_*``;
* an item waiting in state at the switch (arrived before its partner) is not emitted at all,
  neither attributed nor orphan;
* a duplicate (same impression_id/callback_id) of an event seen before the switch is emitted
  again: consumers deduplicate by ids.

Had click_surge needed it, its windows open at the switch would have restarted their counts at
zero. Records written and committed before the switch stay as they are.

>>> from adlake.config import load_settings                      # doctest: +SKIP
>>> s = load_settings()                                           # doctest: +SKIP
>>> act(s, "click_surge", "start", knobs={"threshold": 50})       # doctest: +SKIP
{'app': 'click_surge', 'action': 'start', 'result': {'pid': 4242, 'mode': 'realtime', ...}, ...}
>>> act(s, "click_surge", "start")                                # doctest: +SKIP
Traceback (most recent call last):
adlake.apps.AlreadyRunning: click_surge is already running: pid 4242, mode realtime, ...
>>> [r["action"] for r in supervise(s)]                           # doctest: +SKIP
[]
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from adlake import registry
from adlake.app_launcher import LOCK_HELD
from adlake.config import REPO_ROOT, Settings
from adlake.status import read_status, stop_marker

ACTIONS = registry.APP_ACTIONS  # ("start", "stop", "restart", "status")
TRIGGERS = registry.TRIGGERS  # ("realtime", "processing_time")
DESIRED_STATES = ("running", "stopped")
# Derived states (app_status()["state"]).
STATES = ("running", "starting", "stale", "failed", "stopping", "restarting", "stopped")
LAUNCHER = "adlake.app_launcher"

# Trigger switches Spark resumes on the same checkpoint, per app (measured: module docstring).
# Any other switch starts a new checkpoint from the old one's committed offsets.
SAME_CHECKPOINT_SWITCHES: dict[str, frozenset[tuple[str, str]]] = {
    "click_surge": frozenset({("realtime", "processing_time"), ("processing_time", "realtime")}),
    "attribution": frozenset(),
}
# Knobs that pick a different stateful operator, whose checkpoint the other cannot resume.
CHECKPOINT_KNOBS: dict[str, tuple[str, ...]] = {"attribution": ("engine",)}

# How long start() waits for the new process to hold the lock (the launcher takes it before
# PySpark is imported: well under a second on an idle machine).
LOCK_TIMEOUT_S = 60.0
# Once it holds its lock, an app that fails this fast (arguments, imports) fails its start.
START_SETTLE_S = 5.0
# After the app's driver has exited, its JVM (which sees its stdin close) gets this long to exit
# by itself before its process group is killed.
LEFTOVER_GRACE_S = 15.0
_HISTORY = 20  # restarts kept in the record


# -- errors --------------------------------------------------------------------------------------

class AppError(RuntimeError):
    """A lifecycle action could not be done; the message says why and what to do."""


class AlreadyRunning(AppError):
    """The app's lock is held: it runs already (``holder`` says who)."""

    def __init__(self, app: str, holder: Holder | None) -> None:
        self.app, self.holder = app, holder
        who = ("pid ?" if holder is None else
               f"pid {holder.pid}, mode {holder.mode}, started {_iso(holder.started_at)}, "
               f"argv {' '.join(holder.argv)}")
        super().__init__(f"{app} is already running: {who}; stop it first (action stop) or "
                         "use restart")


class AppStartError(AppError):
    """The app exited (or never took its lock) during its start; the message has its log."""


class AppStopError(AppError):
    """The app's lock is still held after SIGKILL."""


class InvalidRequest(AppError, ValueError):
    """An unknown app, action, trigger or knob, or a knob value of the wrong type or range."""


class Busy(AppError):
    """Another action on the same app is still in progress."""


# -- records ---------------------------------------------------------------------------------------

@dataclass
class Desired:
    """What the app should be doing. ``knobs`` holds every knob of the app (defaults filled in)."""

    state: str  # "running" | "stopped"
    trigger: str  # "realtime" | "processing_time"
    knobs: dict[str, object]
    updated_at: float
    reason: str


@dataclass
class Holder:
    """The process holding an app's lock: the app's driver (its pid is its process group)."""

    pid: int
    mode: str
    started_at: float
    argv: list[str]


@dataclass
class StopResult:
    """How a stop ended: ``not_running`` (nothing held the lock), ``exited`` (after SIGTERM, within
    the drain timeout; ``exit_code`` as recorded by the launcher, 0 after a graceful stop) or
    ``killed`` (SIGKILL after the drain timeout). The lock is free in every case."""

    app: str
    how: str
    pid: int | None = None
    mode: str | None = None
    exit_code: int | None = None
    waited_s: float = 0.0
    reason: str = ""

    @property
    def graceful(self) -> bool:
        return self.how == "exited" and self.exit_code == 0

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "graceful": self.graceful}


@dataclass
class Restarts:
    """The supervisor's restart record of one app (``apps/<app>.restarts.json``).

    ``consecutive`` counts restarts since the app was last healthy for ``app_backoff_reset_s``;
    it sets the backoff. ``healthy_since`` is when the supervisor first saw the app running
    without a failure in between."""

    count: int = 0
    consecutive: int = 0
    reason: str | None = None
    last_error: str | None = None
    last_restart_at: float | None = None
    next_allowed_at: float | None = None
    healthy_since: float | None = None
    history: list[dict] = field(default_factory=list)


# -- paths and small files -----------------------------------------------------------------------

def lock_path(settings: Settings, app: str) -> Path:
    return settings.locks_dir / f"{app}.lock"


def log_path(settings: Settings, app: str) -> Path:
    return settings.logs_dir / f"{app}.log"


def _control_path(settings: Settings, app: str) -> Path:
    return settings.locks_dir / f"{app}.control.lock"


def _desired_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.desired.json"


def _restarts_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.restarts.json"


def exit_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.exit.json"


def _checkpoint_record_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.checkpoint.json"


def _write_json(path: Path, obj: object) -> None:
    """Replace ``path`` atomically: a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(obj, handle, indent=2, default=str)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


# -- the registry's side: apps, triggers, knobs ----------------------------------------------------

def _app(name: str) -> registry.App:
    app = registry.APPS.get(name)
    if app is None or app.runtime != "ops":
        allowed = ", ".join(sorted(a.name for a in registry.APPS.values() if a.runtime == "ops"))
        raise InvalidRequest(f"unknown streaming app {name!r}: allowed apps are {allowed}")
    return app


def _check_trigger(trigger: str) -> str:
    if trigger not in TRIGGERS:
        raise InvalidRequest(f"trigger {trigger!r} is not valid: allowed values are "
                             f"{', '.join(TRIGGERS)}")
    return trigger


def default_knobs(app: str) -> dict[str, object]:
    return {k.name: k.default for k in _app(app).knobs}


def check_knobs(app: str, knobs: Mapping[str, object] | None) -> dict[str, object]:
    """Every knob of ``app``: ``knobs`` over the defaults, each checked and of its registry type
    (a value may come as a string, as from a form); None means the default.

    >>> check_knobs("click_surge", {"threshold": "50"})
    {'threshold': 50}
    >>> check_knobs("click_surge", {"treshold": 50})
    Traceback (most recent call last):
    ...
    adlake.apps.InvalidRequest: unknown knob 'treshold' for click_surge: allowed knobs are threshold
    """
    spec = _app(app)
    by_name = {k.name: k for k in spec.knobs}
    unknown = sorted(set(knobs or {}) - set(by_name))
    if unknown:
        raise InvalidRequest(f"unknown knob {unknown[0]!r} for {app}: allowed knobs are "
                             f"{', '.join(by_name) or '(none)'}")
    out = {}
    for knob in spec.knobs:
        value = (knobs or {}).get(knob.name)
        out[knob.name] = knob.default if value is None else _knob_value(app, knob, value)
    return out


def _knob_value(app: str, knob: registry.Knob, value: object) -> object:
    where = f"knob {knob.name} of {app}"
    try:
        if knob.type == "integer":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            value = int(value)  # type: ignore[arg-type]
        elif knob.type == "number":
            if isinstance(value, bool):
                raise ValueError
            value = float(value)  # type: ignore[arg-type]
        elif not isinstance(value, str):
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidRequest(f"{where}: {value!r} is not a valid {knob.type}") from None
    if knob.choices and value not in knob.choices:
        raise InvalidRequest(f"{where}: {value!r} is not valid: allowed values are "
                             f"{', '.join(knob.choices)}")
    if knob.minimum is not None and value < knob.minimum:  # type: ignore[operator]
        raise InvalidRequest(f"{where}: {value!r} is below its minimum {knob.minimum:g}")
    return value


def app_argv(app: str, trigger: str, knobs: Mapping[str, object],
             rtm_interval_s: int | None = None) -> list[str]:
    """The app's own arguments (after ``-m <module>``): the trigger (with Real-Time Mode's
    checkpoint interval, if given) and every knob as a flag; never ``--checkpoint`` (the default
    keeps restarts on the same checkpoint).

    >>> app_argv("click_surge", "realtime", {"threshold": 50}, rtm_interval_s=30)
    ['--trigger', 'realtime', '--trigger-interval', '30 seconds', '--threshold', '50']
    >>> app_argv("click_surge", "processing_time", {"threshold": 50}, rtm_interval_s=30)
    ['--trigger', 'processing_time', '--threshold', '50']
    """
    spec = _app(app)
    argv = ["--trigger", _check_trigger(trigger)]
    if trigger == "realtime" and rtm_interval_s is not None:
        argv += ["--trigger-interval", f"{rtm_interval_s} seconds"]
    for knob in spec.knobs:
        argv += [knob.flag, str(knobs[knob.name])]
    return argv


# -- desired state -------------------------------------------------------------------------------

def read_desired(settings: Settings, app: str) -> Desired:
    """The app's desired state; without a record: stopped, its default trigger and knobs."""
    spec = _app(app)
    record = _read_json(_desired_path(settings, app))
    if record is None:
        return Desired("stopped", spec.default_trigger, default_knobs(app), 0.0, "default")
    return Desired(state=record.get("state", "stopped"),
                   trigger=record.get("trigger", spec.default_trigger),
                   knobs=_stored_knobs(app, record.get("knobs") or {}),
                   updated_at=float(record.get("updated_at", 0.0)),
                   reason=str(record.get("reason", "")))


def _stored_knobs(app: str, stored: Mapping[str, object]) -> dict[str, object]:
    """Knobs as recorded, against today's registry: a knob added since gets its default, one
    removed is dropped, a value no longer allowed falls back to the default."""
    out = {}
    for knob in _app(app).knobs:
        try:
            out[knob.name] = check_knobs(app, {knob.name: stored.get(knob.name)})[knob.name]
        except InvalidRequest:
            out[knob.name] = knob.default
    return out


def write_desired(settings: Settings, app: str, desired: Desired) -> None:
    """Replace the app's desired state atomically (``apps/<app>.desired.json``)."""
    if desired.state not in DESIRED_STATES:
        raise InvalidRequest(f"desired state {desired.state!r} is not valid: allowed values are "
                             f"{', '.join(DESIRED_STATES)}")
    _check_trigger(desired.trigger)
    record = dataclasses.asdict(desired)
    record["knobs"] = check_knobs(app, desired.knobs)
    _write_json(_desired_path(settings, app), {"app": app, **record})


# -- the lock --------------------------------------------------------------------------------------

def holder(settings: Settings, app: str) -> Holder | None:
    """Who holds the app's lock right now, or None if nobody does.

    A non-blocking ``flock`` attempt: if it succeeds, nobody holds the lock (it is released at
    once; the launcher retries for a moment, so this probe cannot make a start fail). If it fails,
    the holder's record is read from the lock file."""
    path = lock_path(settings, app)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            return _read_holder(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(path: Path, timeout_s: float = 2.0) -> Holder:
    """The record of the process holding ``path``. It writes the record right after taking the
    lock; until then the file is empty or holds its predecessor (a dead pid)."""
    deadline = time.monotonic() + timeout_s
    while True:
        record = _read_json(path)
        if record and _alive(int(record.get("pid", 0))):
            return Holder(int(record["pid"]), str(record.get("mode", "?")),
                          float(record.get("started_at", 0.0)), list(record.get("argv", [])))
        if time.monotonic() >= deadline:
            return Holder(0, "?", 0.0, [])  # held, by a process that has not said who it is
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _control(settings: Settings, app: str, timeout_s: float | None = None) -> Iterator[None]:
    """One lifecycle action at a time per app (act, supervise, start, stop, restart), across
    processes: the supervisor must not restart an app a user is stopping."""
    path = _control_path(settings, app)
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout_s = settings.app_drain_timeout_s + 2 * LOCK_TIMEOUT_S if timeout_s is None \
        else timeout_s
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
                raise Busy(f"another action on {app} has been in progress for {timeout_s:.0f}s "
                           f"(it holds {path}); try again later")
            time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the flock


# -- leftover processes ----------------------------------------------------------------------------

def _boot_time() -> float:
    with open("/proc/stat") as handle:
        for line in handle:
            if line.startswith("btime "):
                return float(line.split()[1])
    return 0.0


def _session_members(sid: int, since: float) -> list[int]:
    """Live processes of session ``sid`` started at or after ``since`` (epoch s), when the
    session's leader is gone. A leader alive again under that id means the id was reused by a
    new session: nothing of the old one can remain (Linux reuses no id still naming a session),
    so nothing is returned. Linux only (``/proc``); elsewhere nothing is found."""
    proc = Path("/proc")
    if sid <= 0 or not proc.is_dir():
        return []
    ticks, boot = os.sysconf("SC_CLK_TCK"), _boot_time()
    members, leader_alive = [], False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, session, start_ticks = fields[0], int(fields[3]), int(fields[19])
        if session != sid or state in ("Z", "X"):
            continue
        pid = int(entry.name)
        if pid == sid:
            leader_alive = True
        elif boot + start_ticks / ticks >= since - 5:
            members.append(pid)
    return [] if leader_alive else members


def _reap_leftovers(sid: int, since: float, grace_s: float | None = None) -> list[int]:
    """Wait up to ``grace_s`` (:data:`LEFTOVER_GRACE_S`) for what remains of a dead app's session
    (its JVM, Python workers) to exit, then SIGKILL it: a new app must not share the checkpoint
    with an old JVM. Returns the pids killed."""
    deadline = time.monotonic() + (LEFTOVER_GRACE_S if grace_s is None else grace_s)
    while (members := _session_members(sid, since)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in members:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _session_members(sid, since) and time.monotonic() < deadline:
        time.sleep(0.1)
    return members


# -- start -----------------------------------------------------------------------------------------

def settings_env(settings: Settings) -> dict[str, str]:
    """``settings`` as the ``ADLAKE_*`` variables that make ``load_settings()`` return them."""
    env = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        env["ADLAKE_" + f.name.upper()] = (str(value).lower() if isinstance(value, bool)
                                           else str(value))
    return env


# Variables of the caller (Airflow's environment: the lake's Spark and Python) that must not
# reach an ops app.
_NOT_INHERITED = ("ADLAKE_", "AIRFLOW", "_AIRFLOW", "PYSPARK_", "SPARK_")
_NOT_INHERITED_NAMES = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}


def _app_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(_NOT_INHERITED) and k not in _NOT_INHERITED_NAMES}
    env.update(settings_env(settings))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(settings: Settings, app: str, trigger: str | None = None,
          knobs: Mapping[str, object] | None = None, reason: str = "user") -> Holder:
    """Launch the app detached, holding its lock; return once the new process holds it.

    ``trigger`` defaults to the app's default trigger, ``knobs`` to the defaults (missing ones
    too). Does not change the desired state (:func:`act` does): the supervisor stops an app that
    should be stopped. Raises :class:`AlreadyRunning` if the lock is held, :class:`AppStartError`
    (with the log) if the process exits first."""
    with _control(settings, app):
        return _start(settings, app, trigger, knobs, reason)


def _start(settings: Settings, app: str, trigger: str | None,
           knobs: Mapping[str, object] | None, reason: str) -> Holder:
    spec = _app(app)
    trigger = _check_trigger(trigger or spec.default_trigger)
    knobs = check_knobs(app, knobs)
    current = holder(settings, app)
    if current is not None:
        raise AlreadyRunning(app, current)
    python = settings.ops_python
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise AppStartError(f"the ops interpreter {python} does not exist: run `make setup`, or "
                            "set ADLAKE_OPS_PYTHON")
    # What remains of the previous run (its JVM, if its driver was killed) goes first.
    previous = _read_json(lock_path(settings, app))
    if previous and previous.get("pid"):
        _reap_leftovers(int(previous["pid"]), float(previous.get("started_at", 0.0)))
    # A marker left by a stop that ended in a kill would stop the new run at once.
    stop_marker(settings, app).unlink(missing_ok=True)
    extra = _prepare_checkpoint(settings, app, trigger, knobs)

    argv = [str(python), "-m", LAUNCHER, "--lock", str(lock_path(settings, app)),
            "--exit-file", str(exit_path(settings, app)), "--mode", trigger,
            "--", spec.module, *app_argv(app, trigger, knobs, settings.app_rtm_interval_s),
            *extra]
    log = log_path(settings, app)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n=== {_iso(time.time())} start {app} ({reason}): "
                  f"{' '.join(argv)}\n".encode())
        out.flush()
        offset = out.tell()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=_app_env(settings),
                                start_new_session=True, close_fds=True)
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
            raise AppStartError(f"{app} exited with code {code} during its start\n"
                                f"{_log_since(log, offset)}")
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise AppStartError(f"{app} did not take its lock within {LOCK_TIMEOUT_S:.0f}s "
                                f"(killed)\n{_log_since(log, offset)}")
        time.sleep(0.05)


def _settle(settings: Settings, app: str, proc: subprocess.Popen, current: Holder, log: Path,
            offset: int) -> None:
    """Give the app :data:`START_SETTLE_S` to fail early (bad arguments, a missing jar), so that
    such a start raises instead of looking successful; an app that reports first is settled."""
    deadline = time.monotonic() + START_SETTLE_S
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise AppStartError(f"{app} exited with code {code} right after its start\n"
                                f"{_log_since(log, offset)}")
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


# -- checkpoints -----------------------------------------------------------------------------------

def committed_offsets(checkpoint: Path) -> dict[str, dict[str, int]]:
    """``{topic: {partition: offset}}`` the query has read up to as of its last committed batch
    (``offsets/N`` of the latest ``commits/N``: the batch's end offsets, in micro-batch and
    Real-Time Mode alike); empty before the first commit. One topic read by several sources
    gets each partition's minimum."""
    commits = checkpoint / "commits"
    done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] \
        if commits.is_dir() else []
    if not done:
        return {}
    try:
        lines = (checkpoint / "offsets" / str(max(done))).read_text().splitlines()
    except OSError:
        return {}
    out: dict[str, dict[str, int]] = {}
    for line in lines[2:]:  # "v1", the batch's metadata, then one line per source
        if line.strip() in ("", "-"):
            return {}
        for topic, parts in json.loads(line).items():
            for partition, offset in parts.items():
                mine = out.setdefault(topic, {})
                mine[str(partition)] = min(int(offset), mine.get(str(partition), int(offset)))
    return out


def _checkpoint_shape(app: str, trigger: str, knobs: Mapping[str, object]) -> dict:
    """What a checkpoint is bound to: the trigger and the knobs that pick the operator."""
    return {"trigger": trigger, **{k: knobs[k] for k in CHECKPOINT_KNOBS.get(app, ())}}


def same_checkpoint(app: str, old: Mapping, new: Mapping) -> bool:
    """Whether Spark resumes a checkpoint of shape ``old`` as ``new``."""
    if any(old.get(k) != new.get(k) for k in CHECKPOINT_KNOBS.get(app, ())):
        return False
    return old.get("trigger") == new.get("trigger") or \
        (old.get("trigger"), new.get("trigger")) in SAME_CHECKPOINT_SWITCHES.get(app, ())


def _has_offsets(checkpoint: Path) -> bool:
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())


def _prepare_checkpoint(settings: Settings, app: str, trigger: str,
                        knobs: Mapping[str, object]) -> list[str]:
    """Keep the app's checkpoint, or move it aside and start the next one from its committed
    offsets (module docstring). Returns the extra app arguments (``--starting-offsets``)."""
    path = settings.checkpoint_path(app)
    record = _read_json(_checkpoint_record_path(settings, app)) or {}
    new = _checkpoint_shape(app, trigger, knobs)
    old = record.get("shape")
    if old is None and _has_offsets(path):
        # A checkpoint older than this record: its last run's mode is in the status file.
        status = read_status(settings, app) or {}
        old = {"trigger": status.get("mode", trigger),
               **{k: status.get(k, knobs[k]) for k in CHECKPOINT_KNOBS.get(app, ())}}
    if _has_offsets(path) and not same_checkpoint(app, old, new):
        committed = committed_offsets(path) or record.get("starting_offsets") or {}
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = path.with_name(".".join([app, *(str(v) for v in old.values()), stamp]))
        os.rename(path, aside)
        record = {"moved_aside": [*record.get("moved_aside", []), {
            "path": str(aside), "shape": old, "moved_at": time.time(),
            "committed_offsets": committed}], "starting_offsets": committed or None}
        print(f"[adlake.apps] {app}: a {old} checkpoint cannot run as {new}: moved it to "
              f"{aside}; the new one starts at its committed offsets {committed}", flush=True)
    elif _has_offsets(path) and (path / "commits").is_dir() and \
            any(p.name.isdigit() for p in (path / "commits").iterdir()):
        record.pop("starting_offsets", None)  # the new checkpoint has committed: done with them
    record["shape"] = new
    record["path"] = str(path)
    _write_json(_checkpoint_record_path(settings, app), record)
    offsets = record.get("starting_offsets")
    return ["--starting-offsets", json.dumps(offsets, sort_keys=True)] if offsets else []


# -- stop ------------------------------------------------------------------------------------------

def stop(settings: Settings, app: str, drain_timeout_s: float | None = None,
         reason: str = "user") -> StopResult:
    """Stop marker, SIGTERM, wait up to the drain timeout (``settings.app_drain_timeout_s``) for
    the app to commit its batch and exit, then SIGKILL its process group; return once its lock
    is free (:class:`AppStopError` if it is not). Does not change the desired state."""
    with _control(settings, app):
        return _stop(settings, app, drain_timeout_s, reason)


def _stop(settings: Settings, app: str, drain_timeout_s: float | None, reason: str
          ) -> StopResult:
    _app(app)
    drain = settings.app_drain_timeout_s if drain_timeout_s is None else drain_timeout_s
    current = holder(settings, app)
    marker = stop_marker(settings, app)
    if current is None:
        marker.unlink(missing_ok=True)
        return StopResult(app, "not_running", reason=reason)
    started = time.monotonic()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    if current.pid > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(current.pid, signal.SIGTERM)
    how = "exited"
    if not _wait_free(settings, app, drain):
        how = "killed"
        if current.pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(current.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(current.pid, signal.SIGKILL)
        if not _wait_free(settings, app, 30):
            raise AppStopError(f"{app}: the lock {lock_path(settings, app)} is still held "
                               f"after SIGKILL of pid {current.pid}: {holder(settings, app)}")
    waited = time.monotonic() - started
    marker.unlink(missing_ok=True)
    if current.pid > 0:
        _reap_leftovers(current.pid, current.started_at)
    code = None
    record = _read_json(exit_path(settings, app))
    if how == "exited" and record and record.get("pid") == current.pid and \
            float(record.get("started_at", -1)) == current.started_at:
        code = record.get("code")
    return StopResult(app, how, current.pid, current.mode, code, round(waited, 1), reason)


def _wait_free(settings: Settings, app: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while holder(settings, app) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def restart(settings: Settings, app: str, trigger: str | None = None,
            knobs: Mapping[str, object] | None = None, reason: str = "user") -> Holder:
    """Stop the app if it runs (:func:`stop`), then start it (:func:`start`)."""
    with _control(settings, app):
        _stop(settings, app, None, reason)
        return _start(settings, app, trigger, knobs, reason)


# -- status ----------------------------------------------------------------------------------------

def stale_after_s(settings: Settings, mode: str) -> float:
    """How long an app of trigger ``mode`` may go without a report (module docstring)."""
    if mode == "realtime":
        return 2 * settings.app_rtm_interval_s + settings.app_stale_margin_s
    return float(settings.app_stale_after_s)


def read_restarts(settings: Settings, app: str) -> Restarts:
    record = _read_json(_restarts_path(settings, app)) or {}
    names = {f.name for f in dataclasses.fields(Restarts)}
    return Restarts(**{k: v for k, v in record.items() if k in names})


def _write_restarts(settings: Settings, app: str, restarts: Restarts) -> None:
    _write_json(_restarts_path(settings, app), {"app": app, **dataclasses.asdict(restarts)})


def derive_state(settings: Settings, desired: Desired, current: Holder | None,
                 status: dict | None, restarts: Restarts, now: float,
                 stopping: bool = False) -> tuple[str, str]:
    """The app's state and why, from what is known about it (no I/O):

    * ``running``: holds its lock and reported within :func:`stale_after_s`;
    * ``starting``: holds its lock, has not reported a batch (or idle heartbeat) since it
      started, and is within ``app_start_grace_s`` (plus the stale bound) of its start;
    * ``stale``: holds its lock but has not reported for longer than that;
    * ``failed``: its query failed (still holding the lock while it exits), or it should run and
      does not (crashed, killed) and may be restarted now;
    * ``restarting``: it should run, does not, and waits for its backoff;
    * ``stopping``: holds its lock after a stop was asked (marker) or its query stopped;
    * ``stopped``: should not run and does not.
    """
    if current is not None:
        if stopping:
            return "stopping", "a stop was asked (stop marker)"
        mine = status if status and float(status.get("written_at", 0)) >= current.started_at \
            else None
        limit = stale_after_s(settings, current.mode)
        if mine is None or mine.get("state") == "starting":
            age = now - current.started_at
            if age <= settings.app_start_grace_s + limit:
                return "starting", f"started {age:.0f}s ago, no batch reported yet"
            return "stale", f"no batch reported {age:.0f}s after its start"
        if mine.get("state") == "failed":
            return "failed", f"query failed: {mine.get('error')}"
        if mine.get("state") == "stopped":
            return "stopping", "its query stopped; the process is exiting"
        age = now - float(mine["written_at"])
        if age > limit:
            return "stale", f"no report for {age:.0f}s (limit {limit:.0f}s in {current.mode})"
        return "running", f"reported {age:.0f}s ago"
    if desired.state == "stopped":
        return "stopped", "desired stopped"
    if restarts.next_allowed_at is not None and now < restarts.next_allowed_at:
        return "restarting", (f"not running; next restart allowed in "
                              f"{restarts.next_allowed_at - now:.0f}s (backoff)")
    return "failed", "should run and does not"


def app_status(settings: Settings, app: str, now: float | None = None) -> dict:
    """Everything known about the app, JSON-able: desired state, lock holder, status file,
    restarts, last exit, and the derived ``state`` with ``why``."""
    now = time.time() if now is None else now
    desired = read_desired(settings, app)
    current = holder(settings, app)
    status = read_status(settings, app)
    restarts = read_restarts(settings, app)
    state, why = derive_state(settings, desired, current, status, restarts, now,
                              stop_marker(settings, app).exists())
    return {
        "app": app, "state": state, "why": why,
        "desired": dataclasses.asdict(desired),
        "holder": None if current is None else dataclasses.asdict(current),
        "status": status, "restarts": dataclasses.asdict(restarts),
        "last_exit": _read_json(exit_path(settings, app)),
        "checkpoint": _read_json(_checkpoint_record_path(settings, app)),
        "stale_after_s": stale_after_s(settings, current.mode if current else desired.trigger),
        "log": str(log_path(settings, app)),
    }


# -- act -------------------------------------------------------------------------------------------

def act(settings: Settings, app: str, action: str, trigger: str | None = None,
        knobs: Mapping[str, object] | None = None, reason: str = "user") -> dict:
    """What an app's DAG task calls. ``start``/``restart``: the desired state becomes running
    with ``trigger`` and ``knobs`` (each unset one keeps its desired value), then the app is
    started (restarted); ``start`` of a running app raises :class:`AlreadyRunning` and changes
    nothing. ``stop``: desired stopped, then the app is stopped. ``status``: nothing changes.
    Returns a JSON-able summary: the action's result and :func:`app_status`.

    A start that fails leaves the desired state running: the supervisor retries it with
    backoff."""
    if action not in ACTIONS:
        raise InvalidRequest(f"action {action!r} is not valid: allowed values are "
                             f"{', '.join(ACTIONS)}")
    _app(app)
    result: dict | None = None
    with _control(settings, app):
        desired = read_desired(settings, app)
        if action in ("start", "restart"):
            new_trigger = _check_trigger(trigger or desired.trigger)
            new_knobs = check_knobs(app, {**desired.knobs, **{
                k: v for k, v in (knobs or {}).items() if v is not None}})
            if action == "start" and (current := holder(settings, app)) is not None:
                raise AlreadyRunning(app, current)
            write_desired(settings, app, Desired("running", new_trigger, new_knobs, time.time(),
                                                 reason))
            # a user's start is a fresh start: the next failure is restarted at once
            restarts = read_restarts(settings, app)
            restarts.consecutive, restarts.next_allowed_at = 0, None
            _write_restarts(settings, app, restarts)
            stopped = _stop(settings, app, None, reason) if action == "restart" else None
            started = _start(settings, app, new_trigger, new_knobs, reason)
            result = {"started": dataclasses.asdict(started),
                      **({"stopped": stopped.to_dict()} if stopped else {})}
        elif action == "stop":
            write_desired(settings, app, dataclasses.replace(
                desired, state="stopped", updated_at=time.time(), reason=reason))
            result = {"stopped": _stop(settings, app, None, reason).to_dict()}
        return {"app": app, "action": action, "reason": reason, "result": result,
                "status": app_status(settings, app)}


# -- supervise -------------------------------------------------------------------------------------

def backoff_delay_s(settings: Settings, consecutive: int) -> float:
    """How long after its ``consecutive``-th restart in a row an app may be restarted again:
    min, 2·min, 4·min … capped at max (30, 60, 120 … 600 s by default).

    >>> from adlake.config import load_settings
    >>> s = load_settings({})
    >>> [backoff_delay_s(s, n) for n in (1, 2, 3, 4, 5, 6, 7)]
    [30, 60, 120, 240, 480, 600, 600]
    """
    if consecutive <= 0:
        return 0
    return min(settings.app_backoff_max_s,
               settings.app_backoff_min_s * 2 ** min(consecutive - 1, 32))


def record_restart(settings: Settings, restarts: Restarts, now: float, reason: str,
                   error: str | None) -> Restarts:
    """``restarts`` after one more restart at ``now``: counts, reason, error, backoff."""
    consecutive = restarts.consecutive + 1
    entry = {"at": now, "reason": reason, "error": error}
    return dataclasses.replace(
        restarts, count=restarts.count + 1, consecutive=consecutive, reason=reason,
        last_error=error, last_restart_at=now,
        next_allowed_at=now + backoff_delay_s(settings, consecutive), healthy_since=None,
        history=[*restarts.history, entry][-_HISTORY:])


def observe_health(settings: Settings, restarts: Restarts, state: str, now: float) -> Restarts:
    """``restarts`` after the supervisor has seen the app in ``state`` at ``now``: healthy
    (``running``) since when, and the backoff reset after ``app_backoff_reset_s`` of it."""
    if state != "running":
        return restarts if state == "starting" else dataclasses.replace(restarts,
                                                                        healthy_since=None)
    since = restarts.healthy_since if restarts.healthy_since is not None else now
    if now - since >= settings.app_backoff_reset_s and restarts.consecutive:
        return dataclasses.replace(restarts, consecutive=0, next_allowed_at=None,
                                   healthy_since=since)
    return dataclasses.replace(restarts, healthy_since=since)


def decide(desired: Desired, state: str) -> str:
    """What the supervisor does about an app: ``stop``, ``restart``, ``wait`` (backoff) or
    ``none``."""
    if desired.state == "stopped":
        return "stop" if state not in ("stopped",) else "none"
    if state in ("failed", "stale"):
        return "restart"
    if state == "restarting":
        return "wait"
    return "none"


def supervise(settings: Settings, now: float | None = None) -> list[dict]:
    """One pass over every ops app of the registry: restart what should run and does not (crash,
    kill -9, OOM) or whose status is stale or failed, respecting the backoff; stop what should
    be stopped but runs. Every restart is recorded (``apps/<app>.restarts.json``). Returns the
    actions taken (and the restarts deferred by the backoff), one dict each; an app whose action
    failed has ``ok: False`` and the error, and does not stop the pass.

    ``now`` (epoch seconds) is the supervisor's clock for staleness and backoff (tests advance
    it); processes are started and waited for in real time."""
    actions = []
    for spec in registry.APPS.values():
        if spec.runtime != "ops":
            continue
        try:
            with _control(settings, spec.name):
                action = _supervise_app(settings, spec.name,
                                        time.time() if now is None else now)
        except AppError as error:
            action = {"app": spec.name, "action": "error", "ok": False, "error": str(error)}
        if action is not None:
            print(f"[adlake.apps] supervise: {json.dumps(action, default=str)}", flush=True)
            actions.append(action)
    return actions


def _supervise_app(settings: Settings, app: str, now: float) -> dict | None:
    desired = read_desired(settings, app)
    current = holder(settings, app)
    status = read_status(settings, app)
    restarts = read_restarts(settings, app)
    state, why = derive_state(settings, desired, current, status, restarts, now,
                              stop_marker(settings, app).exists())
    action = decide(desired, state)
    if action == "none":
        if desired.state == "running":
            seen = observe_health(settings, restarts, state, now)
            if seen != restarts:
                _write_restarts(settings, app, seen)
        return None
    if action == "stop":
        if current is None:
            return None
        result = _stop(settings, app, None, "supervisor: desired stopped")
        return {"app": app, "action": "stop", "ok": True, "why": "desired stopped",
                "result": result.to_dict()}
    if action == "wait":
        return {"app": app, "action": "wait", "ok": True, "why": why,
                "next_allowed_at": restarts.next_allowed_at}
    # restart
    error = _last_error(settings, app, current, status)
    stopped = _stop(settings, app, None, f"supervisor: {why}") if current is not None else None
    entry = {"app": app, "action": "restart", "why": why, "error": error,
             **({"stopped": stopped.to_dict()} if stopped else {})}
    try:
        started = _start(settings, app, desired.trigger, desired.knobs, f"supervisor: {why}")
        entry.update(ok=True, started=dataclasses.asdict(started))
    except AlreadyRunning as running:  # started meanwhile by something that bypasses act()
        entry.update(ok=True, started=running.holder and dataclasses.asdict(running.holder))
    except AppError as failure:
        entry.update(ok=False, start_error=str(failure))
        error = str(failure)
    restarts = record_restart(settings, restarts, now, why, error)
    _write_restarts(settings, app, restarts)
    entry.update(count=restarts.count, next_allowed_at=restarts.next_allowed_at)
    return entry


def _last_error(settings: Settings, app: str, current: Holder | None,
                status: dict | None) -> str | None:
    """Why the app went down, as far as it is known: its query's error, how its process ended
    (exit code and error, or no record: killed), or staleness."""
    if status and status.get("state") == "failed" and status.get("error"):
        return str(status["error"])[-2000:]
    if current is not None:
        return None  # stale: the process still runs, nothing failed that it reported
    record = _read_json(exit_path(settings, app))
    lock = _read_json(lock_path(settings, app)) or {}
    if record and record.get("pid") == lock.get("pid"):
        text = f"exited with code {record.get('code')}"
        return f"{text}: {record['error'][-2000:]}" if record.get("error") else text
    return (f"pid {lock.get('pid')} ended without an exit record: killed (SIGKILL, OOM killer) "
            "or the machine restarted")


_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|"
                       r"minutes?|h|hours?)\s*$", re.IGNORECASE)


def interval_s(text: str) -> float:
    """A Spark trigger interval in seconds ("30 seconds", "5 minutes", "500 ms").

    >>> interval_s("5 minutes"), interval_s("30 seconds"), interval_s("500 ms")
    (300.0, 30.0, 0.5)
    """
    match = _INTERVAL.match(text)
    if not match:
        raise ValueError(f"not an interval: {text!r}")
    unit = match.group(2).lower()
    scale = 0.001 if unit.startswith("ms") or unit.startswith("milli") else \
        60 if unit.startswith("m") else 3600 if unit.startswith("h") else 1
    return float(match.group(1)) * scale
