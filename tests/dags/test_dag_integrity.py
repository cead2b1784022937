"""DAG integrity (the Astro pattern) plus parity with the registry: every DAG parses, without
PySpark, one per registry entry, each with an owner, tags, a doc and the retries its work
allows; templates render the data interval."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from adlake import registry
from adlake.airflow import factory
from adlake.catalog import gold
from adlake.config import load_settings
from adlake.quality import outcome
from adlake.quality.results import EXIT_EXPECTATIONS_FAILED, RunContext
from tests.dags.conftest import DAGS_DIR


def test_dagbag_has_no_import_errors(dagbag):
    assert dagbag.import_errors == {}


CHAINS = {factory.LAKE_DAG_ID: "hourly", factory.DAILY_DAG_ID: "daily"}


def chain_gate(schedule: str) -> registry.Job:
    [gate] = [j for j in registry.JOBS.values() if j.gate and j.runs(schedule)]
    return gate


def test_exactly_one_dag_per_registry_entry_plus_the_supervisor(dagbag):
    assert set(dagbag.dag_ids) == factory.expected_dag_ids()
    for dag_id, schedule in CHAINS.items():
        jobs = {j.name for j in registry.JOBS.values() if j.runs(schedule)}
        verdicts = {f"quality_{t}" for t in chain_gate(schedule).reads}
        waits = {"day_final"} if schedule == "daily" else set()
        assert {t.task_id for t in dagbag.dags[dag_id].tasks} == jobs | verdicts | waits
    # The hourly chain rebuilds the hour tables; the daily one every gold table.
    assert chain_gate("hourly").reads == registry.GOLD_HOURLY
    assert chain_gate("daily").reads == tuple(t.name for t in gold.TABLES)
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
            if dag_id.startswith(("app_", factory.SUPERVISOR_DAG_ID)) or task.task_id not in (
                registry.JOBS
            ):
                # an action half-done is reconciled by the supervisor, never repeated blindly; a
                # verdict or a wait reads a file or the clock, which a retry would read again
                assert task.retries == 0, (dag_id, task.task_id)
            else:
                # every lake job writes idempotently: a retry is safe
                assert task.retries == registry.job(task.task_id).retries > 0
                assert task.retry_exponential_backoff


@pytest.mark.parametrize("dag_id", CHAINS)
def test_the_lake_chain_follows_what_each_job_reads_and_writes(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    gate = chain_gate(CHAINS[dag_id])
    [gold] = [
        j for j in registry.JOBS.values() if j.runs(CHAINS[dag_id]) and j.writes == gate.reads
    ]
    assert dag.get_task("bronze").upstream_task_ids == (
        {"day_final"} if dag_id == factory.DAILY_DAG_ID else set()
    )
    assert dag.get_task("silver").upstream_task_ids == {"bronze"}
    assert dag.get_task(gold.name).upstream_task_ids == {"silver"}
    assert dag.get_task(gate.name).upstream_task_ids == {gold.name}
    # Each gold table is published (its Asset updated) by its verdict task, not by gold or the
    # gate's spark-submit: a table that fails an `error` expectation holds back whatever is
    # scheduled on it, and each table passes or fails on its own.
    assert {a.name for a in dag.get_task(gold.name).outlets} == set()
    assert {a.name for a in dag.get_task(gate.name).outlets} == {"dq_results"}
    for table in gate.reads:
        verdict = dag.get_task(f"quality_{table}")
        assert verdict.upstream_task_ids == {gate.name} and verdict.downstream_task_ids == set()
        assert {a.name for a in verdict.outlets} == {table}


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

    for dag_id, cron in [
        (factory.LAKE_DAG_ID, factory.HOURLY),
        (factory.DAILY_DAG_ID, "0 0 * * *"),
    ]:
        dag = dagbag.dags[dag_id]
        assert isinstance(dag.timetable, CronDataIntervalTimetable)
        assert (dag.timetable.expression, str(dag.timetable.timezone)) == (cron, "UTC")
        assert dag.catchup is False and dag.max_active_runs == 1


def test_views_run_when_their_source_table_updates(dagbag):
    for job in factory.view_jobs():
        dag = dagbag.dags[job.name]
        names = {a.name for a in dag.timetable.asset_condition.objects}
        assert names == set(job.reads), job.name


def test_producers_declare_their_tables_as_outlets(dagbag):
    tables = set(registry.TABLES) | set(registry.VIEWS)
    gated = {t for j in registry.JOBS.values() if j.gate for t in j.reads}
    for dag_id in [*CHAINS, *(j.name for j in factory.view_jobs())]:
        for task in dagbag.dags[dag_id].tasks:
            if task.task_id not in registry.JOBS:
                continue  # a verdict task (above) or the daily wait
            job = registry.job(task.task_id)
            view_gate = job.gate and not job.takes_interval
            expected = (set(job.writes) & tables) - gated | (set(job.reads) if view_gate else set())
            assert {a.name for a in task.outlets} == expected, task.task_id


# A lake job's task: a client of the lake engine (the default), or a spark-submit (local).
JOB_OPERATORS = ("LakeEngineJobOperator", "SparkSubmitOperator")


def test_every_lake_spark_task_shares_one_pool(dagbag):
    spark_tasks = [
        t
        for dag_id in [
            *CHAINS,
            factory.MAINTENANCE_DAG_ID,
            *(j.name for j in factory.view_jobs()),
        ]
        for t in dagbag.dags[dag_id].tasks
        if type(t).__name__ in JOB_OPERATORS
    ]
    assert len(spark_tasks) > 8
    assert {t.pool for t in spark_tasks} == {factory.LAKE_POOL}


def test_a_free_lake_slot_goes_to_a_view_then_the_hour_then_the_day_then_maintenance(dagbag):
    # What the scheduler compares among the pool's queued tasks: each task's weight, as is
    # (absolute). With Airflow's default rule (downstream: a task's weight plus its downstream
    # tasks') lake_daily's bronze, ahead of a dozen tasks, would outrank a view refresh.
    def weights(dag_ids) -> set[int]:
        tasks = [
            t
            for dag_id in dag_ids
            for t in dagbag.dags[dag_id].tasks
            if t.pool == factory.LAKE_POOL
        ]
        assert {str(t.weight_rule) for t in tasks} == {"absolute"}
        return {t.priority_weight for t in tasks}

    views = weights(j.name for j in factory.view_jobs())
    hourly, daily = weights([factory.LAKE_DAG_ID]), weights([factory.DAILY_DAG_ID])
    maintenance = weights([factory.MAINTENANCE_DAG_ID])
    assert min(views) > max(hourly) and min(hourly) > max(daily) > max(maintenance), (
        views,
        hourly,
        daily,
        maintenance,
    )


def test_maintenance_runs_daily_with_a_form_of_dry_run_retention_and_tables(dagbag):
    from airflow.sdk import CronTriggerTimetable

    dag = dagbag.dags[factory.MAINTENANCE_DAG_ID]
    assert isinstance(dag.timetable, CronTriggerTimetable)
    assert (dag.timetable.expression, str(dag.timetable.timezone)) == (factory.MAINTENANCE, "UTC")
    assert dag.catchup is False and dag.max_active_runs == 1
    params = dag.params
    assert (params["dry_run"], params["retention_hours"], params["tables"]) == (False, None, "all")
    assert params.get_param("dry_run").schema["type"] == "boolean"
    # Empty means the configuration's retention; a negative one is not a valid form.
    assert params.get_param("retention_hours").schema["type"] == ["integer", "null"]
    assert params.get_param("retention_hours").schema["minimum"] == 0
    # ten years at most, as ADLAKE_LAKE_RETENTION_HOURS
    assert params.get_param("retention_hours").schema["maximum"] == 87_600
    (task,) = dag.tasks
    args = task.application_args
    for flag in ("--dry-run", "--retention-hours", "--tables"):
        name = flag[2:].replace("-", "_")
        assert args[args.index(flag) + 1] == f"{{{{ params.{name} }}}}"
    assert args[args.index("--run-id") + 1] == "{{ run_id }}"


def test_app_dags_have_a_typed_form(dagbag):
    for app in registry.APPS.values():
        dag = dagbag.dags[f"app_{app.name}"]
        assert dag.schedule is None and dag.max_active_runs == 1
        params = dag.params
        assert params.get_param("action").schema["enum"] == list(registry.APP_ACTIONS)
        assert params.get_param("trigger").schema["enum"] == list(registry.TRIGGERS)
        assert params["trigger"] == app.default_trigger
        # the form says how often Real-Time Mode checkpoints this app, and what that trades
        described = params.get_param("trigger").description
        assert f"a checkpoint every {app.rtm_interval_s} s" in described
        assert "a crash replays up to one interval" in described
        for knob in app.knobs:
            assert params.get_param(knob.name).schema["type"] == knob.type
            assert params[knob.name] == knob.default
            if knob.type in ("integer", "number"):
                schema = params.get_param(knob.name).schema
                assert (schema["minimum"], schema["maximum"]) == (knob.minimum, knob.maximum)


def test_a_form_refuses_a_knob_above_its_maximum(dagbag):
    from airflow.sdk.exceptions import ParamValidationError

    window = dagbag.dags["app_attribution"].params.get_param("window_s")
    assert window.resolve(value=86_400) == 86_400
    with pytest.raises(ParamValidationError, match="86400"):
        window.resolve(value=86_401)
    threshold = dagbag.dags["app_click_surge"].params.get_param("threshold")
    with pytest.raises(ParamValidationError):
        threshold.resolve(value=10**30)


def test_supervisor_runs_every_minute_one_at_a_time(dagbag):
    dag = dagbag.dags[factory.SUPERVISOR_DAG_ID]
    assert dag.max_active_runs == 1 and dag.catchup is False
    assert dag.timetable.delta == timedelta(minutes=1)


@pytest.mark.parametrize(
    ("dag_id", "task_id"),
    [
        (factory.LAKE_DAG_ID, "bronze"),
        (factory.LAKE_DAG_ID, "silver"),
        (factory.LAKE_DAG_ID, "gold"),
    ]
    + [(factory.DAILY_DAG_ID, "gold_daily")],
)
def test_rendered_arguments_carry_the_data_interval(dagbag, dag_id, task_id):
    dag = dagbag.dags[dag_id]
    task = dag.get_task(task_id)
    start = datetime(2026, 11, 21, 13, tzinfo=UTC)
    context = {"data_interval_start": start, "data_interval_end": start + timedelta(hours=1)}
    task.render_template_fields(context, jinja_env=dag.get_template_env())
    args = task.application_args
    job = registry.job(task_id)
    assert args[: 1 + len(job.args)] == [job.module, *job.args]
    assert args[args.index("--start") + 1] == "2026-11-21T13:00:00+00:00"
    assert args[args.index("--end") + 1] == "2026-11-21T14:00:00+00:00"


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
    task = dag.get_task("quality_gold")
    start = datetime(2026, 11, 21, 13, tzinfo=UTC)
    context = {
        "data_interval_start": start,
        "data_interval_end": start + timedelta(hours=1),
        "dag": dag,
        "run_id": "scheduled__2026-11-21T13:00:00+00:00",
    }
    task.render_template_fields(context, jinja_env=dag.get_template_env())
    args = task.application_args
    assert args[:3] == ["spark_apps.lake.quality", "--tables", ",".join(registry.GOLD_HOURLY)]
    assert args[args.index("--dag-id") + 1] == factory.LAKE_DAG_ID
    assert args[args.index("--run-id") + 1] == "scheduled__2026-11-21T13:00:00+00:00"
    assert args[args.index("--start") + 1] == "2026-11-21T13:00:00+00:00"
    assert args[args.index("--outcome-dir") + 1] == str(
        outcome.outcome_dir(load_settings(), factory.LAKE_DAG_ID, context["run_id"])
    )
    assert "--reuse-verdicts" in args  # a slice as validated before keeps its verdict


@pytest.mark.parametrize(
    "status, fails_at_once",
    [
        (EXIT_EXPECTATIONS_FAILED, True),  # the same data would fail again: no retry
        (1, False),  # anything else (the JVM, the cluster, the disk) keeps the task's retries
    ],
)
def test_a_failed_expectation_is_not_retried_but_another_failure_is(
    dagbag, monkeypatch, status, fails_at_once
):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from adlake.airflow import engine_task
    from adlake.local import engine

    view = factory.view_jobs()[0].writes[0]
    task = dagbag.dags[factory.view_jobs()[0].name].get_task(f"quality_{view}")
    assert task.retries > 0 and type(task).__name__ == "LakeEngineJobOperator"

    class Exits:  # the job's process, exiting with ``status``
        def __init__(self, *args, **kwargs):
            self.stdout, self.pid = iter(["[quality] ..."]), 0

        def wait(self):
            return status

    monkeypatch.setattr(engine_task.subprocess, "Popen", Exits)
    monkeypatch.setattr(engine, "release_sessions", lambda settings, ids: [])
    ti = SimpleNamespace(dag_id="d", task_id=task.task_id, run_id="r", map_index=-1, try_number=1)
    with pytest.raises(AirflowException) as raised:
        task.execute({"ti": ti})
    assert isinstance(raised.value, AirflowFailException) is fails_at_once

    # its spark-submit form (ADLAKE_LAKE_ENGINE=local) decides the same from the hook's message
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    def submit_exits(self, context):  # the hook's message for a spark-submit's exit status
        raise AirflowException(f"Cannot execute: spark-submit …. Error code is: {status}.")

    monkeypatch.setenv("ADLAKE_LAKE_ENGINE", "local")
    local = factory.build_view_dag(factory.view_jobs()[0]).get_task(f"quality_{view}")
    monkeypatch.setattr(SparkSubmitOperator, "execute", submit_exits)
    with pytest.raises(AirflowException) as raised:
        local.execute({})
    assert isinstance(raised.value, AirflowFailException) is fails_at_once


@pytest.mark.parametrize("severity", ["warn", "error", None])
def test_a_tables_verdict_task_passes_or_fails_it_by_the_gates_outcome(
    dagbag, tmp_path, monkeypatch, severity
):
    """``quality_<table>`` reads what the chain's gate recorded for it: warn failures pass, an
    error failure or no outcome at all fails it at once (no retry would change the verdict)."""
    from types import SimpleNamespace

    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("ADLAKE_RUNTIME_DIR", str(tmp_path))
    run = SimpleNamespace(dag_id=factory.LAKE_DAG_ID, run_id="scheduled__2026-11-21T13:00:00+00:00")
    table = registry.GOLD_HOURLY[0]
    if severity:
        context = RunContext(run.dag_id, run.run_id, table, None, None, datetime.now(UTC))
        row = {"expectation": "x", "severity": severity, "success": False, "observed_value": "7"}
        where = outcome.outcome_dir(load_settings(), run.dag_id, run.run_id)
        outcome.write_outcome(where, outcome.make_outcome(context, [row], "report", "docs", 1.0))
    verdict = dagbag.dags[factory.LAKE_DAG_ID].get_task(f"quality_{table}")

    if severity == "warn":
        assert verdict.python_callable(dag_run=run).startswith(f"{table} passed")
    else:
        with pytest.raises(AirflowFailException, match="clear quality_gold"):
            verdict.python_callable(dag_run=run)


def test_on_the_lake_engine_every_lake_task_runs_its_command_line_as_a_client(monkeypatch):
    # The default (the lake engine) and ADLAKE_LAKE_ENGINE=local: the same jobs, the same
    # arguments, the same pool; spark-submit only in the second.
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    on_engine = {t.task_id: t for t in factory.build_lake_dag().tasks
                 if type(t).__name__ == "LakeEngineJobOperator"}  # fmt: skip
    monkeypatch.setenv("ADLAKE_LAKE_ENGINE", "local")
    submitted = {t.task_id: t for t in factory.build_lake_dag().tasks if t.task_id in on_engine}
    assert set(on_engine) == set(submitted) and on_engine
    for task_id, task in submitted.items():
        assert isinstance(task, SparkSubmitOperator), task_id
        assert task.application_args == on_engine[task_id].application_args
        assert task.pool == on_engine[task_id].pool == factory.LAKE_POOL
        assert task._conn_id == factory.spark_conn_id("lake")
        assert task.application == str(factory.SUBMIT)
