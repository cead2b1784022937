"""The layout of a view's table: its columns (keys, visible aggregates, ``__count``, hidden
helpers) and the column helpers the transforms and the MERGE share. See the package docstring
(:mod:`spark_apps.lake.views`) for what the columns mean."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adlake import registry

if TYPE_CHECKING:
    from pyspark.sql import Column

COUNT = "__count"
# HLL sketch size: 2^12 registers, relative standard error ~1.6%. Every sketch of a view must use
# the same value, or hll_union refuses to merge them.
HLL_LG_CONFIG_K = 12
NON_DECOMPOSABLE = ("min", "max", "approx_distinct")


def input_column(agg: registry.Aggregate) -> str:
    """The projected input column of an aggregate (its source column, renamed so a key derived
    under the same name cannot clash with it)."""
    return f"__in_{agg.name}"


def sum_columns(agg: registry.Aggregate) -> tuple[str, str]:
    """The running sum and non-null count of a ``sum`` or ``avg``. A ``sum`` keeps its sum in its
    visible column; an ``avg`` derives its visible column from both."""
    return (agg.name if agg.kind == "sum" else f"__sum_{agg.name}"), f"__cnt_{agg.name}"


def hll_column(agg: registry.Aggregate) -> str:
    """The HLL sketch an ``approx_distinct`` keeps (its visible column is the estimate)."""
    return f"__hll_{agg.name}"


def helper_columns(agg: registry.Aggregate) -> list[str]:
    """Hidden columns an aggregate keeps besides its visible one.

    >>> helper_columns(registry.Aggregate("avg_price", "avg", "win_price"))
    ['__sum_avg_price', '__cnt_avg_price']
    >>> helper_columns(registry.Aggregate("spend", "sum", "win_price"))
    ['__cnt_spend']
    """
    if agg.kind == "sum":
        return [sum_columns(agg)[1]]
    if agg.kind == "avg":
        return list(sum_columns(agg))
    if agg.kind == "approx_distinct":
        return [hll_column(agg)]
    return []


def view_columns(view: registry.View) -> list[str]:
    """The columns of a view's table, in order: keys, visible aggregates, ``__count``, helpers."""
    return [
        *view.keys,
        *(a.name for a in view.aggregates),
        COUNT,
        *(h for a in view.aggregates for h in helper_columns(a)),
    ]


def needs_recompute(view: registry.View) -> bool:
    """Whether a retraction (delete, update pre-image) forces a recompute of its group: only
    min, max and sketches do; counts and sums just subtract."""
    return any(a.kind in NON_DECOMPOSABLE for a in view.aggregates)


def hll_estimate(sketch: Column) -> Column:
    """The distinct count a sketch estimates, the same for the same registers."""
    # A sketch built in one pass estimates with the HIP estimator, a union of sketches with the
    # composite one: the same registers can give two slightly different numbers depending on how
    # the sketch was built (full refresh vs increments). Estimating the sketch's union with
    # itself always takes the composite estimator, so the value depends on the registers alone
    # and an incremental view equals a full recomputation exactly.
    from pyspark.sql import functions as F

    return F.hll_sketch_estimate(F.hll_union(sketch, sketch))
