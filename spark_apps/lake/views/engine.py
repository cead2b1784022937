"""Incremental materialized views: group-by aggregates over a Delta source, kept up to date from
the source's Change Data Feed and a MERGE.

A view (``registry.View``) is a source table, grouping keys (optionally derived by a SQL
expression) and aggregates of six kinds: count, sum, min, max, avg and approx_distinct. It is
stored as a Delta table at ``settings.table_path(view.name)``::

    keys… | one column per aggregate | __count | hidden helpers…

``__count`` is the number of source rows of the group (a group whose count reaches 0 is deleted);
``sum`` and ``avg`` keep ``__sum_<name>``/``__cnt_<name>`` (the sum and the number of non-null
values, so a sum over nothing is NULL, as in SQL); ``approx_distinct`` keeps an HLL sketch
``__hll_<name>`` (unions of sketches are sketches, so partial results merge).

A refresh processes the source versions ``(v0, v1]``, where ``v0`` is the version the view
already reflects and ``v1`` the source's latest:

1. read the change feed: inserts and post-images count +1, deletes and pre-images −1;
2. aggregate the change per group: count, sums and non-null counts add signed deltas;
   min, max and sketches can only *grow* from a change: a group touched by any −1 row
   (a delete, or the pre-image of an update) is recomputed from the source at ``v1``, the others
   combine ``least``/``greatest``/``hll_union`` with their stored values;
3. MERGE the new state of every touched group into the view (update, insert, or delete the group
   when its count reaches 0);
4. record ``v1`` in the ``_view_progress`` table.

Worked example, ``count`` and ``max(price)`` per campaign. The view holds ``c1: count 2, max 5``
(rows 3 and 5). The source then changes: a row ``(c1, 7)`` is inserted and the row ``(c1, 5)`` is
deleted. The change aggregates to ``c1: Δcount = +1 −1 = 0``, with a −1 row, so ``max`` cannot be
derived (the deleted 5 was the maximum; the stored value does not say what the next one is) and
``c1`` is recomputed from the source at ``v1``: ``count 2, max 7``. Had the change been the insert
alone: ``count 2 + 1 = 3, max = greatest(5, 7) = 7``, no source read.

Exactly once, through a crash at any point:

* the MERGE runs with Delta's idempotent-write options ``txnAppId = "view:<name>"`` and
  ``txnVersion = v1``: Delta records the pair in the view's log (a ``SetTransaction``) in the
  same commit as the new view content, and skips any later write with the same app id and a
  version not above it. A second run that computed the same ``(v0, v1]`` (a retry, or a
  concurrent duplicate) cannot apply it twice;
* that pair is also the record of the version the view reflects: it is read from the view's
  latest snapshot (no job, no history read), before anything else. A full refresh records its
  version the same way. A crash between the MERGE and the progress write leaves ``v1`` in the
  view's log; the rerun starts from it, even if the source has moved on in the meantime, and the
  progress table catches up. Only a view table without the pair (written before full refreshes
  recorded it) falls back to the ``userMetadata`` of its commits, then to the progress table;
* a crash before the MERGE changes nothing: the rerun recomputes the same change.

One writer per view is assumed (one Airflow task per view, ``max_active_runs=1``).

    .venv/lake/bin/python -m spark_apps.lake.views --all
    .venv/lake/bin/python -m spark_apps.lake.views --view campaign_daily_totals --full-refresh
    .venv/lake/bin/python -m spark_apps.lake.views --all --verify
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.config import Settings, load_settings
from spark_apps.lake.tables import table_path

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PROGRESS_TABLE = "_view_progress"
COUNT = "__count"
# HLL sketch size: 2^12 registers, relative standard error ~1.6%. Every sketch of a view must use
# the same value, or hll_union refuses to merge them.
HLL_LG_CONFIG_K = 12
NON_DECOMPOSABLE = ("min", "max", "approx_distinct")
# The change feed's row kinds and what each does to its group.
SIGNS = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}
FAIL_POINTS = ("before_merge", "after_merge")
# The recompute filters the source on a key column's values only up to this many of them.
KEY_FILTER_LIMIT = 1000
# How far back in the view's history to look for the last commit of this engine.
HISTORY_LOOKBACK = 50

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# hll_sketch_agg accepts these input types; other columns are hashed as strings.
_HLL_INPUT_TYPES = ("int", "bigint", "string", "binary")


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
    # progress), in order: where a refresh's time goes.
    phases: dict[str, float] | None = None

    def line(self) -> str:
        versions = (f"v{self.to_version}" if self.from_version is None
                    else f"v{self.from_version}→v{self.to_version}")
        parts = [f"{self.view}: {self.mode} {versions}"]
        if self.mode == "incremental":
            parts.append(f"{self.change_rows:,} change rows, {self.groups_touched:,} groups "
                         f"touched, {self.groups_recomputed:,} recomputed")
        if self.merge:
            parts.append("merge " + " ".join(f"{k.removeprefix('num_').removesuffix('_rows')}="
                                             f"{v:,}" for k, v in self.merge.items()))
        parts.append(f"{self.seconds:.1f} s")
        if self.phases:
            parts.append("(" + " ".join(f"{k} {v:.1f}" for k, v in self.phases.items()) + ")")
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
        return (f"group ({keys}): {', '.join(self.columns)} differ; view {self.view}, "
                f"expected {self.expected}")


# -- layout -------------------------------------------------------------------------------------

def _in(agg: registry.Aggregate) -> str:
    """The projected input column of an aggregate (its source column, renamed so a key derived
    under the same name cannot clash with it)."""
    return f"__in_{agg.name}"


def _sum_cols(agg: registry.Aggregate) -> tuple[str, str]:
    """The running sum and non-null count of a ``sum`` or ``avg``. A ``sum`` keeps its sum in its
    visible column; an ``avg`` derives its visible column from both."""
    return (agg.name if agg.kind == "sum" else f"__sum_{agg.name}"), f"__cnt_{agg.name}"


def _hll(agg: registry.Aggregate) -> str:
    return f"__hll_{agg.name}"


def helper_columns(agg: registry.Aggregate) -> list[str]:
    """Hidden columns an aggregate keeps besides its visible one.

    >>> helper_columns(registry.Aggregate("avg_price", "avg", "win_price"))
    ['__sum_avg_price', '__cnt_avg_price']
    >>> helper_columns(registry.Aggregate("spend", "sum", "win_price"))
    ['__cnt_spend']
    """
    if agg.kind == "sum":
        return [_sum_cols(agg)[1]]
    if agg.kind == "avg":
        return list(_sum_cols(agg))
    if agg.kind == "approx_distinct":
        return [_hll(agg)]
    return []


def view_columns(view: registry.View) -> list[str]:
    """The columns of a view's table, in order: keys, visible aggregates, ``__count``, helpers."""
    return [*view.keys, *(a.name for a in view.aggregates), COUNT,
            *(h for a in view.aggregates for h in helper_columns(a))]


