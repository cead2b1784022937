"""A latency run's type (no broker, no Spark): the run that bench.ops.latency's run_scenario
builds from its figures, written as ``ops.json`` writes it, is what the report reads back."""

from __future__ import annotations

import json
from dataclasses import asdict

from bench.harness import latency_stats, quantiles
from bench.ops.boundaries import between_boundaries, boundaries, interval_ms, timeline
from bench.ops.latency_report import read_ops
from bench.ops.latency_result import Boundary, Result, Slice
from bench.report_kit import Node
from tests.bench.ops.test_latency import TWO_BATCHES, stalled_outputs


def realtime_run() -> Result:
    """A Real-Time Mode run as run_scenario builds it: one input per 10 ms for 60 s, each out
    20 ms later, a 2 s stall at a batch's end, and some timer-driven records."""
    outputs, batches = stalled_outputs(30_000, 32_000), TWO_BATCHES
    measure_from, measure_to = 10_000.0, 60_000.0
    measured = [(out, src) for out, src in outputs if src >= measure_from]
    samples = [(src, out - src) for out, src in measured]
    latencies = [lat for _, lat in samples]
    whole = latency_stats(latencies)
    spans = boundaries(batches, measured, measure_from, measure_to, interval_ms("30 seconds"))
    between = between_boundaries(samples, spans, measure_from)
    return Result(
        app="attribution",
        mode="realtime",
        rate=100.0,
        duration_s=50.0,
        sent=6000,
        measured_outputs=len(latencies),
        latency_p50_ms=whole["p50"],
        latency_p95_ms=whole["p95"],
        latency_p99_ms=whole["p99"],
        latency_max_ms=whole["max"],
        input_rows_per_s=100.0,
        output_rows_per_s=round(len(measured) / 50.0, 1),
        lag_at_end_ms=30.0,
        timeline=[Slice(**entry) for entry in timeline(samples, measure_from)],
        notes=["p99 / kafka hop p99 = 3.0"],
        engine="jvm",
        whole=whole,
        between_boundaries={k: v for k, v in latency_stats(between).items() if k != "p95"},
        quantiles_ms=quantiles(latencies),
        boundaries=[Boundary(**span) for span in spans],
        batches=batches,
        load_average=(1.5, 2.0),
        timer_driven={
            **latency_stats([50_000.0, 55_000.0, 57_000.0]),
            "bound_ms": 56_000.0,
            "within_bound": 2,
        },
        measure_from_ms=measure_from,
        rtm_interval="30 seconds",
    )


def test_a_run_as_the_suite_writes_it_is_the_run_the_report_reads():
    run = realtime_run()
    assert run.boundaries and run.boundaries[0].timers_fired == 7
    written = json.loads(json.dumps({"runs": [asdict(run)], "goals": []}))
    ops, goals = read_ops(Node("ops.json", "", written))
    assert ops.runs == [run] and ops.kafka_hop is None and goals == []
    assert json.loads(json.dumps(asdict(ops.runs[0]))) == written["runs"][0]
    assert list(asdict(ops.runs[0])) == list(written["runs"][0])  # the order as written


def test_the_fields_the_report_does_not_show_are_left_out_of_its_summary():
    from bench.report_kit import summary

    written = json.loads(json.dumps({"runs": [asdict(realtime_run())]}))
    trail: set = set()
    read_ops(Node("ops.json", "", written, trail=trail))
    kept = summary(written, trail)["runs"][0]
    assert "batches" not in kept and "sent" not in kept and "measure_from_ms" not in kept
    assert set(kept["boundaries"][0]) == {"t_s", "stall_ms", "durations_ms", "timers_fired"}
    assert "p95" not in kept["timer_driven"] and kept["timer_driven"]["bound_ms"] == 56_000.0
