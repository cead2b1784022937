"""Click-surge detection as spark-submit runs it, against a broker of its own: generator →
``page_clicks`` → app → ``page_surges`` and ``page_clicks_dlq``.

What the app must have written is computed here from the clicks read back from the broker, with
this file's own reading of the rules, not the app's code:

* a click is valid when its value is a JSON object whose four fields are present, non-null and of
  their registry type (strings; ``event_time`` an ISO-8601 UTC string); otherwise it belongs in
  the DLQ with the first failing rule as the reason (``invalid_json``, ``missing_field:F``,
  ``wrong_type:F``);
* every valid click *record* counts, duplicates included (each is its own Kafka record; the app
  does not deduplicate clicks), in the 5-second tumbling window ``[start, start + 5 s)`` of its
  event time;
* a window is a surge when its count is greater than the threshold. The app works in update mode,
  so a surging window is re-emitted as it grows: compacted by key, keeping the highest count, the
  output must hold exactly the surging windows with their final counts, and no record may ever
  carry a count at or below the threshold.

The generator sends no late clicks here (``late=0``); its out-of-order events are held back by at
most 50 events (about a second at these rates), well inside the 5-second watermark, so every
valid click is counted, and the exact counts prove it. Lateness is tested on its own, with
hand-made clicks (``test_a_late_click_...``), which also runs the app with ``spark_metrics`` on
and scrapes the query's gauges from the driver's Prometheus endpoint (no app of its own: an app
start costs ~15 s).

The restart test stops the app while surging windows are half counted and checks that the second
run, on the same checkpoint, ends with exactly the output an uninterrupted run must give.

Timing: each app start costs ~15 s on an idle 2-core machine (much more under load); the
deadlines are backstops for a stalled app, not expected durations.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
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
    prometheus_name,
    read_topic,
    scrape_prometheus,
    start_app,
    stop_app,
    wait_for,
)

pytestmark = pytest.mark.integration

APP = registry.app("click_surge")
MODULE = APP.module
CLICKS = registry.topic(APP.inputs[0])
SURGES = registry.topic(APP.outputs[0])
DLQ = registry.topic(APP.dlq)
WINDOW_MS = 5_000
THRESHOLD = 20
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def traffic(seed: int, duration_s: float) -> generator.GeneratorConfig:
    """Clicks only: ~40/s over 200 pages (the most popular page gets ~9/s) plus 2 surge pages at
    ~6/s each, so windows of ~45 and ~30 clicks pass the threshold of 20 and the partial windows
    at both ends and the long tail of pages stay at or below it. Malformed records go to a random
    input topic, so ~1 in 4 of them is a click."""
    return generator.GeneratorConfig(
        rate=40.0,
        duration_s=duration_s,
        seed=seed,
        click_share=1.0,
        out_of_order=0.02,
        duplicates=0.03,
        late=0.0,
        malformed=0.1,
        orphans=0.0,
        surge_pages=2,
        surge_rate=6.0,
    )


# -- what the app should have written, computed independently --------------------------------------


def epoch_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def expected_reason(raw: bytes | None) -> str | None:
    """The DLQ reason of a raw ``page_clicks`` value, or None when the click is valid."""
    try:
        obj = json.loads(raw)
    except (TypeError, ValueError):
        return "invalid_json"
    if not isinstance(obj, dict):
        return "invalid_json"
    for f in CLICKS.schema.fields:
        value = obj.get(f.name)
        if value is None:
            if f.required:
                return f"missing_field:{f.name}"
            continue
        if not isinstance(value, str) or (f.type == "timestamp" and not _TS.match(value)):
            return f"wrong_type:{f.name}"
    return None


@dataclass
class Expected:
    surges: dict[tuple[str, int], tuple[int, int, int]]  # (page, window start) -> (count, max
    #                                                        event time, max Kafka timestamp)
    below: dict[tuple[str, int], int]  # windows at or below the threshold
    coords: dict[tuple[str, int], list[tuple[int, int]]]  # window -> (partition, offset) of
    #                                                        each click counted in it
    dlq: dict[tuple[str, int, int], tuple[str | None, str, int]]  # coordinates -> (raw value,
    #                                                                reason, Kafka timestamp)
    clicks: int


def expected_output(clicks: list[Record], threshold: int) -> Expected:
    windows: dict[tuple[str, int], tuple[int, int, int]] = {}
    coords: dict[tuple[str, int], list[tuple[int, int]]] = {}
    dlq = {}
    for rec in clicks:
        reason = expected_reason(rec.value)
        if reason is not None:
            raw = None if rec.value is None else rec.value.decode("utf-8")
            dlq[rec.topic, rec.partition, rec.offset] = (raw, reason, rec.timestamp_ms)
            continue
        obj = rec.json()
        event_ms = epoch_ms(obj["event_time"])
        window = (obj["page_id"], event_ms - event_ms % WINDOW_MS)
        count, max_event, max_kafka = windows.get(window, (0, event_ms, rec.timestamp_ms))
        windows[window] = (count + 1, max(max_event, event_ms), max(max_kafka, rec.timestamp_ms))
        coords.setdefault(window, []).append((rec.partition, rec.offset))
    return Expected(
        surges={w: v for w, v in windows.items() if v[0] > threshold},
        below={w: v[0] for w, v in windows.items() if v[0] <= threshold},
        coords=coords,
        dlq=dlq,
        clicks=len(clicks),
    )


def counted_before(
    expected: Expected, window: tuple[str, int], committed: dict[tuple[str, int], int]
) -> int:
    """How many of ``window``'s clicks are before the ``committed`` offsets."""
    return sum(offset < committed.get((CLICKS.name, p), 0) for p, offset in expected.coords[window])


