"""What a generator run produces: its settings and the records it plans.

:class:`GeneratorConfig` says what to generate (rates, anomaly knobs); :class:`OutRecord` is one
record to produce; the constants are the registry's topics by role, the event types and the
anomaly kinds. :mod:`adlake.generator.traffic` plans the records from them.
"""

from __future__ import annotations

import functools
import json
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from adlake import payload_rules, registry
from adlake.registry import Topic

# The four topics the generator writes, by role. Nothing else is ever produced to.
AD_REQUESTS = registry.topic("ad_requests")
AD_IMPRESSIONS = registry.topic("ad_impressions")
AD_CALLBACKS = registry.topic("ad_callbacks")
PAGE_CLICKS = registry.topic("page_clicks")
INPUT_TOPICS: tuple[Topic, ...] = (AD_REQUESTS, AD_IMPRESSIONS, AD_CALLBACKS, PAGE_CLICKS)
INPUT_TOPIC_BY_NAME = {t.name: t for t in INPUT_TOPICS}

# The event-time field every input topic carries (checked at import, below).
EVENT_TIME = "event_time"

# The malformed records the generator injects, by the kind of reason they are rejected with.
MALFORMED_KINDS = (
    payload_rules.INVALID_JSON,
    payload_rules.MISSING_FIELD,
    payload_rules.WRONG_TYPE,
)
# What the report counts: every kind of reject reason (adlake.payload_rules, the DLQs' and silver's), then
# the anomalies of well-formed records. The generator injects no invalid values; a consumer
# reading the topics back may still count some (a record another producer wrote, say).
ANOMALY_KINDS = payload_rules.REASON_KINDS + (
    "duplicate",
    "late",
    "out_of_order",
    "orphan_impression",
    "orphan_callback",
    "surge_click",
)


def _event_type(name: str) -> str:
    if name not in registry.CALLBACK_EVENT_TYPES:
        raise KeyError(
            f"callback event type {name!r} is not in registry.CALLBACK_EVENT_TYPES "
            f"{registry.CALLBACK_EVENT_TYPES}"
        )
    return name


QUARTILES = tuple(
    _event_type(n) for n in ("first_quartile", "midpoint", "third_quartile", "complete")
)
CLICK = _event_type("click")
CONVERSION = _event_type("conversion")

for _t in INPUT_TOPICS:
    if _t.schema.field(EVENT_TIME).type != "timestamp":
        raise TypeError(f"{_t.name}.{EVENT_TIME} must be a timestamp in the registry")

# The population of pages clicks go to (surge pages are among its less popular half).
N_PAGES = 200


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
    surge_rate: float = registry.SURGE_CLICKS_PER_S
    # The partitions of the input topics (ADLAKE_TOPIC_PARTITIONS, which the command line
    # passes); None: the registry's. Records go to crc32(key) % this, so it must match the topics.
    topic_partitions: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "fill_rate",
            "click_share",
            "out_of_order",
            "duplicates",
            "late",
            "malformed",
            "orphans",
        ):
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
        if not 0 <= self.surge_pages <= N_PAGES // 2:
            raise GeneratorError(f"surge_pages={self.surge_pages!r}: expected 0 to {N_PAGES // 2}")
        if self.surge_rate < 0:
            raise GeneratorError(f"surge_rate={self.surge_rate!r}: expected clicks/s >= 0")
        if self.topic_partitions is not None and not 1 <= self.topic_partitions <= 1_000:
            raise GeneratorError(
                f"topic_partitions={self.topic_partitions!r}: expected 1 to 1000, or None"
            )


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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def partition_for(topic: Topic, key: str, partitions: int | None = None) -> int:
    """The partition the generator writes ``key`` to: a stable hash, so it knows every
    partition's delivery order. ``partitions``: the topic's count as configured
    (:func:`adlake.registry.partitions`); None: the registry's.

    >>> clicks = registry.topic("page_clicks")
    >>> partition_for(clicks, "page-0001"), partition_for(clicks, "page-0001", 2)
    (1, 1)
    """
    return zlib.crc32(key.encode("utf-8")) % (partitions or topic.partitions)


def iso_ms(epoch_ms: int) -> str:
    """``iso_ms(1795304444123) == '2026-11-21T23:40:44.123Z'``: UTC, milliseconds, 'Z'."""
    return f"{_iso_seconds(epoch_ms // 1000)}.{epoch_ms % 1000:03d}Z"


@functools.lru_cache(maxsize=256)
def _iso_seconds(epoch_s: int) -> str:
    return (_EPOCH + timedelta(seconds=epoch_s)).strftime("%Y-%m-%dT%H:%M:%S")


def closing_request(request_id: str, newest_ms: int) -> tuple[bytes, int]:
    """A valid ``ad_requests`` value and the Kafka timestamp to send it with, such that once
    attribution reads it, its watermark (timestamp - delay) is past the close time (event time +
    window, the registry's :class:`~adlake.catalog.types.StateClose` at the knobs' defaults) of
    every key whose records carry Kafka timestamps up to ``newest_ms``: the next batch closes
    them all, and this request too. For runs that must see every key closed (fault tests, the
    soak).

    >>> value, timestamp_ms = closing_request("close-1", 1_000_000)
    >>> timestamp_ms - 1_000_000  # window 300 s + lateness 30 s + 5 s to spare
    335000
    """
    app = registry.app("attribution")
    assert app.state is not None
    window_s = app.state.seconds(app.state.window, {}, app)
    delay_s = app.state.seconds(app.state.delay, {}, app)
    value = {
        "request_id": request_id,
        EVENT_TIME: iso_ms(newest_ms),
        "device_id": "dev-sentinel",
        "household_id": "hh-sentinel",
        "content_id": "content-0000",
        "slot_id": "pre-roll",
        "geo": "US-CA",
        "floor_price": 1.0,
        "bid_count": 1,
    }
    return json.dumps(value).encode(), newest_ms + int((window_s + delay_s) * 1000) + 5_000
