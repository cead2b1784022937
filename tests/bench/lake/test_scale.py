"""The gold-at-scale benchmark's pure parts (no JVM: the run itself is ``make bench-quick``'s):
its flags, the goals it derives from its figures, the chains it generates staying inside the
attribution window, and the report's section of ``scale.json``."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from adlake import registry
from bench import report as bench_report
from bench.lake import scale, scale_report, synthetic_silver
from spark_apps.common.attribution.contract import AttributionConfig
from tests.support.help import assert_help_shows_defaults


def test_help_shows_every_flags_default(capsys, monkeypatch):
    assert_help_shows_defaults("bench.lake.scale", capsys, monkeypatch)


def test_quick_is_a_small_run_without_process_or_warm_up():
    full, quick = scale.parse_args([]), scale.parse_args(["--quick"])

    assert (full.rows_per_day, full.days, full.repeats) == (1_000_000, [1, 7, 30], 3)
    assert full.process and full.warm_up and full.daily_tables == scale.DAILY_TABLES
    assert (quick.rows_per_day, quick.days, quick.repeats) == (2_000, [1, 2, 3], 1)
    assert not quick.process and not quick.warm_up
    assert quick.daily_tables == ("attribution_funnel", "attribution_reconciliation")
    with pytest.raises(SystemExit):
        scale.parse_args(["--days", "7", "1"])


def test_every_generated_callback_falls_in_its_impressions_window():
    """Batch attribution must find what the generated real-time records say was attributed."""
    window = AttributionConfig().window_ms
    assert all(0 < lo < hi <= window for _, _, lo, hi in synthetic_silver.CALLBACKS)
    assert {kind for kind, *_ in synthetic_silver.CALLBACKS} <= set(registry.CALLBACK_EVENT_TYPES)


def run(seconds: float, **tables: float) -> scale_report.GoldRun:
    return scale_report.GoldRun(
        seconds=seconds,
        interval=["2026-11-20T23:00Z", "2026-11-21T00:00Z"],
        tables={name: scale_report.TableRun(seconds=s, rows=10) for name, s in tables.items()},
        load_average=(1.0, 1.5),
    )


def step(days: int, hourly: float, daily: float, process: float | None) -> scale_report.ScaleStep:
    return scale_report.ScaleStep(
        days=days,
        rows_written={"ad_requests": 100 * days, "page_clicks": 50},
        write_s=1.0,
        files=147 * days,
        bytes=1000,
        hourly=run(hourly, campaign_delivery=hourly * 0.6, page_traffic=hourly * 0.4),
        daily=run(daily, attribution_reconciliation=daily * 0.8, page_traffic=daily * 0.2),
        process=None if process is None else run(process, campaign_delivery=process / 2),
    )


def synthetic() -> scale_report.Scale:
    """A run as bench.lake.scale fills it."""
    history = [step(1, 8.0, 90.0, 30.0), step(7, 8.4, 95.0, 31.0), step(30, 10.0, 99.0, 33.0)]

    def hour(runs_s: list[float], median_s: float) -> scale_report.HourRuns:
        return scale_report.HourRuns(
            interval=["2026-11-20T00:00Z", "2026-11-20T01:00Z"],
            runs_s=runs_s,
            median_s=median_s,
            tables={"campaign_delivery": scale_report.TableRun(seconds=4.0, rows=1)},
            load_average=(1.0, 2.0),
        )

    position = scale_report.Position(
        first=hour([8.0, 8.2, 7.9], 8.0), last=hour([8.4, 8.8, 8.6], 8.6), ratio=1.08
    )
    return scale_report.Scale(
        history=history,
        ratios=scale.ratios(history),
        position=position,
        goals=scale.goals(history, position),
        goal_ratio=scale.GOAL_RATIO,
        rows_per_day=1_000_000,
        last_day="2026-11-20",
        hourly_tables=["campaign_delivery", "page_traffic"],
        daily_tables=["attribution_reconciliation", "page_traffic"],
        load_average=(1.0, 2.0),
        cores=2,
        quick=False,
    )


def written() -> dict:
    return json.loads(json.dumps(asdict(synthetic())))


def test_the_goals_compare_the_largest_history_and_the_last_hour_with_their_smallest():
    report = synthetic()
    hourly, daily, position = report.goals

    assert report.ratios == {"hourly": 1.25, "daily": 1.1, "process": 1.1}
    assert not hourly.met and daily.met and position.met
    assert hourly.measured == "1.25x (8.0 s -> 10.0 s); as a process 1.10x (30.0 s -> 33.0 s)"
    assert "silver's files 147 -> 4,410" in hourly.bound
    assert "attribution_reconciliation 79.2 s of 99.0 s" in daily.bound
    assert position.measured == "1.07x (8.6 s vs 8.0 s, medians of 3)"


def test_a_file_as_written_is_the_value_the_report_reads():
    from bench.report_kit import Node, summary

    trail: set = set()
    read, goals = scale_report.read_scale(Node("scale.json", "", written(), trail=trail))
    assert read == synthetic() and [g.benchmark for g in goals] == ["scale"] * 3
    kept = summary(written(), trail)
    assert "rows" not in kept["history"][0]["hourly"]["tables"]["page_traffic"]
    assert "write_s" not in kept["history"][0] and "ratio" not in kept["position"]
    again, _ = scale_report.read_scale(Node("scale.json", "", kept))
    assert scale_report.scale_section(again) == scale_report.scale_section(read)


def test_the_report_has_a_table_of_history_and_of_position_and_the_goals(tmp_path):
    (tmp_path / "scale.json").write_text(json.dumps(written()))
    inputs = bench_report.read_inputs(tmp_path)
    section = scale_report.scale_section(inputs.results["scale.json"])

    assert "| 1 | 150 | 147 | 8.0 s | 90.0 s | 30.0 s | 1.0 → 1.5, 1.0 → 1.5 |" in section
    assert "| **30 / 1** |  | 30.00× | **1.25×** | **1.10×** | 1.10× |  |" in section
    assert "| 30 | daily | – | 19.8 | 79.2 |" in section  # each table's seconds
    assert (
        "| 24th | 2026-11-20T00:00Z to 2026-11-20T01:00Z | 8.4 s, 8.8 s, 8.6 s | 8.6 s |" in section
    )
    assert "| **24th / 1st** |  |  | **1.07×** |  |" in section
    goals = bench_report.goals_section(inputs.goals)
    assert "| scale | hourly run with 30 days of silver vs 1 | <= 1.2x |" in goals
    assert "| **no** |" in goals
    assert "gold daily run, 30 days of history" in bench_report.machine_section(inputs, None)
    assert "Not run: no `scale.json`" in scale_report.scale_section(None)


def test_a_malformed_scale_json_names_its_field(tmp_path):
    broken = written()
    del broken["position"]["last"]["median_s"]
    (tmp_path / "scale.json").write_text(json.dumps(broken))

    with pytest.raises(bench_report.MalformedReport, match=r"scale.json: position.last.median_s"):
        bench_report.read_inputs(tmp_path)
