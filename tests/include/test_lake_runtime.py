"""The lake runtime end to end: Kafka in, Delta out, MERGE, exact rows back."""

import json

import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.integration

pytest.importorskip("delta")


def test_kafka_to_delta_then_merge(spark, kafka, settings):
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    from adlake import registry

    topic = registry.topic("page_clicks")
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    # The session's topics are shared with other tests: this test's clicks carry its own ids.
    clicks = [("c1", "home", "u1"), ("c2", "home", "u2"), ("c3", "news", "u1")]
    for click_id, page, user in clicks:
        producer.produce(
            topic.name,
            key=page,
            value=json.dumps(
                {
                    "click_id": click_id,
                    "page_id": page,
                    "user_id": user,
                    "event_time": "2026-11-21T10:00:00.000Z",
                }
            ),
        )
    producer.flush(10)

    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic.name)
        .option("startingOffsets", "earliest")
        .load()
    )
    parsed = (
        raw.select(F.from_json(F.col("value").cast("string"), topic.schema.spark()).alias("v"))
        .select("v.*")
        .where(F.col("click_id").isin([c for c, _, _ in clicks]))
    )
    path = str(settings.table_path("runtime_check_clicks"))
    parsed.write.format("delta").mode("overwrite").save(path)

    # Upsert: c3 moves to another page, c4 is new.
    updates = spark.createDataFrame(
        [("c3", "sport", "u1"), ("c4", "home", "u3")],
        "click_id string, page_id string, user_id string",
    )
    metrics = (
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(updates.alias("s"), "t.click_id = s.click_id")
            .whenMatchedUpdate(set={"page_id": "s.page_id"})
            .whenNotMatchedInsert(
                values={"click_id": "s.click_id", "page_id": "s.page_id", "user_id": "s.user_id"}
            )
            .execute()
        )
        .collect()[0]
        .asDict()
    )
    assert metrics["num_updated_rows"] == 1 and metrics["num_inserted_rows"] == 1

    result = spark.read.format("delta").load(path).select("click_id", "page_id", "user_id")
    assertDataFrameEqual(
        result,
        spark.createDataFrame(
            [
                ("c1", "home", "u1"),
                ("c2", "home", "u2"),
                ("c3", "sport", "u1"),
                ("c4", "home", "u3"),
            ],
            "click_id string, page_id string, user_id string",
        ),
    )
