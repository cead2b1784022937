"""A daily run over a day with nothing new does no Spark work beyond its check: gold and its
gate read their memos and the Delta logs (:mod:`spark_apps.lake.unchanged`), and only what a
rebuild could change is rebuilt; a day without data that was never built is left alone.

The jobs run as Airflow runs them (their ``main``), in this process's session; "no Spark work"
is shown by a session that cannot be had: ``get_session`` raises if a job asks for one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adlake import registry, spark_session
from adlake.quality.outcome import check, read_outcome
from spark_apps.lake import gold, quality, unchanged
from spark_apps.lake.tables import ensure_table, read_table
from tests.spark_apps.lake.test_gold_intervals import SILVER
from tests.spark_apps.lake.test_transforms import at, silver

pytestmark = pytest.mark.integration

# One hour table, one day table (its silver read with the attribution margin around the day).
TABLES = "page_traffic,campaign_delivery"
DAY = datetime(2026, 11, 21, tzinfo=UTC)


def interval(day: datetime) -> list[str]:
    return ["--start", day.isoformat(), "--end", (day + timedelta(days=1)).isoformat()]


def gold_run(day: datetime = DAY) -> int:
    return gold.main(["--tables", TABLES, *interval(day)])


def gate_run(lake, out, run_id: str) -> int:
    argv = ["--tables", TABLES, *interval(DAY), "--dag-id", "lake_daily", "--run-id", run_id]
    return quality.main([*argv, "--outcome-dir", str(out), "--reuse-verdicts"], settings=lake)


def test_a_daily_run_over_a_day_with_nothing_new_does_no_spark_work_beyond_its_check(
    spark, settings, tmp_path, monkeypatch, capsys
):
    lake = settings.with_overrides(runtime_dir=tmp_path / "rt")
    monkeypatch.setattr(gold, "load_settings", lambda: lake)
    for topic in ("page_clicks", "ad_impressions", "ad_callbacks"):
        path = ensure_table(spark, lake, registry.table(f"silver_{topic}"))
        silver(spark, topic, SILVER[topic]).write.format("delta").mode("append").save(path)
    assert gold_run() == 0
    assert gate_run(lake, tmp_path / "first", "first") == 0
    built = {n: read_table(spark, lake, n).collect() for n in TABLES.split(",")}
    assert all(built.values()), built
    capsys.readouterr()

    with monkeypatch.context() as patch:
        patch.setattr(spark_session, "get_session", _refuse)
        assert gold_run() == 0
        assert gate_run(lake, tmp_path / "again", "again") == 0
        # A day never built, with no data: nothing to do either.
        assert gold_run(DAY + timedelta(days=5)) == 0
    said = capsys.readouterr().out
    assert "[gold] every slice is as its silver makes it: no Spark session" in said
    assert said.count("that verdict stands") == 2
    assert "empty, and no silver file holds a row it would read" in said
    for name in TABLES.split(","):
        # the earlier verdict is this run's outcome, the table untouched
        assert check(tmp_path / "again", name).startswith(f"{name} passed")
        assert read_outcome(tmp_path / "again", name)["stands_from"] == "lake_daily / first"
        assert sorted(read_table(spark, lake, name).collect()) == sorted(built[name])

    # A late click of the 21st: page_traffic's day changed, campaign_delivery's did not.
    late = dict(SILVER["page_clicks"][0], click_id="late", event_time=at("12:00:00"))
    path = str(lake.table_path("silver_page_clicks"))
    silver(spark, "page_clicks", [late]).write.format("delta").mode("append").save(path)
    assert [n for n in TABLES.split(",") if _must_rebuild(lake, n)] == ["page_traffic"]
    assert gold_run() == 0
    said = capsys.readouterr().out
    assert "[gold] page_traffic [" in said and "campaign_delivery [" in said
    assert said.count("; not rebuilt") == 1
    clicks = sum(r.clicks for r in read_table(spark, lake, "page_traffic").collect())
    assert clicks == sum(r.clicks for r in built["page_traffic"]) + 1
    # its gate validates the new slice; the other's verdict stands
    assert gate_run(lake, tmp_path / "late", "late") == 0
    assert "stands_from" not in read_outcome(tmp_path / "late", "page_traffic")
    assert read_outcome(tmp_path / "late", "campaign_delivery")["stands_from"]


def _refuse(*args, **kwargs):
    raise AssertionError(f"a Spark session was asked for: {args}")


def _must_rebuild(lake, name: str) -> bool:
    first, after = gold.gold.covering(gold.gold.model(name).GRAIN, DAY, DAY + timedelta(days=1))
    return unchanged.unchanged(lake, "gold", name, first, after, {}) is None


def test_a_slice_without_its_memo_or_of_other_code_is_computed(settings, tmp_path, monkeypatch):
    settings = settings.with_overrides(runtime_dir=tmp_path)
    first, after = DAY, DAY + timedelta(days=1)
    read = unchanged.Read("silver_page_clicks", "event_time", 0, 0)
    seen = unchanged.inputs(settings, [read], first, after)
    out = unchanged.output(settings, "page_traffic", first, after)
    # no memo, no other slice's reads: computed (a table's first slice is always built)
    assert unchanged.unchanged(settings, "gold", "page_traffic", first, after, {}) is None
    unchanged.write_memo(
        settings, "gold", "page_traffic", first, after, [read], seen, out, {}, rows=0
    )
    assert unchanged.unchanged(settings, "gold", "page_traffic", first, after, {}) is not None
    assert unchanged.unchanged(settings, "gold", "page_traffic", first, after, {"x": 1}) is None
    monkeypatch.setattr(unchanged, "code_digest", lambda: "other code")
    assert unchanged.unchanged(settings, "gold", "page_traffic", first, after, {}) is None
