"""Unit tests of the analytical chain's transforms on small inline batch DataFrames.

Every function tested here is DataFrame in, DataFrame out; no broker, no Delta table:

* bronze: ``transform_bronze`` (Kafka source rows → the registry's bronze columns);
* silver: ``transform_validate`` (bronze rows → typed silver rows and quarantine rows with the
  reason they failed, see ``adlake/rules.py``), ``transform_dedup_batch`` (the earliest Kafka
  record of each event: id and event date) and ``transform_supersede`` (which of those change
  silver, given the rows it holds);
* gold (each in its table's module of ``adlake.catalog.gold``): ``transform_campaign_delivery``,
  ``transform_attribution_funnel``, ``transform_page_traffic``, ``transform_surge_history`` and
  ``transform_reconciliation``, with the attribution contract's default window.

Inputs carry the registry's schemas (Kafka source, bronze, silver). Expected rows are written out
by hand, never computed with the code under test, and compared as DataFrames of the registry's
output schema, so a wrong column name, order or type fails as surely as a wrong value.

All times are UTC (the session's time zone): ``at("10:00:05.250")`` is 2026-11-21T10:00:05.250Z,
``at("00:00:01", day=22)`` the next day.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime

from pyspark.sql import functions as F, types as T
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from adlake.catalog.gold.attribution_funnel import transform_attribution_funnel
from adlake.catalog.gold.attribution_reconciliation import transform_reconciliation
from adlake.catalog.gold.campaign_delivery import transform_campaign_delivery
from adlake.catalog.gold.page_traffic import transform_page_traffic
from adlake.catalog.gold.surge_history import transform_surge_history
from spark_apps.common.attribution.contract import AttributionConfig
from spark_apps.lake.bronze import transform_bronze
from spark_apps.lake.silver import transform_dedup_batch, transform_supersede, transform_validate

# The columns of Spark's Kafka source with ``includeHeaders``.
KAFKA_SCHEMA = T.StructType(
    [
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField(
            "headers",
            T.ArrayType(
                T.StructType(
                    [T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]
                )
            ),
        ),
    ]
)
MISSING = object()  # a payload field left out of the JSON


def at(hms: str, day: int = 21) -> datetime:
    """2026-11-``day`` at ``hms`` ("hh:mm:ss" or "hh:mm:ss.fff"), UTC."""
    return datetime.fromisoformat(f"2026-11-{day:02d}T{hms}+00:00")


def iso(hms: str, day: int = 21) -> str:
    """The same instant as the apps write it in JSON: "2026-11-21T10:00:05.250Z"."""
    return f"2026-11-{day:02d}T{hms}Z"


def d(day: int) -> date:
    return date(2026, 11, day)


def schema_of(table: str) -> T.StructType:
    return registry.table(table).schema.spark()


def frame(spark, table: str, rows: list[tuple]):
    """A DataFrame of registry table ``table``'s schema, from positional rows."""
    return spark.createDataFrame(rows, schema_of(table))


def silver(spark, topic: str, rows: list[dict]):
    """Silver rows of ``topic`` from dicts: unnamed columns are null, ``event_date`` defaults to
    the date of the topic's event-time field and ``topic`` to the topic."""
    table = f"silver_{topic}"
    names = schema_of(table).names
    time_field = registry.silver_time_field(topic)
    full = []
    for row in rows:
        row = {"topic": topic, "partition": 0, "offset": 0, **row}
        row.setdefault("event_date", row[time_field].date())
        row.setdefault("kafka_timestamp", row[time_field])
        full.append(tuple(row.get(n) for n in names))
    return spark.createDataFrame(full, schema_of(table))


def payload(defaults: dict, **fields) -> str:
    """``defaults`` with ``fields`` replaced (``MISSING`` drops one) as a JSON text."""
    merged = {**defaults, **fields}
    return json.dumps({k: v for k, v in merged.items() if v is not MISSING})


def bronze_rows(spark, topic: str, records: list[tuple]):
    """Bronze rows of ``topic``: ``(value, partition, offset, kafka_ts, ingest_date)`` each."""
    return frame(
        spark,
        f"bronze_{topic}",
        [
            (
                "k",
                value,
                None,
                topic,
                partition,
                offset,
                kafka_ts,
                at("12:00:00", ingest_day.day),
                ingest_day,
            )
            for value, partition, offset, kafka_ts, ingest_day in records
        ],
    )


# -- bronze --------------------------------------------------------------------------------------


