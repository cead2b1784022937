"""Airflow for the DAG tests: a home (config, logs, SQLite metadata DB) of this test session's
own, set before Airflow is first imported, so no test touches a developer's Airflow."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS_DIR = REPO / "dags"

_HOME = Path(tempfile.mkdtemp(prefix="adlake-airflow-"))
os.environ.update({
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME / 'airflow.db'}",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "false",
})


@pytest.fixture(scope="session")
def dagbag():
    from airflow.models import DagBag

    return DagBag(str(DAGS_DIR))
