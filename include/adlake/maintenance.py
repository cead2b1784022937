"""What table maintenance may remove: the retention guard of ``lake_maintenance``.

``VACUUM`` deletes the files a Delta table removed (replaced by a rebuild, a ``MERGE`` or an
``OPTIMIZE``) longer ago than the retention. A reader that has not yet processed a version
needs the files of that version and every later one: a file added at or after it was removed,
if ever, no earlier than the version's commit. So a retention of at least *now - commit time of
the oldest version some reader still needs* deletes nothing a reader needs. The readers of a
Delta table in Adlake are:

* the silver queries' checkpoints (a Delta streaming source over each bronze table): the
  version their committed offset points at, unless it is past the table's latest;
* the views' change-feed reads: the version after the one each view reflects;
* people, by time travel: the runbook promises every version of the last
  ``lake_retention_hours`` (the configuration);
* Delta itself, which refuses a ``VACUUM`` below a table's ``delta.deletedFileRetentionDuration``
  (7 days unless set) while its safety check is on (it is: Adlake never turns it off).

:func:`check` turns these needs into one refusal that names each reader, the version it needs,
when that version was committed and the retention it takes; nothing is removed from any table
when any need is not met.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from adlake.config import Settings

# Delta's default for delta.deletedFileRetentionDuration.
DELTA_DEFAULT_RETENTION = timedelta(days=7)


@dataclass(frozen=True)
class Need:
    """A reader's claim on a table's removed files: ``hours`` of retention, and why."""

    table: str
    reader: str  # e.g. "the silver checkpoint silver_ad_requests"
    hours: float
    reason: str  # e.g. "has not processed version 12, committed 2026-11-20T03:00:00Z"


class RetentionRefused(ValueError):
    """A retention shorter than what a reader of a table still needs; nothing was removed."""

    def __init__(self, retention_hours: float, unmet: list[Need]):
        self.retention_hours, self.unmet = retention_hours, unmet
        lines = [
            f"VACUUM with a retention of {retention_hours:g} h refused: nothing was removed. "
            "What needs a longer retention:"
        ]
        lines += [
            f"* {n.table}: {n.reader} {n.reason}: needs at least {math.ceil(n.hours)} h"
            for n in unmet
        ]
        lines.append(
            "Run the readers first (the lake chain's silver task, the view's DAG), or use a "
            "longer retention; see the runbook's table maintenance."
        )
        super().__init__("\n".join(lines))


def version_need(
    table: str, reader: str, version: int, committed: datetime | None, now: datetime
) -> Need:
    """What a reader that still needs ``version`` of ``table`` (committed at ``committed``)
    claims. A version whose commit is no longer in the log (``committed`` None) cannot be read
    at all: the claim is infinite, so any retention is refused and the reader named.

    >>> from datetime import UTC
    >>> now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    >>> version_need("bronze_x", "silver checkpoint", 4, now - timedelta(hours=30), now).hours
    30.0
    >>> version_need("bronze_x", "silver checkpoint", 4, None, now).hours
    inf
    """
    if committed is None:
        return Need(table, reader, math.inf, f"needs version {version}, no longer in the log")
    return Need(
        table,
        reader,
        max(0.0, (now - committed).total_seconds() / 3600),
        f"has not processed version {version}, committed {committed:%Y-%m-%dT%H:%M:%SZ}",
    )


def delta_interval_hours(value: str | None) -> float:
    """A Delta ``interval`` table property in hours (Delta's default when unset).

    >>> delta_interval_hours("interval 1 weeks"), delta_interval_hours("interval 36 hours")
    (168.0, 36.0)
    >>> delta_interval_hours(None), delta_interval_hours("interval 0 seconds")
    (168.0, 0.0)
    """
    if value is None:
        return DELTA_DEFAULT_RETENTION.total_seconds() / 3600
    match = re.fullmatch(r"\s*interval\s+(\d+(?:\.\d+)?)\s+(\w+?)s?\s*", value.lower())
    if not match:
        raise ValueError(f"unrecognised Delta interval {value!r}")
    amount, unit = float(match.group(1)), match.group(2)
    per_hour = {
        "microsecond": 1 / 3.6e9,
        "millisecond": 1 / 3.6e6,
        "second": 1 / 3600,
        "minute": 1 / 60,
        "hour": 1,
        "day": 24,
        "week": 168,
    }
    if unit not in per_hour:
        raise ValueError(f"unrecognised Delta interval unit in {value!r}")
    return amount * per_hour[unit]


def check(retention_hours: float, needs: list[Need]) -> None:
    """Raise :class:`RetentionRefused` naming every need longer than ``retention_hours``.

    >>> n = Need("bronze_x", "the silver checkpoint silver_x", 30.2, "has not processed v4")
    >>> check(31, [n])
    >>> check(24, [n])
    Traceback (most recent call last):
    ...
    adlake.maintenance.RetentionRefused: VACUUM with a retention of 24 h refused: nothing was removed. What needs a longer retention:
    * bronze_x: the silver checkpoint silver_x has not processed v4: needs at least 31 h
    Run the readers first (the lake chain's silver task, the view's DAG), or use a longer retention; see the runbook's table maintenance.
    """
    unmet = [n for n in needs if n.hours > retention_hours]
    if unmet:
        raise RetentionRefused(retention_hours, unmet)


# -- what the Data quality page shows ----------------------------------------------------------

# A run's figures per table, as the page shows them (``maintenance_history`` holds all of them).
SHOWN = (
    "table",
    "files_compacted",
    "files_removed",
    "bytes_removed",
    "live_files_after",
    "live_bytes_after",
    "disk_bytes_after",
    "seconds",
)


def latest_path(settings: Settings) -> Path:
    """The latest maintenance run (not a dry run), as JSON, for the Data quality page (which
    reads files, not Delta tables)."""
    return settings.reports_dir / "maintenance" / "latest.json"


def write_latest(settings: Settings, run: dict, rows: list[dict]) -> None:
    """Replace the latest run's record atomically: ``run`` (dag_id, run_id, finished_at,
    retention_hours) with each table's :data:`SHOWN` figures."""
    from adlake.apps.state import write_json

    write_json(
        latest_path(settings), {**run, "tables": [{k: r.get(k) for k in SHOWN} for r in rows]}
    )


def read_latest(settings: Settings) -> dict | None:
    from adlake.apps.state import read_json

    return read_json(latest_path(settings))
