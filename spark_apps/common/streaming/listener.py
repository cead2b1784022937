"""The status listener: query progress → the app's status file (``adlake.status``).

Two latencies, labelled for what they are:

* ``latency_p50_ms`` … (also as ``batch_latency_bound``): an upper bound per batch, computed from
  observed metrics (see :class:`StatusReporter`). In Real-Time Mode a batch is the whole
  checkpoint interval, so this bound says about 30 s where records take tens of milliseconds.
* ``e2e_latency``: measured from the app's output topics by :class:`adlake.latency.LatencyProbe`,
  every ``probe_every_s`` seconds, in a thread of this driver (:meth:`StatusReporter.start_probe`),
  with ``latency_history``, its last hour. The probe runs here, not in the readers, so the status
  file stays the one source and ``make status`` or the Airflow page only read JSON; its cost is
  bounded (a few hundred records per period, one consumer, no offsets committed).
* ``dlq_rows_last_interval``: at each probe, the growth of the app's DLQ topic (the sum of its
  end offsets, ``dlq_total``) since the previous probe, ``dlq_interval_s`` seconds earlier
  (:func:`adlake.latency.dlq_growth`); none on the first probe of a run.

``waiting_in_state`` says what waits in state and when it will close
(:func:`adlake.latency.waiting_in_state`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from adlake import latency, registry
from adlake.config import Settings
from adlake.status import read_status, write_status

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
    per-batch bounds. The measured figure is ``e2e_latency``, from :meth:`probe_once`.

    ``spec`` is the app's registry entry (the runner passes its ``StreamingApp``'s; without it:
    the registry app named ``app``, or the one whose knobs ``extra`` holds, for a query of
    another name): its outputs, DLQ and timer-driven records make the probe, its ``state``
    ``waiting_in_state``. ``outputs`` are the topics the probe reads instead of the entry's;
    ``extra`` holds the app's knobs (the runner sets them), which ``waiting_in_state`` reads.
    Writes from the listener and the probe thread are serialized; the probe keeps the file's
    ``written_at``, so a stuck query does not look fresh to the supervisor.
    """

    def __init__(
        self,
        settings: Settings,
        app: str,
        mode: str,
        window: int = 50,
        outputs: tuple[str, ...] | None = None,
        probe_every_s: float = latency.PROBE_EVERY_S,
        spec: registry.App | None = None,
    ) -> None:
        self.settings, self.app, self.mode, self.spec = settings, app, mode, spec
        self.latencies: deque[float] = deque(maxlen=window)
        self.late_rows_total = 0
        self.batches = 0
        self.extra: dict = {}
        self.outputs = outputs
        self.probe_every_s = probe_every_s
        self._lock = threading.RLock()
        self._probe: latency.LatencyProbe | None = None
        self._probe_stop = threading.Event()
        # the DLQ figures of the last probe, and its (epoch_s, dlq_total): a new run starts over
        self.dlq: dict = {}
        self._dlq_last: tuple[float, int] | None = None
        previous = read_status(settings, app) or {}
        self.e2e: dict | None = previous.get("e2e_latency")
        # the history survives a restart: the last hour of the previous run's points
        since = time.time() - latency.HISTORY_S
        self.history: list = [
            p
            for p in previous.get("latency_history") or []
            if isinstance(p, list) and len(p) == 3 and p[0] > since
        ]
        # the input and processed rates and the lag, at most one point per 10 s: the last hour
        # of them, also across a restart
        self.progress_history: list = [
            p
            for p in previous.get("progress_history") or []
            if isinstance(p, list) and len(p) == 4 and p[0] > since
        ]

    def registry_app(self) -> registry.App | None:
        """The registry app this query runs: ``spec``, else by name, else by its knobs."""
        if self.spec is not None:
            return self.spec
        if self.app in registry.APPS:
            return registry.APPS[self.app]
        knobs = {k for k in self.extra if not k.startswith("_")}
        return next(
            (a for a in registry.APPS.values() if a.knobs and {k.name for k in a.knobs} <= knobs),
            None,
        )

    def waiting(self, state_rows: int | None, watermark: str | None) -> dict:
        return latency.waiting_in_state(
            self.registry_app() or self.app, state_rows, watermark, self.extra
        )

    def update(self, progress: dict) -> dict:
        self.batches += 1
        rows, memory_mb, late = _state_totals(progress)
        self.late_rows_total += late
        metrics = (progress.get("observedMetrics") or {}).get("latency") or {}
        commit_ms = _parse_ts_ms(progress.get("timestamp")) + (progress.get("batchDuration") or 0)
        for key in ("src_p50", "src_p05", "src_p01"):
            if metrics.get(key) is not None:
                self.latencies.append(max(0.0, commit_ms - float(metrics[key])))
        status = {
            "state": "running",
            "mode": self.mode,
            "batch_id": progress.get("batchId"),
            "last_batch_at": progress.get("timestamp"),
            "input_rows": progress.get("numInputRows"),
            "input_rows_per_s": _round(progress.get("inputRowsPerSecond")),
            "processed_rows_per_s": _round(progress.get("processedRowsPerSecond")),
            "batch_duration_ms": progress.get("batchDuration"),
            # where the batch's time went: addBatch (the work), queryPlanning, walCommit, ...
            "batch_phases_ms": progress.get("durationMs"),
            # per stateful operator: its timings (allUpdatesTimeMs, commitTimeMs, ...) and
            # custom metrics (e.g. transformWithState's numExpiredTimers), for the benchmark's
            # boundary breakdown
            "state_operator_metrics": [
                {k: v for k, v in op.items() if k.endswith("TimeMs") or k == "customMetrics"}
                for op in progress.get("stateOperators") or []
            ],
            "state_rows": rows,
            "state_memory_mb": round(memory_mb, 2),
            "watermark": (progress.get("eventTime") or {}).get("watermark"),
            "late_rows": self.late_rows_total,
            "latency_p50_ms": _round(_percentile(list(self.latencies), 0.50)),
            "latency_p95_ms": _round(_percentile(list(self.latencies), 0.95)),
            "latency_p99_ms": _round(_percentile(list(self.latencies), 0.99)),
            "batches": self.batches,
            **self.extra,
        }
        status["batch_latency_bound"] = {
            "p50_ms": status["latency_p50_ms"],
            "p95_ms": status["latency_p95_ms"],
            "p99_ms": status["latency_p99_ms"],
            "what": BATCH_BOUND_WHAT,
        }
        status["waiting_in_state"] = self.waiting(rows, status["watermark"])
        # Kafka input lag (offsets not read yet), and the rates and lag over the last hour
        status["input_lag"] = lag = latency.input_lag(progress)
        self.progress_history = latency.add_progress(
            self.progress_history,
            [
                round(commit_ms / 1000, 3),
                status["input_rows_per_s"],
                status["processed_rows_per_s"],
                lag and lag["max_offsets"],
            ],
        )
        status["progress_history"] = self.progress_history
        with self._lock:
            status.update(e2e_latency=self.e2e, latency_history=self.history, **self.dlq)
            write_status(self.settings, self.app, status)
        phases = status["batch_phases_ms"] or {}
        print(
            f"[{self.app}] batch {status['batch_id']}: {status['input_rows']} rows in "
            f"{status['batch_duration_ms']} ms (addBatch {phases.get('addBatch')} ms), "
            f"state {rows} rows",
            flush=True,
        )
        return status

    def heartbeat(self, now: float | None = None) -> dict:
        """The query is running and idle (no new input): refresh the status file, so that an idle
        app does not look stale to the supervisor (``adlake.apps``), and stamp
        ``last_heartbeat_at``. Spark reports idleness about every 10 s
        (``spark.sql.streaming.noDataProgressEventInterval``) in micro-batch mode; a Real-Time
        Mode batch is never idle (it reports at each checkpoint interval instead)."""
        now = time.time() if now is None else now
        with self._lock:
            last = read_status(self.settings, self.app) or {"mode": self.mode, **self.extra}
            # an idle query is a running one, also before its first batch (empty input)
            last.update(state="running", error=None, last_heartbeat_at=now)
            write_status(self.settings, self.app, last, now=now)
        return last

    def alive(self, now: float | None = None) -> dict:
        """A Real-Time Mode query is alive between its boundaries (:func:`query_alive` said so):
        refresh the status file and stamp ``last_alive_at``, so that the supervisor sees a hung
        driver or a query without running tasks within ``app_stale_after_s`` whatever the
        checkpoint interval (the batch reports only at its end). The batch's figures stay those
        of its last boundary."""
        now = time.time() if now is None else now
        with self._lock:
            last = read_status(self.settings, self.app) or {"mode": self.mode, **self.extra}
            if last.get("state") not in ("running", "starting"):
                return last  # a final state is not overwritten
            # its query is active: it is running, also before its first boundary reports a batch
            last.update(state="running", last_alive_at=now)
            write_status(self.settings, self.app, last, now=now)
        return last

    def final(self, state: str, error: str | None = None) -> None:
        if state in ("stopped", "failed"):
            self.stop_probe()
        with self._lock:
            last = read_status(self.settings, self.app) or {"mode": self.mode}
            last.update(state=state, error=error)
            write_status(self.settings, self.app, last)

    # -- the end-to-end probe ------------------------------------------------------------------

    def probe_once(self, probe: latency.LatencyProbe | None = None) -> dict:
        """Measure ``e2e_latency`` now, add it to ``latency_history`` and write both, with the
        DLQ figures (:meth:`dlq_once`), into the status file (its other fields and
        ``written_at`` as they are). A probe that fails (the broker unreachable) records
        ``error`` instead of figures; the app goes on."""
        if probe is None:
            if self._probe is None:
                spec = self.registry_app()
                self._probe = (
                    latency.LatencyProbe.for_app(self.settings.kafka_bootstrap, spec, self.outputs)
                    if spec is not None
                    else latency.LatencyProbe(self.settings.kafka_bootstrap, self.outputs or ())
                )
            probe = self._probe
        try:
            figures = probe.measure()
        except Exception as exc:  # noqa: BLE001 - a probe must never stop the app
            figures = {
                "p50_ms": None,
                "p99_ms": None,
                "samples": 0,
                "window_s": None,
                "measured_at": round(time.time(), 3),
                "error": str(exc),
            }
        dlq = self.dlq_once(probe, figures["measured_at"])
        with self._lock:
            self.e2e, self.dlq = figures, dlq
            self.history = latency.add_history(self.history, figures)
            last = read_status(self.settings, self.app)
            if last is not None:
                last.update(e2e_latency=self.e2e, latency_history=self.history, **self.dlq)
                write_status(self.settings, self.app, last, now=last.get("written_at"))
        return figures

    def dlq_once(self, probe, now_s: float) -> dict:
        """``dlq_rows_last_interval``, ``dlq_interval_s`` and ``dlq_total`` from the probe's
        DLQ end offsets now (:func:`adlake.latency.dlq_growth`); none for a probe without a DLQ
        topic. An unreadable total gives nulls and keeps the last one, so the next growth
        spans both intervals (``dlq_interval_s`` says so)."""
        if getattr(probe, "dlq", None) is None:
            return {}
        try:
            total = probe.dlq_total()
        except Exception:  # noqa: BLE001 - a probe must never stop the app
            total = None
        figures = latency.dlq_growth(self._dlq_last, total, now_s)
        if total is not None:
            self._dlq_last = (now_s, total)
        return figures

    def start_probe(self) -> threading.Thread | None:
        """Run :meth:`probe_once` every ``probe_every_s`` seconds in a daemon thread, until
        :meth:`stop_probe` (a final state stops it). None when the period is 0 or less."""
        if self.probe_every_s <= 0:
            return None

        def loop() -> None:
            while not self._probe_stop.wait(self.probe_every_s):
                self.probe_once()
            if self._probe is not None:
                self._probe.close()

        thread = threading.Thread(target=loop, name=f"{self.app}-latency-probe", daemon=True)
        thread.start()
        return thread

    def stop_probe(self) -> None:
        self._probe_stop.set()


