"""The lifecycle's command line: every streaming app's status with its lifecycle, and one app in
the foreground. Every app of the registry (``APPS`` of runtime ``ops``), none named here.

    python -m adlake.apps status            # make status: every app, one line each
    python -m adlake.apps status --json     # the status files with each app's lifecycle
    python -m adlake.apps run click_surge --threshold 50   # make app APP=click_surge ARGS=...
    python -m adlake.apps loop              # the reconcile loop (the compose streaming-apps service)
    python -m adlake.apps loop --check      # does a loop run and keep up (exit status 1 if not)
    python -m adlake.apps loop --stop       # end the running loop; the apps keep running

**status** joins each app's status file (``adlake.status``, written by its listener) with what
the lifecycle knows of it (:func:`adlake.apps.app_status`). Latency, in two figures (see
``adlake.latency``):

* ``e2e p50``/``e2e p99`` (``e2e_latency``): measured, output record's Kafka timestamp minus the
  ``source_kafka_ts`` it carries, over the newest output records of the last minute; the app's
  listener measures it every 15 s and keeps an hour of it (``latency_history``).
* ``bound p50``/``bound p99`` (``latency_p50_ms``…, also ``batch_latency_bound``): an upper bound
  per batch (commit time minus the source timestamps seen). In Real-Time Mode a batch is the
  whole checkpoint interval, so it is about that interval whatever the real latency.

``dlq/int`` (``dlq_rows_last_interval``) is how many rows the app's DLQ topic grew by between the
listener's last two probes (``dlq_interval_s`` apart; ``dlq_total`` is its end offsets' sum);
empty on a run's first probe and when the topic was recreated.

``waiting`` summarizes ``waiting_in_state``: rows in state and the watermark that closes them
all, which only advances as input arrives.

**run** replaces this process with the app's module under the ops interpreter
(``settings.ops_python``), in the environment :func:`adlake.apps.start` gives an app, in the
foreground: Ctrl-C or SIGTERM stops it gracefully. It takes the app's lock and its checkpoint's
as a managed app does, so it is refused while the app runs, and while it runs the lifecycle sees
it as the app: its card shows it, and a supervisor whose desired state is stopped stops it.

**loop** runs the reconcile loop (:mod:`adlake.apps.loop`) in the foreground until SIGTERM or
Ctrl-C, which leave the apps running.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from adlake import registry
from adlake.apps.process import app_env
from adlake.apps.state import AppStartError, app_spec
from adlake.apps.supervisor import app_status
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.status import read_all

COLUMNS = [
    ("app", "app"),
    ("state", "state"),
    ("mode", "mode"),
    ("last batch", "last_batch_at"),
    ("age s", "age_s"),
    ("in rows/s", "input_rows_per_s"),
    ("out rows/s", "processed_rows_per_s"),
    ("batch ms", "batch_duration_ms"),
    ("state rows", "state_rows"),
    ("state MB", "state_memory_mb"),
    ("watermark", "watermark"),
    ("late rows", "late_rows"),
    # rows sent to the app's DLQ topic since the previous probe (about 15 s; dlq_interval_s)
    ("dlq/int", "dlq_rows_last_interval"),
    # measured end to end from the output topic (e2e_latency), then the per-batch upper bound
    ("e2e p50", "e2e_p50_ms"),
    ("e2e p99", "e2e_p99_ms"),
    ("e2e n", "e2e_samples"),
    ("bound p50", "latency_p50_ms"),
    ("bound p99", "latency_p99_ms"),
    # what waits in state: rows and the watermark at which all of them have closed
    ("waiting", "waiting"),
    # From the app's lifecycle (see with_lifecycle): the state derived from its lock, status and
    # desired state (running, starting, stale, failed, restarting, stopping, stopped), what it
    # should be doing, its pid, and the supervisor's restarts.
    ("app state", "app_state"),
    ("desired", "desired"),
    ("pid", "pid"),
    ("restarts", "restarts"),
]


def ops_apps() -> list[str]:
    """The apps the lifecycle manages: every registry app of the ops runtime, in order."""
    return [a.name for a in registry.ops_apps()]


def format_table(statuses: list[dict], now: float | None = None) -> str:
    """The statuses as a table; ``age s`` is ``now`` (epoch seconds; default: the wall clock)
    minus each status's ``written_at``."""
    now = time.time() if now is None else now
    rows = [[title for title, _ in COLUMNS]]
    for status in statuses:
        view = dict(status)
        view["age_s"] = round(now - status["written_at"], 1) if "written_at" in status else None
        e2e = status.get("e2e_latency") or {}
        view.update(
            e2e_p50_ms=e2e.get("p50_ms"),
            e2e_p99_ms=e2e.get("p99_ms"),
            e2e_samples=e2e.get("samples"),
            waiting=_waiting_cell(status),
        )
        rows.append(["-" if view.get(key) is None else str(view.get(key)) for _, key in COLUMNS])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows
    )