def generate(bootstrap: str, tmp_path, seed: int, duration_s: float) -> Expected:
    """Run the generator (real time, ``duration_s``), read the clicks back, compute the output."""
    report = generator.run(
        traffic(seed, duration_s), bootstrap, tmp_path / f"report-{seed}.json", progress=False
    )
    expected = expected_output(read_topic(bootstrap, CLICKS.name), THRESHOLD)
    # The run has what the comparisons need: every malformed kind among the clicks, duplicates,
    # surging windows and windows that stay at or below the threshold.
    kinds = report["anomalies_by_topic"][CLICKS.name]
    assert all(kinds[k] > 0 for k in (*generator.MALFORMED_KINDS, "duplicate")), kinds
    assert len(expected.surges) >= 3 and expected.below, expected
    # The generator's own classification agrees with this file's, kind by kind.
    assert Counter(reason.split(":")[0] for _, reason, _ in expected.dlq.values()) == {
        k: kinds[k] for k in generator.MALFORMED_KINDS
    }
    return expected


# -- what the app wrote ----------------------------------------------------------------------------


@dataclass
class Reported:
    surges: dict[tuple[str, int], tuple[int, int, int]]  # compacted: the highest count per key
    counts: list[int]  # click_count of every record written
    records: int
    dlq: dict[tuple[str, int, int], tuple[str | None, str, int]]
    dlq_records: int


def reported(bootstrap: str) -> Reported:
    surges: dict[tuple[str, int], tuple[int, int, int]] = {}
    counts = []
    records = read_topic(bootstrap, SURGES.name)
    for rec in records:
        value = rec.json()
        assert list(value) == SURGES.schema.names, value
        start = epoch_ms(value["window_start"])
        assert rec.key.decode() == f"{value['page_id']}|{value['window_start']}", (rec.key, value)
        assert epoch_ms(value["window_end"]) == start + WINDOW_MS, value
        counts.append(value["click_count"])
        got = (
            value["click_count"],
            epoch_ms(value["max_event_time"]),
            epoch_ms(value["source_kafka_ts"]),
        )
        key = (value["page_id"], start)
        surges[key] = max(got, surges.get(key, got))
    dlq, dlq_records = {}, read_topic(bootstrap, DLQ.name)
    for rec in dlq_records:
        value = rec.json()
        coords = (value["source_topic"], value["source_partition"], value["source_offset"])
        got = (value["raw_value"], value["reason"], epoch_ms(value["source_kafka_ts"]))
        assert dlq.setdefault(coords, got) == got, f"two different DLQ records for {coords}"
    return Reported(surges, counts, len(records), dlq, len(dlq_records))


def complete(bootstrap: str, expected: Expected) -> bool:
    out = reported(bootstrap)
    return out.surges == expected.surges and out.dlq == expected.dlq


def wait_until_done(
    app, settings, expected: Expected, end: dict, timeout_s: float = 240
) -> Reported:
    """Poll until the output equals ``expected`` or the app has committed every input offset
    (after which it writes nothing more for this input), then compare in detail. The timeout is
    a backstop for a stalled app; on a loaded 2-core machine a start alone can take a minute."""
    checkpoint = settings.checkpoint_path(APP.name)
    bootstrap = settings.kafka_bootstrap
    wait_for(
        lambda: (
            assert_running(app)
            or complete(bootstrap, expected)
            or committed_offsets(checkpoint) == end
        ),
        timeout_s,
        1.0,
        lambda: f"committed {committed_offsets(checkpoint)} of {end}\n{log_tail(app)}",
    )
    return check(bootstrap, expected)


def input_end(bootstrap: str) -> dict[tuple[str, int], int]:
    return {(CLICKS.name, p): o for p, o in end_offsets(bootstrap, CLICKS.name).items()}


