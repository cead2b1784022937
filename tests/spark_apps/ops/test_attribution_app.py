"""The attribution app as spark-submit runs it, against a real broker: generator → app → topics.

What the app must have written is computed here, not by the app's code: the input topics are read
back, each record is validated by this file's own reading of the rules (``expected_reason``), and
the valid events go through the plain-Python reference implementation of the attribution rules
that the processor's unit tests use (``ReferenceAttribution``).

Timing. Defaults: window 300 s, skew 10 s, lateness 30 s. The app's watermark is on the Kafka
timestamp, delayed by the lateness, and a key closes when the watermark passes its request's
event time + window (or, without a request, its first item's). The generator sends everything
within a few seconds, with Kafka timestamps around "now" and event times no older than
now - 90 s (its late events), so while only its traffic has been read the watermark (about
now - 30 s) is behind no record and far behind every close time (now - 90 s + 300 s at the
earliest): nothing closes, nothing is dropped, and every attribution is decided with all of a
key's events present, whatever batches they came in. Then one *sentinel* request, event time
now, Kafka timestamp now + window + lateness + 5 s, moves the watermark to now + window + 5 s,
past every close time (the sentinel's own, now + window, included), and the next batch closes
every key. So the output must be exactly what the reference gives for "all valid events of a
key in one call, then close everything", plus the sentinel's unfilled ``request_closed``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime

import pytest

from adlake import generator, registry
from adlake.status import read_status
from tests.spark_apps.ops.conftest import (
    Record,
    assert_running,
    committed_offsets,
    end_offsets,
    log_tail,
    produce,
    read_topic,
    start_app,
    stop_app,
    wait_for,
)
from tests.support.attribution_reference import Event, ReferenceAttribution
from tests.tiers import variants

pytestmark = pytest.mark.integration

APP = registry.app("attribution")
MODULE = APP.module
OUTPUT = registry.topic(APP.outputs[0])
DLQ = registry.topic(APP.dlq)
WINDOW_MS, SKEW_MS, LATENESS_MS = 300_000, 10_000, 30_000
APP_ARGS = ("--window-s", "300", "--skew-s", "10", "--lateness-s", "30")
# How long an app may take to get somewhere (start, or read all input): generous, as the machine
# may be shared; a healthy run takes a fraction of it.
APP_TIMEOUT_S = 240
KIND = {"ad_requests": "request", "ad_impressions": "impression", "ad_callbacks": "callback"}
_RANK = {"request": 0, "impression": 1, "callback": 2}
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def generator_config(seed: int) -> generator.GeneratorConfig:
    """~1500 base events in well under a second, every anomaly knob on."""
    return generator.GeneratorConfig(
        rate=4000.0,
        count=1500,
        seed=seed,
        click_share=0.3,
        fill_rate=0.8,
        out_of_order=0.05,
        duplicates=0.05,
        late=0.05,
        lateness_s=LATENESS_MS / 1000,
        malformed=0.05,
        orphans=0.05,
        surge_pages=1,
        surge_rate=20.0,
    )


# -- what the app should have done, computed independently ----------------------------------------


def epoch_ms(text: str) -> int:
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def _fits(ftype: str, value: object) -> bool:
    if ftype == "string":
        return isinstance(value, str)
    if ftype == "timestamp":
        return isinstance(value, str) and bool(_TS.match(value))
    if ftype in ("int", "long"):
        return isinstance(value, int) and not isinstance(value, bool)
    if ftype == "double":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, bool)


def expected_reason(topic: registry.Topic, raw: bytes) -> str | None:
    """The DLQ reason of a raw input value, or None if it is valid: not a JSON object →
    ``invalid_json``; else, field by field in declared order, a required field absent or null →
    ``missing_field:F``, a present field of the wrong JSON type (or an unparseable timestamp) →
    ``wrong_type:F``, a callback event_type outside the registry's list → ``invalid_value:F``."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return "invalid_json"
    if not isinstance(obj, dict):
        return "invalid_json"
    for f in topic.schema.fields:
        value = obj.get(f.name)
        if value is None:
            if f.required:
                return f"missing_field:{f.name}"
            continue
        if not _fits(f.type, value):
            return f"wrong_type:{f.name}"
        if (topic.name, f.name) == (
            "ad_callbacks",
            "event_type",
        ) and value not in registry.CALLBACK_EVENT_TYPES:
            return f"invalid_value:{f.name}"
    return None


@dataclass
class Expected:
    """What the app must write for the records read back from its input topics."""

    records: dict[tuple, dict]  # record id -> expected fields of the record
    dlq: dict[tuple, tuple[str, str]]  # (topic, partition, offset) -> (raw value, reason)
    dlq_kinds: dict[str, Counter]  # topic -> Counter of reason kinds
    source_ts: dict[tuple, int]  # (topic, partition, offset) -> Kafka timestamp
    inputs: int  # input records read back


