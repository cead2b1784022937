"""The bad-input corpus: a seeded generator of hostile Kafka records, each with the reason it
must be rejected with, written down here by hand.

    python -m tests.support.corpus --seed 7 --out tests/corpus/bad_inputs.jsonl.gz

The committed corpus (:data:`DEFAULT_PATH`, gzipped JSON lines) is what this script writes for
:data:`SEED`; ``tests/include/test_corpus.py`` fails when the two drift apart. Each line is one
Kafka record of an input topic::

    {"topic": "ad_requests", "key": "r-000001", "value": "{...}", "kind": "...",
     "expected": "missing_field:geo"}

``value`` is the record's bytes as text when they are UTF-8; bytes that are not are in
``value_b64`` instead (base64), and a Kafka null value (a tombstone) is ``"value": null``.
``expected`` is the reason silver's quarantine and the DLQs must give (null: a valid record).
Every record of one kind has that kind's reason, from :data:`WHOLE_VALUE_KINDS` and
:data:`FIELD_KINDS`: tables written out by hand, never computed by ``adlake.payload_rules`` or Spark.

What the reasons assume:

* the record limit is :data:`MAX_BYTES` (the configured default, 256 KiB);
* every record's Kafka timestamp is at or after :data:`NOT_BEFORE_MS` and before 2100: the valid
  event times are on 2026-11-21 before 11:00, so no later produce time makes them implausible,
  and the implausible ones are before 2000 or after 2200. The tests produce every record at the
  time of the test, one timestamp for all, so of a duplicate and its original (same key, same
  partition) the original is the earlier Kafka record, by offset;
* ids are unique except where a kind repeats one on purpose: ``duplicate`` (the same record
  again: silver keeps the first, a duplicate is neither in silver nor in quarantine) and
  ``same id, another date`` (a distinct event for silver: an event is its id and its date).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PATH = REPO_ROOT / "tests" / "corpus" / "bad_inputs.jsonl.gz"
SEED = 7
MAX_BYTES = 262_144
NOT_BEFORE_MS = 1_795_262_400_000  # 2026-11-21T12:00:00Z
TOPICS = ("ad_requests", "ad_impressions", "ad_callbacks", "page_clicks")
MISSING = object()  # a field left out of the JSON
MB = 1 << 20

# Kinds whose reason does not depend on the topic's fields: kind -> expected reason.
VALID = "valid"
DUPLICATE = "duplicate"
SAME_ID_OTHER_DATE = "same id, another date"
WHOLE_VALUE_KINDS: dict[str, str | None] = {
    VALID: None,
    "valid, an unknown extra field": None,
    "valid, whitespace around the object": None,
    "valid, escaped control characters in a string": None,
    "valid, non-ASCII text": None,
    "valid, exactly the record limit": None,
    DUPLICATE: None,
    SAME_ID_OTHER_DATE: None,
    "not JSON at all": "invalid_json",
    "single quotes": "invalid_json",
    "an unquoted key": "invalid_json",
    "a NaN literal": "invalid_json",
    "a duplicate key": "invalid_json",
    "truncated JSON": "invalid_json",
    "an object followed by trailing text": "invalid_json",
    "concatenated objects": "invalid_json",
    "binary, not UTF-8": "invalid_json",
    "an empty value": "invalid_json",
    "a Kafka null value": "invalid_json",
    "JSON null": "invalid_json",
    "a JSON array": "invalid_json",
    "a JSON string": "invalid_json",
    "a JSON number": "invalid_json",
    "a JSON boolean": "invalid_json",
    "a raw control character in a string": "invalid_json",
    "raw control characters, just under the record limit": "invalid_json",
    "a 1 MB string": "too_large",
    "one byte over the record limit": "too_large",
    "1 MB that is not JSON": "too_large",
    "event time before 2000": "invalid_value:event_time",
    "event time at the epoch (1970)": "invalid_value:event_time",
    "event time in 2200": "invalid_value:event_time",
    "event time in year 9999": "invalid_value:event_time",
    "event time: a bare date": "wrong_type:event_time",
    "event time: February 30th": "wrong_type:event_time",
    "event time: no seconds": "wrong_type:event_time",
    "event time: another format": "wrong_type:event_time",
    "event time: epoch milliseconds (a number)": "wrong_type:event_time",
}

# One field of one topic set to one JSON value (MISSING: left out), and the reason.
# (topic, field, what it is, the value, expected reason)
FIELD_KINDS: list[tuple[str, str, str, object, str | None]] = [
    ("ad_requests", "request_id", "missing", MISSING, "missing_field:request_id"),
    ("ad_requests", "request_id", "null", None, "missing_field:request_id"),
    ("ad_requests", "request_id", "a number", 7, "wrong_type:request_id"),
    ("ad_requests", "event_time", "missing", MISSING, "missing_field:event_time"),
    ("ad_requests", "event_time", "null", None, "missing_field:event_time"),
    ("ad_requests", "device_id", "missing", MISSING, "missing_field:device_id"),
    ("ad_requests", "device_id", "null", None, "missing_field:device_id"),
    ("ad_requests", "device_id", "an object", {"id": "d"}, "wrong_type:device_id"),
    ("ad_requests", "household_id", "missing", MISSING, "missing_field:household_id"),
    ("ad_requests", "household_id", "null", None, "missing_field:household_id"),
    ("ad_requests", "household_id", "a boolean", True, "wrong_type:household_id"),
    ("ad_requests", "content_id", "missing", MISSING, "missing_field:content_id"),
    ("ad_requests", "content_id", "null", None, "missing_field:content_id"),
    ("ad_requests", "content_id", "an array", ["s1"], "wrong_type:content_id"),
    ("ad_requests", "slot_id", "missing", MISSING, "missing_field:slot_id"),
    ("ad_requests", "slot_id", "null", None, "missing_field:slot_id"),
    ("ad_requests", "slot_id", "a number", 3, "wrong_type:slot_id"),
    ("ad_requests", "geo", "missing", MISSING, "missing_field:geo"),
    ("ad_requests", "geo", "null", None, "missing_field:geo"),
    ("ad_requests", "geo", "a number", 33, "wrong_type:geo"),
    ("ad_requests", "floor_price", "missing", MISSING, "missing_field:floor_price"),
    ("ad_requests", "floor_price", "null", None, "missing_field:floor_price"),
    ("ad_requests", "floor_price", "a string", "1.5", "wrong_type:floor_price"),
    ("ad_requests", "floor_price", "a boolean", False, "wrong_type:floor_price"),
    ("ad_requests", "floor_price", "negative", -0.01, "invalid_value:floor_price"),
    ("ad_requests", "floor_price", "1e400", "1e400", "invalid_value:floor_price"),
    ("ad_requests", "floor_price", "-1e400", "-1e400", "invalid_value:floor_price"),
    ("ad_requests", "bid_count", "missing", MISSING, "missing_field:bid_count"),
    ("ad_requests", "bid_count", "null", None, "missing_field:bid_count"),
    ("ad_requests", "bid_count", "a fraction", 2.5, "wrong_type:bid_count"),
    ("ad_requests", "bid_count", "a string", "3", "wrong_type:bid_count"),
    ("ad_requests", "bid_count", "beyond 32 bits", 2**31, "wrong_type:bid_count"),
    ("ad_requests", "bid_count", "1e400", "1e400", "wrong_type:bid_count"),
    ("ad_requests", "bid_count", "negative", -1, "invalid_value:bid_count"),
    ("ad_impressions", "impression_id", "missing", MISSING, "missing_field:impression_id"),
    ("ad_impressions", "impression_id", "null", None, "missing_field:impression_id"),
    ("ad_impressions", "impression_id", "a number", 12, "wrong_type:impression_id"),
    ("ad_impressions", "request_id", "missing", MISSING, "missing_field:request_id"),
    ("ad_impressions", "request_id", "null", None, "missing_field:request_id"),
    ("ad_impressions", "request_id", "a boolean", True, "wrong_type:request_id"),
    ("ad_impressions", "campaign_id", "missing", MISSING, "missing_field:campaign_id"),
    ("ad_impressions", "campaign_id", "null", None, "missing_field:campaign_id"),
    ("ad_impressions", "campaign_id", "an object", {}, "wrong_type:campaign_id"),
    ("ad_impressions", "creative_id", "missing", MISSING, "missing_field:creative_id"),
    ("ad_impressions", "creative_id", "null", None, "missing_field:creative_id"),
    ("ad_impressions", "creative_id", "a number", 1.5, "wrong_type:creative_id"),
    ("ad_impressions", "event_time", "missing", MISSING, "missing_field:event_time"),
    ("ad_impressions", "event_time", "null", None, "missing_field:event_time"),
    ("ad_impressions", "device_id", "missing", MISSING, "missing_field:device_id"),
    ("ad_impressions", "device_id", "null", None, "missing_field:device_id"),
    ("ad_impressions", "device_id", "an array", [], "wrong_type:device_id"),
    ("ad_impressions", "win_price", "missing", MISSING, "missing_field:win_price"),
    ("ad_impressions", "win_price", "null", None, "missing_field:win_price"),
    ("ad_impressions", "win_price", "a string", "free", "wrong_type:win_price"),
    ("ad_impressions", "win_price", "negative", -2.0, "invalid_value:win_price"),
    ("ad_impressions", "win_price", "1e400", "1e400", "invalid_value:win_price"),
    ("ad_callbacks", "callback_id", "missing", MISSING, "missing_field:callback_id"),
    ("ad_callbacks", "callback_id", "null", None, "missing_field:callback_id"),
    ("ad_callbacks", "callback_id", "a number", 5, "wrong_type:callback_id"),
    ("ad_callbacks", "impression_id", "missing", MISSING, "missing_field:impression_id"),
    ("ad_callbacks", "impression_id", "null", None, "missing_field:impression_id"),
    ("ad_callbacks", "impression_id", "an object", {"i": 1}, "wrong_type:impression_id"),
    ("ad_callbacks", "request_id", "missing", MISSING, "missing_field:request_id"),
    ("ad_callbacks", "request_id", "null", None, "missing_field:request_id"),
    ("ad_callbacks", "request_id", "a boolean", False, "wrong_type:request_id"),
    ("ad_callbacks", "event_type", "missing", MISSING, "missing_field:event_type"),
    ("ad_callbacks", "event_type", "null", None, "missing_field:event_type"),
    ("ad_callbacks", "event_type", "a number", 1, "wrong_type:event_type"),
    ("ad_callbacks", "event_type", "unknown", "hover", "invalid_value:event_type"),
    ("ad_callbacks", "event_type", "in capitals", "CLICK", "invalid_value:event_type"),
    ("ad_callbacks", "event_type", "empty", "", "invalid_value:event_type"),
    ("ad_callbacks", "event_time", "missing", MISSING, "missing_field:event_time"),
    ("ad_callbacks", "event_time", "null", None, "missing_field:event_time"),
    # value is optional: absent or null is valid.
    ("ad_callbacks", "value", "missing (optional)", MISSING, None),
    ("ad_callbacks", "value", "null (optional)", None, None),
    ("ad_callbacks", "value", "a string", "1.5", "wrong_type:value"),
    ("ad_callbacks", "value", "negative", -1, "invalid_value:value"),
    ("ad_callbacks", "value", "1e400", "1e400", "invalid_value:value"),
    ("page_clicks", "click_id", "missing", MISSING, "missing_field:click_id"),
    ("page_clicks", "click_id", "null", None, "missing_field:click_id"),
    ("page_clicks", "click_id", "a number", 9, "wrong_type:click_id"),
    ("page_clicks", "page_id", "missing", MISSING, "missing_field:page_id"),
    ("page_clicks", "page_id", "null", None, "missing_field:page_id"),
    ("page_clicks", "page_id", "an object", {"p": "home"}, "wrong_type:page_id"),
    ("page_clicks", "event_time", "missing", MISSING, "missing_field:event_time"),
    ("page_clicks", "event_time", "null", None, "missing_field:event_time"),
    ("page_clicks", "user_id", "missing", MISSING, "missing_field:user_id"),
    ("page_clicks", "user_id", "null", None, "missing_field:user_id"),
    ("page_clicks", "user_id", "a boolean", True, "wrong_type:user_id"),
]
# A number literal JSON cannot hold as a double: written into the text as it is.
_LITERAL_NUMBERS = ("1e400", "-1e400")


def field_kind(topic: str, field: str, what: str) -> str:
    return f"{topic}.{field}: {what}"


# Records per kind: enough to vary ids, keys and values; the large ones fewer (each is ~1 MB).
COPIES = 20
LARGE_COPIES = {
    "valid, exactly the record limit": 2,
    "a 1 MB string": 2,
    "one byte over the record limit": 2,
    "1 MB that is not JSON": 1,
    "raw control characters, just under the record limit": 1,
}
# Of all records, about this share are valid originals and duplicates of earlier ones.
VALID_PER_TOPIC = 1300
DUPLICATE_SHARE = 0.1


@dataclass(frozen=True)
class CorpusRecord:
    """One Kafka record of the corpus and the reason it must get (None: valid)."""

    topic: str
    key: bytes | None
    value: bytes | None
    kind: str
    expected: str | None

    def to_json(self) -> dict:
        out: dict = {"topic": self.topic, "key": None if self.key is None else self.key.decode()}
        try:
            out["value"] = None if self.value is None else self.value.decode("utf-8")
        except UnicodeDecodeError:
            out["value_b64"] = base64.b64encode(self.value).decode()
        return {**out, "kind": self.kind, "expected": self.expected}

    @classmethod
    def from_json(cls, obj: dict) -> CorpusRecord:
        value = (
            base64.b64decode(obj["value_b64"])
            if "value_b64" in obj
            else None
            if obj["value"] is None
            else obj["value"].encode("utf-8")
        )
        key = None if obj["key"] is None else obj["key"].encode()
        return cls(obj["topic"], key, value, obj["kind"], obj["expected"])


# -- valid records -------------------------------------------------------------------------------


class _Maker:
    """Valid records of each topic, with fresh ids and seeded values."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def _time(self, day: int = 21) -> str:
        # 2026-11-<day> between 10:00 and 11:00 UTC, in milliseconds.
        ms = self.rng.randrange(3_600_000)
        s, ms = divmod(ms, 1000)
        m, s = divmod(s, 60)
        return f"2026-11-{day:02d}T10:{m:02d}:{s:02d}.{ms:03d}Z"

    def record(self, topic: str, day: int = 21) -> dict:
        """A valid record of ``topic``: a dict in the registry's field order."""
        self.n += 1
        n, rng = self.n, self.rng
        if topic == "ad_requests":
            return {
                "request_id": f"r-{n:06d}",
                "event_time": self._time(day),
                "device_id": f"d-{rng.randrange(500):04d}",
                "household_id": f"h-{rng.randrange(300):04d}",
                "content_id": f"s-{rng.randrange(40):03d}",
                "slot_id": rng.choice(["pre", "mid", "post"]),
                "geo": rng.choice(["FR", "DE", "US", "BR"]),
                "floor_price": round(rng.uniform(0, 5), 2),
                "bid_count": rng.randrange(8),
            }
        if topic == "ad_impressions":
            return {
                "impression_id": f"i-{n:06d}",
                "request_id": f"r-{rng.randrange(n):06d}",
                "campaign_id": f"camp-{rng.randrange(20):03d}",
                "creative_id": f"crt-{rng.randrange(60):03d}",
                "event_time": self._time(day),
                "device_id": f"d-{rng.randrange(500):04d}",
                "win_price": round(rng.uniform(0, 8), 3),
            }
        if topic == "ad_callbacks":
            return {
                "callback_id": f"cb-{n:06d}",
                "impression_id": f"i-{rng.randrange(n):06d}",
                "request_id": f"r-{rng.randrange(n):06d}",
                "event_type": rng.choice(
                    [
                        "click",
                        "first_quartile",
                        "midpoint",
                        "third_quartile",
                        "complete",
                        "conversion",
                    ]
                ),
                "event_time": self._time(day),
                "value": round(rng.uniform(0, 3), 2),
            }
        return {
            "click_id": f"c-{n:06d}",
            "page_id": f"page-{rng.randrange(50):03d}",
            "event_time": self._time(day),
            "user_id": f"u-{rng.randrange(900):04d}",
        }


