"""Unit tests of click-surge detection (``spark_apps/ops/click_surge.py``) on batch DataFrames.

``transform_detect`` is the same code the streaming query runs; on a batch DataFrame it has no
watermark, so every click of the input is in its window's final count. Each case is a few inline
Kafka records (the Kafka source's columns), and the expected rows are written out by hand.

All times are on 2026-11-21, UTC: ``ts("10:00:04.999")`` is ``"2026-11-21T10:00:04.999Z"``, the
way the app writes timestamps.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

import pytest
from pyspark.sql import Row, functions as F, types as T
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from spark_apps.common.streaming.runner import parse_args
from spark_apps.common.streaming.triggers import (
    DEFAULT_RTM_INTERVAL,
    TaskSlotsError,
    TriggerConfig,
    check_task_slots,
)
from spark_apps.ops.click_surge import (
    DEFAULT_THRESHOLD,
    SPEC,
    main,
    transform_detect,
)

APP = registry.app("click_surge")
CLICKS, SURGES, DLQ = APP.inputs[0], APP.outputs[0], APP.dlq

# The columns of Spark's Kafka source.
KAFKA_SCHEMA = T.StructType(
    [
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
    ]
)

# One output row of each kind: the Kafka key, then the fields of the JSON value.
SURGE_FIELDS = registry.topic(SURGES).schema.names
DLQ_FIELDS = registry.topic(DLQ).schema.names
Surge = Row("key", *SURGE_FIELDS)
Reject = Row("key", *DLQ_FIELDS)


def ts(hms: str) -> str:
    return f"2026-11-21T{hms}Z"


def click(click_id: str, page: str, event_time: str, user: str = "user-1") -> bytes:
    return json.dumps(
        {"click_id": click_id, "page_id": page, "event_time": ts(event_time), "user_id": user}
    ).encode()


def record(value: bytes | None, offset: int, kafka_ts: str, partition: int = 0) -> tuple:
    """A Kafka record of ``page_clicks`` (Kafka timestamp ``kafka_ts``, an "hh:mm:ss.fff")."""
    when = datetime.fromisoformat(ts(kafka_ts).replace("Z", "+00:00"))
    return (b"key", value, CLICKS, partition, offset, when, 0)


def detect(spark, records: list[tuple], threshold: int, value_type: str = "binary"):
    raw = spark.createDataFrame(records, KAFKA_SCHEMA)
    if value_type == "string":
        raw = raw.withColumn("value", F.col("value").cast("string"))
    return transform_detect(raw, threshold)


def surges(out) -> list[Row]:
    rows = out.where(F.col("topic") == SURGES).collect()
    return [Surge(r.key, *(json.loads(r.value)[n] for n in SURGE_FIELDS)) for r in rows]


def rejects(out) -> list[Row]:
    rows = out.where(F.col("topic") == DLQ).collect()
    return [Reject(r.key, *(json.loads(r.value)[n] for n in DLQ_FIELDS)) for r in rows]


def topics(out) -> set[str]:
    return {r.topic for r in out.select("topic").distinct().collect()}


# -- counting ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value_type", ["binary", "string"])
def test_counts_clicks_per_page_and_5_second_window(spark, value_type):
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:00.000"), 0, "10:00:00.010"),
            record(click("c2", "home", "10:00:03.500"), 1, "10:00:03.510"),
            record(click("c3", "news", "10:00:01.000"), 0, "10:00:01.005", partition=1),
            record(click("c4", "home", "10:00:07.000"), 2, "10:00:07.004"),
        ],
        threshold=0,
        value_type=value_type,
    )

    assertDataFrameEqual(
        surges(out),
        [
            Surge(
                f"home|{ts('10:00:00.000')}",
                "home",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                2,
                ts("10:00:03.500"),
                ts("10:00:03.510"),
            ),
            Surge(
                f"news|{ts('10:00:00.000')}",
                "news",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                1,
                ts("10:00:01.000"),
                ts("10:00:01.005"),
            ),
            Surge(
                f"home|{ts('10:00:05.000')}",
                "home",
                ts("10:00:05.000"),
                ts("10:00:10.000"),
                1,
                ts("10:00:07.000"),
                ts("10:00:07.004"),
            ),
        ],
    )
    assert topics(out) == {SURGES}


def test_a_click_at_a_window_end_belongs_to_the_next_window(spark):
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:04.999"), 0, "10:00:05.001"),
            record(click("c2", "home", "10:00:05.000"), 1, "10:00:05.002"),
            record(click("c3", "home", "10:00:09.999"), 2, "10:00:10.003"),
        ],
        threshold=0,
    )

    assertDataFrameEqual(
        surges(out),
        [
            Surge(
                f"home|{ts('10:00:00.000')}",
                "home",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                1,
                ts("10:00:04.999"),
                ts("10:00:05.001"),
            ),
            Surge(
                f"home|{ts('10:00:05.000')}",
                "home",
                ts("10:00:05.000"),
                ts("10:00:10.000"),
                2,
                ts("10:00:09.999"),
                ts("10:00:10.003"),
            ),
        ],
    )


def test_threshold_is_strictly_greater_than(spark):
    records = [
        record(click(f"h{i}", "home", f"10:00:0{i}.000"), i, f"10:00:0{i}.001") for i in range(3)
    ]
    records += [
        record(click(f"n{i}", "news", f"10:00:0{i}.500"), i, f"10:00:0{i}.501", 1) for i in range(4)
    ]

    # home has 3 clicks: equal to the threshold is not a surge.
    assertDataFrameEqual(
        surges(detect(spark, records, threshold=3)),
        [
            Surge(
                f"news|{ts('10:00:00.000')}",
                "news",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                4,
                ts("10:00:03.500"),
                ts("10:00:03.501"),
            ),
        ],
    )
    assert detect(spark, records, threshold=4).count() == 0


def test_every_valid_click_record_is_counted_duplicates_included(spark):
    """Clicks are counted per Kafka record: a click delivered twice (two offsets) counts twice.
    The app does not deduplicate clicks by ``click_id``."""
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:01.000"), 0, "10:00:01.001"),
            record(click("c1", "home", "10:00:01.000"), 1, "10:00:01.002"),
        ],
        threshold=1,
    )

    assertDataFrameEqual(
        surges(out),
        [
            Surge(
                f"home|{ts('10:00:00.000')}",
                "home",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                2,
                ts("10:00:01.000"),
                ts("10:00:01.002"),
            ),
        ],
    )


def test_source_kafka_ts_is_the_newest_kafka_timestamp_of_the_clicks_counted(spark):
    out = detect(
        spark,
        [
            # Delivered late: the oldest event time has the newest Kafka timestamp of the window.
            record(click("c1", "home", "10:00:01.000"), 0, "10:00:09.000"),
            record(click("c2", "home", "10:00:03.000"), 1, "10:00:03.100"),
            # Newer Kafka timestamps of records not counted in home's window.
            record(click("c3", "news", "10:00:02.000"), 0, "10:00:30.000", partition=1),
            record(click("c4", "home", "10:00:05.000"), 2, "10:00:20.000"),
            record(b'{"click_id":"c5"', 3, "10:00:40.000"),
        ],
        threshold=1,
    )

    assertDataFrameEqual(
        surges(out),
        [
            Surge(
                f"home|{ts('10:00:00.000')}",
                "home",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                2,
                ts("10:00:03.000"),
                ts("10:00:09.000"),
            ),
        ],
    )


def test_key_and_value_hold_exactly_the_registrys_fields(spark):
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:01.250"), 0, "10:00:01.300"),
            record(b"not json", 1, "10:00:02.000", partition=3),
        ],
        threshold=0,
    )
    rows = {r.topic: r for r in out.collect()}

    assert rows[SURGES].key == "home|2026-11-21T10:00:00.000Z"
    assert rows[SURGES].value == (
        '{"page_id":"home","window_start":"2026-11-21T10:00:00.000Z",'
        '"window_end":"2026-11-21T10:00:05.000Z","click_count":1,'
        '"max_event_time":"2026-11-21T10:00:01.250Z",'
        '"source_kafka_ts":"2026-11-21T10:00:01.300Z"}'
    )
    assert list(json.loads(rows[SURGES].value)) == SURGE_FIELDS
    assert rows[DLQ].key == CLICKS
    assert list(json.loads(rows[DLQ].value)) == DLQ_FIELDS


# -- rejected clicks -----------------------------------------------------------------------------


def test_malformed_clicks_go_to_the_dlq_with_reason_and_coordinates_and_are_not_counted(spark):
    truncated = b'{"click_id":"c3","page_id":"home"'
    no_page = json.dumps(
        {"click_id": "c4", "event_time": ts("10:00:01.000"), "user_id": "u"}
    ).encode()
    bad_time = json.dumps(
        {"click_id": "c5", "page_id": "home", "event_time": "yesterday", "user_id": "u"}
    ).encode()
    numeric_page = json.dumps(
        {"click_id": "c6", "page_id": 42, "event_time": ts("10:00:02.000"), "user_id": "u"}
    ).encode()
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:01.000"), 0, "10:00:01.001"),
            record(click("c2", "home", "10:00:02.000"), 1, "10:00:02.001"),
            record(truncated, 5, "10:00:02.100", partition=1),
            record(no_page, 7, "10:00:02.200", partition=2),
            record(bad_time, 9, "10:00:02.300", partition=3),
            record(numeric_page, 2, "10:00:02.400"),
            record(None, 3, "10:00:02.500"),  # a tombstone: no value at all
        ],
        threshold=1,
    )

    # Only the two valid clicks count; "home" with a bad event time is not a third.
    assertDataFrameEqual(
        surges(out),
        [
            Surge(
                f"home|{ts('10:00:00.000')}",
                "home",
                ts("10:00:00.000"),
                ts("10:00:05.000"),
                2,
                ts("10:00:02.000"),
                ts("10:00:02.001"),
            ),
        ],
    )
    assertDataFrameEqual(
        rejects(out),
        [
            Reject(CLICKS, truncated.decode(), "invalid_json", CLICKS, 1, 5, ts("10:00:02.100")),
            Reject(
                CLICKS, no_page.decode(), "missing_field:page_id", CLICKS, 2, 7, ts("10:00:02.200")
            ),
            Reject(
                CLICKS, bad_time.decode(), "wrong_type:event_time", CLICKS, 3, 9, ts("10:00:02.300")
            ),
            Reject(
                CLICKS,
                numeric_page.decode(),
                "wrong_type:page_id",
                CLICKS,
                0,
                2,
                ts("10:00:02.400"),
            ),
            Reject(CLICKS, None, "invalid_json", CLICKS, 0, 3, ts("10:00:02.500")),
        ],
    )


def test_a_click_from_the_future_is_rejected_not_counted(spark):
    # An event time more than an hour after the record's Kafka timestamp is a broken clock (or
    # milliseconds read as seconds): counted, it would move the watermark ahead and make every
    # later click late. Up to an hour ahead is a clock a little fast, and counts.
    ahead = click("c2", "home", "11:00:02.001")
    out = detect(
        spark,
        [
            record(click("c1", "home", "10:00:01.000"), 0, "10:00:01.001"),
            record(ahead, 1, "10:00:02.000"),
            record(click("c3", "shop", "11:00:02.000"), 2, "10:00:02.000"),
        ],
        threshold=0,
    )

    assert sorted((s[1], s[4]) for s in surges(out)) == [("home", 1), ("shop", 1)]
    assertDataFrameEqual(
        rejects(out),
        [
            Reject(
                CLICKS, ahead.decode(), "invalid_value:event_time", CLICKS, 0, 1, ts("10:00:02.000")
            ),
        ],
    )


def test_rejects_are_emitted_whatever_the_threshold(spark):
    out = detect(
        spark,
        [record(b"[1, 2]", 0, "10:00:00.000"), record(b"[1, 2]", 1, "10:00:00.000")],
        threshold=DEFAULT_THRESHOLD,
    )

    assertDataFrameEqual(
        rejects(out),
        [
            Reject(CLICKS, "[1, 2]", "invalid_json", CLICKS, 0, 0, ts("10:00:00.000")),
            Reject(CLICKS, "[1, 2]", "invalid_json", CLICKS, 0, 1, ts("10:00:00.000")),
        ],
    )
    assert topics(out) == {DLQ}


# -- task slots and arguments --------------------------------------------------------------------


@pytest.mark.parametrize(
    "master, shuffle",
    [
        ("local[8]", 4),
        ("local[6]", 2),
        ("local[9]", 4),
        ("spark://spark-ops-master:7077", 64),
    ],
)
def test_check_task_slots_passes_when_every_task_fits(settings, master, shuffle):
    check_task_slots(
        settings.with_overrides(spark_master_ops=master, shuffle_partitions=shuffle), APP
    )


@pytest.mark.parametrize(
    "master, shuffle, slots, needed",
    [
        ("local[7]", 4, 7, 8),
        ("local[4]", 2, 4, 6),
        ("local", 1, 1, 5),
    ],
)
def test_check_task_slots_names_the_setting_when_local_master_is_too_small(
    settings, master, shuffle, slots, needed
):
    with pytest.raises(TaskSlotsError) as err:
        check_task_slots(
            settings.with_overrides(spark_master_ops=master, shuffle_partitions=shuffle), APP
        )
    message = str(err.value)
    assert f"ADLAKE_SPARK_MASTER_OPS={master} has {slots}" in message
    assert f"needs {needed} task slots" in message
    assert "ADLAKE_SHUFFLE_PARTITIONS" in message


@pytest.mark.parametrize("cores, fits", [(2, False), (16, True)])
def test_check_task_slots_counts_local_star_as_the_machines_cores(
    settings, monkeypatch, cores, fits
):
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    local_star = settings.with_overrides(spark_master_ops="local[*]", shuffle_partitions=4)
    if fits:
        check_task_slots(local_star, APP)
    else:
        with pytest.raises(TaskSlotsError, match=r"ADLAKE_SPARK_MASTER_OPS=local\[\*\] has 2"):
            check_task_slots(local_star, APP)


def test_check_task_slots_counts_every_input_topic_of_the_app(settings):
    # attribution reads three topics of 4 partitions each: 12 source tasks + 4 shuffle tasks
    attribution = registry.app("attribution")
    fits = settings.with_overrides(spark_master_ops="local[16]", shuffle_partitions=4)
    check_task_slots(fits, attribution)
    with pytest.raises(TaskSlotsError, match=r"needs 16 task slots for attribution \(12 source"):
        check_task_slots(
            settings.with_overrides(spark_master_ops="local[15]", shuffle_partitions=4), attribution
        )


def test_arguments_default_to_real_time_mode_and_the_default_threshold():
    args = parse_args(SPEC, [])
    assert (args.trigger, args.threshold, args.trigger_interval) == (
        "realtime",
        DEFAULT_THRESHOLD,
        None,
    )
    assert parse_args(SPEC, ["--threshold", "0", "--trigger", "processing_time"]).threshold == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--threshold", "-1"], "--threshold: -1 is out of range: allowed integers from 0 to"),
        (["--threshold", "10000001"], "--threshold: 10000001 is out of range"),
        (["--threshold", "many"], "invalid int value: 'many'"),
        (["--trigger", "continuous"], "invalid choice: 'continuous'"),
    ],
)
def test_invalid_arguments_are_rejected_before_anything_starts(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "mode, interval, expected",
    [
        ("realtime", None, {"realTime": DEFAULT_RTM_INTERVAL}),
        ("realtime", "10 seconds", {"realTime": "10 seconds"}),
        ("processing_time", None, {"processingTime": "0 seconds"}),
        ("available_now", None, {"availableNow": True}),
    ],
)
def test_trigger_config_defaults_are_the_documented_ones(mode, interval, expected):
    # TriggerConfig's fallback; an app started without --trigger-interval gets its own
    # (App.rtm_interval_s, the runner passes it)
    assert DEFAULT_RTM_INTERVAL == "30 seconds"
    assert TriggerConfig(mode, interval).kwargs() == expected


def test_trigger_config_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="allowed values are realtime, processing_time"):
        TriggerConfig("continuous")


def test_the_query_and_its_status_share_the_registry_entrys_watermark_delay():
    """The query's watermark is the delay the registry entry declares (App.state), which
    adlake.latency (no PySpark) reads to say when windows close."""
    from adlake.latency import waiting_in_state
    from spark_apps.ops.click_surge import APP, WATERMARK

    assert WATERMARK == "5 seconds" == f"{APP.state.delay:g} seconds"
    closes = waiting_in_state(APP.name, 1, "2026-11-22T10:00:00.000Z", {})["closes_at"]
    assert closes == "2026-11-22T10:00:10.000Z"  # the 5-second window + the 5-second delay


def test_check_task_slots_counts_the_configured_topic_partitions(settings):
    # ADLAKE_TOPIC_PARTITIONS=2: attribution reads 3 topics of 2 partitions, + 2 shuffle tasks
    attribution = registry.app("attribution")
    two = settings.with_overrides(topic_partitions=2, shuffle_partitions=2)
    check_task_slots(two.with_overrides(spark_master_ops="local[8]"), attribution)
    check_task_slots(two.with_overrides(spark_master_ops="local[4]"), APP)
    with pytest.raises(TaskSlotsError) as err:
        check_task_slots(two.with_overrides(spark_master_ops="local[7]"), attribution)
    message = str(err.value)
    assert "needs 8 task slots for attribution (6 source partitions + 2 shuffle" in message
    assert "ADLAKE_SPARK_MASTER_OPS=local[7] has 7" in message
    assert "ADLAKE_TOPIC_PARTITIONS or ADLAKE_SHUFFLE_PARTITIONS" in message
