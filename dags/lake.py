"""The lake: the hourly and daily chains (bronze → silver → gold → quality), one DAG per view
refresh and table maintenance, generated from the registry (``adlake.airflow.factory``); this
file is wiring only."""

from adlake.airflow.factory import (
    build_daily_dag,
    build_lake_dag,
    build_maintenance_dag,
    build_view_dags,
)

lake_hourly = build_lake_dag()
lake_daily = build_daily_dag()
lake_maintenance = build_maintenance_dag()
for _dag in build_view_dags():
    globals()[_dag.dag_id] = _dag
