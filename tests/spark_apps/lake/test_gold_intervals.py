"""A day's gold partition depends on silver alone, not on the interval that recomputed it.

Silver holds chains that cross midnight: a request and its impression late on one day, their
callbacks just after midnight; a request late on a day whose impression comes just after
midnight; a callback a little before its own impression (the attribution skew) across midnight;
clicks and surge windows on both sides of midnight. Every gold table is rebuilt over
[20th, 23rd), then over [21st, 23rd) and [21st, 22nd): each day the shorter intervals rewrite
must equal what the long one wrote. Then the 21st's partition, rebuilt alone, is checked against
rows written out by hand for the tables whose rows reach across midnight.

Times that sit on the edge of the attribution window come from the attribution contract
(``AttributionConfig``), so the data stays on the edge if the window changes. All times are UTC.
"""

from __future__ import annotations

import random
import shutil
from datetime import UTC, date, datetime, timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from adlake import registry
from adlake.catalog import gold as gold_models
from adlake.catalog.gold import DAY, HOUR, NAMES, transform_paired_callbacks
from spark_apps.common.attribution.contract import AttributionConfig
from spark_apps.lake import gold
from spark_apps.lake.tables import ensure_table, read_table
from tests.spark_apps.lake.test_transforms import at, d, frame, silver
from tests.tiers import variants

WINDOW = timedelta(milliseconds=AttributionConfig().window_ms)
SKEW = timedelta(milliseconds=AttributionConfig().skew_ms)

LONG = (d(20), d(23))
SHORTER = [(d(21), d(23)), (d(21), d(22))]


def request(req: str, when: datetime) -> dict:
    return {"request_id": req, "event_time": when}


def impression(imp: str, req: str, campaign: str, when: datetime) -> dict:
    return {
        "impression_id": imp,
        "request_id": req,
        "campaign_id": campaign,
        "creative_id": campaign.lower() + "1",
        "event_time": when,
    }


def callback(cb: str, imp: str, req: str, event_type: str, when: datetime) -> dict:
    return {
        "callback_id": cb,
        "impression_id": imp,
        "request_id": req,
        "event_type": event_type,
        "event_time": when,
    }


def realtime(
    record_type: str,
    req: str,
    imp: str | None,
    cb: str | None,
    request_time: datetime | None,
    impression_time: datetime | None = None,
    callback_time: datetime | None = None,
) -> dict:
    """A real-time attributed_events record; it reached Kafka with its latest event."""
    times = [t for t in (request_time, impression_time, callback_time) if t]
    return {
        "record_type": record_type,
        "request_id": req,
        "impression_id": imp,
        "callback_id": cb,
        "request_time": request_time,
        "impression_time": impression_time,
        "callback_time": callback_time,
        "source_kafka_ts": max(times),
    }


# r1 and i1 just before midnight of the 20th; their callbacks after it, the conversion on the
# last instant of the window, c8 one millisecond past it (counted for no campaign).
I1 = at("23:59:55", day=20)
# c6 comes the whole skew before its impression i4, which falls on the next day.
C6 = at("23:59:55", day=21)
I4 = C6 + SKEW

