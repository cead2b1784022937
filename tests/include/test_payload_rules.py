"""The payload rules' pure-Python checker (``adlake.payload_rules``): no JVM.

The shared vector (``tests/support/parsing_cases.py``) gives each case its reason by hand; Spark's
``parse_json`` must give the same ones (``tests/spark_apps/common/test_parsing.py``, both
runtimes), so this is the proof that the generator's tally counts what silver and the DLQs see.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adlake import payload_rules, registry
from tests.support.parsing_cases import CASES, MAX_BYTES


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_check_record_gives_each_case_of_the_shared_vector_its_reason(case):
    assert (
        payload_rules.check_record(case.topic, case.value, case.kafka_ts_ms, max_bytes=MAX_BYTES)
        == case.expected
    )


def test_the_vector_covers_every_kind_of_reason_and_every_rule():
    kinds = {c.expected.split(":")[0] for c in CASES if c.expected}
    assert kinds == set(payload_rules.REASON_KINDS)
    assert any(c.expected is None for c in CASES)


def test_the_reason_has_one_name_everywhere():
    from spark_apps.common.parsing import REASON

    assert REASON == payload_rules.REASON == "reason"
    assert REASON in registry.DLQ_SCHEMA.names
    assert REASON in registry.table("quarantine").schema.names


def test_validate_returns_the_parsed_object_and_the_typed_values():
    value = b'{"click_id":"c","page_id":"p","event_time":"2026-11-21T10:00:00Z","user_id":"u"}'
    obj = {"click_id": "c", "page_id": "p", "event_time": "2026-11-21T10:00:00Z", "user_id": "u"}
    assert payload_rules.validate("page_clicks", value) == (
        None,
        obj,
        {"click_id": "c", "page_id": "p", "event_time": 1_795_255_200_000_000, "user_id": "u"},
    )
    assert payload_rules.validate(registry.topic("page_clicks"), value + b"x") == (
        "invalid_json",
        None,
        {},
    )
    # The values checked before the failing one.
    assert payload_rules.validate("page_clicks", value.replace(b'"u"', b"7")) == (
        "wrong_type:user_id",
        {**obj, "user_id": 7},
        {"click_id": "c", "page_id": "p", "event_time": 1_795_255_200_000_000, "user_id": None},
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-21T10:00:00Z", datetime(2026, 11, 21, 10, tzinfo=UTC)),
        ("2026-11-21 10:00:00.5", datetime(2026, 11, 21, 10, 0, 0, 500000, tzinfo=UTC)),
        (
            "2026-11-21T10:00:00.1234569-05:30",
            datetime(2026, 11, 21, 15, 30, 0, 123456, tzinfo=UTC),
        ),
        ("2026-03-01T00:30:00+01", datetime(2026, 2, 28, 23, 30, tzinfo=UTC)),
        ("1969-12-31T23:59:59.999Z", datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)),
    ],
)
def test_timestamp_us_is_the_instant(text, expected):
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert payload_rules.timestamp_us(text) == (expected - epoch) // timedelta(microseconds=1)


def test_every_topic_of_the_registry_has_its_checks():
    for name in registry.TOPICS:
        checks = payload_rules.checks(name)
        fields = [f.name for f in registry.topic(name).schema.fields]
        assert [c.field.name for c in checks if c.rule == payload_rules.TYPE] == fields


def test_the_record_limit_defaults_to_the_configured_one(monkeypatch):
    value = (
        b'{"click_id":"c","page_id":"p","event_time":"2026-11-21T10:00:00Z","user_id":"'
        + b"u" * 2000
        + b'"}'
    )
    monkeypatch.delenv("ADLAKE_MAX_RECORD_BYTES", raising=False)
    assert payload_rules.check_record("page_clicks", value) is None  # 2,082 bytes, under 256 KiB
    monkeypatch.setenv("ADLAKE_MAX_RECORD_BYTES", "2048")
    assert payload_rules.check_record("page_clicks", value) == "too_large"
    assert payload_rules.check_record("page_clicks", value, max_bytes=4096) is None


def test_a_too_large_value_keeps_its_first_characters_and_its_size():
    assert payload_rules.kept_raw(b"a" * 300_000) == "a" * 1024 + " ... [too_large: 300000 bytes]"
    # Characters, not bytes; what is not UTF-8 is replaced, one U+FFFD per bad byte here.
    assert (
        payload_rules.kept_raw("\u00e9".encode() * 2000)
        == "\u00e9" * 1024 + " ... [too_large: 4000 bytes]"
    )
    assert (
        payload_rules.kept_raw(b"\xff" * 2000) == "\ufffd" * 1024 + " ... [too_large: 2000 bytes]"
    )
