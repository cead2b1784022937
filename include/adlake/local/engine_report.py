"""What the lake engine is doing, for ``make status`` and the Streaming apps page: up since,
resident memory, whether it runs the project's current code, and the operations its sessions
run now.

The client has no py4j, so the running work comes from the engine's own REST API (its Spark UI,
at a free port chosen at each start and kept in the engine's record). Every Spark job a Connect
operation starts carries the tag
``SparkConnect_OperationTag_User_<user>_Session_<session>_Operation_<operation>``: the running
jobs' tags say which operations, of which sessions, compute now (:func:`running_operations`). An
operation between jobs (planning, Delta reading its log) does not show.

The keeper, which runs beside the engine, publishes this every :data:`REPORT_EVERY_S` to
``<runtime>/engine/report.json`` with its restarts (:func:`write_report`); the page reads that
file (:func:`engine_view`), so a web server in another container or process namespace sees the
engine without reaching its process or its port. A report older than :data:`STALE_AFTER_S`
means the keeper is gone. Standard library only.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

from adlake.atomic import write_json
from adlake.config import Settings
from adlake.local.engine_client import engine_dir

REPORT_EVERY_S = 15.0
STALE_AFTER_S = 60.0
OPERATION_TAG = re.compile(r"^SparkConnect_OperationTag_User_.*_Session_(.+)_Operation_(.+)$")


def running_operations(jobs: list[dict]) -> dict:
    """Running Spark jobs (the UI's ``jobs?status=running``) as the Connect operations and
    sessions they belong to; jobs without an operation's tag are the engine's own.

    >>> tag = "SparkConnect_OperationTag_User__Session_{}_Operation_{}"
    >>> running_operations([{"jobTags": [tag.format("s1", "o1")]},
    ...                     {"jobTags": [tag.format("s1", "o1")]},
    ...                     {"jobTags": [tag.format("s2", "o7")]}, {"jobTags": []}])
    {'running_jobs': 4, 'operations': 2, 'sessions': ['s1', 's2']}
    """
    operations = set()
    for job in jobs:
        for tag in job.get("jobTags") or []:
            match = OPERATION_TAG.match(tag)
            if match:
                operations.add(match.groups())
    return {
        "running_jobs": len(jobs),
        "operations": len(operations),
        "sessions": sorted({session for session, _ in operations}),
    }


def _get(url: str, timeout_s: float) -> object:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.load(response)


def running_work(ui_url: str | None, timeout_s: float = 2.0) -> dict:
    """:func:`running_operations` of the engine whose UI is at ``ui_url``; ``work_error`` says
    why not (no UI yet, the UI not answering)."""
    if not ui_url:
        return {"work_error": "the engine's UI address is not known yet"}
    try:
        app = _get(f"{ui_url}/api/v1/applications", timeout_s)[0]["id"]
        jobs = _get(f"{ui_url}/api/v1/applications/{app}/jobs?status=running", timeout_s)
    except (OSError, ValueError, LookupError, TypeError) as error:
        return {"work_error": f"the engine's UI at {ui_url} did not answer: {error}"}
    return running_operations(jobs)


def report_path(settings: Settings) -> Path:
    return engine_dir(settings) / "report.json"


def write_report(settings: Settings, status: dict, restarts: dict) -> None:
    """Publish the engine's ``status`` (:meth:`adlake.local.engine.LakeEngine.status`) and the
    keeper's ``restarts`` (count, last) as of now."""
    write_json(report_path(settings), {**status, "restarts": restarts, "reported_at": time.time()})


def engine_view(settings: Settings, now: float | None = None) -> dict | None:
    """The engine as the page shows it, from the keeper's last report: ``state`` is ``running``,
    ``stopped`` (stopped by ``down``, or never started), ``down`` (a report saying the JVM does
    not run: between a death and its restart) or ``not reporting`` (no report for
    :data:`STALE_AFTER_S`: the keeper is gone). None when the lake does not run on an engine.

    >>> from adlake.config import load_settings
    >>> engine_view(load_settings({"ADLAKE_RUNTIME_DIR": "/nonexistent"}))["state"]
    'stopped'
    >>> engine_view(load_settings({"ADLAKE_LAKE_ENGINE": "local"})) is None
    True
    """
    if settings.lake_engine != "connect":
        return None
    now = time.time() if now is None else now
    try:
        report = json.loads(report_path(settings).read_text())
    except (OSError, ValueError):
        return {"state": "stopped", "port": settings.lake_engine_port}
    age = now - float(report.get("reported_at") or 0)
    if report.get("stopped_at"):
        state = "stopped"
    elif age > STALE_AFTER_S:
        state = "not reporting"
    else:
        state = "running" if report.get("running") else "down"
    up_since = report.get("up_since")
    return {
        **report,
        "state": state,
        "report_age_s": round(age, 1),
        "uptime_s": round(now - up_since, 1) if state == "running" and up_since else None,
    }
