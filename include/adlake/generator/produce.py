"""Sending a run to Kafka: :func:`emit` paces the planned records against a clock, :func:`run`
wires it to a confluent-kafka producer and writes the report."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from adlake.config import KAFKA_MAX_MESSAGE_BYTES
from adlake.generator.plan import INPUT_TOPICS, GeneratorConfig, OutRecord, iso_ms
from adlake.generator.tally import Tally
from adlake.generator.traffic import Traffic


def emit(
    traffic: Traffic,
    deliver: Callable[[OutRecord, int], None],
    *,
    now_ms: Callable[[], int],
    wait: Callable[[float], None],
    progress: Callable[[int, int], None] | None = None,
    progress_every_ms: int = 5000,
) -> Tally:
    """Send ``traffic`` in real time: each record when ``now_ms()`` reaches ``start_ms + due_ms``,
    with that instant as its Kafka timestamp; returns the :class:`Tally` of what was delivered.

    ``wait(seconds)`` blocks (the Kafka sender polls the producer there, so no core is burnt);
    ``progress(sent, elapsed_ms)`` is called about every ``progress_every_ms``.
    """
    tally = Tally(traffic.config.lateness_s, traffic.surge_pages)
    next_progress = traffic.start_ms + progress_every_ms
    for rec in traffic.records():
        target = traffic.start_ms + rec.due_ms
        while (ahead := target - now_ms()) > 0:
            wait(ahead / 1000)
        ts = now_ms()
        deliver(rec, ts)
        tally.add(rec.topic, rec.partition, rec.value, ts)
        if progress is not None and ts >= next_progress:
            progress(sum(tally.sent.values()), ts - traffic.start_ms)
            next_progress = ts + progress_every_ms
    return tally


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def report(
    traffic: Traffic,
    tally: Tally,
    *,
    bootstrap: str,
    started_ms: int,
    finished_ms: int,
    interrupted: bool = False,
) -> dict:
    """The run report (JSON-ready). ``sent`` and ``anomalies`` are from :class:`Tally`."""
    cfg = traffic.config
    return {
        "seed": cfg.seed,
        "rate": cfg.rate,
        "duration_s": cfg.duration_s,
        "count": cfg.count,
        "elapsed_s": round((finished_ms - started_ms) / 1000, 3),
        "started_at": iso_ms(started_ms),
        "finished_at": iso_ms(finished_ms),
        "interrupted": interrupted,
        "bootstrap": bootstrap,
        "config": asdict(cfg),
        "lateness_s": cfg.lateness_s,
        "partitions": traffic.partitions,
        "sent": {t.name: tally.sent[t.name] for t in INPUT_TOPICS},
        "sent_per_partition": {
            t.name: [tally.sent_per_partition[t.name][p] for p in range(traffic.partitions[t.name])]
            for t in INPUT_TOPICS
        },
        "base_events": {t.name: traffic.base_events[t.name] for t in INPUT_TOPICS},
        "anomalies": tally.anomalies(),
        "anomalies_by_topic": tally.anomalies_by_topic(),
        # What the knobs did; the anomalies above are what a consumer can observe.
        "injected": dict(sorted(traffic.injected.items())),
        "surge_pages": list(traffic.surge_pages),
    }


def run(
    config: GeneratorConfig,
    bootstrap: str,
    report_path: Path | None = None,
    *,
    progress: bool = True,
    producer_config: dict | None = None,
) -> dict:
    """Produce ``config``'s traffic to Kafka at ``bootstrap`` in real time; return the report,
    also written as JSON to ``report_path`` if given.

    Every record is produced with an explicit partition and timestamp; the producer is idempotent,
    so each partition holds exactly the delivery order the report was counted from.
    """
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "client.id": "adlake-generator",
            # librdkafka's default (1,000,000) would refuse a record the broker accepts.
            "message.max.bytes": KAFKA_MAX_MESSAGE_BYTES,
            **(producer_config or {}),
        }
    )

    def deliver(rec: OutRecord, ts: int) -> None:
        while True:
            try:
                producer.produce(
                    rec.topic,
                    value=rec.value,
                    key=rec.key.encode("utf-8"),
                    partition=rec.partition,
                    timestamp=ts,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:  # local queue full: let librdkafka send, then retry
                producer.poll(0.05)
        producer.poll(0)

    last = [0, 0]  # sent, elapsed_ms at the previous progress line

    def show(sent: int, elapsed_ms: int) -> None:
        interval_ms = max(elapsed_ms - last[1], 1)
        recent = (sent - last[0]) * 1000 / interval_ms
        last[:] = [sent, elapsed_ms]
        print(
            f"generator: {sent} records sent in {elapsed_ms / 1000:.1f} s, "
            f"{recent:.0f}/s over the last {interval_ms / 1000:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    started = _wall_ms()
    traffic = Traffic(config, started)
    interrupted = False
    tally = Tally(config.lateness_s, traffic.surge_pages)
    try:
        tally = emit(
            traffic,
            deliver,
            now_ms=_wall_ms,
            wait=producer.poll,
            progress=show if progress else None,
        )
    except KeyboardInterrupt:
        interrupted = True
        print("generator: interrupted, flushing what was sent", file=sys.stderr)
    remaining = producer.flush(60)
    finished = _wall_ms()
    result = report(
        traffic,
        tally,
        bootstrap=bootstrap,
        started_ms=started,
        finished_ms=finished,
        interrupted=interrupted,
    )
    if interrupted:
        result["note"] = "interrupted: counts cover only the records emitted before the stop"
    if remaining or errors:
        result["delivery_errors"] = errors[:20] + (
            [f"{remaining} records not flushed"] if remaining else []
        )
    if report_path is not None:
        report_path = Path(report_path)
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(json.dumps(result, indent=2) + "\n")
    if remaining or errors:
        raise RuntimeError(
            f"{len(errors)} delivery errors, {remaining} records not flushed; the "
            f"report's counts do not match the topics: {errors[:3]}"
        )
    return result


def summary(result: dict) -> str:
    """A few lines for the terminal."""
    sent = ", ".join(f"{t}={n}" for t, n in result["sent"].items())
    anomalies = ", ".join(f"{k}={v}" for k, v in result["anomalies"].items())
    return (
        f"sent {sum(result['sent'].values())} records in {result['elapsed_s']} s: {sent}\n"
        f"anomalies: {anomalies}\n"
        f"surge pages: {', '.join(result['surge_pages']) or '-'}"
    )
