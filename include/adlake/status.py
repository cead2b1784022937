"""Per-app status files: written by each streaming app's listener, read by the lifecycle and
on-call tooling. The file format only: nothing here knows the lifecycle.

One JSON file per app under ``<runtime_dir>/status/<app>.json``, replaced atomically and durably
(:mod:`adlake.atomic`: a reader, or the machine after a crash, never sees half a file; a write
that fails on a full disk leaves the previous one), and stamped ``written_at``; the
app's stop marker is ``<runtime_dir>/status/<app>.stop``. Standard library only, so Airflow and
the CLI read it without Spark. What the files hold (the listener's figures:
``spark_apps/common/streaming/listener.py``) is shown by ``python -m adlake.apps status``
(``make status``), with each app's lifecycle.
"""

from __future__ import annotations

import time
from pathlib import Path

from adlake import atomic
from adlake.config import Settings


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
    written_at = time.time() if now is None else now
    atomic.write_json(path, {**status, "app": app, "written_at": written_at}, indent=2, default=str)
    return path


def read_status(settings: Settings, app: str) -> dict | None:
    """``app``'s status, or None without one (none yet, unreadable, or not a JSON object)."""
    return atomic.read_json(status_path(settings, app))


def read_all(settings: Settings) -> list[dict]:
    if not settings.status_dir.is_dir():
        return []
    out = []
    for path in sorted(settings.status_dir.glob("*.json")):
        status = read_status(settings, path.stem)
        if status is not None:
            out.append(status)
    return out
