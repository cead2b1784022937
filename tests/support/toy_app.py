"""A toy third streaming app, declared only here: its registry entry (:data:`TOY`, with its
output topic :data:`TOY_TOPIC`) and its module (this one: :data:`SPEC` and :func:`main`).
``tests/include/test_toy_app.py`` adds the two entries to a copy of the registry and shows that
everything else follows with no other edit.

Its query, :data:`SPEC`'s ``build``, echoes each click of ``page_clicks`` to ``toy_echoes``
(what ``runner.run(SPEC)`` would run on Spark). :func:`main` is a stand-in for that run, without
Spark, so the lifecycle test costs seconds: it parses its command line with the shared runner's
parser (the one every app's ``main`` uses: the lifecycle's flags must be ones it accepts), stops
on SIGTERM or its stop marker as the runner does, and reports as an app's listener does, feeding
the real :class:`StatusReporter` a progress event like Spark's every 0.1 s.

    python -m tests.support.toy_app --hold-s 3 --stop-after-s 1
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from adlake.config import load_settings
from adlake.registry import App, Knob, StateClose, Topic, schema
from adlake.status import stop_marker
from spark_apps.common.streaming.lifecycle import GracefulStop
from spark_apps.common.streaming.listener import StatusReporter
from spark_apps.common.streaming.runner import StreamingApp, knob_values, parse_args

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TOY_TOPIC = Topic(
    "toy_echoes",
    1,
    "page_id",
    schema("record_type:string", "page_id:string", "source_kafka_ts:timestamp"),
    id_fields=("record_type", "page_id", "source_kafka_ts"),
    description="Output of the toy app: one echo per click.",
)

TOY = App(
    "toy_echo",
    "ops",
    "tests.support.toy_app",  # run as __main__ by the launcher: not __name__
    inputs=("page_clicks",),
    outputs=(TOY_TOPIC.name,),
    dlq="page_clicks_dlq",
    description="Echoes every page click (a test's toy app).",
    default_trigger="processing_time",
    knobs=(
        Knob(
            "hold_s", "number", 2.0, "how long an echo is held in state", minimum=0, maximum=3_600
        ),
    ),
    same_checkpoint_switches=(("processing_time", "realtime"), ("realtime", "processing_time")),
    timer_driven=("expired",),
    state=StateClose(
        window="hold_s",
        delay=1,
        holds="echoes held {window:g} s behind a watermark {delay:g} s late; held since "
        "after {open_after}",
        closes_with="clicks with later event times",
    ),
)


def echo(raw: DataFrame) -> DataFrame:
    """Raw Kafka records of ``page_clicks`` → one ``toy_echoes`` record per click (topic, key,
    value), carrying the click's Kafka timestamp as ``source_kafka_ts`` for the latency probe."""
    from pyspark.sql import functions as F

    value = F.col("value").cast("string")
    return raw.select(
        F.lit(TOY_TOPIC.name).alias("topic"),
        F.col("key").cast("string").alias("key"),
        F.to_json(
            F.struct(
                F.lit("echo").alias("record_type"),
                F.get_json_object(value, "$.page_id").alias("page_id"),
                F.date_format("timestamp", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("source_kafka_ts"),
            )
        ).alias("value"),
    )


SPEC = StreamingApp(
    app=TOY,
    description=__doc__,
    build=lambda raw, args, trigger: echo(raw),
    output_mode=lambda trigger: "append",
)

# What the stand-in reports in every progress event: rows in state, the watermark's lag.
STATE_ROWS, WATERMARK_LAG_S = 3, 10.0


def progress(batch: int, now: float) -> dict:
    """A progress event as Spark's listener hands it over (the fields the reporter reads)."""

    def iso(epoch_s: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_s)) + ".000Z"

    return {
        "batchId": batch,
        "timestamp": iso(now),
        "numInputRows": 0,
        "batchDuration": 1,
        "stateOperators": [{"numRowsTotal": STATE_ROWS, "memoryUsedBytes": 1000}],
        "eventTime": {"watermark": iso(now - WATERMARK_LAG_S)},
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(SPEC, argv)
    settings = load_settings()
    name = args.query_name
    stop = GracefulStop(marker=stop_marker(settings, name), deadline_s=args.stop_after_s)
    stop.install()
    reporter = StatusReporter(settings, name, args.trigger, probe_every_s=0, spec=TOY)
    reporter.extra.update(knob_values(SPEC, args), argv=sys.argv[1:])
    reporter.final("starting")
    print(f"[{name}] running: trigger={args.trigger} {knob_values(SPEC, args)}", flush=True)
    batch = 0
    while not stop.should_stop():
        reporter.update(progress(batch, time.time()))
        batch += 1
        time.sleep(0.1)
    reporter.final("stopped")
    stop.marker.unlink(missing_ok=True)
    print(f"[{name}] stopped ({stop.reason})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
