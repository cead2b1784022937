"""Faults of the streaming apps: ``kill -9`` of each app and a broker stopped and restarted while
traffic flows, compared with an uninterrupted run over the same input.

**The input is fixed.** One seeded generator run (ad chains and clicks, with malformed records,
duplicates, out-of-order events and orphans) is planned on a virtual clock
(:func:`plan_input`): every record's topic, partition, key, value and Kafka timestamp are decided
before anything runs. Both runs see exactly those records at the same offsets: the uninterrupted
run reads them as a backlog, produced before the apps start; the faulted run reads them fed at a
steady pace (:class:`Feeder`), so that the faults land while traffic flows. Between the runs
every topic is deleted and created again, so offsets restart at 0 and DLQ ids (source topic,
partition, offset) mean the same record in both.

**Why the outputs may not depend on timing.** The planned event times span a few seconds
(``SPAN_S``), less than click-surge's watermark delay (5 s): no click can ever be behind the
watermark, whatever the batches or restarts, and no window closes. The Kafka timestamps span
less than attribution's lateness (30 s) and its window (300 s): no input is ever late and no key
closes while the generated records are read; once every one of them is committed, one sentinel
request (the same record in both runs, Kafka timestamp past every close time) moves the watermark
and the next batch closes every key (``request_closed`` and orphans). So an app that loses
nothing writes, after deduplication by ids, exactly what the uninterrupted run wrote:

* ``attributed_events`` by (record_type, request_id, impression_id, callback_id);
* ``page_surges``: the highest ``click_count`` per ``page_id|window_start`` (update mode
  re-emits a window as it grows, a replay re-emits it again);
* both DLQs by (source topic, partition, offset).

A faulted run may write some records more than once (the Kafka sink is at-least-once: a batch
interrupted after writing is written again on restart): counted as ``duplicated``, allowed.
Anything of the uninterrupted run missing is ``lost``, anything else is ``unexpected``, and a
window whose final count differs is lost (lower) or double counted (higher): all must be zero.

**The apps run as in production**, through the lifecycle (``adlake.apps``): started detached,
holding their lock; attribution in micro-batches (JVM engine), click-surge in Real-Time Mode
(checkpoint interval ``RTM_INTERVAL_S``). A ``kill -9`` SIGKILLs the app's whole process group
(driver, JVM, workers) at a seeded moment: once a seeded fraction of the input is fed (and,
in micro-batches, with a batch in flight). The real supervisor (:func:`adlake.apps.supervise`,
run here in a loop instead of every minute, backoff shortened) restarts it on the same
checkpoint. The
broker bounce stops the broker (controlled shutdown) while traffic flows, keeps it down until
``OUTAGE_RECORDS`` records wait in the feeder's producer, starts it again on the same ports and
data, and leaves the rest to the apps and the supervisor.

**Forms.** ``make test`` runs the short form: one faulted run with one kill of each app and one
broker bounce. ``FAULTS_FORM=long`` (``make faults``) adds runs with several kills of each app
and several bounces. Every faulted run writes its report, JSON, to
``<runtime>/reports/faults/ops-<scenario>-<time>.json`` (:func:`write_report`).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from adlake import apps, generator, registry
from adlake.config import Settings, load_settings
from adlake.local.kafka import LocalKafka, create_topics
from adlake.status import read_status
from spark_apps.common.attribution.contract import REQUEST_CLOSED
from spark_apps.ops.click_surge import WATERMARK
from tests.conftest import private_settings
from tests.spark_apps.ops.conftest import (
    Record,
    committed_offsets,
    end_offsets,
    read_topic,
    wait_for,
)
from tests.support.app_processes import kill_lock_holders

ATTRIBUTION = registry.app("attribution")
CLICK_SURGE = registry.app("click_surge")
APPS = (ATTRIBUTION, CLICK_SURGE)
SURGES = registry.topic(CLICK_SURGE.outputs[0])
SEED = 1414
# The planned traffic: base events and how many seconds of event time they span (see above).
EVENTS = 5000
SPAN_S = 2.5
# Click-surge: a window surges above this many clicks (a few dozen windows do).
THRESHOLD = 40
# Real-Time Mode's checkpoint interval: commits (and so restart points) every few seconds.
RTM_INTERVAL_S = 5
# How long the faulted run's feeder takes to send the input: in the long form, long enough for
# several kills (an app takes ~30 s to come back) while traffic flows.
FEED_S = {"short": 30.0, "long": 150.0}
# The broker stays down until this many records wait in the feeder's producer (~6 s of the short
# form's traffic).
OUTAGE_RECORDS = 1000
# Backstop for an app to get somewhere (start, catch up, stop) on a loaded 2-core machine.
APP_TIMEOUT_S = 300
FORM = os.environ.get("FAULTS_FORM", "short")


# -- the fixed input -------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputRecord:
    topic: str
    partition: int
    key: bytes
    value: bytes
    timestamp_ms: int


def traffic_config(seed: int) -> generator.GeneratorConfig:
    """Both apps' inputs, every anomaly but lateness (late events would be behind the watermark
    in one run and not in another, by design: not a fault)."""
    return generator.GeneratorConfig(
        rate=EVENTS / SPAN_S,
        count=EVENTS,
        seed=seed,
        click_share=0.5,
        fill_rate=0.8,
        out_of_order=0.02,
        duplicates=0.03,
        late=0.0,
        malformed=0.03,
        orphans=0.03,
        surge_pages=2,
        surge_rate=200.0,
    )


def plan_input(config: generator.GeneratorConfig, start_ms: int) -> list[InputRecord]:
    """The generator's records of ``config`` in send order, each stamped with the instant the
    generator would send it (a virtual clock: nothing waits)."""
    clock = [start_ms]
    out: list[InputRecord] = []

    def advance(seconds: float) -> None:
        clock[0] += max(1, math.ceil(seconds * 1000))

    generator.emit(
        generator.Traffic(config, start_ms),
        lambda rec, ts: out.append(
            InputRecord(rec.topic, rec.partition, rec.key.encode(), rec.value, ts)
        ),
        now_ms=lambda: clock[0],
        wait=advance,
    )
    return out


def sentinel(records: list[InputRecord], seed: int) -> InputRecord:
    """The closing request (:func:`adlake.generator.closing_request`) for ``records``: once
    read, attribution's watermark passes every key's close, so the next batch closes them all."""
    request_id = f"sentinel-{seed}"
    newest_ms = max(r.timestamp_ms for r in records)
    value, timestamp_ms = generator.closing_request(request_id, newest_ms)
    return InputRecord(
        generator.AD_REQUESTS.name,
        generator.partition_for(generator.AD_REQUESTS, request_id),
        request_id.encode(),
        value,
        timestamp_ms,
    )


def input_end(records: list[InputRecord], app: registry.App) -> dict[tuple[str, int], int]:
    """``{(topic, partition): end offset}`` of ``app``'s inputs once ``records`` are produced to
    empty topics (every partition, the empty ones at 0)."""
    counts = Counter((r.topic, r.partition) for r in records if r.topic in app.inputs)
    return {(t, p): counts[t, p] for t in app.inputs for p in range(registry.topic(t).partitions)}


class Feeder(threading.Thread):
    """Produces ``records`` in order with their own partitions and timestamps, spread over
    ``pace_s`` seconds (0: as fast as possible). The producer is idempotent, so each partition
    gets exactly this order, hence the same offsets, even across a broker restart (it buffers
    and retries while the broker is down)."""

    def __init__(self, bootstrap: str, records: list[InputRecord], pace_s: float = 0.0) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.records, self.pace_s = records, pace_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 600_000,
            }
        )
        self.produced = self.acked = 0
        self.errors: list[str] = []
        # set by a test that fails: a feeder must not outlive its run into the next one's topics
        self.stopping = threading.Event()

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            self.errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")
        else:
            self.acked += 1

    @property
    def waiting(self) -> int:
        """Records handed to the producer and not yet acknowledged by the broker."""
        return self.produced - self.acked - len(self.errors)

    def run(self) -> None:
        started = time.monotonic()
        for i, rec in enumerate(self.records):
            if self.stopping.is_set():
                return
            if self.pace_s:
                # pacing, as the generator paces: the records' order is fixed by the producer
                while (
                    ahead := started + self.pace_s * i / len(self.records) - time.monotonic()
                ) > 0:
                    self.producer.poll(ahead)
            while True:
                try:
                    self.producer.produce(
                        rec.topic,
                        value=rec.value,
                        key=rec.key,
                        partition=rec.partition,
                        timestamp=rec.timestamp_ms,
                        on_delivery=self._on_delivery,
                    )
                    break
                except BufferError:
                    self.producer.poll(0.05)
            self.produced += 1
            self.producer.poll(0)
        while self.producer.flush(1.0):
            pass

    def finish(self, timeout_s: float = APP_TIMEOUT_S) -> None:
        self.join(timeout_s)
        assert not self.is_alive(), f"the feeder is stuck: {self.waiting} records unacknowledged"
        assert not self.errors and self.acked == len(self.records), (
            f"{self.acked} of {len(self.records)} acknowledged; errors {self.errors[:3]}"
        )


def produce(bootstrap: str, records: list[InputRecord]) -> None:
    feeder = Feeder(bootstrap, records)
    feeder.start()
    feeder.finish()


def recreate_topics(bootstrap: str, timeout_s: float = 60) -> None:
    """Delete every registry topic and create it again, empty (offsets from 0)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = list(registry.TOPICS)
    for future in admin.delete_topics(names, operation_timeout=timeout_s).values():
        future.result(timeout=timeout_s)
    wait_for(
        lambda: not set(names) & set(admin.list_topics(timeout=10).topics),
        timeout_s,
        0.2,
        "the deleted topics are still listed",
    )
    create_topics(bootstrap)


