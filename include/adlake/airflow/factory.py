"""Every Adlake DAG, generated from the registry (``adlake.registry``): adding a table, view or
app is one registry entry and no DAG edit. Imports Airflow's SDK and Adlake's registry and
configuration only: never PySpark, and no I/O when a DAG file is parsed.

* ``lake_hourly`` — the lake chain, every hour on a ``CronDataIntervalTimetable`` in UTC: the
  registry's ``hourly`` jobs (bronze → silver → gold's hour tables → their quality gate), each a
  spark-submit (``SparkSubmitOperator``) with ``--start {{ data_interval_start }} --end
  {{ data_interval_end }}``. Every job writes its interval idempotently, so a rerun gives the
  same tables.
* ``lake_daily`` — the same chain for a whole day, the registry's ``daily`` jobs: it waits
  until the day is final (``lake_day_final_after_s`` after its midnight, UTC), then bronze and
  silver catch up and every gold table's day is rebuilt once and validated. Backfills go here:
  ``airflow backfill create --dag-id lake_daily`` computes each day once.
* **Quality gates** of a chain validate all its gold tables in one spark-submit, which records
  each table's verdict; a ``quality_<table>`` task per table (no Spark, a second) reads it, so
  each table passes or fails on its own.
* ``view_<name>`` — one per ``on_update`` job (the view refreshes), then its quality gate:
  triggered when the table it reads is updated (its Asset). An asset-triggered run has no data
  interval; the refresh catches up to the source's latest version, so it needs none.
* **Assets.** Each task declares the tables it writes as Airflow Assets, except a table that a
  quality gate validates: the gate (a chain's ``quality_<table>`` task) publishes it, so a table
  whose `error` expectations fail holds back everything scheduled on it.
* **One pool** (:data:`LAKE_POOL`, ``lake_pool_slots`` slots) holds every lake Spark task of
  every DAG, backfills included: on the embedded default one driver at a time beside the
  streaming apps, and a backfill never writes beside the scheduled run. A free slot goes to the
  waiting task of highest :data:`PRIORITY`: view refreshes, then the hourly chain, then
  ``lake_daily`` and its backfills, then maintenance.
* ``app_<name>`` — one per streaming app, triggered by hand with a form (typed ``Param``s:
  action, trigger and the app's knobs). Its task only *acts* (``adlake.apps.act``): the app
  runs detached, holding its lock, never inside the task.
* ``apps_supervisor`` — every minute, keeps each app in its desired state
  (``adlake.apps.supervise``): restarts with backoff, records why, and alerts each restart and
  give-up, pointing at its own run. With ``ADLAKE_APPS_HOST=service`` (compose) both hand the
  processes to the ``streaming-apps`` service: ``act`` sends it a request and waits for its
  answer, and the supervisor only checks that its reconcile loop runs, failing when not.
* **Alerts.** Every task's failure callback (``default_args``) is
  :class:`~adlake.airflow.notifier.AlertNotifier`: the last failed try of any task alerts
  on-call (``adlake.alerts``: the local file, the ``adlake_alerts`` webhook if defined).

>>> sorted(expected_dag_ids())[:3]
['app_attribution', 'app_click_surge', 'apps_supervisor']
"""

from __future__ import annotations

import functools
import sys
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, task

from adlake import registry
from adlake.config import REPO_ROOT, Settings, load_settings