SILVER = {
    "ad_requests": [
        request("r0", at("10:00:00", day=20)),
        request("r1", at("23:59:50", day=20)),
        request("r2", at("10:00:00")),
        request("r3", at("23:59:58")),  # its impression is on the 22nd
        request("r4", C6 - timedelta(seconds=1)),
        request("r5", at("12:00:00", day=22)),  # never filled
    ],
    "ad_impressions": [
        impression("i0", "r0", "A", at("10:00:01", day=20)),
        impression("i1", "r1", "A", I1),
        impression("i2", "r2", "B", at("10:00:01")),
        impression("i3", "r3", "A", at("00:00:02", day=22)),
        impression("i4", "r4", "B", I4),
    ],
    "ad_callbacks": [
        callback("c0", "i0", "r0", "click", at("10:00:30", day=20)),
        callback("c1", "i1", "r1", "click", at("00:00:10")),
        callback("c3", "i1", "r1", "first_quartile", at("00:00:20")),
        callback("c2", "i1", "r1", "conversion", I1 + WINDOW),
        callback("c8", "i1", "r1", "click", I1 + WINDOW + timedelta(milliseconds=1)),
        callback("c4", "i2", "r2", "click", at("10:00:30")),
        callback("c5", "i3", "r3", "click", at("00:00:30", day=22)),
        callback("c6", "i4", "r4", "complete", C6),
        callback("c7", "i-none", "r-none", "click", at("00:02:00")),  # no impression at all
    ],
    "attributed_events": [
        realtime("attributed_impression", "r1", "i1", None, at("23:59:50", day=20), I1),
        realtime(
            "attributed_callback", "r1", "i1", "c1", at("23:59:50", day=20), I1, at("00:00:10")
        ),
        realtime("attributed_impression", "r3", "i3", None, at("23:59:58"), at("00:00:02", day=22)),
        realtime("request_closed", "r3", None, None, at("23:59:58")),
        realtime("orphan_callback", "r-none", "i-none", "c7", None, None, at("00:02:00")),
        realtime(
            "attributed_impression", "r9", "i9", None, at("09:00:00"), at("09:00:01")
        ),  # only in real time
    ],
    "page_clicks": [
        {
            "click_id": "k1",
            "page_id": "home",
            "event_time": at("23:59:59.500", day=20),
            "user_id": "u1",
        },
        {"click_id": "k2", "page_id": "home", "event_time": at("00:00:00"), "user_id": "u1"},
        {"click_id": "k3", "page_id": "home", "event_time": at("00:00:30"), "user_id": "u2"},
        {"click_id": "k4", "page_id": "news", "event_time": at("23:59:59.999"), "user_id": "u3"},
        {
            "click_id": "k5",
            "page_id": "news",
            "event_time": at("00:00:00.001", day=22),
            "user_id": "u3",
        },
    ],
    "page_surges": [
        {
            "page_id": "home",
            "window_start": start,
            "window_end": start + timedelta(seconds=5),
            "click_count": count,
            "max_event_time": start,
            "source_kafka_ts": start,
        }
        for start, count in [
            (at("23:59:58", day=20), 11),
            (at("23:59:58", day=20), 14),
            (at("23:59:59"), 12),
            (at("00:00:01", day=22), 20),
        ]
    ],
}


@pytest.fixture(scope="module")
def lake(spark, settings, tmp_path_factory):
    """Settings of this module's own tables, with the silver tables above written."""
    lake = settings.with_overrides(runtime_dir=tmp_path_factory.mktemp("gold-intervals"))
    for topic, rows in SILVER.items():
        path = ensure_table(spark, lake, registry.table(f"silver_{topic}"))
        silver(spark, topic, rows).write.format("delta").mode("append").save(path)
    return lake


def partition(spark, lake, name: str, day: date):
    return read_table(spark, lake, name).where(F.col("event_date") == F.lit(day))


# make test: the reconciliation (chains across midnight, the widest margin); every table in e2e
@pytest.mark.parametrize("name", variants(NAMES, {"attribution_reconciliation"}))
def test_a_days_partition_is_the_same_whatever_interval_rebuilt_it(spark, lake, name):
    gold.rebuild(spark, lake, name, *LONG)
    days = [LONG[0] + timedelta(days=n) for n in range((LONG[1] - LONG[0]).days)]
    # Plain rows: the table is rewritten below.
    expected = {day: partition(spark, lake, name, day).collect() for day in days}
    assert expected[d(21)], f"{name}: the long interval wrote nothing for the 21st"
    schema = registry.table(name).schema.spark()

    for start, end in SHORTER:
        gold.rebuild(spark, lake, name, start, end)
        for n in range((end - start).days):
            day = start + timedelta(days=n)
            assertDataFrameEqual(
                partition(spark, lake, name, day), spark.createDataFrame(expected[day], schema)
            )


def rebuilt_alone(spark, lake, name: str, day: date):
    """``name``'s partition of ``day`` after rebuilding ``[day, day + 1)`` only."""
    gold.rebuild(spark, lake, name, day, day + timedelta(days=1))
    return partition(spark, lake, name, day)