def kafka_frame(spark):
    return spark.createDataFrame(
        [
            (
                b"req-1",
                b'{"request_id":"req-1"}',
                "ad_requests",
                2,
                41,
                at("10:00:00.125"),
                0,
                [("trace", b"abc"), ("source", b"gen")],
            ),
            (None, b'{"request_id":"req-2"}', "ad_requests", 0, 7, at("23:59:59.999"), 0, None),
            (b"req-3", None, "ad_requests", 3, 0, at("00:00:00", day=22), 1, [("empty", None)]),
        ],
        KAFKA_SCHEMA,
    )


def test_bronze_keeps_each_kafka_record_as_text_with_its_coordinates(spark):
    out = transform_bronze(kafka_frame(spark))

    expected = spark.createDataFrame(
        [
            (
                "req-1",
                '{"request_id":"req-1"}',
                '[{"key":"trace","value":"YWJj"},{"key":"source","value":"Z2Vu"}]',  # base64 bytes
                "ad_requests",
                2,
                41,
                at("10:00:00.125"),
            ),
            (None, '{"request_id":"req-2"}', None, "ad_requests", 0, 7, at("23:59:59.999")),
            ("req-3", None, '[{"key":"empty"}]', "ad_requests", 3, 0, at("00:00:00", day=22)),
        ],
        "key string, value string, headers_json string, topic string, partition int, "
        "offset long, kafka_timestamp timestamp",
    )
    assertDataFrameEqual(out.drop("ingest_time", "ingest_date"), expected)


def test_bronze_columns_are_the_registrys_bronze_schema(spark):
    out = transform_bronze(kafka_frame(spark))

    assert [(f.name, f.dataType) for f in out.schema.fields] == [
        (f.name, f.dataType) for f in schema_of("bronze_ad_requests").fields
    ]


def test_bronze_ingest_time_is_now_and_ingest_date_its_date(spark):
    before_ms = int(time.time() * 1000)
    rows = (
        transform_bronze(kafka_frame(spark))
        .select(
            F.unix_millis("ingest_time").alias("ms"),
            F.date_format("ingest_time", "yyyy-MM-dd").alias("time_day"),
            F.col("ingest_date").cast("string").alias("date"),
        )
        .collect()
    )
    after_ms = int(time.time() * 1000)

    assert len(rows) == 3
    assert len({r.ms for r in rows}) == 1, "one ingestion time per batch"
    assert before_ms - 1000 <= rows[0].ms <= after_ms + 1000
    # The UTC date of the ingestion time, whatever the records' Kafka timestamps (21st, 22nd).
    assert all(r.date == r.time_day for r in rows)
    utc_day = datetime.fromtimestamp(rows[0].ms / 1000, UTC).date()
    assert rows[0].date == utc_day.isoformat()


# -- silver: validation --------------------------------------------------------------------------

CALLBACK = {
    "callback_id": "cb-ok",
    "impression_id": "imp-1",
    "request_id": "req-1",
    "event_type": "click",
    "event_time": iso("10:00:00.250"),
    "value": 1.5,
}


def test_valid_callbacks_become_typed_silver_rows(spark):
    bronze = bronze_rows(
        spark,
        "ad_callbacks",
        [
            (payload(CALLBACK), 0, 10, at("10:00:01"), d(21)),
            (
                payload(
                    CALLBACK,
                    callback_id="cb-2",
                    event_type="conversion",
                    value=0,
                    event_time=iso("23:59:59.999"),
                ),
                1,
                11,
                at("23:59:59.999"),
                d(21),
            ),
            (
                payload(
                    CALLBACK,
                    callback_id="cb-3",
                    event_type="complete",
                    value=MISSING,
                    event_time=iso("00:00:00.000", day=22),
                ),
                2,
                12,
                at("00:00:00.5", day=22),
                d(22),
            ),
            (
                payload(
                    CALLBACK, callback_id="cb-4", event_type="midpoint", value=None, note="extra"
                ),
                3,
                13,
                at("10:00:02"),
                d(21),
            ),
            (
                payload(CALLBACK, callback_id="cb-5", event_type="first_quartile", value=7),
                0,
                14,
                at("10:00:03"),
                d(21),
            ),
        ],
    )

    valid, quarantine = transform_validate(bronze, "ad_callbacks")

    assertDataFrameEqual(
        valid,
        frame(
            spark,
            "silver_ad_callbacks",
            [
                (
                    "cb-ok",
                    "imp-1",
                    "req-1",
                    "click",
                    at("10:00:00.250"),
                    1.5,
                    "ad_callbacks",
                    0,
                    10,
                    at("10:00:01"),
                    d(21),
                ),
                (
                    "cb-2",
                    "imp-1",
                    "req-1",
                    "conversion",
                    at("23:59:59.999"),
                    0.0,
                    "ad_callbacks",
                    1,
                    11,
                    at("23:59:59.999"),
                    d(21),
                ),
                (
                    "cb-3",
                    "imp-1",
                    "req-1",
                    "complete",
                    at("00:00:00", day=22),
                    None,
                    "ad_callbacks",
                    2,
                    12,
                    at("00:00:00.5", day=22),
                    d(22),
                ),
                (
                    "cb-4",
                    "imp-1",
                    "req-1",
                    "midpoint",
                    at("10:00:00.250"),
                    None,
                    "ad_callbacks",
                    3,
                    13,
                    at("10:00:02"),
                    d(21),
                ),
                (
                    "cb-5",
                    "imp-1",
                    "req-1",
                    "first_quartile",
                    at("10:00:00.250"),
                    7.0,
                    "ad_callbacks",
                    0,
                    14,
                    at("10:00:03"),
                    d(21),
                ),
            ],
        ),
    )
    assert quarantine.count() == 0