def _waiting_cell(status: dict) -> str | None:
    """``waiting_in_state`` in a cell: ``rows`` and, when rows wait, ``until wm <time>``: the
    watermark at which all of them have closed (it moves only as input arrives)."""
    waiting = status.get("waiting_in_state")
    if not waiting or waiting.get("rows") is None:
        return None
    closes = waiting.get("closes_at")
    if not waiting["rows"] or not closes:
        return str(waiting["rows"])
    return f"{waiting['rows']} until wm {closes[11:19]}"


def with_lifecycle(
    settings: Settings, statuses: list[dict], now: float | None = None
) -> list[dict]:
    """``statuses`` with each streaming app's lifecycle added (:func:`adlake.apps.app_status`):
    ``app_state``, ``desired`` (state/trigger), ``pid`` (the lock's holder), ``restarts`` (how
    many, and the last reason) and ``lifecycle`` (everything, for ``--json``). A registry app
    with no status file yet gets a row of its own when it should run or holds its lock."""
    out = [dict(s) for s in statuses]
    known = {s.get("app") for s in out}
    for name in ops_apps():
        info = app_status(settings, name, now=now)
        if name not in known:
            if info["holder"] is None and info["desired"]["state"] == "stopped":
                continue
            out.append({"app": name})
        row = next(s for s in out if s.get("app") == name)
        restarts = info["restarts"]
        row.update(
            app_state=info["state"],
            desired=f"{info['desired']['state']}/{info['desired']['trigger']}",
            # a holder not seen here (another PID namespace or host) has no pid of ours
            pid=(info["holder"]["pid"] or "elsewhere") if info["holder"] else None,
            restarts=(f"{restarts['count']} ({restarts['reason']})" if restarts["count"] else 0),
            lifecycle=info,
        )
    return out


def status(settings: Settings, as_json: bool = False) -> str:
    """What ``status`` prints: the table (or JSON) of every status file and app."""
    statuses = with_lifecycle(settings, read_all(settings))
    if as_json:
        return json.dumps(statuses, indent=2)
    return format_table(statuses) if statuses else "no app has written a status yet"


def foreground_argv(settings: Settings, app: str, args: list[str]) -> list[str]:
    """The command ``run`` replaces itself with: the ops interpreter running the app's module.

    >>> from adlake.config import load_settings
    >>> argv = foreground_argv(load_settings({}), "click_surge", ["--threshold", "50"])
    >>> argv[1:]
    ['-m', 'spark_apps.ops.click_surge', '--threshold', '50']
    """
    return [str(settings.ops_python), "-m", app_spec(app).module, *args]


def run(settings: Settings, app: str, args: list[str]) -> None:
    """Replace this process with ``app`` in the foreground (module docstring)."""
    argv = foreground_argv(settings, app, args)
    if not os.access(argv[0], os.X_OK):
        raise AppStartError(
            f"the ops interpreter {argv[0]} does not exist: run `make setup`, or set "
            "ADLAKE_OPS_PYTHON"
        )
    os.chdir(REPO_ROOT)
    os.execve(argv[0], argv, app_env(settings))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.apps",
        description="The streaming apps' lifecycle: every app's status, one app in the "
        "foreground, or the reconcile loop.",
        formatter_class=HelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    shown = commands.add_parser(
        "status",
        help="every app's status and lifecycle, one line each",
        formatter_class=HelpFormatter,
    )
    shown.add_argument("--json", action="store_true", help="print the raw status records")
    fg = commands.add_parser(
        "run",
        help="one app in the foreground (Ctrl-C stops it gracefully)",
        formatter_class=HelpFormatter,
    )
    fg.add_argument("app", choices=ops_apps(), help="the registry app")
    fg.add_argument("args", nargs=argparse.REMAINDER, help="the app's flags (see its --help)")
    looped = commands.add_parser(
        "loop",
        help="the reconcile loop: action requests and the supervise pass, every "
        "ADLAKE_APP_LOOP_INTERVAL_S, until SIGTERM (the apps keep running)",
        formatter_class=HelpFormatter,
    )
    looped.add_argument(
        "--check",
        action="store_true",
        help="do not run it: say whether a loop runs and keeps up (exit status 1 if not)",
    )
    looped.add_argument(
        "--stop",
        action="store_true",
        help="do not run it: ask the running loop to end (SIGTERM) and wait until it has; the "
        "apps keep running (the streaming-apps service then starts a new loop, which adopts "
        "them)",
    )
    args = parser.parse_args(argv)
    settings = load_settings()
    if args.command == "run":
        run(settings, args.app, args.args)
    if args.command == "loop":
        from adlake.apps import loop, service

        if args.stop:
            print(f"[adlake.apps] {service.stop_loop(settings)}")
            return 0
        if not args.check:
            return loop.run(settings)
        health = service.loop_health(settings)
        print(json.dumps({k: health[k] for k in ("ok", "why")}))
        return 0 if health["ok"] else 1
    print(status(settings, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
