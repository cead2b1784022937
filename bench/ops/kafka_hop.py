"""The bare Kafka hop: the latency floor under the operational apps' end-to-end figures.

Produces small records at a fixed rate to a scratch topic on a broker and consumes them on the
same machine, with the generator's producer settings (idempotent, ``linger.ms`` 5) and a consumer
that waits at most 10 ms per fetch. For every record:

    latency = consumer receive wall time - the record's Kafka timestamp

where the Kafka timestamp is ``CreateTime``, set by the producer to the wall clock at the
``produce()`` call (as the generator stamps the apps' inputs), and the receive time is the wall
clock when the consumer's ``poll()`` returns the record. One clock (same host), so no skew. The
figure covers the producer's batching, the broker's append and the consumer's fetch: what every
input record of an app pays before Spark sees it. An app's latency (output ``CreateTime`` minus
input ``CreateTime``) also includes Spark's work and its own sink's stamping, but not the final
consumer's fetch, so ``app p99 / hop p99`` is Spark's cost in units of one hop.

    .venv/ops/bin/python -m bench.ops.kafka_hop --rate 1000 --duration 30
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from bench.harness import TopicReader, latency_stats, load_average, quantiles, say

TOPIC = "bench_kafka_hop"
WHAT = "consumer receive wall time - producer CreateTime (bench/ops/kafka_hop.py)"
PARTITIONS = 4  # as page_clicks, the topic click-surge reads
PRODUCER = {"enable.idempotence": True, "linger.ms": 5, "client.id": "adlake-kafka-hop"}


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    for future in futures.values():
        try:
            future.result(30)
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    # wait for leaders: a consumer assigned before them would start at a wrong end offset
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        if (
            meta
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.2)
    raise RuntimeError(f"topic {topic} has no leaders after 30 s")


class _Receiver(TopicReader):
    """(receive wall ms, CreateTime ms) of every record."""

    def sample(self, msg) -> tuple[float, float]:
        return time.time() * 1000, float(msg.timestamp()[1])


def measure(
    bootstrap: str,
    rate: float,
    duration_s: float,
    warmup_s: float = 5.0,
    topic: str = TOPIC,
    progress_every_s: float = 30.0,
) -> dict:
    """Produce ``rate`` records/s for ``warmup_s + duration_s`` seconds and consume them; return
    ``{"rate", "duration_s", "sent", "samples": [(created_ms, latency_ms)], "measured_from_ms"}``
    with samples of records created after the warm-up (the first connections and fetches are
    not the steady state the apps are measured in)."""
    from confluent_kafka import Producer

    topic = f"{topic}_{int(time.time())}"  # a new topic: read from its start
    _create_topic(bootstrap, topic, PARTITIONS)
    receiver = _Receiver(bootstrap, topic, PARTITIONS, from_start=True)
    receiver.start()
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    payload = b'{"page_id":"p-0001","user_id":"u-1"}'
    started = time.time() * 1000
    total = warmup_s + duration_s
    sent, shown = 0, started
    while True:
        now = time.time() * 1000
        elapsed_s = (now - started) / 1000
        if elapsed_s >= total:
            break
        due = int(elapsed_s * rate) + 1
        while sent < due:
            producer.produce(
                topic, value=payload, partition=sent % PARTITIONS, timestamp=int(time.time() * 1000)
            )
            sent += 1
        producer.poll(0)
        if now - shown >= progress_every_s * 1000:
            shown = now
            say(
                f"{sent} sent, {len(receiver.samples)} received in {elapsed_s:.0f}/{total:.0f} s",
                tag="kafka_hop",
            )
        time.sleep(max(0.0, (sent / rate) - (time.time() * 1000 - started) / 1000))
    producer.flush(30)
    deadline = time.monotonic() + 10
    while len(receiver.samples) < sent and time.monotonic() < deadline:
        time.sleep(0.1)
    receiver.stopping.set()
    receiver.join(10)
    measure_from = started + warmup_s * 1000
    samples = [
        (created, got - created) for got, created in receiver.samples if created >= measure_from
    ]
    return {
        "rate": rate,
        "duration_s": duration_s,
        "sent": sent,
        "received": len(receiver.samples),
        "measured_from_ms": measure_from,
        "samples": samples,
    }


def figures(bootstrap: str, rate: float, duration_s: float, quick: bool = False) -> dict:
    """The hop as the report shows it: :func:`measure` (a 5 s warm-up; ``quick``: 1 s), then
    ``sent``, ``whole`` (:func:`~bench.harness.latency_stats`), ``quantiles_ms``,
    ``load_average`` [start, end] and ``what`` is measured."""
    load_start = load_average()
    measured = measure(bootstrap, rate, duration_s, warmup_s=1.0 if quick else 5.0)
    latencies = [lat for _, lat in measured["samples"]]
    return {
        "rate": rate,
        "duration_s": duration_s,
        "sent": measured["sent"],
        "whole": latency_stats(latencies),
        "quantiles_ms": quantiles(latencies),
        "load_average": [load_start, load_average()],
        "what": WHAT,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.ops.kafka_hop", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="records per second")
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before measuring")
    parser.add_argument("--bootstrap", default=None, help="broker (unset: the configured one)")
    args = parser.parse_args(argv)
    bootstrap = args.bootstrap or load_settings().kafka_bootstrap
    load_start = load_average()
    result = measure(bootstrap, args.rate, args.duration, args.warmup)
    latencies = [lat for _, lat in result.pop("samples")]
    result.update(whole=latency_stats(latencies), load_average=[load_start, load_average()])
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