BATCH_BOUND_WHAT = (
    "upper bound per batch: batch commit time - source Kafka timestamps seen "
    "(in Real-Time Mode a batch is the whole checkpoint interval); the measured "
    "figure is e2e_latency"
)


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


# How often a Real-Time Mode app checks that its query is alive between boundaries
# (:meth:`StatusReporter.alive`): well inside the stale bound (app_stale_after_s, 120 s).
ALIVE_EVERY_S = 20.0


def query_alive(query) -> bool:
    """Whether a Real-Time Mode query is alive mid-interval: its driver answers (each question is
    a round trip to the driver's JVM, so a driver that does not answer, hung or stopped, blocks
    here and reports nothing) and the query is active with no exception. A task that hangs while
    it holds its slot is not seen here: its batch then never reaches its boundary, and the run's
    progress (rates, lag) stops moving."""
    return bool(query.isActive) and query.exception() is None


def attach_listener(spark: SparkSession, reporter: StatusReporter) -> object:
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event):
            reporter.final("starting")

        def onQueryProgress(self, event):
            import json

            reporter.update(json.loads(event.progress.json))

        def onQueryIdle(self, event):
            reporter.heartbeat()

        def onQueryTerminated(self, event):
            reporter.final("failed" if event.exception else "stopped", event.exception)

    listener = _Listener()
    spark.streams.addListener(listener)
    reporter.start_probe()
    return listener
