"""What every streaming app shares: triggers, Kafka in/out, DLQ records, graceful stop, status.

Delivery semantics, once for all apps: Spark's Kafka source is replayable and its offsets are
committed to the checkpoint with each batch, so after a crash or a stop the query resumes from
the last committed batch and no input is skipped. The Kafka *sink* is at-least-once: records of a
batch that was written but not committed are written again on restart. Every output record
therefore carries its ids (see ``registry.Topic.id_fields``) so consumers deduplicate.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings
from adlake.status import write_status

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

TRIGGER_MODES = ("realtime", "processing_time", "available_now")
# Real-Time Mode's default checkpoint interval. The long-running batch commits (offsets, state)
# and the watermark advances only at these boundaries, so event-time timers (attribution's
# window closes, orphans, tombstones) fire at them; each boundary also pauses the stream for a
# few seconds on 2 cores (README). 30 s bounds both the timer delay and the replay after a crash.
DEFAULT_RTM_INTERVAL = "30 seconds"


@dataclass(frozen=True)
class TriggerConfig:
    """``realtime`` takes a checkpoint interval ("5 minutes": how often the long-running batch
    commits, not a latency target); ``processing_time`` a micro-batch interval ("0 seconds": start
    the next batch as soon as the previous ends); ``available_now`` none."""

    mode: str
    interval: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in TRIGGER_MODES:
            raise ValueError(f"trigger mode {self.mode!r} is not valid: allowed values are "
                             f"{', '.join(TRIGGER_MODES)}")

    def kwargs(self) -> dict:
        if self.mode == "realtime":
            return {"realTime": self.interval or DEFAULT_RTM_INTERVAL}
        if self.mode == "processing_time":
            return {"processingTime": self.interval or "0 seconds"}
        return {"availableNow": True}

    @property
    def output_mode_note(self) -> str:
        return "update" if self.mode == "realtime" else "append/update"


def add_common_args(parser: argparse.ArgumentParser, default_trigger: str) -> None:
    parser.add_argument("--trigger", choices=TRIGGER_MODES, default=default_trigger)
    parser.add_argument("--trigger-interval", default=None,
                        help=f"realtime: checkpoint interval (default {DEFAULT_RTM_INTERVAL}); "
                             "processing_time: batch interval (default 0 seconds)")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint directory (default <runtime>/checkpoints/<app>)")
    parser.add_argument("--starting-offsets", default="earliest",
                        help="where a new checkpoint starts reading: earliest or latest")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--stop-after-s", type=float, default=None,
                        help="stop gracefully after this many seconds (tests, benchmarks)")
    parser.add_argument("--query-name", default=None)


class TaskSlotsError(RuntimeError):
    """The master cannot run every Real-Time Mode task at once."""


def required_slots(settings: Settings, app: registry.App) -> int:
    """Real-Time Mode runs one long-lived task per source partition plus one per shuffle
    partition, all at once, for the whole checkpoint interval."""
    return sum(registry.topic(t).partitions for t in app.inputs) + settings.shuffle_partitions


def check_task_slots(settings: Settings, app: registry.App) -> None:
    """Fail fast when a ``local[N]`` master has fewer than source + shuffle partitions slots
    (Spark would reject the query or stall)."""
    match = re.fullmatch(r"local(?:\[(\d+|\*)\])?", settings.spark_master_ops)
    if not match:
        return  # a cluster: its size is the cluster's configuration
    # local[*] has as many slots as the machine has cores
    slots = (os.cpu_count() or 1) if match.group(1) == "*" else int(match.group(1) or 1)
    needed = required_slots(settings, app)
    if slots < needed:
        raise TaskSlotsError(
            f"Real-Time Mode needs {needed} task slots for {app.name} "
            f"({needed - settings.shuffle_partitions} source partitions + "
            f"{settings.shuffle_partitions} shuffle partitions) but "
            f"ADLAKE_SPARK_MASTER_OPS={settings.spark_master_ops} has {slots}; raise N in "
            "local[N] or lower ADLAKE_SHUFFLE_PARTITIONS")


def read_kafka(spark: SparkSession, settings: Settings, topics: list[str],
               starting_offsets: str = "earliest", max_offsets: int | None = None) -> DataFrame:
    """A streaming DataFrame of raw Kafka records (key, value, topic, partition, offset,
    timestamp) of the registered ``topics``."""
    for name in topics:
        registry.topic(name)
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
              .option("subscribe", ",".join(topics))
              .option("startingOffsets", starting_offsets)
              # A topic deleted and recreated under a running app is an operator's decision, not
              # a reason to stop the app; Spark logs the offsets it could not read.
              .option("failOnDataLoss", "false"))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return reader.load()


_JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
    # every declared field is in every record, null or not
    "ignoreNullFields": "false",
}


def json_value(topic: registry.Topic):
    """A JSON value column holding exactly the registry's fields of ``topic``, in order."""
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*[F.col(n) for n in topic.schema.names]), _JSON_OPTIONS)


