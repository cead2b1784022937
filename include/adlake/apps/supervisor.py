"""The apps' status and supervision (:mod:`adlake.apps`' docstring: staleness, backoff): the
derived state (:func:`derive_state`, :func:`app_status`), what an app's DAG task does
(:func:`act`) and the supervisor's pass (:func:`supervise`) with its backoff."""

from __future__ import annotations

import dataclasses
import json
import re
import time
import traceback
from collections.abc import Mapping

from adlake import registry
from adlake.apps import service
from adlake.apps.process import STATUS_HOLDER_TIMEOUT_S, control, holder, launch, terminate
from adlake.apps.state import (
    ACTIONS,
    UNKNOWN,
    AlreadyRunning,
    AppError,
    Desired,
    Holder,
    InvalidRequest,
    Restarts,
    app_spec,
    check_knobs,
    check_rules,
    check_trigger,
    checkpoint_record_path,
    exit_path,
    lock_path,
    log_path,
    read_desired,
    read_json,
    read_restarts,
    rotate_log,
    write_desired,
    write_restarts,
)
from adlake.config import Settings
from adlake.status import read_status, stop_marker

_HISTORY = 20  # restarts kept in the record


# -- status ----------------------------------------------------------------------------------------


def stale_after_s(settings: Settings, mode: str) -> float:
    """How long an app of trigger ``mode`` may go without a report (package docstring): the same
    in both modes, whatever the checkpoint interval."""
    return float(settings.app_stale_after_s)


def derive_state(
    settings: Settings,
    desired: Desired,
    current: Holder | None,
    status: dict | None,
    restarts: Restarts,
    now: float,
    stopping: bool = False,
) -> tuple[str, str]:
    """The app's state and why, from what is known about it (no I/O):

    * ``running``: holds its lock and reported within :func:`stale_after_s`;
    * ``starting``: holds its lock, has not reported a batch (or idle heartbeat) since it
      started, and is within ``app_start_grace_s`` (plus the stale bound) of its start;
    * ``stale``: holds its lock but has not reported for longer than that;
    * ``failed``: its query failed (still holding the lock while it exits), or it should run and
      does not (crashed, killed) and may be restarted now;
    * ``restarting``: it should run, does not, and waits for its backoff;
    * ``stopping``: holds its lock after a stop was asked (marker) or its query stopped;
    * ``stopped``: should not run and does not, or does not run and what it should do is unknown
      (its desired state cannot be read: nothing acts on it).

    An app whose lock is held by a process not seen here (another PID namespace or host, or one
    that has not recorded itself) is ``running``, "(elsewhere)": nothing here can tell more.
    """
    if current is not None:
        if stopping:
            return "stopping", "a stop was asked (stop marker)"
        if current.pid is None:
            written = (status or {}).get("written_at")
            seen = (
                f"; its status was written {now - written:.0f}s ago"
                if isinstance(written, (int, float))
                else ""
            )
            return "running", f"running (elsewhere): {current.elsewhere}{seen}"
        mine = (
            status if status and float(status.get("written_at", 0)) >= current.started_at else None
        )
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
    if desired.state == UNKNOWN:
        return "stopped", f"not running; desired state unknown, left as it is: {desired.reason}"
    if desired.state == "stopped":
        return "stopped", "desired stopped"
    if restarts.next_allowed_at is not None and now < restarts.next_allowed_at:
        return "restarting", (
            f"not running; next restart allowed in {restarts.next_allowed_at - now:.0f}s (backoff)"
        )
    return "failed", "should run and does not"


def _observe(settings: Settings, app: str, now: float, **holder_args: float) -> tuple:
    """What is known of the app now, read once: desired state, lock holder (``holder_args``:
    :func:`holder`'s), status file, restarts record, and the state derived from them with the
    reason."""
    desired = read_desired(settings, app)
    current = holder(settings, app, **holder_args)
    status = read_status(settings, app)
    restarts = read_restarts(settings, app)
    state, why = derive_state(
        settings, desired, current, status, restarts, now, stop_marker(settings, app).exists()
    )
    return desired, current, status, restarts, state, why


