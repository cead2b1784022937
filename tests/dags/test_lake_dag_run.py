"""The lake chain run by Airflow, end to end: a real broker loaded with generated traffic, the
``lake_hourly`` DAG run by ``dag.test()`` on a real metadata DB (SQLite), every task a real
spark-submit writing real Delta tables, the hour tables' quality gate (one spark-submit) passing
and then, on a duplicated key in one table, failing that table's task alone and holding it back; then the views, which the run's assets
queued, one of them refreshed (and its quality gate run) by its own DAG. Counts come from the
generator's report, not from the code under test."""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import unquote

import pytest

from adlake import generator, registry
from adlake.airflow import factory
from adlake.generator.traffic import LATE_EXTRA_MS
from tests.conftest import private_settings
from tests.dags.conftest import DAGS_DIR, task_env

pytestmark = pytest.mark.integration

INPUTS = ("ad_requests", "ad_impressions", "ad_callbacks", "page_clicks")
# The table broken below; the chain's gate validates every hour table in one spark-submit.
GATED = "campaign_delivery"
GATE = "quality_gold"
MALFORMED = ("invalid_json", "missing_field", "wrong_type")
HOUR = dt.timedelta(hours=1)


@pytest.fixture(scope="module")
def platform_env(tmp_path_factory, airflow_db):
    """A broker of this module, generated traffic, and the environment Airflow's tasks see:
    the test's ADLAKE_* settings, the Spark connections, the lake environment's bin on PATH."""
    from adlake.local.kafka import LocalKafka

    settings = private_settings(tmp_path_factory.mktemp("airflow-lake"))
    broker = LocalKafka(settings)
    broker.start()
    broker.create_topics()
    config = generator.GeneratorConfig(
        rate=3000,
        count=800,
        seed=5,
        out_of_order=0.05,
        duplicates=0.05,
        late=0.02,
        malformed=0.05,
        orphans=0.05,
        surge_pages=1,
        surge_rate=200,
    )
    report = generator.run(config, settings.kafka_bootstrap, progress=False)
    env = task_env(settings)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        try:
            yield settings, report
        finally:
            broker.stop()


def _hour(t: dt.datetime) -> dt.datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def send_hour(report) -> dt.datetime:
    """The hour the generator started sending in."""
    return _hour(_time(report["started_at"]))


def hours_of(report) -> list[dt.datetime]:
    """The start of every hour the generated events' times fall in (usually one): from the
    earliest a late event's time can be (the first send less the lateness and the most
    LATE_EXTRA_MS adds) to the last send. A run started in an hour's first 90 s has late events
    in the hour before."""
    late_by = dt.timedelta(seconds=report["lateness_s"], milliseconds=LATE_EXTRA_MS[1])
    first = _hour(_time(report["started_at"]) - late_by)
    last = _hour(_time(report["finished_at"]))
    return [first + dt.timedelta(hours=i) for i in range(int((last - first) / HOUR) + 1)]


def test_lake_chain_dag_writes_the_expected_tables_and_queues_the_views(platform_env, spark):
    from airflow.models import DagBag
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState
    from sqlalchemy import select

    from spark_apps.lake import silver
    from spark_apps.lake.tables import read_table

    settings, report = platform_env
    bag = DagBag(str(DAGS_DIR))
    lake = bag.dags[factory.LAKE_DAG_ID]
    for hour in hours_of(report):
        # A manual run's data interval is the whole hour before its logical date.
        run = lake.test(logical_date=hour + dt.timedelta(hours=1))
        assert run.state == DagRunState.SUCCESS, f"lake_hourly {hour}: {run.state}"
        assert (run.data_interval_start, run.data_interval_end) == (
            hour,
            hour + dt.timedelta(hours=1),
        )

    # Bronze holds every record sent; silver + quarantine + duplicates account for each.
    accounts = {t: silver.accounting(spark, settings, t) for t in INPUTS}
    for topic in INPUTS:
        by_kind = report["anomalies_by_topic"][topic]
        malformed = sum(by_kind[k] for k in MALFORMED)
        assert accounts[topic] == {
            "bronze": report["sent"][topic],
            "quarantine": malformed,
            "duplicates": by_kind["duplicate"],
            "silver": report["sent"][topic] - malformed - by_kind["duplicate"],
        }, topic
    # Gold: every valid impression and click counted once.
    n_silver = {t: accounts[t]["silver"] for t in INPUTS}
    delivery = read_table(spark, settings, "campaign_delivery").groupBy().sum("impressions")
    assert delivery.collect()[0][0] == n_silver["ad_impressions"]
    traffic = read_table(spark, settings, "page_traffic").groupBy().sum("clicks")
    assert traffic.collect()[0][0] == n_silver["page_clicks"]

    # Every table the chain wrote got an asset event (each gold table through its verdict,
    # which passed and recorded its results), and each view's DAG is queued on its source.
    with create_session() as session:
        updated = set(
            session.scalars(
                select(AssetModel.name).join(AssetEvent, AssetEvent.asset_id == AssetModel.id)
            )
        )
        queued = set(session.scalars(select(AssetDagRunQueue.target_dag_id)))
    assert {
        "bronze_ad_callbacks",
        "silver_ad_callbacks",
        "quarantine",
        *registry.GOLD_HOURLY,
        "dq_results",
    } <= updated
    assert {j.name for j in factory.view_jobs()} <= queued
    results = read_table(spark, settings, "dq_results").collect()
    assert {r.table for r in results} == set(registry.GOLD_HOURLY)
    assert all(r.success or r.severity == "warn" for r in results)
    assert {r.dag_id for r in results} == {factory.LAKE_DAG_ID}


