"""The "Streaming apps" JSON for a running, a stopped, a failed (and restarting) and a
never-started app, from the files :mod:`adlake.apps` and the apps' listeners write: desired state
and restarts through ``adlake.apps``' own functions, the status through ``adlake.status``, and a
real ``flock`` on the app's lock for "running"."""

from __future__ import annotations

import json
import time

from adlake import apps
from adlake.apps.state import write_restarts
from adlake.status import write_status


def desire(settings, app: str, state: str, trigger: str, **knobs) -> None:
    apps.write_desired(
        settings,
        app,
        apps.Desired(
            state, trigger, {**apps.default_knobs(app), **knobs}, time.time() - 600, "user"
        ),
    )


def by_app(user) -> dict[str, dict]:
    response = user.get("/adlake/apps/api/status")
    assert response.status_code == 200
    return {a["app"]: a for a in response.json()["apps"]}


def test_a_running_app_with_the_probes_figures(user, runtime, hold_lock):
    now = time.time()
    desire(runtime, "click_surge", "running", "realtime", threshold=50)
    pid = hold_lock("click_surge", "realtime", now - 3600)
    history = [[now - 120, 35.0, 80.0], [now - 60, 40.0, 95.0]]
    write_status(
        runtime,
        "click_surge",
        {
            "state": "running",
            "mode": "realtime",
            "batch_id": 7,
            "last_batch_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 20)),
            "input_rows_per_s": 200.0,
            "processed_rows_per_s": 210.5,
            "state_rows": 28364,
            "state_memory_mb": 12.5,
            "watermark": "2026-11-23T16:00:00.000Z",
            "late_rows": 3,
            "latency_p50_ms": 30752.0,
            "latency_p99_ms": 31000.0,
            "error": None,
            "e2e_latency": {
                "p50_ms": 35.0,
                "p99_ms": 90.0,
                "samples": 500,
                "window_s": 60,
                "measured_at": now - 5,
            },
            "latency_history": history,
            "waiting_in_state": {
                "rows": 28364,
                "oldest_event_time": "2026-11-23T15:58:00Z",
                "closes_at": "2026-11-23T16:03:00Z",
                "why": "windows close when the watermark passes their end",
            },
        },
        now=now - 10,
    )

    app = by_app(user)["click_surge"]
    assert (app["state"], app["desired"]["state"], app["desired"]["trigger"]) == (
        "running",
        "running",
        "realtime",
    )
    assert (app["holder"]["pid"], app["holder"]["mode"]) == (pid, "realtime")
    assert 3600 <= app["uptime_s"] < 3700
    assert 20 <= app["progress_age_s"] < 120 and 10 <= app["report_age_s"] < 110
    # in Real-Time Mode the last batch may be an interval old: the page says how long that is
    assert (app["idle"], app["rtm_interval_s"]) == (
        False,
        apps.rtm_interval_s(runtime, "click_surge"),
    )
    status = app["status"]
    assert status["e2e_latency"]["p99_ms"] == 90.0
    assert status["latency_history"] == history
    assert status["waiting_in_state"]["rows"] == 28364
    assert (status["input_rows_per_s"], status["state_rows"], status["latency_p50_ms"]) == (
        200.0,
        28364,
        30752.0,
    )
    actions = app["actions"]
    assert (actions["dag_id"], actions["triggers"], actions["knobs"]) == (
        "app_click_surge",
        ["realtime", "processing_time"],
        ["threshold"],
    )
    # each button is a run of the app's DAG that keeps the app's knobs; start is off while it runs
    assert [
        (b["label"], b["enabled"], b["path"], b["body"]["conf"], b["body"]["logical_date"])
        for b in actions["buttons"]
    ] == [
        (
            "start",
            False,
            "api/v2/dags/app_click_surge/dagRuns",
            {"action": "start", "trigger": "realtime", "threshold": 50},
            None,
        ),
        (
            "stop",
            True,
            "api/v2/dags/app_click_surge/dagRuns",
            {"action": "stop", "trigger": "realtime", "threshold": 50},
            None,
        ),
        (
            "restart",
            True,
            "api/v2/dags/app_click_surge/dagRuns",
            {"action": "restart", "trigger": "realtime", "threshold": 50},
            None,
        ),
        (
            "switch to processing_time",
            True,
            "api/v2/dags/app_click_surge/dagRuns",
            {"action": "restart", "trigger": "processing_time", "threshold": 50},
            None,
        ),
    ]
    assert app["log"] == str(runtime.logs_dir / "click_surge.log")
    assert app["dlq_topic"] == "page_clicks_dlq"


def test_a_stopped_app(user, runtime):
    desire(runtime, "attribution", "stopped", "processing_time")
    write_status(
        runtime,
        "attribution",
        {
            "state": "stopped",
            "mode": "processing_time",
            "last_batch_at": "2026-11-23T15:00:00.000Z",
        },
    )
    app = by_app(user)["attribution"]
    assert (app["state"], app["holder"], app["uptime_s"]) == ("stopped", None, None)
    assert app["status"]["state"] == "stopped"
    assert app["progress_age_s"] > 0  # the last progress of the run that ended
    assert "e2e_latency" not in app["status"]  # shown as "—"