def dlq_value(dlq_topic: registry.Topic):
    """The DLQ record of a rejected row (see ``parsing``): the raw value, the reason and the
    source coordinates, from the row's Kafka columns (topic, partition, offset, timestamp)."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import RAW, REASON

    fields = {"raw_value": F.col(RAW), "reason": F.col(REASON),
              "source_topic": F.col("topic"), "source_partition": F.col("partition"),
              "source_offset": F.col("offset"), "source_kafka_ts": F.col("timestamp")}
    return F.to_json(F.struct(*[fields[n].alias(n) for n in dlq_topic.schema.names]),
                     _JSON_OPTIONS)


def write_kafka(df: DataFrame, settings: Settings, checkpoint: Path, trigger: TriggerConfig,
                output_mode: str, query_name: str) -> StreamingQuery:
    """Start the query writing ``df`` (columns topic, key, value) to Kafka."""
    return (df.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
            .option("checkpointLocation", str(checkpoint))
            .outputMode(output_mode)
            .queryName(query_name)
            .trigger(**trigger.kwargs())
            .start())


# -- status --------------------------------------------------------------------------------------

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
            pass

        def onQueryTerminated(self, event):  # noqa: N802
            reporter.final("failed" if event.exception else "stopped", event.exception)

    listener = _Listener()
    spark.streams.addListener(listener)
    return listener


# -- running -------------------------------------------------------------------------------------

class GracefulStop:
    """SIGTERM/SIGINT, a stop marker file, or a deadline ask the query to stop.

    The stop waits until the running micro-batch has committed (the trigger is idle, or the
    query reports the batch's progress), so that batch's output and offsets are committed
    together. Under a backlog a 0-second trigger starts the next batch at once, so the trigger is
    never seen idle: that next batch is interrupted as it begins, and a restart runs it again from
    its planned offsets, re-emitting whatever it had already written (at-least-once). In Real-Time
    Mode a batch lasts a whole checkpoint interval, so the stop interrupts it after at most
    ``drain_timeout_s``, with the same consequence.
    """

    def __init__(self, marker: Path | None = None, deadline_s: float | None = None) -> None:
        self.requested = threading.Event()
        self.marker = marker
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.reason = ""

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame) -> None:  # noqa: ARG002
        self.reason = signal.Signals(signum).name
        self.requested.set()

    def should_stop(self) -> bool:
        if self.requested.is_set():
            return True
        if self.marker is not None and self.marker.exists():
            self.reason = f"stop marker {self.marker}"
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.reason = "deadline"
            return True
        return False

    def run(self, query: StreamingQuery, poll_s: float = 0.2, drain_timeout_s: float = 60) -> None:
        """Block until the query ends or a stop is requested; then stop it gracefully."""
        while query.isActive and not self.should_stop():
            query.awaitTermination(poll_s)
        if not query.isActive:
            query.awaitTermination()  # re-raises the query's failure, if any
            return
        deadline = time.monotonic() + drain_timeout_s
        running = _last_batch_id(query)
        while (query.status.get("isTriggerActive") and _last_batch_id(query) == running
               and time.monotonic() < deadline):
            time.sleep(0.1)
        query.stop()
        if self.marker is not None:
            self.marker.unlink(missing_ok=True)


def _last_batch_id(query: StreamingQuery) -> int | None:
    """The id of the last batch the query completed (its progress is reported after its commit)."""
    progress = query.lastProgress
    return None if progress is None else progress.get("batchId")
