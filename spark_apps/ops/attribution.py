"""Real-time ad attribution: requests, impressions and callbacks in; attributed events out.

Reads ``ad_requests``, ``ad_impressions`` and ``ad_callbacks`` from Kafka, validates them against
the registry (failures go to ``ad_events_dlq`` with the reason), keys them by ``request_id`` and
runs :class:`~spark_apps.ops.attribution_processor.AttributionProcessor` with Python
``transformWithState``; writes ``attributed_events`` (key ``request_id``). Output and DLQ records
leave through one Kafka sink and one checkpoint, so they commit together.

Watermark: on the **Kafka timestamp** (arrival), delayed by the allowed lateness. Spark drops rows
behind the watermark before a ``transformWithState`` processor sees them; with the watermark on
arrival time a record is only ever behind it if Kafka itself delivers it that late, so events
with old event times still reach the processor, which applies the event-time rules (match
windows, close at ``request.t + window``) and emits them as orphans instead of losing them.

Trigger: open-source Spark 4.3 runs Python ``transformWithState`` in micro-batch mode only; the
default is ``processing_time`` with a 0-second interval (next batch as soon as the last ends).
``--trigger realtime`` is accepted and passed to Spark, which rejects the query at start (see
README, "Real-Time Mode"). The same logic runs as a batch query: :func:`attribute_batch`.

    .venv/ops/bin/python -m spark_apps.ops.attribution --window-s 300 --skew-s 10 --lateness-s 30
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from pyspark.sql import Row
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from adlake import registry
from adlake.config import load_settings
from spark_apps.ops.attribution_jvm import ENGINES
from spark_apps.ops.attribution_processor import (
    CALLBACK,
    IMPRESSION,
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    REQUEST,
    AttributionConfig,
    AttributionProcessor,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

APP = registry.app("attribution")
_KIND_OF_TOPIC = {"ad_requests": REQUEST, "ad_impressions": IMPRESSION, "ad_callbacks": CALLBACK}
ARRIVAL = "arrival_time"

# The streaming query routes rejected records through the processor too (see
# :func:`build_query_frame`): a rejected input row has kind REJECT and is emitted as a REJECTED
# record carrying its DLQ fields.
REJECT, REJECTED = "reject", "rejected"
_DLQ_FIELDS = (("raw_value", StringType()), ("dlq_reason", StringType()),
               ("source_topic", StringType()), ("source_partition", IntegerType()),
               ("source_offset", LongType()))
QUERY_INPUT_SCHEMA = StructType(INPUT_SCHEMA.fields + [StructField(n, t) for n, t in _DLQ_FIELDS])
QUERY_OUTPUT_SCHEMA = StructType(OUTPUT_SCHEMA.fields
                                 + [StructField(n, t) for n, t in _DLQ_FIELDS])
REJECT_KEY = "reject_key"


def _as_input(df: DataFrame, kind: Column, kafka_ts_col: str, schema: StructType = INPUT_SCHEMA,
              keep: tuple[str, ...] = ()) -> DataFrame:
    """Project an event DataFrame onto the processor's input ``schema`` (plus the columns in
    ``keep``); ``kind`` says which kind of event each row is."""
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


def transform_parse(raw: DataFrame) -> DataFrame:
    """Raw Kafka records of the three input topics → processor input rows
    (:data:`QUERY_INPUT_SCHEMA`): valid events by kind, rejected records as kind REJECT with
    their raw value, reason and coordinates. One pass over the source."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import REASON, parse_json_by_topic

    parsed = parse_json_by_topic(raw, [registry.topic(name) for name in APP.inputs],
                                 received_col="timestamp")
    kind = F.lit(REJECT)
    for name in reversed(APP.inputs):
        kind = F.when(F.col("topic") == name, F.lit(_KIND_OF_TOPIC[name])).otherwise(kind)
    kind = F.when(F.col(REASON).isNotNull(), F.lit(REJECT)).otherwise(kind)
    parsed = parsed.select(
        "*", F.col("topic").alias("source_topic"), F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        # A reject's own key: it shares no state with anything (see _QueryProcessor).
        F.when(F.col(REASON).isNotNull(), F.concat_ws("|", "topic", "partition", "offset"))
        .alias(REJECT_KEY))
    # A rejected record has no trustworthy event time; it travels on its Kafka timestamp.
    parsed = parsed.withColumn("event_time", F.when(F.col(REASON).isNull(), F.col("event_time"))
                               .otherwise(F.col("timestamp")))
    return _as_input(parsed, kind, "timestamp", QUERY_INPUT_SCHEMA, keep=(REJECT_KEY,))