def test_funnel_counts_callbacks_after_midnight_for_the_campaign_of_the_day_before(spark, lake):
    assertDataFrameEqual(
        rebuilt_alone(spark, lake, "attribution_funnel", d(21)),
        frame(
            spark,
            "attribution_funnel",
            [
                # campaign, date, requests, filled_requests, impressions, clicks, conversions, fill_rate
                ("A", d(21), None, 0, 0, 1, 1, None),  # c1, c2 of i1 (the 20th); c8 is too late
                ("B", d(21), None, 1, 1, 1, 0, None),  # c6 (complete), before i4 of the 22nd
                ("*", d(21), 3, 1, 1, 4, 1, 1 / 3),  # every callback of the day: c1-c4, c6-c8
            ],
        ),
    )


def test_delivery_counts_a_callback_in_its_hour_for_an_impression_across_midnight(spark, lake):
    assertDataFrameEqual(
        rebuilt_alone(spark, lake, "campaign_delivery", d(21)),
        frame(
            spark,
            "campaign_delivery",
            [
                # campaign, creative, date, hour, impressions, clicks, first_quartiles, midpoints,
                # third_quartiles, completes, conversions, click_through_rate, completion_rate
                ("A", "a1", d(21), 0, 0, 1, 1, 0, 0, 0, 1, None, None),
                ("B", "b1", d(21), 10, 1, 1, 0, 0, 0, 0, 0, 1.0, 0.0),
                ("B", "b1", d(21), 23, 0, 0, 0, 0, 0, 1, 0, None, None),
            ],
        ),
    )


def test_reconciliation_attributes_chains_across_midnight_in_batch(spark, lake):
    assertDataFrameEqual(
        rebuilt_alone(spark, lake, "attribution_reconciliation", d(21)),
        frame(
            spark,
            "attribution_reconciliation",
            [
                # date, record_type, matched, missing_in_realtime, extra_in_realtime
                (d(21), "attributed_impression", 1, 2, 1),  # r3 matched; r2, r4 missing; r9 extra
                (d(21), "attributed_callback", 0, 3, 0),  # c4, c5, c6 (r1's are the 20th's)
                (d(21), "request_closed", 1, 2, 0),  # r3 matched; r2, r4 missing
                (d(21), "orphan_callback", 1, 1, 0),  # c7 matched; c8, past i1's window, missing
            ],
        ),
    )


def test_a_callback_belongs_to_its_impression_within_the_attribution_window(spark):
    """The pairing campaign_delivery and attribution_funnel count by, the contract's
    ``in_window``: from one skew before the impression to one window after it, both included."""
    shown, ms = at("10:00:00"), timedelta(milliseconds=1)
    impressions = silver(spark, "ad_impressions", [impression("i1", "r1", "A", shown)])
    callbacks = silver(
        spark,
        "ad_callbacks",
        [
            callback("earliest", "i1", "r1", "click", shown - SKEW),
            callback("too-early", "i1", "r1", "click", shown - SKEW - ms),
            callback("latest", "i1", "r1", "conversion", shown + WINDOW),
            callback("too-late", "i1", "r1", "conversion", shown + WINDOW + ms),
            callback("elsewhere", "i2", "r2", "click", shown),  # its impression is not given
        ],
    )

    assertDataFrameEqual(
        transform_paired_callbacks(impressions, callbacks, AttributionConfig()).select(
            "callback_id", "event_type", "campaign_id", "creative_id"
        ),
        spark.createDataFrame(
            [("earliest", "click", "A", "a1"), ("latest", "conversion", "A", "a1")],
            "callback_id string, event_type string, campaign_id string, creative_id string",
        ),
    )


@pytest.mark.parametrize(
    ("start", "end", "hours", "days"),
    [
        # The hourly chain's intervals: an hour table rebuilds the hour, a day table its day.
        ("2026-11-21T13:00:00+00:00", "2026-11-21T14:00:00+00:00", ("21T13", "21T14"), (21, 22)),
        ("2026-11-21T23:00:00+00:00", "2026-11-22T00:00:00+00:00", ("21T23", "22T00"), (21, 22)),
        # A backfill by days, in dates or timestamps; an offset is converted to UTC first.
        ("2026-11-20", "2026-11-23", ("20T00", "23T00"), (20, 23)),
        ("2026-11-20T00:00:00Z", "2026-11-22T12:30:00Z", ("20T00", "22T13"), (20, 23)),
        ("2026-11-21T22:00:00-02:00", "2026-11-22T01:00:00Z", ("22T00", "22T01"), (22, 23)),
    ],
)
def test_an_interval_rebuilds_the_hours_or_days_it_touches(start, end, hours, days):
    args = gold.parse_args(["--start", start, "--end", end])

    def hour(text: str) -> datetime:
        return datetime.fromisoformat(f"2026-11-{text}:00+00:00")

    assert gold_models.covering(HOUR, args.start, args.end) == tuple(map(hour, hours))
    assert gold_models.covering(DAY, args.start, args.end) == tuple(
        datetime.combine(d(n), datetime.min.time(), tzinfo=UTC) for n in days
    )


