"""The streaming apps' status: query progress (as Spark reports it, JSON) → the status file."""

from __future__ import annotations

import re

from adlake.apps.cli import COLUMNS, format_table
from adlake.status import read_all, read_status, write_status
from spark_apps.common.streaming.listener import StatusReporter


def progress(
    batch: int,
    *,
    late: int = 0,
    src_p50: float | None = None,
    timestamp: str = "2026-11-22T10:00:00.000Z",
    duration_ms: int = 1000,
) -> dict:
    observed = (
        {}
        if src_p50 is None
        else {"latency": {"src_p50": src_p50, "src_p05": src_p50 - 100, "src_p01": src_p50 - 200}}
    )
    return {
        "batchId": batch,
        "timestamp": timestamp,
        "numInputRows": 500,
        "inputRowsPerSecond": 499.96,
        "processedRowsPerSecond": 612.34,
        "batchDuration": duration_ms,
        "durationMs": {"addBatch": 800, "walCommit": 100, "triggerExecution": duration_ms},
        "stateOperators": [
            {"numRowsTotal": 10, "memoryUsedBytes": 2_000_000, "numRowsDroppedByWatermark": late},
            {"numRowsTotal": 5, "memoryUsedBytes": 500_000, "numRowsDroppedByWatermark": 0},
        ],
        "eventTime": {"watermark": "2026-11-22T09:59:30.000Z"},
        "observedMetrics": observed,
    }


def test_status_file_holds_the_batch_state_and_rates(settings):
    reporter = StatusReporter(settings, "status-test-a", "processing_time")
    reporter.update(progress(7))
    status = read_status(settings, "status-test-a")
    assert {
        k: status[k]
        for k in (
            "state",
            "mode",
            "batch_id",
            "input_rows",
            "input_rows_per_s",
            "processed_rows_per_s",
            "batch_duration_ms",
            "state_rows",
            "state_memory_mb",
            "watermark",
        )
    } == {
        "state": "running",
        "mode": "processing_time",
        "batch_id": 7,
        "input_rows": 500,
        "input_rows_per_s": 500.0,
        "processed_rows_per_s": 612.3,
        "batch_duration_ms": 1000,
        "state_rows": 15,
        "state_memory_mb": 2.5,
        "watermark": "2026-11-22T09:59:30.000Z",
    }
    assert status["batch_phases_ms"]["addBatch"] == 800


def test_late_rows_add_up_over_batches(settings):
    reporter = StatusReporter(settings, "status-test-b", "realtime")
    for batch, late in enumerate([3, 0, 4]):
        reporter.update(progress(batch, late=late))
    assert read_status(settings, "status-test-b")["late_rows"] == 7


def test_latency_is_commit_time_minus_observed_source_timestamps(settings):
    # Batch starts at 10:00:00.000 and lasts 1 s, so it commits at 10:00:01.000 = t_commit.
    t_commit = 1795341601000.0  # 2026-11-22T10:00:01Z in epoch ms
    reporter = StatusReporter(settings, "status-test-c", "processing_time")
    reporter.update(progress(0, src_p50=t_commit - 300))
    status = read_status(settings, "status-test-c")
    # per batch: p50 300 ms, p05 source 400 ms, p01 source 500 ms behind the commit
    assert (status["latency_p50_ms"], status["latency_p99_ms"]) == (400.0, 500.0)


def test_no_observed_latency_leaves_the_percentiles_empty(settings):
    reporter = StatusReporter(settings, "status-test-d", "realtime")
    reporter.update(progress(0))
    assert read_status(settings, "status-test-d")["latency_p99_ms"] is None


def test_final_state_keeps_the_last_figures_and_the_table_lists_the_app(settings):
    reporter = StatusReporter(settings, "status-test-e", "processing_time")
    reporter.update(progress(3))
    reporter.final("failed", "boom")
    status = read_status(settings, "status-test-e")
    assert (status["state"], status["error"], status["batch_id"]) == ("failed", "boom", 3)
    table = format_table(
        [s for s in read_all(settings) if s["app"] == "status-test-e"],
        now=status["written_at"] + 12.0,
    )
    assert cells(table)["status-test-e"]["state"] == "failed"
    assert cells(table)["status-test-e"]["age s"] == "12.0"


def cells(table: str) -> dict[str, dict[str, str]]:
    """``{app: {column title: cell}}`` of a status table (columns are two or more spaces apart)."""
    header, *rows = table.splitlines()
    titles = [title for title, _ in COLUMNS]
    assert re.split(r"\s{2,}", header) == titles
    return {row.split()[0]: dict(zip(titles, re.split(r"\s{2,}", row))) for row in rows}


def test_the_table_shows_each_apps_age_at_the_given_time(settings):
    write_status(settings, "status-test-f", {"state": "running"}, now=1_000.0)
    write_status(settings, "status-test-g", {"state": "stopped"}, now=1_030.5)
    statuses = [s for s in read_all(settings) if s["app"] in ("status-test-f", "status-test-g")]
    table = cells(format_table(statuses, now=1_042.5))
    assert {app: row["age s"] for app, row in table.items()} == {
        "status-test-f": "42.5",
        "status-test-g": "12.0",
    }


class FixedProbe:
    """Stands in for the Kafka probe (``tests/include/test_latency.py`` tests the real one)."""

    def __init__(self, *figures: dict) -> None:
        self.figures = list(figures)

    def measure(self) -> dict:
        return self.figures.pop(0)


def e2e(at: float, p50: float | None, p99: float | None) -> dict:
    return {
        "p50_ms": p50,
        "p99_ms": p99,
        "samples": 0 if p50 is None else 120,
        "window_s": None if p50 is None else 4.2,
        "measured_at": at,
    }


