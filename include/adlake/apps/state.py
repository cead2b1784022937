"""The streaming-app lifecycle's vocabulary and files (:mod:`adlake.apps`): its actions, triggers
and states, its errors, its records (desired state, lock holder, stop result, restarts), the paths
and atomic JSON files under the runtime directory, the registry's side (apps, triggers, knobs) and
the desired state. No processes here: :mod:`adlake.apps.process` starts and stops them."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from adlake import atomic, registry
from adlake.atomic import read_json
from adlake.config import Settings

ACTIONS = registry.APP_ACTIONS  # ("start", "stop", "restart", "status")
TRIGGERS = registry.TRIGGERS  # ("realtime", "processing_time")
DESIRED_STATES = ("running", "stopped")
# A desired state that was recorded but cannot be read: nothing acts on the app (read_desired).
UNKNOWN = "unknown"
# Derived states (app_status()["state"]).
STATES = ("running", "starting", "stale", "failed", "stopping", "restarting", "stopped")


# -- errors --------------------------------------------------------------------------------------


class AppError(RuntimeError):
    """A lifecycle action could not be done; the message says why and what to do."""


class AlreadyRunning(AppError):
    """The app's lock is held: it runs already (``holder`` says who)."""

    def __init__(self, app: str, holder: Holder | None) -> None:
        self.app, self.holder = app, holder
        who = "pid ?" if holder is None else holder.describe()
        super().__init__(
            f"{app} is already running: {who}; stop it first (action stop) or use restart"
        )


class AppStartError(AppError):
    """The app exited (or never took its lock) during its start; the message has its log."""


class AppStopError(AppError):
    """The app's lock is still held after SIGKILL."""


class InvalidRequest(AppError, ValueError):
    """An unknown app, action, trigger or knob, or a knob value of the wrong type or range."""


class Busy(AppError):
    """Another action on the same app is still in progress."""


# Named where they are re-exported, as when adlake.apps was one module (tracebacks, messages).
for _error in (AppError, AlreadyRunning, AppStartError, AppStopError, InvalidRequest, Busy):
    _error.__module__ = "adlake.apps"


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
    """The process holding an app's lock: the app's driver (its pid is its process group).

    ``elsewhere`` is None when that process is seen here (its pid and start as recorded).
    Otherwise it says why it is not: the lock is held, by a process on another host or in another
    PID namespace, or by one that has not recorded itself. ``pid`` is then None (a recorded number
    means another process here, or none, and is never signalled); ``mode``, ``started_at`` and
    ``argv`` are what its record says, None or empty without one."""

    pid: int | None
    mode: str | None
    started_at: float | None
    argv: list[str]
    elsewhere: str | None = None

    def describe(self) -> str:
        """Who it is, as far as known: pid (or where), mode, start, command line."""
        parts = [f"pid {self.pid}" if self.elsewhere is None else f"elsewhere: {self.elsewhere}"]
        if self.mode:
            parts.append(f"mode {self.mode}")
        if self.started_at:
            parts.append(f"started {iso_time(self.started_at)}")
        if self.argv:
            parts.append(f"argv {' '.join(self.argv)}")
        return ", ".join(parts)


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


def rotate_log(path: Path, max_bytes: int, backups: int) -> bool:
    """Rotate a running app's log once it is over ``max_bytes``: ``<log>.1`` … ``<log>.N``
    shift up (the oldest beyond ``backups`` is dropped), the log is copied to ``<log>.1`` and
    truncated in place. In place, because the app and its JVM keep writing to the descriptor
    they opened (with ``O_APPEND``, so their next write lands at the new end); the lines they
    write between the copy and the truncation are lost (logrotate's ``copytruncate``). True if
    it rotated."""
    try:
        if path.stat().st_size <= max_bytes:
            return False
    except FileNotFoundError:
        return False
    rotated = [path.with_name(f"{path.name}.{n}") for n in range(1, backups + 1)]
    for older, newer in reversed(list(zip(rotated, rotated[1:]))):
        if older.exists():
            os.replace(older, newer)
    if rotated:
        shutil.copyfile(path, rotated[0])
    os.truncate(path, 0)
    return True


def control_path(settings: Settings, app: str) -> Path:
    return settings.locks_dir / f"{app}.control.lock"


def _desired_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.desired.json"


def _restarts_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.restarts.json"


def exit_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.exit.json"


def checkpoint_record_path(settings: Settings, app: str) -> Path:
    return settings.apps_dir / f"{app}.checkpoint.json"


