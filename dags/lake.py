"""The lake: the hourly chain (bronze → silver → gold) and one DAG per view refresh, generated
from the registry (``adlake.airflow.factory``); this file is wiring only."""

from adlake.airflow.factory import build_lake_dag, build_view_dags

lake_hourly = build_lake_dag()
for _dag in build_view_dags():
    globals()[_dag.dag_id] = _dag