def test_failing_callbacks_are_quarantined_with_the_reason_raw_value_and_coordinates(spark):
    bad = [
        (payload(CALLBACK, callback_id=MISSING), "missing_field:callback_id"),
        (payload(CALLBACK, event_type=None), "missing_field:event_type"),
        (payload(CALLBACK, value="1.5"), "wrong_type:value"),
        (payload(CALLBACK, event_time="21/11/2026 10:00"), "wrong_type:event_time"),
        (payload(CALLBACK, event_time=1795255200000), "wrong_type:event_time"),
        (payload(CALLBACK, event_time="2026-11-21"), "wrong_type:event_time"),  # no time of day
        (payload(CALLBACK, impression_id=17), "wrong_type:impression_id"),
        (payload(CALLBACK, event_type="hover"), "invalid_value:event_type"),
        (payload(CALLBACK, event_type="Click"), "invalid_value:event_type"),  # case matters
        (payload(CALLBACK, value=-0.5), "invalid_value:value"),
        ('{"callback_id":"cb-9","event_type":"click"', "invalid_json"),
        # Spark's JSON parsers stop after one object: the rest of the text must be checked.
        (payload(CALLBACK) + " xyz", "invalid_json"),
        (payload(CALLBACK) + payload(CALLBACK, callback_id="cb-10"), "invalid_json"),
        ('["cb-9", "click"]', "invalid_json"),
        ('"cb-9"', "invalid_json"),
        (None, "invalid_json"),  # a tombstone
    ]
    records = [
        (payload(CALLBACK), 0, 0, at("10:00:01"), d(21)),
        # One object with whitespace around it is valid.
        (" " + payload(CALLBACK, callback_id="cb-ws") + "\n", 0, 1, at("10:00:01"), d(21)),
    ]
    records += [
        (value, 1 + i % 2, 100 + i, at(f"10:00:{10 + i:02d}"), d(21 + i % 2))
        for i, (value, _reason) in enumerate(bad)
    ]

    valid, quarantine = transform_validate(
        bronze_rows(spark, "ad_callbacks", records), "ad_callbacks"
    )

    assert sorted(r.callback_id for r in valid.collect()) == ["cb-ok", "cb-ws"]
    assertDataFrameEqual(
        quarantine,
        frame(
            spark,
            "quarantine",
            [
                (
                    "silver_ad_callbacks",
                    reason,
                    value,
                    "ad_callbacks",
                    1 + i % 2,
                    100 + i,
                    at(f"10:00:{10 + i:02d}"),
                    d(21 + i % 2),
                )
                for i, (value, reason) in enumerate(bad)
            ],
        ),
    )


def test_event_times_must_be_plausible_against_the_records_kafka_timestamp(spark):
    # Up to an hour after the record reached Kafka (a producer clock a little fast) and from
    # 2000 on; an epoch-0 default or a century ahead is quarantined, not partitioned under it.
    cases = [
        (iso("11:00:00.000"), None),
        (iso("11:00:00.001"), "invalid_value:event_time"),
        ("2000-01-01T00:00:00.000Z", None),
        ("1999-12-31T23:59:59.999Z", "invalid_value:event_time"),
        ("1970-01-01T00:00:00.000Z", "invalid_value:event_time"),
        ("2126-11-21T10:00:00.000Z", "invalid_value:event_time"),
    ]
    records = [
        (
            payload(CALLBACK, callback_id=f"cb-{i}", event_time=event_time),
            0,
            i,
            at("10:00:00"),
            d(21),
        )
        for i, (event_time, _rule) in enumerate(cases)
    ]

    valid, quarantine = transform_validate(
        bronze_rows(spark, "ad_callbacks", records), "ad_callbacks"
    )

    assert sorted(r.callback_id for r in valid.collect()) == ["cb-0", "cb-2"]
    assert sorted((r.offset, r.reason) for r in quarantine.collect()) == [
        (i, reason) for i, (_time, reason) in enumerate(cases) if reason
    ]