OWNER = "adlake"
# Scheduled DAGs start here; catchup is off (the scheduler runs the latest interval only), and
# a backfill (`airflow backfill create`) recomputes any past range on demand.
START = datetime(2026, 11, 1, tzinfo=UTC)
LAKE_DAG_ID = "lake_hourly"
DAILY_DAG_ID = "lake_daily"
MAINTENANCE_DAG_ID = "lake_maintenance"
SUPERVISOR_DAG_ID = "apps_supervisor"
HOURLY = "0 * * * *"
DAILY = "0 0 * * *"
# After lake_daily's day is final (02:00 by default) and its rebuild, before the morning.
MAINTENANCE = "30 3 * * *"
# The Airflow pool of the lake's Spark tasks; its size is a setting (lake_pool_slots), created by
# the platform's start (adlake.local.platform) and the compose profile's init.
LAKE_POOL = "adlake_lake"
# Who gets the lake pool's next free slot, by DAG (Airflow's priority_weight, absolute): what users
# wait for first. A view refresh publishes the newest data to dashboards; the hourly chain feeds
# gold's hours and the views; lake_daily (its scheduled days and every backfill) rebuilds days
# already published by the hours; maintenance can wait for a quiet slot.
PRIORITY = {"view": 100, "hourly": 50, "daily": 10, "maintenance": 1}
# One spark-submit entry point for every job: it runs the job's module (``application_args[0]``)
# as __main__, so the module name is visible in the task's rendered arguments.
SUBMIT = REPO_ROOT / "spark_apps" / "submit.py"
INTERVAL_ARGS = (
    "--start",
    "{{ data_interval_start | ts }}",
    "--end",
    "{{ data_interval_end | ts }}",
)
# A quality gate records its results under the DAG run that validated (dq_results).
RUN_ARGS = ("--dag-id", "{{ dag.dag_id }}", "--run-id", "{{ run_id }}")


def spark_conn_id(runtime: str) -> str:
    """The Airflow connection of a Spark runtime (see :func:`connection_env`)."""
    return f"adlake_spark_{runtime}"


