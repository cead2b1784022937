"""The apps' processes in a service of their own (``settings.apps_host == "service"``, the compose
service ``streaming-apps``): how an action reaches the reconcile loop (:mod:`adlake.apps.loop`)
and how its caller learns the outcome, and how anyone tells whether the loop runs.

With ``apps_host`` ``scheduler`` (``make up``), whoever acts starts and stops the apps itself:
the app's DAG task, the ``apps_supervisor`` DAG's pass. With ``service``, only the loop does, so
that the apps' drivers live beside it rather than in the Airflow scheduler's container, and a
scheduler restart does not touch them. :func:`adlake.apps.act` then splits in two, the lifecycle
code unchanged on each side:

1. the caller (the app's DAG task), under the app's control lock, records the desired state as
   ``act`` always does (:func:`adlake.apps.supervisor.record_intent`: the same checks, a start
   of a running app refused) and writes a request (:func:`submit`), atomically;
2. the loop takes the request by renaming it (:func:`claim`: the acknowledgement), carries it
   out under the control lock (:func:`adlake.apps.supervisor.carry_out`, the other half of
   ``act``) and writes the answer: ``act``'s summary, or the error (:func:`answer`);
3. the caller waits (:func:`await_answer`): at most ``app_request_timeout_s`` for the loop to
   take the request, printing its progress, then withdraws it (a removal that fails once the
   loop has it) and fails naming the service. Once taken, it waits for the answer while the loop
   runs, at most :func:`action_bound_s`.

The desired state is recorded before the loop is asked: a request the loop never takes (the
service is down, its caller gave up or died) leaves it, and the loop's supervise pass reconciles
the app with it when the loop runs again. The pass leaves an app with a pending request alone:
the request is an action in progress, as ``act`` under the control lock is. A request older
than ``app_request_timeout_s`` when the loop sees it is answered ``expired`` and not acted on:
its caller has given up by then.

Files under the runtime directory::

    apps/requests/<app>.<id>.request.json   an action asked for (id: UTC time, pid, random)
    apps/requests/<app>.<id>.claimed.json   the same, taken by the loop; removed once answered
    apps/requests/<app>.<id>.answer.json    the outcome; removed by the caller that reads it
    apps/loop.json                          the loop's heartbeat: who, since when, what it is
                                            doing, its last pass
    locks/apps-loop.lock                    held by the loop for its whole life (one at a time)
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

from adlake import atomic, registry
from adlake.apps import state
from adlake.apps.process import LEFTOVER_GRACE_S, LOCK_TIMEOUT_S, lock_holder
from adlake.apps.state import AppError, Desired, Holder, iso_time
from adlake.config import Settings

# The compose service that runs the loop, named in every message that asks for it.
SERVICE = "streaming-apps"
# How often a waiting caller prints that it still waits.
PROGRESS_EVERY_S = 10.0


def requests_dir(settings: Settings) -> Path:
    return settings.apps_dir / "requests"


def loop_lock_path(settings: Settings) -> Path:
    return settings.locks_dir / "apps-loop.lock"


def heartbeat_path(settings: Settings) -> Path:
    return settings.apps_dir / "loop.json"


def _path(settings: Settings, app: str, request_id: str, kind: str) -> Path:
    return requests_dir(settings) / f"{app}.{request_id}.{kind}.json"


def action_bound_s(settings: Settings) -> float:
    """The longest one action on one app may take in the loop: the control lock's wait (a drain
    and two lock timeouts), a stop (the drain, the kill, the leftovers' grace) and a start (the
    leftovers' grace, the lock timeout, the settling), with a margin."""
    return 3 * settings.app_drain_timeout_s + 4 * LOCK_TIMEOUT_S + 2 * LEFTOVER_GRACE_S + 60


def loop_stale_after_s(settings: Settings) -> float:
    """How old the loop's heartbeat may be while it is not acting: three intervals and 30 s."""
    return 3 * settings.app_loop_interval_s + 30


# -- the caller's side -----------------------------------------------------------------------------


def submit(settings: Settings, app: str, action: str, desired: Desired, reason: str) -> str:
    """Write a request for ``action`` on ``app`` with the desired state just recorded; its id."""
    now = time.time()
    request_id = (
        time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
        + f"{now % 1:.3f}"[1:].replace(".", "")
        + f"Z-{os.getpid()}-{secrets.token_hex(3)}"
    )
    atomic.write_json(
        _path(settings, app, request_id, "request"),
        {
            "id": request_id,
            "app": app,
            "action": action,
            "desired": dataclasses.asdict(desired),
            "reason": reason,
            "requested_at": now,
            "requested_by": {"host": socket.gethostname(), "pid": os.getpid()},
        },
        indent=2,
        default=str,
    )
    return request_id


def pending(settings: Settings, app: str, now: float | None = None) -> bool:
    """Whether a request on ``app`` waits for the loop: one written within
    ``app_request_timeout_s``. An older one (its caller was killed before it could withdraw it)
    is never acted on (the loop answers it ``expired``), so it holds nothing back."""
    now = time.time() if now is None else now
    for path in requests_dir(settings).glob(f"{app}.*.request.json"):
        try:
            if now - path.stat().st_mtime <= settings.app_request_timeout_s:
                return True
        except FileNotFoundError:
            continue  # taken or withdrawn meanwhile
    return False


def await_answer(
    settings: Settings,
    app: str,
    request_id: str,
    say: Callable[[str], None] = print,
) -> dict:
    """The answer to request ``request_id``: ``act``'s summary, or the error it raised, raised
    here (module docstring, step 3)."""
    request = _path(settings, app, request_id, "request")
    answered = _path(settings, app, request_id, "answer")
    started = time.monotonic()
    deadline, said = started + settings.app_request_timeout_s, started
    while request.exists() and not answered.exists():
        now = time.monotonic()
        if now >= deadline:
            try:
                request.unlink()  # withdrawn: the loop never acts on it
            except FileNotFoundError:
                break  # taken meanwhile
            raise AppError(
                f"the {SERVICE} service did not take the request to {_what(request_id, app)} "
                f"within {settings.app_request_timeout_s}s: {loop_health(settings)['why']}. "
                f"The request is withdrawn; the desired state it recorded stands, and the "
                f"{SERVICE} service's loop acts on it once it runs (docker compose up -d "
                f"{SERVICE}; its log: docker compose logs {SERVICE})"
            )
        if now - said >= PROGRESS_EVERY_S:
            say(
                f"[adlake.apps] waiting for the {SERVICE} service to take the request to "
                f"{_what(request_id, app)} ({now - started:.0f}s)"
            )
            said = now
        time.sleep(0.1)
    taken = time.monotonic()
    deadline, gone_since = taken + action_bound_s(settings), None
    while not answered.exists():
        now = time.monotonic()
        if lock_holder(loop_lock_path(settings), timeout_s=0.5) is None:
            gone_since = gone_since or now
            # a new loop answers what the old one had taken, as it starts: give it a moment
            if now - gone_since >= 10 and not answered.exists():
                raise AppError(
                    f"the {SERVICE} service's loop ended while acting on the request to "
                    f"{_what(request_id, app)}; the desired state it recorded stands, and the "
                    f"next loop reconciles the app with it (docker compose logs {SERVICE})"
                )
        else:
            gone_since = None
        if now >= deadline:
            raise AppError(
                f"the {SERVICE} service took the request to {_what(request_id, app)} but has "
                f"not answered within {action_bound_s(settings):.0f}s; see its log (docker "
                f"compose logs {SERVICE}) and the app's ({state.log_path(settings, app)})"
            )
        if now - said >= PROGRESS_EVERY_S:
            say(
                f"[adlake.apps] the {SERVICE} service is acting on the request to "
                f"{_what(request_id, app)} ({now - taken:.0f}s)"
            )
            said = now
        time.sleep(0.1)
    record = atomic.read_json(answered) or {}
    answered.unlink(missing_ok=True)
    if record.get("error"):
        raise _error(app, record["error"])
    return record["summary"]


def _what(request_id: str, app: str) -> str:
    return f"act on {app} (request {request_id})"


# -- the loop's side -------------------------------------------------------------------------------


def claim(settings: Settings) -> list[dict]:
    """Take every pending request, oldest first: each renamed from ``request`` to ``claimed``
    (what its caller sees as the acknowledgement). A request withdrawn meanwhile is skipped; one
    that cannot be read is answered with the error at once."""
    found = []
    for path in requests_dir(settings).glob("*.request.json"):
        taken = path.with_name(path.name.removesuffix(".request.json") + ".claimed.json")
        try:
            os.replace(path, taken)
        except FileNotFoundError:
            continue  # withdrawn by its caller
        record = atomic.read_json(taken)
        if not record or not {"id", "app", "action", "desired"} <= set(record):
            app, request_id = taken.name.removesuffix(".claimed.json").split(".", 1)
            answer(
                settings,
                {"app": app, "id": request_id},
                error=AppError(f"the request {taken} cannot be read"),
            )
            continue
        found.append(record)
    return sorted(found, key=lambda r: float(r.get("requested_at") or 0))


def claimed(settings: Settings) -> list[dict]:
    """The requests a loop had taken and not answered (it died acting on them)."""
    out = []
    for path in sorted(requests_dir(settings).glob("*.claimed.json")):
        app, request_id = path.name.removesuffix(".claimed.json").split(".", 1)
        out.append({**(atomic.read_json(path) or {}), "app": app, "id": request_id})
    return out


def desired_of(request: dict) -> Desired:
    """The desired state a request was written with."""
    return Desired(**request["desired"])


def answer(
    settings: Settings, request: dict, summary: dict | None = None, error: Exception | None = None
) -> None:
    """Answer ``request`` with ``act``'s summary or the error it raised; the claim goes."""
    app, request_id = request["app"], request["id"]
    atomic.write_json(
        _path(settings, app, request_id, "answer"),
        {
            "id": request_id,
            "app": app,
            "answered_at": time.time(),
            "summary": summary,
            "error": None if error is None else _error_record(error),
        },
        indent=2,
        default=str,
    )
    _path(settings, app, request_id, "claimed").unlink(missing_ok=True)


def prune(settings: Settings, older_than_s: float, now: float | None = None) -> list[Path]:
    """Remove answers older than ``older_than_s`` (their callers died before reading them)."""
    now = time.time() if now is None else now
    gone = []
    for path in requests_dir(settings).glob("*.answer.json"):
        try:
            if now - path.stat().st_mtime > older_than_s:
                path.unlink()
                gone.append(path)
        except FileNotFoundError:
            continue
    return gone


def _error_record(error: Exception) -> dict:
    record = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, state.AlreadyRunning) and error.holder is not None:
        record["holder"] = dataclasses.asdict(error.holder)
    return record