def test_a_gold_table_failing_its_gate_fails_the_run_and_is_not_published(platform_env, spark):
    """A duplicated key in the hour's slice of a gold table: its verdict task fails at its first
    try (no retry) while the other tables' pass, its results name the failed expectation, and
    the table gets no asset event, so nothing scheduled on it runs."""
    from airflow.models import DagBag
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, TaskInstanceState
    from sqlalchemy import func, select

    from spark_apps.lake.tables import read_table, table_path

    settings, report = platform_env
    hour = send_hour(report)

    def events() -> int:
        with create_session() as session:
            return session.scalar(
                select(func.count())
                .select_from(AssetEvent)
                .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                .where(AssetModel.name == GATED)
            )

    before = events()
    table = read_table(spark, settings, GATED)
    table.limit(1).write.format("delta").mode("append").save(str(table_path(settings, GATED)))
    lake = DagBag(str(DAGS_DIR)).dags[factory.LAKE_DAG_ID]
    # Only the gate runs: gold would rebuild the hour and replace the duplicate.
    run = lake.test(
        logical_date=hour + dt.timedelta(hours=1, minutes=5),
        mark_success_pattern=r"^(bronze|silver|gold)$",
    )
    assert run.state == DagRunState.FAILED
    states = {ti.task_id: (ti.state, ti.try_number) for ti in run.get_task_instances()}
    # The gate validated them all; only the broken table's verdict failed, at its first try:
    # the same data would fail again.
    assert states[GATE][0] == TaskInstanceState.SUCCESS
    assert states[f"quality_{GATED}"] == (TaskInstanceState.FAILED, 1)
    for table in set(registry.GOLD_HOURLY) - {GATED}:
        assert states[f"quality_{table}"][0] == TaskInstanceState.SUCCESS, table
    assert events() == before
    failed = (
        read_table(spark, settings, "dq_results")
        .where(f"table = '{GATED}' AND run_id = '{run.run_id}' AND NOT success")
        .collect()
    )
    assert [(r.expectation.split("(")[0], r.severity) for r in failed] == [
        ("expect_compound_columns_to_be_unique", "error")
    ], failed
    # on-call's alert (no webhook here: the local file) names the same expectation and links
    # the validation's Data Docs page, a page GX wrote
    from adlake.alerts import alerts_file

    [alert] = [json.loads(line) for line in alerts_file(settings).read_text().splitlines()]
    assert (alert["kind"], alert["task_id"], alert["run_id"]) == (
        "quality_failed",
        f"quality_{GATED}",
        run.run_id,
    )
    assert [f["expectation"] for f in alert["failed_expectations"]] == [failed[0].expectation]
    page = alert["data_docs_url"].split("/adlake/data-docs/", 1)[1]
    assert page.startswith(f"validations/{GATED}/")
    assert (settings.gx_dir / "uncommitted/data_docs/local_site" / unquote(page)).is_file()


def test_a_view_dag_refreshes_its_view_to_its_source(platform_env, spark):
    # One view: the three view DAGs differ only by the registry entry they are built from.
    from airflow.models import DagBag
    from airflow.utils.state import DagRunState

    from spark_apps.lake import views

    settings, _ = platform_env
    view = registry.view("campaign_daily_totals")
    # Its quality gate is marked successful without running: the view suites run in
    # tests/spark_apps/lake/test_quality.py, a gate through Airflow in the tests above.
    run = DagBag(str(DAGS_DIR)).dags[f"view_{view.name}"].test(mark_success_pattern="quality_.*")
    assert run.state == DagRunState.SUCCESS
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {
        f"view_{view.name}": "success",
        f"quality_{view.name}": "success",
    }
    assert views.verify(spark, settings, view) == []
    total = (
        spark.read.format("delta")
        .load(str(settings.table_path(view.name)))
        .groupBy()
        .sum("impressions")
        .collect()[0][0]
    )
    from spark_apps.lake import silver

    assert total == silver.accounting(spark, settings, "ad_impressions")["silver"]