def expected_output(inputs: list[Record]) -> Expected:
    dlq, dlq_kinds, source_ts = {}, defaultdict(Counter), {}
    rows: dict[str, list[tuple[Event, int, dict]]] = defaultdict(list)
    for rec in inputs:
        source_ts[rec.topic, rec.partition, rec.offset] = rec.timestamp_ms
        reason = expected_reason(registry.topic(rec.topic), rec.value)
        if reason is not None:
            dlq[rec.topic, rec.partition, rec.offset] = (rec.value.decode("utf-8"), reason)
            dlq_kinds[rec.topic][reason.split(":")[0]] += 1
            continue
        obj = rec.json()
        kind = KIND[rec.topic]
        event = Event(
            kind,
            obj["request_id"],
            epoch_ms(obj["event_time"]),
            obj.get("impression_id"),
            obj.get("callback_id"),
        )
        rows[obj["request_id"]].append((event, rec.timestamp_ms, obj))

    # One call per key with its events in arrival order (as the processor orders a batch), then
    # a watermark past everything.
    ref = ReferenceAttribution(WINDOW_MS, SKEW_MS)
    first: dict[tuple, tuple[int, dict, int]] = {}  # item -> (Kafka ts, payload, event time)
    for rid, key_rows in rows.items():
        key_rows.sort(
            key=lambda r: (
                r[1],
                _RANK[r[0].kind],
                r[0].t,
                r[0].impression_id or "",
                r[0].callback_id or "",
            )
        )
        for event, kts, obj in key_rows:  # the first of duplicates stands
            first.setdefault((rid, event.kind, event.item_id()), (kts, obj, event.t))
        ref.batch(rid, [(event, kts) for event, kts, _ in key_rows])
    ref.advance(max(e.t for r in rows.values() for e, _, _ in r) + 3 * WINDOW_MS)
    assert not [k for k, v in Counter(r[:4] for r in ref.out).items() if v > 1]

    attributed = defaultdict(list)  # request_id -> Kafka ts of its attributed items
    for record_type, rid, iid, cid, *_ in ref.out:
        if record_type == "attributed_impression":
            attributed[rid].append(first[rid, "impression", iid][0])
        elif record_type == "attributed_callback":
            attributed[rid].append(first[rid, "callback", cid][0])

    records = {}
    for record_type, rid, iid, cid, impressions, callbacks, filled in ref.out:
        imp = first.get((rid, "impression", iid))
        cb = first.get((rid, "callback", cid))
        req = first.get((rid, "request", rid))
        if record_type == "attributed_impression":
            fields = dict(
                campaign_id=imp[1]["campaign_id"],
                creative_id=imp[1]["creative_id"],
                request_time=req[2],
                impression_time=imp[2],
                source_kafka_ts=max(req[0], imp[0]),
            )
        elif record_type == "attributed_callback":
            # request_time is left out: it is set only if the request had arrived by then.
            fields = dict(
                campaign_id=imp[1]["campaign_id"],
                creative_id=imp[1]["creative_id"],
                event_type=cb[1]["event_type"],
                value=cb[1].get("value"),
                impression_time=imp[2],
                callback_time=cb[2],
                source_kafka_ts=max(cb[0], imp[0]),
            )
        elif record_type == "request_closed":
            fields = dict(
                impressions=impressions,
                callbacks=callbacks,
                filled=filled,
                request_time=req[2],
                source_kafka_ts=max([req[0], *attributed[rid]]),
            )
        elif record_type == "orphan_impression":
            fields = dict(
                campaign_id=imp[1]["campaign_id"],
                creative_id=imp[1]["creative_id"],
                impression_time=imp[2],
                source_kafka_ts=imp[0],
            )
        else:
            fields = dict(
                event_type=cb[1]["event_type"],
                value=cb[1].get("value"),
                callback_time=cb[2],
                source_kafka_ts=cb[0],
            )
        records[record_type, rid, iid, cid] = fields
    return Expected(records, dlq, dlq_kinds, source_ts, len(inputs))


def read_inputs(bootstrap: str) -> list[Record]:
    return [rec for name in APP.inputs for rec in read_topic(bootstrap, name)]


def send_sentinel(bootstrap: str) -> tuple[str, int]:
    """One valid request, event time now, Kafka timestamp now + window + lateness + 5 s: the
    watermark it brings (its timestamp - lateness) passes every close time (module docstring)."""
    now = time.time_ns() // 1_000_000
    request_id = f"sentinel-{uuid.uuid4()}"
    value = {
        "request_id": request_id,
        "event_time": generator.iso_ms(now),
        "device_id": "dev-sentinel",
        "household_id": "hh-sentinel",
        "content_id": "content-0000",
        "slot_id": "pre-roll",
        "geo": "US-CA",
        "floor_price": 1.0,
        "bid_count": 1,
    }
    produce(
        bootstrap,
        "ad_requests",
        json.dumps(value).encode(),
        key=request_id.encode(),
        timestamp_ms=now + WINDOW_MS + LATENESS_MS + 5_000,
    )
    return request_id, now


