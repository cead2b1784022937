"""Unit tests of the attribution rules with ``TwsTester``: one test per rule, with hand-written
expected rows, then a randomized comparison against a small reference implementation written here
from the rules, not from the processor.

Every test runs against both engines (the ``engine`` parameter): the Python processor
(``spark_apps/common/attribution/processor.py``) under PySpark's ``TwsTester``, and its JVM port
(``spark_apps/ops/jvm``) under Spark's Scala ``TwsTester`` through
:class:`~spark_apps.ops.attribution_jvm.JvmTwsTester`. Both keep the same state variables, so the
state assertions hold for both. The two tests marked ``python_only`` reach into the Python
tester's timer list, which the Scala tester does not expose.

Every test uses the same small config (window 1000 ms, skew 100 ms) and small explicit times. The
tester's watermark starts at 0; it drops an input row whose ``kafka_ts_ms`` is <= the watermark (as
Spark does with the query's watermark column), so a *late* event is one whose event time is old but
whose Kafka timestamp is new. ``setWatermark(ms)`` fires timers with expiry <= ms.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from pyspark.sql.streaming.tws_tester import TwsTester

from spark_apps.common.attribution.contract import (
    ATTRIBUTED_IMPRESSION,
    OUTPUT_SCHEMA,
    STATE_NAMES,
    AttributionConfig,
    contract_json,
)
from spark_apps.common.attribution.processor import AttributionProcessor, input_row, record_ids
from spark_apps.ops.attribution_jvm import ENGINES, JvmTwsTester
from tests.support.attribution_reference import Event, ReferenceAttribution

WINDOW, SKEW = 1000, 100
CONFIG = AttributionConfig(window_ms=WINDOW, skew_ms=SKEW, lateness_ms=0, ttl_ms=10_000)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" in metafunc.fixturenames:
        python_only = metafunc.definition.get_closest_marker("python_only") is not None
        # The JVM engine's tester needs the session (a JVM): those cases are integration.
        engines = [
            pytest.param(e, marks=pytest.mark.integration) if e == "jvm" else e
            for e in (["python"] if python_only else ENGINES)
        ]
        metafunc.parametrize("engine", engines, indirect=True)


_make: list = []  # the current test's tester factory, set by the ``engine`` fixture


@pytest.fixture(autouse=True)
def engine(request: pytest.FixtureRequest):
    """Which processor ``make_tester`` builds for this test."""
    if request.param == "python":
        factory = lambda config: TwsTester(  # noqa: E731 - the two factories read side by side
            AttributionProcessor(config),
            timeMode="EventTime",
            outputMode="Append",
            eventTimeExtractor=lambda r: r.kafka_ts_ms,
        )
    else:
        spark = request.getfixturevalue("spark")
        factory = lambda config: JvmTwsTester(spark, config)  # noqa: E731 - as above
    _make.append(factory)
    yield request.param
    _make.pop()


def make_tester(config: AttributionConfig = CONFIG):
    return _make[-1](config)


def req(t: int, kts: int | None = None, rid: str = "r1"):
    return input_row("request", rid, t, kts)


def imp(
    iid: str,
    t: int,
    kts: int | None = None,
    rid: str = "r1",
    campaign: str = "camp1",
    creative: str = "cr1",
):
    return input_row(
        "impression", rid, t, kts, impression_id=iid, campaign_id=campaign, creative_id=creative
    )


def cb(
    cid: str,
    iid: str,
    t: int,
    kts: int | None = None,
    rid: str = "r1",
    event_type: str = "click",
    value: float | None = None,
):
    return input_row(
        "callback",
        rid,
        t,
        kts,
        impression_id=iid,
        callback_id=cid,
        event_type=event_type,
        value=value,
    )


def rec(record_type: str, request_id: str = "r1", **fields) -> dict:
    """An expected output row: every output column, null unless given."""
    unknown = set(fields) - set(OUTPUT_SCHEMA.names)
    assert not unknown, f"not output columns: {unknown}"
    row = dict.fromkeys(OUTPUT_SCHEMA.names)
    row.update(record_type=record_type, request_id=request_id, **fields)
    return row


def _sort_key(row: dict) -> tuple:
    return (
        row["record_type"],
        row["request_id"],
        row["impression_id"] or "",
        row["callback_id"] or "",
    )


def assert_rows(actual, expected: list[dict]) -> None:
    """Exact multiset equality of output rows (the order of records is not part of the rules)."""
    got = sorted((r.asDict() for r in actual), key=_sort_key)
    assert got == sorted(expected, key=_sort_key)


def state(tester: TwsTester, key: str = "r1") -> dict:
    return {
        "request": tester.peekValueState("request", key),
        "impressions": tester.peekMapState("impressions", key),
        "callbacks": tester.peekMapState("callbacks", key),
        "timers": tester.peekValueState("timers", key),
        "closed_ids": tester.peekMapState("closed_ids", key),
    }


EMPTY = {"request": None, "impressions": {}, "callbacks": {}, "timers": None, "closed_ids": {}}


# Expected rows of the running example: request 1000, impression i1 at 1200, callbacks c1 at 1500
# and c2 at 1700; Kafka timestamps 10-20 ms after the event times.
def attributed_i1(source: int = 1210, request_time: int | None = 1000) -> dict:
    return rec(
        "attributed_impression",
        impression_id="i1",
        campaign_id="camp1",
        creative_id="cr1",
        request_time_ms=request_time,
        impression_time_ms=1200,
        source_kafka_ts_ms=source,
    )


def attributed_c1(source: int = 1520, request_time: int | None = 1000) -> dict:
    return rec(
        "attributed_callback",
        impression_id="i1",
        callback_id="c1",
        campaign_id="camp1",
        creative_id="cr1",
        event_type="click",
        request_time_ms=request_time,
        impression_time_ms=1200,
        callback_time_ms=1500,
        source_kafka_ts_ms=source,
    )


# -- in order ----------------------------------------------------------------------------------


def test_in_order_chain_one_event_per_batch():
    tester = make_tester()
    assert tester.test("r1", [req(1000, 1000)]) == []
    assert_rows(tester.test("r1", [imp("i1", 1200, 1210)]), [attributed_i1()])
    assert_rows(tester.test("r1", [cb("c1", "i1", 1500, 1520)]), [attributed_c1()])
    assert_rows(
        tester.test("r1", [cb("c2", "i1", 1700, 1720, event_type="install", value=2.5)]),
        [
            rec(
                "attributed_callback",
                impression_id="i1",
                callback_id="c2",
                campaign_id="camp1",
                creative_id="cr1",
                event_type="install",
                value=2.5,
                request_time_ms=1000,
                impression_time_ms=1200,
                callback_time_ms=1700,
                source_kafka_ts_ms=1720,
            )
        ],
    )
    assert tester.setWatermark(1999) == []
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=2,
                filled=True,
                source_kafka_ts_ms=1720,
            )
        ],
    )


# -- any arrival order -------------------------------------------------------------------------


def test_impression_before_request():
    tester = make_tester()
    assert tester.test("r1", [imp("i1", 1200, 1100)]) == []
    assert state(tester)["timers"] == (2200, None)  # no request yet: the impression's own close
    assert_rows(tester.test("r1", [req(1000, 1150)]), [attributed_i1(source=1150)])
    assert state(tester)["timers"] == (2000, None)  # the request's close replaces it
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=0,
                filled=True,
                source_kafka_ts_ms=1150,
            )
        ],
    )
    assert tester.setWatermark(2200) == []  # the replaced timer is gone


def test_callback_before_impression():
    tester = make_tester()
    assert tester.test("r1", [req(1000, 1000)]) == []
    assert tester.test("r1", [cb("c1", "i1", 1500, 1100)]) == []
    assert_rows(
        tester.test("r1", [imp("i1", 1200, 1210)]), [attributed_i1(), attributed_c1(source=1210)]
    )


def test_callback_before_request_and_impression():
    tester = make_tester()
    assert tester.test("r1", [cb("c1", "i1", 1500, 1050)]) == []
    # The callback needs only its impression: attributed before the request exists.
    assert_rows(
        tester.test("r1", [imp("i1", 1200, 1100)]), [attributed_c1(source=1100, request_time=None)]
    )
    assert_rows(tester.test("r1", [req(1000, 1150)]), [attributed_i1(source=1150)])
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=1,
                filled=True,
                source_kafka_ts_ms=1150,
            )
        ],
    )


def test_whole_chain_in_one_batch_listed_in_reverse():
    # Same Kafka timestamp: handled request, impression, callback, whatever the list order.
    tester = make_tester()
    rows = [req(1000, 1900), imp("i1", 1200, 1900), cb("c1", "i1", 1500, 1900)]
    assert_rows(
        tester.test("r1", rows[::-1]), [attributed_i1(source=1900), attributed_c1(source=1900)]
    )
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=1,
                filled=True,
                source_kafka_ts_ms=1900,
            )
        ],
    )


def test_whole_chain_in_one_batch_arriving_in_reverse():
    # Kafka timestamps reversed: handled callback, impression, request, as if one per batch, so
    # the callback is attributed before the request is there.
    tester = make_tester()
    rows = [req(1000, 1300), imp("i1", 1200, 1200), cb("c1", "i1", 1500, 1100)]
    assert_rows(
        tester.test("r1", rows),
        [attributed_c1(source=1200, request_time=None), attributed_i1(source=1300)],
    )


# -- once ----------------------------------------------------------------------------------------


def test_duplicates_in_one_batch_are_emitted_once():
    tester = make_tester()
    rows = [
        req(1000, 1000),
        imp("i1", 1200, 1210),
        imp("i1", 1200, 1215),
        cb("c1", "i1", 1500, 1520),
        cb("c1", "i1", 1500, 1525),
        req(1000, 1530),
    ]
    assert_rows(tester.test("r1", rows), [attributed_i1(), attributed_c1()])
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=1,
                filled=True,
                source_kafka_ts_ms=1520,
            )
        ],
    )


def test_duplicates_in_later_batches_are_ignored():
    tester = make_tester()
    tester.test("r1", [req(1000, 1000), imp("i1", 1200, 1210), cb("c1", "i1", 1500, 1520)])
    assert tester.test("r1", [imp("i1", 1200, 1600)]) == []
    assert tester.test("r1", [cb("c1", "i1", 1500, 1700), imp("i1", 1200, 1701)]) == []
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=1,
                filled=True,
                source_kafka_ts_ms=1520,
            )
        ],
    )


def test_duplicate_request_first_one_stands():
    tester = make_tester()
    assert tester.test("r1", [req(1000, 1000)]) == []
    assert tester.test("r1", [req(1050, 1100)]) == []
    assert state(tester)["timers"] == (2000, None)
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=1000,
            )
        ],
    )
    assert tester.setWatermark(2050) == []


def test_duplicate_unattributed_impression_is_one_orphan():
    tester = make_tester()
    tester.test("r1", [req(1000, 1000), imp("i9", 500, 1010)])
    tester.test("r1", [imp("i9", 500, 1020)])
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=1000,
            ),
            rec(
                "orphan_impression",
                impression_id="i9",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=500,
                source_kafka_ts_ms=1010,
            ),
        ],
    )


# -- skew edges ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "impression_time, attributed",
    [
        (900, True),  # exactly -skew
        (2000, True),  # exactly +window
        (899, False),  # 1 ms before -skew
        (2001, False),  # 1 ms after +window
    ],
)
def test_impression_window_edges(impression_time, attributed):
    tester = make_tester()
    tester.test("r1", [req(1000, 10)])
    out = tester.test("r1", [imp("i1", impression_time, 20)])
    imp_fields = dict(
        impression_id="i1",
        campaign_id="camp1",
        creative_id="cr1",
        impression_time_ms=impression_time,
        source_kafka_ts_ms=20,
    )
    if attributed:
        assert_rows(out, [rec("attributed_impression", request_time_ms=1000, **imp_fields)])
        closed = [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=0,
                filled=True,
                source_kafka_ts_ms=20,
            )
        ]
    else:
        assert out == []
        closed = [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=10,
            ),
            rec("orphan_impression", **imp_fields),
        ]
    assert_rows(tester.setWatermark(2000), closed)


@pytest.mark.parametrize(
    "callback_time, attributed",
    [
        (1100, True),  # exactly -skew from the impression at 1200
        (2200, True),  # exactly +window
        (1099, False),
        (2201, False),
    ],
)
def test_callback_window_edges(callback_time, attributed):
    tester = make_tester()
    tester.test("r1", [req(1000, 10), imp("i1", 1200, 20)])
    out = tester.test("r1", [cb("c1", "i1", callback_time, 30)])
    cb_fields = dict(
        impression_id="i1",
        callback_id="c1",
        event_type="click",
        callback_time_ms=callback_time,
        source_kafka_ts_ms=30,
    )
    if attributed:
        assert_rows(
            out,
            [
                rec(
                    "attributed_callback",
                    campaign_id="camp1",
                    creative_id="cr1",
                    request_time_ms=1000,
                    impression_time_ms=1200,
                    **cb_fields,
                )
            ],
        )
        closed = [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=1,
                filled=True,
                source_kafka_ts_ms=30,
            )
        ]
    else:
        assert out == []
        closed = [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=0,
                filled=True,
                source_kafka_ts_ms=20,
            ),
            rec("orphan_callback", **cb_fields),
        ]
    assert_rows(tester.setWatermark(2000), closed)


# -- close -----------------------------------------------------------------------------------------


def test_close_with_impressions_counts_and_orphans():
    tester = make_tester()
    tester.test(
        "r1",
        [
            req(1000, 1000),
            imp("i1", 1200, 1210),
            imp("i2", 1300, 1220, campaign="camp2", creative="cr2"),
            imp("i3", 2500, 1230),  # outside the request's window
            cb("c1", "i1", 1500, 1520),
            cb("c2", "i2", 1400, 1530),
            cb("c3", "i3", 2600, 1540),  # its impression is not attributed
            cb("c4", "missing", 1500, 1550),
        ],
    )  # its impression never came
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=2,
                callbacks=3,
                filled=True,
                source_kafka_ts_ms=1540,
            ),
            rec(
                "orphan_impression",
                impression_id="i3",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=2500,
                source_kafka_ts_ms=1230,
            ),
            rec(
                "orphan_callback",
                impression_id="missing",
                callback_id="c4",
                event_type="click",
                callback_time_ms=1500,
                source_kafka_ts_ms=1550,
            ),
        ],
    )


def test_close_without_impressions_is_unfilled():
    tester = make_tester()
    tester.test("r1", [req(1000, 1005)])
    assert_rows(
        tester.setWatermark(2000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=1005,
            )
        ],
    )


def test_timer_fires_only_when_watermark_reaches_close_time():
    tester = make_tester()
    tester.test("r1", [req(1000, 1000), imp("i1", 1200, 1210)])
    assert state(tester)["timers"] == (2000, None)
    assert tester.setWatermark(1500) == []
    assert tester.setWatermark(1999) == []
    assert [r.record_type for r in tester.setWatermark(2000)] == ["request_closed"]


def test_close_time_behind_watermark_closes_in_the_same_call():
    tester = make_tester()
    tester.setWatermark(5000)
    out = tester.test("r1", [req(1000, 5001), imp("i1", 1200, 5002)])
    assert_rows(
        out,
        [
            attributed_i1(source=5002),
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=0,
                filled=True,
                source_kafka_ts_ms=5002,
            ),
        ],
    )
    assert state(tester)["timers"] == (2000, 6000)  # no close timer, only the tombstone's
    assert tester.setWatermark(6000) == []
    assert state(tester) == EMPTY


def test_tombstone_of_a_key_closed_in_call_lasts_one_window_from_now():
    # The keyless impression's timer (4500) is replaced by the late request's close time (2000),
    # behind the watermark: the key closes at once and its tombstone ends one window from now
    # (3000 + 1000), not one window after the replaced timer.
    tester = make_tester()
    tester.test("r1", [imp("i1", 3500, 100)])
    tester.setWatermark(3000)
    assert_rows(
        tester.test("r1", [req(1000, 3001)]),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=3001,
            ),
            rec(
                "orphan_impression",
                impression_id="i1",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=3500,
                source_kafka_ts_ms=100,
            ),
        ],
    )
    assert state(tester)["timers"] == (2000, 4000)
    assert tester.setWatermark(4000) == []
    assert state(tester) == EMPTY
    # Forgotten, so the same impression again opens a new key (its close, 4500, is ahead of the
    # watermark), closed as an orphan again; a tombstone still alive would have swallowed it.
    assert tester.test("r1", [imp("i1", 3500, 4100)]) == []
    assert_rows(
        tester.setWatermark(4500),
        [
            rec(
                "orphan_impression",
                impression_id="i1",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=3500,
                source_kafka_ts_ms=4100,
            )
        ],
    )


def test_state_is_empty_after_close_and_tombstone():
    tester = make_tester()
    tester.test("r1", [req(1000, 1000), imp("i1", 1200, 1210), cb("c1", "i1", 1500, 1520)])
    tester.setWatermark(2000)
    assert state(tester) == {
        "request": None,
        "impressions": {},
        "callbacks": {},
        "timers": (2000, 3000),
        "closed_ids": {("r1",): ("request",), ("i1",): ("impression",), ("c1",): ("callback",)},
    }
    assert tester.setWatermark(2999) == []
    assert state(tester)["timers"] == (2000, 3000)
    assert tester.setWatermark(3000) == []
    assert state(tester) == EMPTY


# -- keys without a request --------------------------------------------------------------------


def test_orphans_under_key_without_request_close_on_their_own_timer():
    tester = make_tester()
    assert (
        tester.test("r9", [imp("i1", 1300, 1300, rid="r9"), cb("c1", "gone", 1500, 1310, rid="r9")])
        == []
    )
    assert state(tester, "r9")["timers"] == (2300, None)  # first item's time + window
    assert tester.setWatermark(2299) == []
    assert_rows(
        tester.setWatermark(2300),
        [
            rec(
                "orphan_impression",
                "r9",
                impression_id="i1",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=1300,
                source_kafka_ts_ms=1300,
            ),
            rec(
                "orphan_callback",
                "r9",
                impression_id="gone",
                callback_id="c1",
                event_type="click",
                callback_time_ms=1500,
                source_kafka_ts_ms=1310,
            ),
        ],
    )
    s = state(tester, "r9")
    assert (s["request"], s["impressions"], s["callbacks"]) == (None, {}, {})
    assert tester.setWatermark(3300) == []
    assert state(tester, "r9") == EMPTY


def test_key_without_request_attributes_callback_to_its_impression():
    tester = make_tester()
    out = tester.test("r9", [imp("i1", 1200, 1210, rid="r9"), cb("c1", "i1", 1500, 1520, rid="r9")])
    assert_rows(
        out,
        [
            rec(
                "attributed_callback",
                "r9",
                impression_id="i1",
                callback_id="c1",
                campaign_id="camp1",
                creative_id="cr1",
                event_type="click",
                impression_time_ms=1200,
                callback_time_ms=1500,
                source_kafka_ts_ms=1520,
            )
        ],
    )
    assert_rows(
        tester.setWatermark(2200),
        [
            rec(
                "orphan_impression",
                "r9",
                impression_id="i1",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=1200,
                source_kafka_ts_ms=1210,
            )
        ],
    )


# -- after close -----------------------------------------------------------------------------------


def test_events_after_close_are_orphans_at_once_and_once():
    tester = make_tester()
    tester.test("r1", [req(1000, 1000), imp("i1", 1200, 1210)])
    tester.setWatermark(2000)
    assert_rows(
        tester.test("r1", [imp("i2", 1300, 2100)]),
        [
            rec(
                "orphan_impression",
                impression_id="i2",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=1300,
                source_kafka_ts_ms=2100,
            )
        ],
    )
    assert tester.test("r1", [imp("i1", 1200, 2200), imp("i2", 1300, 2201)]) == []
    assert_rows(
        tester.test("r1", [cb("c1", "i1", 1400, 2300)]),
        [
            rec(
                "orphan_callback",
                impression_id="i1",
                callback_id="c1",
                event_type="click",
                callback_time_ms=1400,
                source_kafka_ts_ms=2300,
            )
        ],
    )
    assert tester.test("r1", [cb("c1", "i1", 1400, 2400), req(1000, 2401)]) == []


def test_late_request_after_orphans_closed_is_unfilled_request_closed():
    tester = make_tester()
    tester.test("r1", [imp("i1", 1500, 1500)])
    assert [r.record_type for r in tester.setWatermark(2500)] == ["orphan_impression"]
    assert_rows(
        tester.test("r1", [req(1400, 2600)]),
        [
            rec(
                "request_closed",
                request_time_ms=1400,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=2600,
            )
        ],
    )
    assert tester.test("r1", [req(1400, 2700)]) == []


def test_straggler_after_tombstone_is_emitted_at_once():
    tester = make_tester()
    tester.test("r1", [imp("i1", 1500, 1500)])
    tester.setWatermark(2500)  # closes; tombstone until 3500
    assert tester.setWatermark(3500) == []
    assert state(tester) == EMPTY
    # A new key whose close time (1600 + 1000) is behind the watermark: closed at once.
    assert_rows(
        tester.test("r1", [imp("i2", 1600, 3600)]),
        [
            rec(
                "orphan_impression",
                impression_id="i2",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=1600,
                source_kafka_ts_ms=3600,
            )
        ],
    )
    assert state(tester)["timers"] == (2600, 4500)
    assert_rows(
        tester.test("r1", [req(1400, 3700), cb("c1", "i2", 1700, 3701)]),
        [
            rec(
                "request_closed",
                request_time_ms=1400,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=3700,
            ),
            rec(
                "orphan_callback",
                impression_id="i2",
                callback_id="c1",
                event_type="click",
                callback_time_ms=1700,
                source_kafka_ts_ms=3701,
            ),
        ],
    )
    assert tester.setWatermark(4500) == []
    assert state(tester) == EMPTY


def test_late_request_alone_after_tombstone_is_unfilled_request_closed():
    tester = make_tester()
    tester.setWatermark(9000)
    assert_rows(
        tester.test("r1", [req(1000, 9001)]),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=9001,
            )
        ],
    )


# -- lifetime bound (the TTL safety net) --------------------------------------------------------
# Spark rejects state TTL in EventTime mode, so the processor bounds each key's life with a second
# event-time timer, ttl after the key first got state.


def pending_timers(tester: TwsTester, key: str = "r1") -> list[int]:
    """The Python tester's pending timers of ``key`` (the Scala tester does not expose them)."""
    return list(tester.handle._timers.listTimers(key))


