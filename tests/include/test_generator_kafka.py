"""The generator against a real broker: its report must equal what a consumer reads back.

Every count is recomputed here from the consumed records by this file's own implementation of
the report's definitions (nothing from ``adlake.generator`` is used to count), so a generator that
miscounts, or a producer that reorders, drops or doubles records, fails the test.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from adlake import generator, registry

pytestmark = pytest.mark.integration

INPUTS = [registry.topic(n) for n in sorted({i for a in registry.APPS.values() for i in a.inputs})]
KINDS = (
    "too_large",
    "invalid_json",
    "missing_field",
    "wrong_type",
    "invalid_value",
    "duplicate",
    "late",
    "out_of_order",
    "orphan_impression",
    "orphan_callback",
    "surge_click",
)
# What the generator's knobs make happen: every kind but too_large and invalid_value (it writes
# no record over the size limit and no invalid values; the report still counts them, as the
# DLQs and silver's quarantine would).
INJECTED = tuple(k for k in KINDS if k not in ("too_large", "invalid_value"))
MAX_RECORD_BYTES = 262_144  # the configured default
_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@dataclass(frozen=True)
class Consumed:
    topic: str
    partition: int
    offset: int
    value: bytes
    timestamp_ms: int


def watermarks(bootstrap: str, timeout_s: float = 30) -> dict[tuple[str, int], int]:
    """High watermark of every input partition. Freshly created topics may still be electing
    leaders, so a retriable error is retried until ``timeout_s``."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    electing = {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4()}"})
    deadline = time.monotonic() + timeout_s
    out = {}
    try:
        for t in INPUTS:
            for p in range(t.partitions):
                while (t.name, p) not in out:
                    try:
                        out[t.name, p] = consumer.get_watermark_offsets(
                            TopicPartition(t.name, p), timeout=10
                        )[1]
                    except KafkaException as e:
                        err = e.args[0]
                        if not (err.retriable() or err.code() in electing) or (
                            time.monotonic() > deadline
                        ):
                            raise
                        time.sleep(0.2)
        return out
    finally:
        consumer.close()


def consume(bootstrap: str, start: dict, end: dict, timeout_s: float = 30) -> list[Consumed]:
    """Every record from ``start`` to ``end`` offsets, each partition in offset order."""
    from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    wanted = {tp: end[tp] for tp in end if end[tp] > start[tp]}
    consumer.assign([TopicPartition(t, p, start[t, p]) for t, p in wanted])
    out: list[Consumed] = []
    position = {tp: start[tp] for tp in wanted}
    deadline = time.monotonic() + timeout_s
    try:
        while any(position[tp] < wanted[tp] for tp in wanted):
            assert time.monotonic() < deadline, f"timed out at {position}, wanted {wanted}"
            for msg in consumer.consume(num_messages=1000, timeout=1.0):
                assert msg.error() is None, msg.error()
                tp = (msg.topic(), msg.partition())
                assert msg.offset() == position[tp], "gap or reorder within a partition"
                position[tp] += 1
                ts_type, ts = msg.timestamp()
                assert ts_type == TIMESTAMP_CREATE_TIME
                out.append(Consumed(msg.topic(), msg.partition(), msg.offset(), msg.value(), ts))
    finally:
        consumer.close()
    return out


def epoch_ms(text: str) -> int:
    return round(
        datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() * 1000
    )


def fits(ftype: str, v) -> bool:
    if ftype == "string":
        return isinstance(v, str)
    if ftype == "timestamp":
        return isinstance(v, str) and bool(_TS.fullmatch(v))
    if ftype in ("int", "long"):
        return isinstance(v, int) and not isinstance(v, bool)
    if ftype == "boolean":
        return isinstance(v, bool)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def problem(topic: registry.Topic, value: bytes) -> tuple[str | None, dict | None]:
    if len(value) > MAX_RECORD_BYTES:
        return "too_large", None
    try:
        obj = json.loads(value)
    except ValueError:
        return "invalid_json", None
    if not isinstance(obj, dict):
        return "invalid_json", None
    if any(obj.get(f.name) is None for f in topic.schema.fields if f.required):
        return "missing_field", obj
    if any(
        obj.get(f.name) is not None and not fits(f.type, obj[f.name]) for f in topic.schema.fields
    ):
        return "wrong_type", obj
    return None, obj


