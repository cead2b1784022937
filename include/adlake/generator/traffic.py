"""The planned traffic of one run: :class:`Traffic` (pure: no clock, no Kafka).

Ad chains, page clicks and surge clicks in due order, then the anomaly knobs applied to them
(late, held back, duplicated, malformed, orphans); see :mod:`adlake.generator.cli`. The traffic's
shape (its populations and probabilities) and the records' JSON encoding are this module's own.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace

from adlake import registry
from adlake.generator.plan import (
    AD_CALLBACKS,
    AD_IMPRESSIONS,
    AD_REQUESTS,
    CLICK,
    CONVERSION,
    EVENT_TIME,
    INPUT_TOPICS,
    MALFORMED_KINDS,
    N_PAGES,
    PAGE_CLICKS,
    QUARTILES,
    GeneratorConfig,
    GeneratorError,
    OutRecord,
    iso_ms,
    partition_for,
)
from adlake.registry import Topic

# Traffic shape: small, fixed populations, so keys repeat the way real ones do.
_GEOS = ("US-CA", "US-NY", "US-TX", "US-FL", "GB", "DE", "FR", "ES", "BR", "IN", "JP", "AU")
_SLOTS = ("pre-roll", "mid-roll-1", "mid-roll-2", "post-roll", "pause", "banner")
_N_HOUSEHOLDS = 2000
_N_CONTENT = 300
_N_CAMPAIGNS = 24
_N_USERS = 5000
# Probability of going on to each quartile, given the previous one was reached (drop-off).
_QUARTILE_CONTINUE = (0.92, 0.88, 0.9, 0.94)
_CLICK_P = 0.04
_CONVERSION_P = 0.25  # given a click
_HOLD_MAX = 50
_CLICKS, _CHAINS = "<clicks>", "<chains>"  # base sources; the other sources are surge page ids
# How much further back than the lateness a late event's time is set (ms, uniform).
LATE_EXTRA_MS = (1_000, 60_000)

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


@dataclass
class _Event:
    due_ms: int  # after the start of the run
    topic: Topic
    values: dict  # every schema field except event_time
    event_ms: int  # epoch milliseconds
    injected: tuple[str, ...] = ()


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


_NAMES = {t.name: tuple(t.schema.names) for t in INPUT_TOPICS}


def _ordered(topic: Topic, values: dict) -> dict:
    """``values`` in the registry's field order; refuses a field set that drifted from it."""
    names = _NAMES[topic.name]
    if len(values) != len(names) or any(n not in values for n in names):
        missing = [n for n in names if n not in values]
        extra = [n for n in values if n not in names]
        raise GeneratorError(
            f"{topic.name}: the generator does not build fields {missing} and "
            f"builds unknown fields {extra}; update adlake.generator to the "
            f"registry"
        )
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
        # Each input topic's partitions, as configured: what partition_for hashes keys over.
        self.partitions = {t.name: registry.partitions(t, config) for t in INPUT_TOPICS}
        self.injected: Counter[str] = Counter()
        self.base_events: Counter[str] = Counter()
        self._rng = {
            name: random.Random(f"{config.seed}:{name}")
            for name in (
                "traffic",
                "population",
                "surge",
                "orphans",
                "late",
                "out_of_order",
                "duplicates",
                "malformed",
            )
        }
        pop = self._rng["population"]
        self._devices: list[tuple[str, str]] = []  # (device_id, household_id)
        for h in range(_N_HOUSEHOLDS):
            household = f"hh-{h:05d}"
            for _ in range(pop.randint(1, 5)):
                self._devices.append((f"dev-{pop.getrandbits(48):012x}", household))
        self._content = [f"content-{c:04d}" for c in range(_N_CONTENT)]
        self._content_cum = list(
            itertools.accumulate(1.0 / (c + 1) ** 0.8 for c in range(_N_CONTENT))
        )
        self._catalog = [
            (f"camp-{c:03d}", f"crt-{c:03d}-{k}")
            for c in range(_N_CAMPAIGNS)
            for k in range(pop.randint(1, 4))
        ]
        self.pages = [f"page-{p:04d}" for p in range(N_PAGES)]
        # Zipf-like popularity: page-0000 is the most clicked.
        self._page_cum = list(itertools.accumulate(1.0 / (p + 1) ** 1.1 for p in range(N_PAGES)))
        self._users = [f"user-{u:05d}" for u in range(_N_USERS)]
        # Surge pages come from the less popular half, so a surge stands out from the baseline.
        self.surge_pages: list[str] = sorted(
            self._rng["surge"].sample(self.pages[N_PAGES // 2 :], config.surge_pages)
        )

    # -- single events (the rng decides which stream the ids come from) --------------------------

    def _request(self, rng: random.Random, t: int, filled: bool) -> _Event:
        device, household = rng.choice(self._devices)
        values = {
            AD_REQUESTS.key_field: _uuid(rng),
            "device_id": device,
            "household_id": household,
            "content_id": rng.choices(self._content, cum_weights=self._content_cum)[0],
            "slot_id": rng.choice(_SLOTS),
            "geo": rng.choice(_GEOS),
            "floor_price": round(rng.uniform(0.5, 12.0), 2),
            "bid_count": rng.randint(1, 12) if filled else rng.randint(0, 3),
        }
        return _Event(t, AD_REQUESTS, values, self.start_ms + t)

    def _impression(self, rng: random.Random, t: int, request: dict) -> _Event:
        campaign, creative = rng.choice(self._catalog)
        values = {
            "impression_id": _uuid(rng),
            "request_id": request["request_id"],
            "campaign_id": campaign,
            "creative_id": creative,
            "device_id": request["device_id"],
            "win_price": round(request["floor_price"] * rng.uniform(1.0, 2.5), 4),
        }
        return _Event(t, AD_IMPRESSIONS, values, self.start_ms + t)

    def _callback(
        self,
        rng: random.Random,
        t: int,
        impression_id: str,
        request_id: str,
        event_type: str,
        value: float | None = None,
    ) -> _Event:
        values = {
            "callback_id": _uuid(rng),
            "impression_id": impression_id,
            "request_id": request_id,
            "event_type": event_type,
            "value": value,
        }
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
            out.append(
                self._callback(rng, t_imp + off, imp["impression_id"], imp["request_id"], name)
            )
        if rng.random() < _CLICK_P:
            off = rng.randint(100, 4000)
            out.append(
                self._callback(rng, t_imp + off, imp["impression_id"], imp["request_id"], CLICK)
            )
            if rng.random() < _CONVERSION_P:
                out.append(
                    self._callback(
                        rng,
                        t_imp + rng.randint(off, 5000),
                        imp["impression_id"],
                        imp["request_id"],
                        CONVERSION,
                        round(rng.uniform(5.0, 250.0), 2),
                    )
                )
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
            orphan = self._callback(
                orng,
                t_cb,
                _uuid(orng),
                request.values["request_id"],
                orng.choice(QUARTILES + (CLICK,)),
            )
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
                cfg.count is not None and planned >= cfg.count
            ):
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
                events = events[: cfg.count - planned]
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
        return OutRecord(
            due,
            ev.topic.name,
            partition_for(ev.topic, key, self.partitions[ev.topic.name]),
            key,
            _encode(_ordered(ev.topic, values)),
            kind,
            ev.injected,
        )

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
            raw = text[: rng.randint(1, len(text) - 2)] if rng.random() < 0.5 else repr(values)
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
        partition = partition_for(topic, key, self.partitions[topic.name])
        return OutRecord(due, topic.name, partition, key, value, kind)

    def records(self) -> Iterator[OutRecord]:
        cfg = self.config
        lrng, orng, mrng = self._rng["late"], self._rng["out_of_order"], self._rng["malformed"]
        held: list[list] = []  # [later events still to wait for, event], in hold order
        due = 0
        for ev in self._base():
            due = ev.due_ms
            if cfg.late and lrng.random() < cfg.late:
                ev.event_ms = (
                    self.start_ms
                    + due
                    - round(cfg.lateness_s * 1000)
                    - lrng.randint(*LATE_EXTRA_MS)
                )
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