@pytest.mark.python_only
def test_every_key_gets_a_lifetime_bound_that_goes_with_it():
    tester = make_tester()
    tester.test("r1", [req(1000, 1010)])
    assert tester.peekValueState("expiry", "r1") == (11_000,)  # first event time + ttl
    assert pending_timers(tester) == [2000, 11_000]
    tester.setWatermark(2000)  # close; tombstone until 3000
    tester.setWatermark(3000)  # tombstone gone: the whole key, its lifetime timer included
    assert state(tester) == EMPTY and tester.peekValueState("expiry", "r1") is None
    assert pending_timers(tester) == []


def test_lifetime_bound_closes_a_key_whose_close_time_lies_beyond_it():
    # An impression first (lifetime bound 1000 + ttl = 11000), then a request whose window ends
    # far later: the bound fires first, closes the key as usual and forgets it.
    tester = make_tester()
    tester.test("r1", [imp("i1", 1000, 1010)])
    assert tester.peekValueState("expiry", "r1") == (11_000,)
    tester.test("r1", [req(50_000, 1020)])
    assert state(tester)["timers"] == (51_000, None)
    assert_rows(
        tester.setWatermark(11_000),
        [
            rec(
                "request_closed",
                request_time_ms=50_000,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=1020,
            ),
            rec(
                "orphan_impression",
                impression_id="i1",
                campaign_id="camp1",
                creative_id="cr1",
                impression_time_ms=1000,
                source_kafka_ts_ms=1010,
            ),
        ],
    )
    assert state(tester) == EMPTY and tester.peekValueState("expiry", "r1") is None
    assert tester.setWatermark(60_000) == []  # the close timer went with the key