def connection_env(settings: Settings) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables defining each runtime's Spark connection, with its master
    from the configuration (``local[N]`` embedded, ``spark://…`` in the compose profile), and
    the alerts' webhook (``adlake_alerts``, type http) when ``alerts_webhook_url`` is set."""
    import json

    from adlake.alerts import CONN_ID

    alerts = (
        {
            f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(
                {"conn_type": "http", "host": settings.alerts_webhook_url}
            )
        }
        if settings.alerts_webhook_url
        else {}
    )
    return alerts | {
        f"AIRFLOW_CONN_{spark_conn_id(runtime).upper()}": json.dumps(
            {
                "conn_type": "spark",
                "host": settings.spark_master(runtime),
                "extra": {"spark-binary": "spark-submit"},
            }
        )
        for runtime in ("lake", "ops")
    }


def asset(name: str) -> Asset:
    """The Asset of a registry table or view. Its identity is the registry name, not the
    Delta path: a path follows the configuration (ADLAKE_RUNTIME_DIR), and an asset whose URI
    moved would be a new asset, its history and consumers left behind."""
    return Asset(
        name=name, uri=f"adlake://tables/{name}", group="adlake", extra={"layer": _layer(name)}
    )


def _layer(name: str) -> str:
    return registry.TABLES[name].layer if name in registry.TABLES else "view"


def _is_table(name: str) -> bool:
    return name in registry.TABLES or name in registry.VIEWS


def runtime_jars_macro(runtime: str) -> str:
    """Rendered into ``--jars`` when a task runs (not at parse time): the runtime's jar set."""
    from adlake.spark_session import runtime_jars

    return ",".join(str(p) for p in runtime_jars(runtime, load_settings()))


def _default_args(retries: int, priority: int | None = None) -> dict:
    """Every task's defaults; a task that fails (its last try) alerts on-call
    (:class:`~adlake.airflow.notifier.AlertNotifier`: the local file, the webhook if any).
    ``priority``: the tasks' place in the lake pool's queue (:data:`PRIORITY`)."""
    from adlake.airflow.notifier import AlertNotifier

    args = {
        "owner": OWNER,
        "on_failure_callback": [AlertNotifier()],
        "retries": retries,
        "retry_delay": timedelta(minutes=1),
        "retry_exponential_backoff": retries > 0,
        "max_retry_delay": timedelta(minutes=10),
    }
    if priority is not None:
        # absolute: the weight is the DAG's, not the count of a task's downstream tasks (with
        # Airflow's default rule the first task of lake_daily's long chain would outrank a
        # view refresh's two)
        args.update(priority_weight=priority, weight_rule="absolute")
    return args


def gated() -> set[str]:
    """The tables a quality gate validates."""
    return {t for j in registry.JOBS.values() if j.gate for t in j.reads}


def published(job: registry.Job) -> list[str]:
    """The tables whose Asset the job's task declares as outlets. A table validated by a quality
    gate is published by the gate, not by the job that writes it: whatever is scheduled on that
    table runs only once its data passed its `error` expectations."""
    gates = gated()
    own = [t for t in job.writes if _is_table(t) and t not in gates]
    # A view's gate publishes its view; a chain's gate leaves each table to its verdict task.
    return own + (list(job.reads) if job.gate and not job.takes_interval else [])


@functools.cache
def _gate_operator() -> type:
    """``SparkSubmitOperator`` for a quality gate: failed ``error`` expectations (the job's exit
    status ``EXIT_EXPECTATIONS_FAILED``) fail the task without a retry, since a retry would only
    validate the same data again; any other failure keeps the task's retries."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from adlake.quality.results import EXIT_EXPECTATIONS_FAILED

    class QualityGateOperator(SparkSubmitOperator):
        def execute(self, context):
            try:
                return super().execute(context)
            except AirflowException as error:
                # The provider's hook reports a spark-submit's status only in its message.
                if f"Error code is: {EXIT_EXPECTATIONS_FAILED}." not in str(error):
                    raise
                raise AirflowFailException(
                    "error expectations failed (see the log above and the Data quality page): "
                    "not retried; fix the data or the rule, then clear this task"
                ) from error

    return QualityGateOperator


def outcomes_macro(dag_id: str, run_id: str) -> str:
    """Rendered into a chain gate's ``--outcome-dir`` when it runs: where it records each
    table's verdict for the table's ``quality_<table>`` task."""
    from adlake.quality.outcome import outcome_dir

    return str(outcome_dir(load_settings(), dag_id, run_id))


# A chain's gate records every table's verdict; each table's task reads its own.
# Over a slice as an earlier run validated it (a daily run over a day with nothing new), that
# run's verdict stands without Spark.
OUTCOME_ARGS = ("--outcome-dir", "{{ adlake_outcomes(dag.dag_id, run_id) }}", "--reuse-verdicts")
MACROS = {"adlake_jars": runtime_jars_macro, "adlake_outcomes": outcomes_macro}


def spark_task(job: registry.Job):
    """The job as a spark-submit; its argv (module, args, interval, and for a quality gate the
    run it records its results under) is a templated field, so the UI shows exactly what ran.
    A chain's gate fails only if it could not validate; its tables' verdicts are their own
    tasks' (:func:`table_verdict`)."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    application_args = [
        job.module,
        *job.args,
        *(INTERVAL_ARGS if job.takes_interval else ()),
        *(RUN_ARGS if job.gate or job.runs("maintenance") else ()),
        *(OUTCOME_ARGS if job.gate and job.takes_interval else ()),
        *(a for k in job.params for a in (k.flag, f"{{{{ params.{k.name} }}}}")),
    ]
    if job.runtime == "lake" and load_settings().lake_engine == "connect":
        from adlake.airflow.engine_task import engine_operator

        return engine_operator()(
            task_id=job.name,
            application_args=application_args,
            gate=job.gate and not job.takes_interval,
            doc_md=job.description,
            retries=job.retries,
            pool=LAKE_POOL,
            outlets=[asset(t) for t in published(job)],
        )
    python = sys.executable  # the lake environment is Airflow's: its interpreter runs the jobs
    operator = _gate_operator() if job.gate and not job.takes_interval else SparkSubmitOperator
    return operator(
        task_id=job.name,
        conn_id=spark_conn_id(job.runtime),
        application=str(SUBMIT),
        application_args=application_args,
        jars=f"{{{{ adlake_jars('{job.runtime}') }}}}",
        name=f"adlake-{job.name}",
        conf={"spark.pyspark.python": python, "spark.pyspark.driver.python": python},
        doc_md=job.description,
        retries=job.retries,
        pool=LAKE_POOL,
        outlets=[asset(t) for t in published(job)],
    )


def verdict_task_id(table: str) -> str:
    return f"quality_{table}"


