"""Real-time ad attribution: requests, impressions and callbacks in; attributed events out.

Reads ``ad_requests``, ``ad_impressions`` and ``ad_callbacks`` from Kafka, validates them against
the registry (failures go to ``ad_events_dlq`` with the reason), keys them by ``request_id`` and
runs the attribution rules (``spark_apps/common/attribution``) with ``transformWithState``;
writes ``attributed_events`` (key ``request_id``). Output and DLQ records leave through one Kafka
sink and one checkpoint, so they commit together.

Engines: ``jvm`` (the default) runs the Java port of the rules inside the JVM task, in
micro-batches or in Real-Time Mode; ``python`` runs the Python processor, the specification, in
micro-batches only (Spark rejects Python ``transformWithState`` in Real-Time Mode). Their
checkpoints are not interchangeable.

Watermark: on the **Kafka timestamp** (arrival), delayed by the allowed lateness. Spark drops rows
behind the watermark before a ``transformWithState`` processor sees them; with the watermark on
arrival time a record is only ever behind it if Kafka itself delivers it that late, so events
with old event times still reach the processor, which applies the event-time rules (match
windows, close at ``request.t + window``) and emits them as orphans instead of losing them.

Trigger: ``processing_time`` by default, with a 0-second interval (next batch as soon as the last
ends). ``--trigger realtime`` (JVM engine) emits attributions as their events arrive; its
event-time timers (closes, orphans, tombstone expiries) fire at checkpoint-interval boundaries,
where the watermark advances. Real-Time Mode needs a task slot per partition of its three
topics plus one per shuffle partition (8 locally: 3 x 2 + 2).

    .venv/ops/bin/python -m spark_apps.ops.attribution --window-s 300 --skew-s 10 --lateness-s 30
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from pyspark.sql import Row

from adlake import registry
from spark_apps.common.attribution.batch import ARRIVAL, as_input, registry_columns
from spark_apps.common.attribution.contract import (
    CALLBACK,
    DLQ_FIELDS,
    IMPRESSION,
    QUERY_INPUT_SCHEMA,
    QUERY_OUTPUT_SCHEMA,
    REJECT,
    REJECT_KEY,
    REJECTED,
    REQUEST,
    AttributionConfig,
)
from spark_apps.common.attribution.processor import AttributionProcessor
from spark_apps.common.parsing import RAW, REASON
from spark_apps.common.streaming.runner import StreamingApp, run
from spark_apps.ops.attribution_jvm import ENGINES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_apps.common.streaming.triggers import TriggerConfig

APP = registry.app("attribution")
_KIND_OF_TOPIC = {"ad_requests": REQUEST, "ad_impressions": IMPRESSION, "ad_callbacks": CALLBACK}


def transform_parse(raw: DataFrame) -> DataFrame:
    """Raw Kafka records of the three input topics → processor input rows
    (:data:`QUERY_INPUT_SCHEMA`): valid events by kind, rejected records as kind REJECT with
    their raw value, reason and coordinates. One pass over the source."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import parse_json_by_topic

    parsed = parse_json_by_topic(
        raw, [registry.topic(name) for name in APP.inputs], received_col="timestamp"
    )
    kind = F.lit(REJECT)
    for name in reversed(APP.inputs):
        kind = F.when(F.col("topic") == name, F.lit(_KIND_OF_TOPIC[name])).otherwise(kind)
    kind = F.when(F.col(REASON).isNotNull(), F.lit(REJECT)).otherwise(kind)
    parsed = parsed.select(
        "*",
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        # A reject's own key: it shares no state with anything (see _QueryProcessor).
        F.when(F.col(REASON).isNotNull(), F.concat_ws("|", "topic", "partition", "offset")).alias(
            REJECT_KEY
        ),
    )
    # A rejected record has no trustworthy event time; it travels on its Kafka timestamp.
    parsed = parsed.withColumn(
        "event_time",
        F.when(F.col(REASON).isNull(), F.col("event_time")).otherwise(F.col("timestamp")),
    )
    return as_input(parsed, kind, "timestamp", QUERY_INPUT_SCHEMA, keep=(REJECT_KEY,))


