"""The supervisor benchmark's file and its report share one type: what ``bench.ops.supervisor``
builds and writes (``asdict`` of a :class:`Supervisor`) reads back as the same value, and a file
without the fields the report does not show (its summary) still reads."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta

from bench.ops import supervisor
from bench.ops.supervisor_report import CleanDb, Supervisor, Window, read_supervisor
from bench.report_kit import Node


def window(seconds: float, cpu: float, rows: dict[str, int]) -> Window:
    return Window(
        seconds=seconds,
        airflow_cpu_s=cpu,
        machine_cpu_s=cpu + 8.0,
        rows_added=rows,
        db_bytes_added=4096 * sum(rows.values()),
        log_files_added=len(rows),
        log_bytes_added=2000,
        load_average=(0.5, 0.25),
    )


def written() -> Supervisor:
    """A file as the benchmark fills it, from its own functions."""
    due = datetime(2026, 5, 1, tzinfo=UTC)
    runs = [
        {
            "due": due + timedelta(minutes=i),
            "queued": due + timedelta(minutes=i, seconds=0.2),
            "started": due + timedelta(minutes=i, seconds=0.5 + i),
            "ended": due + timedelta(minutes=i, seconds=0.75 + 2 * i),
            "state": "success",
        }
        for i in range(3)
    ]
    paused = window(300.0, 12.5, {})
    supervised = window(301.2, 15.2, {"dag_run": 3, "log": 7, "task_instance": 3})
    run = supervisor.per_run(paused, supervised, len(runs))
    timing = supervisor.timing_of(runs)
    return Supervisor(
        cores=2,
        window_s=300.0,
        paused=paused,
        supervised=supervised,
        runs=len(runs),
        failed_runs=0,
        per_run=run,
        timing=timing,
        trade_off=supervisor.trade_off(run, timing),
        clean_db=CleanDb(dag_run=(3, 1), task_instance=(3, 0), log=(19, 1)),
        command="python -m bench.ops.supervisor",
    )


def test_what_the_benchmark_writes_the_report_reads_back_equal():
    result = written()
    value = json.loads(json.dumps(asdict(result)))
    assert read_supervisor(Node("supervisor.json", "", value)) == (result, [])
    assert list(value) == [
        "cores",
        "window_s",
        "paused",
        "supervised",
        "runs",
        "failed_runs",
        "per_run",
        "timing",
        "trade_off",
        "clean_db",
        "command",
    ]


def test_the_fields_the_report_does_not_show_are_left_out_of_its_summary_and_optional():
    value = json.loads(json.dumps(asdict(written())))
    trail: set = set()
    read_supervisor(Node("supervisor.json", "", value, trail=trail))
    assert {path[0] for path in trail} == {
        "window_s",
        "runs",
        "per_run",
        "timing",
        "trade_off",
        "clean_db",
    }
    for key in ("cores", "paused", "supervised", "failed_runs", "command"):
        del value[key]
    del value["per_run"]["rows_by_table"], value["timing"]["task_s"]
    result, _ = read_supervisor(Node("supervisor.json", "", value))
    assert result.paused is None and result.per_run.rows_by_table is None
    assert result.timing == replace(written().timing, task_s=None)
