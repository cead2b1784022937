"""The view engine's pure transforms: DataFrames and a ``registry.View`` in, DataFrames out (no
reads, no writes). See the package docstring (:mod:`spark_apps.lake.views`) for how a refresh
chains them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.frames import null_safe_join
from spark_apps.lake.views.layout import (
    COUNT,
    HLL_LG_CONFIG_K,
    hll_column,
    hll_estimate,
    input_column,
    sum_columns,
    view_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

# The change feed's row kinds and what each does to its group.
SIGNS = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}
# hll_sketch_agg accepts these input types; other columns are hashed as strings.
_HLL_INPUT_TYPES = ("int", "bigint", "string", "binary")


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
        inputs.append(col.alias(input_column(agg)))
    return df.select(*keys, *inputs, *extra)


def _finalize(state: DataFrame, view: registry.View) -> DataFrame:
    """Derive the visible columns from the stored state and order the columns."""
    from pyspark.sql import functions as F

    derived = {}
    for agg in view.aggregates:
        if agg.kind == "count":
            derived[agg.name] = F.col(COUNT)
        elif agg.kind == "avg":
            total, n = sum_columns(agg)
            derived[agg.name] = (F.col(total) / F.col(n)).cast("double")  # NULL when n = 0
        elif agg.kind == "approx_distinct":
            derived[agg.name] = hll_estimate(F.col(hll_column(agg)))
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
        col = F.col(input_column(agg)) if agg.column else None
        if agg.kind in ("sum", "avg"):
            total, n = sum_columns(agg)
            exprs += [F.sum(col).alias(total), F.count(col).alias(n)]
        elif agg.kind == "min":
            exprs.append(F.min(col).alias(agg.name))
        elif agg.kind == "max":
            exprs.append(F.max(col).alias(agg.name))
        elif agg.kind == "approx_distinct":
            exprs.append(F.hll_sketch_agg(col, HLL_LG_CONFIG_K).alias(hll_column(agg)))
    return _finalize(projected.groupBy(*view.keys).agg(*exprs), view)


def transform_changes(cdf: DataFrame, view: registry.View) -> DataFrame:
    """Change-feed rows projected like source rows, with ``__sign``: +1 for an insert or an
    update's post-image, −1 for a delete or an update's pre-image. An update is thus a
    retraction of the old row and an assertion of the new one, which also covers a row moving
    from one group to another (−1 in the old group, +1 in the new)."""
    from pyspark.sql import functions as F

    kind = F.col("_change_type")
    sign = F.when(kind.isin(*(k for k, s in SIGNS.items() if s > 0)), F.lit(1)).when(
        kind.isin(*(k for k, s in SIGNS.items() if s < 0)), F.lit(-1)
    )
    return transform_project(
        cdf.filter(F.col("_change_type").isin(*SIGNS)), view, sign.alias("__sign")
    )


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
    exprs = [
        F.count(F.lit(1)).alias("__rows"),
        F.sum(sign).alias("__d_count"),
        F.max(sign < 0).alias("__retract"),
    ]
    for agg in view.aggregates:
        col = F.col(input_column(agg)) if agg.column else None
        if agg.kind in ("sum", "avg"):
            total, n = sum_columns(agg)
            exprs += [
                F.sum(col * sign).alias(f"__d_{total}"),
                F.sum(F.when(col.isNotNull(), sign).otherwise(0)).alias(f"__d_{n}"),
            ]
        elif agg.kind == "min":
            exprs.append(F.min(F.when(sign > 0, col)).alias(f"__i_{agg.name}"))
        elif agg.kind == "max":
            exprs.append(F.max(F.when(sign > 0, col)).alias(f"__i_{agg.name}"))
        elif agg.kind == "approx_distinct":
            exprs.append(
                F.hll_sketch_agg(F.when(sign > 0, col), HLL_LG_CONFIG_K).alias(
                    f"__i_{hll_column(agg)}"
                )
            )
    return changes.groupBy(*view.keys).agg(*exprs)


def transform_new_state(
    delta: DataFrame, existing: DataFrame, recomputed: DataFrame | None, view: registry.View
) -> DataFrame:
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
    joined = delta.alias("d").join(existing.alias("o"), null_safe_join("d", "o", view.keys), "left")
    if recompute:
        joined = joined.join(recomputed.alias("r"), null_safe_join("d", "r", view.keys), "left")
    retract = F.col("d.__retract") if recompute else F.lit(False)

    def pick(name: str, combined: Column) -> Column:
        return F.when(retract, F.col(f"r.`{name}`")).otherwise(combined) if recompute else combined

    old, d = (lambda c: F.col(f"o.`{c}`")), (lambda c: F.col(f"d.`{c}`"))
    # A recomputed group with no source row left has no `r` row: count 0, so the MERGE deletes
    # it (its other columns are NULL and never stored).
    new_count = F.coalesce(old(COUNT), F.lit(0)) + d("__d_count")
    state = {
        COUNT: F.when(retract, F.coalesce(F.col(f"r.{COUNT}"), F.lit(0))).otherwise(new_count)
        if recompute
        else new_count
    }
    for agg in view.aggregates:
        if agg.kind in ("sum", "avg"):
            total, n = sum_columns(agg)
            new_n = F.coalesce(old(n), F.lit(0)) + d(f"__d_{n}")
            # Once no non-null value is left the sum is NULL (SQL's sum of nothing), whatever
            # rounding residue the additions and subtractions of doubles left behind.
            new_total = F.when(
                new_n > 0,
                F.coalesce(old(total), F.lit(0)) + F.coalesce(d(f"__d_{total}"), F.lit(0)),
            )
            state[n], state[total] = pick(n, new_n), pick(total, new_total)
        elif agg.kind in ("min", "max"):
            combine = F.least if agg.kind == "min" else F.greatest  # both skip NULLs
            state[agg.name] = pick(agg.name, combine(old(agg.name), d(f"__i_{agg.name}")))
        elif agg.kind == "approx_distinct":
            h = hll_column(agg)
            inserted = d(f"__i_{h}")
            state[h] = pick(
                h, F.when(old(h).isNull(), inserted).otherwise(F.hll_union(old(h), inserted))
            )
    stored_types = dict(existing.dtypes)
    new = joined.select(
        *(F.col(f"d.`{k}`").alias(k) for k in view.keys),
        *(col.cast(stored_types[name]).alias(name) for name, col in state.items()),
    )
    return _finalize(new, view)


def transform_compare(
    actual: DataFrame, expected: DataFrame, view: registry.View, rel_tolerance: float = 1e-9
) -> DataFrame:
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
        checks.append(
            (agg.name, differs(a(agg.name), e(agg.name), types[agg.name] in ("double", "float")))
        )
        if agg.kind in ("sum", "avg"):
            n = sum_columns(agg)[1]
            checks.append((n, differs(a(n), e(n), False)))
        if agg.kind == "approx_distinct":
            h = hll_column(agg)
            checks.append((h, differs(hll_estimate(a(h)), hll_estimate(e(h)), False)))
    names = F.filter(
        F.array(*(F.when(cond, F.lit(name)) for name, cond in checks)), lambda x: x.isNotNull()
    )
    shown = [*(agg.name for agg in view.aggregates), COUNT]

    def side(col: Any, alias: str) -> Column:
        return F.when(col(COUNT).isNotNull(), F.struct(*(col(c).alias(c) for c in shown))).alias(
            alias
        )

    joined = actual.alias("a").join(
        expected.alias("e"), null_safe_join("a", "e", view.keys), "full_outer"
    )
    return joined.select(
        *(F.coalesce(a(k), e(k)).alias(k) for k in view.keys),
        names.alias("__differs"),
        side(a, "__view"),
        side(e, "__expected"),
    ).filter(F.size("__differs") > 0)


# -- timestamps to and from the driver ----------------------------------------------------------
# What the engine collects to the driver carries no TIMESTAMP. PySpark turns one into a naive
# datetime in the driver process's local zone (TZ), and a naive datetime back through that zone;
# the night that zone's clocks fall back, two instants an hour apart (00:30Z and 01:30Z in
# Europe/Berlin) are the same wall-clock time, and a spring-forward gap shifts others by an
# hour. Sent as its epoch microseconds (``unix_micros``) and made a timestamp again by Spark
# (``timestamp_micros``), an instant is exact in whatever zone the driver runs. TIMESTAMP_NTZ
# is a wall-clock time PySpark converts without a zone: it needs no detour.


def has_timestamp(dtype: DataType) -> bool:
    """Whether values of ``dtype`` are or hold (in a struct, array or map) a TIMESTAMP."""
    from pyspark.sql import types as T

    if isinstance(dtype, T.StructType):
        return any(has_timestamp(f.dataType) for f in dtype.fields)
    if isinstance(dtype, T.ArrayType):
        return has_timestamp(dtype.elementType)
    if isinstance(dtype, T.MapType):
        return has_timestamp(dtype.keyType) or has_timestamp(dtype.valueType)
    return isinstance(dtype, T.TimestampType)


def _map_timestamps(column: Column, dtype: DataType, convert: Any) -> Column:
    """``column`` (of type ``dtype``) with ``convert`` applied to every TIMESTAMP inside it."""
    from pyspark.sql import functions as F, types as T

    if not has_timestamp(dtype):
        return column
    if isinstance(dtype, T.TimestampType):
        return convert(column)
    if isinstance(dtype, T.StructType):
        fields = [
            _map_timestamps(column[f.name], f.dataType, convert).alias(f.name) for f in dtype.fields
        ]
        return F.when(column.isNotNull(), F.struct(*fields))
    if isinstance(dtype, T.ArrayType):
        return F.transform(column, lambda x: _map_timestamps(x, dtype.elementType, convert))
    keyed = F.transform_keys(column, lambda k, _: _map_timestamps(k, dtype.keyType, convert))
    return F.transform_values(keyed, lambda _, v: _map_timestamps(v, dtype.valueType, convert))


def instants_to_micros(column: Column, dtype: DataType) -> Column:
    """``column`` (of type ``dtype``) with every TIMESTAMP in it as its epoch microseconds."""
    from pyspark.sql import functions as F

    return _map_timestamps(column, dtype, F.unix_micros)


def transform_to_micros(df: DataFrame) -> DataFrame:
    """``df`` as it may be collected to the driver: every TIMESTAMP (nested ones too) as its
    epoch microseconds, a BIGINT; the other columns as they are.

    A row ``(home, 2026-10-25 01:00:00Z)`` of ``page_id string, hour timestamp`` gives
    ``(home, 1792890000000000)`` of ``page_id string, hour bigint``.
    """
    from pyspark.sql import functions as F

    return df.select(
        *(instants_to_micros(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in df.schema)
    )


def transform_from_micros(df: DataFrame, schema: StructType) -> DataFrame:
    """The inverse of :func:`transform_to_micros`: ``df`` (rows it gave, collected and made a
    DataFrame again) with the timestamps of ``schema`` (the schema it was given) restored."""
    from pyspark.sql import functions as F

    return df.select(
        *(
            _map_timestamps(F.col(f"`{f.name}`"), f.dataType, F.timestamp_micros).alias(f.name)
            for f in schema
        )
    )