_ERRORS = {
    cls.__name__: cls
    for cls in (
        state.AppError,
        state.AppStartError,
        state.AppStopError,
        state.InvalidRequest,
        state.Busy,
    )
}


def _error(app: str, record: dict) -> Exception:
    """The error the loop answered with, as the caller's own (an unexpected one as AppError)."""
    kind, message = record.get("type"), str(record.get("message"))
    if kind == "AlreadyRunning":
        holder = record.get("holder")
        return state.AlreadyRunning(app, Holder(**holder) if holder else None)
    if kind in _ERRORS:
        return _ERRORS[kind](message)
    return AppError(f"the {SERVICE} service failed acting on {app}: {kind}: {message}")


# -- is the loop there ---------------------------------------------------------------------------


def write_heartbeat(settings: Settings, record: dict) -> None:
    atomic.write_json(heartbeat_path(settings), record, indent=2, default=str)


def loop_health(settings: Settings, now: float | None = None) -> dict:
    """Whether the reconcile loop runs and keeps up: ``ok``, ``why`` and its heartbeat
    (``loop``). Not ok when nothing holds its lock, when it holds it but has written no
    heartbeat, when it has been acting on one step (a request, a pass) for longer than that
    step may take, or when, not acting, it has not written its heartbeat for
    :func:`loop_stale_after_s`."""
    now = time.time() if now is None else now
    current = lock_holder(loop_lock_path(settings), timeout_s=0.5)
    record = atomic.read_json(heartbeat_path(settings)) or {}
    if current is None:
        last = record.get("heartbeat_at")
        seen = f"; its last heartbeat was at {iso_time(last)}" if last else ""
        why = f"no reconcile loop runs (nothing holds {loop_lock_path(settings)}){seen}"
        return {"ok": False, "why": why, "loop": record or None}
    beat, busy = record.get("heartbeat_at"), record.get("busy")
    if not isinstance(beat, (int, float)):
        return {
            "ok": False,
            "why": "the loop holds its lock but has written no heartbeat yet",
            "loop": record or None,
        }
    if busy:
        bound = action_bound_s(settings) * (1 if busy.get("request") else _ops_apps())
        if now - float(busy["since"]) > bound:
            why = (
                f"the loop has been busy with {busy.get('with')} since "
                f"{iso_time(busy['since'])}, over the {bound:.0f}s it may take: stuck"
            )
            return {"ok": False, "why": why, "loop": record}
        return {"ok": True, "why": f"busy with {busy.get('with')}", "loop": record}
    limit = loop_stale_after_s(settings)
    if now - beat > limit:
        why = f"the loop's last heartbeat was {now - beat:.0f}s ago (limit {limit:.0f}s)"
        return {"ok": False, "why": why, "loop": record}
    return {"ok": True, "why": f"heartbeat {now - beat:.0f}s ago", "loop": record}


