"""Per-app status files: written by each streaming app's listener, read by on-call tooling.

One JSON file per app under ``<runtime_dir>/status/<app>.json``, replaced atomically (write to a
temporary file, then rename) so a reader never sees half a file. Standard library only, so
Airflow and the CLI read it without Spark.

    python -m adlake.status            # every app's status as a table
    python -m adlake.status --json

Latency, in two figures (see ``adlake.latency``):

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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter

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
    # From the app's lifecycle (adlake.apps, see with_lifecycle): the state derived from its lock,
    # status and desired state (running, starting, stale, failed, restarting, stopping, stopped),
    # what it should be doing, its pid, and the supervisor's restarts.
    ("app state", "app_state"),
    ("desired", "desired"),
    ("pid", "pid"),
    ("restarts", "restarts"),
]


def status_path(settings: Settings, app: str) -> Path:
    return settings.status_dir / f"{app}.json"


def stop_marker(settings: Settings, app: str) -> Path:
    """The file whose existence asks a running app to stop gracefully (the app deletes it once
    stopped)."""
    return settings.status_dir / f"{app}.stop"


def write_status(settings: Settings, app: str, status: dict, now: float | None = None) -> Path:
    """Replace ``app``'s status file atomically, stamped ``written_at`` = ``now`` (epoch seconds;
    default: the wall clock)."""
    path = status_path(settings, app)
    path.parent.mkdir(parents=True, exist_ok=True)
    written_at = time.time() if now is None else now
    fd, tmp = tempfile.mkstemp(prefix=f".{app}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        json.dump({**status, "app": app, "written_at": written_at}, handle, indent=2, default=str)
    os.replace(tmp, path)
    return path


def read_status(settings: Settings, app: str) -> dict | None:
    try:
        return json.loads(status_path(settings, app).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def read_all(settings: Settings) -> list[dict]:
    if not settings.status_dir.is_dir():
        return []
    out = []
    for path in sorted(settings.status_dir.glob("*.json")):
        status = read_status(settings, path.stem)
        if status is not None:
            out.append(status)
    return out


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
    """``statuses`` with each streaming app's lifecycle added (``adlake.apps.app_status``):
    ``app_state``, ``desired`` (state/trigger), ``pid`` (the lock's holder), ``restarts`` (how
    many, and the last reason) and ``lifecycle`` (everything, for ``--json``). A registry app
    with no status file yet gets a row of its own when it should run or holds its lock."""
    from adlake import apps, registry

    out = [dict(s) for s in statuses]
    known = {s.get("app") for s in out}
    for name, spec in registry.APPS.items():
        if spec.runtime != "ops":
            continue
        info = apps.app_status(settings, name, now=now)
        if name not in known:
            if info["holder"] is None and info["desired"]["state"] == "stopped":
                continue
            out.append({"app": name})
        row = next(s for s in out if s.get("app") == name)
        restarts = info["restarts"]
        row.update(
            app_state=info["state"],
            desired=f"{info['desired']['state']}/{info['desired']['trigger']}",
            pid=info["holder"]["pid"] if info["holder"] else None,
            restarts=(f"{restarts['count']} ({restarts['reason']})" if restarts["count"] else 0),
            lifecycle=info,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.status",
        description="Show every streaming app's status.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print the raw status records")
    args = parser.parse_args(argv)
    settings = load_settings()
    statuses = with_lifecycle(settings, read_all(settings))
    if args.json:
        print(json.dumps(statuses, indent=2))
    elif not statuses:
        print("no app has written a status yet")
    else:
        print(format_table(statuses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