def needs_recompute(view: registry.View) -> bool:
    """Whether a retraction (delete, update pre-image) forces a recompute of its group: only
    min, max and sketches do; counts and sums just subtract."""
    return any(a.kind in NON_DECOMPOSABLE for a in view.aggregates)


def _hll_estimate(sketch: Column) -> Column:
    # A sketch built in one pass estimates with the HIP estimator, a union of sketches with the
    # composite one: the same registers can give two slightly different numbers depending on how
    # the sketch was built (full refresh vs increments). Estimating the sketch's union with
    # itself always takes the composite estimator, so the value depends on the registers alone
    # and an incremental view equals a full recomputation exactly.
    from pyspark.sql import functions as F

    return F.hll_sketch_estimate(F.hll_union(sketch, sketch))


def _null_safe_join(left: str, right: str, keys: Sequence[str]) -> Column:
    from pyspark.sql import functions as F

    # Keys may be NULL (a NULL key is a group, as in GROUP BY): match them null-safely.
    return reduce(lambda a, b: a & b,
                  [F.col(f"{left}.`{k}`").eqNullSafe(F.col(f"{right}.`{k}`")) for k in keys])


# -- transforms ---------------------------------------------------------------------------------

def transform_project(df: DataFrame, view: registry.View, *extra: Column) -> DataFrame:
    """The view's keys (derived by ``key_exprs`` where declared) and one input column per
    aggregate (``__in_<name>``), plus ``extra`` columns.

    >>> v = registry.View("v", "src", ("page_id", "hour"), (registry.Aggregate("n", "count"),
    ...     registry.Aggregate("users", "approx_distinct", "user_id")),
    ...     key_exprs=(("hour", "date_trunc('hour', event_time)"),))
    >>> transform_project(clicks, v).columns                        # doctest: +SKIP
    ['page_id', 'hour', '__in_users']
    """
    from pyspark.sql import functions as F

    exprs = dict(view.key_exprs)
    keys = [F.expr(exprs[k]).alias(k) if k in exprs else F.col(f"`{k}`") for k in view.keys]
    types = dict(df.dtypes)
    inputs = []
    for agg in view.aggregates:
        if agg.column is None:
            continue
        col = F.col(f"`{agg.column}`")
        if agg.kind == "approx_distinct" and types[agg.column] not in _HLL_INPUT_TYPES:
            col = col.cast("string")
        inputs.append(col.alias(_in(agg)))
    return df.select(*keys, *inputs, *extra)


