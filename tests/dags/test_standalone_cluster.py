"""The compose profile's path without Docker: a Spark standalone master and worker, started from
the pinned lake runtime's own distribution (PySpark's jars, ``spark-class``) on loopback, and a
lake DAG's Spark task submitted to its ``spark://`` URL by ``SparkSubmitOperator`` (the task's
Spark connection takes its master from the configuration). The output table is checked."""

from __future__ import annotations

import datetime as dt

import pytest

from adlake import registry
from adlake.airflow import factory
from tests.conftest import private_settings
from tests.dags.conftest import DAGS_DIR, task_env
from tests.support.standalone import standalone_cluster

# The spark:// path (the compose shape) is an exhaustive variant of a lake task run, which
# make test covers in local mode (test_lake_dag_run, test_platform_ui): make test-e2e runs it.
pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DAY = dt.date(2026, 11, 21)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A master and one worker (2 cores) on 127.0.0.1 (:mod:`tests.support.standalone`); yields
    the master URL and a function returning the master's state (its JSON API)."""
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=1, cores=2) as cluster:
        yield cluster.url, cluster.state


def test_a_lake_dag_task_runs_on_a_standalone_cluster(standalone, tmp_path, spark, airflow_db):
    url, master_state = standalone
    from airflow.models import DagBag
    from airflow.utils.state import DagRunState, TaskInstanceState
    from pyspark.sql import Row

    from spark_apps.lake.tables import ensure_table, read_table, table_path

    # A spark-submit per task (not the lake engine): the task's own driver on the cluster.
    settings = private_settings(tmp_path / "rt").with_overrides(
        spark_master_lake=url, lake_engine="local"
    )
    # Silver page clicks of one day, written here; the DAG's gold task reads them on the cluster.
    clicks = registry.table("silver_page_clicks")
    ensure_table(spark, settings, clicks)
    t0 = dt.datetime(2026, 11, 21, 10, 0, 5)
    rows = [
        Row(
            click_id=f"c{i}",
            page_id="home" if i < 3 else "news",
            event_time=t0 + dt.timedelta(seconds=i),
            user_id=f"u{i % 2}",
            topic="page_clicks",
            partition=0,
            offset=i,
            kafka_timestamp=t0,
            event_date=DAY,
        )
        for i in range(5)
    ]
    (
        spark.createDataFrame(rows, clicks.schema.spark())
        .write.format("delta")
        .mode("append")
        .save(table_path(settings, clicks))
    )

    hour = dt.datetime(2026, 11, 21, 10, tzinfo=dt.UTC)
    with pytest.MonkeyPatch.context() as patch:
        env = task_env(settings, SPARK_LOCAL_IP="127.0.0.1", ADLAKE_LAKE_ENGINE="local")
        for key, value in env.items():
            patch.setenv(key, value)
        # parsed with these settings: its lake tasks are spark-submits
        lake = DagBag(str(DAGS_DIR)).dags[factory.LAKE_DAG_ID]
        # the run whose data interval is the 10:00 hour: a manual run's ends at its logical date
        logical = hour + dt.timedelta(hours=1)
        # bronze and silver would need a broker, and the cluster path is the same for every
        # task: gold runs there (the quality gates run through Airflow in test_lake_dag_run.py)
        run = lake.test(logical_date=logical, mark_success_pattern="^(bronze|silver|quality_.*)$")
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    assert states["gold"] == TaskInstanceState.SUCCESS

    traffic = {
        (r.page_id, r.clicks, r.distinct_users)
        for r in read_table(spark, settings, "page_traffic").collect()
    }
    assert traffic == {("home", 3, 2), ("news", 2, 2)}
    # The task really ran on the cluster: the master lists it (the only application submitted
    # to it) as completed.
    assert len(master_state()["completedapps"]) == 1
