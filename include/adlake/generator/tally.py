"""Counting what a run produced: :class:`Tally` (pure: fed records in delivery order).

The counts are those a consumer reading the topics back can make exactly, with the same rules
as silver and the DLQs (:mod:`adlake.payload_rules`), so an end-to-end test recounts them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from adlake import payload_rules
from adlake.generator.plan import (
    AD_CALLBACKS,
    AD_IMPRESSIONS,
    AD_REQUESTS,
    ANOMALY_KINDS,
    EVENT_TIME,
    INPUT_TOPIC_BY_NAME,
    INPUT_TOPICS,
)


class Tally:
    """Anomaly counts of records in delivery order, by rules a consumer can apply exactly.

    Feed it every record as produced (or, on the consumer side, every partition in offset order;
    only per-partition order matters). A record is *well-formed* if it passes its topic's rules
    (:func:`adlake.payload_rules.check_record`, the rules of silver and of the DLQs); over those:

    * ``duplicate``: the record's id_fields value was already seen on that topic;
    * ``late``: Kafka timestamp - event_time > lateness;
    * ``out_of_order``: event_time earlier than the max event_time of the well-formed records
      delivered before it to the same topic-partition;
    * ``orphan_impression``: an impression whose request_id no well-formed request carries;
    * ``orphan_callback``: a callback whose impression_id no well-formed impression carries;
    * ``surge_click``: a click whose page_id is a surge page.

    ``invalid_json``, ``missing_field``, ``wrong_type`` and ``invalid_value`` count the other
    records by the kind of their reason: what the DLQs and silver's quarantine hold.

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
        topic = INPUT_TOPIC_BY_NAME[topic_name]
        self.sent[topic_name] += 1
        self.sent_per_partition[topic_name][partition] += 1
        count = self.by_topic[topic_name]
        reason, obj, values = payload_rules.validate(topic, value, timestamp_ms)
        if reason is not None:
            count[reason.split(":")[0]] += 1
            return
        ident = tuple(obj.get(f) for f in topic.id_fields)
        if ident in self._ids[topic_name]:
            count["duplicate"] += 1
        self._ids[topic_name].add(ident)
        event_ms = values[EVENT_TIME] // 1000  # epoch microseconds, as Spark reads it
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


def classify(
    records: Iterable[tuple[str, int, bytes, int]], lateness_s: float, surge_pages: Iterable[str]
) -> Tally:
    """A :class:`Tally` of ``(topic, partition, value, kafka_timestamp_ms)`` in delivery order."""
    tally = Tally(lateness_s, surge_pages)
    for topic_name, partition, value, ts in records:
        tally.add(topic_name, partition, value, ts)
    return tally
