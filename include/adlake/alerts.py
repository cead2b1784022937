"""Alerts that reach a person: a failed lake task, a failed quality gate, an app the supervisor
restarted or could not restart. Standard library only (Airflow is imported lazily, where there
is one): the failure callback (:class:`adlake.airflow.notifier.AlertNotifier`) and the
supervisor's pass (:func:`adlake.apps.supervise`) both build an alert here and :func:`send` it.

**Sinks.** Every alert sent is appended to ``<runtime>/reports/alerts/alerts.jsonl`` (one JSON
object a line, :attr:`~adlake.config.Settings.alerts_dir`), and POSTed as JSON to the webhook
of the Airflow connection ``adlake_alerts`` when there is one (:func:`webhook_url`; defined from
``ADLAKE_ALERTS_WEBHOOK_URL`` by the platform, or by hand in Airflow). The body is the alert
itself: a Slack-compatible ``text`` and the structured fields beside it. A webhook that does not
answer is logged and the alert stays in the file: alerting never fails the task it reports.

**Fields** (every alert; ``None`` where not known):

* ``kind`` — what failed, one of :data:`RUNBOOK` (its runbook step is ``runbook``);
* ``dag_id``, ``task_id``, ``table``, ``app`` — which task, and the table or app it is about;
* ``run_id``, ``try_number``, ``log_url`` — where: the Airflow run, the try, the task's log in
  Airflow's UI (for an app: the supervisor task's log; the app's own log is ``app_log``);
* ``first_failed_at`` — since when: the first failure of this group (below);
* ``at`` — this failure; ``error`` — the exception or the supervisor's reason;
* ``failed_expectations``, ``data_docs_url`` — for a quality gate: the failed expectations
  (name, severity, observed value) from the gate's outcome, and the table's Data Docs page;
* ``group``, ``suppressed`` — the grouping key and how many alerts of it were held back since
  the last one sent.

**Grouping.** Alerts of one group (a DAG's task, or one app's restarts, or its give-ups) within
``alerts_window_s`` (30 minutes) of the last one sent are counted and not sent again; the first
one after the window is sent and says how many were held back. A group quiet for a whole window
starts over (its ``first_failed_at`` is the next failure). The state is ``groups.json`` beside
the file, replaced atomically under a lock (tasks fail at once on the LocalExecutor).

>>> group, sent, held = decide_group(None, 100.0, 1800)  # the first: sent at once
>>> sent, held
(True, 0)
>>> group, sent, held = decide_group(group, 700.0, 1800)  # 10 minutes later: held back
>>> sent, held
(False, 1)
>>> group, sent, held = decide_group(group, 1900.0, 1800)  # past the window: sent, with 1
>>> sent, held, group["first_at"]
(True, 1, 100.0)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from adlake import atomic, registry
from adlake.config import Settings

log = logging.getLogger(__name__)

CONN_ID = "adlake_alerts"
ALERTS_FILE = "alerts.jsonl"
GROUPS_FILE = "groups.json"
RUNBOOK_DOC = "docs/runbook.md"
# The runbook step of each kind of alert (an anchor of docs/runbook.md).
RUNBOOK = {
    "quality_failed": "a-quality-gate-failed",
    "quality_gate_failed": "a-quality-gate-failed",
    "view_refresh_failed": "a-view-refresh-fails",
    "lake_task_failed": "a-lake-task-failed",
    "maintenance_failed": "table-maintenance",
    "app_action_failed": "start-stop-restart-switch-mode",
    "supervisor_failed": "the-supervisor-could-not-act-on-an-app",
    "app_restarted": "crashed-killed-or-stale-app",
    "app_given_up": "the-supervisor-could-not-act-on-an-app",
    "engine_restarted": "the-lake-engine-is-down",
}
_TITLES = {
    "quality_failed": "failed its quality gate",
    "quality_gate_failed": "quality gate could not validate",
    "view_refresh_failed": "view refresh failed",
    "lake_task_failed": "lake task failed",
    "maintenance_failed": "table maintenance failed",
    "app_action_failed": "app action failed",
    "supervisor_failed": "the apps' supervisor failed",
    "app_restarted": "restarted by the supervisor",
    "app_given_up": "not restarted: the supervisor could not act",
    "engine_restarted": "the lake engine died and was started again",
}
_ERROR_CHARS = 1500
DEFAULT_BASE_URL = "http://localhost:8080"


# -- where things are --------------------------------------------------------------------------


def alerts_file(settings: Settings) -> Path:
    return settings.alerts_dir / ALERTS_FILE


def groups_file(settings: Settings) -> Path:
    return settings.alerts_dir / GROUPS_FILE


def ui_base_url() -> str:
    """Airflow's UI as its users reach it: ``[api] base_url`` (``AIRFLOW__API__BASE_URL``, set
    by the platform), without a trailing slash. Outside an Airflow process, the variable."""
    url = None
    if "airflow.configuration" in sys.modules:
        try:
            from airflow.configuration import conf

            url = conf.get("api", "base_url", fallback=None)
        except Exception:  # noqa: BLE001 - its config unreadable: the variable
            url = None
    return (url or os.environ.get("AIRFLOW__API__BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def task_log_url(dag_id: str, run_id: str, task_id: str, try_number: int | None) -> str:
    """The task's log in Airflow's UI, as Airflow's own ``TaskInstance.log_url`` builds it.

    >>> task_log_url("lake_hourly", "manual__2026-11-21T13:00:00+00:00", "gold", 2).split("/dags/")[1]
    'lake_hourly/runs/manual__2026-11-21T13%3A00%3A00%2B00%3A00/tasks/gold?try_number=2'
    """
    tried = f"?try_number={try_number}" if try_number else ""
    return f"{ui_base_url()}/dags/{dag_id}/runs/{quote(run_id)}/tasks/{task_id}{tried}"


def data_docs_url(page: str = "") -> str:
    """A page of GX's Data Docs site through the Adlake plugin (behind Airflow's login)."""
    return f"{ui_base_url()}/adlake/data-docs/{quote(page)}"


def runbook(kind: str) -> str:
    return f"{RUNBOOK_DOC}#{RUNBOOK[kind]}"


def webhook_url(conn_id: str = CONN_ID, environ: Mapping[str, str] | None = None) -> str | None:
    """The URL of the Airflow connection ``conn_id`` (type http), or None when there is none.
    Its ``host`` is either the whole URL or a host name, completed as Airflow's HTTP hook does:
    ``schema`` (default http), ``port``, and ``extra.endpoint``.

    >>> env = {"AIRFLOW_CONN_X": '{"conn_type": "http", "host": "hooks.example", '
    ...        '"schema": "https", "extra": {"endpoint": "/services/T1"}}'}
    >>> webhook_url("x", env)
    'https://hooks.example/services/T1'
    >>> webhook_url("y", env) is None
    True
    """
    conn = _connection(conn_id, os.environ if environ is None else environ)
    if not conn or not conn.get("host"):
        return None
    host = conn["host"]
    if "://" in host:
        base = host
    else:
        port = f":{conn['port']}" if conn.get("port") else ""
        base = f"{conn.get('schema') or 'http'}://{host}{port}"
    endpoint = (conn.get("extra") or {}).get("endpoint") or ""
    return base.rstrip("/") + "/" + endpoint.lstrip("/") if endpoint else base


def _connection(conn_id: str, environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The connection's fields. Inside an Airflow process (a task, its callback) Airflow looks
    it up (its ``AIRFLOW_CONN_*`` variable, else the metadata DB: one made in the UI counts);
    elsewhere (a shell's ``adlake.apps supervise``) its variable only, in JSON or URI form,
    read as Airflow reads it."""
    if environ is os.environ and "airflow.sdk" in sys.modules:
        try:
            from airflow.sdk import Connection

            conn = Connection.get(conn_id)
        except Exception:  # noqa: BLE001 - not defined: the file sink only
            return None
        return {
            "host": conn.host,
            "schema": conn.schema,
            "port": conn.port,
            "extra": conn.extra_dejson,
        }
    text = environ.get(f"AIRFLOW_CONN_{conn_id.upper()}")
    if not text:
        return None
    if text.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            value = json.loads(text)
            if isinstance(value, dict):
                extra = value.get("extra")
                if isinstance(extra, str):
                    extra = json.loads(extra or "{}")
                return {**value, "extra": extra if isinstance(extra, dict) else {}}
        return None
    from urllib.parse import parse_qsl, unquote, urlsplit

    uri = urlsplit(text)
    return {
        "host": unquote(uri.hostname or ""),
        "schema": unquote(uri.path.lstrip("/")),
        "port": uri.port,
        "extra": dict(parse_qsl(uri.query)),
    }


