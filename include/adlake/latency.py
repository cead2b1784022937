"""What a streaming app's latency really is, and what waits in its state.

The status listener's ``latency_*_ms`` figures are an upper bound per batch (commit time minus
the source timestamps seen): in Real-Time Mode a batch is the whole checkpoint interval, so that
bound says 30 s where the records took 35 ms. This module measures the real figure, light enough
to run every few seconds:

* :class:`LatencyProbe` reads the **last N records of each partition** of an app's output topics
  (by offsets from the end: no consumer group join, no commit) and computes, per record,
  ``end-to-end latency = output record's Kafka timestamp - source_kafka_ts`` (the Kafka timestamp
  of the newest input that produced it, carried in the record's value). The output timestamp is
  the topic's: ``CreateTime`` on the registry's topics (the Spark Kafka sink's producer stamps
  each record when it sends it), ``LogAppendTime`` if a topic is configured so; the probe
  reports which one it saw. Records older than ``max_age_s`` are left out, so an app that writes
  nothing shows no figure instead of an old one, and the records its registry entry declares
  timer-driven (``App.timer_driven``: attribution's closes and orphans) are measured apart
  (``timer_p50_ms``/``timer_p99_ms``): they are late by design (the window plus the lateness,
  plus in Real-Time Mode the wait for a boundary) and measure the configuration, not the
  pipeline. :meth:`LatencyProbe.for_app` builds the probe of a registry app from its entry.
* :func:`add_history` keeps a bounded history of the figures (the last hour).
* :meth:`LatencyProbe.dlq_total` sums the end offsets of the app's DLQ topic, and
  :func:`dlq_growth` turns two such sums into ``dlq_rows_last_interval`` (rows sent to the DLQ
  between two probes), ``dlq_interval_s`` and ``dlq_total``.
* :func:`waiting_in_state` says what waits in state and when it will close, from what the
  listener knows (state rows, watermark, the app's knobs) and the app's ``App.state``
  declaration, without a state scan.

The app's status listener (``spark_apps/common/streaming/listener.py``) runs the probe every
``probe_every_s`` seconds in a thread of the driver and writes ``e2e_latency``,
``latency_history`` and the DLQ figures into the status file, so the file stays the one source and its readers
(``make status``, the Airflow page) only read JSON. For a one-off figure from a shell (either
environment; standard library and ``confluent_kafka`` only, no Spark)::

    python -m adlake.latency click_surge
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter

# Records read per partition per probe, and how old an output record may be to count.
PER_PARTITION = 50
MAX_AGE_S = 60.0
# The listener's probe period and the history it keeps.
PROBE_EVERY_S = 15.0
HISTORY_S = 3600.0
HISTORY_MAX_POINTS = int(HISTORY_S / PROBE_EVERY_S) + 1

_TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank percentile ``q`` (0..1) of ``values``; None when there are none.

    >>> percentile([40, 10, 30, 20], 0.5), percentile([40, 10, 30, 20], 0.99)
    (20, 40)
    >>> percentile([], 0.5) is None
    True
    """
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def ts_ms(text: str) -> float:
    """An ISO-8601 timestamp (as the apps write them) in epoch milliseconds.

    >>> ts_ms("2026-11-22T10:00:00.250Z")
    1795341600250.0
    """
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def iso(epoch_s: float) -> str:
    """Epoch seconds as the apps' ISO-8601 UTC text.

    >>> iso(1795341600.25)
    '2026-11-22T10:00:00.250Z'
    """
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def summarize(
    samples: Iterable[tuple[float, float]],
    now_s: float,
    *,
    max_age_s: float = MAX_AGE_S,
    timer_driven: int = 0,
    timestamp_type: str | None = None,
    timer_samples: Iterable[tuple[float, float]] = (),
) -> dict:
    """``e2e_latency`` from ``(output Kafka timestamp ms, source_kafka_ts ms)`` pairs of the
    input-driven records; ``timer_samples``, the same of the timer-driven ones, give their own
    ``timer_p50_ms``/``timer_p99_ms``/``timer_samples`` (a close comes the window plus the
    lateness after its key's newest input, plus, in Real-Time Mode, the wait for a boundary).

    Only outputs written within ``max_age_s`` of ``now_s`` count; ``window_s`` is how far back
    the counted ones reach (now minus the oldest one's output timestamp).

    >>> now = 1_000_000.0
    >>> figures = summarize([(now * 1000 - 2000, now * 1000 - 2035),
    ...                      (now * 1000 - 1000, now * 1000 - 1100),
    ...                      (now * 1000 - 500_000, now * 1000 - 500_010)], now)
    >>> {k: figures[k] for k in ("p50_ms", "p99_ms", "samples", "window_s", "stale")}
    {'p50_ms': 35.0, 'p99_ms': 100.0, 'samples': 2, 'window_s': 2.0, 'stale': 1}
    """
    fresh, stale = [], 0
    for out_ms, src_ms in samples:
        if out_ms < (now_s - max_age_s) * 1000:
            stale += 1
        else:
            fresh.append((out_ms, out_ms - src_ms))
    latencies = [lat for _, lat in fresh]
    closes = [out - src for out, src in timer_samples if out >= (now_s - max_age_s) * 1000]
    figures = {
        "p50_ms": _round(percentile(latencies, 0.50)),
        "p99_ms": _round(percentile(latencies, 0.99)),
        "samples": len(fresh),
        "window_s": round(now_s - min(out for out, _ in fresh) / 1000, 1) if fresh else None,
        "measured_at": round(now_s, 3),
        "max_age_s": max_age_s,
        "stale": stale,
        "timer_driven": timer_driven,
        "timer_p50_ms": _round(percentile(closes, 0.50)),
        "timer_p99_ms": _round(percentile(closes, 0.99)),
        "timer_samples": len(closes),
        "timestamp_type": timestamp_type,
    }
    if not fresh:
        figures["why"] = f"no output record written in the last {max_age_s:g} s" + (
            f" ({stale} older ones read)" if stale else ""
        )
    return figures