def _finalize(state: DataFrame, view: registry.View) -> DataFrame:
    """Derive the visible columns from the stored state and order the columns."""
    from pyspark.sql import functions as F

    derived = {}
    for agg in view.aggregates:
        if agg.kind == "count":
            derived[agg.name] = F.col(COUNT)
        elif agg.kind == "avg":
            total, n = _sum_cols(agg)
            derived[agg.name] = (F.col(total) / F.col(n)).cast("double")  # NULL when n = 0
        elif agg.kind == "approx_distinct":
            derived[agg.name] = _hll_estimate(F.col(_hll(agg)))
    return state.withColumns(derived).select(*(F.col(f"`{c}`") for c in view_columns(view)))


def transform_aggregate(projected: DataFrame, view: registry.View) -> DataFrame:
    """The view's full state from projected source rows (a full refresh, and the recompute of
    the groups a retraction touched).

    Three rows ``(c1, 2.0), (c1, NULL), (c2, 4.0)`` with ``count``, ``sum``, ``avg`` and ``max``
    of the price give ``c1: count 2, sum 2.0 (__cnt 1), avg 2.0, max 2.0`` and
    ``c2: count 1, sum 4.0, avg 4.0, max 4.0``; a group of NULL prices only has sum NULL,
    ``__cnt`` 0, avg NULL, max NULL — as SQL's aggregates.
    """
    from pyspark.sql import functions as F

    exprs = [F.count(F.lit(1)).alias(COUNT)]
    for agg in view.aggregates:
        col = F.col(_in(agg)) if agg.column else None
        if agg.kind in ("sum", "avg"):
            total, n = _sum_cols(agg)
            exprs += [F.sum(col).alias(total), F.count(col).alias(n)]
        elif agg.kind == "min":
            exprs.append(F.min(col).alias(agg.name))
        elif agg.kind == "max":
            exprs.append(F.max(col).alias(agg.name))
        elif agg.kind == "approx_distinct":
            exprs.append(F.hll_sketch_agg(col, HLL_LG_CONFIG_K).alias(_hll(agg)))
    return _finalize(projected.groupBy(*view.keys).agg(*exprs), view)


def transform_changes(cdf: DataFrame, view: registry.View) -> DataFrame:
    """Change-feed rows projected like source rows, with ``__sign``: +1 for an insert or an
    update's post-image, −1 for a delete or an update's pre-image. An update is thus a
    retraction of the old row and an assertion of the new one, which also covers a row moving
    from one group to another (−1 in the old group, +1 in the new)."""
    from pyspark.sql import functions as F

    kind = F.col("_change_type")
    sign = (F.when(kind.isin(*(k for k, s in SIGNS.items() if s > 0)), F.lit(1))
            .when(kind.isin(*(k for k, s in SIGNS.items() if s < 0)), F.lit(-1)))
    return transform_project(cdf.filter(F.col("_change_type").isin(*SIGNS)), view,
                             sign.alias("__sign"))


def transform_change_groups(changes: DataFrame, view: registry.View) -> DataFrame:
    """Aggregate signed change rows per group: what each group gains and loses.

    Columns: the keys; ``__rows`` (change rows); ``__d_count`` (net rows); ``__retract`` (any −1
    row); for sum/avg ``__d_<sum>``/``__d_<cnt>`` (signed sum of values, net non-null values);
    for min/max ``__i_<name>`` and for sketches ``__i___hll_<name>``: the same aggregate over the
    +1 rows only (what an insert-only group combines with its stored value).

    Changes ``+(c1, 3.0), −(c1, 5.0), +(c2, NULL)`` give ``c1: __d_count 0, __d_sum −2.0,
    __d_cnt 0, __retract true`` and ``c2: __d_count 1, __d_sum NULL, __d_cnt 0, __retract false``.
    """
    from pyspark.sql import functions as F

    sign = F.col("__sign")
    exprs = [F.count(F.lit(1)).alias("__rows"), F.sum(sign).alias("__d_count"),
             F.max(sign < 0).alias("__retract")]
    for agg in view.aggregates:
        col = F.col(_in(agg)) if agg.column else None
        if agg.kind in ("sum", "avg"):
            total, n = _sum_cols(agg)
            exprs += [F.sum(col * sign).alias(f"__d_{total}"),
                      F.sum(F.when(col.isNotNull(), sign).otherwise(0)).alias(f"__d_{n}")]
        elif agg.kind == "min":
            exprs.append(F.min(F.when(sign > 0, col)).alias(f"__i_{agg.name}"))
        elif agg.kind == "max":
            exprs.append(F.max(F.when(sign > 0, col)).alias(f"__i_{agg.name}"))
        elif agg.kind == "approx_distinct":
            exprs.append(F.hll_sketch_agg(F.when(sign > 0, col), HLL_LG_CONFIG_K)
                         .alias(f"__i_{_hll(agg)}"))
    return changes.groupBy(*view.keys).agg(*exprs)


