"""The analytical chain on generated data: Kafka → bronze → silver (+ quarantine) → gold → views,
with counts derived from the generator's report, reruns, an interrupted run and backfills."""

from __future__ import annotations

import datetime as dt

import pytest

from adlake import freshness, generator, payload_rules, registry
from adlake.catalog.gold import NAMES
from adlake.catalog.gold.attribution_funnel import ALL_CAMPAIGNS
from spark_apps.lake.tables import read_table, table_path
from tests.conftest import private_settings

pytestmark = pytest.mark.integration

INPUTS = ("ad_requests", "ad_impressions", "ad_callbacks", "page_clicks")
# Every kind of reject reason: the quarantine must hold what the report counts, kind by kind.
MALFORMED = payload_rules.REASON_KINDS


@pytest.fixture(scope="module")
def chain(tmp_path_factory, spark):
    """A broker of this module alone, loaded once with generated traffic (every anomaly on)."""
    from adlake.local.kafka import LocalKafka

    settings = private_settings(tmp_path_factory.mktemp("lake-chain"))
    broker = LocalKafka(settings)
    broker.start()
    broker.create_topics()
    config = generator.GeneratorConfig(
        rate=3000,
        count=1200,
        seed=11,
        out_of_order=0.05,
        duplicates=0.05,
        late=0.02,
        malformed=0.05,
        orphans=0.05,
        surge_pages=1,
        surge_rate=200,
    )
    report = generator.run(config, settings.kafka_bootstrap, progress=False)
    try:
        yield settings, report
    finally:
        broker.stop()


def rows(spark, settings, name: str) -> list:
    """Every row of a table or view, sorted."""
    from spark_apps.lake.tables import table_path

    return sorted(spark.read.format("delta").load(table_path(settings, name)).collect())


def test_bronze_then_silver_account_for_every_record(spark, chain):
    from pyspark.sql import functions as F

    from spark_apps.lake import bronze, silver

    settings, report = chain

    def interrupted(query) -> None:
        """Stop a run after its first committed batch, as a crash or a kill would."""
        while query.isActive and not query.recentProgress:
            query.awaitTermination(0.2)
        query.stop()

    interrupted(bronze.start_ingest(spark, settings, "ad_callbacks", max_offsets=40))
    assert not bronze.nothing_to_do(settings, list(INPUTS))  # records left in Kafka

    bronze.run(spark, settings, list(INPUTS))
    assert bronze.nothing_to_do(settings, list(INPUTS))  # the job would start no session
    bronze.run(spark, settings, list(INPUTS))  # a rerun finds nothing new
    for topic in INPUTS:
        assert len(rows(spark, settings, f"bronze_{topic}")) == report["sent"][topic], topic
        coords = (
            read_table(spark, settings, f"bronze_{topic}")
            .groupBy("partition", "offset")
            .count()
            .where("count > 1")
        )
        assert coords.count() == 0, f"{topic}: a Kafka record landed twice in bronze"

    interrupted(silver.start_refine(spark, settings, "ad_callbacks", max_files=1))
    assert not silver.nothing_to_do(settings, list(INPUTS))  # bronze rows left to refine
    silver.run(spark, settings, list(INPUTS))
    assert silver.nothing_to_do(settings, list(INPUTS))  # the job would start no session
    silver.run(spark, settings, list(INPUTS))  # a rerun finds nothing new
    for topic in INPUTS:
        by_kind = report["anomalies_by_topic"][topic]
        malformed = sum(by_kind[k] for k in MALFORMED)
        got = silver.accounting(spark, settings, topic)
        assert got == {
            "bronze": report["sent"][topic],
            "quarantine": malformed,
            "duplicates": by_kind["duplicate"],
            "silver": report["sent"][topic] - malformed - by_kind["duplicate"],
        }, topic
        # Every quarantined row names a reason of the kind the generator injected.
        rules = (
            read_table(spark, settings, "quarantine")
            .where(F.col("source_table") == f"silver_{topic}")
            .select(F.split("reason", ":")[0].alias("kind"))
            .groupBy("kind")
            .count()
            .collect()
        )
        assert {r.kind: r["count"] for r in rules} == {
            k: by_kind[k] for k in MALFORMED if by_kind[k]
        }, topic


def interval(report) -> tuple[dt.date, dt.date]:
    started = dt.datetime.fromisoformat(report["started_at"].replace("Z", "+00:00")).date()
    return started - dt.timedelta(days=1), started + dt.timedelta(days=2)


def test_gold_is_idempotent_across_reruns_and_overlapping_backfills(spark, chain):
    from spark_apps.lake import gold, silver

    settings, report = chain
    start, end = interval(report)
    middle = start + dt.timedelta(days=1)
    for name in NAMES:
        gold.rebuild(spark, settings, name, start, end)
    first = {name: rows(spark, settings, name) for name in NAMES}
    for name in NAMES:
        gold.rebuild(spark, settings, name, start, end)  # the same interval again
        assert rows(spark, settings, name) == first[name], name
    for name in ("page_traffic", "campaign_delivery"):  # overlapping backfills
        gold.rebuild(spark, settings, name, start, middle + dt.timedelta(days=1))
        gold.rebuild(spark, settings, name, middle, end)
        assert rows(spark, settings, name) == first[name], name

    # Totals agree with silver, which agrees with the generator's report (test above).
    def total(name: str, column: str) -> int:
        return sum(r[column] for r in first[name])

    n_silver = {t: silver.accounting(spark, settings, t)["silver"] for t in INPUTS}
    assert total("campaign_delivery", "impressions") == n_silver["ad_impressions"]
    assert_freshness_recorded(spark, settings, NAMES)
    assert total("page_traffic", "clicks") == n_silver["page_clicks"]
    totals = [r for r in first["attribution_funnel"] if r.campaign_id == ALL_CAMPAIGNS]
    assert sum(r.requests for r in totals) == n_silver["ad_requests"]
    assert sum(r.impressions for r in totals) == n_silver["ad_impressions"]


def test_views_over_silver_equal_a_full_recomputation(spark, chain):
    from spark_apps.lake import views

    settings, _ = chain
    for view in registry.VIEWS.values():
        views.refresh_view(spark, settings, view)  # as the view's command runs it
        assert views.verify(spark, settings, view) == [], view.name
    assert_freshness_recorded(spark, settings, tuple(registry.VIEWS))
    clicks = registry.view("page_clicks_hourly")
    total = sum(r.clicks for r in rows(spark, settings, clicks.name))
    from spark_apps.lake import silver

    assert total == silver.accounting(spark, settings, "page_clicks")["silver"]


def assert_freshness_recorded(spark, settings, tables) -> None:
    """Each table's recorded newest data time (read from its newest partition only) is the
    maximum of its data time over the whole table (none for an empty one: this traffic has no
    surges), and the Data quality page's row says how far behind now that is."""
    from pyspark.sql import functions as F

    from spark_apps.lake.freshness import ISO

    shown = {r["table"]: r for r in freshness.shown(settings, list(tables))}
    for table in tables:
        src = freshness.source(table)
        whole = (
            spark.read.format("delta")
            .load(table_path(settings, table))
            .agg(F.date_format(F.max(F.expr(src.expression).cast("timestamp")), ISO))
        )
        assert shown[table]["newest"] == whole.first()[0], table  # None: an empty table
        assert shown[table]["newest"] is None or shown[table]["behind_s"] > 0, shown[table]
    assert any(shown[t]["newest"] for t in tables), shown
