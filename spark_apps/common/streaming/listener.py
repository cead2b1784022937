"""The status listener: query progress → the app's status file (``adlake.status``).

Latency here is an upper bound per batch, computed from observed metrics (see
:class:`StatusReporter`); the benchmark measures the exact figure from the output topic.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from adlake.config import Settings
from adlake.status import write_status

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def _state_totals(progress: dict) -> tuple[int, float, int]:
    ops = progress.get("stateOperators") or []
    rows = sum(op.get("numRowsTotal", 0) for op in ops)
    memory = sum(op.get("memoryUsedBytes", 0) for op in ops)
    late = sum(op.get("numRowsDroppedByWatermark", 0) for op in ops)
    return rows, memory / 1e6, late


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class StatusReporter:
    """Turns query progress into the app's status file.

    Latency here is an upper bound computed per batch from observed metrics: the app observes the
    percentiles of ``source_kafka_ts`` over each batch's output, and since every record of a batch
    is written before the batch commits, ``commit time - source timestamp`` bounds its
    end-to-end latency from above. Percentiles over the recent window are taken over those
    per-batch bounds. The benchmark measures the exact figure from the output topic.
    """

    def __init__(self, settings: Settings, app: str, mode: str, window: int = 50) -> None:
        self.settings, self.app, self.mode = settings, app, mode
        self.latencies: deque[float] = deque(maxlen=window)
        self.late_rows_total = 0
        self.batches = 0
        self.extra: dict = {}

    def update(self, progress: dict) -> dict:
        self.batches += 1
        rows, memory_mb, late = _state_totals(progress)
        self.late_rows_total += late
        metrics = (progress.get("observedMetrics") or {}).get("latency") or {}
        commit_ms = _parse_ts_ms(progress.get("timestamp")) + \
            (progress.get("batchDuration") or 0)
        for key in ("src_p50", "src_p05", "src_p01"):
            if metrics.get(key) is not None:
                self.latencies.append(max(0.0, commit_ms - float(metrics[key])))
        status = {
            "state": "running", "mode": self.mode, "batch_id": progress.get("batchId"),
            "last_batch_at": progress.get("timestamp"),
            "input_rows": progress.get("numInputRows"),
            "input_rows_per_s": _round(progress.get("inputRowsPerSecond")),
            "processed_rows_per_s": _round(progress.get("processedRowsPerSecond")),
            "batch_duration_ms": progress.get("batchDuration"),
            # where the batch's time went: addBatch (the work), queryPlanning, walCommit, ...
            "batch_phases_ms": progress.get("durationMs"),
            "state_rows": rows, "state_memory_mb": round(memory_mb, 2),
            "watermark": (progress.get("eventTime") or {}).get("watermark"),
            "late_rows": self.late_rows_total,
            "latency_p50_ms": _round(_percentile(list(self.latencies), 0.50)),
            "latency_p95_ms": _round(_percentile(list(self.latencies), 0.95)),
            "latency_p99_ms": _round(_percentile(list(self.latencies), 0.99)),
            "batches": self.batches, **self.extra,
        }
        write_status(self.settings, self.app, status)
        phases = status["batch_phases_ms"] or {}
        print(f"[{self.app}] batch {status['batch_id']}: {status['input_rows']} rows in "
              f"{status['batch_duration_ms']} ms (addBatch {phases.get('addBatch')} ms), "
              f"state {rows} rows", flush=True)
        return status

    def heartbeat(self, now: float | None = None) -> dict:
        """The query is running and idle (no new input): refresh the status file, so that an idle
        app does not look stale to the supervisor (``adlake.apps``), and stamp
        ``last_heartbeat_at``. Spark reports idleness about every 10 s
        (``spark.sql.streaming.noDataProgressEventInterval``) in micro-batch mode; a Real-Time
        Mode batch is never idle (it reports at each checkpoint interval instead)."""
        from adlake.status import read_status

        now = time.time() if now is None else now
        last = read_status(self.settings, self.app) or {"mode": self.mode, **self.extra}
        # an idle query is a running one, also before its first batch (empty input)
        last.update(state="running", error=None, last_heartbeat_at=now)
        write_status(self.settings, self.app, last, now=now)
        return last

    def final(self, state: str, error: str | None = None) -> None:
        from adlake.status import read_status

        last = read_status(self.settings, self.app) or {"mode": self.mode}
        last.update(state=state, error=error)
        write_status(self.settings, self.app, last)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 1)


def _parse_ts_ms(text: str | None) -> float:
    from datetime import datetime

    if not text:
        return time.time() * 1000
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def observe_latency(df: DataFrame, source_ts_ms: str | Column) -> DataFrame:
    """Observe percentiles of the output's source timestamps, in epoch milliseconds (a column
    or its name; see :class:`StatusReporter`)."""
    from pyspark.sql import functions as F

    col = (F.col(source_ts_ms) if isinstance(source_ts_ms, str) else source_ts_ms).cast("double")
    return df.observe(
        "latency",
        F.percentile_approx(col, 0.5).alias("src_p50"),
        F.percentile_approx(col, 0.05).alias("src_p05"),
        F.percentile_approx(col, 0.01).alias("src_p01"),
    )


def attach_listener(spark: SparkSession, reporter: StatusReporter) -> object:
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event):  # noqa: N802 - Spark's API
            reporter.final("starting")

        def onQueryProgress(self, event):  # noqa: N802
            import json

            reporter.update(json.loads(event.progress.json))

        def onQueryIdle(self, event):  # noqa: N802
            reporter.heartbeat()

        def onQueryTerminated(self, event):  # noqa: N802
            reporter.final("failed" if event.exception else "stopped", event.exception)

    listener = _Listener()
    spark.streams.addListener(listener)
    return listener
