"""Per-app status files: written by each streaming app's listener, read by on-call tooling.

One JSON file per app under ``<runtime_dir>/status/<app>.json``, replaced atomically (write to a
temporary file, then rename) so a reader never sees half a file. Standard library only, so
Airflow and the CLI read it without Spark.

    python -m adlake.status            # every app's status as a table
    python -m adlake.status --json
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
    ("app", "app"), ("state", "state"), ("mode", "mode"), ("last batch", "last_batch_at"),
    ("age s", "age_s"), ("in rows/s", "input_rows_per_s"), ("out rows/s", "processed_rows_per_s"),
    ("batch ms", "batch_duration_ms"), ("state rows", "state_rows"),
    ("state MB", "state_memory_mb"), ("watermark", "watermark"), ("late rows", "late_rows"),
    ("lat p50", "latency_p50_ms"), ("lat p95", "latency_p95_ms"), ("lat p99", "latency_p99_ms"),
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
        json.dump({**status, "app": app, "written_at": written_at}, handle, indent=2,
                  default=str)
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
        rows.append(["-" if view.get(key) is None else str(view.get(key)) for _, key in COLUMNS])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adlake.status",
                                     description="Show every streaming app's status.",
                                     formatter_class=HelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the raw status records")
    args = parser.parse_args(argv)
    statuses = read_all(load_settings())
    if args.json:
        print(json.dumps(statuses, indent=2))
    elif not statuses:
        print("no app has written a status yet")
    else:
        print(format_table(statuses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
