"""The event generator: realistic ad and page-click traffic, with anomalies injected on purpose.

Two layers, so everything worth testing runs without a broker:

* :class:`Traffic` is pure logic. From a :class:`GeneratorConfig` and a start instant it yields the
  exact ordered sequence of :class:`OutRecord` to produce (topic, partition, key, value bytes and
  the offset from the start at which to send each). A seed fixes the sequence.
* :func:`emit` paces that sequence against a clock and hands each record to a ``deliver``
  callable; :func:`run` wires it to a confluent-kafka ``Producer`` and writes the report.

Traffic. Ad *chains*: an ad request, filled with probability ``fill_rate`` by one impression 10-500
ms later, followed by 0..n callbacks 100 ms-5 s after the impression (the quartiles in order with
drop-off, sometimes a click, rarely a conversion with a value). Page clicks hit a population of
pages with skewed popularity; ``surge_pages`` pages also get ``surge_rate`` extra clicks/s each.
Every event is sent when the wall clock reaches its event time, so a healthy record has
``kafka_timestamp - event_time`` of a few milliseconds.

Anomalies (each a probability, 0 disables it):

* ``out_of_order``: an event is held back and delivered after k (1..50) later events.
* ``duplicates``: an event is sent twice in a row (same key, value and partition).
* ``late``: an event's event_time is set ``lateness_s`` + 1..60 s before its send time.
* ``malformed``: an extra standalone record, not part of any chain, is sent to a random input topic:
  unparseable JSON, a required field removed, or a required non-string field with a value of the
  wrong JSON type.
* ``orphans``: a filled chain's request is never sent, and (same probability) a chain gets an
  extra callback whose impression is never sent.

The report counts anomalies from what was actually produced, by rules a consumer can apply to
the topics read back partition by partition in offset order (see :class:`Tally`), so an
end-to-end test can recount them exactly. The injected knobs and the counted anomalies differ on
purpose: a held-back event is out of order only if a later event of its own partition overtook it,
a late event is usually out of order too, a duplicate of a late event is late as well.

>>> cfg = GeneratorConfig(count=3, seed=7, click_share=0.0, fill_rate=1.0, orphans=0.0,
...                       out_of_order=0.0, duplicates=0.0, late=0.0, malformed=0.0, surge_pages=0)
>>> [(r.topic, r.kind) for r in Traffic(cfg, start_ms=0).records()]
[('ad_requests', 'event'), ('ad_impressions', 'event'), ('ad_callbacks', 'event')]

Command line::

    python -m adlake.generator --rate 1000 --duration 30 --seed 1 --late 0.01
"""

from __future__ import annotations

import argparse
import functools
import heapq
import itertools
import json
import random
import re
import sys
import time
import uuid
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.registry import Topic

# The four topics the generator writes, by role. Nothing else is ever produced to.
AD_REQUESTS = registry.topic("ad_requests")
AD_IMPRESSIONS = registry.topic("ad_impressions")
AD_CALLBACKS = registry.topic("ad_callbacks")
PAGE_CLICKS = registry.topic("page_clicks")
INPUT_TOPICS: tuple[Topic, ...] = (AD_REQUESTS, AD_IMPRESSIONS, AD_CALLBACKS, PAGE_CLICKS)
_BY_NAME = {t.name: t for t in INPUT_TOPICS}

# The event-time field every input topic carries (checked at import, below).
EVENT_TIME = "event_time"

MALFORMED_KINDS = ("invalid_json", "missing_field", "wrong_type")
ANOMALY_KINDS = MALFORMED_KINDS + (
    "duplicate", "late", "out_of_order", "orphan_impression", "orphan_callback", "surge_click",
)


def _event_type(name: str) -> str:
    if name not in registry.CALLBACK_EVENT_TYPES:
        raise KeyError(f"callback event type {name!r} is not in registry.CALLBACK_EVENT_TYPES "
                       f"{registry.CALLBACK_EVENT_TYPES}")
    return name


QUARTILES = tuple(_event_type(n)
                  for n in ("first_quartile", "midpoint", "third_quartile", "complete"))
CLICK = _event_type("click")
CONVERSION = _event_type("conversion")

for _t in INPUT_TOPICS:
    if _t.schema.field(EVENT_TIME).type != "timestamp":
        raise TypeError(f"{_t.name}.{EVENT_TIME} must be a timestamp in the registry")