def transform_new_state(delta: DataFrame, existing: DataFrame, recomputed: DataFrame | None,
                        view: registry.View) -> DataFrame:
    """The new state of every group the change touched: the MERGE source.

    ``existing`` is the view as stored, ``recomputed`` the full state (``transform_aggregate``)
    of the groups with a retraction, from the source at the new version (None when the view has
    only decomposable aggregates). A group with a retraction in a view with min/max/sketches
    takes the recomputed state (``__count`` 0 when it has no source row left); every other group
    adds the deltas to its stored counts and sums and combines ``least``/``greatest``/
    ``hll_union`` with the inserted rows' values.

    Stored ``c1: count 2, sum 8.0 (__cnt 2), max 5.0`` and change ``+(c1, 7.0)`` give
    ``c1: count 3, sum 15.0 (__cnt 3), max 7.0``; a change ``−(c1, 3.0), −(c1, 5.0)`` gives
    ``c1: count 0`` (the MERGE deletes it).
    """
    from pyspark.sql import functions as F

    recompute = recomputed is not None
    joined = delta.alias("d").join(existing.alias("o"), _null_safe_join("d", "o", view.keys),
                                   "left")
    if recompute:
        joined = joined.join(recomputed.alias("r"), _null_safe_join("d", "r", view.keys), "left")
    retract = F.col("d.__retract") if recompute else F.lit(False)

    def pick(name: str, combined: Column) -> Column:
        return F.when(retract, F.col(f"r.`{name}`")).otherwise(combined) if recompute else combined

    old, d = (lambda c: F.col(f"o.`{c}`")), (lambda c: F.col(f"d.`{c}`"))
    # A recomputed group with no source row left has no `r` row: count 0, so the MERGE deletes
    # it (its other columns are NULL and never stored).
    new_count = F.coalesce(old(COUNT), F.lit(0)) + d("__d_count")
    state = {COUNT: F.when(retract, F.coalesce(F.col(f"r.{COUNT}"), F.lit(0))).otherwise(new_count)
             if recompute else new_count}
    for agg in view.aggregates:
        if agg.kind in ("sum", "avg"):
            total, n = _sum_cols(agg)
            new_n = F.coalesce(old(n), F.lit(0)) + d(f"__d_{n}")
            # Once no non-null value is left the sum is NULL (SQL's sum of nothing), whatever
            # rounding residue the additions and subtractions of doubles left behind.
            new_total = F.when(new_n > 0, F.coalesce(old(total), F.lit(0))
                               + F.coalesce(d(f"__d_{total}"), F.lit(0)))
            state[n], state[total] = pick(n, new_n), pick(total, new_total)
        elif agg.kind in ("min", "max"):
            combine = F.least if agg.kind == "min" else F.greatest  # both skip NULLs
            state[agg.name] = pick(agg.name, combine(old(agg.name), d(f"__i_{agg.name}")))
        elif agg.kind == "approx_distinct":
            h = _hll(agg)
            inserted = d(f"__i_{h}")
            state[h] = pick(h, F.when(old(h).isNull(), inserted)
                            .otherwise(F.hll_union(old(h), inserted)))
    stored_types = dict(existing.dtypes)
    new = joined.select(*(F.col(f"d.`{k}`").alias(k) for k in view.keys),
                        *(col.cast(stored_types[name]).alias(name)
                          for name, col in state.items()))
    return _finalize(new, view)


def transform_compare(actual: DataFrame, expected: DataFrame, view: registry.View,
                      rel_tolerance: float = 1e-9) -> DataFrame:
    """Groups where the view (``actual``) and a recomputation (``expected``) differ.

    Columns: the keys, ``__differs`` (names of the differing columns), ``__view`` and
    ``__expected`` (structs of the visible values and ``__count``; NULL for a missing group).
    Compared: ``__count``, every visible column, the non-null counts, and for sketches the
    estimate of the stored sketch (which catches a visible value out of step with its sketch).
    Doubles compare within ``rel_tolerance`` (sums of doubles depend on the order of additions);
    everything else exactly.
    """
    from pyspark.sql import functions as F

    a, e = (lambda c: F.col(f"a.`{c}`")), (lambda c: F.col(f"e.`{c}`"))
    types = dict(expected.dtypes)

    def differs(x: Column, y: Column, approximate: bool) -> Column:
        if not approximate:
            return ~x.eqNullSafe(y)
        close = F.abs(x - y) <= F.lit(rel_tolerance) * F.greatest(F.lit(1.0), F.abs(x), F.abs(y))
        return ~((x.isNull() & y.isNull()) | (x.isNotNull() & y.isNotNull() & close))

    checks = [(COUNT, differs(a(COUNT), e(COUNT), False))]
    for agg in view.aggregates:
        checks.append((agg.name, differs(a(agg.name), e(agg.name),
                                         types[agg.name] in ("double", "float"))))
        if agg.kind in ("sum", "avg"):
            n = _sum_cols(agg)[1]
            checks.append((n, differs(a(n), e(n), False)))
        if agg.kind == "approx_distinct":
            h = _hll(agg)
            checks.append((h, differs(_hll_estimate(a(h)), _hll_estimate(e(h)), False)))
    names = F.filter(F.array(*(F.when(cond, F.lit(name)) for name, cond in checks)),
                     lambda x: x.isNotNull())
    shown = [*(agg.name for agg in view.aggregates), COUNT]

    def side(col: Any, alias: str) -> Column:
        return F.when(col(COUNT).isNotNull(), F.struct(*(col(c).alias(c) for c in shown))
                      ).alias(alias)

    joined = actual.alias("a").join(expected.alias("e"), _null_safe_join("a", "e", view.keys),
                                    "full_outer")
    return (joined.select(*(F.coalesce(a(k), e(k)).alias(k) for k in view.keys),
                          names.alias("__differs"), side(a, "__view"), side(e, "__expected"))
            .filter(F.size("__differs") > 0))