@pytest.mark.python_only
def test_lifetime_bound_closes_and_forgets_a_key_whose_close_timer_was_lost():
    tester = make_tester()
    tester.test("r1", [req(1000, 1010), imp("i1", 1200, 1210)])
    tester.handle.setGroupingKey("r1")
    tester.handle.deleteTimer(2000)  # the close timer is lost
    assert tester.setWatermark(10_999) == []
    assert_rows(
        tester.setWatermark(11_000),
        [
            rec(
                "request_closed",
                request_time_ms=1000,
                impressions=1,
                callbacks=0,
                filled=True,
                source_kafka_ts_ms=1210,
            )
        ],
    )
    assert state(tester) == EMPTY and tester.peekValueState("expiry", "r1") is None
    assert pending_timers(tester) == []


class _RecordingHandle:
    """Records the state variables a processor's ``init`` asks for (name → schemas)."""

    def __init__(self) -> None:
        self.states: dict[str, tuple] = {}

    def getValueState(self, name, schema, ttl=None):
        self.states[name] = (schema,)

    def getMapState(self, name, key_schema, value_schema, ttl=None):
        self.states[name] = (key_schema, value_schema)


@pytest.mark.python_only
def test_processor_declares_exactly_the_contracts_state_variables():
    # The JVM port gets its state schemas from the same contract (contract_json), and the
    # peekValueState/peekMapState assertions above read these names from both engines.
    handle = _RecordingHandle()
    AttributionProcessor(CONFIG).init(handle)
    assert sorted(handle.states) == sorted(STATE_NAMES)
    schemas = json.loads(contract_json())["schemas"]
    assert handle.states["request"][0].jsonValue() == schemas["request"]
    assert [s.jsonValue() for s in handle.states["impressions"]] == [
        schemas["id_key"],
        schemas["impression"],
    ]