def test_the_per_batch_figure_is_labelled_a_bound_and_state_says_what_it_waits_for(settings):
    reporter = StatusReporter(settings, "status-test-h", "realtime", probe_every_s=0)
    reporter.extra.update(threshold=5)  # click_surge's knobs: its windows
    reporter.update(progress(0, src_p50=1795341601000.0 - 300))
    status = read_status(settings, "status-test-h")
    bound = status["batch_latency_bound"]
    assert (
        (bound["p50_ms"], bound["p99_ms"])
        == (status["latency_p50_ms"], status["latency_p99_ms"])
        == (400.0, 500.0)
    )
    assert bound["what"].startswith("upper bound per batch")
    waiting = status["waiting_in_state"]
    # watermark 09:59:30; a 5 s window + 5 s watermark delay
    assert (waiting["rows"], waiting["closes_at"]) == (15, "2026-11-22T09:59:40.000Z")


def test_the_probe_writes_e2e_latency_and_its_history_and_keeps_written_at(settings):
    reporter = StatusReporter(settings, "status-test-i", "realtime", probe_every_s=0)
    reporter.update(progress(0))
    written_at = read_status(settings, "status-test-i")["written_at"]
    now = written_at + 20
    reporter.probe_once(FixedProbe(e2e(now, 35.0, 61.0)))
    reporter.probe_once(FixedProbe(e2e(now + 15, None, None)))
    status = read_status(settings, "status-test-i")
    assert status["e2e_latency"] == e2e(now + 15, None, None)
    assert status["latency_history"] == [[now, 35.0, 61.0], [now + 15, None, None]]
    # the probe is not progress: the supervisor's staleness clock stays where the batch left it
    assert (status["written_at"], status["state"], status["batch_id"]) == (written_at, "running", 0)
    reporter.update(progress(1))  # a batch keeps what the probe measured
    assert read_status(settings, "status-test-i")["latency_history"] == [
        [now, 35.0, 61.0],
        [now + 15, None, None],
    ]


class DlqProbe(FixedProbe):
    """A fixed probe with a DLQ topic whose end offsets sum to each of ``totals`` in turn."""

    dlq = "page_clicks_dlq"

    def __init__(self, *figures: dict, totals: list) -> None:
        super().__init__(*figures)
        self.totals = totals

    def dlq_total(self) -> int | None:
        return self.totals.pop(0)


def test_the_probe_writes_the_dlq_growth_since_its_previous_probe(settings):
    reporter = StatusReporter(settings, "status-test-m", "realtime", probe_every_s=0)
    reporter.update(progress(0))
    written_at = read_status(settings, "status-test-m")["written_at"]
    now = written_at + 20
    probe = DlqProbe(*(e2e(now + 15 * i, 35.0, 61.0) for i in range(4)), totals=[100, 130, 4, 9])
    keys = ("dlq_rows_last_interval", "dlq_interval_s", "dlq_total")
    seen = []
    for _ in range(4):
        reporter.probe_once(probe)
        status = read_status(settings, "status-test-m")
        seen.append(tuple(status[k] for k in keys))
    # first probe: no interval yet; then 30 rows in 15 s; the topic recreated: none; then 5
    assert seen == [(None, None, 100), (30, 15.0, 130), (None, None, 4), (5, 15.0, 9)]
    assert status["written_at"] == written_at
    reporter.update(progress(1))  # a batch keeps what the probe measured
    status = read_status(settings, "status-test-m")
    assert tuple(status[k] for k in keys) == (5, 15.0, 9)
    assert cells(format_table([status]))["status-test-m"]["dlq/int"] == "5"


def test_a_restarted_app_keeps_the_last_hour_of_history(settings):
    import time

    now = time.time()
    write_status(
        settings,
        "status-test-j",
        {"state": "stopped", "latency_history": [[now - 4000, 1.0, 2.0], [now - 100, 30.0, 60.0]]},
    )
    reporter = StatusReporter(settings, "status-test-j", "realtime", probe_every_s=0)
    reporter.probe_once(FixedProbe(e2e(now, 31.0, 59.0)))
    assert read_status(settings, "status-test-j")["latency_history"] == [
        [now - 100, 30.0, 60.0],
        [now, 31.0, 59.0],
    ]


def test_a_failing_probe_records_its_error_and_the_app_goes_on(settings):
    class Down:
        def measure(self):
            raise RuntimeError("broker down")

    reporter = StatusReporter(settings, "status-test-k", "realtime", probe_every_s=0)
    reporter.update(progress(0))
    figures = reporter.probe_once(Down())
    assert (figures["error"], figures["p50_ms"]) == ("broker down", None)
    assert read_status(settings, "status-test-k")["state"] == "running"


def test_the_table_shows_e2e_latency_beside_the_bound_and_what_waits(settings):
    reporter = StatusReporter(settings, "status-test-l", "realtime", probe_every_s=0)
    reporter.extra.update(threshold=5)
    reporter.update(progress(0, src_p50=1795341601000.0 - 300))
    reporter.probe_once(FixedProbe(e2e(1795341602.0, 35.0, 61.0)))
    table = cells(format_table([s for s in read_all(settings) if s["app"] == "status-test-l"]))
    row = table["status-test-l"]
    assert {
        k: row[k] for k in ("e2e p50", "e2e p99", "e2e n", "bound p50", "bound p99", "waiting")
    } == {
        "e2e p50": "35.0",
        "e2e p99": "61.0",
        "e2e n": "120",
        "bound p50": "400.0",
        "bound p99": "500.0",
        "waiting": "15 until wm 09:59:40",
    }
