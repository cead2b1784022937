"""Adlake's Airflow layer: the DAGs are generated from the registry by :mod:`.factory`; the files
under ``dags/`` only call it. Nothing here imports PySpark (DAG parsing must not)."""
