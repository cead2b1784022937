"""Past validations read from GX's store: per table, newest first, passed unless an error failed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from adlake.quality.history import recent_runs, summarize, validations_dir


def store(settings, table: str, run_name: str, run_time: datetime, failed: list[str]) -> None:
    """A stored validation result as GX writes it, with one failed expectation per severity in
    ``failed`` and one success."""
    stamp = run_time.strftime("%Y%m%dT%H%M%S.%fZ")
    path = validations_dir(settings) / table / run_name / stamp / f"adlake_spark-{table}.json"
    path.parent.mkdir(parents=True)
    results = [{"success": False, "expectation_config": {"meta": {"severity": s}}} for s in failed]
    results.append({"success": True, "expectation_config": {"meta": {"severity": "error"}}})
    path.write_text(
        json.dumps(
            {
                "suite_name": table,
                "success": not failed,
                "results": results,
                "meta": {"run_id": {"run_name": run_name, "run_time": run_time.isoformat()}},
            }
        )
    )


def at(hour: int) -> datetime:
    return datetime(2026, 11, 21, hour, 5, tzinfo=UTC)


def test_recent_runs_newest_first_and_a_warn_failure_still_passes(settings, tmp_path):
    lake = settings.with_overrides(runtime_dir=tmp_path)
    assert recent_runs(lake) == {}
    store(lake, "page_traffic", "lake_hourly__r13", at(13), [])
    store(lake, "page_traffic", "lake_hourly__r14", at(14), ["warn"])
    store(lake, "page_traffic", "lake_hourly__r15", at(15), ["error", "warn"])
    store(lake, "page_clicks_hourly", "view_page_clicks_hourly__a", at(13), [])

    runs = recent_runs(lake, last=2)
    assert [
        (r.run_name, r.passed, r.failed_errors, r.failed_warns) for r in runs["page_traffic"]
    ] == [("lake_hourly__r15", False, 1, 1), ("lake_hourly__r14", True, 0, 1)]
    assert runs["page_traffic"][0].page == (
        "validations/page_traffic/lake_hourly__r15/20261121T150500.000000Z/"
        "adlake_spark-page_traffic.html"
    )
    summary = summarize(r for rs in recent_runs(lake).values() for r in rs)
    assert {
        t: (s["latest"].run_name, round(s["pass_rate"], 2), s["runs"]) for t, s in summary.items()
    } == {
        "page_clicks_hourly": ("view_page_clicks_hourly__a", 1.0, 1),
        "page_traffic": ("lake_hourly__r15", 0.67, 3),
    }


def test_prune_deletes_runs_before_the_retention_and_their_pages_keeping_each_latest(
    settings, tmp_path
):
    from adlake.quality.history import prune
    from adlake.quality.project import data_docs_index

    lake = settings.with_overrides(runtime_dir=tmp_path)
    for hour in (10, 11, 12, 13):
        store(lake, "page_traffic", f"lake_hourly__r{hour}", at(hour), [])
    store(lake, "page_clicks_hourly", "view_page_clicks_hourly__a", at(9), [])  # its only run
    site = data_docs_index(lake).parent
    for run in recent_runs(lake)["page_traffic"] + recent_runs(lake)["page_clicks_hourly"]:
        (site / run.page).parent.mkdir(parents=True)
        (site / run.page).write_text("<html></html>")

    assert prune(lake, at(12), dry_run=True) == {"validations": 2, "pages": 2}
    assert len(recent_runs(lake)["page_traffic"]) == 4  # a dry run deletes nothing
    assert prune(lake, at(12)) == {"validations": 2, "pages": 2}

    runs = recent_runs(lake)
    assert [r.run_name for r in runs["page_traffic"]] == ["lake_hourly__r13", "lake_hourly__r12"]
    assert [r.run_name for r in runs["page_clicks_hourly"]] == ["view_page_clicks_hourly__a"]
    pages = sorted(p.relative_to(site).parts[2] for p in site.rglob("*.html"))
    assert pages == ["lake_hourly__r12", "lake_hourly__r13", "view_page_clicks_hourly__a"]
    assert not (validations_dir(lake) / "page_traffic" / "lake_hourly__r10").exists()
