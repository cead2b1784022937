"""The streaming apps: one DAG per app (a form: action, trigger, knobs) and the supervisor,
generated from the registry (``adlake.airflow.factory``); this file is wiring only."""

from adlake.airflow.factory import build_app_dags, build_supervisor_dag

apps_supervisor = build_supervisor_dag()
for _dag in build_app_dags():
    globals()[_dag.dag_id] = _dag