# Traffic shape: small, fixed populations, so keys repeat the way real ones do.
_GEOS = ("US-CA", "US-NY", "US-TX", "US-FL", "GB", "DE", "FR", "ES", "BR", "IN", "JP", "AU")
_SLOTS = ("pre-roll", "mid-roll-1", "mid-roll-2", "post-roll", "pause", "banner")
_N_HOUSEHOLDS = 2000
_N_CONTENT = 300
_N_CAMPAIGNS = 24
_N_PAGES = 200
_N_USERS = 5000
# Probability of going on to each quartile, given the previous one was reached (drop-off).
_QUARTILE_CONTINUE = (0.92, 0.88, 0.9, 0.94)
_CLICK_P = 0.04
_CONVERSION_P = 0.25  # given a click
_HOLD_MAX = 50
_CLICKS, _CHAINS = "<clicks>", "<chains>"  # base sources; the other sources are surge page ids
_LATE_EXTRA_MS = (1_000, 60_000)

# Wrong-type values by field type. Only non-string required fields are made wrong: a Spark JSON
# reader turns any token into a string column silently, and a wrong optional field reads as null,
# so neither would be detectable downstream. Numbers get non-numeric strings ("NaN" would parse).
_WRONG_VALUES = {
    "timestamp": ("yesterday", "not-a-timestamp", "21/11/2026 23:40"),
    "double": ("n/a", "twelve", "high"),
    "long": ("n/a", "seven", "many"),
    "int": ("n/a", "seven", "many"),
    "boolean": ("n/a", "yes", "maybe"),
}


class GeneratorError(ValueError):
    """A generator setting is not allowed, or the registry no longer matches the generator."""