def app_status(settings: Settings, app: str, now: float | None = None) -> dict:
    """Everything known about the app, JSON-able: desired state, lock holder, status file,
    restarts, last exit, and the derived ``state`` with ``why``."""
    now = time.time() if now is None else now
    desired, current, status, restarts, state, why = _observe(
        settings, app, now, timeout_s=STATUS_HOLDER_TIMEOUT_S
    )
    return {
        "app": app,
        "state": state,
        "why": why,
        "desired": dataclasses.asdict(desired),
        "holder": None if current is None else dataclasses.asdict(current),
        "status": status,
        "restarts": dataclasses.asdict(restarts),
        "last_exit": read_json(exit_path(settings, app)),
        "checkpoint": read_json(checkpoint_record_path(settings, app)),
        "stale_after_s": stale_after_s(settings, (current and current.mode) or desired.trigger),
        "log": str(log_path(settings, app)),
    }


# -- act -------------------------------------------------------------------------------------------


def act(
    settings: Settings,
    app: str,
    action: str,
    trigger: str | None = None,
    knobs: Mapping[str, object] | None = None,
    reason: str = "user",
) -> dict:
    """What an app's DAG task calls. ``start``/``restart``: the desired state becomes running
    with ``trigger`` and ``knobs`` (each unset one keeps its desired value), then the app is
    started (restarted); ``start`` of a running app raises :class:`AlreadyRunning` and changes
    nothing. ``stop``: desired stopped, then the app is stopped. ``status``: nothing changes.
    Returns a JSON-able summary: the action's result and :func:`app_status`.

    A start that fails leaves the desired state running: the supervisor retries it with
    backoff.

    With ``settings.apps_host`` ``service``, the processes are the reconcile loop's
    (:mod:`adlake.apps.service`): the desired state is recorded here, the rest
    (:func:`carry_out`) is handed to the loop as a request, and its answer returned (or its
    error raised) as if done here."""
    if action not in ACTIONS:
        raise InvalidRequest(
            f"action {action!r} is not valid: allowed values are {', '.join(ACTIONS)}"
        )
    app_spec(app)
    if settings.apps_host == "service" and action != "status":
        with control(settings, app):
            desired = record_intent(settings, app, action, trigger, knobs, reason)
            request = service.submit(settings, app, action, desired, reason)
        return service.await_answer(settings, app, request)
    with control(settings, app):
        desired = record_intent(settings, app, action, trigger, knobs, reason)
        return carry_out(settings, app, action, desired, reason)


def record_intent(
    settings: Settings,
    app: str,
    action: str,
    trigger: str | None,
    knobs: Mapping[str, object] | None,
    reason: str,
) -> Desired:
    """:func:`act`'s first half, by a caller holding the app's :func:`control`: the desired state
    the action asks for, written (a start or restart also resets the backoff: a user's start is a
    fresh start), and returned. A start of a running app raises :class:`AlreadyRunning` and
    writes nothing."""
    desired = read_desired(settings, app)
    if action in ("start", "restart"):
        new_trigger = check_trigger(trigger or desired.trigger)
        new_knobs = check_knobs(
            app, {**desired.knobs, **{k: v for k, v in (knobs or {}).items() if v is not None}}
        )
        check_rules(app, new_trigger, new_knobs)  # before anything is written
        if action == "start" and (current := holder(settings, app)) is not None:
            raise AlreadyRunning(app, current)
        desired = Desired("running", new_trigger, new_knobs, time.time(), reason)
        write_desired(settings, app, desired)
        # a user's start is a fresh start: the next failure is restarted at once
        restarts = read_restarts(settings, app)
        restarts.consecutive, restarts.next_allowed_at = 0, None
        write_restarts(settings, app, restarts)
    elif action == "stop":
        desired = dataclasses.replace(
            desired, state="stopped", updated_at=time.time(), reason=reason
        )
        write_desired(settings, app, desired)
    return desired


def carry_out(settings: Settings, app: str, action: str, desired: Desired, reason: str) -> dict:
    """:func:`act`'s second half, by a caller holding the app's :func:`control`: the processes
    (start with ``desired``'s trigger and knobs, restart, stop; nothing for ``status``), and the
    summary :func:`act` returns."""
    result: dict | None = None
    if action in ("start", "restart"):
        stopped = terminate(settings, app, None, reason) if action == "restart" else None
        started = launch(settings, app, desired.trigger, desired.knobs, reason)
        result = {
            "started": dataclasses.asdict(started),
            **({"stopped": stopped.to_dict()} if stopped else {}),
        }
    elif action == "stop":
        result = {"stopped": terminate(settings, app, None, reason).to_dict()}
    return {
        "app": app,
        "action": action,
        "reason": reason,
        "result": result,
        "status": app_status(settings, app),
    }


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
    return min(
        settings.app_backoff_max_s, settings.app_backoff_min_s * 2 ** min(consecutive - 1, 32)
    )


