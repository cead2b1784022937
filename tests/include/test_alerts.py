"""Alerts (``adlake.alerts``) reaching a real webhook on loopback: the supervisor's restarts and
give-ups (the real ``supervise`` on the fake app of ``test_apps``), their grouping within the
window, the local file as the only sink when no connection is configured, and a webhook that is
down costing nothing but a log line. A failed quality gate's alert through Airflow itself is
``tests/dags/test_alerts.py``'s."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from adlake import alerts, apps
from tests.dags import conftest as _airflow_home  # noqa: F401 - Airflow's home set before its import
from tests.include.test_apps import fake, settings  # noqa: F401 - fixtures
from tests.support.webhook import CONN_VAR, PATH, closed_port_url, webhook

APP = "click_surge"
NOW = 1_800_000_000.0
BASE = "http://127.0.0.1:18080"
RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbook.md"
# The supervisor task the app alerts point at, as the factory's task hands it over.
ORIGIN = {
    "dag_id": "apps_supervisor",
    "task_id": "supervise",
    "run_id": "scheduled__2026-11-26T06:00:00+00:00",
    "try_number": 1,
    "log_url": f"{BASE}/dags/apps_supervisor/runs/scheduled__2026-11-26T06%3A00%3A00%2B00%3A00"
    "/tasks/supervise?try_number=1",
}


@pytest.fixture
def hook(monkeypatch):
    """The webhook server, the adlake_alerts connection pointing at it, Airflow's base URL."""
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", BASE)
    with webhook() as server:
        monkeypatch.setenv(CONN_VAR, server.connection())
        yield server


def recorded(settings) -> list[dict]:
    path = alerts.alerts_file(settings)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def want_running(settings, app: str = APP) -> None:
    apps.write_desired(settings, app, apps.Desired("running", "realtime", {}, 0, "test"))


def test_a_supervisor_restart_is_alerted_with_where_since_when_and_the_runbook(fake, hook):
    want_running(fake)  # should run, and does not
    [restart] = apps.reconcile(fake, now=NOW, origin=ORIGIN)
    assert (restart["action"], restart["ok"]) == ("restart", True)

    [alert] = hook.posts
    assert hook.paths == [PATH]
    assert alert["kind"] == "app_restarted"
    assert (alert["app"], alert["group"]) == (APP, f"app:{APP}:app_restarted")
    for key, value in ORIGIN.items():
        assert alert[key] == value, key
    assert alert["first_failed_at"] == alert["at"] == iso(NOW)
    assert alert["error"] == f"should run and does not: {restart['error']}"
    assert (alert["restarts"], alert["next_allowed_at"]) == (1, NOW + 30)
    assert alert["app_log"] == str(apps.log_path(fake, APP))
    assert alert["runbook"] == "docs/runbook.md#crashed-killed-or-stale-app"
    assert alert["suppressed"] == 0
    # the Slack message says the same in words
    assert f"{APP}: restarted by the supervisor" in alert["text"]
    assert ORIGIN["log_url"] in alert["text"] and alert["runbook"] in alert["text"]
    # and the local file has what was posted
    assert recorded(fake) == [alert]


def test_give_ups_are_grouped_within_the_window_and_the_next_says_how_many(settings, hook):
    # Both apps should run; no interpreter: every restart is a start that fails (a give-up).
    settings = settings.with_overrides(ops_python=settings.runtime_dir / "no-python")
    want_running(settings)
    [first] = apps.reconcile(settings, now=NOW, origin=ORIGIN)
    assert (first["action"], first["ok"]) == ("restart", False)
    [alert] = hook.posts
    assert (alert["kind"], alert["app"], alert["suppressed"]) == ("app_given_up", APP, 0)
    assert "no-python does not exist" in alert["error"]
    assert alert["runbook"] == "docs/runbook.md#the-supervisor-could-not-act-on-an-app"

    # the next give-up, after the 30 s backoff and within the window: counted, not sent
    [again] = apps.reconcile(settings, now=NOW + 31, origin=ORIGIN)
    assert (again["action"], again["ok"]) == ("restart", False)
    assert len(hook.posts) == 1 and len(recorded(settings)) == 1

    # past the window (30 minutes after the first sent): sent, saying one was held back, and
    # failing since the first
    later = NOW + settings.alerts_window_s + 20
    apps.reconcile(settings, now=later, origin=ORIGIN)
    assert len(hook.posts) == 2
    last = hook.posts[-1]
    assert (last["suppressed"], last["first_failed_at"], last["at"]) == (1, iso(NOW), iso(later))
    assert "1 more alert(s) of this held back in the last 30 min" in last["text"]
    assert recorded(settings) == hook.posts