def test_jvm_processor_takes_its_names_from_the_python_contract(spark):
    # No record type is written in Java: rename one in the contract and the JVM emits the new name.
    contract = json.loads(contract_json())
    contract["names"]["attributed_impression"] = "renamed_impression"
    tester = JvmTwsTester(spark, CONFIG, contract=json.dumps(contract))
    out = tester.test("r1", [req(1000, 1000), imp("i1", 1200, 1210)])
    assert [r.record_type for r in out] == ["renamed_impression"]
    assert ATTRIBUTED_IMPRESSION != "renamed_impression"


def test_jvm_processor_refuses_a_contract_without_a_name(spark):
    contract = json.loads(contract_json())
    del contract["names"]["rejected"]
    with pytest.raises(Exception, match="no name 'rejected'"):
        JvmTwsTester(spark, CONFIG, contract=json.dumps(contract))


@pytest.mark.parametrize(
    "window, lateness, ttl, ok",
    [
        (1000, 0, 2000, False),
        (1000, 0, 2001, True),
        (1000, 500, 2500, False),
        (1000, 500, 2501, True),
    ],
)
def test_ttl_must_exceed_two_windows_plus_lateness(window, lateness, ttl, ok):
    if ok:
        assert AttributionConfig(window, 100, lateness, ttl).ttl_ms == ttl
    else:
        with pytest.raises(ValueError, match="ttl_ms"):
            AttributionConfig(window, 100, lateness, ttl)


