"""Airflow for the DAG tests: a home (config, logs, SQLite metadata DB) of this test session's
own, set before Airflow is first imported, so no test touches a developer's Airflow."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS_DIR = REPO / "dags"

_HOME = Path(tempfile.mkdtemp(prefix="adlake-airflow-"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(_HOME),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "false",
        # As `make up` leaves them: an asset event queues only DAGs that are not paused.
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "false",
        # make up's auth manager (its deny list's file: tests/include/ui/conftest.py's)
        "AIRFLOW__CORE__AUTH_MANAGER": "adlake.airflow.auth.AdlakeAuthManager",
    }
)


@pytest.fixture(scope="session")
def dagbag():
    from airflow.models import DagBag

    return DagBag(str(DAGS_DIR))


@pytest.fixture(scope="session")
def airflow_db():
    """``airflow db migrate`` once per test session, into this session's own Airflow home, and
    the pool the lake's Spark tasks run in (a task in a missing pool is never scheduled)."""
    from adlake.airflow.factory import LAKE_POOL

    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    for args in (["db", "migrate"], ["pools", "set", LAKE_POOL, "1", "Spark drivers of the lake"]):
        done = subprocess.run(
            [airflow, *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=os.environ.copy(),
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]


def task_env(settings, **extra: str) -> dict[str, str]:
    """What Airflow's tasks must see to work on ``settings``: its ADLAKE_* values, the Spark
    connections (masters from the settings), the lake environment's bin first on PATH."""
    from adlake.airflow.factory import connection_env

    return {
        "ADLAKE_PROFILE": settings.profile,
        "ADLAKE_RUNTIME_DIR": str(settings.runtime_dir),
        "ADLAKE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "ADLAKE_KAFKA_CONTROLLER_PORT": str(settings.kafka_controller_port),
        "ADLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
        "ADLAKE_TOPIC_PARTITIONS": str(settings.topic_partitions or ""),
        "ADLAKE_SPARK_MASTER_LAKE": settings.spark_master_lake,
        "ADLAKE_DRIVER_MEMORY": "1g",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        **connection_env(settings),
        **extra,
    }