class _QueryProcessor(AttributionProcessor):
    """The attribution rules, plus the DLQ: keys are ``(request_id, reject_key)``. A rejected
    record is alone under its own key (its Kafka coordinates) and is emitted at once without
    touching state; every other key has a null ``reject_key`` and is the rules' request key."""

    def handleInputRows(self, key, rows, timerValues):
        if key[1] is not None:
            for row in rows:
                values = dict.fromkeys(QUERY_OUTPUT_SCHEMA.names)
                values.update(
                    record_type=REJECTED,
                    request_id=row.request_id,
                    source_kafka_ts_ms=row.kafka_ts_ms,
                    **{n: row[n] for n, _ in DLQ_FIELDS},
                )
                yield Row(**values)
            return
        yield from map(_pad, super().handleInputRows(key, rows, timerValues))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield from map(_pad, super().handleExpiredTimer(key, timerValues, expiredTimerInfo))


def _pad(row: Row) -> Row:
    return Row(**row.asDict(), **{n: None for n, _ in DLQ_FIELDS})


def build_query_frame(
    raw: DataFrame, config: AttributionConfig, engine: str = "jvm", output_mode: str = "append"
) -> DataFrame:
    """Everything the query writes, attributed records and DLQ records, as Kafka records
    (topic, key, value), from raw Kafka records of the input topics.

    Both leave through one stateful operator and one sink: a union of a DLQ branch with the
    processor's output would plan the Kafka source twice (each branch its own scan, reading and
    counting every record twice), and Real-Time Mode forbids a union after a stateful operator.
    Watermark on the Kafka timestamp (arrival), delayed by the allowed lateness: see the module
    docstring. ``engine`` picks the processor: ``jvm`` (the default, see ``attribution_jvm``)
    or ``python``; both apply the same rules and write the same records."""
    from pyspark.sql import functions as F

    from spark_apps.common.streaming.kafka_io import dlq_value, json_value
    from spark_apps.common.streaming.listener import observe_latency
    from spark_apps.ops.attribution_jvm import transform_jvm

    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not valid: allowed values are {', '.join(ENGINES)}")
    events = transform_parse(raw)
    if events.isStreaming:
        events = events.withWatermark(ARRIVAL, f"{config.lateness_ms} milliseconds")
    if engine == "jvm":
        out = transform_jvm(
            events,
            config,
            input_schema=QUERY_INPUT_SCHEMA,
            output_schema=QUERY_OUTPUT_SCHEMA,
            with_reject_key=True,
            output_mode=output_mode,
        )
    else:
        out = events.groupBy("request_id", REJECT_KEY).transformWithState(
            _QueryProcessor(config), QUERY_OUTPUT_SCHEMA, output_mode.capitalize(), "EventTime"
        )
    out = observe_latency(out, "source_kafka_ts_ms")
    rejected = F.col("record_type") == REJECTED
    attributed, dlq = registry.topic(APP.outputs[0]), registry.topic(APP.dlq)
    out = out.select(
        *registry_columns(out),
        RAW,
        REASON,
        F.col("source_topic").alias("topic"),
        F.col("source_partition").alias("partition"),
        F.col("source_offset").alias("offset"),
        F.timestamp_millis("source_kafka_ts_ms").alias("timestamp"),
    )
    return out.select(
        F.when(rejected, F.lit(dlq.name)).otherwise(F.lit(attributed.name)).alias("topic"),
        F.when(rejected, F.col("topic")).otherwise(F.col("request_id")).alias("key"),
        F.when(rejected, dlq_value(dlq)).otherwise(json_value(attributed)).alias("value"),
    )


def config_from_args(args: argparse.Namespace) -> AttributionConfig:
    return AttributionConfig(
        window_ms=int(args.window_s * 1000),
        skew_ms=int(args.skew_s * 1000),
        lateness_ms=int(args.lateness_s * 1000),
        ttl_ms=int(args.ttl_s * 1000),
    )


def _check(args: argparse.Namespace) -> str | None:
    # (the registry's knob rules are checked before this, by the runner)
    try:
        config_from_args(args)
    except ValueError as error:
        return str(error)
    return None


def _output_mode(trigger: TriggerConfig) -> str:
    # Real-Time Mode accepts only the update output mode; each attributed record is emitted once
    # either way, so the two modes write the same records.
    return "update" if trigger.mode == "realtime" else "append"


SPEC = StreamingApp(
    app=APP,
    description=__doc__,
    build=lambda raw, args, trigger: build_query_frame(
        raw, config_from_args(args), args.engine, _output_mode(trigger)
    ),
    output_mode=_output_mode,
    check=_check,
)


def main(argv: list[str] | None = None) -> int:
    return run(SPEC, argv)


if __name__ == "__main__":
    sys.exit(main())
