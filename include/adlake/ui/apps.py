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
        "actions": {"dag_id": f"app_{app}", "triggers": list(apps.TRIGGERS),
                    "knobs": [k.name for k in spec.knobs]},
    }


def apps_status(settings: Settings, now: float | None = None) -> dict:
    """Every ops app of the registry, in registry order."""
    now = time.time() if now is None else now
    return {"now": now, "apps": [app_view(settings, name, now)
                                 for name, spec in registry.APPS.items() if spec.runtime == "ops"]}


@router.get("/apps/", include_in_schema=False)
def apps_page() -> FileResponse:
    return page("apps.html")


@router.get("/apps/api/status")
def status(settings: SettingsDep) -> dict:
    return apps_status(settings)