# Hour-aligned pieces of the 21st, cut on both sides of its 10:00 chain (the first piece holds the
# callbacks of the 20th's last impression, the last a chain into the 22nd), rebuilt shuffled.
PIECES = [(0, 10), (10, 11), (11, 24)]


# make test: campaign delivery (callbacks across the slices' edges); every hour table in e2e
@pytest.mark.parametrize(
    "name",
    variants([n for n in NAMES if gold_models.model(n).GRAIN == HOUR], {"campaign_delivery"}),
)
def test_hour_slices_rebuilt_in_any_order_equal_one_rebuild_of_the_day(spark, lake, name):
    midnight = datetime.combine(d(21), datetime.min.time(), tzinfo=UTC)
    gold.rebuild(spark, lake, name, d(21), d(22))
    expected = partition(spark, lake, name, d(21)).collect()
    assert expected, f"{name}: the day's rebuild wrote nothing for the 21st"
    around_it = {day: partition(spark, lake, name, day).collect() for day in (d(20), d(22))}
    order = random.Random(name).sample(PIECES, len(PIECES))

    for first, after in order:
        gold.rebuild(
            spark, lake, name, midnight + timedelta(hours=first), midnight + timedelta(hours=after)
        )

    schema = registry.table(name).schema.spark()
    assertDataFrameEqual(
        partition(spark, lake, name, d(21)), spark.createDataFrame(expected, schema)
    )
    for day, rows in around_it.items():  # an hour's rebuild touches no other day
        assertDataFrameEqual(partition(spark, lake, name, day), spark.createDataFrame(rows, schema))


def test_an_empty_interval_is_refused(capsys):
    with pytest.raises(SystemExit):
        gold.parse_args(["--start", "2026-11-21T13:00:00Z", "--end", "2026-11-21T13:00:00Z"])
    assert "must be after --start" in capsys.readouterr().err


# A month of history before the rows above: one row per topic and day, 1st to 18th.
HISTORY_DAYS = range(1, 19)


def history(topic: str, day: int) -> dict:
    """One silver row of ``topic`` on ``day``, its ids unique to that day."""
    row = dict(SILVER[topic][0])
    suffix = f"-h{day}"
    for key, value in row.items():
        if isinstance(value, datetime):
            row[key] = value.replace(day=day)
        elif key.endswith("_id") and isinstance(value, str):
            row[key] = value + suffix
    return row


# make test: the reconciliation (the widest margin: callbacks of the day before); every table in
# e2e
@pytest.mark.parametrize("name", variants(NAMES, {"attribution_reconciliation"}))
def test_a_day_reads_its_margin_of_silver_never_the_history_before_it(spark, lake, tmp_path, name):
    """The 21st rebuilt over a silver with a month of history whose files are gone: a rebuild
    that read any partition before the margin would fail on a missing file. Its rows are the
    same as over the silver without that history."""
    aged = lake.with_overrides(runtime_dir=tmp_path)
    for topic, rows in SILVER.items():
        old = [history(topic, day) for day in HISTORY_DAYS]
        path = ensure_table(spark, aged, registry.table(f"silver_{topic}"))
        silver(spark, topic, rows + old).write.format("delta").mode("append").save(path)
        for day in HISTORY_DAYS:
            shutil.rmtree(f"{path}/event_date={d(day)}")

    gold.rebuild(spark, aged, name, d(21), d(22))
    gold.rebuild(spark, lake, name, d(21), d(22))
    assertDataFrameEqual(partition(spark, aged, name, d(21)), partition(spark, lake, name, d(21)))