# -- the apps ------------------------------------------------------------------------------------


def knobs(app: registry.App) -> dict:
    return {"threshold": THRESHOLD} if app is CLICK_SURGE else {}


def log(settings: Settings, app: registry.App) -> str:
    return apps.log_tail(settings, app.name, 40)


def derived_state(settings: Settings, app: registry.App) -> str:
    return apps.app_status(settings, app.name)["state"]


def start(settings: Settings, app: registry.App) -> None:
    apps.act(
        settings,
        app.name,
        "start",
        trigger=app.default_trigger,
        knobs=knobs(app),
        reason="faults test",
    )


def kill_9(settings: Settings, app: registry.App) -> float:
    """SIGKILL the app's process group (driver, JVM, Python workers: nothing gets to flush or
    commit) and wait until its lock is free; returns the instant of the kill."""
    holder = apps.holder(settings, app.name)
    assert holder is not None and holder.pid > 0, f"{app.name} is not running\n{log(settings, app)}"
    killed_at = time.monotonic()
    os.killpg(holder.pid, signal.SIGKILL)
    wait_for(
        lambda: apps.holder(settings, app.name) is None,
        60,
        0.1,
        f"{app.name}'s lock is still held after SIGKILL",
    )
    return killed_at


def supervise_until(
    settings: Settings, done: Callable[[], bool], timeout_s: float, what: str
) -> list[dict]:
    """Run the supervisor's pass (the apps_supervisor DAG's task) every second until ``done``;
    returns the actions it took."""
    actions: list[dict] = []

    def check() -> bool:
        actions.extend(apps.supervise(settings))
        return done()

    wait_for(
        check,
        timeout_s,
        1.0,
        lambda: (
            f"{what}; supervisor actions {actions}\n" + "\n".join(log(settings, a) for a in APPS)
        ),
    )
    return actions


