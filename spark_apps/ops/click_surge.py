"""Click-surge detection: pages with more than N clicks in a 5-second event-time window.

Reads ``page_clicks``, validates each click against the registry (failures go to
``page_clicks_dlq`` with the reason), counts clicks per page in 5-second tumbling windows on
``event_time`` and writes every window whose count passes the threshold to ``page_surges``,
keyed ``page_id|window_start``. Surges and DLQ records leave through one Kafka sink.

Watermark: 5 s behind the largest event time seen. It bounds how long a window stays open to
late clicks: once the watermark passes a window's end, the window's state is dropped and a click
for it is late; Spark counts those rows (``numRowsDroppedByWatermark``) and the status file
reports them as ``late_rows``, so they are visible rather than silently gone.

Trigger: Real-Time Mode by default (``trigger(realTime=...)``, update mode): each surging window
is re-emitted as its count grows, and ``source_kafka_ts`` is the Kafka timestamp of the newest
click counted, so ``output timestamp - source_kafka_ts`` is the latency of that update. The
key (page and window) lets a consumer keep one alert per window (compact on the key and keep the
highest count). ``--trigger processing_time`` runs the same code in micro-batches.

Real-Time Mode runs all its tasks at once, for the whole checkpoint interval: one per source
partition plus one per shuffle partition. :func:`check_task_slots` refuses to start when the
local master has fewer slots than that, instead of letting the query stall.

    .venv/ops/bin/python -m spark_apps.ops.click_surge --threshold 100
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from adlake import registry
from spark_apps.common.streaming.runner import StreamingApp, run

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

APP = registry.app("click_surge")
DEFAULT_THRESHOLD = APP.knob("threshold").default
WINDOW = f"{registry.SURGE_WINDOW_S} seconds"
# The watermark's delay behind the newest event time, declared once in the registry entry (whose
# ``state`` says when windows close: adlake.latency.waiting_in_state).
WATERMARK = f"{APP.state.delay:g} seconds"


def transform_detect(raw: DataFrame, threshold: int) -> DataFrame:
    """Raw Kafka records of ``page_clicks`` → one row per surging window and one per rejected
    click, as Kafka records (``topic``, ``key``, ``value``) for ``page_surges`` and
    ``page_clicks_dlq``.

    Real-Time Mode allows no union after a stateful operator, so surges and rejects cannot be two
    branches joined at the end. Instead every row goes through the one aggregation: a valid
    click is grouped by (5-second window of its event time, page), a rejected one by
    (window of its Kafka timestamp, its own Kafka coordinates) so it forms a group of one that
    is emitted once and evicted with its window. Rejects have no trustworthy event time; their
    Kafka timestamp is near the newest event times in normal operation, and a reject more than
    the watermark delay behind them is counted as a late row, not lost unseen.

    >>> transform_detect(raw_clicks, threshold=2)   # doctest: +SKIP
    topic        | key                           | value
    page_surges  | home|2026-11-21T10:00:00.000Z | {"page_id":"home","click_count":3,...}
    """
    return _kafka_records(_detect(raw, threshold))


def _detect(raw: DataFrame, threshold: int, observe: bool = False) -> DataFrame:
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import RAW, REASON, parse_json
    from spark_apps.common.streaming.listener import observe_latency

    parsed = parse_json(raw, registry.topic(APP.inputs[0]), received_col="timestamp")
    valid = F.col(REASON).isNull()
    rows = parsed.select(
        "*",
        F.when(valid, F.col("event_time")).otherwise(F.col("timestamp")).alias("_time"),
        F.when(valid, F.col("page_id"))
        .otherwise(F.concat_ws("|", F.col("topic"), F.col("partition"), F.col("offset")))
        .alias("_group"),
    )
    if rows.isStreaming:
        # Windows close 5 s (event time) after their end; state and late clicks follow from it.
        rows = rows.withWatermark("_time", WATERMARK)
    groups = rows.groupBy(
        F.window("_time", WINDOW).alias("window"), "_group", F.col(REASON).isNull().alias("_valid")
    ).agg(
        F.count(F.lit(1)).alias("click_count"),
        F.max("event_time").alias("max_event_time"),
        F.max("timestamp").alias("source_kafka_ts"),
        F.first(RAW).alias(RAW),
        F.first(REASON).alias(REASON),
        F.first("topic").alias("topic"),
        F.first("partition").alias("partition"),
        F.first("offset").alias("offset"),
        F.first("timestamp").alias("timestamp"),
    )
    out = (
        groups.where(~F.col("_valid") | (F.col("click_count") > threshold))
        .withColumn("page_id", F.col("_group"))
        .withColumn("window_start", F.col("window.start"))
        .withColumn("window_end", F.col("window.end"))
    )
    return out if not observe else observe_latency(out, F.unix_millis("source_kafka_ts"))


def _kafka_records(out: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    from spark_apps.common.streaming.kafka_io import dlq_value, json_value

    surges, dlq = registry.topic(APP.outputs[0]), registry.topic(APP.dlq)
    return out.select(
        F.when(F.col("_valid"), F.lit(surges.name)).otherwise(F.lit(dlq.name)).alias("topic"),
        F.when(F.col("_valid"), surge_key()).otherwise(F.col("topic")).alias("key"),
        F.when(F.col("_valid"), json_value(surges)).otherwise(dlq_value(dlq)).alias("value"),
    )


def surge_key():
    from pyspark.sql import functions as F

    return F.concat_ws(
        "|", F.col("page_id"), F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
    )


def build_query_frame(raw: DataFrame, threshold: int) -> DataFrame:
    """Everything the query writes (topic, key, value), with latency observed for the status:
    percentiles of ``source_kafka_ts`` over each batch's output (in Real-Time Mode a batch is a
    checkpoint interval, so the status's latency moves once per interval)."""
    return _kafka_records(_detect(raw, threshold, observe=True))


SPEC = StreamingApp(
    app=APP,
    description=__doc__,
    build=lambda raw, args, trigger: build_query_frame(raw, args.threshold),
    # Update mode: a surging window is re-emitted as its count grows (Real-Time Mode accepts
    # only update; micro-batches use it too, so both modes write the same records).
    output_mode=lambda trigger: "update",
)


def main(argv: list[str] | None = None) -> int:
    return run(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
