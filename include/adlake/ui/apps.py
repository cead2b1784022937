"""The "Streaming apps" page: per ops app of the registry, everything :func:`adlake.apps.app_status`
knows (derived state, desired state, lock holder, the listener's status, restarts, last exit, log
path) plus what the page derives from it at ``now``: uptime, age of the last progress and of the
last report, and how to act on it (its DAG, triggers, knobs).

The buttons do not act here: the browser triggers the app's DAG (``app_<name>``) through Airflow's
REST API with the user's own session, so every action is a DAG run with an audit trail.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse

from adlake import apps, registry
from adlake.config import Settings
from adlake.ui.deps import current_settings, page

router = APIRouter()
SettingsDep = Annotated[Settings, Depends(current_settings)]


def _epoch(value: object) -> float | None:
    """Epoch seconds of an ISO timestamp (Spark's progress ``timestamp``) or a number."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _age(now: float, then: float | None) -> float | None:
    return None if then is None else round(max(0.0, now - then), 1)


def app_view(settings: Settings, app: str, now: float) -> dict:
    """What the page shows of ``app``: :func:`adlake.apps.app_status` plus ``uptime_s`` (since the
    lock holder started), ``progress_age_s`` (since the last batch's progress), ``report_age_s``
    (since the status file was written: a batch or an idle heartbeat), and ``actions``."""
    spec = registry.APPS[app]
    info = apps.app_status(settings, app, now=now)
    status = info["status"] or {}
    holder = info["holder"]
    return {
        **info,
        "uptime_s": _age(now, holder["started_at"]) if holder else None,
        "progress_age_s": _age(now, _epoch(status.get("last_batch_at"))),
        "report_age_s": _age(now, _epoch(status.get("written_at"))),
        "dlq_topic": spec.dlq,
        "actions": {
            "dag_id": f"app_{app}",
            "triggers": list(apps.TRIGGERS),
            "knobs": [k.name for k in spec.knobs],
            "buttons": buttons(app, info),
        },
    }


def buttons(app: str, info: dict) -> list[dict]:
    """The page's buttons for ``app`` (``info``: its :func:`adlake.apps.app_status`), each the
    request the browser sends to Airflow's REST API: ``POST <airflow>/<path>`` with ``body``, a
    run of the app's DAG. The conf carries the desired trigger and knobs, so a restart keeps what
    the app runs with (the DAG form's defaults would replace them). ``enabled``: start needs a
    free lock (a start of a running app fails its run); a stopped app that should not run has
    nothing to stop.

    >>> stopped = {"holder": None, "desired": {"state": "stopped", "trigger": "realtime",
    ...                                        "knobs": {"threshold": 50}}}
    >>> [(b["label"], b["enabled"]) for b in buttons("click_surge", stopped)]
    [('start', True), ('stop', False), ('restart', True), ('switch to processing_time', True)]
    >>> buttons("click_surge", stopped)[3]["body"]["conf"]
    {'action': 'restart', 'trigger': 'processing_time', 'threshold': 50}
    """
    desired, holder = info["desired"], info["holder"]
    mode = (holder and holder["mode"]) or desired["trigger"]
    other = next(t for t in apps.TRIGGERS if t != mode)
    dag_id = f"app_{app}"

    def button(label: str, action: str, trigger: str, title: str, enabled: bool = True) -> dict:
        return {
            "label": label,
            "title": title,
            "enabled": enabled,
            "dag_id": dag_id,
            "path": f"api/v2/dags/{dag_id}/dagRuns",
            "body": {
                "logical_date": None,
                "note": f"{label} from the Streaming apps page",
                "conf": {"action": action, "trigger": trigger, **desired["knobs"]},
            },
        }

    return [
        button(
            "start", "start", desired["trigger"], f"start in {desired['trigger']}", holder is None
        ),
        button(
            "stop",
            "stop",
            desired["trigger"],
            "stop gracefully (drain, then SIGKILL)",
            holder is not None or desired["state"] != "stopped",
        ),
        button(
            "restart", "restart", desired["trigger"], f"stop, then start in {desired['trigger']}"
        ),
        button(f"switch to {other}", "restart", other, f"restart in {other}"),
    ]


def apps_status(settings: Settings, now: float | None = None) -> dict:
    """Every ops app of the registry, in registry order."""
    now = time.time() if now is None else now
    return {
        "now": now,
        "apps": [
            app_view(settings, name, now)
            for name, spec in registry.APPS.items()
            if spec.runtime == "ops"
        ],
    }


@router.get("/apps/", include_in_schema=False)
def apps_page() -> FileResponse:
    return page("apps.html")


@router.get("/apps/api/status")
def status(settings: SettingsDep) -> dict:
    return apps_status(settings)