def _text(obj: dict, **fields: object) -> bytes:
    """``obj`` with ``fields`` replaced (MISSING drops one), as compact JSON; a value in
    :data:`_LITERAL_NUMBERS` is written as that number literal."""
    merged = {k: v for k, v in {**obj, **fields}.items() if v is not MISSING}
    text = json.dumps(merged, separators=(",", ":"))
    for literal in _LITERAL_NUMBERS:
        text = text.replace(f'"{literal}"', literal)
    return text.encode()


_KEY_FIELD = {
    "ad_requests": "request_id",
    "ad_impressions": "request_id",
    "ad_callbacks": "request_id",
    "page_clicks": "page_id",
}
# A string field of each topic that can be padded to make a record of a given size.
_PAD_FIELD = {
    "ad_requests": "device_id",
    "ad_impressions": "device_id",
    "ad_callbacks": "impression_id",
    "page_clicks": "user_id",
}


def _key(obj: dict, topic: str) -> bytes:
    return str(obj[_KEY_FIELD[topic]]).encode()


def _sized(obj: dict, topic: str, size: int, filler: str = "x") -> bytes:
    """``obj`` as JSON, its pad field lengthened with ``filler`` to exactly ``size`` bytes."""
    field = _PAD_FIELD[topic]
    short = len(_text(obj, **{field: ""}))
    return _text(obj, **{field: filler * (size - short)})


