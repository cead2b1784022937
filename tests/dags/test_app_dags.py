"""An app's DAG drives the lifecycle (adlake.apps) through Airflow: a real DAG run on the real
metadata DB, its form validated, its task's result the app's status. (Starting and stopping real
apps through these DAGs is tested in tests/dags/test_app_lifecycle_dags.py.)"""

from __future__ import annotations

import pytest

from tests.conftest import private_settings
from tests.dags.conftest import DAGS_DIR, task_env

pytestmark = pytest.mark.integration  # Airflow's metadata DB; no JVM, no broker


def test_a_status_run_reports_the_app_as_stopped(tmp_path, airflow_db):
    from airflow.models import DagBag
    from airflow.utils.state import DagRunState

    settings = private_settings(tmp_path / "rt")
    dag = DagBag(str(DAGS_DIR)).dags["app_click_surge"]
    with pytest.MonkeyPatch.context() as patch:
        for key, value in task_env(settings).items():
            patch.setenv(key, value)
        run = dag.test(run_conf={"action": "status"})
    assert run.state == DagRunState.SUCCESS
    (ti,) = run.get_task_instances()
    result = ti.xcom_pull(task_ids="act")
    assert result["action"] == "status"
    assert result["status"]["state"] == "stopped"
    assert result["status"]["desired"]["state"] == "stopped"


def test_the_form_refuses_a_knob_out_of_range(airflow_db):
    from airflow.models import DagBag
    from airflow.sdk.exceptions import ParamValidationError

    dag = DagBag(str(DAGS_DIR)).dags["app_click_surge"]
    with pytest.raises(ParamValidationError):
        dag.params.get_param("threshold").resolve(-1)
    with pytest.raises(ParamValidationError):
        dag.params.get_param("action").resolve("explode")
    assert dag.params.get_param("threshold").resolve(50) == 50
