"""Tests of the attribution query's wiring (``build_query_frame``), with both processor engines.

The rules themselves are pinned by ``test_attribution_processor.py``; here: raw Kafka records of
the three input topics become attributed records and DLQ records in one pass, each record
validated against its own topic's schema. The records are fed as a stream (a file source read
once, ``AvailableNow``, into a memory sink): the JVM ``transformWithState`` refuses event-time
timers in a batch query. The watermark stays minutes behind the windows, so no timer fires and
only the records emitted on input (attributions, rejects) appear.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from pyspark.sql import functions as F

from adlake import registry
from spark_apps.common.attribution.contract import AttributionConfig
from spark_apps.common.parsing import REASON, parse_json_by_topic
from spark_apps.ops.attribution import APP, build_query_frame
from spark_apps.ops.attribution_jvm import ENGINES
from tests.spark_apps.ops.test_click_surge import KAFKA_SCHEMA, ts

OUTPUT, DLQ = APP.outputs[0], APP.dlq


def record(
    topic: str, value: bytes | None, offset: int, kafka_ts: str, partition: int = 0
) -> tuple:
    when = datetime.fromisoformat(ts(kafka_ts).replace("Z", "+00:00"))
    return (b"key", value, topic, partition, offset, when, 0)


def request(rid: str, event_time: str, **extra) -> bytes:
    return json.dumps(
        {
            "request_id": rid,
            "event_time": ts(event_time),
            "device_id": "d",
            "household_id": "h",
            "content_id": "c",
            "slot_id": "s",
            "geo": "FR",
            "floor_price": 1.5,
            "bid_count": 3,
            **extra,
        }
    ).encode()


def impression(iid: str, rid: str, event_time: str) -> bytes:
    return json.dumps(
        {
            "impression_id": iid,
            "request_id": rid,
            "campaign_id": "camp",
            "creative_id": "cre",
            "event_time": ts(event_time),
            "device_id": "d",
            "win_price": 2.0,
        }
    ).encode()


def frame(spark, records: list[tuple], engine: str, tmp_path) -> list:
    """Everything the query writes for ``records``, run as a stream to the end of its input."""
    spark.createDataFrame(records, KAFKA_SCHEMA).write.parquet(str(tmp_path / "raw"))
    raw = spark.readStream.schema(KAFKA_SCHEMA).parquet(str(tmp_path / "raw"))
    name = f"attribution_wiring_{engine}_{tmp_path.name}".replace("-", "_")
    query = (
        build_query_frame(raw, AttributionConfig(), engine)
        .writeStream.format("memory")
        .queryName(name)
        .outputMode("append")
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    query.awaitTermination()
    return spark.table(name).collect()


@pytest.mark.parametrize("engine", ENGINES)
def test_valid_events_are_attributed_and_rejects_go_to_the_dlq_in_one_output(
    spark, engine, tmp_path
):
    not_json = b'{"request_id": "r9"'
    negative_price = json.loads(impression("i2", "r1", "10:00:01.000"))
    negative_price["win_price"] = -1
    negative_price = json.dumps(negative_price).encode()
    out = frame(
        spark,
        [
            record("ad_requests", request("r1", "10:00:00.000"), 0, "10:00:00.010"),
            record(
                "ad_impressions",
                impression("i1", "r1", "10:00:01.000"),
                4,
                "10:00:01.020",
                partition=2,
            ),
            record("ad_requests", not_json, 1, "10:00:02.000"),
            record("ad_impressions", negative_price, 5, "10:00:02.500", partition=2),
        ],
        engine,
        tmp_path,
    )

    attributed = [json.loads(r.value) | {"_key": r.key} for r in out if r.topic == OUTPUT]
    assert [
        (
            a["_key"],
            a["record_type"],
            a["request_id"],
            a["impression_id"],
            a["campaign_id"],
            a["request_time"],
            a["impression_time"],
            a["source_kafka_ts"],
        )
        for a in attributed
    ] == [
        (
            "r1",
            "attributed_impression",
            "r1",
            "i1",
            "camp",
            ts("10:00:00.000"),
            ts("10:00:01.000"),
            ts("10:00:01.020"),
        )
    ]
    rejected = sorted((r.key, json.loads(r.value)) for r in out if r.topic == DLQ)
    assert rejected == [
        (
            "ad_impressions",
            {
                "raw_value": negative_price.decode(),
                "reason": "invalid_value:win_price",
                "source_topic": "ad_impressions",
                "source_partition": 2,
                "source_offset": 5,
                "source_kafka_ts": ts("10:00:02.500"),
            },
        ),
        (
            "ad_requests",
            {
                "raw_value": not_json.decode(),
                "reason": "invalid_json",
                "source_topic": "ad_requests",
                "source_partition": 0,
                "source_offset": 1,
                "source_kafka_ts": ts("10:00:02.000"),
            },
        ),
    ]
    assert {r.topic for r in out} == {OUTPUT, DLQ}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_reject_shares_no_state_with_its_request(spark, engine, tmp_path):
    # A callback rejected for a missing field names request r1; r1's attribution is unaffected
    # and the reject is not counted as r1's callback.
    bad_callback = json.dumps(
        {
            "callback_id": "c1",
            "impression_id": "i1",
            "request_id": "r1",
            "event_time": ts("10:00:02.000"),
        }
    ).encode()
    out = frame(
        spark,
        [
            record("ad_requests", request("r1", "10:00:00.000"), 0, "10:00:00.010"),
            record("ad_callbacks", bad_callback, 0, "10:00:02.010"),
            record("ad_impressions", impression("i1", "r1", "10:00:01.000"), 0, "10:00:01.020"),
        ],
        engine,
        tmp_path,
    )
    assert sorted(
        (r.topic, json.loads(r.value).get("record_type") or json.loads(r.value)["reason"])
        for r in out
    ) == [(DLQ, "missing_field:event_type"), (OUTPUT, "attributed_impression")]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_query_plans_its_kafka_source_once(spark, engine):
    # Filtering the source per topic (or splitting valid from rejected rows and joining them
    # back) would plan one scan per branch: a streaming query would read and count each record
    # several times.
    raw = spark.createDataFrame([], KAFKA_SCHEMA)
    leaves = (
        build_query_frame(raw, AttributionConfig(), engine)
        ._jdf.queryExecution()
        .analyzed()
        .collectLeaves()
    )
    kinds = [leaves.apply(i).getClass().getSimpleName() for i in range(leaves.size())]
    # transformWithState's (empty) initial state is a second leaf
    assert kinds.count("LogicalRDD") == 1 and set(kinds) <= {"LocalRelation", "LogicalRDD"}


def test_each_record_is_validated_against_its_own_topics_schema(spark):
    raw = spark.createDataFrame(
        [
            # a request carrying a field of the impressions' schema: the field is not the request's
            record(
                "ad_requests", request("r1", "10:00:00.000", campaign_id="camp"), 0, "10:00:00.000"
            ),
            # an impression is not a valid request, and a request is not a valid impression
            record("ad_requests", impression("i1", "r1", "10:00:00.000"), 1, "10:00:00.000"),
            record("ad_impressions", request("r2", "10:00:00.000"), 0, "10:00:00.000"),
            record("page_clicks", b"{}", 0, "10:00:00.000"),
        ],
        KAFKA_SCHEMA,
    )
    topics = [registry.topic(name) for name in APP.inputs]
    rows = (
        parse_json_by_topic(raw, topics)
        .orderBy("topic", "offset")
        .select("topic", "offset", REASON, "request_id", F.col("campaign_id"))
        .collect()
    )
    assert [tuple(r) for r in rows] == [
        ("ad_impressions", 0, "missing_field:impression_id", "r2", None),
        ("ad_requests", 0, None, "r1", None),
        ("ad_requests", 1, "missing_field:household_id", "r1", None),
        ("page_clicks", 0, "unknown_topic", None, None),
    ]


def test_an_unknown_engine_is_rejected(spark):
    with pytest.raises(ValueError, match="engine 'scala' is not valid"):
        build_query_frame(spark.createDataFrame([], KAFKA_SCHEMA), AttributionConfig(), "scala")