# -- reading and bookkeeping --------------------------------------------------------------------

def _snapshot(spark: SparkSession, path: str) -> Any:
    """The latest snapshot (JVM ``Snapshot``) of the Delta table at ``path``: Delta lists the log
    and reuses the state it already holds for the table, so this runs no Spark job, where reading
    ``history()`` costs a DataFrame and half a second."""
    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    return (jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
            .update(False, none, none))


def latest_version(spark: SparkSession, path: str) -> int:
    """The latest committed version of the Delta table at ``path``."""
    return int(_snapshot(spark, path).version())


def read_version(spark: SparkSession, path: str, version: int) -> DataFrame:
    """The table at ``version`` (pinned: a DataFrame over a bare path would see later commits
    each time it is evaluated)."""
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def read_changes(spark: SparkSession, path: str, start: int, end: int) -> DataFrame:
    """The change feed of versions ``start..end`` (both included)."""
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", start).option("endingVersion", end).load(path))


def _is_delta(spark: SparkSession, path: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def _progress_path(settings: Settings) -> str:
    return table_path(settings, PROGRESS_TABLE)


def recorded_version(spark: SparkSession, settings: Settings, view: registry.View) -> int | None:
    """The last source version the progress table records for ``view`` (its newest row)."""
    from pyspark.sql import functions as F

    path = _progress_path(settings)
    if not _is_delta(spark, path):
        return None
    row = (spark.read.format("delta").load(path).filter(F.col("view") == view.name)
           .orderBy(F.col("refreshed_at").desc(), F.col("source_version").desc()).first())
    return None if row is None else row.source_version


def committed_version(spark: SparkSession, settings: Settings, view: registry.View
                      ) -> int | None:
    """The source version the view table itself records (see :func:`_view_state`), or None."""
    return _view_state(spark, settings, view)[0]


def _txn_app_id(view: registry.View) -> str:
    return f"view:{view.name}"


def _view_state(spark: SparkSession, settings: Settings, view: registry.View
                ) -> tuple[int | None, int | None]:
    """``(source version the view reflects, latest version of the view table)``, both from one
    snapshot of the view table: the ``txnVersion`` its last MERGE or full refresh recorded under
    ``view:<name>``. A table without it (last written before full refreshes recorded it) falls
    back to the ``userMetadata`` of its commits."""
    path = table_path(settings, view.name)
    if not _is_delta(spark, path):
        return None, None
    snapshot = _snapshot(spark, path)
    txn = snapshot.transactions().get(_txn_app_id(view))
    if txn.isDefined():
        return int(txn.get()), int(snapshot.version())
    return _view_history(spark, path, view)


def _view_history(spark: SparkSession, path: str, view: registry.View
                  ) -> tuple[int | None, int | None]:
    """``(source version in the userMetadata of the engine's newest commit among the last
    ``HISTORY_LOOKBACK``, latest version of the view table)``."""
    from delta.tables import DeltaTable

    rows = (DeltaTable.forPath(spark, path).history(HISTORY_LOOKBACK)
            .select("version", "userMetadata").orderBy("version", ascending=False).collect())
    for row in rows:
        try:
            meta = json.loads(row.userMetadata or "")
        except ValueError:
            continue
        if isinstance(meta, dict) and meta.get("adlake_view") == view.name:
            return int(meta["source_version"]), rows[0].version
    return None, rows[0].version


def record_progress(spark: SparkSession, settings: Settings, view: registry.View,
                    source_version: int) -> None:
    """Append ``(view, source_version, refreshed_at)`` to the progress table (an append-only log:
    appends of different views never conflict; the newest row of a view is its state)."""
    from datetime import datetime, timezone

    from delta.tables import DeltaTable
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("view", T.StringType()),
                           T.StructField("source_version", T.LongType()),
                           T.StructField("refreshed_at", T.TimestampType())])
    path = _progress_path(settings)
    DeltaTable.createIfNotExists(spark).location(path).addColumns(schema).execute()
    row = (view.name, source_version, datetime.now(timezone.utc).replace(tzinfo=None))
    spark.createDataFrame([row], schema).write.format("delta").mode("append").save(path)