REQUEST = {
    "request_id": "req-ok",
    "event_time": iso("10:00:00.000"),
    "device_id": "dev-1",
    "household_id": "hh-1",
    "content_id": "show-1",
    "slot_id": "pre",
    "geo": "FR",
    "floor_price": 0.0,
    "bid_count": 0,
}


def test_the_first_failing_rule_in_field_order_is_the_reason(spark):
    records = {
        1: (payload(REQUEST, request_id=MISSING, floor_price=-1.0), "missing_field:request_id"),
        2: (payload(REQUEST, event_time="soon", bid_count=-3), "wrong_type:event_time"),
        3: (payload(REQUEST, floor_price=-0.01, bid_count="3"), "invalid_value:floor_price"),
        4: (payload(REQUEST, geo=MISSING, floor_price="free"), "missing_field:geo"),
        5: (payload(REQUEST, bid_count=-1), "invalid_value:bid_count"),
        6: (payload(REQUEST, bid_count=2.5), "wrong_type:bid_count"),
        7: (payload(REQUEST, bid_count=3_000_000_000), "wrong_type:bid_count"),  # > int
        8: (payload(REQUEST, floor_price=True), "wrong_type:floor_price"),
        # beyond the double range: would parse as Infinity
        9: (
            payload(REQUEST, floor_price=float("inf")).replace("Infinity", "1e400"),
            "invalid_value:floor_price",
        ),
    }
    bronze = bronze_rows(
        spark,
        "ad_requests",
        [
            (payload(REQUEST, floor_price=2), 0, 0, at("10:00:01"), d(21)),  # valid: 0 bids, 2.0
            *[
                (value, 0, offset, at("10:00:01"), d(21))
                for offset, (value, _rule) in records.items()
            ],
        ],
    )

    valid, quarantine = transform_validate(bronze, "ad_requests")

    assert [(r.request_id, r.floor_price, r.bid_count) for r in valid.collect()] == [
        ("req-ok", 2.0, 0)
    ]
    assert sorted((r.offset, r.reason) for r in quarantine.collect()) == [
        (offset, reason) for offset, (_value, reason) in records.items()
    ]


def test_surge_event_date_is_the_date_of_its_window_start(spark):
    surge = {
        "page_id": "home",
        "window_start": iso("23:59:55.000"),
        "window_end": iso("00:00:00.000", day=22),
        "click_count": 12,
        "max_event_time": iso("23:59:59.990"),
        "source_kafka_ts": iso("00:00:00.020", day=22),
    }
    bronze = bronze_rows(
        spark, "page_surges", [(payload(surge), 1, 5, at("00:00:00.030", day=22), d(22))]
    )

    valid, _ = transform_validate(bronze, "page_surges")

    assertDataFrameEqual(
        valid,
        frame(
            spark,
            "silver_page_surges",
            [
                (
                    "home",
                    at("23:59:55"),
                    at("00:00:00", day=22),
                    12,
                    at("23:59:59.990"),
                    at("00:00:00.020", day=22),
                    "page_surges",
                    1,
                    5,
                    at("00:00:00.030", day=22),
                    d(21),
                )
            ],
        ),
    )


# -- silver: deduplication within a batch --------------------------------------------------------


def click_row(
    click_id: str, partition: int, offset: int, kafka_ts: datetime, page: str = "home"
) -> dict:
    return {
        "click_id": click_id,
        "page_id": page,
        "event_time": at("10:00:00.500"),
        "user_id": "u-1",
        "partition": partition,
        "offset": offset,
        "kafka_timestamp": kafka_ts,
    }


def test_dedup_keeps_the_earliest_kafka_record_of_each_click_id(spark):
    valid = silver(
        spark,
        "page_clicks",
        [
            click_row("c1", 1, 5, at("10:00:02")),
            click_row("c1", 2, 9, at("10:00:01")),
            click_row("c1", 0, 7, at("10:00:01")),
            click_row("c1", 0, 3, at("10:00:01")),  # earliest: timestamp, then partition, offset
            click_row("c2", 1, 6, at("10:00:03"), page="news"),
            click_row("c3", 3, 12, at("10:00:04")),
            click_row("c3", 3, 11, at("10:00:04")),
        ],
    )

    assertDataFrameEqual(
        transform_dedup_batch(valid, "page_clicks"),
        silver(
            spark,
            "page_clicks",
            [
                click_row("c1", 0, 3, at("10:00:01")),
                click_row("c2", 1, 6, at("10:00:03"), page="news"),
                click_row("c3", 3, 11, at("10:00:04")),
            ],
        ),
    )


