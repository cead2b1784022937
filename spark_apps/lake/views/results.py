"""What the view engine returns and raises: :class:`RefreshReport` (what one refresh did),
:class:`Difference` (a group :func:`~spark_apps.lake.views.recompute.verify` found out of step
with its source) and the errors of a refresh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class InjectedFailure(RuntimeError):
    """Test-only: raised by ``refresh(..., fail_at=...)`` to simulate a crash at that point."""


class ChangeFeedUnavailable(RuntimeError):
    """The source's change feed cannot be read for the versions a refresh needs."""


class SourceRewound(RuntimeError):
    """The source is at a version older than the one the view reflects (it was recreated)."""


class ViewInconsistent(RuntimeError):
    """Applying the change would leave a group with a negative count: the view does not match
    the source it claims to reflect."""


class ViewNotMaterialized(RuntimeError):
    """The view has never been refreshed."""


@dataclass(frozen=True)
class RefreshReport:
    """What one refresh did. ``mode``: ``full``, ``incremental`` or ``up_to_date``."""

    view: str
    mode: str
    from_version: int | None
    to_version: int
    change_rows: int = 0
    groups_touched: int = 0
    groups_recomputed: int = 0
    # Delta's MERGE metrics row (num_inserted_rows, …); None when there was no MERGE.
    merge: dict[str, int] | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    # Seconds per step of an incremental refresh (bookkeeping, change, recompute_keys, merge,
    # progress), in order: where a refresh's time goes; and the Spark jobs each step started.
    phases: dict[str, float] | None = None
    jobs: dict[str, int] | None = None

    def line(self) -> str:
        versions = (
            f"v{self.to_version}"
            if self.from_version is None
            else f"v{self.from_version}→v{self.to_version}"
        )
        parts = [f"{self.view}: {self.mode} {versions}"]
        if self.mode == "incremental":
            parts.append(
                f"{self.change_rows:,} change rows, {self.groups_touched:,} groups "
                f"touched, {self.groups_recomputed:,} recomputed"
            )
        if self.merge:
            parts.append(
                "merge "
                + " ".join(
                    f"{k.removeprefix('num_').removesuffix('_rows')}={v:,}"
                    for k, v in self.merge.items()
                )
            )
        parts.append(f"{self.seconds:.1f} s")
        if self.phases:
            jobs = self.jobs or {}
            parts.append(
                "("
                + " ".join(f"{k} {v:.2f} s/{jobs.get(k, '?')} jobs" for k, v in self.phases.items())
                + ")"
            )
        return ", ".join(parts) + "".join(f"\n  note: {n}" for n in self.notes)


@dataclass(frozen=True)
class Difference:
    """One group where the view and a recomputation from the source disagree."""

    keys: dict[str, Any]
    columns: tuple[str, ...]  # the columns that differ (``__count`` alone: a missing group)
    view: dict[str, Any] | None  # None: the group is missing from the view
    expected: dict[str, Any] | None  # None: the group should not exist

    def __str__(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.keys.items())
        return (
            f"group ({keys}): {', '.join(self.columns)} differ; view {self.view}, "
            f"expected {self.expected}"
        )