def test_negative_durations_are_rejected():
    with pytest.raises(ValueError, match="skew_ms"):
        AttributionConfig(1000, -1, 0, 10_000)


# -- randomized, against a reference implementation ---------------------------------------------
# The reference (tests/support/attribution_reference.py) is written from the rules alone.


def _offset(rng: random.Random) -> int:
    return rng.choice(
        [
            -SKEW - 1,
            -SKEW,
            0,
            WINDOW,
            WINDOW + 1,
            rng.randint(-SKEW, WINDOW),
            rng.randint(-3 * WINDOW, 3 * WINDOW),
        ]
    )


def _scenario(seed: int) -> list[tuple]:
    """Steps ("watermark", ms) and ("batch", {request_id: [(event, kafka_ts), ...]})."""
    rng = random.Random(seed)
    events: list[Event] = []
    for k in range(rng.randint(1, 3)):
        rid = f"r{k}"
        base = rng.randint(500, 4000)
        if rng.random() < 0.75:
            events.append(Event("request", rid, base))
        impressions = []
        for n in range(rng.randint(0, 2)):
            impressions.append(Event("impression", rid, base + _offset(rng), f"{rid}-i{n}"))
        events += impressions
        for n in range(rng.randint(0, 3)):
            if impressions and rng.random() < 0.8:
                partner = rng.choice(impressions)
                iid, t = partner.impression_id, partner.t
            else:
                iid, t = f"{rid}-missing{n}", base
            events.append(Event("callback", rid, t + _offset(rng), iid, f"{rid}-c{n}"))
    events += [e for e in events if rng.random() < 0.3]  # duplicates
    rng.shuffle(events)

    steps: list[tuple] = []
    watermark, i = 0, 0

    def add_batch(chunk: list[Event]) -> None:
        arrival = watermark + rng.randint(1, 300)
        rows: dict[str, list] = {}
        for e in chunk:
            rows.setdefault(e.request_id, []).append((e, arrival + rng.randint(0, 50)))
        steps.append(("batch", rows))

    while i < len(events):
        if rng.random() < 0.5:
            watermark += rng.randint(1, 2500)
            steps.append(("watermark", watermark))
        n = rng.randint(1, 4)
        add_batch(events[i : i + n])
        i += n
    # Everything closes, then every tombstone expires.
    latest = max((e.t for e in events), default=0)
    watermark = max(watermark, latest + WINDOW) + 1
    steps.append(("watermark", watermark))
    watermark += WINDOW
    steps.append(("watermark", watermark))
    if events and rng.random() < 0.5:  # stragglers re-sent after the tombstones are gone
        add_batch(rng.sample(events, rng.randint(1, min(3, len(events)))))
        watermark += WINDOW
        steps.append(("watermark", watermark))
    return steps


