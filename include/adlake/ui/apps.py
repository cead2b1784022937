"""The "Streaming apps" page: per ops app of the registry, everything :func:`adlake.apps.app_status`
knows (derived state, desired state, lock holder, the listener's status, restarts, last exit, log
path) plus what the page derives from it at ``now``: uptime, age of the last progress and of the
last report, and how to act on it (its DAG, triggers, knobs).

The buttons do not act here: the browser triggers the app's DAG (``app_<name>``) through Airflow's
REST API with the user's own session, so every action is a DAG run with an audit trail, which
Airflow allows only a user who may run that DAG. An app is shown only to a user who may read its
DAG; ``can_act`` says whether the user may run it (:mod:`adlake.ui.access`). Above the apps, the
lake engine the lake's jobs run on: state, uptime, memory, its running operations (shown to every
user of the page: it names no data).
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse

from adlake import apps, registry
from adlake.config import Settings
from adlake.local.engine_report import engine_view
from adlake.ui.access import DagAccess, Grants, dag_access
from adlake.ui.deps import current_settings, page

router = APIRouter()
SettingsDep = Annotated[Settings, Depends(current_settings)]
AccessDep = Annotated[DagAccess, Depends(dag_access)]


def _epoch(value: object) -> float | None:
    """Epoch seconds of an ISO timestamp (Spark's progress ``timestamp``) or a finite number;
    None for anything else (a status file's value of another type is unknown, not an error).

    >>> _epoch("2026-11-23T15:00:00Z"), _epoch(1795680000), _epoch(True), _epoch({"t": 1})
    (1795446000.0, 1795680000.0, None, None)
    """
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            return float(value) if math.isfinite(value) else None
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        pass
    return None


def _age(now: float, then: float | None) -> float | None:
    return None if then is None else round(max(0.0, now - then), 1)


def app_view(settings: Settings, app: str, now: float) -> dict:
    """What the page shows of ``app``: :func:`adlake.apps.app_status` plus
    ``latency_target_ms`` (:func:`latency_target_ms`), ``uptime_s`` (since the lock holder
    started), ``progress_age_s`` (since the last batch's progress), ``report_age_s`` (since the
    status file was written: a batch, an idle heartbeat or a liveness check), ``idle``
    (:func:`idle`), ``rtm_interval_s`` (in Real-Time Mode) and ``actions``."""
    spec = registry.APPS[app]
    info = apps.app_status(settings, app, now=now)
    status = info["status"] or {}
    holder = info["holder"]
    mode = (holder and holder["mode"]) or status.get("mode") or info["desired"]["trigger"]
    return {
        "idle": idle(info),
        # a Real-Time Mode batch lasts the checkpoint interval: its last batch is up to that old
        "rtm_interval_s": apps.rtm_interval_s(settings, app) if mode == "realtime" else None,
        **info,
        # the end-to-end p99 the page holds the app to, in the mode it runs (or would run) in
        "latency_target_ms": latency_target_ms(settings, mode),
        "uptime_s": _age(now, holder["started_at"]) if holder else None,
        "progress_age_s": _age(now, _epoch(status.get("last_batch_at"))),
        "report_age_s": _age(now, _epoch(status.get("written_at"))),
        "dlq_topic": spec.dlq,
        "actions": {
            "dag_id": dag_id_of(app),
            "triggers": list(apps.TRIGGERS),
            "knobs": [k.name for k in spec.knobs],
            "buttons": buttons(app, info),
        },
    }


def idle(info: dict) -> bool:
    """Whether a running app is idle: Spark has said so since its last batch (its idle event,
    the listener's ``last_heartbeat_at``, which a micro-batch query reports when a trigger finds
    no new input in Kafka). Its last batch may then be any age without the app being stale: no
    input, no batch, and nothing waiting to be read. (A Real-Time Mode batch is never idle.)

    >>> idle({"state": "running", "status": {"last_batch_at": "2026-11-23T15:00:00.000Z",
    ...                                      "last_heartbeat_at": 1795964500.0}})
    True
    >>> idle({"state": "running", "status": {"last_batch_at": "2026-11-23T15:00:00.000Z"}})
    False
    """
    status = info.get("status") or {}
    heartbeat = _epoch(status.get("last_heartbeat_at"))
    batch = _epoch(status.get("last_batch_at"))
    return (
        info.get("state") == "running"
        and heartbeat is not None
        and (batch is None or heartbeat > batch)
    )


def latency_target_ms(settings: Settings, mode: str) -> int:
    """The end-to-end latency target of an app in trigger ``mode`` (settings
    ``latency_target_realtime_ms``, ``latency_target_processing_time_ms``).

    >>> from adlake.config import load_settings
    >>> latency_target_ms(load_settings({}), "realtime")
    1000
    """
    return getattr(settings, f"latency_target_{mode}_ms")


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


def dag_id_of(app: str) -> str:
    return f"app_{app}"


def shown_app(access: DagAccess | Grants, settings: Settings, app: str, now: float) -> dict:
    """:func:`app_view` of ``app`` and ``can_act``: whether the user may run its DAG (the page
    disables the buttons otherwise; Airflow would refuse their requests)."""
    return {**app_view(settings, app, now), "can_act": access.may_trigger(dag_id_of(app))}


def apps_status(settings: Settings, access: DagAccess | Grants, now: float | None = None) -> dict:
    """Every ops app of the registry whose DAG the user may read, in registry order, and the
    lake engine (:func:`adlake.local.engine_report.engine_view`; None without one).

    >>> from adlake.config import load_settings
    >>> s = apps_status(load_settings({"ADLAKE_RUNTIME_DIR": "/nonexistent"}),
    ...                 Grants(read={"app_click_surge"}))
    >>> [(a["app"], a["can_act"]) for a in s["apps"]]
    [('click_surge', False)]
    """
    now = time.time() if now is None else now
    return {
        "now": now,
        "apps": [
            shown_app(access, settings, name, now)
            for name, spec in registry.APPS.items()
            if spec.runtime == "ops" and access.may_read(dag_id_of(name))
        ],
        "lake_engine": engine_view(settings, now),
    }


@router.get("/apps/", include_in_schema=False)
def apps_page() -> FileResponse:
    return page("apps.html")


@router.get("/apps/api/status")
def status(settings: SettingsDep, access: AccessDep) -> dict:
    return apps_status(settings, access)


@router.get("/apps/api/status/{app}")
def app_status(app: str, settings: SettingsDep, access: AccessDep) -> dict:
    """One app's card data: 404 for no ops app of that name, 403 for a user who may not read its
    DAG."""
    spec = registry.APPS.get(app)
    if spec is None or spec.runtime != "ops":
        raise HTTPException(404, f"no streaming app {app!r}")
    if not access.may_read(dag_id_of(app)):
        raise HTTPException(403, f"you may not see {dag_id_of(app)}, so not {app}")
    now = time.time()
    return {"now": now, "app": shown_app(access, settings, app, now)}