def table_verdict(gate: registry.Job, table: str):
    """``quality_<table>``: the verdict the chain's gate recorded for ``table``, a task of its
    own (no Spark) that publishes the table's Asset when its ``error`` expectations passed and
    fails, without a retry, when they did not (a retry would read the same verdict: fix the data
    or the rule, then clear the gate)."""

    @task(task_id=verdict_task_id(table), retries=0, outlets=[asset(table)])
    def verdict(dag_run=None) -> str:
        from airflow.sdk.exceptions import AirflowFailException

        from adlake.quality import outcome
        from adlake.quality.results import QualityCheckFailed

        where = outcome.outcome_dir(load_settings(), dag_run.dag_id, dag_run.run_id)
        try:
            summary = outcome.check(where, table)
        except (QualityCheckFailed, outcome.OutcomeMissing) as failed:
            raise AirflowFailException(
                f"{failed}\nFix the data or the rule, then clear {gate.name} (it validates "
                f"again and this task reads its new verdict)."
            ) from failed
        print(summary, flush=True)
        return summary

    return verdict()


def chain(jobs: list[registry.Job]) -> dict:
    """One task per job, each downstream of the jobs that write what it reads; a chain's
    quality gate is followed by one verdict task per table it validates."""
    tasks = {j.name: spark_task(j) for j in jobs}
    writer = {table: j.name for j in jobs for table in j.writes}
    for j in jobs:
        for upstream in sorted({writer[t] for t in j.reads if t in writer} - {j.name}):
            tasks[upstream] >> tasks[j.name]
        if j.gate and j.takes_interval:
            for table in j.reads:
                tasks[verdict_task_id(table)] = table_verdict(j, table)
                tasks[j.name] >> tasks[verdict_task_id(table)]
    return tasks


def chain_jobs(schedule: str) -> list[registry.Job]:
    return [j for j in registry.JOBS.values() if j.runs(schedule)]


def _chain_dag(dag_id: str, schedule: str, cron: str, note: str) -> DAG:
    """A lake chain's DAG: one run at a time over its cron's data intervals, in UTC."""
    return DAG(
        dag_id,
        schedule=CronDataIntervalTimetable(cron, timezone="UTC"),
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["lake", schedule],
        default_args=_default_args(retries=2, priority=PRIORITY[schedule]),
        user_defined_macros=MACROS,
        doc_md=_lake_doc(schedule, chain_jobs(schedule), note),
    )


def build_lake_dag() -> DAG:
    """The hourly chain: every ``hourly`` job, ordered by what it reads and writes."""
    note = (
        "Day tables are rebuilt by `lake_daily` once the day is final; backfills of days go "
        "there too."
    )
    with _chain_dag(LAKE_DAG_ID, "hourly", HOURLY, note) as dag:
        chain(chain_jobs("hourly"))
    return dag


def build_daily_dag() -> DAG:
    """The daily chain: waits until the run's day is final, then every ``daily`` job over it."""
    from airflow.providers.standard.sensors.time_delta import TimeDeltaSensor

    jobs = chain_jobs("daily")
    final_after = timedelta(seconds=load_settings().lake_day_final_after_s)
    note = (
        f"Waits until the day is final ({final_after} after its end: late events and the "
        "next day's first hour are in silver), then rebuilds each gold table's day once. "
        "Backfill days here: `airflow backfill create --dag-id lake_daily --from-date … "
        "--to-date …` computes each day once."
    )
    with _chain_dag(DAILY_DAG_ID, "daily", DAILY, note) as dag:
        # Reschedule mode: the wait holds no worker slot; a past day (a backfill) is final.
        wait = TimeDeltaSensor(
            task_id="day_final",
            delta=final_after,
            mode="reschedule",
            poke_interval=300,
            retries=0,
        )
        tasks = chain(jobs)
        for job in jobs:
            if not (set(job.reads) & {t for j in jobs for t in j.writes}):
                wait >> tasks[job.name]
    return dag


def _lake_doc(schedule: str, jobs: list[registry.Job], note: str) -> str:
    lines = [
        f"# The lake chain, {schedule}",
        "",
        "Each task is a spark-submit of a registry job over the run's data interval "
        "(`--start/--end`); every job writes its interval idempotently, so a clear or a "
        "retry gives the same tables. " + note,
        "",
    ]
    lines += [f"* **{j.name}** — {j.description}" for j in jobs]
    return "\n".join(lines)