def _identities(rows) -> Counter:
    return Counter(
        (
            r.record_type,
            r.request_id,
            r.impression_id,
            r.callback_id,
            r.impressions,
            r.callbacks,
            r.filled,
        )
        for r in rows
    )


def _describe(seed: int, steps: list[tuple]) -> str:
    lines = [f"seed={seed}"]
    for kind, value in steps:
        if kind == "watermark":
            lines.append(f"  setWatermark({value})")
        else:
            for rid, rows in value.items():
                lines.append(
                    f"  test({rid!r}, ["
                    + ", ".join(
                        f"{e.kind}(t={e.t}, kts={kts}, imp={e.impression_id}, cb={e.callback_id})"
                        for e, kts in rows
                    )
                    + "])"
                )
    return "\n".join(lines)


@pytest.mark.parametrize("chunk", range(4))
def test_randomized_scenarios_match_the_reference(chunk):
    for seed in range(chunk * 100, chunk * 100 + 100):
        steps = _scenario(seed)
        tester, ref = make_tester(), ReferenceAttribution(WINDOW, SKEW)
        got: list = []
        for kind, value in steps:
            if kind == "watermark":
                got += tester.setWatermark(value)
                ref.advance(value)
            else:
                for rid, rows in value.items():
                    got += tester.test(
                        rid,
                        [
                            input_row(
                                e.kind,
                                rid,
                                e.t,
                                kts,
                                impression_id=e.impression_id,
                                callback_id=e.callback_id,
                            )
                            for e, kts in rows
                        ],
                    )
                    ref.batch(rid, rows)
        expected = Counter(ref.out)
        actual = _identities(got)
        assert actual == expected, (
            f"{_describe(seed, steps)}\nmissing: {expected - actual}\n"
            f"unexpected: {actual - expected}"
        )
        assert not ref.keys
        for rid in {rid for kind, v in steps if kind == "batch" for rid in v}:
            assert state(tester, rid) == EMPTY, _describe(seed, steps)
        # Every record carries its ids for downstream deduplication.
        assert all(rid for _, rid, *_ in record_ids(got))
