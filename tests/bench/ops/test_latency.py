"""The operational benchmark's figures from given samples (no broker, no Spark): quantiles, the
interval boundaries found from the progress and the outputs, and what counts as "between
boundaries"."""

from __future__ import annotations

import json
from types import SimpleNamespace

from bench.harness import latency_stats, quantiles
from bench.ops import boundaries as boundaries_module, latency
from bench.ops.boundaries import (
    BOUNDARY_AFTER_MS,
    between_boundaries,
    boundaries,
    interval_ms,
    timeline,
)
from bench.ops.watchers import OutputReader


def test_quantiles_are_1001_values_from_min_to_max():
    values = [float(v) for v in range(1, 101)]
    q = quantiles(values)
    assert len(q) == 1001
    assert q[0] == 1.0 and q[-1] == 100.0 and q[500] == 51.0  # nearest rank of 49.5
    assert quantiles([]) == []


def test_latency_stats():
    assert latency_stats([10.0, 20.0, 30.0, 40.0]) == {
        "p50": 30.0,
        "p95": 40.0,
        "p99": 40.0,
        "max": 40.0,
        "n": 4,
    }
    assert latency_stats([])["n"] == 0


# Two Real-Time Mode batches of a 30 s interval: the first ends at 30.4 s, 7 timers fired in it.
TWO_BATCHES = [
    {
        "batch_id": 4,
        "started_ms": 0.0,
        "duration_ms": 30_400,
        "phases_ms": {"addBatch": 30_300, "latestOffset": 100},
        "state_operator_metrics": [{"customMetrics": {"numExpiredTimers": 7}}],
    },
    {
        "batch_id": 5,
        "started_ms": 30_400.0,
        "duration_ms": 31_000,
        "phases_ms": {"queryPlanning": 900, "latestOffset": 300, "addBatch": 29_800},
    },
]


def stalled_outputs(stall_from: float, stall_to: float) -> list[tuple[float, float]]:
    """Outputs (output ms, source ms) of one input per 10 ms from 0 to 60 s, each 20 ms after
    its source, except that nothing is written in [stall_from, stall_to): inputs of that span
    are written at ``stall_to``."""
    outputs = []
    for src in range(0, 60_000, 10):
        out = src + 20
        if stall_from <= out < stall_to:
            out = stall_to
        outputs.append((float(out), float(src)))
    return outputs


def test_a_boundary_is_the_gap_in_outputs_around_the_end_of_a_batch():
    outputs = stalled_outputs(30_000, 32_000)
    found = boundaries(
        TWO_BATCHES, outputs, measure_from=10_000, measure_to=60_000, interval_ms=30_000
    )
    assert len(found) == 1  # the second batch ends after the measured window
    boundary = found[0]
    assert boundary["batch_id"] == 4 and boundary["timers_fired"] == 7
    # the last output before the gap is at 29,990 ms (source 29,970), the next at 32,000
    assert boundary["stall_ms"] == 2010.0
    assert (boundary["stall_start_s"], boundary["stall_end_s"]) == (19.99, 22.0)
    # the first input held: source 29,980 ms, due at 30,000, written at 32,000
    assert boundary["held_from_s"] == 19.98
    # the boundary's phases: the ending batch's end, the starting batch's planning
    assert boundary["durations_ms"] == {
        "addBatch": 30_300,
        "addBatchOverInterval": 300,
        "queryPlanning": 900,
        "latestOffset": 300,
    }
    assert boundary["peak_ms"] == 32_000 - 29_980


def test_between_boundaries_leaves_out_sources_in_a_stall_and_the_second_after_it():
    outputs = stalled_outputs(30_000, 32_000)
    samples = [(src, out - src) for out, src in outputs]
    spans = [{"held_from_s": 19.98, "stall_end_s": 22.0}]
    kept = between_boundaries(samples, spans, measure_from=10_000)
    left_out = [s for s in samples if 29_980 <= s[0] <= 32_000 + BOUNDARY_AFTER_MS]
    assert len(kept) == len(samples) - len(left_out)
    assert max(kept) == 20.0  # every output outside the stall took 20 ms
    assert between_boundaries(samples, [], measure_from=0) == [lat for _, lat in samples]


def test_timeline_slices_by_source_time():
    slices = timeline([(1000.0, 5.0), (4999.0, 7.0), (5000.0, 100.0)], measure_from=0)
    assert slices == [
        {"t_s": 0, "n": 2, "p50": 7.0, "p99": 7.0, "max": 7.0},
        {"t_s": 5, "n": 1, "p50": 100.0, "p99": 100.0, "max": 100.0},
    ]


def test_interval_ms():
    assert interval_ms("30 seconds") == 30_000
    assert interval_ms("5 minutes") == 300_000
    assert interval_ms("1 minute") == 60_000


class _Msg:
    """A Kafka message as the reader sees it: a value and a (type, ms) timestamp."""

    def __init__(self, record: dict, out_ms: float) -> None:
        self._value, self._out = json.dumps(record).encode(), out_ms

    def value(self) -> bytes:
        return self._value

    def timestamp(self) -> tuple[int, float]:
        return 1, self._out


def test_timer_driven_records_are_measured_apart_from_the_input_driven():
    # the reader's sampling alone (its constructor connects to a broker)
    reader = SimpleNamespace(skip=("request_closed",), timer_samples=[])
    src = "2026-11-28T10:00:00.000Z"
    src_ms = 1_795_860_000_000.0
    matched = _Msg({"record_type": "attributed_impression", "source_kafka_ts": src}, src_ms + 40)
    closed = _Msg({"record_type": "request_closed", "source_kafka_ts": src}, src_ms + 331_000)
    assert OutputReader.sample(reader, matched) == (src_ms + 40, src_ms)
    assert OutputReader.sample(reader, closed) is None
    assert reader.timer_samples == [(src_ms + 331_000, src_ms)]


def test_the_moved_names_are_still_importable_from_latency():
    """Other benchmarks and running processes import the boundary analysis from
    bench.ops.latency, where it was."""
    for name in ("BOUNDARY_SEARCH_MS", "BOUNDARY_AFTER_MS", "boundary_phases"):
        assert getattr(latency, name) is getattr(boundaries_module, name)
    assert latency.boundaries is boundaries and latency.timeline is timeline
