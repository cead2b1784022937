"""The validation rules of event payloads, declared once, and their pure-Python checker.

A Kafka value either passes its topic's rules or is rejected with one *reason*: the DLQ field,
the quarantine column and the DataFrame column are all named :data:`REASON`. Two
implementations read the declarations below: ``spark_apps/common/parsing.py`` builds Spark
columns from :func:`checks` (silver, both operational apps), and :func:`check_record` applies
them to one value in plain Python (the generator's tally, the tests). A shared test vector
(``tests/support/parsing_cases.py``) holds them to the same answer on both Spark runtimes.

==================  =====================================================================
reason              when
==================  =====================================================================
``too_large``       the value is longer than the record limit, in bytes
                    (``ADLAKE_MAX_RECORD_BYTES``, 256 KiB by default): checked first, on the
                    length alone, so such a value is never decoded or parsed. Its DLQ and
                    quarantine rows keep only :func:`kept_raw` of it (the first
                    :data:`TOO_LARGE_KEPT_CHARS` characters and its size)
``invalid_json``    the value is not UTF-8 text of exactly one JSON object (whitespace around
                    it is fine): unparseable, an array, a scalar, JSON null, a duplicate key,
                    an object followed by more text or by a second object; also an empty value
                    and a Kafka null value (a tombstone), in Python, in Spark and in bronze
                    (which keeps them as an empty string and a null)
``missing_field:F`` required field ``F`` is absent or JSON null
``wrong_type:F``    ``F`` has the wrong JSON type (a string for a double, 2.5 or 3e9 for an
                    int), or is a timestamp that is not :data:`TIMESTAMP_PATTERN` or not a real
                    instant (February 30th, 24:00, an offset beyond 18 hours)
``invalid_value:F`` ``F`` is outside its declared enumeration or range, a number too large to
                    be finite (``1e400``), or a time that is not plausible: before
                    :data:`EARLIEST_TIME`, or more than :data:`MAX_AHEAD_OF_KAFKA` after the
                    record's Kafka timestamp (where the caller gives it)
==================  =====================================================================

The first failing check, in field order (:func:`checks`), is the reason. Imports no PySpark.

The record limit is a setting (:attr:`adlake.config.Settings.max_record_bytes`): every
function that judges a value takes it as ``max_bytes``, and without it reads the configuration
(only for a value long enough to need it, so the generator's small records never do).

>>> check_record("page_clicks", b'{"click_id":"c1","page_id":"p","event_time":'
...              b'"2026-11-21T10:00:00.000Z","user_id":"u"} xyz')
'invalid_json'
>>> check_record("ad_callbacks", b'{"callback_id":"c","impression_id":"i","request_id":"r",'
...              b'"event_type":"hover","event_time":"2026-11-21T10:00:00Z","value":-1}')
'invalid_value:event_type'
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from adlake import config, registry

# The name of the reject reason everywhere: parsing's DataFrame column, the DLQ topics' field
# (registry.DLQ_SCHEMA) and the quarantine table's column (registry.QUARANTINE_SCHEMA).
REASON = "reason"

TOO_LARGE = "too_large"
INVALID_JSON = "invalid_json"
MISSING_FIELD = "missing_field"
WRONG_TYPE = "wrong_type"
INVALID_VALUE = "invalid_value"
# parse_json_by_topic only: the row's topic is none of the topics it was given.
UNKNOWN_TOPIC = "unknown_topic"
# The kinds of reason (the text before ``:``), in the order they are checked.
REASON_KINDS = (TOO_LARGE, INVALID_JSON, MISSING_FIELD, WRONG_TYPE, INVALID_VALUE)

# What a too_large record keeps as its raw value in the DLQ and the quarantine: its first
# characters and its size in bytes, never the whole value (it may be megabytes, and the raw value
# travels through the apps' state and into a Kafka record). A printf format for Spark's
# ``format_string`` and Python's ``%`` alike: the kept characters, then the value's size.
TOO_LARGE_KEPT_CHARS = 1024
TOO_LARGE_RAW_FORMAT = "%s ... [too_large: %d bytes]"

# JSON value kinds. An integer is a JSON number without fraction or exponent that fits 64 bits;
# any other number (1.0, 1e2, 2^63) is a "number".
STRING, INTEGER, NUMBER, BOOLEAN = "string", "integer", "number", "boolean"
# The JSON kinds each declared field type accepts.
JSON_KINDS: dict[str, tuple[str, ...]] = {
    "string": (STRING,),
    "timestamp": (STRING,),
    "long": (INTEGER,),
    "int": (INTEGER,),
    "double": (INTEGER, NUMBER),
    "boolean": (BOOLEAN,),
}
# The range of an integer field: a value outside it is wrong_type (it does not fit the type).
INTEGER_BITS = {"int": 32, "long": 64}
# Field types whose values must be finite: JSON has no Infinity, but a literal beyond the
# double range (1e400) reads as one, and no price or value is infinite.
FINITE_TYPES = ("double",)

# Value rules beyond type, per topic and field.
ENUMERATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ad_callbacks", "event_type"): registry.CALLBACK_EVENT_TYPES,
}
NON_NEGATIVE: frozenset[tuple[str, str]] = frozenset(
    {
        ("ad_requests", "floor_price"),
        ("ad_requests", "bid_count"),
        ("ad_impressions", "win_price"),
        ("ad_callbacks", "value"),
    }
)

# A timestamp is exactly this text: a date, "T" or a space, a time of day with seconds, up to 9
# digits of fraction (beyond microseconds is truncated), and an optional offset ("Z", +hh:mm,
# +hhmm, +hh; none means UTC, the sessions' time zone). Spark alone would also read a bare date
# as midnight, "10:00" without seconds, a zone name, or text padded with spaces; no producer of
# events means those. Groups: year, month, day, hour, minute, second, fraction, offset.
TIMESTAMP_PATTERN = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
MAX_OFFSET = timedelta(hours=18)  # the widest UTC offset there is (java.time.ZoneOffset's)

# Plausible times, for every timestamp field. Nothing happened before EARLIEST_TIME: an epoch-0
# default or seconds read as milliseconds land in 1970. Nothing is sent from the future: an event
# time more than MAX_AHEAD_OF_KAFKA after its record reached Kafka is a broken clock or
# milliseconds read as seconds (thousands of years ahead). Let through, one such event would
# move a streaming app's watermark to its time, and every later event would be late; in silver
# it would create a partition for that date. The bound is the record's own Kafka timestamp, not
# the clock, so a rerun over the same records classifies them the same way.
EARLIEST_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_AHEAD_OF_KAFKA = timedelta(hours=1)
EARLIEST_US = (EARLIEST_TIME - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
MAX_AHEAD_US = MAX_AHEAD_OF_KAFKA // timedelta(microseconds=1)

# The checks, by name (see :func:`checks`).
REQUIRED, TYPE, ENUMERATION, FINITE, NON_NEGATIVE_CHECK, PLAUSIBLE_TIME = (
    "required",
    "type",
    "enumeration",
    "finite",
    "non_negative",
    "plausible_time",
)


@dataclass(frozen=True)
class Check:
    """One rule on one field; ``reason`` is what a value failing it is rejected with. Every
    check but ``required`` applies only to a present (non-null) value."""

    field: registry.Field
    rule: str
    reason: str
    allowed: tuple[str, ...] = ()  # an enumeration's values


@functools.cache
def checks(topic_name: str) -> tuple[Check, ...]:
    """Every check of ``topic_name``'s payload, in the order they decide the reason: field by
    field, and for each field required, type, enumeration, finite, non-negative, plausible time.

    >>> [c.reason for c in checks("page_clicks")][:4]
    ['missing_field:click_id', 'wrong_type:click_id', 'missing_field:page_id', 'wrong_type:page_id']
    """
    topic = registry.topic(topic_name)
    out: list[Check] = []
    for field in topic.schema.fields:
        if field.type not in JSON_KINDS:
            raise ValueError(f"{topic.name}.{field.name}: no JSON rule for type {field.type!r}")
        key = (topic.name, field.name)
        if field.required:
            out.append(Check(field, REQUIRED, f"{MISSING_FIELD}:{field.name}"))
        out.append(Check(field, TYPE, f"{WRONG_TYPE}:{field.name}"))
        bad = f"{INVALID_VALUE}:{field.name}"
        if key in ENUMERATIONS:
            out.append(Check(field, ENUMERATION, bad, ENUMERATIONS[key]))
        if field.type in FINITE_TYPES:
            out.append(Check(field, FINITE, bad))
        if key in NON_NEGATIVE:
            out.append(Check(field, NON_NEGATIVE_CHECK, bad))
        if field.type == "timestamp":
            out.append(Check(field, PLAUSIBLE_TIME, bad))
    return tuple(out)


# -- the pure-Python checker ---------------------------------------------------------------------

_TIMESTAMP = re.compile(TIMESTAMP_PATTERN)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_INTEGER_DIGITS = 1000  # a longer integer literal is not JSON to Spark's parser (Jackson)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date, any year (Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def timestamp_us(text: str) -> int | None:
    """Microseconds since the epoch of a timestamp text, or None if it is not one.

    >>> timestamp_us("2026-11-21T10:00:00.250+01:00")
    1795251600250000
    >>> timestamp_us("2026-02-30T10:00:00Z") is None, timestamp_us("2026-11-21") is None
    (True, True)
    """
    m = _TIMESTAMP.fullmatch(text)
    if m is None:
        return None
    ys, mos, ds, hs, mis, ss, fraction, zone = m.groups()
    y, mo, d, h, mi, s = int(ys), int(mos), int(ds), int(hs), int(mis), int(ss)
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo) and h < 24 and mi < 60 and s < 60):
        return None
    offset_s = 0
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:] or 0)
        offset_s = (oh * 3600 + om * 60) * (-1 if zone[0] == "-" else 1)
        if om >= 60 or abs(offset_s) > MAX_OFFSET.total_seconds():
            return None
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s
    return seconds * 1_000_000 + (int(fraction[:6].ljust(6, "0")) if fraction else 0)


def max_record_bytes(max_bytes: int | None = None) -> int:
    """``max_bytes``, or the configured record limit (``ADLAKE_MAX_RECORD_BYTES``) if None."""
    return config.load_settings().max_record_bytes if max_bytes is None else max_bytes


def too_large(value: bytes | str | None, max_bytes: int | None = None) -> bool:
    """Whether ``value`` is longer than the record limit, in bytes (UTF-8 for a ``str``).

    A value no longer than the smallest limit the configuration allows is never too large, so
    the configuration is read only for longer ones.

    >>> too_large(b"x" * 2000, max_bytes=1999), too_large("\u00e9" * 1000, max_bytes=1999)
    (True, True)
    >>> too_large(None), too_large(b"{}")
    (False, False)
    """
    if value is None:
        return False
    size = len(value) if isinstance(value, bytes) else len(value.encode("utf-8", "surrogatepass"))
    return size > config.MIN_RECORD_LIMIT and size > max_record_bytes(max_bytes)


def kept_raw(value: bytes) -> str:
    """What the DLQ and the quarantine keep of a too_large ``value`` as its raw value: the first
    :data:`TOO_LARGE_KEPT_CHARS` characters (bytes that are not UTF-8 are replaced) and its size.

    >>> kept_raw(b"ab" * 5000)[1020:]
    'abab ... [too_large: 10000 bytes]'
    """
    head = value.decode("utf-8", "replace")[:TOO_LARGE_KEPT_CHARS]
    return TOO_LARGE_RAW_FORMAT % (head, len(value))


class _NotJson(ValueError):
    pass


def _object(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _NotJson("duplicate key")
    return obj


def _integer(text: str) -> int:
    if len(text) - text.startswith("-") > _MAX_INTEGER_DIGITS:
        raise _NotJson("number too long")
    return int(text)


def _no_constants(name: str) -> float:
    raise _NotJson(f"{name} is not JSON")


def _has_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def parse_object(value: bytes | str | None) -> dict | None:
    """The JSON object ``value`` holds, or None where the reason is ``invalid_json``."""
    if value is None:
        return None
    try:
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        obj = json.loads(
            text, object_pairs_hook=_object, parse_int=_integer, parse_constant=_no_constants
        )
    except (ValueError, RecursionError):  # _NotJson, JSONDecodeError, UnicodeDecodeError
        return None
    if not isinstance(obj, dict):
        return None
    # A lone surrogate escape ("\ud800") decodes in Python but is not JSON text to Spark.
    if _SURROGATE_ESCAPE.search(text) and _has_surrogate(obj):
        return None
    return obj


def _kind(value: object) -> str | None:
    if value is True or value is False:
        return BOOLEAN
    if isinstance(value, str):
        return STRING
    if isinstance(value, int):
        return INTEGER if -(2**63) <= value < 2**63 else NUMBER
    if isinstance(value, float):
        return NUMBER
    return None  # an object or an array


def _typed(ftype: str, value: object) -> object | None:
    """The value as Spark's ``from_json`` reads it into the field's type, or None where it
    cannot (wrong JSON kind, out of the type's range, not a timestamp)."""
    if _kind(value) not in JSON_KINDS[ftype]:
        return None
    if ftype == "timestamp":
        return timestamp_us(value)
    if ftype in INTEGER_BITS:
        bits = INTEGER_BITS[ftype] - 1
        return value if -(2**bits) <= value < 2**bits else None
    if ftype == "double":
        try:
            return float(value)
        except OverflowError:  # an integer literal beyond the double range
            return math.inf if value > 0 else -math.inf
    return value


class Checked(NamedTuple):
    """What :func:`validate` finds in one record value."""

    reason: str | None  # None: the value passes
    obj: dict | None  # the parsed JSON object (None for invalid_json)
    # The fields checked so far as Spark reads them into the schema's types (a timestamp in
    # epoch microseconds); every field when the value passes.
    values: dict[str, object]


@functools.cache
def _plan(topic_name: str) -> tuple[tuple[registry.Field, str | None, str, tuple[Check, ...]], ...]:
    """:func:`checks` grouped by field: (field, missing reason or None, wrong-type reason, the
    value checks), in the same order."""
    out = []
    for field in registry.topic(topic_name).schema.fields:
        own = [c for c in checks(topic_name) if c.field == field]
        required = next((c.reason for c in own if c.rule == REQUIRED), None)
        wrong_type = next(c.reason for c in own if c.rule == TYPE)
        out.append(
            (field, required, wrong_type, tuple(c for c in own if c.rule not in (REQUIRED, TYPE)))
        )
    return tuple(out)


def validate(
    topic: registry.Topic | str,
    value: bytes | str | None,
    kafka_ts_ms: int | None = None,
    max_bytes: int | None = None,
) -> Checked:
    """The reason, the parsed object and the typed field values of one record value; see
    :func:`check_record`."""
    name = topic if isinstance(topic, str) else topic.name
    values: dict[str, object] = {}
    if too_large(value, max_bytes):  # before any decoding or parsing
        return Checked(TOO_LARGE, None, values)
    obj = parse_object(value)
    if obj is None:
        return Checked(INVALID_JSON, None, values)
    for field, missing, wrong_type, value_checks in _plan(name):
        raw = obj.get(field.name)
        if raw is None:
            if missing is not None:
                return Checked(missing, obj, values)
            values[field.name] = None
            continue
        v = values[field.name] = _typed(field.type, raw)
        if v is None:
            return Checked(wrong_type, obj, values)
        for check in value_checks:
            rule = check.rule
            if rule == ENUMERATION:
                failed = v not in check.allowed
            elif rule == FINITE:
                failed = not math.isfinite(v)
            elif rule == NON_NEGATIVE_CHECK:
                failed = v < 0
            elif rule == PLAUSIBLE_TIME:
                failed = v < EARLIEST_US or (
                    kafka_ts_ms is not None and v > kafka_ts_ms * 1000 + MAX_AHEAD_US
                )
            else:
                raise ValueError(f"{name}: no Python check for rule {rule!r}")
            if failed:
                return Checked(check.reason, obj, values)
    return Checked(None, obj, values)


def check_record(
    topic: registry.Topic | str,
    value: bytes | str | None,
    kafka_ts_ms: int | None = None,
    max_bytes: int | None = None,
) -> str | None:
    """The reason ``value`` (a Kafka record's value, None for a tombstone) fails ``topic``'s
    rules, or None if it passes: the reason Spark's ``parsing.parse_json`` gives the same record.
    ``kafka_ts_ms``: its Kafka timestamp (epoch milliseconds), the upper bound of a plausible
    time; without it only the lower bound is checked. ``max_bytes``: the record limit (default:
    the configured one, ``ADLAKE_MAX_RECORD_BYTES``).

    >>> check_record("page_clicks", b'{"click_id": "c"')
    'invalid_json'
    >>> check_record("page_clicks", b'{"click_id":"c","page_id":"p","user_id":"u",'
    ...              b'"event_time":"2026-11-21T12:00:00Z"}', kafka_ts_ms=1795255200000)
    'invalid_value:event_time'
    >>> check_record("page_clicks", b"[" * 4096, max_bytes=4095)
    'too_large'
    """
    return validate(topic, value, kafka_ts_ms, max_bytes).reason
