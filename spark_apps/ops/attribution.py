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

from adlake import registry
from adlake.config import load_settings
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
    from pyspark.sql import DataFrame

APP = registry.app("attribution")
_KIND_OF_TOPIC = {"ad_requests": REQUEST, "ad_impressions": IMPRESSION, "ad_callbacks": CALLBACK}
ARRIVAL = "arrival_time"


def _as_input(df: DataFrame, kind: str, kafka_ts_col: str) -> DataFrame:
    """Project one typed event DataFrame onto the processor's input schema."""
    from pyspark.sql import functions as F

    columns = []
    for field in INPUT_SCHEMA.fields:
        if field.name == "kind":
            columns.append(F.lit(kind).alias("kind"))
        elif field.name == "event_time_ms":
            columns.append(F.unix_millis("event_time").alias("event_time_ms"))
        elif field.name == "kafka_ts_ms":
            columns.append(F.unix_millis(kafka_ts_col).alias("kafka_ts_ms"))
        elif field.name in df.columns:
            columns.append(F.col(field.name).cast(field.dataType).alias(field.name))
        else:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
    return df.select(*columns, F.col(kafka_ts_col).alias(ARRIVAL))


def transform_parse(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Raw Kafka records of the three input topics → (processor input rows, rejected rows)."""
    from pyspark.sql import functions as F

    from spark_apps.common.parsing import RAW, REASON, parse_json, split_valid

    events, rejected = None, None
    for name in APP.inputs:
        parsed = parse_json(raw.where(F.col("topic") == name), registry.topic(name))
        valid, bad = split_valid(parsed)
        rows = _as_input(valid, _KIND_OF_TOPIC[name], "timestamp")
        bad = bad.select("topic", "partition", "offset", "timestamp", RAW, REASON)
        events = rows if events is None else events.unionByName(rows)
        rejected = bad if rejected is None else rejected.unionByName(bad)
    return events, rejected


def transform_attribute(events: DataFrame, config: AttributionConfig) -> DataFrame:
    """Processor input rows → attributed records with the registry's ``attributed_events``
    fields. Works on a stream (needs :data:`ARRIVAL` for the watermark) and on a batch."""
    from pyspark.sql import functions as F

    if events.isStreaming:
        events = events.withWatermark(ARRIVAL, f"{config.lateness_ms} milliseconds")
    out = (events.groupBy("request_id")
           .transformWithState(AttributionProcessor(config), OUTPUT_SCHEMA, "Append",
                               "EventTime"))
    names = registry.topic("attributed_events").schema.names
    columns = []
    for name in names:
        if name in OUTPUT_SCHEMA.names:
            columns.append(F.col(name))
        else:  # request_time etc. travel as epoch ms through the processor
            columns.append(F.timestamp_millis(F.col(f"{name}_ms")).alias(name))
    return out.select(*columns, "source_kafka_ts_ms")


def attribute_batch(requests: DataFrame, impressions: DataFrame, callbacks: DataFrame,
                    config: AttributionConfig | None = None,
                    kafka_ts_col: str = "kafka_timestamp") -> DataFrame:
    """Attribution over typed batch DataFrames (e.g. one day of silver events): the same
    processor as the stream, so both sides can be reconciled. All timers fire at the end of the
    input, so every request is closed and every unmatched item is an orphan.

    Each input has the registry fields of its topic plus ``kafka_ts_col``.
    """
    config = dataclasses.replace(config or AttributionConfig(), close_at_end_of_input=True)
    # transformWithState keeps its state in RocksDB even in batch, and on Spark 4.2 the RocksDB
    # store reports to the driver's StateStoreCoordinator, which only exists once the session's
    # streaming manager does: without this touch a batch-only session fails to load state
    # (RpcEndpointNotFoundException: StateStoreCoordinator).
    _ = requests.sparkSession.streams.active
    events = (_as_input(requests, REQUEST, kafka_ts_col)
              .unionByName(_as_input(impressions, IMPRESSION, kafka_ts_col))
              .unionByName(_as_input(callbacks, CALLBACK, kafka_ts_col)))
    return transform_attribute(events, config).drop("source_kafka_ts_ms")


def build_query_frame(raw: DataFrame, config: AttributionConfig) -> DataFrame:
    """Everything the query writes: attributed records and DLQ records (topic, key, value)."""
    from spark_apps.common.streaming import dlq_records, kafka_record, observe_latency

    events, rejected = transform_parse(raw)
    attributed = observe_latency(transform_attribute(events, config), "source_kafka_ts_ms")
    out = kafka_record(attributed, registry.topic("attributed_events"), "request_id")
    return out.unionByName(dlq_records(rejected, APP.dlq))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from spark_apps.common.streaming import add_common_args

    parser = argparse.ArgumentParser(prog="spark_apps.ops.attribution", description=__doc__)
    add_common_args(parser, default_trigger="processing_time")
    defaults = AttributionConfig()
    parser.add_argument("--window-s", type=float, default=defaults.window_ms / 1000)
    parser.add_argument("--skew-s", type=float, default=defaults.skew_ms / 1000)
    parser.add_argument("--lateness-s", type=float, default=defaults.lateness_ms / 1000)
    parser.add_argument("--ttl-s", type=float, default=defaults.ttl_ms / 1000)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session
    from spark_apps.common.streaming import (
        GracefulStop,
        StatusReporter,
        TriggerConfig,
        attach_listener,
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
    query = write_kafka(build_query_frame(raw, config), settings, checkpoint, trigger,
                        output_mode, name)
    print(f"[{name}] running: trigger={trigger.kwargs()} checkpoint={checkpoint}", flush=True)
    stop.run(query)
    print(f"[{name}] stopped ({stop.reason or 'query ended'})", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
