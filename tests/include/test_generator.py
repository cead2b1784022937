"""Unit tests of the event generator's pure logic: no broker, no wall clock.

Expected counts are never taken from the generator's own counting: :func:`recount` below is a
deliberately naive, independent implementation of the report's definitions.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adlake import generator, registry
from adlake.generator import GeneratorConfig, GeneratorError, Traffic
from tests.support.parsing_cases import CASES

START = 1_795_304_444_000  # 2026-11-21T23:40:44.000Z
NO_ANOMALIES = dict(
    out_of_order=0.0, duplicates=0.0, late=0.0, malformed=0.0, orphans=0.0, surge_pages=0
)
HEAVY = dict(
    out_of_order=0.05,
    duplicates=0.05,
    late=0.05,
    malformed=0.05,
    orphans=0.05,
    surge_pages=3,
    surge_rate=50.0,
)
INPUT_NAMES = sorted({name for a in registry.APPS.values() for name in a.inputs})
KINDS = (
    "too_large",
    "invalid_json",
    "missing_field",
    "wrong_type",
    "invalid_value",
    "duplicate",
    "late",
    "out_of_order",
    "orphan_impression",
    "orphan_callback",
    "surge_click",
)
# What the knobs inject: every kind but too_large and invalid_value (the generator writes no
# record over the size limit and no invalid values).
INJECTED = tuple(k for k in KINDS if k not in ("too_large", "invalid_value"))
MAX_RECORD_BYTES = 262_144  # the configured default
MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def plan(**knobs):
    """(traffic, records) of a 3000-event run at 1000 events/s."""
    config = GeneratorConfig(**{"rate": 1000.0, "count": 3000, "seed": 11, **knobs})
    traffic = Traffic(config, START)
    return traffic, list(traffic.records())


def ts_ms(text: str) -> int:
    dt = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


def parse(value: bytes):
    try:
        obj = json.loads(value)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def bad_fields(topic, obj: dict) -> tuple[list[str], list[str]]:
    """(missing required fields, fields with a value of the wrong JSON type)."""
    missing = [f.name for f in topic.schema.fields if f.required and obj.get(f.name) is None]
    wrong = []
    for f in topic.schema.fields:
        v = obj.get(f.name)
        if v is None:
            continue
        if f.type == "string":
            ok = type(v) is str
        elif f.type == "timestamp":
            ok = type(v) is str and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", v)
        elif f.type in ("int", "long"):
            ok = type(v) is int
        elif f.type == "boolean":
            ok = type(v) is bool
        else:
            ok = type(v) in (int, float)
        if not ok:
            wrong.append(f.name)
    return missing, wrong


def recount(sent: list[tuple[str, int, bytes, int]], lateness_s: float, surge_pages) -> dict:
    """Per-topic anomaly counts of ``(topic, partition, value, kafka_ts)`` in send order, straight
    from the definitions in the report."""
    counts = {name: Counter() for name in INPUT_NAMES}
    good = []  # (topic, partition, obj, event_ms, ts)
    for topic_name, partition, value, ts in sent:
        if len(value) > MAX_RECORD_BYTES:
            counts[topic_name]["too_large"] += 1
            continue
        obj = parse(value)
        if obj is None:
            counts[topic_name]["invalid_json"] += 1
            continue
        missing, wrong = bad_fields(registry.topic(topic_name), obj)
        if missing:
            counts[topic_name]["missing_field"] += 1
        elif wrong:
            counts[topic_name]["wrong_type"] += 1
        else:
            good.append((topic_name, partition, obj, ts_ms(obj["event_time"]), ts))
    ids = Counter()
    newest: dict[tuple[str, int], int] = {}
    for name, partition, obj, event, ts in good:
        ids[name, tuple(obj[f] for f in registry.topic(name).id_fields)] += 1
        if ts - event > lateness_s * 1000:
            counts[name]["late"] += 1
        if event < newest.get((name, partition), event):
            counts[name]["out_of_order"] += 1
        newest[name, partition] = max(event, newest.get((name, partition), event))
        if name == "page_clicks" and obj["page_id"] in surge_pages:
            counts[name]["surge_click"] += 1
    for (name, _), n in ids.items():
        counts[name]["duplicate"] += n - 1
    requests = {o["request_id"] for n, _, o, _, _ in good if n == "ad_requests"}
    impressions = {o["impression_id"] for n, _, o, _, _ in good if n == "ad_impressions"}
    for name, _, obj, _, _ in good:
        if name == "ad_impressions" and obj["request_id"] not in requests:
            counts[name]["orphan_impression"] += 1
        if name == "ad_callbacks" and obj["impression_id"] not in impressions:
            counts[name]["orphan_callback"] += 1
    return {name: {k: c[k] for k in KINDS} for name, c in counts.items()}


def totals(per_topic: dict) -> dict:
    return {k: sum(c[k] for c in per_topic.values()) for k in KINDS}


def sent_on_time(records) -> list[tuple[str, int, bytes, int]]:
    """Each record as if sent exactly at its due time."""
    return [(r.topic, r.partition, r.value, START + r.due_ms) for r in records]


class FakeClock:
    """A clock that only moves when waited on; ``lag_ms`` models a sender that oversleeps."""

    def __init__(self, lag_ms: int = 0) -> None:
        self.ms, self.lag_ms, self.waits = START, lag_ms, 0

    def now_ms(self) -> int:
        return self.ms

    def wait(self, seconds: float) -> None:
        self.waits += 1
        self.ms += max(1, math.ceil(seconds * 1000)) + self.lag_ms


def test_input_topics_are_the_inputs_of_the_apps():
    assert sorted(t.name for t in generator.INPUT_TOPICS) == INPUT_NAMES


def test_same_seed_gives_the_same_records_and_another_seed_does_not():
    _, a = plan(seed=5, **HEAVY)
    _, b = plan(seed=5, **HEAVY)
    _, c = plan(seed=6, **HEAVY)
    assert a == b
    assert [r.value for r in a] != [r.value for r in c]


def test_another_start_time_changes_only_the_times():
    config = GeneratorConfig(
        count=500, seed=5, malformed=0.0, **{k: v for k, v in HEAVY.items() if k != "malformed"}
    )
    a = list(Traffic(config, START).records())
    b = list(Traffic(config, START + 86_400_123).records())

    def without_time(r):
        obj = json.loads(r.value)
        return (
            r.due_ms,
            r.topic,
            r.partition,
            r.key,
            {k: v for k, v in obj.items() if k != "event_time"},
        )

    assert [without_time(r) for r in a] == [without_time(r) for r in b]
    assert a[0].value != b[0].value


def test_only_input_topics_keyed_by_their_key_field_on_the_hashed_partition():
    _, records = plan(**HEAVY)
    assert {r.topic for r in records} == set(INPUT_NAMES)
    for r in records:
        topic = registry.topic(r.topic)
        assert 0 <= r.partition < topic.partitions
        assert r.partition == zlib.crc32(r.key.encode()) % topic.partitions
        obj = parse(r.value)
        if r.kind in ("event", "duplicate"):
            assert r.key == obj[topic.key_field]
    assert {registry.topic(n).key_field for n in INPUT_NAMES} == {"request_id", "page_id"}


def test_without_anomalies_events_are_sent_at_their_event_time_and_nothing_is_anomalous():
    _, records = plan(**NO_ANOMALIES)
    for r in records:
        assert ts_ms(json.loads(r.value)["event_time"]) == START + r.due_ms
    assert [r.due_ms for r in records] == sorted(r.due_ms for r in records)
    assert totals(recount(sent_on_time(records), 30, [])) == dict.fromkeys(KINDS, 0)


def test_count_is_the_number_of_base_events():
    traffic, records = plan(count=1234, **NO_ANOMALIES)
    assert len(records) == 1234
    assert sum(traffic.base_events.values()) == 1234


def test_duration_stops_new_chains_then_drains_their_events():
    traffic, records = plan(count=None, duration_s=2.0, rate=500.0, **NO_ANOMALIES)
    starts = [r for r in records if r.topic in ("ad_requests", "page_clicks")]
    assert starts and max(r.due_ms for r in starts) < 2000
    last_callback = max(r.due_ms for r in records if r.topic == "ad_callbacks")
    assert 2000 <= last_callback <= 2000 + 500 + 5000
    assert 800 <= len(records) <= 1200  # 500/s for 2 s


def test_chains_are_timed_and_ordered_like_a_player():
    _, records = plan(fill_rate=0.8, **NO_ANOMALIES)
    objs = {name: [json.loads(r.value) for r in records if r.topic == name] for name in INPUT_NAMES}
    requests = {o["request_id"]: ts_ms(o["event_time"]) for o in objs["ad_requests"]}
    impressions = {o["impression_id"]: ts_ms(o["event_time"]) for o in objs["ad_impressions"]}
    for o in objs["ad_impressions"]:
        assert 10 <= impressions[o["impression_id"]] - requests[o["request_id"]] <= 500
    by_impression: dict[str, list[dict]] = {}
    for o in objs["ad_callbacks"]:
        assert 100 <= ts_ms(o["event_time"]) - impressions[o["impression_id"]] <= 5000
        assert o["event_type"] in registry.CALLBACK_EVENT_TYPES
        assert (o["value"] is not None) == (o["event_type"] == "conversion")
        by_impression.setdefault(o["impression_id"], []).append(o)
    quartiles = ["first_quartile", "midpoint", "third_quartile", "complete"]
    for cbs in by_impression.values():
        seen = [
            o["event_type"]
            for o in sorted(cbs, key=lambda o: o["event_time"])
            if o["event_type"] in quartiles
        ]
        assert seen == quartiles[: len(seen)]
        types = [o["event_type"] for o in cbs]
        assert "conversion" not in types or "click" in types
    assert 0.7 < len(impressions) / len(requests) < 0.9
    assert {o["event_type"] for o in objs["ad_callbacks"]} == set(registry.CALLBACK_EVENT_TYPES)


@pytest.mark.parametrize(
    "knob, kinds, also_off",
    [
        ("duplicates", ["duplicate"], {}),
        ("late", ["late"], {}),
        # A late event is also out of order on its partition, so late must be off too.
        ("out_of_order", ["out_of_order"], {"late": 0.0}),
        ("malformed", ["invalid_json", "missing_field", "wrong_type"], {}),
        ("orphans", ["orphan_impression", "orphan_callback"], {}),
        ("surge_pages", ["surge_click"], {}),
    ],
)
def test_a_knob_at_zero_gives_none_of_its_anomaly(knob, kinds, also_off):
    traffic, records = plan(**{**HEAVY, **also_off})
    on = totals(recount(sent_on_time(records), 30, traffic.surge_pages))
    traffic, records = plan(**{**HEAVY, **also_off, knob: 0})
    off = totals(recount(sent_on_time(records), 30, traffic.surge_pages))
    for kind in kinds:
        assert on[kind] > 0, kind
        assert off[kind] == 0, kind
    # The other knobs still work (late and out_of_order go together, see above).
    others = [k for k in INJECTED if k not in kinds and k not in ("late", "out_of_order")]
    assert all(off[k] > 0 for k in others), off


def test_malformed_records_are_malformed_as_labelled():
    _, records = plan(**{**HEAVY, "malformed": 0.3})
    seen = Counter()
    for r in records:
        topic = registry.topic(r.topic)
        if r.kind == "invalid_json":
            with pytest.raises(ValueError):
                json.loads(r.value)
        elif r.kind == "missing_field":
            obj = json.loads(r.value)
            assert bad_fields(topic, obj) == (
                [next(n for n in topic.schema.required if n not in obj)],
                [],
            )
            assert len(obj) == len(topic.schema.names) - 1
        elif r.kind == "wrong_type":
            obj = json.loads(r.value)
            missing, wrong = bad_fields(topic, obj)
            assert missing == [] and len(wrong) == 1
            assert topic.schema.field(wrong[0]).type != "string"
        else:
            continue
        seen[r.kind] += 1
        assert "orphan_impression" not in r.injected and "orphan_callback" not in r.injected
    assert set(seen) == {"invalid_json", "missing_field", "wrong_type"}


def test_orphans_lack_their_partner_and_other_chain_events_have_it():
    _, records = plan(**{**HEAVY, "orphans": 0.2})
    good = [(r, json.loads(r.value)) for r in records if r.kind in ("event", "duplicate")]
    requests = {o["request_id"] for r, o in good if r.topic == "ad_requests"}
    impressions = {o["impression_id"] for r, o in good if r.topic == "ad_impressions"}
    orphans = Counter()
    for r, o in good:
        if r.topic == "ad_impressions":
            has_partner = o["request_id"] in requests
            assert has_partner != ("orphan_impression" in r.injected)
            orphans["impression"] += not has_partner
        if r.topic == "ad_callbacks":
            has_partner = o["impression_id"] in impressions
            assert has_partner != ("orphan_callback" in r.injected)
            orphans["callback"] += not has_partner
    assert orphans["impression"] > 0 and orphans["callback"] > 0


def test_late_events_are_older_than_the_lateness_at_send_time():
    _, records = plan(**{**HEAVY, "late": 0.1, "lateness_s": 30.0})
    late = [r for r in records if "late" in r.injected]
    assert late
    for r in late:
        lag = START + r.due_ms - ts_ms(json.loads(r.value)["event_time"])
        assert 31_000 <= lag <= 30_000 + 60_000 + 5_000  # + at most the hold-back delay


def test_report_counts_equal_a_recount_of_what_was_sent():
    traffic = Traffic(GeneratorConfig(count=3000, seed=3, **HEAVY), START)
    sent = []
    clock = FakeClock()
    tally = generator.emit(
        traffic,
        lambda r, ts: sent.append((r.topic, r.partition, r.value, ts)),
        now_ms=clock.now_ms,
        wait=clock.wait,
    )
    result = generator.report(
        traffic, tally, bootstrap="x:1", started_ms=START, finished_ms=clock.ms
    )
    expected = recount(sent, 30, traffic.surge_pages)
    assert result["anomalies_by_topic"] == expected
    assert result["anomalies"] == totals(expected)
    assert result["sent"] == {n: sum(1 for s in sent if s[0] == n) for n in INPUT_NAMES}
    assert result["surge_pages"] == traffic.surge_pages and len(traffic.surge_pages) == 3
    assert all(result["anomalies"][k] > 0 for k in INJECTED)


def test_late_is_counted_from_the_real_send_time_when_the_sender_falls_behind():
    # Each wait oversleeps by 5 s, with lateness 3 s: on-time events become late in flight.
    traffic = Traffic(GeneratorConfig(count=1500, seed=3, lateness_s=3.0, **NO_ANOMALIES), START)
    sent = []
    clock = FakeClock(lag_ms=5000)
    tally = generator.emit(
        traffic,
        lambda r, ts: sent.append((r.topic, r.partition, r.value, ts)),
        now_ms=clock.now_ms,
        wait=clock.wait,
    )
    expected = recount(sent, 3.0, [])
    assert totals(expected)["late"] > 0
    assert tally.anomalies_by_topic() == expected


def test_pacing_waits_for_each_due_time_instead_of_spinning():
    traffic = Traffic(GeneratorConfig(count=2000, seed=3, **HEAVY), START)
    sent_ts, dues = [], []
    clock = FakeClock()

    def deliver(record, ts):
        sent_ts.append(ts)
        dues.append(START + record.due_ms)

    generator.emit(traffic, deliver, now_ms=clock.now_ms, wait=clock.wait)
    assert all(ts >= due for ts, due in zip(sent_ts, dues))
    assert clock.waits <= len(set(dues))


def test_classify_small_inline_sequence():
    def click(cid, page, t):
        return json.dumps(
            {"click_id": cid, "page_id": page, "event_time": t, "user_id": "u1"}
        ).encode()

    t0 = ts_ms("2026-11-21T10:00:00.000Z")
    records = [
        ("page_clicks", 0, click("c1", "page-0001", "2026-11-21T10:00:00.000Z"), t0 + 5),
        ("page_clicks", 0, click("c1", "page-0001", "2026-11-21T10:00:00.000Z"), t0 + 6),
        ("page_clicks", 0, click("c2", "page-0150", "2026-11-21T09:59:00.000Z"), t0 + 7),
        ("page_clicks", 1, click("c3", "page-0150", "2026-11-21T09:59:59.000Z"), t0 + 8),
        (
            "page_clicks",
            1,
            b'{"click_id": "c4", "page_id": 7, "event_time": '
            b'"2026-11-21T10:00:00.000Z", "user_id": "u1"}',
            t0 + 9,
        ),
        (
            "ad_impressions",
            2,
            json.dumps(
                {
                    "impression_id": "i1",
                    "request_id": "r-never-sent",
                    "campaign_id": "camp-001",
                    "creative_id": "crt-001-0",
                    "event_time": "2026-11-21T10:00:00.000Z",
                    "device_id": "d1",
                    "win_price": 2,
                }
            ).encode(),
            t0 + 10,
        ),
        (
            "ad_callbacks",
            3,
            json.dumps(
                {
                    "callback_id": "cb1",
                    "impression_id": "i1",
                    "request_id": "r-never-sent",
                    "event_type": "click",
                    "event_time": "2026-11-21T10:00:01.000Z",
                }
            ).encode(),
            t0 + 11,
        ),
        ("ad_callbacks", 3, b'{"callback_id": "cb2", "impression_id": "i2"}', t0 + 12),
        ("ad_requests", 0, b'{"request_id": "r1",', t0 + 13),
        # One object and more text: what Spark alone would take for the object.
        ("page_clicks", 1, click("c5", "page-0001", "2026-11-21T10:00:00.000Z") + b" x", t0 + 14),
        # Rejected like silver and the DLQs do: an event type not in the registry, and an event
        # time more than an hour after the record's Kafka timestamp.
        (
            "ad_callbacks",
            3,
            json.dumps(
                {
                    "callback_id": "cb3",
                    "impression_id": "i1",
                    "request_id": "r-never-sent",
                    "event_type": "hover",
                    "event_time": "2026-11-21T10:00:01.000Z",
                }
            ).encode(),
            t0 + 15,
        ),
        ("page_clicks", 1, click("c6", "page-0001", "2026-11-21T11:00:00.017Z"), t0 + 16),
        # Over the configured record limit (256 KiB): rejected before it is parsed.
        (
            "page_clicks",
            1,
            click("c7", "page-0001", "2026-11-21T10:00:00.000Z" + " " * 300_000),
            t0 + 17,
        ),
    ]
    tally = generator.classify(records, lateness_s=30, surge_pages=["page-0150"])
    assert tally.anomalies() == {
        "too_large": 1,
        "invalid_json": 2,
        "missing_field": 1,
        "wrong_type": 1,
        "invalid_value": 2,
        "duplicate": 1,
        "late": 1,
        "out_of_order": 1,
        "orphan_impression": 1,
        "orphan_callback": 0,
        "surge_click": 2,
    }
    assert tally.anomalies_by_topic()["page_clicks"]["wrong_type"] == 1
    assert dict(tally.sent) == {
        "page_clicks": 8,
        "ad_impressions": 1,
        "ad_callbacks": 3,
        "ad_requests": 1,
    }


def test_the_tally_counts_rejected_records_by_the_kind_of_their_reason():
    # The shared vector of the payload rules (also run through Spark on both runtimes): the
    # report counts what the DLQs and silver's quarantine will hold.
    cases = [c for c in CASES if c.topic in INPUT_NAMES and c.kafka_ts_ms is not None]
    tally = generator.classify(
        [(c.topic, 0, c.value, c.kafka_ts_ms) for c in cases], lateness_s=3600, surge_pages=[]
    )
    expected = Counter(c.expected.split(":")[0] for c in cases if c.expected)
    assert {k: tally.anomalies()[k] for k in expected} == dict(expected)
    assert set(expected) == {
        "too_large",
        "invalid_json",
        "missing_field",
        "wrong_type",
        "invalid_value",
    }


def test_command_line_defaults_and_errors():
    args = generator.parse_args(["--count", "10", "--seed", "4", "--late", "0"])
    config = generator.config_from_args(args)
    assert (config.count, config.duration_s, config.seed, config.late) == (10, None, 4, 0.0)
    assert generator.config_from_args(generator.parse_args([])).duration_s == 30.0
    with pytest.raises(generator.GeneratorError, match="late=1.5"):
        generator.config_from_args(generator.parse_args(["--late", "1.5"]))
    assert generator.main(["--duplicates", "-1"]) == 2


def test_the_closing_request_passes_every_close_time():
    app = registry.app("attribution")
    knobs = {k.name: k.default for k in app.knobs}
    value, timestamp_ms = generator.closing_request("close-1", 1_000_000)
    obj = json.loads(value)
    assert obj["request_id"] == "close-1"
    assert set(obj) == set(registry.topic("ad_requests").schema.names)
    watermark = timestamp_ms - knobs["lateness_s"] * 1000
    # every key of a record stamped up to 1_000_000 closes at most a window after it
    assert watermark > 1_000_000 + knobs["window_s"] * 1000


def test_the_partitioner_hashes_over_the_configured_partitions():
    def records(partitions):
        traffic = Traffic(
            GeneratorConfig(count=500, seed=5, topic_partitions=partitions, **NO_ANOMALIES), START
        )
        return list(traffic.records())

    two = records(2)
    assert two == records(2)  # deterministic for a given count
    for r in two:
        assert r.partition == zlib.crc32(r.key.encode()) % 2
    assert {r.partition for r in two} == {0, 1}
    # the same records, only their partitions differ from the registry's count
    default = records(None)
    assert [(r.key, r.value) for r in two] == [(r.key, r.value) for r in default]
    assert {r.partition for r in default} == {0, 1, 2, 3}


def test_topic_partitions_of_the_generator_are_checked():
    with pytest.raises(GeneratorError, match="topic_partitions=0"):
        GeneratorConfig(count=1, topic_partitions=0)


def test_default_traffic_surges_only_the_surge_pages_at_the_default_threshold():
    """The first run shows click-surge working: at the local rate `make up` sends (the Makefile's
    RATE), the generator's default traffic puts every surge page's 5-second windows above
    click_surge's default threshold and no other page's, so the app emits from the start and the
    gold table's check of its default holds."""
    rate = float(re.search(r"^RATE \?= (\d+)$", MAKEFILE.read_text(), re.M).group(1))
    duration_s, window_ms = 300, registry.SURGE_WINDOW_S * 1000
    traffic = Traffic(GeneratorConfig(rate=rate, duration_s=duration_s, seed=7), START)
    windows: Counter = Counter()
    for r in traffic.records():
        obj = parse(r.value) if r.topic == "page_clicks" and r.kind == "event" else None
        if obj and isinstance(obj.get("page_id"), str) and isinstance(obj.get("event_time"), str):
            windows[obj["page_id"], (ts_ms(obj["event_time"]) - START) // window_ms] += 1
    threshold = registry.app("click_surge").knob("threshold").default
    assert threshold == registry.SURGE_THRESHOLD
    surging = {page for (page, _), n in windows.items() if n > threshold}
    assert surging == set(traffic.surge_pages)
    # every window of the run surges on a surge page (late clicks land in earlier, sparse ones)
    for page in traffic.surge_pages:
        run = [windows[page, w] for w in range(duration_s * 1000 // window_ms)]
        assert min(run) > threshold, (page, run)