def running_since(settings: Settings, app: registry.App, since_epoch: float) -> bool:
    """The app holds its lock and has reported a batch (or an idle heartbeat) since
    ``since_epoch``: it is working again."""
    status = read_status(settings, app.name) or {}
    return (
        apps.holder(settings, app.name) is not None
        and status.get("state") == "running"
        and float(status.get("written_at", 0)) > since_epoch
    )


def committed(settings: Settings, app: registry.App) -> dict[tuple[str, int], int]:
    return committed_offsets(settings.checkpoint_path(app.name))


def idle(settings: Settings, app: registry.App) -> bool:
    """No batch in flight: the newest offsets entry of the checkpoint is committed."""
    checkpoint = settings.checkpoint_path(app.name)
    ids = [
        {int(p.name) for p in (checkpoint / d).glob("[0-9]*") if p.name.isdigit()}
        for d in ("offsets", "commits")
    ]
    return bool(ids[0]) and max(ids[0]) == max(ids[1], default=-1)


# -- the outputs ---------------------------------------------------------------------------------


@dataclass
class Outputs:
    """What one run wrote: raw record counts, and each output deduplicated by its ids."""

    raw: dict[str, int]
    ids: dict[str, set[tuple]]
    surges: dict[tuple, int]  # (page_id, window_start) -> the highest click_count