@dataclass(frozen=True)
class GeneratorConfig:
    """What to generate. Rates are per second; every anomaly knob is a probability.

    ``rate`` is the target rate of base events (requests, impressions, callbacks, clicks);
    surge clicks come on top of it. The run stops starting new chains after ``duration_s``
    seconds or once ``count`` base events (surge clicks included, anomalies excluded) are
    planned, whichever comes first, and then drains the chain events already scheduled.
    """

    rate: float = 1000.0
    duration_s: float | None = None
    count: int | None = None
    seed: int = 0
    fill_rate: float = 0.8
    click_share: float = 0.3
    out_of_order: float = 0.01
    duplicates: float = 0.01
    late: float = 0.005
    lateness_s: float = 30.0
    malformed: float = 0.005
    orphans: float = 0.01
    surge_pages: int = 2
    surge_rate: float = 20.0

    def __post_init__(self) -> None:
        for name in ("fill_rate", "click_share", "out_of_order", "duplicates", "late",
                     "malformed", "orphans"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise GeneratorError(f"{name}={value!r}: expected a probability from 0 to 1")
        if not self.rate > 0:
            raise GeneratorError(f"rate={self.rate!r}: expected events per second > 0")
        if self.count is None and self.duration_s is None:
            raise GeneratorError("give count (base events) or duration_s (seconds), or both")
        if self.count is not None and self.count < 0:
            raise GeneratorError(f"count={self.count!r}: expected >= 0")
        if self.duration_s is not None and self.duration_s < 0:
            raise GeneratorError(f"duration_s={self.duration_s!r}: expected >= 0")
        if self.lateness_s < 0:
            raise GeneratorError(f"lateness_s={self.lateness_s!r}: expected >= 0")
        if not 0 <= self.surge_pages <= _N_PAGES // 2:
            raise GeneratorError(f"surge_pages={self.surge_pages!r}: expected 0 to {_N_PAGES // 2}")
        if self.surge_rate < 0:
            raise GeneratorError(f"surge_rate={self.surge_rate!r}: expected clicks/s >= 0")


@dataclass(frozen=True)
class OutRecord:
    """One record to produce, ``due_ms`` after the start of the run.

    ``kind`` is ``event``, ``duplicate`` or a malformed kind; ``injected`` names the knobs that
    touched this record (``late``, ``held_back``, ``orphan_impression``, ``orphan_callback``,
    ``surge``). Both are for tests and logs: the report never reads them.
    """

    due_ms: int
    topic: str
    partition: int
    key: str
    value: bytes
    kind: str = "event"
    injected: tuple[str, ...] = ()


@dataclass
class _Event:
    due_ms: int  # after the start of the run
    topic: Topic
    values: dict  # every schema field except event_time
    event_ms: int  # epoch milliseconds
    injected: tuple[str, ...] = ()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def partition_for(topic: Topic, key: str) -> int:
    """The partition the generator writes ``key`` to: a stable hash, so it knows every
    partition's delivery order.

    >>> partition_for(registry.topic("page_clicks"), "page-0001")
    1
    """
    return zlib.crc32(key.encode("utf-8")) % topic.partitions


def iso_ms(epoch_ms: int) -> str:
    """``iso_ms(1795304444123) == '2026-11-21T23:40:44.123Z'``: UTC, milliseconds, 'Z'."""
    return f"{_iso_seconds(epoch_ms // 1000)}.{epoch_ms % 1000:03d}Z"


@functools.lru_cache(maxsize=256)
def _iso_seconds(epoch_s: int) -> str:
    return (_EPOCH + timedelta(seconds=epoch_s)).strftime("%Y-%m-%dT%H:%M:%S")


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def parse_ts_ms(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 UTC ``...Z`` timestamp, or None if it is not one."""
    if not _TIMESTAMP.match(text):
        return None
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (dt - _EPOCH) // timedelta(milliseconds=1)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


_NAMES = {t.name: tuple(t.schema.names) for t in INPUT_TOPICS}


def _ordered(topic: Topic, values: dict) -> dict:
    """``values`` in the registry's field order; refuses a field set that drifted from it."""
    names = _NAMES[topic.name]
    if len(values) != len(names) or any(n not in values for n in names):
        missing = [n for n in names if n not in values]
        extra = [n for n in values if n not in names]
        raise GeneratorError(f"{topic.name}: the generator does not build fields {missing} and "
                             f"builds unknown fields {extra}; update generator.py to the registry")
    return {n: values[n] for n in names}


def _encode(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


class Traffic:
    """The planned record sequence of one run (pure: no clock, no Kafka).

    ``Traffic(config, start_ms).records()`` yields :class:`OutRecord` in send order with
    nondecreasing ``due_ms``; event times are ``start_ms + due_ms`` unless made late. The same
    config and start give byte-identical records. Each knob draws from its own seeded random
    stream, so changing one knob leaves the base traffic (and the other knobs' choices) alone.
    ``injected`` counts what the knobs did once ``records()`` is exhausted.
    """

    def __init__(self, config: GeneratorConfig, start_ms: int) -> None:
        self.config = config
        self.start_ms = start_ms
        self.injected: Counter[str] = Counter()
        self.base_events: Counter[str] = Counter()
        self._rng = {name: random.Random(f"{config.seed}:{name}") for name in (
            "traffic", "population", "surge", "orphans", "late", "out_of_order", "duplicates",
            "malformed")}
        pop = self._rng["population"]
        self._devices: list[tuple[str, str]] = []  # (device_id, household_id)
        for h in range(_N_HOUSEHOLDS):
            household = f"hh-{h:05d}"
            for _ in range(pop.randint(1, 5)):
                self._devices.append((f"dev-{pop.getrandbits(48):012x}", household))
        self._content = [f"content-{c:04d}" for c in range(_N_CONTENT)]
        self._content_cum = list(itertools.accumulate(1.0 / (c + 1) ** 0.8
                                                      for c in range(_N_CONTENT)))
        self._catalog = [(f"camp-{c:03d}", f"crt-{c:03d}-{k}")
                         for c in range(_N_CAMPAIGNS) for k in range(pop.randint(1, 4))]
        self.pages = [f"page-{p:04d}" for p in range(_N_PAGES)]
        # Zipf-like popularity: page-0000 is the most clicked.
        self._page_cum = list(itertools.accumulate(1.0 / (p + 1) ** 1.1 for p in range(_N_PAGES)))
        self._users = [f"user-{u:05d}" for u in range(_N_USERS)]
        # Surge pages come from the less popular half, so a surge stands out from the baseline.
        self.surge_pages: list[str] = sorted(self._rng["surge"].sample(
            self.pages[_N_PAGES // 2:], config.surge_pages))

    # -- single events (the rng decides which stream the ids come from) --------------------------

    def _request(self, rng: random.Random, t: int, filled: bool) -> _Event:
        device, household = rng.choice(self._devices)
        values = {
            AD_REQUESTS.key_field: _uuid(rng), "device_id": device, "household_id": household,
            "content_id": rng.choices(self._content, cum_weights=self._content_cum)[0],
            "slot_id": rng.choice(_SLOTS), "geo": rng.choice(_GEOS),
            "floor_price": round(rng.uniform(0.5, 12.0), 2),
            "bid_count": rng.randint(1, 12) if filled else rng.randint(0, 3),
        }
        return _Event(t, AD_REQUESTS, values, self.start_ms + t)

    def _impression(self, rng: random.Random, t: int, request: dict) -> _Event:
        campaign, creative = rng.choice(self._catalog)
        values = {
            "impression_id": _uuid(rng), "request_id": request["request_id"],
            "campaign_id": campaign, "creative_id": creative, "device_id": request["device_id"],
            "win_price": round(request["floor_price"] * rng.uniform(1.0, 2.5), 4),
        }
        return _Event(t, AD_IMPRESSIONS, values, self.start_ms + t)

    def _callback(self, rng: random.Random, t: int, impression_id: str, request_id: str,
                  event_type: str, value: float | None = None) -> _Event:
        values = {"callback_id": _uuid(rng), "impression_id": impression_id,
                  "request_id": request_id, "event_type": event_type, "value": value}
        return _Event(t, AD_CALLBACKS, values, self.start_ms + t)

    def _click(self, rng: random.Random, t: int, page: str) -> _Event:
        values = {"click_id": _uuid(rng), "page_id": page, "user_id": rng.choice(self._users)}
        return _Event(t, PAGE_CLICKS, values, self.start_ms + t)

    def _callbacks(self, rng: random.Random, t_imp: int, imp: dict) -> list[_Event]:
        out = []
        offsets = sorted(rng.randint(100, 5000) for _ in QUARTILES)
        for name, cont, off in zip(QUARTILES, _QUARTILE_CONTINUE, offsets):
            if rng.random() >= cont:
                break
            out.append(self._callback(rng, t_imp + off, imp["impression_id"], imp["request_id"],
                                      name))
        if rng.random() < _CLICK_P:
            off = rng.randint(100, 4000)
            out.append(self._callback(rng, t_imp + off, imp["impression_id"], imp["request_id"],
                                      CLICK))
            if rng.random() < _CONVERSION_P:
                out.append(self._callback(rng, t_imp + rng.randint(off, 5000),
                                          imp["impression_id"], imp["request_id"], CONVERSION,
                                          round(rng.uniform(5.0, 250.0), 2)))
        return out

    def _chain(self, t: int) -> tuple[list[_Event], list[_Event]]:
        """(base events, extra orphan callback if any) of one chain started at ``t``."""
        rng, orng, p = self._rng["traffic"], self._rng["orphans"], self.config.orphans
        filled = rng.random() < self.config.fill_rate
        request = self._request(rng, t, filled)
        chain = [request]
        if filled:
            t_imp = t + rng.randint(10, 500)
            imp = self._impression(rng, t_imp, request.values)
            chain.append(imp)
            chain += self._callbacks(rng, t_imp, imp.values)
        extra = []
        if p and orng.random() < p:
            t_cb = t + orng.randint(110, 5500)
            orphan = self._callback(orng, t_cb, _uuid(orng), request.values["request_id"],
                                    orng.choice(QUARTILES + (CLICK,)))
            extra.append(replace(orphan, injected=("orphan_callback",)))
        if filled and p and orng.random() < p:
            # The request is planned (it counts as a base event) but never sent.
            chain[0] = replace(request, injected=("orphan_request",))
            chain[1] = replace(chain[1], injected=("orphan_impression",))
        return chain, extra

    # -- the base stream: every event in due order ----------------------------------------------

    def _base(self) -> Iterator[_Event]:
        cfg, rng = self.config, self._rng["traffic"]
        srng = self._rng["surge"]
        heap: list[tuple[int, int, _Event]] = []
        seq = itertools.count()
        planned = 0
        # Next firing time (ms, float) of each source: regular clicks, chains, one per surge page.
        # Each is a Poisson process; a chain source waits len(chain) gaps, so that events, not
        # chains, arrive at the configured rate.
        click_rate, chain_rate = cfg.rate * cfg.click_share, cfg.rate * (1 - cfg.click_share)
        sources: list[tuple[float, str]] = []
        if click_rate > 0:
            sources.append((rng.expovariate(click_rate) * 1000, _CLICKS))
        if chain_rate > 0:
            sources.append((rng.expovariate(chain_rate) * 1000, _CHAINS))
        if cfg.surge_rate > 0:
            sources += [(srng.expovariate(cfg.surge_rate) * 1000, p) for p in self.surge_pages]
        while sources:
            i, (t_src, source) = min(enumerate(sources), key=lambda s: s[1][0])
            if (cfg.duration_s is not None and t_src >= cfg.duration_s * 1000) or (
                    cfg.count is not None and planned >= cfg.count):
                break
            t = int(t_src)
            while heap and heap[0][0] <= t:
                yield heapq.heappop(heap)[2]
            if source == _CLICKS:
                page = rng.choices(self.pages, cum_weights=self._page_cum)[0]
                events, extra = [self._click(rng, t, page)], []
                sources[i] = (t_src + rng.expovariate(click_rate) * 1000, source)
            elif source == _CHAINS:
                events, extra = self._chain(t)
                sources[i] = (t_src + rng.expovariate(chain_rate / len(events)) * 1000, source)
            else:
                events = [replace(self._click(srng, t, source), injected=("surge",))]
                extra = []
                sources[i] = (t_src + srng.expovariate(cfg.surge_rate) * 1000, source)
            if cfg.count is not None:
                # Cut the last chain to the count; a prefix of a chain is still a valid chain.
                events = events[:cfg.count - planned]
            planned += len(events)
            for ev in events:
                self.base_events[ev.topic.name] += 1
            self.injected["orphan_callback"] += len(extra)
            for ev in events + extra:
                if "orphan_request" in ev.injected:
                    self.injected["orphan_request_dropped"] += 1
                    continue
                heapq.heappush(heap, (ev.due_ms, next(seq), ev))
        while heap:
            yield heapq.heappop(heap)[2]

    # -- anomalies, applied to the base stream --------------------------------------------------

    def _record(self, ev: _Event, due: int, kind: str = "event") -> OutRecord:
        values = dict(ev.values)
        values[EVENT_TIME] = iso_ms(ev.event_ms)
        key = str(values[ev.topic.key_field])
        return OutRecord(due, ev.topic.name, partition_for(ev.topic, key), key,
                         _encode(_ordered(ev.topic, values)), kind, ev.injected)

    def _deliver(self, ev: _Event, due: int) -> Iterator[OutRecord]:
        rec = self._record(ev, due)
        yield rec
        if self.config.duplicates and self._rng["duplicates"].random() < self.config.duplicates:
            self.injected["duplicate"] += 1
            yield replace(rec, kind="duplicate")

    def _malformed(self, due: int) -> OutRecord:
        rng = self._rng["malformed"]
        topic = rng.choice(INPUT_TOPICS)
        t = due
        if topic is AD_REQUESTS:
            ev = self._request(rng, t, rng.random() < 0.8)
        elif topic is AD_IMPRESSIONS:
            req = self._request(rng, t, True).values  # a request that is never sent
            ev = self._impression(rng, t, req)
        elif topic is AD_CALLBACKS:
            ev = self._callback(rng, t, _uuid(rng), _uuid(rng), rng.choice(QUARTILES))
        else:
            ev = self._click(rng, t, rng.choices(self.pages, cum_weights=self._page_cum)[0])
        values = dict(ev.values)
        values[EVENT_TIME] = iso_ms(ev.event_ms)
        values = _ordered(topic, values)
        key = str(values[topic.key_field])
        kind = rng.choice(MALFORMED_KINDS)
        if kind == "invalid_json":
            text = json.dumps(values, separators=(",", ":"))
            # A proper prefix of an object never parses; a Python repr uses single quotes.
            raw = (text[:rng.randint(1, len(text) - 2)] if rng.random() < 0.5 else repr(values))
            value = raw.encode("utf-8")
        elif kind == "missing_field":
            del values[rng.choice(topic.schema.required)]
            value = _encode(values)
        else:
            candidates = [f for f in topic.schema.fields if f.required and f.type != "string"]
            f = rng.choice(candidates)
            values[f.name] = rng.choice(_WRONG_VALUES[f.type])
            value = _encode(values)
        self.injected[kind] += 1
        return OutRecord(due, topic.name, partition_for(topic, key), key, value, kind)

    def records(self) -> Iterator[OutRecord]:
        cfg = self.config
        lrng, orng, mrng = self._rng["late"], self._rng["out_of_order"], self._rng["malformed"]
        held: list[list] = []  # [later events still to wait for, event], in hold order
        due = 0
        for ev in self._base():
            due = ev.due_ms
            if cfg.late and lrng.random() < cfg.late:
                ev.event_ms = (self.start_ms + due - round(cfg.lateness_s * 1000)
                               - lrng.randint(*_LATE_EXTRA_MS))
                ev.injected += ("late",)
                self.injected["late"] += 1
            hold = cfg.out_of_order and orng.random() < cfg.out_of_order
            if not hold:
                yield from self._deliver(ev, due)
            # This event is one of the "later events" of every event held before it.
            for h in held:
                h[0] -= 1
            for h in [h for h in held if h[0] <= 0]:
                held.remove(h)
                yield from self._deliver(h[1], due)
            if hold:
                ev.injected += ("held_back",)
                self.injected["held_back"] += 1
                held.append([orng.randint(1, _HOLD_MAX), ev])
            if cfg.malformed and mrng.random() < cfg.malformed:
                yield self._malformed(due)
        for _, ev in held:
            yield from self._deliver(ev, due)


# -- counting what was produced ------------------------------------------------------------------


def _type_ok(ftype: str, value: object) -> bool:
    if ftype == "string":
        return isinstance(value, str)
    if ftype == "timestamp":
        return isinstance(value, str) and parse_ts_ms(value) is not None
    if ftype in ("int", "long"):
        bits = 31 if ftype == "int" else 63
        return (isinstance(value, int) and not isinstance(value, bool)
                and -(2 ** bits) <= value < 2 ** bits)
    if ftype == "double":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if ftype == "boolean":
        return isinstance(value, bool)
    raise GeneratorError(f"unknown field type {ftype!r}")


def check_record(topic: Topic, value: bytes) -> tuple[str | None, dict | None]:
    """``(malformed kind or None, parsed object)`` of one record value, checked in this order:

    * ``invalid_json``: not UTF-8 JSON, or not a JSON object;
    * ``missing_field``: a required field absent or null;
    * ``wrong_type``: a present, non-null field whose JSON type does not fit the registry type
      (string; timestamp = ISO-8601 ``...Z`` string; int/long = integer in range; double = number;
      boolean = true/false).

    Unknown extra fields are ignored.

    >>> check_record(registry.topic("page_clicks"), b'{"click_id": "c"')
    ('invalid_json', None)
    """
    try:
        obj = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "invalid_json", None
    if not isinstance(obj, dict):
        return "invalid_json", None
    if any(obj.get(name) is None for name in topic.schema.required):
        return "missing_field", obj
    for f in topic.schema.fields:
        if obj.get(f.name) is not None and not _type_ok(f.type, obj[f.name]):
            return "wrong_type", obj
    return None, obj


class Tally:
    """Anomaly counts of records in delivery order, by rules a consumer can apply exactly.

    Feed it every record as produced (or, on the consumer side, every partition in offset order;
    only per-partition order matters). Over *well-formed* records (:func:`check_record` is None):

    * ``duplicate``: the record's id_fields value was already seen on that topic;
    * ``late``: Kafka timestamp - event_time > lateness;
    * ``out_of_order``: event_time earlier than the max event_time of the well-formed records
      delivered before it to the same topic-partition;
    * ``orphan_impression``: an impression whose request_id no well-formed request carries;
    * ``orphan_callback``: a callback whose impression_id no well-formed impression carries;
    * ``surge_click``: a click whose page_id is a surge page.

    ``invalid_json``, ``missing_field`` and ``wrong_type`` count the malformed records by kind.

    >>> t = Tally(lateness_s=30, surge_pages=["page-0150"])
    >>> t.add("page_clicks", 0, b'{"click_id":"c1","page_id":"page-0150",'
    ...       b'"event_time":"2026-01-01T00:00:00.000Z","user_id":"u"}', 1767225600000 + 31000)
    >>> {k: v for k, v in t.anomalies().items() if v}
    {'late': 1, 'surge_click': 1}
    """

    def __init__(self, lateness_s: float, surge_pages: Iterable[str]) -> None:
        self.lateness_ms = round(lateness_s * 1000)
        self.surge_pages = frozenset(surge_pages)
        self.sent: Counter[str] = Counter()
        self.sent_per_partition: dict[str, Counter[int]] = defaultdict(Counter)
        self.by_topic: dict[str, Counter[str]] = {t.name: Counter() for t in INPUT_TOPICS}
        self._ids: dict[str, set[tuple]] = {t.name: set() for t in INPUT_TOPICS}
        self._max_event: dict[tuple[str, int], int] = {}
        # Partners seen so far, and references still waiting for their partner.
        self._requests: set[str] = set()
        self._impressions: set[str] = set()
        self._waiting_request: Counter[str] = Counter()
        self._waiting_impression: Counter[str] = Counter()

    def add(self, topic_name: str, partition: int, value: bytes, timestamp_ms: int) -> None:
        topic = _BY_NAME[topic_name]
        self.sent[topic_name] += 1
        self.sent_per_partition[topic_name][partition] += 1
        count = self.by_topic[topic_name]
        kind, obj = check_record(topic, value)
        if kind is not None:
            count[kind] += 1
            return
        ident = tuple(obj.get(f) for f in topic.id_fields)
        if ident in self._ids[topic_name]:
            count["duplicate"] += 1
        self._ids[topic_name].add(ident)
        event_ms = parse_ts_ms(obj[EVENT_TIME])
        if timestamp_ms - event_ms > self.lateness_ms:
            count["late"] += 1
        tp = (topic_name, partition)
        if tp in self._max_event and event_ms < self._max_event[tp]:
            count["out_of_order"] += 1
        self._max_event[tp] = max(event_ms, self._max_event.get(tp, event_ms))
        if topic is AD_REQUESTS:
            self._requests.add(obj["request_id"])
            self._waiting_request.pop(obj["request_id"], None)
        elif topic is AD_IMPRESSIONS:
            self._impressions.add(obj["impression_id"])
            self._waiting_impression.pop(obj["impression_id"], None)
            if obj["request_id"] not in self._requests:
                self._waiting_request[obj["request_id"]] += 1
        elif topic is AD_CALLBACKS:
            if obj["impression_id"] not in self._impressions:
                self._waiting_impression[obj["impression_id"]] += 1
        elif obj["page_id"] in self.surge_pages:
            count["surge_click"] += 1

    def anomalies_by_topic(self) -> dict[str, dict[str, int]]:
        out = {name: {k: c[k] for k in ANOMALY_KINDS} for name, c in self.by_topic.items()}
        out[AD_IMPRESSIONS.name]["orphan_impression"] = sum(self._waiting_request.values())
        out[AD_CALLBACKS.name]["orphan_callback"] = sum(self._waiting_impression.values())
        return out

    def anomalies(self) -> dict[str, int]:
        per_topic = self.anomalies_by_topic()
        return {k: sum(c[k] for c in per_topic.values()) for k in ANOMALY_KINDS}


def classify(records: Iterable[tuple[str, int, bytes, int]], lateness_s: float,
             surge_pages: Iterable[str]) -> Tally:
    """A :class:`Tally` of ``(topic, partition, value, kafka_timestamp_ms)`` in delivery order."""
    tally = Tally(lateness_s, surge_pages)
    for topic_name, partition, value, ts in records:
        tally.add(topic_name, partition, value, ts)
    return tally


# -- pacing and sending --------------------------------------------------------------------------


def emit(traffic: Traffic, deliver: Callable[[OutRecord, int], None], *,
         now_ms: Callable[[], int], wait: Callable[[float], None],
         progress: Callable[[int, int], None] | None = None,
         progress_every_ms: int = 5000) -> Tally:
    """Send ``traffic`` in real time: each record when ``now_ms()`` reaches ``start_ms + due_ms``,
    with that instant as its Kafka timestamp; returns the :class:`Tally` of what was delivered.

    ``wait(seconds)`` blocks (the Kafka sender polls the producer there, so no core is burnt);
    ``progress(sent, elapsed_ms)`` is called about every ``progress_every_ms``.
    """
    tally = Tally(traffic.config.lateness_s, traffic.surge_pages)
    next_progress = traffic.start_ms + progress_every_ms
    for rec in traffic.records():
        target = traffic.start_ms + rec.due_ms
        while (ahead := target - now_ms()) > 0:
            wait(ahead / 1000)
        ts = now_ms()
        deliver(rec, ts)
        tally.add(rec.topic, rec.partition, rec.value, ts)
        if progress is not None and ts >= next_progress:
            progress(sum(tally.sent.values()), ts - traffic.start_ms)
            next_progress = ts + progress_every_ms
    return tally


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


def report(traffic: Traffic, tally: Tally, *, bootstrap: str, started_ms: int, finished_ms: int,
           interrupted: bool = False) -> dict:
    """The run report (JSON-ready). ``sent`` and ``anomalies`` are from :class:`Tally`."""
    cfg = traffic.config
    return {
        "seed": cfg.seed,
        "rate": cfg.rate,
        "duration_s": cfg.duration_s,
        "count": cfg.count,
        "elapsed_s": round((finished_ms - started_ms) / 1000, 3),
        "started_at": iso_ms(started_ms),
        "finished_at": iso_ms(finished_ms),
        "interrupted": interrupted,
        "bootstrap": bootstrap,
        "config": asdict(cfg),
        "lateness_s": cfg.lateness_s,
        "partitions": {t.name: t.partitions for t in INPUT_TOPICS},
        "sent": {t.name: tally.sent[t.name] for t in INPUT_TOPICS},
        "sent_per_partition": {t.name: [tally.sent_per_partition[t.name][p]
                                        for p in range(t.partitions)] for t in INPUT_TOPICS},
        "base_events": {t.name: traffic.base_events[t.name] for t in INPUT_TOPICS},
        "anomalies": tally.anomalies(),
        "anomalies_by_topic": tally.anomalies_by_topic(),
        # What the knobs did; the anomalies above are what a consumer can observe.
        "injected": dict(sorted(traffic.injected.items())),
        "surge_pages": list(traffic.surge_pages),
    }


def run(config: GeneratorConfig, bootstrap: str, report_path: Path | None = None, *,
        progress: bool = True, producer_config: dict | None = None) -> dict:
    """Produce ``config``'s traffic to Kafka at ``bootstrap`` in real time; return the report,
    also written as JSON to ``report_path`` if given.

    Every record is produced with an explicit partition and timestamp; the producer is idempotent,
    so each partition holds exactly the delivery order the report was counted from.
    """
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "linger.ms": 5,
        "client.id": "adlake-generator",
        **(producer_config or {}),
    })

    def deliver(rec: OutRecord, ts: int) -> None:
        while True:
            try:
                producer.produce(rec.topic, value=rec.value, key=rec.key.encode("utf-8"),
                                 partition=rec.partition, timestamp=ts, on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: let librdkafka send, then retry
                producer.poll(0.05)
        producer.poll(0)

    last = [0, 0]  # sent, elapsed_ms at the previous progress line

    def show(sent: int, elapsed_ms: int) -> None:
        interval_ms = max(elapsed_ms - last[1], 1)
        recent = (sent - last[0]) * 1000 / interval_ms
        last[:] = [sent, elapsed_ms]
        print(f"generator: {sent} records sent in {elapsed_ms / 1000:.1f} s, "
              f"{recent:.0f}/s over the last {interval_ms / 1000:.1f} s",
              file=sys.stderr, flush=True)

    started = _wall_ms()
    traffic = Traffic(config, started)
    interrupted = False
    tally = Tally(config.lateness_s, traffic.surge_pages)
    try:
        tally = emit(traffic, deliver, now_ms=_wall_ms, wait=producer.poll,
                     progress=show if progress else None)
    except KeyboardInterrupt:
        interrupted = True
        print("generator: interrupted, flushing what was sent", file=sys.stderr)
    remaining = producer.flush(60)
    finished = _wall_ms()
    result = report(traffic, tally, bootstrap=bootstrap, started_ms=started, finished_ms=finished,
                    interrupted=interrupted)
    if interrupted:
        result["note"] = "interrupted: counts cover only the records emitted before the stop"
    if remaining or errors:
        result["delivery_errors"] = errors[:20] + ([f"{remaining} records not flushed"]
                                                   if remaining else [])
    if report_path is not None:
        report_path = Path(report_path)
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(json.dumps(result, indent=2) + "\n")
    if remaining or errors:
        raise RuntimeError(f"{len(errors)} delivery errors, {remaining} records not flushed; the "
                           f"report's counts do not match the topics: {errors[:3]}")
    return result


def summary(result: dict) -> str:
    """A few lines for the terminal."""
    sent = ", ".join(f"{t}={n}" for t, n in result["sent"].items())
    anomalies = ", ".join(f"{k}={v}" for k, v in result["anomalies"].items())
    return (f"sent {sum(result['sent'].values())} records in {result['elapsed_s']} s: {sent}\n"
            f"anomalies: {anomalies}\n"
            f"surge pages: {', '.join(result['surge_pages']) or '-'}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = GeneratorConfig(count=0)
    p = argparse.ArgumentParser(prog="python -m adlake.generator",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rate", type=float, default=d.rate, help="base events per second")
    p.add_argument("--duration", type=float, default=None,
                   help="seconds of new traffic, then drain (default 30 unless --count is given)")
    p.add_argument("--count", type=int, default=None, help="stop after N base events, then drain")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--fill-rate", type=float, default=d.fill_rate)
    p.add_argument("--click-share", type=float, default=d.click_share,
                   help="fraction of the base rate that is page clicks")
    p.add_argument("--out-of-order", type=float, default=d.out_of_order)
    p.add_argument("--duplicates", type=float, default=d.duplicates)
    p.add_argument("--late", type=float, default=d.late)
    p.add_argument("--lateness", type=float, default=d.lateness_s, help="seconds")
    p.add_argument("--malformed", type=float, default=d.malformed)
    p.add_argument("--orphans", type=float, default=d.orphans)
    p.add_argument("--surge-pages", type=int, default=d.surge_pages)
    p.add_argument("--surge-rate", type=float, default=d.surge_rate, help="clicks/s per surge page")
    p.add_argument("--bootstrap", default=None, help="default: settings.kafka_bootstrap")
    p.add_argument("--report", type=Path, default=None,
                   help="default: <settings.reports_dir>/generator-<timestamp>.json")
    return p.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> GeneratorConfig:
    duration = args.duration if args.duration is not None or args.count is not None else 30.0
    return GeneratorConfig(
        rate=args.rate, duration_s=duration, count=args.count, seed=args.seed,
        fill_rate=args.fill_rate, click_share=args.click_share, out_of_order=args.out_of_order,
        duplicates=args.duplicates, late=args.late, lateness_s=args.lateness,
        malformed=args.malformed, orphans=args.orphans, surge_pages=args.surge_pages,
        surge_rate=args.surge_rate)


def main(argv: list[str] | None = None) -> int:
    from adlake.config import load_settings

    args = parse_args(argv)
    try:
        config = config_from_args(args)
    except GeneratorError as e:
        print(f"generator: {e}", file=sys.stderr)
        return 2
    settings = load_settings()
    bootstrap = args.bootstrap or settings.kafka_bootstrap
    path = args.report or (settings.reports_dir
                           / f"generator-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json")
    result = run(config, bootstrap, path)
    print(summary(result))
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