def gates_of(job: registry.Job) -> list[registry.Job]:
    """The quality gates that validate what ``job`` writes."""
    return [g for g in registry.JOBS.values() if g.gate and set(g.reads) & set(job.writes)]


def gate_dag_ids() -> dict[str, set[str]]:
    """Per table a quality gate validates, the DAGs whose runs validate it: a lake chain's for a
    gold table (its gate runs in ``lake_hourly``, ``lake_daily`` or both), the view's own DAG
    for a view.

    >>> dags = gate_dag_ids()
    >>> sorted(dags["campaign_delivery"]), dags["attribution_funnel"], dags["page_clicks_hourly"]
    (['lake_daily', 'lake_hourly'], {'lake_daily'}, {'view_page_clicks_hourly'})
    """
    dags: dict[str, set[str]] = {}
    chains = {"hourly": LAKE_DAG_ID, "daily": DAILY_DAG_ID}
    owners = [(chains[s], j) for s in chains for j in chain_jobs(s)]
    owners += [(view.name, gate) for view in view_jobs() for gate in gates_of(view)]
    for dag_id, job in owners:
        if job.gate:
            for table in job.reads:
                dags.setdefault(table, set()).add(dag_id)
    return dags


def build_view_dag(job: registry.Job) -> DAG:
    """An ``on_update`` job, run when any table it reads is updated, then its quality gates."""
    gates = gates_of(job)
    with DAG(
        job.name,
        schedule=[asset(t) for t in job.reads],
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["lake", "view"],
        default_args=_default_args(job.retries, PRIORITY["view"]),
        params={k.name: knob_param(k) for k in job.params},
        user_defined_macros=MACROS,
        doc_md=f"# {job.name}\n\n{job.description}\n\nRuns when "
        f"{', '.join(f'`{t}`' for t in job.reads)} is updated; an asset-triggered "
        "run has no data interval, and the refresh needs none: it catches up to "
        "the source's latest version."
        + "".join(f"\n\n**{g.name}** — {g.description}" for g in gates),
    ) as dag:
        chain([job, *gates])
    return dag


def build_maintenance_dag() -> DAG:
    """Table maintenance, daily after the day's finalization; its form: dry run, retention,
    tables. A cron trigger, not a data interval: maintenance acts on the tables as they are."""
    from airflow.sdk import CronTriggerTimetable

    (job,) = [j for j in registry.JOBS.values() if j.runs("maintenance")]
    with DAG(
        MAINTENANCE_DAG_ID,
        schedule=CronTriggerTimetable(MAINTENANCE, timezone="UTC"),
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["lake", "maintenance"],
        default_args=_default_args(job.retries, PRIORITY["maintenance"]),
        params={k.name: knob_param(k) for k in job.params},
        user_defined_macros=MACROS,
        doc_md=f"# {MAINTENANCE_DAG_ID}\n\n{job.description}\n\nTrigger it with `dry_run` "
        "to see what it would do; the runbook's *Table maintenance* says how to change the "
        "retention.",
    ) as dag:
        spark_task(job)
    return dag


def app_params(app: registry.App) -> dict[str, Param]:
    """The trigger form of an app's DAG: action, trigger (with the checkpoint interval the app
    runs at in Real-Time Mode, and its trade-off), and the app's knobs, typed."""
    from adlake.apps import rtm_interval_s

    interval = rtm_interval_s(load_settings(), app.name)
    params = {
        "action": Param(
            "status",
            type="string",
            enum=list(registry.APP_ACTIONS),
            description="start, stop or restart the app, or show its status",
        ),
        "trigger": Param(
            app.default_trigger,
            type="string",
            enum=list(registry.TRIGGERS),
            description=f"realtime: Real-Time Mode, a checkpoint every {interval} s (a longer "
            "interval pauses less often; a crash replays up to one interval of input; "
            "ADLAKE_APP_RTM_INTERVAL_S sets it: see the Streaming apps docs); processing_time: "
            "micro-batches (a switch keeps the input: see the runbook)",
        ),
    }
    for knob in app.knobs:
        params[knob.name] = knob_param(knob)
    return params


