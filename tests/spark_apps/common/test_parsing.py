"""Spark's side of the payload rules (``spark_apps/common/parsing.py``) on this runtime.

The same tests run on the ops runtime (``ops/test_parsing_ops.py`` imports them): both apps'
DLQs parse on Spark 4.3, silver on Spark 4.2. The shared vector
(``tests/support/parsing_cases.py``) also runs through the pure-Python checker
(``tests/include/test_payload_rules.py``), so both implementations give every case the same reason.
"""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from spark_apps.common.parsing import RAW, REASON, parse_json
from tests.support.parsing_cases import CASES, MAX_BYTES, click, reasons_by_spark, sized

ATTRIBUTION_INPUTS = ("ad_requests", "ad_impressions", "ad_callbacks")


def test_a_value_is_exactly_one_json_object(spark):
    ok = click().decode()
    values = [
        ok,
        ok + " xyz",  # trailing text: Spark's parsers alone stop after the object
        ok + ok,  # two objects
        " \n" + ok + "\t ",  # whitespace around one object
        f"[{ok}]",  # an array
        '"c1"',  # a scalar
    ]
    df = spark.createDataFrame([(v.encode(),) for v in values], "value binary")

    parsed = parse_json(df, registry.topic("page_clicks")).select(RAW, REASON, "click_id")

    assertDataFrameEqual(
        parsed,
        spark.createDataFrame(
            [
                (ok, None, "c1"),
                (ok + " xyz", "invalid_json", "c1"),
                (ok + ok, "invalid_json", "c1"),
                (" \n" + ok + "\t ", None, "c1"),
                (f"[{ok}]", "invalid_json", None),
                ('"c1"', "invalid_json", None),
            ],
            f"{RAW} string, {REASON} string, click_id string",
        ),
    )


def test_parse_json_gives_every_case_of_the_shared_vector_its_reason(spark):
    got = reasons_by_spark(spark, CASES)

    assert {c.name: got[c.name] for c in CASES} == {c.name: c.expected for c in CASES}


def test_parse_json_by_topic_gives_the_same_reasons(spark):
    cases = [c for c in CASES if c.topic in ATTRIBUTION_INPUTS]
    assert {c.topic for c in cases} >= {"ad_requests", "ad_callbacks"}

    got = reasons_by_spark(spark, cases, by_topic=True)

    assert {c.name: got[c.name] for c in cases} == {c.name: c.expected for c in cases}


def test_a_topic_none_of_the_schemas_name_is_unknown_topic(spark):
    from spark_apps.common.parsing import parse_json_by_topic

    df = spark.createDataFrame([("page_clicks", click())], "topic string, value binary")

    parsed = parse_json_by_topic(df, [registry.topic(t) for t in ATTRIBUTION_INPUTS])

    assert [r[REASON] for r in parsed.select(REASON).collect()] == ["unknown_topic"]


@pytest.mark.parametrize("value_type", ["binary", "string"])  # Kafka's value, bronze's value
def test_a_too_large_value_is_never_parsed_and_keeps_its_head_and_size(spark, value_type):
    big = sized(click(), MAX_BYTES + 1)
    accents = sized(click(), MAX_BYTES + 2, filler="\u00e9")  # 131,036 characters
    not_utf8 = b"\xff" * (MAX_BYTES + 1)
    values = [big, accents, click()] + ([not_utf8] if value_type == "binary" else [])
    df = spark.createDataFrame(
        [(v if value_type == "binary" else v.decode(),) for v in values], f"value {value_type}"
    )

    parsed = parse_json(df, registry.topic("page_clicks"), max_bytes=MAX_BYTES)

    expected = [
        (big.decode()[:1024] + " ... [too_large: 262145 bytes]", "too_large", None),
        (accents.decode()[:1024] + " ... [too_large: 262145 bytes]", "too_large", None),
        (click().decode(), None, "c1"),
        ("\ufffd" * 1024 + " ... [too_large: 262145 bytes]", "too_large", None),
    ][: len(values)]
    assertDataFrameEqual(
        parsed.select(RAW, REASON, "click_id"),
        spark.createDataFrame(expected, f"{RAW} string, {REASON} string, click_id string"),
    )
