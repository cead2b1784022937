"""The reconciliation's batch attribution in memory (``spark_apps.common.attribution.in_memory``)
against the Python processor run as ``transformWithState`` (through its state server, the
specification) and against the reference rules (``tests/support/attribution_reference.py``):
the same multiset of output rows over a random generated day (late, out of order, duplicated,
orphaned events, ties of time and arrival, callbacks without an impression id, keys without a
request) and over bad input the typed layers let through (null ids and fields).
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest

from spark_apps.common.attribution.batch import transform_attribute
from spark_apps.common.attribution.contract import INPUT_SCHEMA, AttributionConfig
from spark_apps.common.attribution.in_memory import transform_attribute_in_memory
from spark_apps.common.attribution.processor import input_row
from tests.support.attribution_reference import Event, ReferenceAttribution

pytestmark = pytest.mark.integration

WINDOW, SKEW = 1000, 100
CONFIG = AttributionConfig(
    window_ms=WINDOW, skew_ms=SKEW, lateness_ms=0, ttl_ms=10_000, close_at_end_of_input=True
)


def generated_day(seed: int, keys: int) -> list[tuple[Event, int]]:
    """Events of ``keys`` keys, each with its Kafka timestamp: requests (one in five keys has
    none), impressions and callbacks around it at the window's edges and far out, callbacks of
    missing impressions or none, duplicates re-sent later, ties of event time and arrival."""
    rng = random.Random(seed)

    def offset() -> int:
        return rng.choice(
            [
                -SKEW - 1,
                -SKEW,
                0,
                WINDOW,
                WINDOW + 1,
                rng.randint(-SKEW, WINDOW),
                rng.randint(-3000, 3000),
            ]
        )

    events: list[Event] = []
    for k in range(keys):
        rid, base = f"r{k}", rng.randint(10_000, 86_400_000)
        if rng.random() < 0.8:
            events.append(Event("request", rid, base))
        impressions = [
            Event("impression", rid, base + offset(), f"{rid}-i{n}")
            for n in range(rng.randint(0, 3))
        ]
        events += impressions
        for n in range(rng.randint(0, 3)):
            if impressions and rng.random() < 0.7:
                partner = rng.choice(impressions)
                iid, t = partner.impression_id, partner.t
            else:
                iid, t = rng.choice([f"{rid}-missing{n}", None]), base
            events.append(Event("callback", rid, t + offset(), iid, f"{rid}-c{n}"))
    events += [e for e in events if rng.random() < 0.2]  # duplicates
    arrivals = []
    for e in events:
        # late and out of order: up to a minute after the event; a tenth arrive in one tie
        kts = e.t + rng.choice([0, 0, rng.randint(0, 60_000)])
        arrivals.append((e, kts))
    rng.shuffle(arrivals)
    return arrivals


def as_rows(arrivals: list[tuple[Event, int]]) -> list:
    return [
        input_row(
            e.kind,
            e.request_id,
            e.t,
            kts,
            impression_id=e.impression_id,
            callback_id=e.callback_id,
            campaign_id=None if e.impression_id is None else "camp",
            creative_id="cr",
            event_type="click" if e.kind == "callback" else None,
        )
        for e, kts in arrivals
    ]


def reference(arrivals: list[tuple[Event, int]]) -> Counter:
    ref = ReferenceAttribution(WINDOW, SKEW)
    by_key: dict[str, list] = {}
    for e, kts in arrivals:
        by_key.setdefault(e.request_id, []).append((e, kts))
    for rid, rows in by_key.items():
        ref.batch(rid, rows)
    ref.advance(10**15)  # the end of the input: every key closes
    return Counter(ref.out)


def identities(rows) -> Counter:
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


def test_in_memory_equals_the_processor_through_its_state_server_and_the_reference(spark):
    arrivals = generated_day(seed=7, keys=400)
    events = spark.createDataFrame(as_rows(arrivals), INPUT_SCHEMA)
    specification = transform_attribute(events, CONFIG, state_server=True).collect()
    in_memory = transform_attribute(events, CONFIG).collect()
    # every column of every row, as a multiset
    assert Counter(in_memory) == Counter(specification)
    assert len(in_memory) > 400
    expected = reference(
        [(e, kts) for e, kts in arrivals if e.impression_id or e.kind != "callback"]
    )
    got = identities(r for r in in_memory if r.impression_id or r.record_type != "orphan_callback")
    assert got == expected, f"missing {expected - got}\nunexpected {got - expected}"


def test_bad_input_is_attributed_as_the_processor_attributes_it(spark):
    nulls = [
        input_row("callback", "k1", 10, impression_id=None, callback_id="c1"),
        input_row("callback", "k1", 10, impression_id=None, callback_id="c1"),
        input_row("impression", "k1", 10, impression_id="i1", campaign_id=None, creative_id=None),
        input_row("request", "k2", 5, 5),
        input_row("request", "k2", 5, 5),  # a tie: the same event twice at the same arrival
        input_row("impression", "k2", 5, 5, impression_id="i2"),
        input_row("callback", "k3", 7, 7, impression_id="i2", callback_id=None),
        input_row("impression", None, 9, impression_id="i9"),
    ]
    events = spark.createDataFrame(nulls, INPUT_SCHEMA)
    assert Counter(transform_attribute(events, CONFIG).collect()) == Counter(
        transform_attribute(events, CONFIG, state_server=True).collect()
    )


def test_the_stream_cannot_run_in_memory(spark):
    events = spark.createDataFrame([], INPUT_SCHEMA)
    with pytest.raises(ValueError, match="batch only"):
        transform_attribute_in_memory(
            events, dataclasses.replace(CONFIG, close_at_end_of_input=False)
        )
