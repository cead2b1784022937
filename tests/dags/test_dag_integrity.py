"""DAG integrity (the Astro pattern) plus parity with the registry: every DAG parses, without
PySpark, one per registry entry, each with an owner, tags, a doc and the retries its work
allows; templates render the data interval."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from adlake import registry
from adlake.airflow import factory
from adlake.quality.results import EXIT_EXPECTATIONS_FAILED
from tests.dags.conftest import DAGS_DIR


def test_dagbag_has_no_import_errors(dagbag):
    assert dagbag.import_errors == {}


def test_exactly_one_dag_per_registry_entry_plus_the_supervisor(dagbag):
    assert set(dagbag.dag_ids) == factory.expected_dag_ids()
    hourly = {j.name for j in registry.JOBS.values() if j.schedule == "hourly"}
    assert {t.task_id for t in dagbag.dags[factory.LAKE_DAG_ID].tasks} == hourly
    for job in factory.view_jobs():
        # the refresh, then the quality gate of what it wrote
        assert [t.task_id for t in dagbag.dags[job.name].tasks] == [
            job.name,
            *(g.name for g in registry.JOBS.values() if g.gate and g.reads == job.writes),
        ]
    for app in registry.APPS.values():
        assert f"app_{app.name}" in dagbag.dag_ids


def test_parsing_the_dags_imports_no_pyspark():
    code = (
        "import sys; from airflow.models import DagBag; "
        f"b = DagBag({str(DAGS_DIR)!r}); assert not b.import_errors, b.import_errors; "
        "assert 'pyspark' not in sys.modules, 'pyspark imported at parse time'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_dag_has_owner_tags_doc_and_the_retries_its_work_allows(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, dag_id
        assert dag.doc_md and len(dag.doc_md) > 40, dag_id
        for task in dag.tasks:
            assert task.owner == factory.OWNER, (dag_id, task.task_id)
            if dag_id.startswith(("app_", factory.SUPERVISOR_DAG_ID)):
                # an action half-done is reconciled by the supervisor, never repeated blindly
                assert task.retries == 0, (dag_id, task.task_id)
            else:
                # every lake job writes idempotently: a retry is safe
                assert task.retries == registry.job(task.task_id).retries > 0
                assert task.retry_exponential_backoff


def test_the_lake_chain_follows_what_each_job_reads_and_writes(dagbag):
    dag = dagbag.dags[factory.LAKE_DAG_ID]
    assert dag.get_task("silver").upstream_task_ids == {"bronze"}
    assert dag.get_task("gold").upstream_task_ids == {"silver"}
    gold = [t.name for t in registry.TABLES.values() if t.layer == "gold"]
    # Each gold table is published (its Asset updated) by its quality gate, not by gold: a table
    # that fails an `error` expectation holds back whatever is scheduled on it.
    assert {a.name for a in dag.get_task("gold").outlets} == set()
    for table in gold:
        gate = dag.get_task(f"quality_{table}")
        assert gate.upstream_task_ids == {"gold"} and gate.downstream_task_ids == set()
        assert {a.name for a in gate.outlets} == {table, "dq_results"}


def test_a_view_is_published_by_its_quality_gate(dagbag):
    for job in factory.view_jobs():
        dag = dagbag.dags[job.name]
        [view] = job.writes
        refresh, gate = dag.get_task(job.name), dag.get_task(f"quality_{view}")
        assert refresh.downstream_task_ids == {gate.task_id}
        assert {a.name for a in refresh.outlets} == set()
        assert {a.name for a in gate.outlets} == {view, "dq_results"}


def test_scheduled_dags_use_data_intervals_in_utc_and_no_catchup(dagbag):
    from airflow.sdk import CronDataIntervalTimetable

    dag = dagbag.dags[factory.LAKE_DAG_ID]
    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    assert (dag.timetable.expression, str(dag.timetable.timezone)) == (factory.HOURLY, "UTC")
    assert dag.catchup is False and dag.max_active_runs == 1


def test_views_run_when_their_source_table_updates(dagbag):
    for job in factory.view_jobs():
        dag = dagbag.dags[job.name]
        names = {a.name for a in dag.timetable.asset_condition.objects}
        assert names == set(job.reads), job.name


def test_producers_declare_their_tables_as_outlets(dagbag):
    tables = set(registry.TABLES) | set(registry.VIEWS)
    gated = {t for j in registry.JOBS.values() if j.gate for t in j.reads}
    for dag_id in [factory.LAKE_DAG_ID, *(j.name for j in factory.view_jobs())]:
        for task in dagbag.dags[dag_id].tasks:
            job = registry.job(task.task_id)
            expected = (set(job.writes) & tables) - gated | (set(job.reads) if job.gate else set())
            assert {a.name for a in task.outlets} == expected, task.task_id


def test_app_dags_have_a_typed_form(dagbag):
    for app in registry.APPS.values():
        dag = dagbag.dags[f"app_{app.name}"]
        assert dag.schedule is None and dag.max_active_runs == 1
        params = dag.params
        assert params.get_param("action").schema["enum"] == list(registry.APP_ACTIONS)
        assert params.get_param("trigger").schema["enum"] == list(registry.TRIGGERS)
        assert params["trigger"] == app.default_trigger
        for knob in app.knobs:
            assert params.get_param(knob.name).schema["type"] == knob.type
            assert params[knob.name] == knob.default


def test_supervisor_runs_every_minute_one_at_a_time(dagbag):
    dag = dagbag.dags[factory.SUPERVISOR_DAG_ID]
    assert dag.max_active_runs == 1 and dag.catchup is False
    assert dag.timetable.delta == timedelta(minutes=1)


@pytest.mark.parametrize("task_id", ["bronze", "silver", "gold"])
def test_rendered_arguments_carry_the_data_interval(dagbag, task_id):
    dag = dagbag.dags[factory.LAKE_DAG_ID]
    task = dag.get_task(task_id)
    start = datetime(2026, 11, 21, 13, tzinfo=UTC)
    context = {"data_interval_start": start, "data_interval_end": start + timedelta(hours=1)}
    task.render_template_fields(context, jinja_env=dag.get_template_env())
    args = task.application_args
    job = registry.job(task_id)
    assert args[: 1 + len(job.args)] == [job.module, *job.args]
    assert args[args.index("--start") + 1] == "2026-11-21T13:00:00+00:00"
    assert args[args.index("--end") + 1] == "2026-11-21T14:00:00+00:00"
    assert task._conn_id == factory.spark_conn_id("lake")
    assert task.application == str(factory.SUBMIT)


def test_a_view_dag_form_chooses_the_refresh_mode(dagbag):
    job = factory.view_jobs()[0]
    dag = dagbag.dags[job.name]
    mode = dag.params.get_param("mode")
    assert (mode.value, mode.schema["enum"]) == ("incremental", list(registry.VIEW_MODE.choices))
    task = dag.get_task(job.name)
    task.render_template_fields(
        {"params": {"mode": "full-refresh"}}, jinja_env=dag.get_template_env()
    )
    assert task.application_args[-2:] == ["--mode", "full-refresh"]
    from spark_apps.lake.views.cli import parse_args

    assert parse_args(task.application_args[1:]).full_refresh is True


def test_a_quality_gate_records_its_results_under_its_run(dagbag):
    dag = dagbag.dags[factory.LAKE_DAG_ID]
    task = dag.get_task("quality_campaign_delivery")
    start = datetime(2026, 11, 21, 13, tzinfo=UTC)
    context = {
        "data_interval_start": start,
        "data_interval_end": start + timedelta(hours=1),
        "dag": dag,
        "run_id": "scheduled__2026-11-21T13:00:00+00:00",
    }
    task.render_template_fields(context, jinja_env=dag.get_template_env())
    args = task.application_args
    assert args[:3] == ["spark_apps.lake.quality", "--table", "campaign_delivery"]
    assert args[args.index("--dag-id") + 1] == factory.LAKE_DAG_ID
    assert args[args.index("--run-id") + 1] == "scheduled__2026-11-21T13:00:00+00:00"
    assert args[args.index("--start") + 1] == "2026-11-21T13:00:00+00:00"


@pytest.mark.parametrize(
    "status, fails_at_once",
    [
        (EXIT_EXPECTATIONS_FAILED, True),  # the same data would fail again: no retry
        (1, False),  # anything else (the JVM, the cluster, the disk) keeps the task's retries
    ],
)
def test_a_failed_expectation_is_not_retried_but_another_failure_is(dagbag, status, fails_at_once):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    task = dagbag.dags[factory.LAKE_DAG_ID].get_task("quality_campaign_delivery")
    assert task.retries > 0

    def submit_exits(self, context):  # the hook's message for a spark-submit's exit status
        raise AirflowException(f"Cannot execute: spark-submit …. Error code is: {status}.")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SparkSubmitOperator, "execute", submit_exits)
        with pytest.raises(AirflowException) as raised:
            task.execute({})
    assert isinstance(raised.value, AirflowFailException) is fails_at_once