def knob_param(knob: registry.Knob) -> Param:
    """A typed field of a trigger form (one without a default may be left empty)."""
    extra = {"enum": list(knob.choices)} if knob.choices else {}
    if knob.minimum is not None:
        extra["minimum"] = knob.minimum
    if knob.maximum is not None:
        extra["maximum"] = knob.maximum
    kind = knob.type if knob.default is not None else [knob.type, "null"]
    return Param(knob.default, type=kind, description=knob.description, **extra)


def _rules_md(app: registry.App) -> str:
    """The app's knob rules (registry ``App.rules``) for its DAG's docs: a start that breaks one
    is refused before anything is recorded, the task failing with the reason."""
    if not app.rules:
        return ""
    rules = "".join(f"\n* {rule.description}" for rule in app.rules)
    return f"\n\nA start is refused unless its knobs meet these rules:{rules}"


def build_app_dag(app: registry.App) -> DAG:
    """Start, stop, restart or show one streaming app. No retry: an action that failed half-way
    is reconciled by the supervisor, not repeated blindly."""
    with DAG(
        f"app_{app.name}",
        schedule=None,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["ops", "streaming-app"],
        params=app_params(app),
        default_args=_default_args(retries=0),
        doc_md=f"# {app.name}\n\n{app.description}\n\nTrigger with a form: `action` "
        "(start, stop, restart, status), `trigger` and the app's knobs. The app runs "
        "as a detached process holding an exclusive lock (one instance whatever "
        "Airflow does); this task only changes its desired state and acts." + _rules_md(app),
    ) as dag:

        @task(task_id="act")
        def act(params: dict | None = None) -> dict:
            from adlake import apps

            knobs = {k.name: params[k.name] for k in app.knobs}
            return apps.act(
                load_settings(),
                app.name,
                params["action"],
                trigger=params["trigger"],
                knobs=knobs,
                reason="airflow",
            )

        act()
    return dag


def build_supervisor_dag() -> DAG:
    with DAG(
        SUPERVISOR_DAG_ID,
        schedule=timedelta(minutes=1),
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["ops", "supervisor"],
        default_args=_default_args(0),
        doc_md="# Supervisor\n\nEvery minute: restarts each streaming app that should run "
        "and does not (crash, kill -9, OOM) or whose progress is stale, with "
        "exponential backoff, and stops what should not run. Every restart is "
        "recorded in the app's status (count, reason, last error). With the apps in the "
        "streaming-apps service (ADLAKE_APPS_HOST=service), its reconcile loop does this "
        "every 10 s, and this task only checks that the loop runs and keeps up.",
    ) as dag:

        @task(task_id="supervise")
        def supervise(ti=None) -> list[dict]:
            from adlake import apps

            # where the restarts' and give-ups' alerts point: this task's run and log
            origin = {
                "dag_id": ti.dag_id,
                "task_id": ti.task_id,
                "run_id": ti.run_id,
                "try_number": ti.try_number,
                "log_url": ti.log_url,
            }
            return apps.supervise(load_settings(), origin=origin)

        supervise()
    return dag


def ops_apps() -> list[registry.App]:
    return list(registry.ops_apps())


def view_jobs() -> list[registry.Job]:
    """The ``on_update`` jobs that own a DAG (their quality gates run inside it)."""
    return [j for j in registry.JOBS.values() if j.runs("on_update") and not j.gate]


def build_view_dags() -> list[DAG]:
    return [build_view_dag(j) for j in view_jobs()]


def build_app_dags() -> list[DAG]:
    return [build_app_dag(a) for a in ops_apps()]


def expected_dag_ids() -> set[str]:
    """One DAG per registry entry that schedules work: the lake chains (``hourly`` and ``daily``
    jobs), table maintenance, one per ``on_update`` job (with its quality gates), one per
    streaming app, plus the supervisor."""
    return (
        {LAKE_DAG_ID, DAILY_DAG_ID, MAINTENANCE_DAG_ID, SUPERVISOR_DAG_ID}
        | {j.name for j in view_jobs()}
        | {f"app_{a.name}" for a in ops_apps()}
    )
