"""The attribution rules over DataFrames: typed events in, ``attributed_events`` records out.

The batch path (:func:`attribute_batch`) runs the Python processor over typed DataFrames, e.g.
a day of silver events in the lake runtime's reconciliation; the operational app
(``spark_apps/ops/attribution.py``) builds its streaming query from the same pieces
(:func:`as_input`, :func:`registry_columns`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from adlake import registry
from spark_apps.common.attribution.contract import (
    CALLBACK,
    IMPRESSION,
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    REQUEST,
    AttributionConfig,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

ARRIVAL = "arrival_time"
OUTPUT_TOPIC = registry.topic("attributed_events")


def as_input(
    df: DataFrame,
    kind: Column,
    kafka_ts_col: str,
    schema: StructType = INPUT_SCHEMA,
    keep: tuple[str, ...] = (),
) -> DataFrame:
    """Project an event DataFrame onto the processor's input ``schema`` (plus the columns in
    ``keep`` and ``arrival_time``, the Kafka timestamp); ``kind`` says which kind of event each
    row is. Times become epoch milliseconds."""
    from pyspark.sql import functions as F

    columns = []
    for field in schema.fields:
        if field.name == "kind":
            columns.append(kind.alias("kind"))
        elif field.name == "event_time_ms":
            columns.append(F.unix_millis("event_time").alias("event_time_ms"))
        elif field.name == "kafka_ts_ms":
            columns.append(F.unix_millis(kafka_ts_col).alias("kafka_ts_ms"))
        elif field.name in df.columns:
            columns.append(F.col(field.name).cast(field.dataType).alias(field.name))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return df.select(*columns, F.col(kafka_ts_col).alias(ARRIVAL), *keep)


def registry_columns(out: DataFrame) -> list:
    """The registry's ``attributed_events`` fields from processor output (times travel as epoch
    ms through the processor)."""
    from pyspark.sql import functions as F

    return [
        F.col(name)
        if name in OUTPUT_SCHEMA.names
        else F.timestamp_millis(F.col(f"{name}_ms")).alias(name)
        for name in OUTPUT_TOPIC.schema.names
    ]


def transform_attribute(
    events: DataFrame, config: AttributionConfig, state_server: bool = False
) -> DataFrame:
    """Processor input rows → attributed records with the registry's ``attributed_events``
    fields, by the Python processor with every key closed at the end of its input: its state in
    memory (:mod:`~spark_apps.common.attribution.in_memory`), or with ``state_server`` through
    ``transformWithState`` and its state server, as the stream runs it (the specification the
    in-memory form is tested against)."""
    if not state_server:
        from spark_apps.common.attribution.in_memory import transform_attribute_in_memory

        out = transform_attribute_in_memory(events, config)
        return out.select(*registry_columns(out))
    from spark_apps.common.attribution.processor import AttributionProcessor

    # transformWithState keeps its state in RocksDB even in batch, and on Spark 4.2 the RocksDB
    # store reports to the driver's StateStoreCoordinator, which only exists once the session's
    # streaming manager does: without this touch a batch-only session fails to load state
    # (RpcEndpointNotFoundException: StateStoreCoordinator).
    _ = events.sparkSession.streams.active
    out = events.groupBy("request_id").transformWithState(
        AttributionProcessor(config), OUTPUT_SCHEMA, "Append", "EventTime"
    )
    return out.select(*registry_columns(out))


def attribute_batch(
    requests: DataFrame,
    impressions: DataFrame,
    callbacks: DataFrame,
    config: AttributionConfig | None = None,
    kafka_ts_col: str = "kafka_timestamp",
) -> DataFrame:
    """Attribution over typed batch DataFrames (e.g. one day of silver events): the same
    processor as the stream, so both sides can be reconciled, its state in memory. All timers fire at the end of the
    input, so every request is closed and every unmatched item is an orphan.

    Each input has the registry fields of its topic plus ``kafka_ts_col``.
    """
    from pyspark.sql import functions as F

    config = dataclasses.replace(config or AttributionConfig(), close_at_end_of_input=True)
    events = (
        as_input(requests, F.lit(REQUEST), kafka_ts_col)
        .unionByName(as_input(impressions, F.lit(IMPRESSION), kafka_ts_col))
        .unionByName(as_input(callbacks, F.lit(CALLBACK), kafka_ts_col))
    )
    return transform_attribute(events, config)
