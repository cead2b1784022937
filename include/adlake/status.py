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

import logging
import math
import time
from pathlib import Path

from adlake import atomic
from adlake.config import Settings

log = logging.getLogger(__name__)


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
    """``app``'s status, or None without one (none yet, unreadable, or not a JSON object).

    Its ``written_at``, when present, is a finite number (epoch seconds) whatever the file holds:
    one of another type (text, ``true``, an object) or not finite (``NaN``, ``Infinity``) is
    dropped from the record, with a warning, and the rest of the record kept. A reader treats a
    missing ``written_at`` as an unknown report time (the supervisor: no report of the current
    run yet), so ``float(status.get("written_at", 0))`` never fails on a status read here.

    >>> written_at({"written_at": 1795680000.5}), written_at({"written_at": "yesterday"})
    (1795680000.5, None)
    """
    status = atomic.read_json(status_path(settings, app))
    if status is not None and "written_at" in status and written_at(status) is None:
        log.warning(
            "status of %s: written_at %r is not a number of epoch seconds: left out",
            app,
            status.pop("written_at"),
        )
    return status


def written_at(status: dict) -> float | None:
    """The status's ``written_at`` if it is a finite number (not a bool), else None."""
    value = status.get("written_at")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an integer too large for a float
        return None


def read_all(settings: Settings) -> list[dict]:
    """Every app's status (:func:`read_status`), by app name."""
    if not settings.status_dir.is_dir():
        return []
    out = []
    for path in sorted(settings.status_dir.glob("*.json")):
        status = read_status(settings, path.stem)
        if status is not None:
            out.append(status)
    return out