def record_restart(
    settings: Settings, restarts: Restarts, now: float, reason: str, error: str | None
) -> Restarts:
    """``restarts`` after one more restart at ``now``: counts, reason, error, backoff."""
    consecutive = restarts.consecutive + 1
    entry = {"at": now, "reason": reason, "error": error}
    return dataclasses.replace(
        restarts,
        count=restarts.count + 1,
        consecutive=consecutive,
        reason=reason,
        last_error=error,
        last_restart_at=now,
        next_allowed_at=now + backoff_delay_s(settings, consecutive),
        healthy_since=None,
        history=[*restarts.history, entry][-_HISTORY:],
    )


def observe_health(settings: Settings, restarts: Restarts, state: str, now: float) -> Restarts:
    """``restarts`` after the supervisor has seen the app in ``state`` at ``now``: healthy
    (``running``) since when, and the backoff reset after ``app_backoff_reset_s`` of it."""
    if state != "running":
        return (
            restarts if state == "starting" else dataclasses.replace(restarts, healthy_since=None)
        )
    since = restarts.healthy_since if restarts.healthy_since is not None else now
    if now - since >= settings.app_backoff_reset_s and restarts.consecutive:
        return dataclasses.replace(
            restarts, consecutive=0, next_allowed_at=None, healthy_since=since
        )
    return dataclasses.replace(restarts, healthy_since=since)


def decide(desired: Desired, state: str) -> str:
    """What the supervisor does about an app: ``stop``, ``restart``, ``wait`` (backoff) or
    ``none`` (also whenever its desired state is unknown).

    >>> decide(Desired("unknown", "realtime", {}, 0, "unreadable"), "running")
    'none'
    """
    if desired.state not in ("running", "stopped"):
        return "none"
    if desired.state == "stopped":
        return "stop" if state not in ("stopped",) else "none"
    if state in ("failed", "stale"):
        return "restart"
    if state == "restarting":
        return "wait"
    return "none"


# What the ``apps_supervisor`` DAG's XCom and task log show of an action. Its DAG is not an
# app's: a user refused an app's DAG may read it. So no app's error text (a traceback quoting
# the records it choked on), no reason quoting it, no command line: app names, what was done,
# counts and times. The rest is on the app's card and in its alerts, behind the app's own DAG.
PUBLIC_FIELDS = ("app", "action", "ok", "count", "next_allowed_at")


def public(action: Mapping[str, object]) -> dict:
    """``action`` as the supervisor's XCom and log show it (:data:`PUBLIC_FIELDS`).

    >>> public({"app": "a", "action": "restart", "ok": False, "error": "user_ip: '203.0.113.7'",
    ...         "started": {"argv": ["python"]}, "count": 3})
    {'app': 'a', 'action': 'restart', 'ok': False, 'count': 3, 'details': "on the app's card"}
    """
    shown = {key: action[key] for key in PUBLIC_FIELDS if key in action}
    if set(action) - set(PUBLIC_FIELDS):
        shown["details"] = "on the app's card"
    return shown


def supervise(
    settings: Settings, now: float | None = None, origin: Mapping[str, object] | None = None
) -> list[dict]:
    """:func:`reconcile`, here: what the ``apps_supervisor`` DAG runs every minute; returns the
    pass's actions as :func:`public` shows them. With ``settings.apps_host`` ``service`` the
    pass is the reconcile loop's, every ``app_loop_interval_s`` (:mod:`adlake.apps.loop`), and
    nothing here starts or stops a process: this checks the loop runs and keeps up
    (:func:`adlake.apps.service.check_loop`, :class:`AppError` naming the service when not,
    which fails the DAG's task and alerts) and returns the actions of its last pass."""
    if settings.apps_host == "service":
        health = service.check_loop(settings)
        print(f"[adlake.apps] supervise: the reconcile loop runs: {health['why']}", flush=True)
        return [public(action) for action in health["loop"].get("last_pass") or []]
    return [public(action) for action in reconcile(settings, now, origin)]


