"""A reference implementation of the attribution rules, written from the rules alone, as a
simulation of one key's life: open (items wait; every attribution whose partners are present
and in window is emitted once), closed (a tombstone of the ids seen, for one window after the
close; a new id is emitted at once as an orphan, a request as an unfilled request_closed) and
forgotten (a straggler opens a new key).
It recomputes attributions from the items present instead of tracking them incrementally.

Shared by the processor's unit tests and the app's integration tests (both engines).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Event:
    kind: str  # request | impression | callback
    request_id: str
    t: int  # event time
    impression_id: str | None = None
    callback_id: str | None = None

    def item_id(self) -> str:
        return {
            "request": self.request_id,
            "impression": self.impression_id,
            "callback": self.callback_id,
        }[self.kind]


@dataclass
class _RefKey:
    request_t: int | None = None
    impressions: dict = field(default_factory=dict)  # impression_id -> t
    callbacks: dict = field(default_factory=dict)  # callback_id -> (impression_id, t)
    emitted: set = field(default_factory=set)  # attributed ("impression"|"callback", id)
    close_at: int | None = None
    tombstone_until: int | None = None  # set once closed
    closed_ids: set = field(default_factory=set)


class ReferenceAttribution:
    def __init__(self, window: int, skew: int) -> None:
        self.window, self.skew = window, skew
        self.keys: dict[str, _RefKey] = {}
        self.watermark = 0
        self.out: list[tuple] = []

    def _in_window(self, partner_t: int, item_t: int) -> bool:
        return -self.skew <= item_t - partner_t <= self.window

    def _emit(self, record_type, rid, iid=None, cid=None, counts=(None, None, None)):
        self.out.append((record_type, rid, iid, cid, *counts))

    def advance(self, watermark: int) -> None:
        assert watermark > self.watermark
        self.watermark = watermark
        for rid, key in list(self.keys.items()):
            if key.tombstone_until is not None:
                if key.tombstone_until <= watermark:
                    del self.keys[rid]
            elif key.close_at <= watermark:
                self._close(rid, key)

    def batch(self, rid: str, rows: list[tuple[Event, int]]) -> None:
        """One call for one key; rows are (event, kafka_ts)."""
        rows = [(e, kts) for e, kts in rows if kts > self.watermark]  # late for the engine
        if not rows:
            return
        key = self.keys.setdefault(rid, _RefKey())
        if key.tombstone_until is not None:
            for e, _ in rows:
                if e.item_id() in key.closed_ids:
                    continue
                key.closed_ids.add(e.item_id())
                if e.kind == "request":
                    self._emit("request_closed", rid, counts=(0, 0, False))
                else:
                    self._emit(f"orphan_{e.kind}", rid, e.impression_id, e.callback_id)
            return
        for e, _ in rows:  # the first of duplicates stands
            if e.kind == "request" and key.request_t is None:
                key.request_t = e.t
            elif e.kind == "impression":
                key.impressions.setdefault(e.impression_id, e.t)
            elif e.kind == "callback":
                key.callbacks.setdefault(e.callback_id, (e.impression_id, e.t))
        for iid, t in key.impressions.items():
            if (
                key.request_t is not None
                and self._in_window(key.request_t, t)
                and ("impression", iid) not in key.emitted
            ):
                key.emitted.add(("impression", iid))
                self._emit("attributed_impression", rid, iid)
        for cid, (iid, t) in key.callbacks.items():
            if (
                iid in key.impressions
                and self._in_window(key.impressions[iid], t)
                and ("callback", cid) not in key.emitted
            ):
                key.emitted.add(("callback", cid))
                self._emit("attributed_callback", rid, iid, cid)
        if key.request_t is not None:
            key.close_at = key.request_t + self.window
        else:  # the earliest waiting item's window end
            times = [*key.impressions.values(), *(t for _, t in key.callbacks.values())]
            key.close_at = min(times) + self.window
        if key.close_at <= self.watermark:
            self._close(rid, key)

    def _close(self, rid: str, key: _RefKey) -> None:
        imps = sum(1 for kind, _ in key.emitted if kind == "impression")
        cbs = sum(1 for kind, _ in key.emitted if kind == "callback")
        if key.request_t is not None:
            self._emit("request_closed", rid, counts=(imps, cbs, imps > 0))
            key.closed_ids.add(rid)
        for iid in key.impressions:
            key.closed_ids.add(iid)
            if ("impression", iid) not in key.emitted:
                self._emit("orphan_impression", rid, iid)
        for cid, (iid, _) in key.callbacks.items():
            key.closed_ids.add(cid)
            if ("callback", cid) not in key.emitted:
                self._emit("orphan_callback", rid, iid, cid)
        self.keys[rid] = _RefKey(
            tombstone_until=self.watermark + self.window, closed_ids=key.closed_ids
        )