def recount(records: list[Consumed], lateness_s: float, surge_pages: list[str]) -> dict:
    """Per-topic counts by the report's definitions, from records grouped per partition."""
    counts = {t.name: Counter() for t in INPUTS}
    ok: list[tuple[Consumed, dict]] = []
    for r in records:
        kind, obj = problem(registry.topic(r.topic), r.value)
        if kind:
            counts[r.topic][kind] += 1
        else:
            ok.append((r, obj))
    partitions: dict[tuple[str, int], list[tuple[Consumed, dict]]] = {}
    for r, obj in ok:
        partitions.setdefault((r.topic, r.partition), []).append((r, obj))
    for (name, _), recs in partitions.items():
        recs.sort(key=lambda ro: ro[0].offset)
        newest = None
        for r, obj in recs:
            event = epoch_ms(obj["event_time"])
            counts[name]["late"] += r.timestamp_ms - event > lateness_s * 1000
            counts[name]["out_of_order"] += newest is not None and event < newest
            newest = event if newest is None else max(newest, event)
    for t in INPUTS:
        ids = [tuple(o[f] for f in t.id_fields) for r, o in ok if r.topic == t.name]
        counts[t.name]["duplicate"] += len(ids) - len(set(ids))
    sent_ids = {(r.topic, o[registry.topic(r.topic).id_fields[0]]) for r, o in ok}
    for r, o in ok:
        if r.topic == "ad_impressions":
            counts[r.topic]["orphan_impression"] += ("ad_requests", o["request_id"]) not in sent_ids
        if r.topic == "ad_callbacks":
            counts[r.topic]["orphan_callback"] += (
                "ad_impressions",
                o["impression_id"],
            ) not in sent_ids
        if r.topic == "page_clicks":
            counts[r.topic]["surge_click"] += o["page_id"] in surge_pages
    return {name: {k: int(c[k]) for k in KINDS} for name, c in counts.items()}


def test_report_equals_what_a_consumer_reads_back(kafka, tmp_path):
    config = generator.GeneratorConfig(
        rate=4000.0,
        count=4000,
        seed=20261121,
        out_of_order=0.05,
        duplicates=0.05,
        late=0.05,
        lateness_s=5.0,
        malformed=0.05,
        orphans=0.05,
        surge_pages=2,
        surge_rate=100.0,
    )
    # Only this run's records count, whatever earlier tests left in the topics.
    before = watermarks(kafka.bootstrap)
    report_path = tmp_path / "report.json"
    report = generator.run(config, kafka.bootstrap, report_path, progress=False)
    after = watermarks(kafka.bootstrap)
    records = consume(kafka.bootstrap, before, after)

    assert json.loads(report_path.read_text()) == report
    assert {r.topic for r in records} <= {t.name for t in INPUTS}
    assert report["partitions"] == {t.name: t.partitions for t in INPUTS}
    assert report["sent"] == {t.name: after_minus(before, after, t) for t in INPUTS}
    assert report["sent"] == dict(Counter(r.topic for r in records))
    assert report["sent_per_partition"] == {
        t.name: [after[t.name, p] - before[t.name, p] for p in range(t.partitions)] for t in INPUTS
    }

    expected = recount(records, config.lateness_s, report["surge_pages"])
    assert report["anomalies_by_topic"] == expected
    assert report["anomalies"] == {k: sum(c[k] for c in expected.values()) for k in KINDS}
    # Every injected kind really happened, so the equalities above were tested on non-zero
    # counts.
    assert all(report["anomalies"][k] > 0 for k in INJECTED), report["anomalies"]
    assert len(report["surge_pages"]) == 2


def after_minus(before: dict, after: dict, topic: registry.Topic) -> int:
    return sum(after[topic.name, p] - before[topic.name, p] for p in range(topic.partitions))
