"""One test vector for both implementations of the payload rules (``adlake.payload_rules``).

Each :class:`Case` is a Kafka record (topic, raw value bytes, Kafka timestamp) and the reason it
must get, written out by hand. ``tests/include/test_payload_rules.py`` runs them through the pure-Python
:func:`adlake.payload_rules.check_record` (no JVM); ``tests/spark_apps/common/test_parsing.py`` through
Spark's ``parse_json`` and ``parse_json_by_topic`` on the lake runtime, and its ops twin on the
ops runtime. So the generator's tally, silver's quarantine and the DLQs cannot drift apart on
any of these records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

KAFKA_TS_MS = 1_795_255_201_000  # 2026-11-21T10:00:01Z
MISSING = object()  # a field left out of the JSON
# The record limit every case is judged with, passed explicitly to both implementations (so a
# developer's own ADLAKE_MAX_RECORD_BYTES changes nothing here): the configured default, 256 KiB.
MAX_BYTES = 262_144


@dataclass(frozen=True)
class Case:
    name: str
    topic: str
    value: bytes | None
    expected: str | None
    kafka_ts_ms: int | None = KAFKA_TS_MS


def text(defaults: dict, **fields) -> str:
    """``defaults`` with ``fields`` replaced (``MISSING`` drops one), as compact JSON."""
    merged = {**defaults, **fields}
    return json.dumps({k: v for k, v in merged.items() if v is not MISSING}, separators=(",", ":"))


CLICK = {
    "click_id": "c1",
    "page_id": "p1",
    "event_time": "2026-11-21T10:00:00.000Z",
    "user_id": "u1",
}
REQUEST = {
    "request_id": "r1",
    "event_time": "2026-11-21T10:00:00.000Z",
    "device_id": "d1",
    "household_id": "h1",
    "content_id": "s1",
    "slot_id": "pre",
    "geo": "FR",
    "floor_price": 1.5,
    "bid_count": 2,
}
CALLBACK = {
    "callback_id": "cb1",
    "impression_id": "i1",
    "request_id": "r1",
    "event_type": "click",
    "event_time": "2026-11-21T10:00:00.000Z",
    "value": 1.5,
}
ATTRIBUTED = {
    "record_type": "request_closed",
    "request_id": "r1",
    "impressions": 1,
    "filled": True,
    "source_kafka_ts": "2026-11-21T10:00:00.000Z",
}


def click(**fields) -> bytes:
    return text(CLICK, **fields).encode()


def request(**fields) -> bytes:
    return text(REQUEST, **fields).encode()


def callback(**fields) -> bytes:
    return text(CALLBACK, **fields).encode()


def at_time(event_time: str) -> bytes:
    return click(event_time=event_time)


def sized(value: bytes, size: int, filler: str = "u") -> bytes:
    """``value`` (one of the records above, whose ``user_id`` or ``device_id`` is a short
    string) with that string padded with ``filler`` so the whole value is ``size`` bytes long
    (a multi-byte ``filler`` may leave it up to a character short)."""
    field = b'"user_id":"u1"' if b'"user_id":"u1"' in value else b'"device_id":"d1"'
    name = field.split(b":")[0]
    room = size - (len(value) - len(field)) - len(name) - 3  # the string's bytes: ':' and quotes
    text = filler * (room // len(filler.encode()))
    return value.replace(field, name + b':"' + text.encode() + b'"')


OK = click()
CASES: list[Case] = [
    Case("valid", "page_clicks", OK, None),
    Case("an unknown extra field", "page_clicks", click(note={"x": [1, 2]}), None),
    # -- the record limit: bytes, before anything else -------------------------------------------
    Case("exactly the limit", "page_clicks", sized(OK, MAX_BYTES), None),
    Case("one byte over the limit", "page_clicks", sized(OK, MAX_BYTES + 1), "too_large"),
    Case("a request over the limit", "ad_requests", sized(request(), MAX_BYTES + 1), "too_large"),
    Case("a 1 MB string", "ad_callbacks", callback(event_type="x" * (1 << 20)), "too_large"),
    Case(
        "over the limit in bytes, not in characters",
        "page_clicks",
        sized(OK, MAX_BYTES + 2, filler="\u00e9"),
        "too_large",
    ),
    Case(
        "under the limit in bytes", "page_clicks", sized(OK, MAX_BYTES - 1, filler="\u00e9"), None
    ),
    Case("over the limit and not JSON", "page_clicks", b"{" * (MAX_BYTES + 1), "too_large"),
    Case("over the limit and not UTF-8", "page_clicks", b"\xff" * (MAX_BYTES + 1), "too_large"),
    Case("over the limit and no object", "page_clicks", b" " * (MAX_BYTES + 1), "too_large"),
    # -- exactly one JSON object -----------------------------------------------------------------
    Case("trailing text", "page_clicks", OK + b" xyz", "invalid_json"),
    Case("two objects", "page_clicks", OK + OK, "invalid_json"),
    Case("two objects and a comma", "page_clicks", OK + b", " + OK, "invalid_json"),
    Case("an early bracket", "page_clicks", OK + b"] x [", "invalid_json"),
    Case("trailing NUL", "page_clicks", OK + b"\x00", "invalid_json"),
    Case("a trailing comment", "page_clicks", OK + b" // c", "invalid_json"),
    Case("whitespace around", "page_clicks", b" \t\r\n" + OK + b" \n\t ", None),
    Case("a request and trailing text", "ad_requests", request() + b"x", "invalid_json"),
    Case("two callbacks", "ad_callbacks", callback() + callback(), "invalid_json"),
    Case("an array", "page_clicks", b"[" + OK + b"]", "invalid_json"),
    Case("a string", "page_clicks", b'"c1"', "invalid_json"),
    Case("a number", "page_clicks", b"42", "invalid_json"),
    Case("JSON null", "page_clicks", b"null", "invalid_json"),
    Case("empty", "page_clicks", b"", "invalid_json"),
    Case("a tombstone", "page_clicks", None, "invalid_json"),
    Case("truncated", "page_clicks", OK[:-1], "invalid_json"),
    Case("single quotes", "page_clicks", b"{'click_id': 'c1'}", "invalid_json"),
    Case("a duplicate key", "page_clicks", OK[:-1] + b',"click_id":"c2"}', "invalid_json"),
    Case(
        "a nested duplicate key",
        "page_clicks",
        click(note={"a": 1}).replace(b'{"a":1}', b'{"a":1,"a":2}'),
        "invalid_json",
    ),
    Case("NaN", "page_clicks", OK[:-1] + b',"x":NaN}', "invalid_json"),
    Case("a byte order mark", "page_clicks", "\ufeff".encode() + OK, "invalid_json"),
    Case(
        "not UTF-8",
        "page_clicks",
        click(user_id="u\x01").replace(b"\\u0001", b"\xff"),
        "invalid_json",
    ),
    Case(
        "a lone surrogate",
        "page_clicks",
        click(note="\\ud800").replace(b"\\\\", b"\\"),
        "invalid_json",
    ),
    Case("a surrogate pair", "page_clicks", click(user_id="\U0001f600"), None),
    Case(
        "a raw tab in a string",
        "page_clicks",
        click(user_id="u\t1").replace(b"\\t", b"\t"),
        "invalid_json",
    ),
    Case("a leading zero", "page_clicks", OK[:-1] + b',"x":01}', "invalid_json"),
    Case("a 1000-digit integer", "page_clicks", OK[:-1] + b',"x":' + b"9" * 1000 + b"}", None),
    Case(
        "a 1001-digit integer",
        "page_clicks",
        OK[:-1] + b',"x":' + b"9" * 1001 + b"}",
        "invalid_json",
    ),
    # -- required fields and JSON types ----------------------------------------------------------
    Case("missing", "page_clicks", click(click_id=MISSING), "missing_field:click_id"),
    Case("null", "page_clicks", click(page_id=None), "missing_field:page_id"),
    Case("a number for a string", "page_clicks", click(click_id=7), "wrong_type:click_id"),
    Case(
        "an object for a string", "page_clicks", click(page_id={"id": "p1"}), "wrong_type:page_id"
    ),
    Case("a bool for a string", "page_clicks", click(user_id=True), "wrong_type:user_id"),
    Case("int: a fraction", "ad_requests", request(bid_count=2.5), "wrong_type:bid_count"),
    Case("int: 1.0", "ad_requests", request(bid_count=1.0), "wrong_type:bid_count"),
    Case(
        "int: 1e2",
        "ad_requests",
        request().replace(b'"bid_count":2', b'"bid_count":1e2'),
        "wrong_type:bid_count",
    ),
    Case("int: a string", "ad_requests", request(bid_count="3"), "wrong_type:bid_count"),
    Case("int: a bool", "ad_requests", request(bid_count=True), "wrong_type:bid_count"),
    Case("int: the largest", "ad_requests", request(bid_count=2**31 - 1), None),
    Case("int: one more", "ad_requests", request(bid_count=2**31), "wrong_type:bid_count"),
    Case(
        "int: the smallest (negative)",
        "ad_requests",
        request(bid_count=-(2**31)),
        "invalid_value:bid_count",
    ),
    Case("int: one less", "ad_requests", request(bid_count=-(2**31) - 1), "wrong_type:bid_count"),
    Case(
        "int: an object (the next fields still parse)",
        "ad_requests",
        request(bid_count={"request_id": "zz"}),
        "wrong_type:bid_count",
    ),
    Case(
        "long: the largest",
        "attributed_events",
        text(ATTRIBUTED, impressions=2**63 - 1).encode(),
        None,
    ),
    Case(
        "long: one more",
        "attributed_events",
        text(ATTRIBUTED, impressions=2**63).encode(),
        "wrong_type:impressions",
    ),
    Case(
        "boolean: a string",
        "attributed_events",
        text(ATTRIBUTED, filled="yes").encode(),
        "wrong_type:filled",
    ),
    Case(
        "boolean: absent (optional)",
        "attributed_events",
        text(ATTRIBUTED, filled=MISSING, impressions=None).encode(),
        None,
    ),
    Case("double: an integer", "ad_requests", request(floor_price=2), None),
    Case("double: beyond 64 bits", "ad_requests", request(floor_price=2**64), None),
    Case("double: -0.0", "ad_requests", request(floor_price=-0.0), None),
    Case("double: a string", "ad_requests", request(floor_price="free"), "wrong_type:floor_price"),
    Case("double: a bool", "ad_requests", request(floor_price=True), "wrong_type:floor_price"),
    Case(
        "double: 1e400",
        "ad_requests",
        request(floor_price=1.5).replace(b"1.5", b"1e400"),
        "invalid_value:floor_price",
    ),
    Case(
        "double: a 400-digit integer",
        "ad_requests",
        request(floor_price=1.5).replace(b"1.5", b"9" * 400),
        "invalid_value:floor_price",
    ),
    Case(
        "double: negative", "ad_requests", request(floor_price=-0.01), "invalid_value:floor_price"
    ),
    # -- enumerations and optional fields --------------------------------------------------------
    Case(
        "not in the enumeration",
        "ad_callbacks",
        callback(event_type="hover"),
        "invalid_value:event_type",
    ),
    Case("case matters", "ad_callbacks", callback(event_type="Click"), "invalid_value:event_type"),
    Case("optional: null", "ad_callbacks", callback(value=None), None),
    Case("optional: absent", "ad_callbacks", callback(value=MISSING), None),
    Case("optional: wrong type", "ad_callbacks", callback(value="1.5"), "wrong_type:value"),
    Case("optional: negative", "ad_callbacks", callback(value=-1), "invalid_value:value"),
    # -- the first failing check in field order, whatever the JSON's order ----------------------
    Case(
        "missing before a later bad value",
        "ad_requests",
        request(request_id=MISSING, floor_price=-1.0),
        "missing_field:request_id",
    ),
    Case(
        "type before a later bad value",
        "ad_requests",
        request(event_time="soon", bid_count=-3),
        "wrong_type:event_time",
    ),
    Case(
        "value before a later bad type",
        "ad_requests",
        request(floor_price=-0.01, bid_count="3"),
        "invalid_value:floor_price",
    ),
    Case(
        "schema order, not JSON order",
        "ad_requests",
        b'{"bid_count":"x",' + request(geo=MISSING, bid_count=MISSING)[1:],
        "missing_field:geo",
    ),
    # -- timestamps ------------------------------------------------------------------------------
    Case("a space for T", "page_clicks", at_time("2026-11-21 10:00:00"), None),
    Case("an offset", "page_clicks", at_time("2026-11-21T10:30:00+01:00"), None),
    Case("an offset without colon", "page_clicks", at_time("2026-11-21T10:30:00+0100"), None),
    Case("an offset in hours", "page_clicks", at_time("2026-11-21T10:30:00+01"), None),
    Case("offset -00:00", "page_clicks", at_time("2026-11-21T10:00:00-00:00"), None),
    Case("offset +18:00", "page_clicks", at_time("2026-11-21T10:00:00+18:00"), None),
    Case(
        "offset +19:00",
        "page_clicks",
        at_time("2026-11-21T10:00:00+19:00"),
        "wrong_type:event_time",
    ),
    Case(
        "offset +01:60",
        "page_clicks",
        at_time("2026-11-21T10:00:00+01:60"),
        "wrong_type:event_time",
    ),
    Case("9 fraction digits", "page_clicks", at_time("2026-11-21T10:00:00.123456789Z"), None),
    Case(
        "10 fraction digits",
        "page_clicks",
        at_time("2026-11-21T10:00:00.1234567891Z"),
        "wrong_type:event_time",
    ),
    Case("a bare date", "page_clicks", at_time("2026-11-21"), "wrong_type:event_time"),
    Case("no seconds", "page_clicks", at_time("2026-11-21T10:00Z"), "wrong_type:event_time"),
    Case(
        "no seconds, no zone", "page_clicks", at_time("2026-11-21 10:00"), "wrong_type:event_time"
    ),
    Case("February 30th", "page_clicks", at_time("2026-02-30T10:00:00Z"), "wrong_type:event_time"),
    Case("February 29th, leap year", "page_clicks", at_time("2024-02-29T10:00:00Z"), None),
    Case("hour 24", "page_clicks", at_time("2026-11-21T24:00:00Z"), "wrong_type:event_time"),
    Case("second 60", "page_clicks", at_time("2026-11-21T09:59:60Z"), "wrong_type:event_time"),
    Case(
        "a final line break",
        "page_clicks",
        at_time("2026-11-21T10:00:00Z\n"),
        "wrong_type:event_time",
    ),
    Case(
        "a leading space", "page_clicks", at_time(" 2026-11-21T10:00:00Z"), "wrong_type:event_time"
    ),
    Case(
        "a trailing space", "page_clicks", at_time("2026-11-21T10:00:00Z "), "wrong_type:event_time"
    ),
    Case("lower-case z", "page_clicks", at_time("2026-11-21T10:00:00z"), "wrong_type:event_time"),
    Case(
        "a zone name",
        "page_clicks",
        at_time("2026-11-21T10:00:00 Europe/Paris"),
        "wrong_type:event_time",
    ),
    Case(
        "epoch milliseconds",
        "page_clicks",
        click(event_time=1_795_255_200_000),
        "wrong_type:event_time",
    ),
    Case(
        "another date format", "page_clicks", at_time("21/11/2026 10:00"), "wrong_type:event_time"
    ),
    # -- plausible times -------------------------------------------------------------------------
    Case("an hour after Kafka", "page_clicks", at_time("2026-11-21T11:00:01.000Z"), None),
    Case(
        "more than an hour after Kafka",
        "page_clicks",
        at_time("2026-11-21T11:00:01.001Z"),
        "invalid_value:event_time",
    ),
    Case(
        "ahead, with an offset",
        "page_clicks",
        at_time("2026-11-21T12:00:02+01:00"),
        "invalid_value:event_time",
    ),
    Case(
        "far ahead, no Kafka timestamp",
        "page_clicks",
        at_time("2126-11-21T10:00:00Z"),
        None,
        kafka_ts_ms=None,
    ),
    Case("year 2000", "page_clicks", at_time("2000-01-01T00:00:00Z"), None),
    Case(
        "just before 2000",
        "page_clicks",
        at_time("1999-12-31T23:59:59.999999Z"),
        "invalid_value:event_time",
    ),
    Case(
        "2000 by the clock, 1999 in UTC",
        "page_clicks",
        at_time("2000-01-01T00:30:00+01:00"),
        "invalid_value:event_time",
    ),
    Case("year 0", "page_clicks", at_time("0000-01-01T00:00:00Z"), "invalid_value:event_time"),
    Case("epoch 0", "page_clicks", at_time("1970-01-01T00:00:00.000Z"), "invalid_value:event_time"),
    Case("year 9999", "page_clicks", at_time("9999-12-31T23:59:59Z"), "invalid_value:event_time"),
]


def reasons_by_spark(spark, cases: list[Case], by_topic: bool = False) -> dict[str, str | None]:
    """The reason Spark's ``parse_json`` (or ``parse_json_by_topic``) gives each case, by name,
    with the record limit :data:`MAX_BYTES`. The records are Kafka-shaped: a binary value and a
    timestamp column."""
    from pyspark.sql import functions as F

    from adlake import registry
    from spark_apps.common.parsing import REASON, parse_json, parse_json_by_topic

    rows = [(c.name, c.topic, c.value, c.kafka_ts_ms) for c in cases]
    df = (
        spark.createDataFrame(rows, "name string, topic string, value binary, ts_ms long")
        .withColumn("timestamp", F.timestamp_millis("ts_ms"))
        .drop("ts_ms")
    )
    topics = sorted({c.topic for c in cases})
    if by_topic:
        parsed = parse_json_by_topic(
            df, [registry.topic(t) for t in topics], received_col="timestamp", max_bytes=MAX_BYTES
        )
    else:
        parsed = None
        for name in topics:
            one = parse_json(
                df.where(F.col("topic") == name),
                registry.topic(name),
                received_col="timestamp",
                max_bytes=MAX_BYTES,
            ).select("name", REASON)
            parsed = one if parsed is None else parsed.unionByName(one)
    return {r["name"]: r[REASON] for r in parsed.select("name", REASON).collect()}