def reconcile(
    settings: Settings, now: float | None = None, origin: Mapping[str, object] | None = None
) -> list[dict]:
    """One pass over every ops app of the registry: restart what should run and does not (crash,
    kill -9, OOM) or whose status is stale or failed, respecting the backoff; stop what should
    be stopped but runs. Every restart is recorded (``apps/<app>.restarts.json``) before the app
    is started. Returns the actions taken (and the restarts deferred by the backoff), one dict
    each; an app whose action failed has ``ok: False`` and the error (any error: a full disk, a
    damaged record), and does not stop the pass. What it prints of them is :func:`public`:
    the errors go to the alerts and the app's records, not to the log. An app whose desired state is unknown, or whose
    lock is held by a process not seen here, is left as it is, with ``ok: False`` and why.

    Each restart, and each app it could not act on (a start that failed, an error, an app left
    as it is), is alerted (:mod:`adlake.alerts`, grouped per app), the alerts pointing at
    ``origin`` (the supervisor task's dag_id, task_id, run_id, try_number, log_url) when given.

    ``now`` (epoch seconds) is the supervisor's clock for staleness, backoff and the alerts'
    grouping (tests advance it); processes are started and waited for in real time."""
    actions = []
    for spec in registry.APPS.values():
        if spec.runtime != "ops":
            continue
        try:
            with control(settings, spec.name):
                action = _supervise_app(settings, spec.name, time.time() if now is None else now)
        except Exception as error:  # noqa: BLE001 - one app's failure is its own, not the pass's
            text = str(error) if isinstance(error, AppError) else f"{type(error).__name__}: {error}"
            action = {"app": spec.name, "action": "error", "ok": False, "error": text}
            if not isinstance(error, AppError):  # where it failed, not what it read
                trace = "".join(traceback.format_tb(error.__traceback__))
                print(
                    f"[adlake.apps] supervise: {spec.name}: {type(error).__name__}\n{trace}",
                    flush=True,
                )
        try:
            if rotate_log(
                log_path(settings, spec.name), settings.log_max_bytes, settings.log_backups
            ):
                print(f"[adlake.apps] supervise: {spec.name}'s log rotated", flush=True)
        except OSError as error:  # a full disk: the log keeps growing, the pass goes on
            print(f"[adlake.apps] supervise: {spec.name}'s log not rotated: {error}", flush=True)
        if action is not None:
            print(f"[adlake.apps] supervise: {json.dumps(public(action))}", flush=True)
            actions.append(action)
    _alert(settings, actions, time.time() if now is None else now, origin)
    return actions


def _alert(
    settings: Settings, actions: list[dict], now: float, origin: Mapping[str, object] | None
) -> None:
    """Send the alerts of the pass's actions; an alert that cannot be sent is printed, never
    raised: the pass did its work."""
    try:
        from adlake import alerts

        for alert in alerts.app_action_alerts(settings, actions, origin):
            outcome = alerts.send(settings, alert, now=now)
            print(
                f"[adlake.apps] supervise: alert {alert['group']} "
                + ("sent" if outcome["sent"] else f"held back ({outcome['suppressed']})")
                + (f", webhook {outcome['webhook']}" if outcome["webhook"] else ""),
                flush=True,
            )
    except Exception as error:  # noqa: BLE001 - see the docstring
        trace = "".join(traceback.format_tb(error.__traceback__))
        print(
            f"[adlake.apps] supervise: alerts not sent: {type(error).__name__}\n{trace}",
            flush=True,
        )