def read_outputs(bootstrap: str) -> Outputs:
    raw, ids, surges = {}, {}, {}
    for app in APPS:
        for name in (*app.outputs, app.dlq):
            topic = registry.topic(name)
            records: list[Record] = read_topic(bootstrap, name)
            raw[name] = len(records)
            values = [r.json() for r in records]
            if name == SURGES.name:
                for v in values:
                    key = (v["page_id"], v["window_start"])
                    surges[key] = max(v["click_count"], surges.get(key, 0))
                ids[name] = set(surges)
            else:
                ids[name] = {tuple(v[f] for f in topic.id_fields) for v in values}
    return Outputs(raw, ids, surges)


def compare(base: Outputs, faulted: Outputs) -> dict[str, dict[str, int]]:
    """Per output topic: records written by each run, unique ids, lost, unexpected and
    duplicated (faulted records beyond one per id); for page_surges also the windows whose
    final count is lower (counted as lost) or higher (double counted, unexpected)."""
    out = {}
    for name in base.raw:
        lost = base.ids[name] - faulted.ids[name]
        unexpected = faulted.ids[name] - base.ids[name]
        row = {
            "records_uninterrupted": base.raw[name],
            "records_faulted": faulted.raw[name],
            "unique": len(faulted.ids[name]),
            "lost": len(lost),
            "unexpected": len(unexpected),
            "duplicated": faulted.raw[name] - len(faulted.ids[name]),
        }
        if name == SURGES.name:
            shared = base.ids[name] & faulted.ids[name]
            lower = [k for k in shared if faulted.surges[k] < base.surges[k]]
            higher = [k for k in shared if faulted.surges[k] > base.surges[k]]
            row["lost"] += len(lower)
            row["unexpected"] += len(higher)
            # update mode: the records beyond one per window are re-emissions as it grew
            row["duplicated"] = None
            row["examples"] = [
                f"{k}: {base.surges.get(k)} -> {faulted.surges.get(k)}"
                for k in sorted([*lost, *unexpected, *lower, *higher])[:5]
            ]
        else:
            row["examples"] = [str(k) for k in sorted([*lost, *unexpected], key=str)[:5]]
        out[name] = row
    return out


# -- one run -------------------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str  # "kill -9" or "broker bounce"
    target: str  # the app's name, or "broker"
    at: float  # the seeded fraction of the input (see module docstring)
    seen: dict = field(default_factory=dict)  # what was observed when it was injected