def test_dedup_uses_the_whole_composite_id(spark):
    def surge(page: str, start: str, count: int, offset: int) -> dict:
        return {
            "page_id": page,
            "window_start": at(start),
            "window_end": at(start),
            "click_count": count,
            "max_event_time": at(start),
            "source_kafka_ts": at(start),
            "offset": offset,
            "kafka_timestamp": at("10:01:00.000").replace(microsecond=offset * 1000),
        }

    valid = silver(
        spark,
        "page_surges",
        [
            surge("home", "10:00:00", 11, 2),
            surge("home", "10:00:00", 11, 1),  # one surge, twice
            surge("home", "10:00:00", 12, 3),  # the same window re-emitted with a higher count
            surge("news", "10:00:00", 11, 4),
            surge("home", "10:00:05", 11, 5),
        ],
    )

    assertDataFrameEqual(
        transform_dedup_batch(valid, "page_surges"),
        silver(
            spark,
            "page_surges",
            [
                surge("home", "10:00:00", 11, 1),
                surge("home", "10:00:00", 12, 3),
                surge("news", "10:00:00", 11, 4),
                surge("home", "10:00:05", 11, 5),
            ],
        ),
    )


def test_dedup_treats_null_id_parts_as_equal(spark):
    def event(record_type: str, request: str, impression: str | None, offset: int) -> dict:
        return {
            "record_type": record_type,
            "request_id": request,
            "impression_id": impression,
            "source_kafka_ts": at("10:05:00"),
            "offset": offset,
            "kafka_timestamp": at("10:05:00").replace(microsecond=offset * 1000),
        }

    valid = silver(
        spark,
        "attributed_events",
        [
            event("request_closed", "req-1", None, 4),
            event("request_closed", "req-1", None, 2),
            event("request_closed", "req-2", None, 3),
            event("attributed_impression", "req-1", "imp-1", 5),
            event("attributed_impression", "req-1", "imp-1", 6),
        ],
    )

    assertDataFrameEqual(
        transform_dedup_batch(valid, "attributed_events"),
        silver(
            spark,
            "attributed_events",
            [
                event("request_closed", "req-1", None, 2),
                event("request_closed", "req-2", None, 3),
                event("attributed_impression", "req-1", "imp-1", 5),
            ],
        ),
    )


def test_dedup_keeps_one_row_per_event_id_and_event_date(spark):
    def click(click_id: str, day: int, offset: int, kafka_ts: datetime) -> dict:
        return {
            "click_id": click_id,
            "page_id": "home",
            "event_time": at("10:00:00", day=day),
            "user_id": "u-1",
            "offset": offset,
            "kafka_timestamp": kafka_ts,
        }

    valid = silver(
        spark,
        "page_clicks",
        [
            click("c1", 21, 1, at("10:00:02")),
            click("c1", 21, 2, at("10:00:01")),  # the earlier record of c1 on the 21st
            click("c1", 22, 3, at("10:00:00")),  # the same id on another date: another event
            click("c2", 22, 4, at("10:00:03", day=22)),
        ],
    )

    assertDataFrameEqual(
        transform_dedup_batch(valid, "page_clicks"),
        silver(
            spark,
            "page_clicks",
            [
                click("c1", 21, 2, at("10:00:01")),
                click("c1", 22, 3, at("10:00:00")),
                click("c2", 22, 4, at("10:00:03", day=22)),
            ],
        ),
    )