class LatencyProbe:
    """Measures ``e2e_latency`` over the newest records of some output topics.

    Keeps one Kafka consumer, assigned partitions by hand (never joins its group, never commits
    an offset); each :meth:`measure` reads at most ``per_partition`` records per partition, from
    ``end - per_partition`` to the end as it was when the measure began. Records whose
    ``record_type`` is one of ``timer_driven`` are counted apart.

    >>> probe = LatencyProbe("127.0.0.1:9092", ["page_surges"])    # doctest: +SKIP
    >>> probe.measure()["p50_ms"]                                  # doctest: +SKIP
    35.0
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Iterable[str],
        *,
        per_partition: int = PER_PARTITION,
        max_age_s: float = MAX_AGE_S,
        timeout_s: float = 5.0,
        dlq: str | None = None,
        timer_driven: Iterable[str] = (),
    ) -> None:
        self.bootstrap, self.topics, self.dlq = bootstrap, list(topics), dlq
        self.per_partition, self.max_age_s, self.timeout_s = per_partition, max_age_s, timeout_s
        self.timer_driven = frozenset(timer_driven)
        self._consumer = None

    @classmethod
    def for_app(
        cls, bootstrap: str, app: registry.App, topics: Iterable[str] | None = None, **options
    ) -> LatencyProbe:
        """The probe of a registry app: its output topics (or ``topics``), its DLQ, its
        timer-driven record types.

        >>> probe = LatencyProbe.for_app("127.0.0.1:9092", registry.app("attribution"))
        >>> probe.topics, probe.dlq, sorted(probe.timer_driven)[0]
        (['attributed_events'], 'ad_events_dlq', 'orphan_callback')
        """
        return cls(
            bootstrap,
            app.outputs if topics is None else topics,
            dlq=app.dlq,
            timer_driven=app.timer_driven,
            **options,
        )

    def _client(self):
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": "adlake-latency-probe",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "fetch.wait.max.ms": 50,
                    "socket.timeout.ms": int(self.timeout_s * 1000),
                }
            )
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def dlq_total(self) -> int | None:
        """The sum over partitions of the DLQ topic's end offsets (every row ever sent to it);
        None with no DLQ topic, or when the topic or an offset cannot be read in ``timeout_s``."""
        if not self.dlq:
            return None
        from confluent_kafka import TopicPartition

        consumer = self._client()
        meta = consumer.list_topics(self.dlq, timeout=self.timeout_s).topics.get(self.dlq)
        if meta is None or meta.error is not None or not meta.partitions:
            return None
        total = 0
        for partition in meta.partitions:
            offsets = consumer.get_watermark_offsets(
                TopicPartition(self.dlq, partition), timeout=self.timeout_s
            )
            if offsets is None:  # timed out
                return None
            total += offsets[1]
        return total

    def read(self) -> tuple[list[tuple[float, float]], int, str | None]:
        """The newest records' ``(output ts ms, source ts ms)``, the number of timer-driven
        records left out, and the timestamp type seen."""
        from confluent_kafka import TopicPartition

        consumer = self._client()
        wanted: dict[tuple[str, int], int] = {}  # partition -> the offset to read up to
        assignment = []
        for topic in self.topics:
            meta = consumer.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
            for partition in meta.partitions if meta is not None and meta.error is None else {}:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self.timeout_s
                )
                if high > low:
                    start = max(low, high - self.per_partition)
                    wanted[(topic, partition)] = high
                    assignment.append(TopicPartition(topic, partition, start))
        samples: list[tuple[float, float]] = []
        timers: list[tuple[float, float]] = []
        ts_type = None
        if not assignment:
            return samples, timers, ts_type
        ends = dict(wanted)
        consumer.assign(assignment)
        deadline = time.monotonic() + self.timeout_s
        try:
            while wanted and time.monotonic() < deadline:
                for msg in consumer.consume(num_messages=500, timeout=0.2):
                    if msg.error():
                        continue
                    place = (msg.topic(), msg.partition())
                    if msg.offset() >= ends[place]:
                        continue  # written after the measure began: beyond the bound
                    if place in wanted and msg.offset() >= wanted[place] - 1:
                        del wanted[place]
                    kind, out_ms = msg.timestamp()
                    timer, sample = _sample(msg.value(), out_ms, self.timer_driven)
                    if sample is not None:
                        (timers if timer else samples).append(sample)
                        ts_type = _TIMESTAMP_TYPES.get(kind, ts_type)
        finally:
            consumer.unassign()
        return samples, timers, ts_type

    def measure(self, now_s: float | None = None) -> dict:
        """``e2e_latency``: p50/p99 (ms), samples, window_s, measured_at (epoch s), and
        ``topics``, ``timestamp_type``, the counts left out (``stale``, ``timer_driven``) and,
        with no sample, ``why``."""
        samples, timers, ts_type = self.read()
        now_s = time.time() if now_s is None else now_s
        figures = summarize(
            samples,
            now_s,
            max_age_s=self.max_age_s,
            timer_driven=len(timers),
            timestamp_type=ts_type,
            timer_samples=timers,
        )
        figures["topics"] = self.topics
        return figures


def _sample(
    value: bytes | None, out_ms: float, timer_driven: frozenset[str]
) -> tuple[bool, tuple[float, float] | None]:
    """(whether the record is timer-driven, its (output ms, source ms) or None if unreadable)."""
    try:
        record = json.loads(value) if value else None
    except ValueError:
        return False, None
    if not isinstance(record, dict) or not record.get("source_kafka_ts"):
        return False, None
    timer = record.get("record_type") in timer_driven
    try:
        return timer, (float(out_ms), ts_ms(record["source_kafka_ts"]))
    except (TypeError, ValueError):
        return timer, None


def add_history(
    history: Iterable,
    figures: Mapping,
    *,
    span_s: float = HISTORY_S,
    max_points: int = HISTORY_MAX_POINTS,
) -> list[list]:
    """``history`` (``[epoch_s, p50_ms, p99_ms]`` points, oldest first) with ``figures``'
    point added, keeping only points within ``span_s`` of it and at most ``max_points``. A
    measure with no sample is a point with null percentiles (a gap in a chart).

    >>> h = add_history([[0, 5.0, 9.0], [3000, 6.0, 8.0]],
    ...                 {"measured_at": 3700, "p50_ms": 7.0, "p99_ms": 9.5})
    >>> h
    [[3000, 6.0, 8.0], [3700, 7.0, 9.5]]
    >>> add_history(h, {"measured_at": 3715, "p50_ms": None, "p99_ms": None}, max_points=2)
    [[3700, 7.0, 9.5], [3715, None, None]]
    """
    now = figures["measured_at"]
    points = [list(p) for p in history if len(p) == 3 and now - span_s < p[0] < now]
    points.append([now, figures.get("p50_ms"), figures.get("p99_ms")])
    return points[-max_points:]


def input_lag(progress: Mapping) -> dict | None:
    """The app's Kafka input lag from one query progress: each Kafka source's
    ``maxOffsetsBehindLatest`` and ``avgOffsetsBehindLatest`` (offsets between what the batch
    read and the newest offset Spark saw for the partition), and across sources the largest max
    and the mean of the averages. None when no source reports them (not a Kafka source, or a
    batch that fetched no latest offsets).

    What it means: records already in Kafka that the app has not read yet. A lag that stays
    near zero while input flows means the app keeps up; one that grows batch after batch means
    it falls behind, whatever its latency says about the records it did read.

    >>> input_lag({"sources": [
    ...     {"description": "KafkaV2[Subscribe[a]]",
    ...      "metrics": {"maxOffsetsBehindLatest": "12", "avgOffsetsBehindLatest": "3.5"}},
    ...     {"description": "KafkaV2[Subscribe[b]]",
    ...      "metrics": {"maxOffsetsBehindLatest": "0", "avgOffsetsBehindLatest": "0.5"}}]})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'max_offsets': 12, 'avg_offsets': 2.0, 'sources': [{'source': 'KafkaV2[Subscribe[a]]',
    'max_offsets': 12, 'avg_offsets': 3.5}, {'source': 'KafkaV2[Subscribe[b]]', 'max_offsets': 0,
    'avg_offsets': 0.5}]}
    >>> input_lag({"sources": [{"description": "rate", "metrics": {}}]}) is None
    True
    """
    sources = []
    for source in progress.get("sources") or []:
        metrics = source.get("metrics") or {}
        try:
            most = int(float(metrics["maxOffsetsBehindLatest"]))
            mean = float(metrics["avgOffsetsBehindLatest"])
        except (KeyError, TypeError, ValueError):
            continue
        sources.append(
            {"source": source.get("description"), "max_offsets": most, "avg_offsets": mean}
        )
    if not sources:
        return None
    return {
        "max_offsets": max(s["max_offsets"] for s in sources),
        "avg_offsets": round(sum(s["avg_offsets"] for s in sources) / len(sources), 1),
        "sources": sources,
    }


# The progress history's spacing: at most one point per this many seconds (a micro-batch app
# may report several batches a second), an hour of them.
PROGRESS_EVERY_S = 10.0


def add_progress(history: Iterable, point: list, *, span_s: float = HISTORY_S) -> list[list]:
    """``history`` (``[epoch_s, input_rows_per_s, processed_rows_per_s, max_offsets_behind]``
    points, oldest first) with ``point`` added when it is at least :data:`PROGRESS_EVERY_S`
    after the newest one, keeping the points within ``span_s`` of it (an hour: at most 361).

    >>> h = add_progress([[0, 1.0, 1.0, 0], [3000, 2.0, 2.0, 5]], [3605, 3.0, 2.5, 9])
    >>> h
    [[3000, 2.0, 2.0, 5], [3605, 3.0, 2.5, 9]]
    >>> add_progress(h, [3610, 4.0, 4.0, 0]) == h  # 5 s after the newest: not kept
    True
    """
    points = [list(p) for p in history if len(p) == 4 and point[0] - span_s < p[0] <= point[0]]
    if points and point[0] - points[-1][0] < PROGRESS_EVERY_S:
        return points
    return [*points, list(point)]


def dlq_growth(previous: tuple[float, int] | None, total: int | None, now_s: float) -> dict:
    """The DLQ figures of a probe: ``dlq_total`` (the DLQ topic's end offsets now),
    ``dlq_rows_last_interval`` (its growth since ``previous``, the last probe's
    ``(epoch_s, total)``) and ``dlq_interval_s`` (the seconds between the two probes).
    The growth is None on the first probe (``previous`` None: also after a restart), when
    ``total`` could not be read, and when the offsets went down (the topic was recreated): it is
    never negative.

    >>> dlq_growth((1000.0, 40), 52, 1015.0)
    {'dlq_rows_last_interval': 12, 'dlq_interval_s': 15.0, 'dlq_total': 52}
    >>> dlq_growth(None, 52, 1015.0)["dlq_rows_last_interval"] is None
    True
    >>> dlq_growth((1000.0, 40), 3, 1015.0)
    {'dlq_rows_last_interval': None, 'dlq_interval_s': None, 'dlq_total': 3}
    """
    if total is None or previous is None or total < previous[1]:
        return {"dlq_rows_last_interval": None, "dlq_interval_s": None, "dlq_total": total}
    return {
        "dlq_rows_last_interval": total - previous[1],
        "dlq_interval_s": round(now_s - previous[0], 1),
        "dlq_total": total,
    }


def waiting_in_state(
    app: str | registry.App, state_rows: int | None, watermark: str | None, knobs: Mapping
) -> dict:
    """What waits in ``app``'s state and when it closes: ``rows``, ``oldest_event_time``,
    ``closes_at`` (the watermark that, once reached, has closed everything in state now) and
    ``why``, from the app's ``App.state`` declaration and its ``knobs`` (defaults for the missing
    ones). The watermark advances only as input arrives: with no traffic, nothing closes. The
    exact oldest event time would need a state scan, so ``oldest_event_time`` is None and
    ``why`` gives the bound the watermark implies.

    >>> w = waiting_in_state("click_surge", 12, "2026-11-22T10:00:00.000Z", {})
    >>> w["closes_at"], w["oldest_event_time"]
    ('2026-11-22T10:00:10.000Z', None)
    >>> waiting_in_state("attribution", 0, "2026-11-22T10:00:00.000Z", {})["why"]
    'nothing waits in state'
    """
    spec = registry.APPS.get(app) if isinstance(app, str) else app
    out: dict = {
        "rows": state_rows,
        "oldest_event_time": None,
        "closes_at": None,
        "watermark": watermark,
    }
    if not state_rows:
        out["why"] = "nothing waits in state" if state_rows == 0 else "no batch reported yet"
        return out
    if not watermark or ts_ms(watermark) <= 0:
        out["why"] = (
            f"{state_rows} rows; the watermark is still at its start: it advances "
            "after a batch with input (in Real-Time Mode, at the end of the first "
            "checkpoint interval) and only moves as input arrives"
        )
        return out
    state = spec.state if spec is not None else None
    if state is None:
        out["why"] = f"{state_rows} rows; their close depends on the app's windows"
        return out
    wm_s = ts_ms(watermark) / 1000
    window = state.seconds(state.window, knobs, spec)
    delay = state.seconds(state.delay, knobs, spec)
    out["closes_at"] = iso(wm_s + window + delay)
    what = state.holds.format(window=window, delay=delay, open_after=iso(wm_s - window))
    out["why"] = (
        f"{state_rows} rows: {what} (exact oldest: a state scan); all of them have "
        f"closed when the watermark reaches about {out['closes_at']}, which needs "
        f"{state.closes_with}: with no traffic, nothing closes"
    )
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 1)


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.latency",
        formatter_class=HelpFormatter,
        description="Measure streaming apps' end-to-end latency now, from their output topics "
        "(output Kafka timestamp - source_kafka_ts of the newest records).",
    )
    parser.add_argument("apps", nargs="*", help="registry apps (default: every ops app)")
    parser.add_argument(
        "--per-partition",
        type=int,
        default=PER_PARTITION,
        help="records read from the end of each partition",
    )
    parser.add_argument(
        "--max-age-s", type=float, default=MAX_AGE_S, help="outputs older than this are left out"
    )
    args = parser.parse_args(argv)
    settings = settings or load_settings()
    apps = args.apps or [a.name for a in registry.ops_apps()]
    unknown = [app for app in apps if app not in registry.APPS]
    if unknown:
        parser.error(f"unknown app {unknown[0]!r}; registered apps: {', '.join(registry.APPS)}")
    for app in apps:
        probe = LatencyProbe.for_app(
            settings.kafka_bootstrap,
            registry.app(app),
            per_partition=args.per_partition,
            max_age_s=args.max_age_s,
        )
        try:
            print(json.dumps({"app": app, "e2e_latency": probe.measure()}))
        finally:
            probe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
