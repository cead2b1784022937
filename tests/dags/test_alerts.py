"""A failed quality gate reaches a person: ``lake_hourly`` run by ``dag.test()`` (no scheduler,
no Spark: the Spark tasks marked successful, the gate's outcomes written as the gate job writes
them, one table failing an ``error`` expectation), its verdict task failing, and Airflow calling
the factory's failure callback, which POSTs the alert to a real webhook on loopback."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from adlake import registry
from adlake.airflow import factory
from adlake.alerts import alerts_file
from adlake.quality import outcome
from adlake.quality.history import validations_dir
from adlake.quality.results import RunContext
from tests.conftest import private_settings
from tests.dags.conftest import DAGS_DIR, task_env
from tests.support.webhook import CONN_VAR, webhook

BASE = "http://127.0.0.1:18080"
FAILING = "campaign_delivery"
FAILED = [
    ("expect_compound_columns_to_be_unique(column_list=[...])", "error", "1 of 40 rows unexpected"),
    ("expect_column_values_to_not_be_null(column=campaign_id)", "error", "2 of 40 rows unexpected"),
    ("expect_table_row_count_to_be_between(min_value=1)", "warn", "40"),
]


def gate_outputs(settings, run_id: str, start: datetime) -> str:
    """What ``quality_gold`` leaves for the run: each hour table's outcome (``FAILING`` with
    :data:`FAILED`, the others passing) and ``FAILING``'s GX validation result; returns that
    result's Data Docs page, relative to the site."""
    where = outcome.outcome_dir(settings, factory.LAKE_DAG_ID, run_id)
    for table in registry.GOLD_HOURLY:
        context = RunContext(
            factory.LAKE_DAG_ID, run_id, table, start, start + timedelta(hours=1), start
        )
        rows = [
            {"expectation": e, "severity": s, "success": False, "observed_value": o}
            for e, s, o in (FAILED if table == FAILING else [])
        ] + [{"expectation": "ok", "severity": "error", "success": True, "observed_value": None}]
        outcome.write_outcome(where, outcome.make_outcome(context, rows, "report", "index", 1.0))
    run_name = f"{factory.LAKE_DAG_ID}__{run_id}"
    result = validations_dir(settings) / FAILING / run_name / "20261121T140512.000000Z" / "b.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"suite_name": FAILING, "results": []}))
    return f"validations/{FAILING}/{run_name}/20261121T140512.000000Z/b.html"


def test_a_failed_quality_gate_alerts_with_its_expectations_and_data_docs(
    airflow_db, tmp_path, monkeypatch
):
    from airflow.models import DagBag
    from airflow.models.dagrun import DagRun
    from airflow.utils.state import DagRunState, TaskInstanceState
    from airflow.utils.types import DagRunType

    settings = private_settings(tmp_path / "runtime")
    for key, value in task_env(settings, AIRFLOW__API__BASE_URL=BASE).items():
        monkeypatch.setenv(key, value)
    start = datetime(2026, 11, 21, 13, tzinfo=UTC)
    logical = start + timedelta(hours=1, minutes=5)
    run_id = DagRun.generate_run_id(
        run_type=DagRunType.MANUAL, logical_date=logical, run_after=logical
    )
    page = gate_outputs(settings, run_id, start)
    lake = DagBag(str(DAGS_DIR)).dags[factory.LAKE_DAG_ID]

    with webhook() as hook:
        monkeypatch.setenv(CONN_VAR, hook.connection())
        # Spark's tasks, the gate's spark-submit included, are marked successful: the verdict
        # tasks read the outcomes written above.
        run = lake.test(
            logical_date=logical,
            run_after=logical,
            mark_success_pattern=r"^(bronze|silver|gold|quality_gold)$",
        )

    assert run.run_id == run_id
    assert run.state == DagRunState.FAILED
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states[f"quality_{FAILING}"] == TaskInstanceState.FAILED
    assert {t for t, s in states.items() if s != TaskInstanceState.SUCCESS} == {
        f"quality_{FAILING}"
    }

    [alert] = hook.posts  # one failed task, one alert; the tasks that passed sent none
    task_id = f"quality_{FAILING}"
    assert (alert["kind"], alert["dag_id"], alert["task_id"], alert["table"]) == (
        "quality_failed",
        factory.LAKE_DAG_ID,
        task_id,
        FAILING,
    )
    assert (alert["run_id"], alert["try_number"]) == (run_id, 1)
    assert alert["log_url"] == (
        f"{BASE}/dags/{factory.LAKE_DAG_ID}/runs/{quote(run_id)}/tasks/{task_id}?try_number=1"
    )
    # the gate's failed expectations, error ones first, and the validation's Data Docs page
    assert [
        (f["expectation"], f["severity"], f["observed_value"]) for f in alert["failed_expectations"]
    ] == FAILED
    assert alert["data_docs_url"] == f"{BASE}/adlake/data-docs/{quote(page)}"
    assert alert["runbook"] == "docs/runbook.md#a-quality-gate-failed"
    assert alert["first_failed_at"] == alert["at"]
    assert "2 error expectation(s) failed" in alert["error"]
    for name, _, _ in FAILED:
        assert name in alert["text"]
    # the local file has it too
    lines = alerts_file(settings).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [alert]


def test_the_supervisor_task_alerts_a_give_up_pointing_at_its_own_run(
    airflow_db, tmp_path, monkeypatch
):
    """``apps_supervisor`` run by ``dag.test()``: an app that should run cannot be started (no
    ops interpreter), and its alert names the supervisor task's run, try and log."""
    from airflow.models import DagBag
    from airflow.utils.state import DagRunState

    from adlake import apps

    settings = private_settings(tmp_path / "runtime")
    missing = tmp_path / "no-python"
    env = task_env(settings, AIRFLOW__API__BASE_URL=BASE, ADLAKE_OPS_PYTHON=str(missing))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(CONN_VAR, raising=False)
    apps.write_desired(settings, "click_surge", apps.Desired("running", "realtime", {}, 0, "test"))
    supervisor = DagBag(str(DAGS_DIR)).dags[factory.SUPERVISOR_DAG_ID]
    run = supervisor.test()
    assert run.state == DagRunState.SUCCESS  # a give-up is alerted, not a failed task

    [alert] = [json.loads(line) for line in alerts_file(settings).read_text().splitlines()]
    assert (alert["kind"], alert["app"]) == ("app_given_up", "click_surge")
    assert f"{missing} does not exist" in alert["error"]
    assert (alert["dag_id"], alert["task_id"]) == (factory.SUPERVISOR_DAG_ID, "supervise")
    assert (alert["run_id"], alert["try_number"]) == (run.run_id, 1)
    assert alert["log_url"] == (
        f"{BASE}/dags/{factory.SUPERVISOR_DAG_ID}/runs/{quote(run.run_id)}/tasks/supervise"
        "?try_number=1"
    )
