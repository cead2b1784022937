"""What a measured run (:func:`bench.ops.latency.run_scenario`; :mod:`bench.ops.recovery`'s
runs) watches while its traffic runs, each in a thread of its own: the app's status file, a
batch per entry (:class:`StatusWatcher`), its output topic, a latency sample per record
(:class:`OutputReader`), and a progress line every 30 s (:func:`ticker`). Times in the status
and the records are ISO strings, read as epoch milliseconds (:func:`ts_ms`).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime

from adlake.config import Settings
from adlake.status import read_status
from bench.harness import TopicReader, load_average


class StatusWatcher(threading.Thread):
    """Polls the app's status file (rewritten by its listener after every batch) and keeps one
    entry per batch: id, progress timestamp, duration, ``durationMs`` and state operator
    metrics. In Real-Time Mode a batch lasts the checkpoint interval, so a 0.2 s poll sees them
    all; in micro-batch mode it may miss some (they are only used for Real-Time Mode)."""

    def __init__(self, settings: Settings, name: str, every_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.settings, self.name, self.every_s = settings, name, every_s
        self.batches: dict[int, dict] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.every_s):
            try:
                status = read_status(self.settings, self.name) or {}
            except (OSError, ValueError):
                continue
            batch = status.get("batch_id")
            if batch is None or batch in self.batches or not status.get("last_batch_at"):
                continue
            self.batches[batch] = {
                "batch_id": batch,
                "started_ms": ts_ms(status["last_batch_at"]),
                "duration_ms": status.get("batch_duration_ms"),
                "phases_ms": status.get("batch_phases_ms") or {},
                "input_rows": status.get("input_rows"),
                "state_rows": status.get("state_rows"),
                "state_operator_metrics": status.get("state_operator_metrics") or [],
            }


def ts_ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


class OutputReader(TopicReader):
    """An app's output topic: (output Kafka timestamp, ``source_kafka_ts``) per record, but for
    the app's timer-driven records (``skip``)."""

    def __init__(self, bootstrap: str, topic: str, skip: tuple[str, ...]) -> None:
        super().__init__(bootstrap, topic)
        self.skip = skip
        self.timer_samples: list[tuple[float, float]] = []  # the skipped ones, measured apart

    def sample(self, msg) -> tuple[float, float] | None:
        value = json.loads(msg.value())
        source = value.get("source_kafka_ts")
        if not source:
            return None
        if value.get("record_type") in self.skip:
            self.timer_samples.append((float(msg.timestamp()[1]), ts_ms(source)))
            return None
        return float(msg.timestamp()[1]), ts_ms(source)


def ticker(
    name: str,
    started: float,
    total_s: float,
    reader: OutputReader,
    watcher: StatusWatcher,
    stop: threading.Event,
    every_s: float = 30.0,
) -> None:
    """One progress line every ``every_s`` seconds while a scenario's traffic runs."""
    while not stop.wait(every_s):
        print(
            f"[bench] {name}: {time.monotonic() - started:.0f}/{total_s:.0f} s, "
            f"{len(reader.samples)} outputs, {len(watcher.batches)} batches, load "
            f"{load_average():.1f}",
            flush=True,
        )
