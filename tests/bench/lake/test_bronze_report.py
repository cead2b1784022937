"""The bronze benchmark's file and its report share one type: what ``bench.lake.bronze`` builds
from its queries' batches and writes (``asdict`` of a ``Bronze``) reads back as the same value,
its goal as the report's, and a file without the fields the report does not show (its summary)
still reads."""

from __future__ import annotations

import json
from dataclasses import asdict

from bench.lake import bronze, bronze_report as report
from bench.report_kit import Goal, Node


def batches(records: list[int], seconds: list[float]) -> list[dict]:
    """A query's batches as the benchmark's progress listener gives them."""
    return [
        {
            "records": n,
            "seconds": s,
            "timestamp": "2026-11-24T10:00:03.500Z",
            "durations_ms": {"triggerExecution": round(s * 1000), "addBatch": round(s * 900)},
        }
        for n, s in zip(records, seconds)
    ]


def written() -> report.Bronze:
    """A file as the benchmark fills it, from its own functions."""
    args = bronze.parse_args(["--records", "1500008", "--max-offsets-per-trigger", "500000"])
    started = 1795514400.0  # 2026-11-24T10:00:00Z
    measured = {
        "ingest": bronze.throughput(
            batches([500_000, 500_000, 500_000, 8], [13.1554, 4.61, 4.59, 2.0191]), started, 32.64
        ),
        "silver": bronze.throughput(batches([1_500_008], [80.357]), started + 40, 82.0),
        "fixed_cost_s": {"bronze": 0.38, "silver": 0.05, "chain": 0.43},
        "fixed_cost_engine_s": {"bronze": 0.2, "silver": 0.04, "chain": 0.24},
        "fixed_cost_logs": {"local:bronze": ["started", "done"], "engine:bronze": []},
    }
    return bronze.report(args, 8.45, measured, (1.5, 2.25))


def test_what_the_benchmark_writes_the_report_reads_back_equal():
    result = written()
    value = json.loads(json.dumps(asdict(result)))
    read, goals = report.read_bronze(Node("bronze.json", "", value))
    assert read == result
    assert goals == [Goal.of("bronze", result.goal)]
    assert result.tail_batch == report.TailBatch(8, 2.019)  # left out of the steady state
    assert result.steady_records_per_s == round(1_000_000 / 9.2) and goals[0].met
    assert result.silver is not None and result.silver.steady_records_per_s is None
    assert list(value)[:11] == [
        "records",
        "partitions",
        "topic",
        "max_offsets_per_trigger",
        "cores",
        "quick",
        "session_s",
        "startup_s",
        "query_start_s",
        "first_batch_s",
        "tail_batch",
    ]


def test_the_fields_the_report_does_not_show_are_optional():
    value = json.loads(json.dumps(asdict(written())))
    for key in ("topic", "quick", "tail_batch", "silver", "fixed_cost_engine_s", "fixed_cost_logs"):
        del value[key]
    for batch in value["batches"]:
        del batch["durations_ms"]
    read, _ = report.read_bronze(Node("bronze.json", "", value))
    assert read.silver is None and read.fixed_cost_logs is None and read.fixed_cost_engine_s == {}
    assert read.batches[0] == report.Batch(500_000, 13.155)
