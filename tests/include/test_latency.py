"""End-to-end latency from the output topics, its history, and what waits in state."""

from __future__ import annotations

import json
import uuid

import pytest

from adlake import registry
from adlake.latency import (
    LatencyProbe,
    add_history,
    dlq_growth,
    iso,
    percentile,
    summarize,
    waiting_in_state,
)

NOW = 1_795_341_600.0  # 2026-11-22T10:00:00Z


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (
        50.0,
        99.0,
        100.0,
    )
    assert percentile([7.0], 0.99) == 7.0


def test_summary_is_output_time_minus_source_time_over_fresh_outputs_only():
    out = NOW * 1000
    samples = [
        (out - 1000, out - 1035),
        (out - 2000, out - 2040),
        (out - 3000, out - 3900),
        (out - 120_000, out - 120_001),
    ]  # written 2 minutes ago: left out
    figures = summarize(samples, NOW, max_age_s=60, timestamp_type="CreateTime")
    assert {
        k: figures[k]
        for k in (
            "p50_ms",
            "p99_ms",
            "samples",
            "window_s",
            "measured_at",
            "stale",
            "timestamp_type",
        )
    } == {
        "p50_ms": 40.0,
        "p99_ms": 900.0,
        "samples": 3,
        "window_s": 3.0,
        "measured_at": NOW,
        "stale": 1,
        "timestamp_type": "CreateTime",
    }
    assert "why" not in figures


def test_no_fresh_output_gives_no_figure_and_says_why():
    figures = summarize([(NOW * 1000 - 600_000, NOW * 1000 - 600_010)], NOW, max_age_s=60)
    assert (figures["p50_ms"], figures["samples"], figures["window_s"]) == (None, 0, None)
    assert figures["why"] == "no output record written in the last 60 s (1 older ones read)"


def test_history_keeps_the_last_hour_and_a_bounded_number_of_points():
    history: list = []
    for i in range(400):  # one point every 15 s for 100 minutes
        history = add_history(
            history,
            {"measured_at": NOW + 15 * i, "p50_ms": float(i), "p99_ms": 2.0 * i},
            max_points=500,
        )
    assert len(history) == 240  # the last hour: (t - 3600, t]
    assert history[0] == [NOW + 15 * 160, 160.0, 320.0]
    assert history[-1] == [NOW + 15 * 399, 399.0, 798.0]
    capped = add_history(
        history, {"measured_at": NOW + 15 * 400, "p50_ms": None, "p99_ms": None}, max_points=10
    )
    assert len(capped) == 10 and capped[-1] == [NOW + 15 * 400, None, None]


def test_dlq_growth_is_the_end_offsets_growth_since_the_previous_probe():
    assert dlq_growth((NOW, 100), 130, NOW + 15.04) == {
        "dlq_rows_last_interval": 30,
        "dlq_interval_s": 15.0,
        "dlq_total": 130,
    }
    assert dlq_growth((NOW, 100), 100, NOW + 15)["dlq_rows_last_interval"] == 0
    nothing = {"dlq_rows_last_interval": None, "dlq_interval_s": None}
    assert dlq_growth(None, 130, NOW) == {**nothing, "dlq_total": 130}  # first probe, restart
    assert dlq_growth((NOW, 100), 7, NOW + 15) == {**nothing, "dlq_total": 7}  # recreated
    assert dlq_growth((NOW, 100), None, NOW + 15) == {**nothing, "dlq_total": None}  # unread


def test_an_apps_probe_reads_its_outputs_and_dlq_and_counts_its_timer_records_apart():
    """Declared once, on the registry entry: the probe and the attribution contract read it."""
    pytest.importorskip("pyspark")
    from spark_apps.common.attribution.contract import TIMER_DRIVEN

    attribution = registry.app("attribution")
    probe = LatencyProbe.for_app("127.0.0.1:1", attribution)
    assert (probe.topics, probe.dlq) == (list(attribution.outputs), attribution.dlq)
    closes = {"request_closed", "orphan_impression", "orphan_callback"}
    assert probe.timer_driven == set(TIMER_DRIVEN) == closes
    surges = LatencyProbe.for_app("127.0.0.1:1", registry.app("click_surge"))
    assert (surges.topics, surges.dlq, surges.timer_driven) == (
        ["page_surges"],
        "page_clicks_dlq",
        frozenset(),
    )