def check(bootstrap: str, expected: Expected) -> Reported:
    out = reported(bootstrap)
    missing = {w: v for w, v in expected.surges.items() if out.surges.get(w) != v}
    extra = {w: v for w, v in out.surges.items() if w not in expected.surges}
    assert not missing and not extra, (
        f"windows missing or with another final (count, max event time, source ts): "
        f"expected {missing}, got { ({w: out.surges.get(w) for w in missing}) }; "
        f"unexpected windows {extra} (their counts in the input: "
        f"{ ({w: expected.below.get(w) for w in extra}) })"
    )
    assert min(out.counts) > THRESHOLD, f"a record at or below the threshold: {sorted(out.counts)}"
    assert out.dlq == expected.dlq
    return out


def summary(expected: Expected, out: Reported) -> str:
    return (
        f"{expected.clicks} clicks, {len(expected.surges)} surging windows "
        f"({out.records} surge records written), {len(expected.below)} windows at or below "
        f"{THRESHOLD}, {len(expected.dlq)} rejects ({out.dlq_records} DLQ records written)"
    )


def status_of(settings) -> dict:
    return read_status(settings, APP.name) or {}


# -- the tests -----------------------------------------------------------------------------------


def test_real_time_mode_reports_exactly_the_windows_above_the_threshold(fresh_kafka, tmp_path):
    bootstrap, settings = fresh_kafka.bootstrap, fresh_kafka.settings
    started, started_at = time.monotonic(), time.time()
    # Default trigger: Real-Time Mode. The app starts while the traffic is being produced.
    app = start_app(
        MODULE, settings, "--threshold", str(THRESHOLD), "--trigger-interval", "10 seconds"
    )
    expected = generate(bootstrap, tmp_path, seed=41, duration_s=12)

    out = wait_until_done(app, settings, expected, input_end(bootstrap))
    complete_s = time.monotonic() - started
    assert status_of(settings)["mode"] == "realtime"
    # The listener's probe (every 15 s) measures the end-to-end latency from page_surges.
    e2e = wait_for(
        lambda: (
            (status_of(settings).get("e2e_latency") or {}).get("samples")
            and status_of(settings)["e2e_latency"]
        ),
        40,
        1.0,
        lambda: str(status_of(settings)),
    )
    assert e2e["topics"] == ["page_surges"] and e2e["timestamp_type"] == "CreateTime"
    assert status_of(settings)["latency_history"][-1][0] == e2e["measured_at"]
    # The Kafka source's lag, read from the batch's progress: every clicks partition read up
    # to the newest offset Spark saw at the boundary, and the rates of the last hour beside it.
    # (In Real-Time Mode the first progress comes at the first boundary, 10 s into the run.)
    lag = wait_for(
        lambda: status_of(settings).get("input_lag"), 40, 1.0, lambda: str(status_of(settings))
    )
    rates = status_of(settings)["progress_history"]
    assert ["page_clicks" in s["source"] for s in lag["sources"]] == [True], lag
    assert lag["max_offsets"] >= 0 and rates and all(len(p) == 4 for p in rates), (lag, rates)
    # Between boundaries the app says its query is alive (active, its tasks running), so a hung
    # app is stale within the same bound whatever the interval: at least once per interval.
    alive = wait_for(
        lambda: status_of(settings).get("last_alive_at"), 30, 1.0, lambda: str(status_of(settings))
    )
    assert alive >= started_at, (alive, started_at)
    stop_started = time.monotonic()
    stop_app(app)
    status = status_of(settings)
    assert status["state"] == "stopped"
    print(
        f"\nRTM: {summary(expected, out)}; complete {complete_s:.1f}s after the start, "
        f"stopped in {time.monotonic() - stop_started:.1f}s; e2e p50/p99 {e2e['p50_ms']}/"
        f"{e2e['p99_ms']} ms over {e2e['samples']} records, per-batch bound p50/p99 "
        f"{status['latency_p50_ms']}/{status['latency_p99_ms']} ms; waiting in state: "
        f"{status['waiting_in_state']}"
    )


