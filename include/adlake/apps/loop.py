"""The reconcile loop: ``python -m adlake.apps loop``, the process that starts, stops and
supervises the streaming apps when they live in a service of their own (``ADLAKE_APPS_HOST=
service``: the compose service ``streaming-apps``; :mod:`adlake.apps.service`).

Every ``app_loop_interval_s`` (10 s) it carries out the pending action requests, oldest first
(:func:`adlake.apps.supervisor.carry_out`, the second half of ``act``), then runs the supervise
pass (:func:`adlake.apps.supervisor.reconcile`: the same decisions, backoff, records and alerts
as the ``apps_supervisor`` DAG's pass with ``apps_host`` ``scheduler``), and writes its heartbeat
(``apps/loop.json``).

* **One loop at a time.** It holds ``locks/apps-loop.lock`` for its whole life, as an app holds
  its own (:func:`adlake.apps.launcher.hold`); a second loop exits with status 75 naming the
  first.
* **The apps outlive it.** Each app runs in a session of its own, holding its own lock, and does
  not inherit the loop's: SIGTERM or SIGINT ends the loop after the step it is in (a request, a
  pass), leaving the apps running; ``kill -9`` ends it at once, the apps the same.
* **A new loop adopts what runs.** An app's lock says whether it runs and which process it is,
  whoever started it: the first pass finds it running and leaves it (a start would be refused by
  its lock anyway). What a dead loop was acting on (a request it had taken) is answered as
  interrupted, its desired state standing, and reconciled by the pass.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import threading
import time
import traceback

from adlake.apps import service
from adlake.apps.launcher import LOCK_HELD, LockHeld, clear_holder, hold
from adlake.apps.process import control, holder
from adlake.apps.state import AppError, iso_time
from adlake.apps.supervisor import carry_out, reconcile
from adlake.config import Settings
from adlake.processes import identity
from adlake.registry import APPS

# Answers nobody read (their callers died) are removed after this long.
ANSWER_KEPT_S = 3600


def say(text: str) -> None:
    print(f"[adlake.apps] loop {iso_time(time.time())}: {text}", flush=True)


class Loop:
    """The loop's state between steps: its heartbeat record and whether it should stop."""

    def __init__(self, settings: Settings, stop: threading.Event) -> None:
        self.settings, self.stop = settings, stop
        self.record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": time.time(),
            "interval_s": settings.app_loop_interval_s,
            "busy": None,
            "last_pass_at": None,
            "last_pass": [],
            "adopted": {},
            **identity(),
        }

    def beat(self, **changes: object) -> None:
        self.record.update(changes, heartbeat_at=time.time())
        try:
            service.write_heartbeat(self.settings, self.record)
        except OSError as error:  # a full disk: the loop goes on, its health check will say
            say(f"heartbeat not written: {error}")

    def adopt(self) -> None:
        """Say which apps run already: the first pass leaves them running."""
        adopted = {}
        for name, spec in APPS.items():
            if spec.runtime == "ops" and (current := holder(self.settings, name)) is not None:
                adopted[name] = dataclasses.asdict(current)
                say(f"adopted {name}, already running: {current.describe()}")
        self.beat(adopted=adopted)
        for request in service.claimed(self.settings):
            error = AppError(
                f"interrupted: the loop acting on it (pid {self.record['pid']}'s predecessor) "
                "ended; its desired state stands and the supervise pass reconciles the app"
            )
            service.answer(self.settings, request, error=error)
            say(f"answered request {request['id']} on {request['app']}: {error}")

    def serve_requests(self) -> None:
        for request in service.claim(self.settings):  # each answered, even when stopping
            app, action = request["app"], request["action"]
            age = time.time() - float(request.get("requested_at") or 0)
            if age > self.settings.app_request_timeout_s:
                error = AppError(
                    f"expired: requested {age:.0f}s ago, over app_request_timeout_s "
                    f"({self.settings.app_request_timeout_s}s), so its caller has given up; not "
                    "acted on: the desired state it recorded stands and the supervise pass "
                    "reconciles the app with it"
                )
                service.answer(self.settings, request, error=error)
                say(f"request {request['id']}: {action} {app}: {error}")
                continue
            self.beat(busy={"with": f"{action} {app}", "since": time.time(), "request": True})
            say(f"request {request['id']}: {action} {app} ({request.get('reason')})")
            try:
                with control(self.settings, app):
                    summary = carry_out(
                        self.settings,
                        app,
                        action,
                        service.desired_of(request),
                        str(request.get("reason") or "user"),
                    )
                service.answer(self.settings, request, summary=summary)
                say(f"request {request['id']}: done: {summary['result']}")
            except Exception as error:  # noqa: BLE001 - the caller gets it; the loop goes on
                if not isinstance(error, AppError):
                    say(f"request {request['id']}: {traceback.format_exc()}")
                service.answer(self.settings, request, error=error)
                say(f"request {request['id']}: failed: {error}")
            finally:
                self.beat(busy=None)

    def supervise(self) -> None:
        self.beat(busy={"with": "the supervise pass", "since": time.time(), "request": False})
        try:
            actions = reconcile(self.settings)
        except Exception:  # noqa: BLE001 - reconcile keeps one app's error its own; the rest
            say(f"supervise pass failed: {traceback.format_exc()}")
            actions = self.record["last_pass"]
        self.beat(busy=None, last_pass_at=time.time(), last_pass=actions)

    def step(self) -> None:
        """One turn: the requests, the pass, the old answers."""
        self.serve_requests()
        if not self.stop.is_set():
            self.supervise()
        service.prune(self.settings, ANSWER_KEPT_S)


def run(settings: Settings, stop: threading.Event | None = None) -> int:
    """Run the loop until ``stop`` is set (by SIGTERM or SIGINT when run from the main thread);
    the exit status: 0, or :data:`LOCK_HELD` when another loop runs."""
    stop = threading.Event() if stop is None else stop
    lock = service.loop_lock_path(settings)
    try:
        fd, record = hold(lock, "loop", [sys.executable, "-m", "adlake.apps", "loop"])
    except LockHeld as held:
        say(f"not starting: another loop runs ({held}); one loop at a time")
        return LOCK_HELD
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda signum, frame: stop.set())
    loop = Loop(settings, stop)
    try:
        say(
            f"pid {os.getpid()} holds {lock}; every {settings.app_loop_interval_s}s: requests "
            f"under {service.requests_dir(settings)}, then the supervise pass"
        )
        loop.adopt()
        while not stop.is_set():
            try:
                loop.step()
            except Exception:  # noqa: BLE001 - a damaged file, a full disk: try again next turn
                say(f"turn failed: {traceback.format_exc()}")
            stop.wait(settings.app_loop_interval_s)
        say("stopping; the apps keep running, the next loop adopts them")
        loop.beat(busy=None, stopped_at=time.time())
    finally:
        clear_holder(fd, record)
        os.close(fd)
    return 0