def check_loop(settings: Settings) -> dict:
    """:func:`loop_health`, raising :class:`AppError` naming the service when it is not ok."""
    health = loop_health(settings)
    if not health["ok"]:
        raise AppError(
            f"the {SERVICE} service's reconcile loop is not keeping the apps: {health['why']}; "
            f"restart it (docker compose up -d {SERVICE}) and see its log "
            f"(docker compose logs {SERVICE})"
        )
    return health


def stop_loop(settings: Settings, timeout_s: float | None = None) -> str:
    """Ask the running loop to end (SIGTERM: it finishes the step it is in) and wait until its
    lock is free, at most ``timeout_s`` (:func:`action_bound_s`); what happened, or
    :class:`AppError` when no loop runs here or it did not end in time. The apps keep running."""
    lock = loop_lock_path(settings)
    current = lock_holder(lock)
    if current is None:
        return f"no reconcile loop runs (nothing holds {lock})"
    if current.pid is None:
        raise AppError(
            f"the reconcile loop runs where it cannot be signalled from here ({current.elsewhere})"
            f": run this in its container (docker compose exec {SERVICE} python -m adlake.apps "
            "loop --stop)"
        )
    os.kill(current.pid, signal.SIGTERM)
    bound = action_bound_s(settings) if timeout_s is None else timeout_s
    deadline = time.monotonic() + bound
    while lock_holder(lock, timeout_s=0.5) is not None:
        if time.monotonic() >= deadline:
            raise AppError(
                f"the reconcile loop (pid {current.pid}) has not ended {bound:.0f}s after SIGTERM"
            )
        time.sleep(0.1)
    return f"the reconcile loop (pid {current.pid}) has ended; the apps keep running"


def _ops_apps() -> int:
    return max(1, len(registry.ops_apps()))