def test_supersede_keeps_new_events_and_earlier_records_of_stored_ones(spark):
    def event(
        record_type: str, impression: str | None, partition: int, offset: int, kafka_ts: str
    ) -> dict:
        return {
            "record_type": record_type,
            "request_id": "req-1",
            "impression_id": impression,
            "source_kafka_ts": at("10:05:00"),
            "partition": partition,
            "offset": offset,
            "kafka_timestamp": at(kafka_ts),
        }

    stored = silver(
        spark,
        "attributed_events",
        [
            event("request_closed", None, 0, 10, "10:05:01"),
            event("attributed_impression", "imp-1", 0, 11, "10:05:02"),
            event("attributed_impression", "imp-2", 1, 12, "10:05:02"),
            event("attributed_impression", "imp-3", 1, 13, "10:05:02"),
        ],
    )
    rows = silver(
        spark,
        "attributed_events",
        [
            event("request_closed", None, 0, 10, "10:05:01"),  # the stored record itself: a replay
            event("attributed_impression", "imp-1", 0, 5, "10:05:03"),  # later than the stored one
            event(
                "attributed_impression", "imp-2", 0, 20, "10:05:02"
            ),  # same time, lower partition
            event(
                "attributed_impression", "imp-3", 1, 9, "10:05:02"
            ),  # same partition, lower offset
            event("attributed_impression", "imp-4", 2, 1, "10:05:09"),  # not stored: new
            event(
                "attributed_impression", None, 2, 2, "10:05:09"
            ),  # null id part: not request_closed
        ],
    )

    assertDataFrameEqual(
        transform_supersede(rows, stored, "attributed_events"),
        silver(
            spark,
            "attributed_events",
            [
                event("attributed_impression", "imp-2", 0, 20, "10:05:02"),
                event("attributed_impression", "imp-3", 1, 9, "10:05:02"),
                event("attributed_impression", "imp-4", 2, 1, "10:05:09"),
                event("attributed_impression", None, 2, 2, "10:05:09"),
            ],
        ),
    )


# -- gold ----------------------------------------------------------------------------------------

# The contract's defaults: a callback belongs to an impression from 10 s before it to 5 min after.
CONFIG = AttributionConfig()


def impression(imp: str, req: str, campaign: str, creative: str, when: datetime) -> dict:
    return {
        "impression_id": imp,
        "request_id": req,
        "campaign_id": campaign,
        "creative_id": creative,
        "event_time": when,
        "device_id": "dev",
        "win_price": 1.0,
    }


def callback(cb: str, imp: str, event_type: str, when: datetime) -> dict:
    return {
        "callback_id": cb,
        "impression_id": imp,
        "request_id": "req",
        "event_type": event_type,
        "event_time": when,
    }


def test_campaign_delivery_counts_per_campaign_creative_and_hour_with_rates(spark):
    impressions = silver(
        spark,
        "ad_impressions",
        [
            impression("i1", "r1", "A", "a1", at("10:05:00")),
            impression("i2", "r2", "A", "a1", at("10:58:00")),
            impression("i3", "r3", "A", "a2", at("10:10:00")),
            impression("i4", "r4", "B", "b1", at("23:59:50")),
        ],
    )
    callbacks = silver(
        spark,
        "ad_callbacks",
        [
            callback("c1", "i1", "click", at("10:06:00")),
            callback("c2", "i1", "first_quartile", at("10:06:01")),
            callback("c3", "i1", "midpoint", at("10:06:02")),
            callback("c4", "i1", "third_quartile", at("10:06:03")),
            callback("c5", "i1", "complete", at("10:06:04")),
            callback("c6", "i2", "first_quartile", at("10:59:00")),
            # In the hour of its own event time: an hour with no impression (rates null).
            callback("c7", "i2", "conversion", at("11:01:00")),
            # The next day, for B's impression of 23:59:50.
            callback("c8", "i4", "click", at("00:01:00", day=22)),
            callback("c9", "i4", "click", at("00:02:00", day=22)),
            # No impression of its own: it has no campaign and is not counted.
            callback("c10", "i-unknown", "click", at("10:07:00")),
        ],
    )

    assertDataFrameEqual(
        transform_campaign_delivery(impressions, callbacks, CONFIG),
        frame(
            spark,
            "campaign_delivery",
            [
                # campaign, creative, date, hour, impressions, clicks, first_quartiles, midpoints,
                # third_quartiles, completes, conversions, click_through_rate, completion_rate
                ("A", "a1", d(21), 10, 2, 1, 2, 1, 1, 1, 0, 0.5, 0.5),
                ("A", "a1", d(21), 11, 0, 0, 0, 0, 0, 0, 1, None, None),
                ("A", "a2", d(21), 10, 1, 0, 0, 0, 0, 0, 0, 0.0, 0.0),
                ("B", "b1", d(21), 23, 1, 0, 0, 0, 0, 0, 0, 0.0, 0.0),
                ("B", "b1", d(22), 0, 0, 2, 0, 0, 0, 0, 0, None, None),
            ],
        ),
    )


def test_campaign_delivery_without_callbacks_has_zero_counts_and_zero_rates(spark):
    impressions = silver(
        spark,
        "ad_impressions",
        [
            impression("i1", "r1", "A", "a1", at("10:05:00")),
            impression("i2", "r2", "A", "a1", at("10:59:59.999")),
            impression("i3", "r3", "A", "a1", at("11:00:00")),
        ],
    )

    assertDataFrameEqual(
        transform_campaign_delivery(impressions, silver(spark, "ad_callbacks", []), CONFIG),
        frame(
            spark,
            "campaign_delivery",
            [
                ("A", "a1", d(21), 10, 2, 0, 0, 0, 0, 0, 0, 0.0, 0.0),
                ("A", "a1", d(21), 11, 1, 0, 0, 0, 0, 0, 0, 0.0, 0.0),
            ],
        ),
    )