# -- what failed --------------------------------------------------------------------------------


def _instant(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _validation_of(settings: Settings, table: str, dag_id: str, run_id: str) -> Path | None:
    """The newest GX validation result of ``table`` made by the run (its run name, as the gate
    job names it), or None."""
    from adlake.quality.history import validations_dir

    run_dir = validations_dir(settings) / table / f"{dag_id}__{run_id}".replace("/", "_")
    results = sorted(run_dir.glob("*/*.json")) if run_dir.is_dir() else []
    return results[-1] if results else None


def quality_details(settings: Settings, table: str, dag_id: str, run_id: str) -> dict[str, Any]:
    """What a quality alert links to: the failed expectations of ``table`` in the run (from the
    gate's outcome, :mod:`adlake.quality.outcome`; a view's gate records none, so from its GX
    validation result) and the Data Docs page of that validation (else the site's index)."""
    from adlake.quality import outcome
    from adlake.quality.results import expectation_name, observed_value, severity_of

    failed: list[dict[str, Any]] = []
    try:
        record = outcome.read_outcome(outcome.outcome_dir(settings, dag_id, run_id), table)
        failed = [dict(f) for f in record["failed"]]
    except outcome.OutcomeMissing:
        record = None
    validation = _validation_of(settings, table, dag_id, run_id)
    if record is None and validation is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            results = json.loads(validation.read_text(encoding="utf-8"))["results"]
            failed = [
                {
                    "expectation": expectation_name(item["expectation_config"]),
                    "severity": severity_of(item["expectation_config"]),
                    "observed_value": observed_value(item),
                }
                for item in results
                if not item["success"]
            ]
    page = ""
    if validation is not None:
        from adlake.quality.history import validations_dir

        relative = validation.relative_to(validations_dir(settings)).with_suffix(".html")
        page = str(Path("validations") / relative)
    # error expectations first: they are what failed the task
    failed.sort(key=lambda f: f.get("severity") != "error")
    return {"failed_expectations": failed, "data_docs_url": data_docs_url(page)}


def classify(dag_id: str, task_id: str) -> tuple[str, str | None, str | None]:
    """The kind of a failed task, and the table or app it is about.

    >>> classify("lake_hourly", "quality_page_traffic")
    ('quality_failed', 'page_traffic', None)
    >>> classify("view_page_clicks_hourly", "quality_page_clicks_hourly")
    ('quality_failed', 'page_clicks_hourly', None)
    >>> classify("lake_hourly", "quality_gold"), classify("lake_hourly", "gold")[0]
    (('quality_gate_failed', 'campaign_delivery,page_traffic,surge_history', None), \
'lake_task_failed')
    >>> classify("app_click_surge", "act"), classify("apps_supervisor", "supervise")[0]
    (('app_action_failed', None, 'click_surge'), 'supervisor_failed')
    """
    if dag_id.startswith("app_") and dag_id[4:] in registry.APPS:
        return "app_action_failed", None, dag_id[4:]
    if dag_id == "apps_supervisor":
        return "supervisor_failed", None, None
    job = registry.JOBS.get(task_id)
    if job is not None and job.gate:
        if job.takes_interval:  # a chain's gate: it could not validate (its tables' own tasks)
            return "quality_gate_failed", ",".join(job.reads), None
        return "quality_failed", ",".join(job.reads), None
    if job is None and task_id.startswith("quality_"):
        table = task_id[len("quality_") :]
        if table in registry.TABLES or table in registry.VIEWS:
            return "quality_failed", table, None
    if job is not None and job.runs("on_update"):
        return "view_refresh_failed", ",".join(job.writes), None
    if job is not None and job.runs("maintenance"):
        return "maintenance_failed", None, None
    tables = ",".join(t for t in job.writes) if job is not None else None
    return "lake_task_failed", tables, None


def task_failure_alert(settings: Settings, context: Mapping[str, Any]) -> dict[str, Any]:
    """The alert of a failed task, from the context Airflow hands its failure callback."""
    ti = context["ti"]
    dag_id, task_id = ti.dag_id, ti.task_id
    run_id = context.get("run_id") or ti.run_id
    try_number = getattr(ti, "try_number", None)
    kind, table, app = classify(dag_id, task_id)
    try:
        log_url = ti.log_url  # Airflow's own: [api] base_url, run, task, try
    except Exception:  # noqa: BLE001 - a TaskInstance without it: built the same way
        log_url = task_log_url(dag_id, run_id, task_id, try_number)
    error = context.get("exception")
    alert = base_alert(kind, table=table, app=app)
    alert.update(
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        try_number=try_number,
        log_url=log_url,
        error=None if error is None else f"{type(error).__name__}: {error}"[-_ERROR_CHARS:],
        group=f"task:{dag_id}:{task_id}",
    )
    if kind == "quality_failed" and table:
        alert.update(quality_details(settings, table, dag_id, run_id))
    return alert


def base_alert(kind: str, table: str | None = None, app: str | None = None) -> dict[str, Any]:
    return {
        "kind": kind,
        "dag_id": None,
        "task_id": None,
        "table": table,
        "app": app,
        "run_id": None,
        "try_number": None,
        "log_url": None,
        "error": None,
        "failed_expectations": [],
        "data_docs_url": None,
        "runbook": runbook(kind),
    }


def app_action_alerts(
    settings: Settings, actions: Iterable[Mapping[str, Any]], origin: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """One alert per supervisor action a person should know of: a restart, and a give-up (a
    restart whose start failed, an app the pass could not act on or left as it is). ``origin``:
    the supervisor task's ``dag_id``, ``task_id``, ``run_id``, ``try_number``, ``log_url``."""
    from adlake.apps.state import log_path

    out = []
    for action in actions:
        # a restart that started the app (even if its record could not be written)
        restarted = action.get("action") == "restart" and "start_error" not in action
        if not restarted and action.get("ok", True):
            continue  # a stop, a wait for the backoff: what was asked, nothing failed
        kind = "app_restarted" if restarted else "app_given_up"
        app = action["app"]
        alert = base_alert(kind, app=app)
        why = action.get("why")
        detail = action.get("start_error") or action.get("error") or action.get("record_error")
        alert.update({k: v for k, v in (origin or {}).items() if k in alert})
        alert.update(
            error=(f"{why}: {detail}" if why and detail else why or detail or "")[-_ERROR_CHARS:],
            restarts=action.get("count"),
            next_allowed_at=action.get("next_allowed_at"),
            app_log=str(log_path(settings, app)),
            group=f"app:{app}:{kind}",
        )
        out.append(alert)
    return out


# -- grouping and the sinks ---------------------------------------------------------------------


def decide_group(
    group: Mapping[str, Any] | None, now: float, window_s: float
) -> tuple[dict[str, Any], bool, int]:
    """The group after one more alert at ``now``: its new state, whether this alert is sent,
    and how many were held back (for one sent: since the last one sent, which it reports)."""
    held = int(group["suppressed"]) if group else 0
    if group is None or now - float(group["last_at"]) > window_s:
        # quiet for a whole window: a new episode, failing since now
        group = {"first_at": now, "sent_at": None, "suppressed": held}
    group = {**group, "last_at": now}
    if group["sent_at"] is None or now - float(group["sent_at"]) >= window_s:
        return {**group, "sent_at": now, "suppressed": 0}, True, held
    return {**group, "suppressed": held + 1}, False, held + 1


def text_of(alert: Mapping[str, Any], window_s: int) -> str:
    """The alert as one Slack message (``text``)."""
    subject = alert.get("table") or alert.get("app") or alert.get("task_id") or ""
    if alert["kind"] == "engine_restarted":
        subject = "lake engine"
    where = " / ".join(str(alert[k]) for k in ("dag_id", "task_id") if alert.get(k))
    lines = [f":rotating_light: [adlake] {subject}: {_TITLES[alert['kind']]}"]
    if where:
        lines.append(
            f"{where}, run {alert.get('run_id')}, try {alert.get('try_number')}"
            if alert.get("run_id")
            else where
        )
    lines.append(f"failing since {alert['first_failed_at']} (this one {alert['at']})")
    if alert.get("error"):
        lines.append(f"why: {str(alert['error']).splitlines()[-1][:300]}")
    for f in alert.get("failed_expectations") or []:
        lines.append(f"• [{f.get('severity')}] {f.get('expectation')}: {f.get('observed_value')}")
    for label, key in (
        ("log", "log_url"),
        ("Data Docs", "data_docs_url"),
        ("app log", "app_log"),
        ("engine log", "engine_log"),
    ):
        if alert.get(key):
            lines.append(f"{label}: {alert[key]}")
    lines.append(f"runbook: {alert['runbook']}")
    if alert.get("suppressed"):
        lines.append(
            f"({alert['suppressed']} more alert(s) of this held back in the last "
            f"{window_s // 60} min)"
        )
    return "\n".join(lines)


def send(settings: Settings, alert: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
    """Group ``alert`` and, unless held back, write it to the file and POST it to the webhook.
    Never raises for a sink that fails (said in the result and logged): what reports a failure
    must not fail. Returns ``{"sent", "suppressed", "alert", "webhook"}``."""
    import time

    now = time.time() if now is None else now
    key = alert["group"]
    alert = dict(alert)
    try:
        with atomic.exclusive(settings.alerts_dir / "groups.lock"):
            state = atomic.read_json(groups_file(settings)) or {}
            groups = {
                k: g
                for k, g in (state.get("groups") or {}).items()
                # an old group is forgotten, unless it holds a count not yet reported
                if now - float(g.get("last_at", 0)) <= settings.alerts_window_s
                or g.get("suppressed")
                or k == key
            }
            group, sent, held = decide_group(groups.get(key), now, settings.alerts_window_s)
            groups[key] = group
            atomic.write_json(groups_file(settings), {"version": 1, "groups": groups}, indent=1)
            alert.update(
                at=_instant(now), first_failed_at=_instant(group["first_at"]), suppressed=held
            )
            if not sent:
                log.warning("alert %s held back (%d in this window): %s", key, held, alert["kind"])
                return {"sent": False, "suppressed": held, "alert": alert, "webhook": None}
            alert["text"] = text_of(alert, settings.alerts_window_s)
            with open(alerts_file(settings), "a", encoding="utf-8") as out:
                out.write(json.dumps(alert, sort_keys=True, default=str) + "\n")
                out.flush()
                os.fsync(out.fileno())
    except OSError as error:  # a full disk: the webhook may still reach someone
        log.error("alert %s not recorded in %s: %s", key, settings.alerts_dir, error)
        alert.setdefault("at", _instant(now))
        alert.setdefault("first_failed_at", alert["at"])
        alert.setdefault("suppressed", 0)
        alert["text"] = text_of(alert, settings.alerts_window_s)
        held = 0
    return {"sent": True, "suppressed": held, "alert": alert, "webhook": post(settings, alert)}


def post(settings: Settings, alert: Mapping[str, Any]) -> str | None:
    """POST ``alert`` as JSON to the webhook: None if none is configured, ``ok`` or why not."""
    url = webhook_url()
    if url is None:
        return None
    request = urllib.request.Request(
        url,
        data=json.dumps(alert, default=str).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.alerts_timeout_s) as response:
            response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        log.error(
            "alert %s not delivered to the webhook of connection %s (it is in %s): %s",
            alert.get("group"),
            CONN_ID,
            alerts_file(settings),
            error,
        )
        return f"failed: {error}"
    return "ok"