@contextmanager
def _commit_options(spark: SparkSession, options: dict[str, str]) -> Iterator[None]:
    """Session confs for the writes inside the block only (they apply to every Delta commit of
    the session, so they must not outlive the one they are meant for)."""
    for key, value in options.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in options:
            spark.conf.unset(key)


def _metadata(view: registry.View, source_version: int, mode: str) -> str:
    return json.dumps({"adlake_view": view.name, "source_version": source_version, "mode": mode})


def merge_into_view(spark: SparkSession, path: str, view: registry.View, new_state: DataFrame,
                    source_version: int) -> dict[str, int] | None:
    """MERGE ``new_state`` (``transform_new_state``) into the view at ``path``: update the
    matched groups, insert the new ones, delete the groups whose count is 0. Returns Delta's
    metrics row, or None when Delta skipped the MERGE because a commit with the same
    ``txnAppId``/``txnVersion`` (``view:<name>``, ``source_version``) is already in the view.
    """
    from delta.tables import DeltaTable

    cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in view.keys)
    values = {f"`{c}`": f"s.`{c}`" for c in view_columns(view)}
    merge = (DeltaTable.forPath(spark, path).alias("t").merge(new_state.alias("s"), cond)
             .whenMatchedDelete(condition=f"s.{COUNT} = 0")
             .whenMatchedUpdate(set=values)
             .whenNotMatchedInsert(condition=f"s.{COUNT} > 0", values=values))
    with _commit_options(spark, {_TXN_APP_ID: _txn_app_id(view),
                                 _TXN_VERSION: str(source_version),
                                 _USER_METADATA: _metadata(view, source_version, "incremental")}):
        rows = merge.execute().collect()
    return rows[0].asDict() if rows else None


# -- refresh, full refresh, verify --------------------------------------------------------------

def _source_path(settings: Settings, view: registry.View) -> str:
    # Sources are resolved by name under the settings' tables directory, so a test can declare a
    # View over a table of its own under tmp_path without touching the registry.
    return table_path(settings, view.source)


def _require_source(spark: SparkSession, path: str, view: registry.View) -> None:
    if not _is_delta(spark, path):
        raise FileNotFoundError(f"view {view.name!r}: its source {view.source!r} is not a Delta "
                                f"table at {path}; create it first (spark_apps.lake.tables)")


def full_refresh(spark: SparkSession, settings: Settings, view: registry.View) -> RefreshReport:
    """Recompute ``view`` from its source at the latest version, overwrite the view table and
    record the version.

    The overwrite is one atomic commit recording the source version as the ``txnVersion`` of
    ``view:<name>``, so a crash before the progress write is repaired by the next run like a
    crash after a MERGE. When the view already records this very version the overwrite goes
    without it (Delta would skip the write as already applied; the record stays right). If the
    source is older than what the view reflected (it was recreated), the view table is dropped
    and recreated instead: Delta keeps the ``txnVersion`` of ``view:<name>`` across overwrites
    and would otherwise skip every later MERGE as already applied.

    >>> full_refresh(spark, settings, registry.view("page_clicks_hourly")).line()  # doctest: +SKIP
    'page_clicks_hourly: full v7, merge …, 3.2 s'
    """
    start = time.monotonic()
    src, dst = _source_path(settings, view), table_path(settings, view.name)
    _require_source(spark, src, view)
    version = latest_version(spark, src)
    notes = []
    previous = committed_version(spark, settings, view)
    if previous is not None and version < previous:
        shutil.rmtree(dst)
        notes.append(f"source at v{version} is older than the v{previous} the view reflected "
                     "(recreated): view table recreated")
        previous = None
    state = transform_aggregate(transform_project(read_version(spark, src, version), view), view)
    options = {_USER_METADATA: _metadata(view, version, "full")}
    if previous is None or version > previous:
        options |= {_TXN_APP_ID: _txn_app_id(view), _TXN_VERSION: str(version)}
    with _commit_options(spark, options):
        (state.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .save(dst))
    record_progress(spark, settings, view, version)
    return RefreshReport(view.name, "full", None, version, seconds=time.monotonic() - start,
                         notes=tuple(notes))


def _plain_keys(view: registry.View) -> list[str]:
    """The keys that are source columns as they are (not derived by an expression)."""
    return [k for k in view.keys if k not in dict(view.key_exprs)]


def _retracted_key_values(view: registry.View, retracting: Column) -> list[Column]:
    """Aggregates over the change groups giving, for each plain key column, the set of its values
    among the groups with a retraction (``__values_<key>``) and whether one of them is NULL
    (``__null_<key>``): what :func:`_key_filter` needs, computed by the same job as the change's
    statistics."""
    from pyspark.sql import functions as F

    # One value more than the filter takes says "too many" without shipping them all.
    return [agg for k in _plain_keys(view) for agg in (
        F.slice(F.collect_set(F.when(retracting, F.col(f"`{k}`"))), 1, KEY_FILTER_LIMIT + 1)
        .alias(f"__values_{k}"),
        F.coalesce(F.max(F.when(retracting, F.col(f"`{k}`").isNull())), F.lit(False))
        .alias(f"__null_{k}"))]