# make test-e2e: as attribution's graceful restart (test_attribution_app.py).
@pytest.mark.e2e
def test_restart_on_the_same_checkpoint_gives_the_uninterrupted_output(fresh_kafka, tmp_path):
    bootstrap, settings = fresh_kafka.bootstrap, fresh_kafka.settings
    checkpoint = settings.checkpoint_path(APP.name)
    # Micro-batches of ~1 s of traffic: a surging window (5 s) takes several of them.
    args = (
        "--threshold",
        str(THRESHOLD),
        "--trigger",
        "processing_time",
        "--trigger-interval",
        "1 second",
        "--max-offsets-per-trigger",
        "50",
    )

    first = start_app(MODULE, settings, *args)
    # The traffic is produced while the app starts (in less time than the app takes to start).
    expected = generate(bootstrap, tmp_path, seed=42, duration_s=8)
    end = input_end(bootstrap)
    # Stop once a surging window has begun to be counted: the stop lets the running batch
    # finish, which leaves the window open, so its state must survive the restart.
    wait_for(
        lambda: (
            assert_running(first)
            or any(
                counted_before(expected, w, committed_offsets(checkpoint)) for w in expected.surges
            )
        ),
        240,
        0.2,
        lambda: log_tail(first),
    )
    stop_app(first)
    assert status_of(settings)["state"] == "stopped"
    committed = committed_offsets(checkpoint)
    written_before = reported(bootstrap).records
    assert committed != end, "the first run read all input: the stop was not mid-stream"
    split = {
        w: (counted_before(expected, w, committed), expected.surges[w][0])
        for w in expected.surges
        if 0 < counted_before(expected, w, committed) < expected.surges[w][0]
    }
    assert split, f"no surging window is counted partly in each run (committed {committed})"

    second = start_app(MODULE, settings, *args)
    out = wait_until_done(second, settings, expected, end)
    stop_app(second)
    print(
        f"\nrestart: the first run committed {sum(committed.values())} of "
        f"{sum(end.values())} offsets and wrote {written_before} surge records; windows "
        f"counted across the restart (clicks before the stop, final count): {split}; "
        f"both runs: {summary(expected, out)}"
    )


def test_a_late_click_is_counted_in_the_status_not_in_a_window(fresh_kafka):
    bootstrap = fresh_kafka.bootstrap
    # With metrics on (the UI on any free port): the query's gauges are checked at the end.
    settings = fresh_kafka.settings.with_overrides(spark_metrics=True, spark_ui_port=0)
    # Threshold 0: every window with a click is reported, so a counted late click would show.
    app = start_app(MODULE, settings, "--threshold", "0", "--trigger", "processing_time")
    page = f"page-late-{uuid.uuid4().hex[:8]}"
    now = time.time_ns() // 1_000_000

    def send(click_id: str, event_ms: int) -> None:
        value = {
            "click_id": click_id,
            "page_id": page,
            "event_time": generator.iso_ms(event_ms),
            "user_id": "user-00001",
        }
        produce(bootstrap, CLICKS.name, json.dumps(value).encode(), key=page.encode())

    for i in range(3):
        send(f"on-time-{i}", now)
    # Once the watermark (5 s behind the newest event time) is at now - 5 s, a click of
    # now - 60 s is late: its window ended by now - 55 s.
    wait_for(
        lambda: (
            assert_running(app)
            or epoch_ms(status_of(settings).get("watermark") or "1970-01-01T00:00:00Z")
            >= now - 5_000
        ),
        240,
        0.5,
        lambda: f"status {status_of(settings)}\n{log_tail(app)}",
    )
    assert status_of(settings)["late_rows"] == 0
    send("late", now - 60_000)
    wait_for(
        lambda: assert_running(app) or status_of(settings)["late_rows"] >= 1,
        120,
        0.5,
        lambda: f"status {status_of(settings)}\n{log_tail(app)}",
    )

    out = reported(bootstrap)
    on_time_ts = max(
        r.timestamp_ms
        for r in read_topic(bootstrap, CLICKS.name)
        if r.json()["click_id"].startswith("on-time")
    )
    assert out.surges == {(page, now - now % WINDOW_MS): (3, now, on_time_ts)}
    assert out.dlq == {}, "a late click is valid: it does not go to the DLQ"
    assert status_of(settings)["late_rows"] == 1
    assert_streaming_gauges(settings, app)
    stop_app(app)


def assert_streaming_gauges(settings, app) -> None:
    """The running query's gauges, scraped from the driver's Prometheus endpoint its status
    names (``spark_metrics``): the watermark the status reports, the window it holds in state,
    and numeric rates and trigger latency."""
    url = status_of(settings).get("metrics_url")
    assert url and url.startswith("http://127.0.0.1:"), f"metrics_url {url!r}\n{log_tail(app)}"

    def gauge(name: str) -> str:
        return prometheus_name(APP.name, "driver.spark.streaming", APP.name, name) + "_Value"

    def scraped() -> dict[str, float] | None:
        samples = scrape_prometheus(url)
        watermark = epoch_ms(status_of(settings)["watermark"])
        return samples if samples.get(gauge("eventTime-watermark")) == watermark else None

    def streaming() -> str:
        names = [n for n in sorted(scrape_prometheus(url)) if "_streaming_" in n]
        return f"{url} serves {names}, status {status_of(settings)}"

    samples = wait_for(scraped, 30, 0.5, streaming)
    assert samples[gauge("states-rowsTotal")] >= 1, "the late click's page window in state"
    for name in ("inputRate-total", "processingRate-total", "latency"):
        assert samples[gauge(name)] >= 0, name