def test_two_failures_of_one_task_within_the_window_are_one_post(settings, hook):
    def failure(task_id: str) -> dict:
        return {
            **alerts.base_alert("lake_task_failed", table="bronze_ad_requests"),
            "dag_id": "lake_hourly",
            "task_id": task_id,
            "group": f"task:lake_hourly:{task_id}",
        }

    assert alerts.send(settings, failure("bronze"), now=NOW)["sent"]
    held = alerts.send(settings, failure("bronze"), now=NOW + 600)
    assert (held["sent"], held["suppressed"]) == (False, 1)
    # another task of the same DAG is a group of its own
    assert alerts.send(settings, failure("silver"), now=NOW + 601)["sent"]
    assert [(p["task_id"], p["suppressed"]) for p in hook.posts] == [("bronze", 0), ("silver", 0)]
    after = alerts.send(settings, failure("bronze"), now=NOW + settings.alerts_window_s)
    assert (after["sent"], after["suppressed"]) == (True, 1)
    assert hook.posts[-1]["first_failed_at"] == iso(NOW)


def test_the_file_is_the_only_sink_when_no_connection_is_configured(settings, monkeypatch):
    monkeypatch.delenv(CONN_VAR, raising=False)
    assert alerts.webhook_url() is None
    want_running(settings)
    settings = settings.with_overrides(ops_python=settings.runtime_dir / "no-python")
    apps.reconcile(settings, now=NOW)
    [alert] = recorded(settings)
    assert alert["kind"] == "app_given_up" and alert["app"] == APP
    assert alerts.alerts_file(settings) == settings.runtime_dir / "reports/alerts/alerts.jsonl"
    groups = json.loads(alerts.groups_file(settings).read_text())["groups"]
    assert groups[f"app:{APP}:app_given_up"]["sent_at"] == NOW
    assert [p.name for p in settings.alerts_dir.iterdir() if p.name.endswith(".tmp")] == []


def test_a_webhook_that_is_down_fails_nothing_is_logged_and_the_alert_is_in_the_file(
    settings, monkeypatch, capfd, caplog
):
    from adlake.airflow.notifier import AlertNotifier

    monkeypatch.setenv(CONN_VAR, json.dumps({"conn_type": "http", "host": closed_port_url()}))
    monkeypatch.setenv("ADLAKE_RUNTIME_DIR", str(settings.runtime_dir))
    run_id = "manual__2026-11-26T05:00:00+00:00"
    ti = SimpleNamespace(
        dag_id="lake_hourly", task_id="gold", run_id=run_id, try_number=3, map_index=-1
    )
    context = {"ti": ti, "run_id": run_id, "exception": RuntimeError("spark-submit exited 1")}
    AlertNotifier()(context)  # as the task runner calls it: it must not raise
    [alert] = recorded(settings)
    assert (alert["kind"], alert["dag_id"], alert["task_id"]) == (
        "lake_task_failed",
        "lake_hourly",
        "gold",
    )
    assert alert["table"] == "campaign_delivery,page_traffic,surge_history"
    assert alert["error"] == "RuntimeError: spark-submit exited 1"
    assert alert["runbook"] == "docs/runbook.md#a-lake-task-failed"
    # the log URL is built as Airflow builds it, from its base URL
    assert alert["log_url"] == alerts.task_log_url("lake_hourly", run_id, "gold", 3)
    assert (
        "/runs/manual__2026-11-26T05%3A00%3A00%2B00%3A00/tasks/gold?try_number=3"
        in (alert["log_url"])
    )
    # logged: to the task's log in a task; here to pytest's log capture, or to the output once
    # Airflow's logging has taken over
    logged = caplog.text + "".join(capfd.readouterr())
    assert "alert task:lake_hourly:gold not delivered to the webhook" in logged


def _slug(heading: str) -> str:
    """A Markdown heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_kind_of_alert_points_at_a_runbook_section():
    anchors = {
        _slug(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines() if line[:1] == "#"
    }
    assert {kind: anchor for kind, anchor in alerts.RUNBOOK.items() if anchor not in anchors} == {}


def test_a_views_gate_alert_names_its_failed_expectations_from_its_validation(settings):
    """A view's gate records no outcome file: the failed expectations come from its GX
    validation result, the Data Docs link is that validation's page."""
    from adlake.quality.history import validations_dir

    view, dag_id, run_id = "page_clicks_hourly", "view_page_clicks_hourly", "asset_triggered__x"
    result = validations_dir(settings) / view / f"{dag_id}__{run_id}" / "20261126T060000.0Z"
    result.mkdir(parents=True)
    failed = {
        "success": False,
        "expectation_config": {
            "type": "expect_column_values_to_not_be_null",
            "kwargs": {"column": "page_id"},
            "meta": {"severity": "error"},
        },
        "result": {"element_count": 9, "unexpected_count": 2},
    }
    passed = {**failed, "success": True}
    (result / "b.json").write_text(json.dumps({"suite_name": view, "results": [passed, failed]}))
    assert alerts.classify(dag_id, f"quality_{view}") == ("quality_failed", view, None)
    details = alerts.quality_details(settings, view, dag_id, run_id)
    assert details["failed_expectations"] == [
        {
            "expectation": "expect_column_values_to_not_be_null(column=page_id)",
            "severity": "error",
            "observed_value": "2 of 9 rows unexpected",
        }
    ]
    assert details["data_docs_url"].endswith(
        f"/adlake/data-docs/validations/{view}/{dag_id}__{run_id}/20261126T060000.0Z/b.html"
    )