# -- reading what the app wrote -------------------------------------------------------------------


def record_id(value: dict) -> tuple:
    return tuple(value[f] for f in OUTPUT.id_fields)


def dedup(records: list[Record], id_of) -> tuple[dict[tuple, dict], int]:
    """``({id: value}, number of duplicate copies)``; the copies of one id must be identical."""
    out, duplicates = {}, 0
    for rec in records:
        value = rec.json()
        ident = id_of(value)
        if ident in out:
            duplicates += 1
            assert out[ident] == value, f"two different records with id {ident}"
        out[ident] = value
    return out, duplicates


def dlq_id(value: dict) -> tuple:
    return tuple(value[f] for f in DLQ.id_fields)


def check_output(bootstrap: str, expected: Expected, report: dict) -> dict[str, int]:
    """Assert the output and DLQ topics hold exactly ``expected``, and the DLQ's reasons the
    generator's count of malformed records by topic and kind; return counts for the log."""
    output, out_dups = dedup(read_topic(bootstrap, OUTPUT.name), record_id)
    missing = expected.records.keys() - output.keys()
    unexpected = output.keys() - expected.records.keys()
    assert not missing and not unexpected, (
        f"{len(missing)} missing, e.g. {sorted(missing)[:5]}; "
        f"{len(unexpected)} unexpected, e.g. {sorted(unexpected)[:5]}"
    )
    for ident, fields in expected.records.items():
        got = output[ident]
        actual = {
            name: (
                epoch_ms(got[name])
                if name.endswith(("_time", "_ts")) and got[name] is not None
                else got[name]
            )
            for name in fields
        }
        assert actual == fields, f"{ident}: got {actual}, expected {fields}"

    dlq, dlq_dups = dedup(read_topic(bootstrap, DLQ.name), dlq_id)
    assert dlq.keys() == expected.dlq.keys()
    for coords, (raw, reason) in expected.dlq.items():
        got = dlq[coords]
        assert (got["raw_value"], got["reason"]) == (raw, reason), coords
        assert epoch_ms(got["source_kafka_ts"]) == expected.source_ts[coords], coords
    kinds = Counter((v["source_topic"], v["reason"].split(":")[0]) for v in dlq.values())
    assert {
        (name, kind): kinds[name, kind] for name in APP.inputs for kind in generator.MALFORMED_KINDS
    } == {
        (name, kind): report["anomalies_by_topic"][name][kind]
        for name in APP.inputs
        for kind in generator.MALFORMED_KINDS
    }
    by_type = Counter(ident[0] for ident in output)
    return {
        "records": len(output),
        "output_duplicates": out_dups,
        "dlq": len(dlq),
        "dlq_duplicates": dlq_dups,
        **by_type,
    }


def missing_output(bootstrap: str, expected: Expected) -> int:
    """How many expected output records and DLQ records are not in the topics yet."""
    ids = {record_id(r.json()) for r in read_topic(bootstrap, OUTPUT.name)}
    dlq = {dlq_id(r.json()) for r in read_topic(bootstrap, DLQ.name)}
    return len(expected.records.keys() - ids) + len(expected.dlq.keys() - dlq)


def wait_for_output(app, bootstrap: str, expected: Expected) -> None:
    wait_for(
        lambda: assert_running(app) or missing_output(bootstrap, expected) == 0,
        APP_TIMEOUT_S,
        1.0,
        lambda: f"{missing_output(bootstrap, expected)} records missing\n{log_tail(app)}",
    )


def generate(bootstrap: str, tmp_path, seed: int) -> tuple[dict, Expected]:
    """Run the generator, read every input back and compute what the app must write."""
    report = generator.run(
        generator_config(seed), bootstrap, tmp_path / "report.json", progress=False
    )
    # Every anomaly really happened, so the comparisons below cover each of them.
    kinds = (
        "invalid_json",
        "missing_field",
        "wrong_type",
        "duplicate",
        "late",
        "out_of_order",
        "orphan_impression",
        "orphan_callback",
    )
    assert all(report["anomalies"][k] > 0 for k in kinds), report["anomalies"]
    return report, expected_output(read_inputs(bootstrap))