@dataclass
class Run:
    settings: Settings
    broker: LocalKafka
    records: list[InputRecord]
    last: InputRecord

    def __post_init__(self) -> None:
        self.ends = {app.name: input_end(self.records, app) for app in APPS}
        self.total = {app.name: sum(self.ends[app.name].values()) for app in APPS}

    def committed_fraction(self, app: registry.App) -> float:
        return sum(committed(self.settings, app).values()) / self.total[app.name]

    def output_fraction(self, app: registry.App, base: Outputs) -> float:
        names = (*app.outputs, app.dlq)
        written = sum(sum(end_offsets(self.settings.kafka_bootstrap, n).values()) for n in names)
        return written / max(1, sum(base.raw[n] for n in names))

    def progress(self, app: registry.App, base: Outputs) -> float | None:
        """How far the app is, for the report: committed input for micro-batches; for Real-Time
        Mode (commits only at interval ends) also the output written so far against the
        uninterrupted run's. None while the broker cannot say (it is just back)."""
        from confluent_kafka import KafkaException

        done = self.committed_fraction(app)
        if app.default_trigger != "realtime":
            return round(done, 3)
        try:
            return round(max(done, self.output_fraction(app, base)), 3)
        except KafkaException:
            return None

    def caught_up(self, app: registry.App) -> bool:
        return committed(self.settings, app) == self.ends[app.name]

    def closed(self) -> bool:
        """Attribution has written the sentinel's close and has no batch in flight."""
        request_id = self.last.key.decode()
        closes = [
            r
            for r in read_topic(self.settings.kafka_bootstrap, ATTRIBUTION.outputs[0])
            if r.key == self.last.key
        ]
        return any(
            r.json()["record_type"] == REQUEST_CLOSED and r.json()["request_id"] == request_id
            for r in closes
        ) and idle(self.settings, ATTRIBUTION)

    def finish(self, supervised: bool) -> list[dict]:
        """Once both apps have committed all input: the sentinel, attribution's closes, then a
        graceful stop of both."""
        actions: list[dict] = []

        def both_caught_up() -> bool:
            return all(self.caught_up(a) for a in APPS)

        if supervised:
            actions += supervise_until(
                self.settings, both_caught_up, APP_TIMEOUT_S, "the apps did not catch up"
            )
        else:
            wait_for(
                both_caught_up,
                APP_TIMEOUT_S,
                1.0,
                lambda: "\n".join(
                    f"{a.name}: committed {committed(self.settings, a)} of {self.ends[a.name]}\n"
                    f"{log(self.settings, a)}"
                    for a in APPS
                ),
            )
        produce(self.settings.kafka_bootstrap, [self.last])
        wait_for(
            self.closed,
            APP_TIMEOUT_S,
            1.0,
            lambda: f"no close of the sentinel\n{log(self.settings, ATTRIBUTION)}",
        )
        with ThreadPoolExecutor(len(APPS)) as pool:  # both at once: each waits for its batch
            stops = pool.map(
                lambda a: apps.act(self.settings, a.name, "stop", reason="faults test"), APPS
            )
        for app, stopped in zip(APPS, stops):
            result = stopped["result"]["stopped"]
            assert result["how"] == "exited", f"{result}\n{log(self.settings, app)}"
        return actions


def run_uninterrupted(run: Run) -> Outputs:
    produce(run.settings.kafka_bootstrap, run.records)
    for app in APPS:
        start(run.settings, app)
    run.finish(supervised=False)
    for app in APPS:
        assert apps.read_restarts(run.settings, app.name).count == 0
    return read_outputs(run.settings.kafka_bootstrap)


def run_faulted(run: Run, base: Outputs, faults: list[Fault], feed_s: float) -> dict:
    """The same input fed over ``feed_s`` seconds while the apps run, each of ``faults``
    injected at its point (the faults of different targets overlap: one app may be restarting
    while the other is killed); returns the report's figures."""
    settings = run.settings
    for app in APPS:
        start(settings, app)
    wait_for(
        lambda: all(running_since(settings, a, 0) for a in APPS),
        APP_TIMEOUT_S,
        0.5,
        lambda: "\n".join(log(settings, a) for a in APPS),
    )
    started = time.monotonic()
    feeder = Feeder(settings.kafka_bootstrap, run.records, feed_s)
    feeder.start()
    try:
        return _inject_all(run, base, faults, feeder, feed_s, started)
    finally:
        feeder.stopping.set()