def _supervise_app(settings: Settings, app: str, now: float) -> dict | None:
    if service.pending(settings, app):
        return None  # an action in progress (act's request): the loop carries it out next
    desired, current, status, restarts, state, why = _observe(settings, app, now)
    left = (
        f"desired state unknown: {desired.reason}"
        if desired.state == UNKNOWN
        else f"running elsewhere: {current.elsewhere}"
        if current is not None and current.pid is None
        else None
    )
    if left is not None:  # nothing here can be sure what to do, or reach the process
        return {
            "app": app,
            "action": "none",
            "ok": False,
            "state": state,
            "why": f"{left}; left as it is",
        }
    action = decide(desired, state)
    if action == "none":
        if desired.state == "running":
            seen = observe_health(settings, restarts, state, now)
            if seen != restarts:
                write_restarts(settings, app, seen)
        return None
    if action == "stop":
        if current is None:
            return None
        result = terminate(settings, app, None, "supervisor: desired stopped")
        return {
            "app": app,
            "action": "stop",
            "ok": True,
            "why": "desired stopped",
            "result": result.to_dict(),
        }
    if action == "wait":
        return {
            "app": app,
            "action": "wait",
            "ok": True,
            "why": why,
            "next_allowed_at": restarts.next_allowed_at,
        }
    # restart: recorded before the start, so that its backoff holds whatever happens next
    error = _last_error(settings, app, current, status)
    restarts = record_restart(settings, restarts, now, why, error)
    unrecorded = _record(settings, app, restarts)
    stopped = terminate(settings, app, None, f"supervisor: {why}") if current is not None else None
    entry = {
        "app": app,
        "action": "restart",
        "why": why,
        "error": error,
        **({"stopped": stopped.to_dict()} if stopped else {}),
    }
    try:
        started = launch(settings, app, desired.trigger, desired.knobs, f"supervisor: {why}")
        entry.update(ok=True, started=dataclasses.asdict(started))
    except AlreadyRunning as running:  # started meanwhile by something that bypasses act()
        entry.update(ok=True, started=running.holder and dataclasses.asdict(running.holder))
    except AppError as failure:
        entry.update(ok=False, start_error=str(failure))
        failed = {**restarts.history[-1], "error": str(failure)}
        restarts = dataclasses.replace(
            restarts, last_error=str(failure), history=[*restarts.history[:-1], failed]
        )
        unrecorded = _record(settings, app, restarts)
    else:
        if unrecorded:  # once more, now that the app runs
            unrecorded = _record(settings, app, restarts)
    if unrecorded:
        # The app runs (or failed to start) either way; what is lost is the backoff's step,
        # until a pass can write the record: said here and in the supervisor's log.
        entry.update(ok=False, record_error=f"restart not recorded, backoff not kept: {unrecorded}")
    entry.update(count=restarts.count, next_allowed_at=restarts.next_allowed_at)
    return entry


def _record(settings: Settings, app: str, restarts: Restarts) -> str | None:
    """Write the restarts record; the error if it could not be written (a full disk)."""
    try:
        write_restarts(settings, app, restarts)
    except OSError as error:
        return str(error)
    return None


def _last_error(
    settings: Settings, app: str, current: Holder | None, status: dict | None
) -> str | None:
    """Why the app went down, as far as it is known: its query's error, how its process ended
    (exit code and error, or no record: killed), or staleness."""
    if status and status.get("state") == "failed" and status.get("error"):
        return str(status["error"])[-2000:]
    if current is not None:
        return None  # stale: the process still runs, nothing failed that it reported
    record = read_json(exit_path(settings, app))
    lock = read_json(lock_path(settings, app)) or {}
    # A run that ended (not killed) wrote its exit record, then blanked its lock record.
    if record and (not lock.get("pid") or record.get("pid") == lock.get("pid")):
        text = f"exited with code {record.get('code')}"
        return f"{text}: {record['error'][-2000:]}" if record.get("error") else text
    return (
        f"pid {lock.get('pid')} ended without an exit record: killed (SIGKILL, OOM killer) "
        "or the machine restarted"
    )


_INTERVAL = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|"
    r"minutes?|h|hours?)\s*$",
    re.IGNORECASE,
)


def interval_s(text: str) -> float:
    """A Spark trigger interval in seconds ("30 seconds", "5 minutes", "500 ms").

    >>> interval_s("5 minutes"), interval_s("30 seconds"), interval_s("500 ms")
    (300.0, 30.0, 0.5)
    """
    match = _INTERVAL.match(text)
    if not match:
        raise ValueError(f"not an interval: {text!r}")
    unit = match.group(2).lower()
    scale = (
        0.001
        if unit.startswith(("ms", "milli"))
        else 60
        if unit.startswith("m")
        else 3600
        if unit.startswith("h")
        else 1
    )
    return float(match.group(1)) * scale