def _key_filter(view: registry.View, stats: Any) -> Column | None:
    """A filter on the source keeping the rows whose plain key columns take the values of the
    groups to recompute (``stats``: a row with the columns of :func:`_retracted_key_values`), for
    every such column with at most ``KEY_FILTER_LIMIT`` distinct values there. It is implied by the semi
    join that follows; it is there for Delta, which turns it into partition pruning
    (``event_date`` of a silver table) or file skipping by column statistics, so the recompute
    reads the affected files, not the table. Where keys are NULL, ``IS NULL`` is kept too."""
    from pyspark.sql import functions as F

    conds = []
    for k in _plain_keys(view):
        values = stats[f"__values_{k}"]
        if len(values) > KEY_FILTER_LIMIT:
            continue
        cond = F.col(f"`{k}`").isin(list(values))
        conds.append(cond | F.col(f"`{k}`").isNull() if stats[f"__null_{k}"] else cond)
    return reduce(lambda a, b: a & b, conds) if conds else None


def refresh(spark: SparkSession, settings: Settings, view: registry.View, *,
            fail_at: str | None = None) -> RefreshReport:
    """Bring ``view`` up to date with its source's latest version; see the module docstring.

    A view never refreshed (or whose table is gone) gets a :func:`full_refresh`. ``fail_at``
    (``"before_merge"`` or ``"after_merge"``) raises :class:`InjectedFailure` at that point; it
    exists for the crash tests only.

    >>> refresh(spark, settings, registry.view("campaign_daily_totals")).line()  # doctest: +SKIP
    'campaign_daily_totals: incremental v3→v5, 120 change rows, 14 groups touched, 2 recomputed,
    merge affected=14 updated=12 deleted=1 inserted=1, 4.1 s'
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    if fail_at is not None and fail_at not in FAIL_POINTS:
        raise ValueError(f"fail_at={fail_at!r}: allowed {FAIL_POINTS}")
    start = time.monotonic()
    src, dst = _source_path(settings, view), table_path(settings, view.name)
    _require_source(spark, src, view)
    if not _is_delta(spark, dst):
        return full_refresh(spark, settings, view)
    # The version the view reflects: recorded in the view's own log, atomically with its
    # content; the progress table only if the view has no such record (see _view_state).
    v0 = committed_version(spark, settings, view)
    if v0 is None:
        v0 = recorded_version(spark, settings, view)
        if v0 is None:
            return full_refresh(spark, settings, view)
    v1 = latest_version(spark, src)
    if v1 < v0:
        raise SourceRewound(f"view {view.name!r} reflects {view.source} v{v0} but the source is "
                            f"at v{v1} (recreated?): run with --full-refresh")
    if v1 == v0:
        notes = ()
        recorded = recorded_version(spark, settings, view)
        if recorded != v0:
            # The last run committed its MERGE but crashed before its bookkeeping.
            record_progress(spark, settings, view, v0)
            notes = (f"progress repaired: the view's last commit reflects v{v0}, the progress "
                     f"table said {recorded}",)
        return RefreshReport(view.name, "up_to_date", v0, v1,
                             seconds=time.monotonic() - start, notes=notes)

    phases: dict[str, float] = {}
    lap = [start]

    def mark(phase: str) -> None:
        now = time.monotonic()
        phases[phase] = round(now - lap[0], 2)
        lap[0] = now

    mark("bookkeeping")
    try:
        changes = transform_changes(read_changes(spark, src, v0 + 1, v1), view)
        delta = transform_change_groups(changes, view).persist()
        retracting = F.col("__retract")
        stats = delta.agg(F.count(F.lit(1)).alias("groups"),
                          F.coalesce(F.sum("__rows"), F.lit(0)).alias("rows"),
                          F.coalesce(F.sum(retracting.cast("int")), F.lit(0)).alias("retracting"),
                          *_retracted_key_values(view, retracting)).first()
    except AnalysisException as e:
        raise ChangeFeedUnavailable(
            f"view {view.name!r}: cannot read the change feed of {view.source} versions "
            f"{v0 + 1}..{v1}: {e}; run with --full-refresh") from e
    mark("change")
    try:
        recomputed, n_recompute = None, 0
        if needs_recompute(view) and stats.retracting:
            # A delete or an update's pre-image may have removed a group's min, max or one of
            # its distinct values; the stored value cannot say what replaces it, so these
            # groups are recomputed from the source as of v1 (time travel, not "latest": the
            # source may have moved on since v1 was read).
            keys = delta.filter("__retract").select(*view.keys)
            source = read_version(spark, src, v1)
            pruning = _key_filter(view, stats)
            if pruning is not None:
                source = source.filter(pruning)
            rows = transform_project(source, view).alias("s").join(
                F.broadcast(keys).alias("k"), _null_safe_join("s", "k", view.keys), "left_semi")
            recomputed, n_recompute = transform_aggregate(rows, view), stats.retracting
        # The view as the MERGE will see it: its latest snapshot (the one writer is this run),
        # shared with the MERGE instead of a time-travel snapshot rebuilt from the log.
        existing = spark.read.format("delta").load(dst)
        new_state = transform_new_state(delta, existing, recomputed, view)
        # A negative count means the view did not reflect v0 (edited behind the engine's back):
        # fail the MERGE itself rather than spend a pass over the new state checking first.
        inconsistent = (f"view {view.name!r}: applying {view.source} v{v0 + 1}..{v1} leaves a "
                        f"negative count: the view does not reflect v{v0}; run with "
                        "--full-refresh")
        new_state = new_state.withColumn(COUNT, F.when(F.col(COUNT) >= 0, F.col(COUNT))
                                         .otherwise(F.raise_error(F.lit(inconsistent))))
        mark("recompute_keys")
        if fail_at == "before_merge":
            raise InjectedFailure("before_merge")
        try:
            metrics = merge_into_view(spark, dst, view, new_state, v1) if stats.groups else None
        except Exception as e:
            if inconsistent in str(e):
                raise ViewInconsistent(inconsistent) from None
            raise
        if stats.groups and metrics is None:
            # Delta skipped the MERGE: a commit with txnVersion >= v1 is already in the view.
            # A commit of this very change would have been found above (v0 == v1, nothing to
            # do); so the txn version belongs to another history of the source (recreated):
            # refuse rather than drop the change silently.
            raise SourceRewound(
                f"view {view.name!r}: Delta skipped the MERGE for v{v1} as already applied, "
                f"but the view reflects v{v0}: delete {dst} and run with --full-refresh")
        if fail_at == "after_merge":
            # The view now reflects v1 (its commit says so) but the progress table does not.
            raise InjectedFailure("after_merge")
    finally:
        delta.unpersist()
    mark("merge")
    record_progress(spark, settings, view, v1)
    mark("progress")
    return RefreshReport(view.name, "incremental", v0, v1, change_rows=stats.rows,
                         groups_touched=stats.groups, groups_recomputed=n_recompute,
                         merge=metrics, seconds=time.monotonic() - start, phases=phases)


def verify(spark: SparkSession, settings: Settings, view: registry.View, *,
           limit: int = 1000) -> list[Difference]:
    """Recompute ``view`` in memory from its source at the version the view reflects and list
    the groups that differ (at most ``limit``); an empty list means the view is consistent.

    >>> verify(spark, settings, registry.view("page_clicks_hourly"))        # doctest: +SKIP
    []
    """
    dst = table_path(settings, view.name)
    version, view_version = _view_state(spark, settings, view)
    if version is None:
        version = recorded_version(spark, settings, view)
    if version is None or not _is_delta(spark, dst):
        raise ViewNotMaterialized(f"view {view.name!r} has never been refreshed; run a refresh "
                                  "first")
    src = _source_path(settings, view)
    expected = transform_aggregate(transform_project(read_version(spark, src, version), view),
                                   view)
    actual = read_version(spark, dst, view_version)
    rows = transform_compare(actual, expected, view).limit(limit).collect()
    return [Difference(keys={k: r[k] for k in view.keys}, columns=tuple(r["__differs"]),
                       view=r["__view"].asDict() if r["__view"] else None,
                       expected=r["__expected"].asDict() if r["__expected"] else None)
            for r in rows]


# -- main ---------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_apps.lake.views",
                                     description=" ".join(__doc__.split("\n\n")[0].split()))
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--view", action="append", choices=sorted(registry.VIEWS),
                       help="a registered view (repeatable)")
    which.add_argument("--all", action="store_true", help="every registered view")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full-refresh", action="store_true",
                      help="recompute from the source instead of applying the change feed")
    mode.add_argument("--verify", action="store_true",
                      help="recompute in memory and report groups where the view differs "
                           "(exit status 1 if any)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, settings: Settings | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = settings or load_settings()
    names = sorted(registry.VIEWS) if args.all else args.view
    spark = get_session("lake", "views", settings)
    status = 0
    for name in names:
        view = registry.view(name)
        if args.verify:
            differences = verify(spark, settings, view)
            if differences:
                status = 1
                print(f"{name}: {len(differences)} group(s) differ from a recomputation "
                      f"(first {min(len(differences), 20)}):")
                for diff in differences[:20]:
                    print(f"  {diff}")
            else:
                print(f"{name}: consistent with its source")
        else:
            report = (full_refresh if args.full_refresh else refresh)(spark, settings, view)
            print(report.line(), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