def test_click_surge_state_closes_one_window_and_the_watermark_delay_past_the_watermark():
    waiting = waiting_in_state("click_surge", 28, "2026-11-22T10:00:00.000Z", {"threshold": 5})
    assert {k: waiting[k] for k in ("rows", "oldest_event_time", "closes_at", "watermark")} == {
        "rows": 28,
        "oldest_event_time": None,
        "closes_at": "2026-11-22T10:00:10.000Z",
        "watermark": "2026-11-22T10:00:00.000Z",
    }
    assert "state scan" in waiting["why"] and "no traffic, nothing closes" in waiting["why"]
    assert "2026-11-22T09:59:55.000Z" in waiting["why"]  # open windows start at or after it


def test_attribution_state_closes_the_lateness_and_a_window_past_the_watermark():
    waiting = waiting_in_state(
        "attribution", 28_364, "2026-11-22T10:00:00.000Z", {"window_s": 300.0, "lateness_s": 30.0}
    )
    assert (waiting["rows"], waiting["oldest_event_time"], waiting["closes_at"]) == (
        28_364,
        None,
        "2026-11-22T10:05:30.000Z",
    )
    assert "no traffic, nothing closes" in waiting["why"]
    assert "tombstones" in waiting["why"]


@pytest.mark.parametrize(
    "rows,watermark,why",
    [
        (0, "2026-11-22T10:00:00.000Z", "nothing waits in state"),
        (None, None, "no batch reported yet"),
    ],
)
def test_nothing_to_wait_for(rows, watermark, why):
    waiting = waiting_in_state("attribution", rows, watermark, {})
    assert (waiting["closes_at"], waiting["why"]) == (None, why)


def test_rows_before_the_first_watermark_wait_for_input():
    waiting = waiting_in_state("click_surge", 3, "1970-01-01T00:00:00.000Z", {})
    assert waiting["closes_at"] is None and "watermark is still at its start" in waiting["why"]


def test_probe_measures_the_newest_records_of_the_output_topic(kafka):
    """Output-shaped records with known timestamps: the probe reads the last N per partition
    and computes output timestamp - source_kafka_ts."""
    import time

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"probe_{uuid.uuid4().hex[:8]}"
    bootstrap = kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap})

    def send(partition: int, out_ms: int, latency_ms: int, **extra) -> None:
        value = {"page_id": "p", "source_kafka_ts": iso((out_ms - latency_ms) / 1000), **extra}
        producer.produce(topic, json.dumps(value).encode(), partition=partition, timestamp=out_ms)

    send(0, now_ms - 5000, 77_777)  # read past: the probe reads only the last 3 of partition 0
    for i, lat in enumerate([10, 20, 30]):
        send(0, now_ms - 3000 + i, lat)
    send(1, now_ms - 600_000, 99_999)  # ten minutes old: stale
    send(1, now_ms - 2000, 40)
    send(1, now_ms - 1000, 300_000, record_type="request_closed")  # timer-driven: apart
    producer.flush(10)

    # the topic stands in for a DLQ too: its end offsets summed over both partitions
    probe = LatencyProbe(
        bootstrap,
        [topic],
        per_partition=3,
        max_age_s=60,
        dlq=topic,
        timer_driven=registry.app("attribution").timer_driven,
    )
    try:
        figures, total = probe.measure(), probe.dlq_total()
        for lat in (1, 2, 3, 4):  # written after: a new measure reads only the newest 3 again
            send(0, now_ms - 500, lat)
        producer.flush(10)
        again, total_again = probe.measure(), probe.dlq_total()
    finally:
        probe.close()
    assert (total, total_again) == (7, 11)
    assert (again["samples"], again["p50_ms"]) == (4, 3.0)  # 2, 3, 4 and partition 1's 40
    assert {
        k: figures[k]
        for k in (
            "p50_ms",
            "p99_ms",
            "samples",
            "stale",
            "timer_driven",
            "timer_p99_ms",
            "timer_samples",
            "timestamp_type",
            "topics",
        )
    } == {
        "p50_ms": 20.0,
        "p99_ms": 40.0,
        "samples": 4,
        "stale": 1,
        # the close's own figure: 300 s after its key's newest input, apart from the others
        "timer_driven": 1,
        "timer_p99_ms": 300_000.0,
        "timer_samples": 1,
        "timestamp_type": "CreateTime",
        "topics": [topic],
    }
    assert 3.0 <= figures["window_s"] < 60


def test_probe_of_an_empty_or_unknown_topic_has_no_samples(kafka):
    from confluent_kafka.admin import AdminClient, NewTopic

    empty = f"empty_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(empty, num_partitions=1, replication_factor=1)])[empty].result(10)
    probe = LatencyProbe(kafka.bootstrap, [empty, f"absent_{uuid.uuid4().hex[:6]}"], timeout_s=2)
    try:
        figures = probe.measure()
    finally:
        probe.close()
    assert figures["samples"] == 0 and figures["p50_ms"] is None
