"""Kafka in and out for the streaming apps: the source, the sink and the JSON of output and DLQ
records.

The source is replayable and its offsets are committed to the checkpoint with each batch; the
sink is at-least-once (see the package docstring).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import KAFKA_MAX_MESSAGE_BYTES, Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from spark_apps.common.streaming.triggers import TriggerConfig


def read_kafka(
    spark: SparkSession,
    settings: Settings,
    topics: list[str],
    starting_offsets: str = "earliest",
    max_offsets: int | None = None,
) -> DataFrame:
    """A streaming DataFrame of raw Kafka records (key, value, topic, partition, offset,
    timestamp) of the registered ``topics``."""
    for name in topics:
        registry.topic(name)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", starting_offsets)
        # A topic deleted and recreated under a running app is an operator's decision, not
        # a reason to stop the app; Spark logs the offsets it could not read.
        .option("failOnDataLoss", "false")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return reader.load()


_JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
    # every declared field is in every record, null or not
    "ignoreNullFields": "false",
}


def json_value(topic: registry.Topic):
    """A JSON value column holding exactly the registry's fields of ``topic``, in order."""
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*[F.col(n) for n in topic.schema.names]), _JSON_OPTIONS)


def dlq_value(dlq_topic: registry.Topic):
    """The DLQ record of a rejected row (see ``parsing``): the raw value, the reason and the
    source coordinates, from the row's Kafka columns (topic, partition, offset, timestamp)."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import RAW, REASON

    fields = {
        "raw_value": F.col(RAW),
        "reason": F.col(REASON),
        "source_topic": F.col("topic"),
        "source_partition": F.col("partition"),
        "source_offset": F.col("offset"),
        "source_kafka_ts": F.col("timestamp"),
    }
    return F.to_json(F.struct(*[fields[n].alias(n) for n in dlq_topic.schema.names]), _JSON_OPTIONS)


def write_kafka(
    df: DataFrame,
    settings: Settings,
    checkpoint: Path,
    trigger: TriggerConfig,
    output_mode: str,
    query_name: str,
) -> StreamingQuery:
    """Start the query writing ``df`` (columns topic, key, value) to Kafka."""
    return (
        df.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        # A DLQ record carries its raw value JSON-escaped, up to six times the record limit
        # (adlake.config): above the producer's default 1 MiB, within the broker's limit.
        .option("kafka.max.request.size", str(KAFKA_MAX_MESSAGE_BYTES))
        .option("checkpointLocation", str(checkpoint))
        .outputMode(output_mode)
        .queryName(query_name)
        .trigger(**trigger.kwargs())
        .start()
    )