# -- whole-value kinds: how to make one record of each ---------------------------------------------


def _whole_value_makers() -> dict[str, Callable[[random.Random, str, dict], bytes | None]]:
    """kind -> make(rng, topic, a valid record) -> the value."""

    def at(time: object) -> Callable[[random.Random, str, dict], bytes]:
        return lambda rng, topic, obj: _text(obj, event_time=time)

    def truncated(rng, topic, obj):
        text = _text(obj)
        return text[: rng.randrange(len(text))]  # a proper prefix of an object, maybe empty

    def binary(rng, topic, obj):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60)))
        return body + b"\xff" + body  # 0xff never occurs in UTF-8

    def control(rng, topic, obj):
        field = _PAD_FIELD[topic]
        return _text(obj, **{field: "a\u0001b"}).replace(b"\\u0001", bytes([rng.randrange(32)]))

    def control_near_limit(rng, topic, obj):
        # Each raw byte becomes 6 in the DLQ record's JSON ("\u0001"): about 1.5 MB there.
        size = MAX_BYTES - rng.randrange(1, 100)
        run = size - len(_text(obj, **{_PAD_FIELD[topic]: ""}))
        return _sized(obj, topic, size, filler="x").replace(b"x" * run, b"\x01" * run)

    return {
        VALID: lambda rng, topic, obj: _text(obj),
        "valid, an unknown extra field": lambda rng, topic, obj: _text(
            obj, note={"tags": ["a", "b"], "n": rng.randrange(100)}
        ),
        "valid, whitespace around the object": lambda rng, topic, obj: (
            b" \t\r\n"[: rng.randrange(1, 5)] + _text(obj) + b"\n "
        ),
        "valid, escaped control characters in a string": lambda rng, topic, obj: _text(
            obj, **{_PAD_FIELD[topic]: "tab\there\u0001\u001f"}
        ),
        "valid, non-ASCII text": lambda rng, topic, obj: json.dumps(
            {**obj, _PAD_FIELD[topic]: "h\u00e9llo-\u6f22\u5b57-\U0001f600"},
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode(),
        "valid, exactly the record limit": lambda rng, topic, obj: _sized(obj, topic, MAX_BYTES),
        "not JSON at all": lambda rng, topic, obj: rng.choice(
            [b"hello", b"<xml/>", b"key=value", b"}{", b"{", b"]"]
        ),
        "single quotes": lambda rng, topic, obj: _text(obj).replace(b'"', b"'"),
        "an unquoted key": lambda rng, topic, obj: _text(obj).replace(
            f'"{_KEY_FIELD[topic]}"'.encode(), _KEY_FIELD[topic].encode(), 1
        ),
        "a NaN literal": lambda rng, topic, obj: _text(obj)[:-1] + b',"x":NaN}',
        "a duplicate key": lambda rng, topic, obj: (
            _text(obj)[:-1] + b',"' + _KEY_FIELD[topic].encode() + b'":"again"}'
        ),
        "truncated JSON": truncated,
        "an object followed by trailing text": lambda rng, topic, obj: (
            _text(obj) + rng.choice([b" x", b"]", b"}", b",", b" // c", b"\x00", b"null"])
        ),
        "concatenated objects": lambda rng, topic, obj: (
            _text(obj) + rng.choice([b"", b"\n", b" ", b","]) + _text(obj)
        ),
        "binary, not UTF-8": binary,
        "an empty value": lambda rng, topic, obj: b"",
        "a Kafka null value": lambda rng, topic, obj: None,
        "JSON null": lambda rng, topic, obj: rng.choice([b"null", b" null "]),
        "a JSON array": lambda rng, topic, obj: b"[" + _text(obj) + b"]",
        "a JSON string": lambda rng, topic, obj: json.dumps(_text(obj).decode()).encode(),
        "a JSON number": lambda rng, topic, obj: rng.choice([b"0", b"-1.5", b"1e3", b"42"]),
        "a JSON boolean": lambda rng, topic, obj: rng.choice([b"true", b"false"]),
        "a raw control character in a string": control,
        "raw control characters, just under the record limit": control_near_limit,
        "a 1 MB string": lambda rng, topic, obj: _sized(obj, topic, MB + rng.randrange(100)),
        "one byte over the record limit": lambda rng, topic, obj: _sized(obj, topic, MAX_BYTES + 1),
        "1 MB that is not JSON": lambda rng, topic, obj: b"\xff" * MB,
        "event time before 2000": at("1999-12-31T23:59:59.999Z"),
        "event time at the epoch (1970)": at("1970-01-01T00:00:00.000Z"),
        "event time in 2200": at("2200-01-01T00:00:00.000Z"),
        "event time in year 9999": at("9999-12-31T23:59:59Z"),
        "event time: a bare date": at("2026-11-21"),
        "event time: February 30th": at("2026-02-30T10:00:00Z"),
        "event time: no seconds": at("2026-11-21T10:00Z"),
        "event time: another format": at("21/11/2026 10:00:00"),
        "event time: epoch milliseconds (a number)": at(1_795_255_200_000),
    }


# -- the corpus ----------------------------------------------------------------------------------


def generate(seed: int = SEED) -> list[CorpusRecord]:
    """Every record of the corpus, in the order it is produced: per topic, each kind
    :data:`COPIES` times (the large ones fewer) and :data:`VALID_PER_TOPIC` valid records,
    shuffled, with a duplicate of an earlier valid record before about one record in ten."""
    rng = random.Random(seed)
    maker = _Maker(rng)
    makers = _whole_value_makers()
    records: list[CorpusRecord] = []
    for topic in TOPICS:
        plain: list[CorpusRecord] = []

        def add(kind: str, expected: str | None, obj: dict, value: bytes | None) -> None:
            key = (
                _key(obj, topic)
                if expected is None or rng.random() < 0.5
                else (None if rng.random() < 0.5 else f"junk-{rng.randrange(1000)}".encode())
            )
            plain.append(CorpusRecord(topic, key, value, kind, expected))

        for kind, expected in WHOLE_VALUE_KINDS.items():
            if kind in (DUPLICATE, SAME_ID_OTHER_DATE):
                continue
            copies = VALID_PER_TOPIC if kind == VALID else LARGE_COPIES.get(kind, COPIES)
            for _ in range(copies):
                obj = maker.record(topic)
                add(kind, expected, obj, makers[kind](rng, topic, obj))
        for t, field, what, value, expected in FIELD_KINDS:
            if t == topic:
                for _ in range(COPIES):
                    obj = maker.record(topic)
                    add(field_kind(t, field, what), expected, obj, _text(obj, **{field: value}))
        rng.shuffle(plain)
        records += _with_repeats(rng, plain, topic, maker)
    return records


def _with_repeats(
    rng: random.Random, plain: list[CorpusRecord], topic: str, maker: _Maker
) -> list[CorpusRecord]:
    """``plain`` with, before about one record in ten, a repeat of an earlier valid record: the
    same record again (a duplicate), or one in four times the same id on the 20th (another
    event)."""
    out: list[CorpusRecord] = []
    originals: list[CorpusRecord] = []
    redated: set[int] = set()  # originals already repeated on the 20th: at most once each
    for rec in plain:
        if originals and rng.random() < DUPLICATE_SHARE:
            i = rng.randrange(len(originals))
            first = originals[i]
            if rng.random() < 0.75 or i in redated:
                out.append(CorpusRecord(topic, first.key, first.value, DUPLICATE, None))
            else:
                redated.add(i)
                obj = {**json.loads(first.value), "event_time": maker._time(day=20)}
                out.append(CorpusRecord(topic, first.key, _text(obj), SAME_ID_OTHER_DATE, None))
        out.append(rec)
        if rec.kind == VALID:
            originals.append(rec)
    return out


def write(records: list[CorpusRecord], path: Path) -> None:
    """``records`` as gzipped JSON lines at ``path``, byte for byte the same for the same
    records (no file name or time in the gzip header)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r.to_json(), separators=(",", ":")) + "\n" for r in records)
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out,
    ):
        out.write(text.encode())


def load(path: Path = DEFAULT_PATH) -> list[CorpusRecord]:
    """The corpus at ``path`` (the committed one by default)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [CorpusRecord.from_json(json.loads(line)) for line in lines]


def produce(
    bootstrap: str, records: list[CorpusRecord], timestamp_ms: int, timeout_s: float = 120
) -> dict[tuple[str, int, int], CorpusRecord]:
    """Produce ``records`` in order, every one with the Kafka timestamp ``timestamp_ms``, and
    return each one by its coordinates (topic, partition, offset), from the delivery reports.

    The producer is idempotent (each partition holds the records in the order sent) and accepts
    messages as large as the broker does, so the 1 MB records reach their topics."""
    from confluent_kafka import Producer

    from adlake.config import KAFKA_MAX_MESSAGE_BYTES

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.max.bytes": KAFKA_MAX_MESSAGE_BYTES,
        }
    )
    placed: dict[tuple[str, int, int], CorpusRecord] = {}
    errors: list[str] = []

    def delivered(rec: CorpusRecord):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(f"{rec.topic} ({rec.kind}): {err}")
            else:
                placed[msg.topic(), msg.partition(), msg.offset()] = rec

        return report

    for rec in records:
        while True:
            try:
                producer.produce(
                    rec.topic,
                    value=rec.value,
                    key=rec.key,
                    timestamp=timestamp_ms,
                    on_delivery=delivered(rec),
                )
                break
            except BufferError:  # the local queue is full: let it drain, then retry
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(timeout_s)
    if left or errors:
        raise RuntimeError(f"{left} corpus records not delivered; errors: {errors[:5]}")
    return placed


