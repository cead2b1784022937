"""The ops benchmarks cover every streaming app of the registry: with the toy app
(``tests/support/toy_app.py``) added to it at run time, as ``tests/include/test_toy_app.py`` adds
it, the latency tool, the soak and the boundary matrix plan runs of it and hold it to what its
entry declares (``App.bench``; the toy declares nothing: the generic checks, no goals), with no
edit to ``bench/``. No broker, no Spark: the plans, not the runs."""

from __future__ import annotations

import dataclasses

import pytest

from adlake import registry
from adlake.config import load_settings
from bench.ops import boundary, latency, soak, soak_accounting, suite
from tests.support.toy_app import TOY, TOY_TOPIC

INPUTS = ("ad_requests", "ad_impressions", "ad_callbacks", "page_clicks")


@pytest.fixture()
def toy_registry(monkeypatch):
    """The registry with the toy app and its output topic added, as two more entries would."""
    monkeypatch.setitem(registry.APPS, TOY.name, TOY)
    monkeypatch.setitem(registry.TOPICS, TOY_TOPIC.name, TOY_TOPIC)


def test_the_latency_tool_measures_an_added_app(toy_registry):
    assert [a.name for a in latency.ops_apps()] == ["attribution", "click_surge", TOY.name]
    assert latency.parse_args([TOY.name]).app == TOY.name
    scenarios = suite.suite_scenarios(load_settings(), quick=False, rate=1000.0)
    # in Real-Time Mode, as every app; its default trigger is micro-batch: no second run
    assert [s.mode for s in scenarios if s.app is TOY] == ["realtime"]
    goals = suite.p99_goals([], 1000.0, quick=False)
    assert [g["goal"].split()[0] for g in goals] == ["attribution"]  # the toy declares none


def test_the_suite_runs_each_app_at_its_own_checkpoint_interval():
    scenarios = suite.suite_scenarios(load_settings(), quick=False, rate=1000.0)
    intervals = {s.app.name: s.interval for s in scenarios if s.mode == "realtime"}
    assert intervals == {"attribution": "30 seconds", "click_surge": "300 seconds"}
    # the goal names the interval its app runs at
    goal = suite.p99_goals([], 1000.0, quick=False)[0]["goal"]
    assert goal.startswith("attribution") and "(30 seconds checkpoint interval)" in goal


def test_the_soak_runs_and_accounts_an_added_app(toy_registry, tmp_path):
    assert TOY in soak.ops_apps()
    assert soak.app_flags(TOY, tmp_path, "30 seconds") == [
        "--trigger",
        "processing_time",
        "--checkpoint",
        str(tmp_path),
        "--starting-offsets",
        "earliest",
    ]
    # 1,000 events/s to each of three apps, two of which read the clicks
    flags = soak.traffic_flags(soak.ops_apps(), 1000.0, 30.0, 7)
    assert flags[:4] == ["--rate", "3000.0", "--click-share", str(2 / 3)]
    # no state closed by an ad request: the closing request waits for attribution only
    assert list(soak.closed_by_request(soak.ops_apps())) == ["attribution"]

    # its outputs get the generic check (they hold records), its DLQ (click-surge's) its count
    report = {
        "sent": dict.fromkeys(INPUTS, 2),
        "anomalies_by_topic": {t: {"duplicate": 0, "invalid_json": 0} for t in INPUTS},
    }
    outputs = {
        "attributed_events": [],
        "page_surges": [],
        TOY_TOPIC.name: [{"record_type": "echo", "page_id": "p1", "source_kafka_ts": "t"}],
        "ad_events_dlq": [],
        "page_clicks_dlq": [],
    }
    counts = soak_accounting.account(report, outputs, late_rows={}, closing_id=None)
    assert counts[f"{TOY_TOPIC.name} has records"] == {"expected": 1, "got": 1, "lost": 0}
    assert counts["page_clicks_dlq records"]["lost"] == 0
    outputs[TOY_TOPIC.name] = []
    counts = soak_accounting.account(report, outputs, late_rows={}, closing_id=None)
    assert counts[f"{TOY_TOPIC.name} has records"]["lost"] == 1


def test_the_boundary_matrix_measures_an_added_app(toy_registry, tmp_path):
    every = boundary.parse_args(["--out-dir", str(tmp_path)]).apps
    assert every.split(",") == ["attribution", "click_surge", TOY.name]
    runs = boundary.plan("", every, 1, tmp_path)
    # the matrix for every app, less the state store's (4, 4) settings, measured on the apps
    # deployed in Real-Time Mode (the toy's default trigger is micro-batch), and no timer burst
    assert [config.name for config, app, _ in runs if app == TOY.name] == [
        "4-4",
        "2-2",
        "1-1",
        "2-2-min-deltas-100",
        "2-2-no-file-checksum",
        "1-1-no-file-checksum",
    ]
    assert (tmp_path / "boundary" / f"2-2-{TOY.name}.json") in [path for *_, path in runs]
    assert TOY.name not in boundary.p99_goal_ms()


def test_an_added_apps_goal_and_timer_burst_come_from_its_entry(monkeypatch):
    burst = registry.TimerBurst(
        "hold-1", "a 1 s hold: every boundary fires timers", (("hold_s", 1),)
    )
    toy = dataclasses.replace(TOY, bench=registry.Benchmark(boundary_p99_ms=80.0, burst=burst))
    monkeypatch.setitem(registry.APPS, toy.name, toy)
    matrix = boundary.by_name()
    assert [(c.apps, c.app_args) for n, c in matrix.items() if n.endswith("-hold-1")] == [
        ((toy.name,), ("--hold-s", "1")),
        ((toy.name,), ("--hold-s", "1")),
    ]
    assert boundary.p99_goal_ms() == {"click_surge": 120.0, "attribution": 500.0, toy.name: 80.0}
    goals = [g for g in boundary.goals_of([]) if g.goal.startswith(toy.name)]
    assert [(g.target, g.measured) for g in goals] == [("<= 80 ms", "not measured")]