def test_attribution_funnel_per_campaign_and_day_total(spark):
    requests = silver(
        spark,
        "ad_requests",
        [{"request_id": r, "event_time": at("09:00:00")} for r in ("r1", "r2", "r3", "r4")]
        + [{"request_id": "r9", "event_time": at("09:00:00", day=23)}],
    )
    impressions = silver(
        spark,
        "ad_impressions",
        [
            impression("i1", "r1", "A", "a1", at("09:00:01")),
            impression("i2", "r1", "A", "a1", at("23:59:58")),  # a second impression of r1 for A
            impression("i3", "r2", "B", "b1", at("09:00:03")),
            impression("i4", "r1", "B", "b1", at("09:00:04")),  # r1 filled by both campaigns
        ],
    )
    callbacks = silver(
        spark,
        "ad_callbacks",
        [
            callback("c1", "i1", "click", at("09:01:00")),
            callback("c2", "i1", "conversion", at("09:04:00")),
            callback("c3", "i3", "click", at("09:02:00")),
            callback("c4", "i3", "midpoint", at("09:02:30")),  # neither a click nor a conversion
            callback("c5", "i2", "click", at("00:00:05", day=22)),  # a day with no request
            # An orphan (no impression): in the day's total, in no campaign.
            callback("c6", "i-unknown", "click", at("09:03:00")),
        ],
    )

    assertDataFrameEqual(
        transform_attribution_funnel(requests, impressions, callbacks, CONFIG),
        frame(
            spark,
            "attribution_funnel",
            [
                # campaign, date, requests, filled_requests, impressions, clicks, conversions, fill_rate
                ("A", d(21), None, 1, 2, 1, 1, None),
                ("B", d(21), None, 2, 2, 1, 0, None),
                ("A", d(22), None, 0, 0, 1, 0, None),
                ("*", d(21), 4, 2, 4, 3, 1, 0.5),
                ("*", d(22), 0, 0, 0, 1, 0, None),  # no request: no fill rate
                ("*", d(23), 1, 0, 0, 0, 0, 0.0),  # a request, never filled
            ],
        ),
    )


def test_page_traffic_counts_clicks_and_distinct_users_per_page_and_minute(spark):
    def click(click_id: str, page: str, when: datetime, user: str) -> dict:
        return {"click_id": click_id, "page_id": page, "event_time": when, "user_id": user}

    clicks = silver(
        spark,
        "page_clicks",
        [
            click("c1", "home", at("10:00:00.000"), "u1"),
            click("c2", "home", at("10:00:30.000"), "u2"),
            click("c3", "home", at("10:00:59.999"), "u1"),  # u1 again: 3 clicks, 2 users
            click("c4", "home", at("10:01:00.000"), "u1"),
            click("c5", "news", at("10:00:10.000"), "u1"),
            click("c6", "news", at("23:59:59.999"), "u3"),
            click("c7", "news", at("00:00:00.000", day=22), "u3"),
        ],
    )

    assertDataFrameEqual(
        transform_page_traffic(clicks),
        frame(
            spark,
            "page_traffic",
            [
                ("home", d(21), at("10:00:00"), 3, 2),
                ("home", d(21), at("10:01:00"), 1, 1),
                ("news", d(21), at("10:00:00"), 1, 1),
                ("news", d(21), at("23:59:00"), 1, 1),
                ("news", d(22), at("00:00:00", day=22), 1, 1),
            ],
        ),
    )


def test_surge_history_keeps_the_highest_count_reported_per_window(spark):
    def surge(page: str, start: str, end: str, count: int) -> dict:
        return {
            "page_id": page,
            "window_start": at(start),
            "window_end": at(end),
            "click_count": count,
            "max_event_time": at(start),
            "source_kafka_ts": at(start),
        }

    surges = silver(
        spark,
        "page_surges",
        [
            surge("home", "10:00:00", "10:00:05", 11),
            surge("home", "10:00:00", "10:00:05", 15),
            surge("home", "10:00:00", "10:00:05", 12),  # reported after 15: not the highest
            surge("home", "10:00:05", "10:00:10", 11),
            surge("news", "10:00:00", "10:00:05", 20),
        ],
    )

    assertDataFrameEqual(
        transform_surge_history(surges),
        frame(
            spark,
            "surge_history",
            [
                ("home", d(21), at("10:00:00"), at("10:00:05"), 15),
                ("home", d(21), at("10:00:05"), at("10:00:10"), 11),
                ("news", d(21), at("10:00:00"), at("10:00:05"), 20),
            ],
        ),
    )