def with_sentinel(bootstrap: str, expected: Expected) -> Expected:
    """``expected`` after the sentinel: its own request is closed (unfilled) too."""
    sentinel_id, now = send_sentinel(bootstrap)
    sentinel = [r for r in read_topic(bootstrap, "ad_requests") if r.key == sentinel_id.encode()]
    assert len(sentinel) == 1
    records = dict(expected.records)
    records["request_closed", sentinel_id, None, None] = dict(
        impressions=0,
        callbacks=0,
        filled=False,
        request_time=now,
        source_kafka_ts=sentinel[0].timestamp_ms,
    )
    return Expected(
        records, expected.dlq, expected.dlq_kinds, expected.source_ts, expected.inputs + 1
    )


def assert_dlq_matches_report(report: dict, expected: Expected) -> None:
    """This file's classification of the inputs agrees with the generator's report (checked
    before the app runs, so a disagreement is not blamed on the app)."""
    for name in APP.inputs:
        assert {k: expected.dlq_kinds[name][k] for k in generator.MALFORMED_KINDS} == {
            k: report["anomalies_by_topic"][name][k] for k in generator.MALFORMED_KINDS
        }, name


# -- the tests -----------------------------------------------------------------------------------

# Real-Time Mode (JVM engine only): one long-lived task per source partition and per shuffle
# partition, so the local master needs 12 + 2 slots; event-time timers fire at checkpoint-interval
# boundaries, so the sentinel's closes come at the next one (10 s here). make test runs the app's
# default trigger (micro-batches); Real-Time Mode is make test-e2e's (click-surge's Real-Time Mode
# run is in make test).
TRIGGERS = {
    "processing_time": (),
    "realtime": ("--trigger", "realtime", "--trigger-interval", "10 seconds"),
}


@pytest.mark.parametrize("trigger", variants(TRIGGERS, {"processing_time"}))
def test_generator_to_app_to_output(fresh_kafka, tmp_path, trigger):
    bootstrap, settings = fresh_kafka.bootstrap, fresh_kafka.settings
    if trigger == "realtime":
        settings = settings.with_overrides(spark_master_ops="local[14]")
    report, expected = generate(bootstrap, tmp_path, seed=31)
    assert_dlq_matches_report(report, expected)
    expected = with_sentinel(bootstrap, expected)

    started = time.monotonic()
    app = start_app(MODULE, settings, *APP_ARGS, *TRIGGERS[trigger])
    wait_for_output(app, bootstrap, expected)
    complete_s = time.monotonic() - started
    stop_app(app)

    counts = check_output(bootstrap, expected, report)
    print(
        f"\nuninterrupted run: {expected.inputs} input records, output complete after "
        f"{complete_s:.1f}s; {counts}"
    )


# make test-e2e: a restart after kill -9 on the same checkpoint is in make test
# (tests/spark_apps/ops/test_faults.py); this is the graceful stop and restart.
@pytest.mark.e2e
def test_restart_on_the_same_checkpoint_loses_nothing(fresh_kafka, tmp_path):
    bootstrap, settings = fresh_kafka.bootstrap, fresh_kafka.settings
    report, expected = generate(bootstrap, tmp_path, seed=32)
    assert_dlq_matches_report(report, expected)
    checkpoint = settings.checkpoint_path(APP.name)
    inputs_end = {
        (name, p): end for name in APP.inputs for p, end in end_offsets(bootstrap, name).items()
    }

    # A small cap on offsets per batch, so the input takes many batches and the stop, as soon
    # as the first output is there, lands mid-stream.
    first = start_app(MODULE, settings, *APP_ARGS, "--max-offsets-per-trigger", "200")
    wait_for(
        lambda: assert_running(first) or read_topic(bootstrap, OUTPUT.name),
        APP_TIMEOUT_S,
        0.5,
        lambda: log_tail(first),
    )
    stop_app(first)
    assert read_status(settings, APP.name)["state"] == "stopped"
    committed = committed_offsets(checkpoint)
    output_first_run = len(read_topic(bootstrap, OUTPUT.name))
    assert committed != inputs_end, "the first run read all input: the stop was not mid-stream"
    assert output_first_run < len(expected.records)

    # The restart runs without the cap (a restart may change it; the batch the first run had
    # planned, if any, is replayed with its planned offsets), so the rest takes a few batches.
    second = start_app(MODULE, settings, *APP_ARGS)
    # The sentinel is sent only once every generator record has been read, so that it cannot
    # move the watermark before any of them is processed.
    wait_for(
        lambda: assert_running(second) or committed_offsets(checkpoint) == inputs_end,
        APP_TIMEOUT_S,
        0.5,
        lambda: log_tail(second),
    )
    expected = with_sentinel(bootstrap, expected)
    wait_for_output(second, bootstrap, expected)
    stop_app(second)

    counts = check_output(bootstrap, expected, report)
    print(
        f"\nrestart: the first run committed {sum(committed.values())} of "
        f"{sum(inputs_end.values())} input offsets and wrote {output_first_run} records; "
        f"both runs together: {counts}"
    )
