"""The ops runtime (Spark 4.3) reads and writes Kafka, in Real-Time Mode too."""

import json
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from adlake import registry

pytestmark = pytest.mark.integration


def produce(bootstrap, topic, records):
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    producer.flush(10)


def read_all(bootstrap, topic, expected, timeout_s=90):
    """Read ``topic`` from the start until ``expected`` records arrived (bounded in time)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"t-{time.monotonic_ns()}",
            "enable.auto.commit": False,
        }
    )
    partitions = registry.topic(topic).partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            out.append((msg.key().decode(), msg.value().decode()))
    consumer.close()
    return out


def test_batch_read_and_write_kafka(spark, kafka):
    source, sink = registry.topic("ad_requests").name, registry.topic("ad_impressions").name
    produce(
        kafka.bootstrap, source, [(f"r{i}", json.dumps({"request_id": f"r{i}"})) for i in range(5)]
    )
    df = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", source)
        .load()
    )
    (
        df.selectExpr("key", "value")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("topic", sink)
        .save()
    )
    got = read_all(kafka.bootstrap, sink, 5)
    assert sorted(got) == sorted((f"r{i}", json.dumps({"request_id": f"r{i}"})) for i in range(5))


def test_stateless_query_in_real_time_mode_delivers_its_records(spark, kafka, tmp_path):
    source, sink = registry.topic("page_clicks").name, registry.topic("page_surges").name
    sent = [(f"p{i % 3}", json.dumps({"click_id": f"c{i}"})) for i in range(30)]
    produce(kafka.bootstrap, source, sent)

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.selectExpr("key", "upper(cast(value as string)) as value")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .outputMode("update")
        .trigger(realTime="10 seconds")
        .start()
    )
    try:
        got = read_all(kafka.bootstrap, sink, len(sent))
        assert query.exception() is None
        assert query.lastProgress is None or query.lastProgress["batchId"] >= 0
    finally:
        query.stop()
    assert sorted(got) == sorted((k, v.upper()) for k, v in sent)