class _QueryProcessor(AttributionProcessor):
    """The attribution rules, plus the DLQ: keys are ``(request_id, reject_key)``. A rejected
    record is alone under its own key (its Kafka coordinates) and is emitted at once without
    touching state; every other key has a null ``reject_key`` and is the rules' request key."""

    def handleInputRows(self, key, rows, timerValues):  # noqa: N802 - Spark's API
        if key[1] is not None:
            for row in rows:
                values = {name: None for name in QUERY_OUTPUT_SCHEMA.names}
                values.update(record_type=REJECTED, request_id=row.request_id,
                              source_kafka_ts_ms=row.kafka_ts_ms,
                              **{n: row[n] for n, _ in _DLQ_FIELDS})
                yield Row(**values)
            return
        yield from map(_pad, super().handleInputRows(key, rows, timerValues))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # noqa: N802
        yield from map(_pad, super().handleExpiredTimer(key, timerValues, expiredTimerInfo))


def _pad(row: Row) -> Row:
    return Row(**row.asDict(), **{n: None for n, _ in _DLQ_FIELDS})


def _registry_columns(out: DataFrame) -> list:
    """The registry's ``attributed_events`` fields from processor output (times travel as epoch
    ms through the processor)."""
    from pyspark.sql import functions as F

    return [F.col(name) if name in OUTPUT_SCHEMA.names
            else F.timestamp_millis(F.col(f"{name}_ms")).alias(name)
            for name in registry.topic("attributed_events").schema.names]


def transform_attribute(events: DataFrame, config: AttributionConfig) -> DataFrame:
    """Processor input rows → attributed records with the registry's ``attributed_events``
    fields (batch; the stream is :func:`build_query_frame`)."""
    out = (events.groupBy("request_id")
           .transformWithState(AttributionProcessor(config), OUTPUT_SCHEMA, "Append",
                               "EventTime"))
    return out.select(*_registry_columns(out))


def attribute_batch(requests: DataFrame, impressions: DataFrame, callbacks: DataFrame,
                    config: AttributionConfig | None = None,
                    kafka_ts_col: str = "kafka_timestamp") -> DataFrame:
    """Attribution over typed batch DataFrames (e.g. one day of silver events): the same
    processor as the stream, so both sides can be reconciled. All timers fire at the end of the
    input, so every request is closed and every unmatched item is an orphan.

    Each input has the registry fields of its topic plus ``kafka_ts_col``.
    """
    from pyspark.sql import functions as F

    config = dataclasses.replace(config or AttributionConfig(), close_at_end_of_input=True)
    # transformWithState keeps its state in RocksDB even in batch, and on Spark 4.2 the RocksDB
    # store reports to the driver's StateStoreCoordinator, which only exists once the session's
    # streaming manager does: without this touch a batch-only session fails to load state
    # (RpcEndpointNotFoundException: StateStoreCoordinator).
    _ = requests.sparkSession.streams.active
    events = (_as_input(requests, F.lit(REQUEST), kafka_ts_col)
              .unionByName(_as_input(impressions, F.lit(IMPRESSION), kafka_ts_col))
              .unionByName(_as_input(callbacks, F.lit(CALLBACK), kafka_ts_col)))
    return transform_attribute(events, config)