@contextmanager
def loaded_broker(runtime_dir: Path) -> Iterator[tuple[object, dict]]:
    """A broker of its own (state under ``runtime_dir``, free ports, every registry topic)
    holding the whole committed corpus, produced now; yields its settings and the records by
    coordinates (see :func:`produce`), and stops the broker on exit."""
    from adlake.local.kafka import LocalKafka
    from tests.conftest import private_settings

    settings = private_settings(runtime_dir)
    broker = LocalKafka(settings)
    broker.start()
    try:
        broker.create_topics()
        yield settings, produce(settings.kafka_bootstrap, load(), time.time_ns() // 10**6)
    finally:
        broker.stop()


# -- what the integration tests share ---------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_broker(tmp_path_factory) -> Iterator[tuple[object, dict]]:
    """:func:`loaded_broker` for one test module: (settings, records by coordinates)."""
    with loaded_broker(tmp_path_factory.mktemp("corpus")) as loaded:
        yield loaded


@pytest.fixture
def corpus_limit(monkeypatch) -> int:
    """The record limit the corpus is written for, whatever the caller's environment says."""
    monkeypatch.setenv("ADLAKE_MAX_RECORD_BYTES", str(MAX_BYTES))
    return MAX_BYTES


def wrong_reasons(
    placed: dict[tuple[str, int, int], CorpusRecord], got: dict[tuple[str, int, int], str], topics
) -> dict:
    """Coordinates -> (kind, expected reason, reason given) of every record of ``topics`` whose
    reason in ``got`` (rejected records only) is not the written-down one."""
    want = {c: r.expected for c, r in placed.items() if c[0] in topics and r.expected}
    return {
        c: (placed[c].kind if c in placed else None, want.get(c), got.get(c))
        for c in set(want) | set(got)
        if want.get(c) != got.get(c)
    }


def wrong_raw_values(
    placed: dict[tuple[str, int, int], CorpusRecord], kept: dict[tuple[str, int, int], str | None]
) -> dict:
    """Coordinates -> kind of every rejected record whose raw value in ``kept`` is not what
    the DLQ and the quarantine keep: a too_large record's head and size
    (:func:`adlake.payload_rules.kept_raw`), any other UTF-8 value whole, a tombstone's null as null and
    an empty value as an empty string (a value that is not UTF-8 is not compared: the JVM
    decodes it its own way)."""
    from adlake import payload_rules

    wrong = {}
    for c, raw in kept.items():
        rec = placed[c]
        if rec.expected == payload_rules.TOO_LARGE:
            want = payload_rules.kept_raw(rec.value)
        elif rec.value is None:
            want = None
        else:
            try:
                want = rec.value.decode("utf-8")
            except UnicodeDecodeError:
                continue
        if raw != want:
            wrong[c] = rec.kind
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.corpus", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seed", type=int, default=SEED, help="the generator's seed")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH, help="the corpus file")
    args = parser.parse_args(argv)
    records = generate(args.seed)
    write(records, args.out)
    kinds = {r.kind for r in records}
    print(
        f"{len(records)} records of {len(kinds)} kinds -> {args.out} "
        f"({args.out.stat().st_size:,} bytes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
