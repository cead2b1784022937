"""The attribution rules, as a Python ``StatefulProcessor`` keyed by ``request_id``.

Input rows (:data:`INPUT_SCHEMA`) are requests, impressions and callbacks of one key, in any
order; times are epoch milliseconds. Output rows (:data:`OUTPUT_SCHEMA`) are:

``attributed_impression``
    as soon as an impression and its request are both present and
    ``-skew <= impression.t - request.t <= window``.
``attributed_callback``
    as soon as a callback and its impression are both present (the impression need not be
    attributed itself) and ``-skew <= callback.t - impression.t <= window``; it carries the
    impression's campaign and creative.
``request_closed``
    when the watermark passes ``request.t + window`` (an event-time timer): counts of attributed
    impressions and callbacks, ``filled`` when at least one impression was attributed.
``orphan_impression`` / ``orphan_callback``
    at close, for every item still waiting (no partner, or a partner outside the window).

Rules that keep the output exact:

* **Once.** Every impression_id and callback_id seen by a key is remembered until the key is
  closed, so a duplicate is ignored, however often it arrives.
* **Keys without a request** close on their own timer, at ``first item's t + window``; if the
  request arrives before that, its own close time replaces it.
* **Nothing lost after close.** Closing clears the key's state but keeps a tombstone (the ids
  emitted) for one more window: an impression or callback arriving then is emitted at once as an
  orphan (once), a late request as an unfilled ``request_closed``. After the tombstone is gone a
  straggler starts a new key, whose close time is already behind the watermark, so it is emitted
  as an orphan at once too. A close time behind the watermark never registers a timer (Spark
  rejects those); the key closes in the same call instead.
* **A lifetime bound** is the safety net that keeps any key from living forever: when a key
  first gets state, a second event-time timer is set ``ttl`` after it; if the key is still there
  when it fires (its close timer was lost, or its close time lies absurdly far in the future), it
  is closed as usual and all its state, tombstone included, is cleared. Spark's own state TTL is
  not available here: Spark 4.3 rejects TTL on state variables of an ``EventTime`` processor
  (``STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_ASSIGN_TTL``), and this processor needs event-time
  timers for its windows.
* Within one call, rows are handled in arrival order (Kafka timestamp, then request before
  impression before callback), so a micro-batch holding a whole chain gives the same result as
  the chain arriving one event per batch.

The watermark this processor sees is the query's: the app puts it on the Kafka timestamp (see
``spark_apps/ops/attribution.py``), so the engine never drops an event before these rules decide
about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from spark_apps.common.attribution.contract import (
    ATTRIBUTED_CALLBACK,
    ATTRIBUTED_IMPRESSION,
    CALLBACK,
    CALLBACK_STATE,
    CLOSED_ID_STATE,
    EXPIRY_STATE,
    ID_KEY,
    IMPRESSION,
    IMPRESSION_STATE,
    INPUT_SCHEMA,
    KINDS,
    ORPHAN_CALLBACK,
    ORPHAN_IMPRESSION,
    OUTPUT_SCHEMA,
    REQUEST,
    REQUEST_CLOSED,
    REQUEST_STATE,
    TIMER_STATE,
    AttributionConfig,
)
from spark_apps.common.attribution.state_cache import CachedMap, CachedValue

_ARRIVAL_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


def _out(record_type: str, request_id: str, **fields: object) -> Row:
    values = dict.fromkeys(OUTPUT_SCHEMA.names)
    values.update(record_type=record_type, request_id=request_id, **fields)
    return Row(**{name: values[name] for name in OUTPUT_SCHEMA.names})


class AttributionProcessor(StatefulProcessor):
    """Row-based ``transformWithState`` processor; see the module docstring for the rules."""

    def __init__(self, config: AttributionConfig | None = None) -> None:
        self.config = config or AttributionConfig()

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.request = CachedValue(handle.getValueState("request", REQUEST_STATE))
        self.impressions = CachedMap(handle.getMapState("impressions", ID_KEY, IMPRESSION_STATE))
        self.callbacks = CachedMap(handle.getMapState("callbacks", ID_KEY, CALLBACK_STATE))
        self.timers = CachedValue(handle.getValueState("timers", TIMER_STATE))
        self.closed_ids = CachedMap(handle.getMapState("closed_ids", ID_KEY, CLOSED_ID_STATE))
        self.expiry = CachedValue(handle.getValueState("expiry", EXPIRY_STATE))
        self._states = (
            self.request,
            self.impressions,
            self.callbacks,
            self.timers,
            self.closed_ids,
            self.expiry,
        )

    def _begin(self) -> None:
        """A call for a (possibly different) key begins: forget the cached copies."""
        for state in self._states:
            state.reset()

    # -- input ---------------------------------------------------------------------------------

    def handleInputRows(
        self, key: tuple, rows: Iterator[Row], timerValues: TimerValues
    ) -> Iterator[Row]:
        self._begin()
        request_id = key[0]
        watermark = timerValues.getCurrentWatermarkInMs()
        ordered = sorted(
            rows,
            key=lambda r: (
                r.kafka_ts_ms,
                _ARRIVAL_RANK[r.kind],
                r.event_time_ms,
                r.impression_id or "",
                r.callback_id or "",
            ),
        )
        if self.config.close_at_end_of_input:
            for row in ordered:
                yield from self._on_row(request_id, row)
            yield from self._close(request_id, watermark, tombstone=False)
            return
        if ordered and not self.expiry.exists():
            expire_at = max(watermark, min(r.event_time_ms for r in ordered)) + self.config.ttl_ms
            self.handle.registerTimer(expire_at)
            self.expiry.update((expire_at,))
        for row in ordered:
            yield from self._on_row(request_id, row)
        yield from self._schedule_close(request_id, watermark)

    def _on_row(self, request_id: str, row: Row) -> Iterator[Row]:
        if self._is_closed():
            yield from self._after_close(request_id, row)
        elif row.kind == REQUEST:
            yield from self._on_request(request_id, row)
        elif row.kind == IMPRESSION:
            yield from self._on_impression(request_id, row)
        else:
            yield from self._on_callback(request_id, row)

    def _on_request(self, request_id: str, row: Row) -> Iterator[Row]:
        if self.request.exists():
            return  # a duplicate request: the first one stands
        self.request.update((row.event_time_ms, row.kafka_ts_ms))
        # Items that waited for this request can be attributed now, impressions first so that
        # the callbacks below see them.
        for (imp_id,), imp in list(self.impressions.iterator()):
            yield from self._try_impression(request_id, imp_id, imp)

    def _on_impression(self, request_id: str, row: Row) -> Iterator[Row]:
        imp_id = row.impression_id
        if self.impressions.containsKey((imp_id,)):
            return  # duplicate
        imp = (row.campaign_id, row.creative_id, row.event_time_ms, row.kafka_ts_ms, False)
        self.impressions.updateValue((imp_id,), imp)
        yield from self._try_impression(request_id, imp_id, imp)
        # Callbacks that arrived before their impression.
        for (cb_id,), cb in list(self.callbacks.iterator()):
            if cb[0] == imp_id:
                yield from self._try_callback(request_id, cb_id, cb)

    def _on_callback(self, request_id: str, row: Row) -> Iterator[Row]:
        cb_id = row.callback_id
        if self.callbacks.containsKey((cb_id,)):
            return  # duplicate
        cb = (
            row.impression_id,
            row.event_type,
            row.value,
            row.event_time_ms,
            row.kafka_ts_ms,
            False,
        )
        self.callbacks.updateValue((cb_id,), cb)
        yield from self._try_callback(request_id, cb_id, cb)

    def _try_impression(self, request_id: str, imp_id: str, imp: tuple) -> Iterator[Row]:
        campaign, creative, imp_ms, imp_kafka, attributed = imp
        if attributed or not self.request.exists():
            return
        req_ms, req_kafka = self.request.get()
        if not self.config.in_window(req_ms, imp_ms):
            return  # stays waiting; an orphan at close
        self.impressions.updateValue((imp_id,), (campaign, creative, imp_ms, imp_kafka, True))
        yield _out(
            ATTRIBUTED_IMPRESSION,
            request_id,
            impression_id=imp_id,
            campaign_id=campaign,
            creative_id=creative,
            request_time_ms=req_ms,
            impression_time_ms=imp_ms,
            source_kafka_ts_ms=max(req_kafka, imp_kafka),
        )

    def _try_callback(self, request_id: str, cb_id: str, cb: tuple) -> Iterator[Row]:
        imp_id, event_type, value, cb_ms, cb_kafka, attributed = cb
        if attributed:
            return
        if not self.impressions.containsKey((imp_id,)):
            return  # waits for its impression
        imp = self.impressions.getValue((imp_id,))
        campaign, creative, imp_ms, imp_kafka, _ = imp
        if not self.config.in_window(imp_ms, cb_ms):
            return
        self.callbacks.updateValue((cb_id,), (imp_id, event_type, value, cb_ms, cb_kafka, True))
        req = self.request.get() if self.request.exists() else None
        yield _out(
            ATTRIBUTED_CALLBACK,
            request_id,
            impression_id=imp_id,
            callback_id=cb_id,
            campaign_id=campaign,
            creative_id=creative,
            event_type=event_type,
            value=value,
            request_time_ms=req[0] if req else None,
            impression_time_ms=imp_ms,
            callback_time_ms=cb_ms,
            source_kafka_ts_ms=max(cb_kafka, imp_kafka),
        )

    # -- closing -------------------------------------------------------------------------------

    def _is_closed(self) -> bool:
        return self.timers.exists() and self.timers.get()[1] is not None

    def _close_time(self) -> int | None:
        """When this open key closes: its request's window end, or, without a request, the
        first waiting item's."""
        if self.request.exists():
            return self.request.get()[0] + self.config.window_ms
        times = [v[2] for _, v in self.impressions.iterator()]
        times += [v[3] for _, v in self.callbacks.iterator()]
        return min(times) + self.config.window_ms if times else None

    def _schedule_close(self, request_id: str, watermark: int) -> Iterator[Row]:
        if self._is_closed():
            return
        close_at = self._close_time()
        current = self.timers.get()[0] if self.timers.exists() else None
        if close_at == current:
            return
        if current is not None:
            self.handle.deleteTimer(current)
        if close_at <= watermark:
            # Already behind the watermark (a late key): close now, a timer would never fire.
            # Record this close time first: the replaced one must not set the tombstone's end.
            self.timers.update((close_at, None))
            yield from self._close(request_id, watermark)
            return
        self.handle.registerTimer(close_at)
        self.timers.update((close_at, None))

    def handleExpiredTimer(
        self, key: tuple, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Row]:
        self._begin()
        request_id = key[0]
        expiry = expiredTimerInfo.getExpiryTimeInMs()
        watermark = timerValues.getCurrentWatermarkInMs()
        if self.expiry.exists() and expiry == self.expiry.get()[0]:
            # The lifetime bound: close what is open, then forget the key entirely.
            if not self._is_closed() and self._close_time() is not None:
                yield from self._close(request_id, watermark)
            self._forget(firing=expiry)
            return
        if not self.timers.exists():
            return
        close_at, tombstone_until = self.timers.get()
        if tombstone_until is not None and expiry == tombstone_until:
            self._forget(firing=expiry)  # the tombstone's time is up: the key is forgotten
        elif tombstone_until is None and expiry == close_at:
            yield from self._close(request_id, watermark)

    def _close(self, request_id: str, watermark: int, tombstone: bool = True) -> Iterator[Row]:
        closed: dict[str, str] = {}
        if self.request.exists():
            req_ms, req_kafka = self.request.get()
            imps = [v for _, v in self.impressions.iterator() if v[4]]
            cbs = [v for _, v in self.callbacks.iterator() if v[5]]
            yield _out(
                REQUEST_CLOSED,
                request_id,
                request_time_ms=req_ms,
                impressions=len(imps),
                callbacks=len(cbs),
                filled=bool(imps),
                source_kafka_ts_ms=max([req_kafka] + [v[3] for v in imps] + [v[4] for v in cbs]),
            )
            closed[request_id] = REQUEST
        for (imp_id,), (campaign, creative, imp_ms, imp_kafka, attributed) in list(
            self.impressions.iterator()
        ):
            closed[imp_id] = IMPRESSION
            if not attributed:
                yield _out(
                    ORPHAN_IMPRESSION,
                    request_id,
                    impression_id=imp_id,
                    campaign_id=campaign,
                    creative_id=creative,
                    impression_time_ms=imp_ms,
                    source_kafka_ts_ms=imp_kafka,
                )
        for (cb_id,), (imp_id, event_type, value, cb_ms, cb_kafka, attributed) in list(
            self.callbacks.iterator()
        ):
            closed[cb_id] = CALLBACK
            if not attributed:
                yield _out(
                    ORPHAN_CALLBACK,
                    request_id,
                    impression_id=imp_id,
                    callback_id=cb_id,
                    event_type=event_type,
                    value=value,
                    callback_time_ms=cb_ms,
                    source_kafka_ts_ms=cb_kafka,
                )
        close_at = self.timers.get()[0] if self.timers.exists() else None
        self._clear_all()
        if not tombstone:
            return
        for item_id, kind in closed.items():
            self.closed_ids.updateValue((item_id,), (kind,))
        # The tombstone lives one more window past whichever is later: the close time or now.
        tombstone_until = max(close_at or watermark, watermark) + self.config.window_ms
        self.handle.registerTimer(tombstone_until)
        self.timers.update((close_at, tombstone_until))

    def _after_close(self, request_id: str, row: Row) -> Iterator[Row]:
        """An event for a key that was already closed: emitted at once (once), never dropped."""
        item_id = {REQUEST: request_id, IMPRESSION: row.impression_id, CALLBACK: row.callback_id}[
            row.kind
        ]
        if self.closed_ids.containsKey((item_id,)):
            return  # already accounted for when the key closed
        self.closed_ids.updateValue((item_id,), (row.kind,))
        if row.kind == REQUEST:
            yield _out(
                REQUEST_CLOSED,
                request_id,
                request_time_ms=row.event_time_ms,
                impressions=0,
                callbacks=0,
                filled=False,
                source_kafka_ts_ms=row.kafka_ts_ms,
            )
        elif row.kind == IMPRESSION:
            yield _out(
                ORPHAN_IMPRESSION,
                request_id,
                impression_id=row.impression_id,
                campaign_id=row.campaign_id,
                creative_id=row.creative_id,
                impression_time_ms=row.event_time_ms,
                source_kafka_ts_ms=row.kafka_ts_ms,
            )
        else:
            yield _out(
                ORPHAN_CALLBACK,
                request_id,
                impression_id=row.impression_id,
                callback_id=row.callback_id,
                event_type=row.event_type,
                value=row.value,
                callback_time_ms=row.event_time_ms,
                source_kafka_ts_ms=row.kafka_ts_ms,
            )

    def _clear_all(self) -> None:
        for state in (self.request, self.impressions, self.callbacks, self.timers, self.closed_ids):
            state.clear()

    def _forget(self, firing: int) -> None:
        """Clear every state variable and every pending timer of the key but the one firing."""
        pending = set(self.timers.get()) if self.timers.exists() else set()
        if self.expiry.exists():
            pending.add(self.expiry.get()[0])
        for timer in pending - {None, firing}:
            self.handle.deleteTimer(timer)
        self._clear_all()
        self.expiry.clear()

    def close(self) -> None:
        pass


def input_row(
    kind: str, request_id: str, event_time_ms: int, kafka_ts_ms: int | None = None, **fields: object
) -> Row:
    """An input row (tests, the batch path): unspecified fields are null, the Kafka timestamp
    defaults to the event time."""
    values = dict.fromkeys(INPUT_SCHEMA.names)
    values.update(
        kind=kind,
        request_id=request_id,
        event_time_ms=event_time_ms,
        kafka_ts_ms=event_time_ms if kafka_ts_ms is None else kafka_ts_ms,
        **fields,
    )
    return Row(**{name: values[name] for name in INPUT_SCHEMA.names})


def record_ids(rows: Iterable[Row]) -> list[tuple]:
    """The identity of each output record, the downstream deduplication key."""
    return [(r.record_type, r.request_id, r.impression_id, r.callback_id) for r in rows]