def test_an_idle_app_is_running_however_old_its_last_batch(user, runtime, hold_lock):
    """A micro-batch app with no new input runs no batch: its idle heartbeat keeps it running,
    and the page shows it idle rather than its last batch as stale. Without the heartbeat the
    same last batch is stale."""
    now = time.time()
    desire(runtime, "attribution", "running", "processing_time")
    hold_lock("attribution", "processing_time", now - 3600)
    last_batch = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 180))
    status = {"state": "running", "mode": "processing_time", "batch_id": 9}
    write_status(
        runtime,
        "attribution",
        {**status, "last_batch_at": last_batch, "last_heartbeat_at": now - 5},
        now=now - 5,
    )
    app = by_app(user)["attribution"]
    assert (app["state"], app["idle"], app["rtm_interval_s"]) == ("running", True, None)
    assert app["progress_age_s"] > app["stale_after_s"] > app["report_age_s"]

    write_status(runtime, "attribution", {**status, "last_batch_at": last_batch}, now=now - 180)
    app = by_app(user)["attribution"]
    assert (app["state"], app["idle"]) == ("stale", False)


def test_a_failed_app_then_waiting_for_its_backoff(user, runtime):
    now = time.time()
    desire(runtime, "attribution", "running", "processing_time")
    write_status(
        runtime,
        "attribution",
        {"state": "failed", "mode": "processing_time", "error": "StreamingQueryException: boom"},
        now=now - 100,
    )
    restarts = apps.record_restart(
        runtime,
        apps.read_restarts(runtime, "attribution"),
        now - 100,
        "crashed",
        "exit code 1: boom",
    )
    restarts.next_allowed_at = now - 1  # its backoff is over: failed, to be restarted
    write_restarts(runtime, "attribution", restarts)

    app = by_app(user)["attribution"]
    assert (app["state"], app["holder"]) == ("failed", None)
    assert app["status"]["error"] == "StreamingQueryException: boom"
    assert {k: app["restarts"][k] for k in ("count", "reason", "last_error")} == {
        "count": 1,
        "reason": "crashed",
        "last_error": "exit code 1: boom",
    }

    restarts.next_allowed_at = now + 300
    write_restarts(runtime, "attribution", restarts)
    assert by_app(user)["attribution"]["state"] == "restarting"


def test_a_never_started_app(user, runtime):
    body = user.get("/adlake/apps/api/status").json()
    assert [a["app"] for a in body["apps"]] == ["attribution", "click_surge"]
    app = body["apps"][1]
    assert (app["state"], app["holder"], app["status"], app["restarts"]["count"]) == (
        "stopped",
        None,
        None,
        0,
    )
    assert (app["uptime_s"], app["progress_age_s"], app["report_age_s"]) == (None, None, None)
    assert app["desired"]["reason"] == "default"


def test_apps_page_and_its_scripts_are_served(user):
    page = user.get("/adlake/apps/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for src in ("../static/adlake.css", "../static/adlake.js", "../static/apps.js"):
        assert src in page.text
    script = user.get("/adlake/static/apps.js").text
    # the buttons post the status's requests to Airflow's REST API, never into the plugin
    assert "AIRFLOW_ROOT + b.path" in script and 'method: "POST"' in script


def test_the_lake_engine_as_its_keeper_last_reported_it(user, runtime):
    """Above the apps: the engine's state from its keeper's report (running while the report is
    fresh, "not reporting" once the keeper has been silent too long, stopped after ``down``)."""
    from adlake.local.engine_report import STALE_AFTER_S, report_path, write_report

    assert user.get("/adlake/apps/api/status").json()["lake_engine"]["state"] == "stopped"
    now = time.time()
    status = {"running": True, "pid": 4242, "up_since": now - 3600, "rss_mb": 812.5}
    work = {"running_jobs": 3, "operations": 2, "sessions": ["a", "b"]}
    write_report(runtime, {**status, **work}, {"count": 1, "last_at": now - 60, "last_reason": "x"})
    engine = user.get("/adlake/apps/api/status").json()["lake_engine"]
    assert (engine["state"], engine["operations"], engine["restarts"]["count"]) == (
        "running",
        2,
        1,
    )
    assert 3590 < engine["uptime_s"] < 3700
    report = json.loads(report_path(runtime).read_text())
    report["reported_at"] = now - STALE_AFTER_S - 5
    report_path(runtime).write_text(json.dumps(report))
    engine = user.get("/adlake/apps/api/status").json()["lake_engine"]
    assert (engine["state"], engine["uptime_s"]) == ("not reporting", None)
    write_report(runtime, {"running": False, "stopped_at": now}, {"count": 1})
    assert user.get("/adlake/apps/api/status").json()["lake_engine"]["state"] == "stopped"
