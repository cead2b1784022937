"""Stopping a streaming query gracefully: on a signal, a stop marker or a deadline, after the
running batch has committed."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery


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

    def _on_signal(self, signum, frame) -> None:
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

    def run(
        self,
        query: StreamingQuery,
        poll_s: float = 0.2,
        drain_timeout_s: float = 60,
        every: tuple[float, Callable[[], object]] | None = None,
    ) -> None:
        """Block until the query ends or a stop is requested; then stop it gracefully.
        ``every``: (seconds, call) to call while it runs (a liveness check)."""
        due = time.monotonic() + every[0] if every else None
        while query.isActive and not self.should_stop():
            query.awaitTermination(poll_s)
            if every and time.monotonic() >= due:
                every[1]()
                due = time.monotonic() + every[0]
        if not query.isActive:
            query.awaitTermination()  # re-raises the query's failure, if any
            return
        deadline = time.monotonic() + drain_timeout_s
        running = _last_batch_id(query)
        while (
            query.status.get("isTriggerActive")
            and _last_batch_id(query) == running
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        query.stop()
        if self.marker is not None:
            self.marker.unlink(missing_ok=True)


def _last_batch_id(query: StreamingQuery) -> int | None:
    """The id of the last batch the query completed (its progress is reported after its commit)."""
    progress = query.lastProgress
    return None if progress is None else progress.get("batchId")