def _inject_all(
    run: Run, base: Outputs, faults: list[Fault], feeder: Feeder, feed_s: float, started: float
) -> dict:
    settings = run.settings
    # When each app came back from its last kill (epoch s): the next kill waits for it.
    back_since = {app.name: 0.0 for app in APPS}
    pending, recovering, injected = list(faults), [], []
    supervised_at = 0.0
    deadline = time.monotonic() + APP_TIMEOUT_S + 4 * feed_s
    while pending or recovering:
        assert time.monotonic() < deadline, (
            f"faults not injected or not recovered: pending {pending}, recovering "
            f"{recovering}\n" + "\n".join(log(settings, a) for a in APPS)
        )
        if time.monotonic() - supervised_at >= 1.0:
            apps.supervise(settings)
            supervised_at = time.monotonic()
        busy = {f.target for f, _ in recovering}
        for fault in list(pending):  # one at a time: a fault makes its target busy
            if not ready(run, feeder, fault, back_since, busy):
                continue
            pending.remove(fault)
            recovering.append((fault, inject(run, base, feeder, fault)))
            busy.add(fault.target)
        for fault, (at, at_epoch) in list(recovering):
            targets = APPS if fault.target == "broker" else (registry.app(fault.target),)
            times = fault.seen.setdefault("time_to_recover_s", {})
            for app in targets:
                if (
                    app.name not in times
                    and running_since(settings, app, at_epoch)
                    and sum(committed(settings, app).values()) > 0
                ):
                    times[app.name] = round(time.monotonic() - at, 1)
                    if fault.kind == "kill -9":
                        back_since[app.name] = time.time()
            if len(times) == len(targets):
                recovering.remove((fault, (at, at_epoch)))
                if fault.kind == "broker bounce":  # recovered alone (0) or restarted
                    fault.seen["restarted_by_supervisor"] = {
                        a.name: restarts_after_failure(settings, a, at_epoch) for a in APPS
                    }
                injected.append(
                    {"kind": fault.kind, "target": fault.target, "at": fault.at, **fault.seen}
                )
        time.sleep(0.05)
    feeder.finish()
    fed_s = time.monotonic() - started
    run.finish(supervised=True)
    faulted = read_outputs(settings.kafka_bootstrap)
    return {
        "faults": injected,
        "feed_s": round(fed_s, 1),
        "outputs": compare(base, faulted),
        "runs": {a.name: 1 + apps.read_restarts(settings, a.name).count for a in APPS},
    }


def restarts_after_failure(settings: Settings, app: registry.App, since_epoch: float) -> int:
    """The supervisor's restarts of ``app`` since ``since_epoch`` after the app failed by itself
    (an exit record: its query failed), not after a kill (no exit record)."""
    history = apps.read_restarts(settings, app.name).history
    return sum(
        entry["at"] >= since_epoch and "without an exit record" not in str(entry.get("error"))
        for entry in history
    )


def ready(
    run: Run, feeder: Feeder, fault: Fault, back_since: dict[str, float], busy: set[str]
) -> bool:
    """Whether ``fault``'s moment has come: once ``fault.at`` of the input is fed (traffic
    flows); a kill also waits until its app works again after its last kill, and, in
    micro-batches, for a batch in flight (unless none is to come). Faults of different targets
    may overlap (an app killed while the broker is down), not two of one target (``busy``: the
    targets still recovering)."""
    if feeder.produced < fault.at * len(run.records) or fault.target in busy:
        return False
    if fault.kind == "broker bounce":
        return True
    app = registry.app(fault.target)
    return running_since(run.settings, app, back_since[app.name]) and (
        app.default_trigger == "realtime" or not idle(run.settings, app) or run.caught_up(app)
    )


def inject(run: Run, base: Outputs, feeder: Feeder, fault: Fault) -> tuple[float, float]:
    """Inject ``fault`` now; returns when (monotonic, epoch) the target went down."""
    settings = run.settings
    if fault.kind == "kill -9":
        app = registry.app(fault.target)
        fault.seen = {
            "fed_fraction": round(feeder.produced / len(run.records), 3),
            "progress": run.progress(app, base),
            "committed_fraction": round(run.committed_fraction(app), 3),
            "batch_in_flight": not idle(settings, app),
        }
        return kill_9(settings, app), time.time()
    fault.seen = {
        "fed_fraction": round(feeder.produced / len(run.records), 3),
        **{f"{a.name}_committed_fraction": round(run.committed_fraction(a), 3) for a in APPS},
    }
    stopped_at, stopped_epoch = time.monotonic(), time.time()
    run.broker.stop()
    # Down while traffic flows: until OUTAGE_RECORDS wait in the feeder's producer.
    wait_for(lambda: feeder.waiting >= OUTAGE_RECORDS or not feeder.is_alive(), APP_TIMEOUT_S, 0.05)
    fault.seen["down_s"] = round(time.monotonic() - stopped_at, 1)
    run.broker.start()
    return stopped_at, stopped_epoch