def write_json(path: Path, obj: object) -> None:
    """Replace ``path`` atomically and durably (:mod:`adlake.atomic`): a reader, or the machine
    after a crash, sees the old file or the new one, never a part; a failed write (a full disk)
    leaves the old one and raises."""
    atomic.write_json(path, obj, indent=2, default=str)


def iso_time(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


# -- the registry's side: apps, triggers, knobs, the app's flags -----------------------------------


def app_spec(name: str) -> registry.App:
    app = registry.APPS.get(name)
    if app is None or app.runtime != "ops":
        allowed = ", ".join(sorted(a.name for a in registry.ops_apps()))
        raise InvalidRequest(f"unknown streaming app {name!r}: allowed apps are {allowed}")
    return app


def check_trigger(trigger: str) -> str:
    if trigger not in TRIGGERS:
        raise InvalidRequest(
            f"trigger {trigger!r} is not valid: allowed values are {', '.join(TRIGGERS)}"
        )
    return trigger


def app_argv(
    app: str, trigger: str, knobs: Mapping[str, object], rtm_interval_s: int | None = None
) -> list[str]:
    """The app's own arguments (after ``-m <module>``): the trigger (with Real-Time Mode's
    checkpoint interval, if given) and every knob as a flag; never ``--checkpoint`` (the default
    keeps restarts on the same checkpoint).

    >>> app_argv("click_surge", "realtime", {"threshold": 50}, rtm_interval_s=30)
    ['--trigger', 'realtime', '--trigger-interval', '30 seconds', '--threshold', '50']
    >>> app_argv("click_surge", "processing_time", {"threshold": 50}, rtm_interval_s=30)
    ['--trigger', 'processing_time', '--threshold', '50']
    """
    spec = app_spec(app)
    argv = ["--trigger", check_trigger(trigger)]
    if trigger == "realtime" and rtm_interval_s is not None:
        argv += ["--trigger-interval", f"{rtm_interval_s} seconds"]
    for knob in spec.knobs:
        argv += [knob.flag, str(knobs[knob.name])]
    return argv


def rtm_interval_s(settings: Settings, app: str) -> int:
    """The Real-Time Mode checkpoint interval the lifecycle starts ``app`` with: the setting
    ``app_rtm_interval_s`` when set (every app), else the app's own (``App.rtm_interval_s``).

    >>> from adlake.config import load_settings
    >>> rtm_interval_s(load_settings({}), "click_surge") == app_spec("click_surge").rtm_interval_s
    True
    >>> rtm_interval_s(load_settings({"ADLAKE_APP_RTM_INTERVAL_S": "5"}), "click_surge")
    5
    """
    if settings.app_rtm_interval_s is not None:
        return settings.app_rtm_interval_s
    return app_spec(app).rtm_interval_s


def default_knobs(app: str) -> dict[str, object]:
    return {k.name: k.default for k in app_spec(app).knobs}


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
    spec = app_spec(app)
    by_name = {k.name: k for k in spec.knobs}
    unknown = sorted(set(knobs or {}) - set(by_name))
    if unknown:
        raise InvalidRequest(
            f"unknown knob {unknown[0]!r} for {app}: allowed knobs are "
            f"{', '.join(by_name) or '(none)'}"
        )
    out = {}
    for knob in spec.knobs:
        value = (knobs or {}).get(knob.name)
        out[knob.name] = knob.default if value is None else _knob_value(app, knob, value)
    return out


def check_rules(app: str, trigger: str, knobs: Mapping[str, object]) -> None:
    """Refuse (:class:`InvalidRequest`) a combination of ``trigger`` and ``knobs`` (every knob,
    as :func:`check_knobs` returns them) that breaks one of the app's knob rules (registry
    ``App.rules``): each knob in its range is not enough for the app to run.

    >>> check_rules("attribution", "processing_time", {**default_knobs("attribution"), "ttl_s": 0})
    Traceback (most recent call last):
    ...
    adlake.apps.InvalidRequest: knobs of attribution: ttl_s=0 must exceed 2 * window_s + \
lateness_s (630): it is a safety net, not the close
    """
    problem = app_spec(app).refusal(trigger, knobs)
    if problem:
        raise InvalidRequest(f"knobs of {app}: {problem}")


def _knob_value(app: str, knob: registry.Knob, value: object) -> object:
    """``value`` as ``knob`` takes it (:meth:`registry.Knob.parse`: its type, its range or
    choices); a refusal names the knob, the value and what is allowed.

    >>> _knob_value("attribution", registry.APPS["attribution"].knob("window_s"), float("nan"))
    Traceback (most recent call last):
    ...
    adlake.apps.InvalidRequest: knob window_s of attribution: nan is not a valid number: allowed \
numbers from 0.001 to 86400
    """
    try:
        return knob.parse(value)
    except ValueError as refused:
        raise InvalidRequest(f"knob {knob.name} of {app}: {refused}") from None


# -- desired state -------------------------------------------------------------------------------


def read_desired(settings: Settings, app: str) -> Desired:
    """The app's desired state. Without a record (never started or stopped through the
    lifecycle): stopped, with its default trigger and knobs. A record that cannot be read or
    understood (unreadable, not JSON, a state, trigger or time it cannot hold, or running with knobs
    the app's rules refuse: :func:`check_rules`) says nothing about what the app should do: its state is :data:`UNKNOWN` and ``reason`` says why, and nothing acts
    on it (the supervisor leaves the app as it is) until an action writes a new one."""
    spec = app_spec(app)
    path = _desired_path(settings, app)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return Desired("stopped", spec.default_trigger, default_knobs(app), 0.0, "default")
    except (OSError, ValueError) as error:
        return _unknown_desired(settings, app, f"{path} cannot be read: {error}")
    try:
        if not isinstance(record, dict):
            raise ValueError(f"not a JSON object but {type(record).__name__}")
        if record.get("state") not in DESIRED_STATES:
            raise ValueError(f"state {record.get('state')!r} is not one of {DESIRED_STATES}")
        knobs = record.get("knobs") or {}
        if not isinstance(knobs, dict):
            raise ValueError(f"knobs {knobs!r} are not a JSON object")
        desired = Desired(
            state=record["state"],
            trigger=check_trigger(record.get("trigger", spec.default_trigger)),
            knobs=_stored_knobs(app, knobs),
            updated_at=float(record.get("updated_at", 0.0)),
            reason=str(record.get("reason", "")),
        )
        if desired.state == "running":  # one the app cannot run with: restarting it won't help
            check_rules(app, desired.trigger, desired.knobs)
        return desired
    except (TypeError, ValueError) as error:  # InvalidRequest (the trigger) is a ValueError
        return _unknown_desired(settings, app, f"{path} is not a desired state: {error}")


def _unknown_desired(settings: Settings, app: str, why: str) -> Desired:
    try:
        written = _desired_path(settings, app).stat().st_mtime
    except OSError:
        written = 0.0
    return Desired(UNKNOWN, app_spec(app).default_trigger, default_knobs(app), written, why)


def _stored_knobs(app: str, stored: Mapping[str, object]) -> dict[str, object]:
    """Knobs as recorded, against today's registry: a knob added since gets its default, one
    removed is dropped, a value no longer allowed falls back to the default."""
    out = {}
    for knob in app_spec(app).knobs:
        try:
            out[knob.name] = check_knobs(app, {knob.name: stored.get(knob.name)})[knob.name]
        except InvalidRequest:
            out[knob.name] = knob.default
    return out


def write_desired(settings: Settings, app: str, desired: Desired) -> None:
    """Replace the app's desired state atomically (``apps/<app>.desired.json``)."""
    if desired.state not in DESIRED_STATES:
        raise InvalidRequest(
            f"desired state {desired.state!r} is not valid: allowed values are "
            f"{', '.join(DESIRED_STATES)}"
        )
    check_trigger(desired.trigger)
    record = dataclasses.asdict(desired)
    record["knobs"] = check_knobs(app, desired.knobs)
    if desired.state == "running":
        check_rules(app, desired.trigger, record["knobs"])
    write_json(_desired_path(settings, app), {"app": app, **record})


# -- restarts record -------------------------------------------------------------------------------


def read_restarts(settings: Settings, app: str) -> Restarts:
    """The app's restarts record; a field of the wrong type (a damaged or hand-edited record)
    reads as its default, so the supervisor keeps going with what is left of it."""
    record = read_json(_restarts_path(settings, app)) or {}
    restarts = Restarts()
    for name, kinds in _RESTARTS_FIELDS.items():
        value = record.get(name)
        if isinstance(value, kinds) and not isinstance(value, bool):
            if name == "history":
                value = [entry for entry in value if isinstance(entry, dict)]
            setattr(restarts, name, value)
    return restarts


_RESTARTS_FIELDS: dict[str, tuple[type, ...]] = {
    "count": (int,),
    "consecutive": (int,),
    "reason": (str,),
    "last_error": (str,),
    "last_restart_at": (int, float),
    "next_allowed_at": (int, float),
    "healthy_since": (int, float),
    "history": (list,),
}


def write_restarts(settings: Settings, app: str, restarts: Restarts) -> None:
    write_json(_restarts_path(settings, app), {"app": app, **dataclasses.asdict(restarts)})