def attributed(spark, rows: list[tuple]):
    """attributed_events records: (record_type, request, impression, callback, request_time,
    impression_time, callback_time)."""
    names = (
        "record_type",
        "request_id",
        "impression_id",
        "callback_id",
        "request_time",
        "impression_time",
        "callback_time",
    )
    return silver(
        spark,
        "attributed_events",
        [{**dict(zip(names, row)), "source_kafka_ts": at("12:00:00", day=22)} for row in rows],
    )


def test_reconciliation_counts_matched_missing_and_extra_records_per_date_and_type(spark):
    r1_time, imp_time = at("10:00:00"), at("10:00:01")
    batch = attributed(
        spark,
        [
            ("attributed_impression", "r1", "i1", None, r1_time, imp_time, None),
            ("attributed_callback", "r1", "i1", "c1", r1_time, imp_time, at("10:00:05")),
            ("request_closed", "r1", None, None, r1_time, None, None),
            ("request_closed", "r2", None, None, at("11:00:00"), None, None),
            ("attributed_impression", "r5", "i5", None, at("00:10:00", day=22), imp_time, None),
            # No request: dated by its callback's time.
            ("orphan_callback", "r6", None, "c6", None, None, at("00:20:00", day=22)),
        ],
    )
    realtime = attributed(
        spark,
        [
            ("attributed_impression", "r1", "i1", None, r1_time, imp_time, None),
            ("attributed_callback", "r1", "i1", "c1", r1_time, imp_time, at("10:00:05")),
            ("attributed_callback", "r1", "i1", "c1", r1_time, imp_time, at("10:00:05")),  # twice
            ("request_closed", "r1", None, None, r1_time, None, None),
            ("request_closed", "r7", None, None, at("12:00:00"), None, None),
            ("attributed_impression", "r3", "i3", None, at("13:00:00"), at("13:00:01"), None),
            ("attributed_impression", "r5", "i5", None, at("00:10:00", day=22), imp_time, None),
            # No request: dated by its impression's time.
            ("orphan_impression", "r8", "i8", None, None, at("09:00:00"), None),
        ],
    )

    assertDataFrameEqual(
        transform_reconciliation(batch, realtime),
        frame(
            spark,
            "attribution_reconciliation",
            [
                # date, record_type, matched, missing_in_realtime, extra_in_realtime
                (d(21), "attributed_impression", 1, 0, 1),
                (d(21), "attributed_callback", 1, 0, 0),
                (d(21), "request_closed", 1, 1, 1),  # null impression ids match only their request
                (d(21), "orphan_impression", 0, 0, 1),
                (d(22), "attributed_impression", 1, 0, 0),
                (d(22), "orphan_callback", 0, 1, 0),
            ],
        ),
    )


def test_reconciliation_dates_a_record_by_its_earliest_date_on_either_side(spark):
    """A record both sides hold, with different times, is counted once, on the earlier date."""
    batch = attributed(spark, [("orphan_impression", "r1", "i1", None, None, at("23:59:59"), None)])
    realtime = attributed(
        spark,
        [
            ("orphan_impression", "r1", "i1", None, None, at("00:00:01", day=22), None),
            ("orphan_impression", "r2", "i2", None, None, at("00:00:02", day=22), None),
        ],
    )

    assertDataFrameEqual(
        transform_reconciliation(batch, realtime),
        frame(
            spark,
            "attribution_reconciliation",
            [
                (d(21), "orphan_impression", 1, 0, 0),
                (d(22), "orphan_impression", 0, 0, 1),
            ],
        ),
    )


def test_reconciliation_without_realtime_records_counts_every_batch_record_missing(spark):
    batch = attributed(
        spark,
        [
            ("attributed_impression", "r1", "i1", None, at("10:00:00"), at("10:00:01"), None),
            ("request_closed", "r1", None, None, at("10:00:00"), None, None),
            ("request_closed", "r2", None, None, at("10:00:02"), None, None),
        ],
    )

    assertDataFrameEqual(
        transform_reconciliation(batch, attributed(spark, [])),
        frame(
            spark,
            "attribution_reconciliation",
            [
                (d(21), "attributed_impression", 0, 1, 0),
                (d(21), "request_closed", 0, 2, 0),
            ],
        ),
    )