# -- the report ----------------------------------------------------------------------------------


def write_report(scenario: str, run: Run, figures: dict, seconds: float) -> Path:
    """``<runtime>/reports/faults/ops-<scenario>-<UTC time>.json``: the format the lake side's
    report shares (faults, runs, records in/out, lost, duplicated, time to recover)."""
    outputs = figures["outputs"]
    report = {
        "side": "ops",
        "scenario": scenario,
        "form": FORM,
        "seed": SEED,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(seconds, 1),
        "faults": figures["faults"],
        "runs": figures["runs"],
        "records_in": {a.name: run.total[a.name] + (a is ATTRIBUTION) for a in APPS},
        "records_out": {n: o["records_faulted"] for n, o in outputs.items()},
        "records_out_uninterrupted": {n: o["records_uninterrupted"] for n, o in outputs.items()},
        "lost": {n: o["lost"] for n, o in outputs.items()},
        "unexpected": {n: o["unexpected"] for n, o in outputs.items()},
        "duplicated": {n: o["duplicated"] for n, o in outputs.items()},
        "time_to_recover_s": [f["time_to_recover_s"] for f in figures["faults"]],
        "details": outputs,
        "passed": not any(o["lost"] or o["unexpected"] for o in outputs.values()),
    }
    out = (
        load_settings().reports_dir
        / "faults"
        / f"ops-{scenario}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return out


# -- fixtures and tests ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faults_broker(tmp_path_factory) -> Iterator[LocalKafka]:
    """A broker of this module alone (free loopback ports, data under a temporary directory),
    shared by the uninterrupted run and the faulted runs, each on fresh topics."""
    broker = LocalKafka(private_settings(tmp_path_factory.mktemp("faults") / "runtime"))
    broker.start()
    try:
        broker.create_topics()
        yield broker
    finally:
        broker.stop()


def app_settings(broker: LocalKafka, runtime: Path) -> Settings:
    """The apps' settings of one run: its own runtime (checkpoints, status, locks, logs), the
    module's broker, a short Real-Time Mode interval and a short supervisor backoff."""
    return broker.settings.with_overrides(
        runtime_dir=runtime,
        app_rtm_interval_s=RTM_INTERVAL_S,
        app_backoff_min_s=1,
        app_backoff_max_s=2,
    )


@pytest.fixture(scope="module")
def uninterrupted(faults_broker, tmp_path_factory) -> Iterator[tuple[list, Outputs]]:
    """The fixed input and what the apps write for it without a fault."""
    records = plan_input(traffic_config(SEED), time.time_ns() // 1_000_000)
    settings = app_settings(faults_broker, tmp_path_factory.mktemp("uninterrupted"))
    run = Run(settings, faults_broker, records, sentinel(records, SEED))
    try:
        base = run_uninterrupted(run)
    finally:
        kill_lock_holders(settings)
    # What the comparisons need is there: attributions, closes, orphans, surges, rejects.
    assert min(base.raw.values()) > 0, base.raw
    assert len(base.surges) >= 5, base.surges
    types = Counter(i[0] for i in base.ids[ATTRIBUTION.outputs[0]])
    assert set(types) == set(registry.RECORD_TYPES), types
    yield records, base


def faulted(
    scenario: str, broker: LocalKafka, uninterrupted, tmp_path, faults: list[Fault], feed_s: float
) -> dict:
    records, base = uninterrupted
    recreate_topics(broker.bootstrap)
    settings = app_settings(broker, tmp_path / "runtime")
    run = Run(settings, broker, records, sentinel(records, SEED))
    started = time.monotonic()
    try:
        figures = run_faulted(run, base, faults, feed_s)
    finally:
        kill_lock_holders(settings)
    path = write_report(scenario, run, figures, time.monotonic() - started)
    print(
        f"\n{scenario}: report {path}\n"
        + json.dumps({k: figures[k] for k in ("faults", "runs")}, indent=1)
    )
    return figures


def seeded_faults(seed: int, kills: int, bounces: int) -> list[Fault]:
    """``kills`` kills of each app and ``bounces`` broker bounces at seeded moments: fractions of
    the input fed, in the order they come (a fault whose target is still recovering from the
    previous one comes when it is back)."""
    rng = random.Random(seed)
    faults = [
        Fault("kill -9", app.name, round(rng.uniform(0.05, 0.7), 2))
        for app in APPS
        for _ in range(kills)
    ]
    faults += [
        Fault("broker bounce", "broker", round(rng.uniform(0.2, 0.7), 2)) for _ in range(bounces)
    ]
    return sorted(faults, key=lambda f: (f.at, f.target))


def assert_nothing_lost(figures: dict) -> None:
    bad = {n: o for n, o in figures["outputs"].items() if o["lost"] or o["unexpected"]}
    assert not bad, f"outputs differ from the uninterrupted run: {bad}"


# scenario -> (kills of each app, broker bounces, form whose feed time it takes)
SCENARIOS = {"kill-and-bounce": (1, 1, "short")}
if FORM == "long":
    SCENARIOS.update({"kills": (3, 0, "long"), "bounces": (0, 3, "long")})


@pytest.mark.integration  # the module's broker and the apps' JVMs
@pytest.mark.faults
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_faulted_run_writes_what_the_uninterrupted_run_wrote(
    faults_broker, uninterrupted, tmp_path, scenario
):
    kills, bounces, form = SCENARIOS[scenario]
    faults = seeded_faults(SEED + kills * 10 + bounces, kills, bounces)
    figures = faulted(scenario, faults_broker, uninterrupted, tmp_path, faults, FEED_S[form])
    assert len(figures["faults"]) == kills * len(APPS) + bounces
    kills_per_app = Counter(f.target for f in faults if f.kind == "kill -9")
    for app in APPS:  # a kill is a run more; a bounce may add supervisor restarts too
        assert figures["runs"][app.name] >= 1 + kills_per_app[app.name]
    assert_nothing_lost(figures)


def test_seeded_faults_are_reproducible_and_ordered():
    first = seeded_faults(7, 3, 2)
    assert first == seeded_faults(7, 3, 2)
    assert [f.at for f in first] == sorted(f.at for f in first)
    assert Counter(f.target for f in first) == {"attribution": 3, "click_surge": 3, "broker": 2}


def test_the_planned_input_is_fixed_and_spans_less_than_the_watermark_delays():
    config = traffic_config(SEED)
    first = plan_input(config, 1_000_000_000)
    assert first == plan_input(config, 1_000_000_000)
    assert len(first) > EVENTS
    # No click can be behind click-surge's watermark (newest event time - its delay) ...
    click_times = []
    for rec in first:
        if rec.topic == CLICK_SURGE.inputs[0]:
            try:
                click_times.append(epoch_ms(json.loads(rec.value)["event_time"]))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a malformed click: its DLQ record does not depend on time
    assert (max(click_times) - min(click_times)) / 1000 < float(WATERMARK.split()[0])
    # ... nor any ad event behind attribution's (newest Kafka timestamp - lateness) ...
    stamps = [r.timestamp_ms for r in first]
    assert (max(stamps) - min(stamps)) / 1000 < ATTRIBUTION.knob("lateness_s").default
    # ... until the sentinel, which passes every close time.
    last = sentinel(first, SEED)
    assert (
        last.timestamp_ms - ATTRIBUTION.knob("lateness_s").default * 1000
        > max(stamps) + ATTRIBUTION.knob("window_s").default * 1000
    )


def epoch_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
