"""How fresh the lake's results are: for every gold table and view, the newest data time it holds
and how far behind now that is, red past a bound from configuration.

A table's data time is what its rows describe, not when they were written:

* a gold table of hour grain: its rows' time (the model's ``ROW_TIME``: a minute, a window's
  start, an hour);
* a gold table of day grain: its newest ``event_date`` (a day is built once final, so its data
  time is that day's midnight, UTC);
* a view: its time key, ``hour`` or ``event_date``.

The writers record it (``spark_apps.lake.freshness``) right after each commit, in
``<runtime>/reports/freshness/<table>.json``: the gold job for every table it rebuilt, a view's
refresh for its view. The Data quality page reads the records (:func:`shown`); no Spark runs in
Airflow's api-server. A table never recorded shows as such, in red.

The bounds (``freshness_hour_max_s``, ``freshness_day_max_s``): an hour is built by the next
hourly run, so an hour-grain table's newest row is 1 to 2 hours old on time; a day is built 2 hours
after its midnight ends, so a day-grain table's newest day started 26 to 50 hours ago.

Standard library only: the plugin imports it.

>>> [(s.table, s.kind, s.grain) for s in SOURCES][:3]
[('campaign_delivery', 'gold', 'hour'), ('attribution_funnel', 'gold', 'day'), \
('page_traffic', 'gold', 'hour')]
>>> source("page_clicks_hourly").expression
'hour'
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from adlake import atomic, registry
from adlake.catalog import gold
from adlake.config import Settings

log = logging.getLogger(__name__)

HOUR, DAY = gold.HOUR, gold.DAY


@dataclass(frozen=True)
class Source:
    """What a table's data time is: ``expression`` (Spark SQL over its rows; a timestamp, or a
    date read as its midnight UTC) within its newest ``partition`` value when it has one."""

    table: str
    kind: str  # gold, view
    grain: str  # hour, day
    expression: str
    partition: str | None


def _gold(model: gold.Model) -> Source:
    partition = model.TABLE.partition_by[0] if model.TABLE.partition_by else None
    if model.GRAIN == DAY or model.ROW_TIME is None:
        return Source(model.TABLE.name, "gold", DAY, "event_date", partition)
    return Source(model.TABLE.name, "gold", HOUR, model.ROW_TIME, partition)


def _view(view: registry.View) -> Source:
    grain = HOUR if "hour" in view.keys else DAY
    return Source(view.name, "view", grain, "hour" if grain == HOUR else "event_date", None)


SOURCES: tuple[Source, ...] = (
    *(_gold(m) for m in gold.MODELS),
    *(_view(v) for v in registry.VIEWS.values()),
)
_BY_NAME = {s.table: s for s in SOURCES}


def source(table: str) -> Source:
    try:
        return _BY_NAME[table]
    except KeyError:
        raise KeyError(f"{table!r} is no gold table or view: {', '.join(_BY_NAME)}") from None


def record_path(settings: Settings, table: str) -> Path:
    return settings.reports_dir / "freshness" / f"{table}.json"


def write_record(settings: Settings, table: str, newest: str | None, version: int | None) -> dict:
    """Record ``table``'s newest data time (ISO 8601 UTC, None for an empty table) as of its
    Delta ``version``, atomically."""
    record = {
        "table": table,
        "newest": newest,
        "version": version,
        "recorded_at": round(time.time(), 3),
    }
    atomic.write_json(record_path(settings, table), record, indent=2)
    return record


def read_record(settings: Settings, table: str) -> dict | None:
    """``table``'s record as :func:`write_record` writes it, or None when there is none: no file,
    unreadable, not a JSON object (:func:`adlake.atomic.read_json`), or a value of the wrong type
    (``newest`` not text, ``version`` not an integer, ``recorded_at`` not a finite number; each
    may be null), which is logged: the table shows as never recorded, the other tables as they
    are."""
    path = record_path(settings, table)
    record = atomic.read_json(path)
    if record is None:
        return None
    wrong = [
        f"{key} {record.get(key)!r}"
        for key, fits in (
            ("newest", lambda v: isinstance(v, str)),
            ("version", lambda v: isinstance(v, int) and not isinstance(v, bool)),
            ("recorded_at", _finite),
        )
        if record.get(key) is not None and not fits(record[key])
    ]
    if wrong:
        log.warning("freshness record %s skipped: %s of the wrong type", path, ", ".join(wrong))
        return None
    return record


def _finite(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def bound_s(settings: Settings, grain: str) -> int:
    return settings.freshness_hour_max_s if grain == HOUR else settings.freshness_day_max_s


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):  # not a time; out of the platform's range
        return None


def row(settings: Settings, src: Source, record: dict | None, now: float) -> dict:
    """What the page shows of one table: its newest data time, ``behind_s`` (now minus it),
    the bound and ``late`` (behind more than the bound, or never recorded).

    >>> from adlake.config import load_settings
    >>> s = load_settings({})
    >>> r = row(s, source("page_traffic"), {"newest": "2026-11-26T08:00:00Z",
    ...                                      "recorded_at": 0}, now=1795680000.0 + 4 * 3600)
    >>> r["behind_s"], r["bound_s"], r["late"]
    (14400.0, 10800, True)
    >>> row(s, source("page_traffic"), None, now=0)["late"]
    True
    """
    newest = _epoch((record or {}).get("newest"))
    behind = None if newest is None else round(max(0.0, now - newest), 1)
    bound = bound_s(settings, src.grain)
    return {
        "table": src.table,
        "kind": src.kind,
        "grain": src.grain,
        "newest": (record or {}).get("newest"),
        "recorded_at": (record or {}).get("recorded_at"),
        "version": (record or {}).get("version"),
        "behind_s": behind,
        "bound_s": bound,
        "late": behind is None or behind > bound,
    }


def shown(settings: Settings, tables: list[str] | None = None, now: float | None = None) -> list:
    """:func:`row` of every gold table and view (or of ``tables``), in registry order; an
    unreadable record, or one with a value of the wrong type, counts as none
    (:func:`read_record`)."""
    now = time.time() if now is None else now
    rows = []
    for src in SOURCES:
        if tables is not None and src.table not in tables:
            continue
        rows.append(row(settings, src, read_record(settings, src.table), now))
    return rows