def build_query_frame(raw: DataFrame, config: AttributionConfig, engine: str = "jvm",
                      output_mode: str = "append") -> DataFrame:
    """Everything the query writes, attributed records and DLQ records, as Kafka records
    (topic, key, value), from raw Kafka records of the input topics.

    Both leave through one stateful operator and one sink: a union of a DLQ branch with the
    processor's output would plan the Kafka source twice (each branch its own scan, reading and
    counting every record twice), and Real-Time Mode forbids a union after a stateful operator.
    Watermark on the Kafka timestamp (arrival), delayed by the allowed lateness: see the module
    docstring. ``engine`` picks the processor: ``jvm`` (the default, see ``attribution_jvm``)
    or ``python``; both apply the same rules and write the same records."""
    from pyspark.sql import functions as F

    from spark_apps.common.streaming import dlq_value, json_value, observe_latency
    from spark_apps.ops.attribution_jvm import transform_jvm

    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not valid: allowed values are "
                         f"{', '.join(ENGINES)}")
    events = transform_parse(raw)
    if events.isStreaming:
        events = events.withWatermark(ARRIVAL, f"{config.lateness_ms} milliseconds")
    if engine == "jvm":
        out = transform_jvm(events, config, input_schema=QUERY_INPUT_SCHEMA,
                            output_schema=QUERY_OUTPUT_SCHEMA, with_reject_key=True,
                            output_mode=output_mode)
    else:
        out = (events.groupBy("request_id", REJECT_KEY)
               .transformWithState(_QueryProcessor(config), QUERY_OUTPUT_SCHEMA,
                                   output_mode.capitalize(), "EventTime"))
    out = observe_latency(out, "source_kafka_ts_ms")
    rejected = F.col("record_type") == REJECTED
    attributed, dlq = registry.topic(APP.outputs[0]), registry.topic(APP.dlq)
    out = out.select(*_registry_columns(out), "raw_value", "dlq_reason",
                     F.col("source_topic").alias("topic"),
                     F.col("source_partition").alias("partition"),
                     F.col("source_offset").alias("offset"),
                     F.timestamp_millis("source_kafka_ts_ms").alias("timestamp"))
    return out.select(
        F.when(rejected, F.lit(dlq.name)).otherwise(F.lit(attributed.name)).alias("topic"),
        F.when(rejected, F.col("topic")).otherwise(F.col("request_id")).alias("key"),
        F.when(rejected, dlq_value(dlq)).otherwise(json_value(attributed)).alias("value"),
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from spark_apps.common.streaming import add_common_args

    parser = argparse.ArgumentParser(prog="spark_apps.ops.attribution", description=__doc__)
    add_common_args(parser, default_trigger="processing_time")
    defaults = AttributionConfig()
    parser.add_argument("--window-s", type=float, default=defaults.window_ms / 1000)
    parser.add_argument("--skew-s", type=float, default=defaults.skew_ms / 1000)
    parser.add_argument("--lateness-s", type=float, default=defaults.lateness_ms / 1000)
    parser.add_argument("--ttl-s", type=float, default=defaults.ttl_ms / 1000)
    parser.add_argument("--engine", choices=ENGINES, default="jvm",
                        help="jvm: the JVM port of the rules (default, low latency); python: "
                             "the Python processor (its checkpoint is not interchangeable)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session
    from spark_apps.common.streaming import (
        GracefulStop,
        StatusReporter,
        TriggerConfig,
        attach_listener,
        check_task_slots,
        read_kafka,
        write_kafka,
    )

    args = parse_args(argv)
    settings = load_settings()
    config = AttributionConfig(window_ms=int(args.window_s * 1000),
                               skew_ms=int(args.skew_s * 1000),
                               lateness_ms=int(args.lateness_s * 1000),
                               ttl_ms=int(args.ttl_s * 1000))
    trigger = TriggerConfig(args.trigger, args.trigger_interval)
    if trigger.mode == "realtime":
        check_task_slots(settings, APP)
    name = args.query_name or APP.name
    checkpoint = settings.checkpoint_path(args.checkpoint or name) if not args.checkpoint or \
        "/" not in args.checkpoint else __import__("pathlib").Path(args.checkpoint)
    stop = GracefulStop(marker=settings.status_dir / f"{name}.stop", deadline_s=args.stop_after_s)
    stop.install()

    spark = get_session("ops", name, settings)
    reporter = StatusReporter(settings, name, trigger.mode)
    attach_listener(spark, reporter)
    raw = read_kafka(spark, settings, list(APP.inputs), args.starting_offsets,
                     args.max_offsets_per_trigger)
    # Real-Time Mode accepts only the update output mode; each attributed record is emitted once
    # either way, so the two modes write the same records.
    output_mode = "update" if trigger.mode == "realtime" else "append"
    query = write_kafka(build_query_frame(raw, config, args.engine, output_mode), settings,
                        checkpoint, trigger, output_mode, name)
    print(f"[{name}] running: engine={args.engine} trigger={trigger.kwargs()} "
          f"checkpoint={checkpoint}", flush=True)
    stop.run(query)
    print(f"[{name}] stopped ({stop.reason or 'query ended'})", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
