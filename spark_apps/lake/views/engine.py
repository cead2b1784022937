"""The incremental refresh of a view, :func:`refresh`: the source's change feed since the version
the view reflects, aggregated per group and MERGEd into the view. A view never refreshed gets a
:func:`~spark_apps.lake.views.recompute.full_refresh`. The algorithm and its exactly-once
argument are in the package docstring (:mod:`spark_apps.lake.views`)."""

from __future__ import annotations

import time
from functools import reduce
from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.config import Settings
from adlake.frames import is_connect, null_safe_join
from spark_apps.lake.tables import table_path
from spark_apps.lake.views.bookkeeping import (
    committed_version,
    merge_into_view,
    read_changes,
    read_version,
    record_progress,
    recorded_version,
    table_version,
    view_state,
)
from spark_apps.lake.views.layout import COUNT, needs_recompute
from spark_apps.lake.views.recompute import full_refresh, require_source, source_path
from spark_apps.lake.views.results import (
    ChangeFeedUnavailable,
    InjectedFailure,
    RefreshReport,
    SourceRewound,
    ViewInconsistent,
)
from spark_apps.lake.views.transforms import (
    instants_to_micros,
    transform_aggregate,
    transform_change_groups,
    transform_changes,
    transform_from_micros,
    transform_new_state,
    transform_project,
    transform_to_micros,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

FAIL_POINTS = ("before_merge", "after_merge")
# The recompute filters the source on a key column's values only up to this many of them.
KEY_FILTER_LIMIT = 1000
# Up to this many touched groups, the new state is collected and merged from a local relation.
LOCAL_MERGE_GROUPS = 10_000


def jobs_started(spark: SparkSession) -> int | None:
    """How many Spark jobs this application has started so far (the scheduler's next job id):
    the difference around a step is the number of jobs it ran. None over Spark Connect (the
    lake engine), where the client has no JVM to ask."""
    if is_connect(spark):
        return None
    return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())


def _plain_keys(view: registry.View) -> list[str]:
    """The keys that are source columns as they are (not derived by an expression)."""
    return [k for k in view.keys if k not in dict(view.key_exprs)]


def _value_set(
    key: Column, dtype: DataType, name: str, where: Column | None = None
) -> list[Column]:
    """Aggregates over the change groups (those where ``where`` holds; all when None) giving the
    distinct values of ``key`` (``__values_<name>``, one more than :func:`_in_value_set` takes,
    to say "too many" without shipping them all) and whether one of them is NULL
    (``__null_<name>``), computed by the same job as the change's statistics. The values go to
    the driver: a timestamp (``dtype``) as its epoch microseconds, never as a Python datetime
    (see :func:`~spark_apps.lake.views.transforms.instants_to_micros`)."""
    from pyspark.sql import functions as F

    value, is_null = instants_to_micros(key, dtype), key.isNull()
    if where is not None:
        value, is_null = F.when(where, value), F.when(where, is_null)
    return [
        F.slice(F.collect_set(value), 1, KEY_FILTER_LIMIT + 1).alias(f"__values_{name}"),
        F.coalesce(F.max(is_null), F.lit(False)).alias(f"__null_{name}"),
    ]


def _in_value_set(column: Column, dtype: DataType, stats: Any, name: str) -> Column | None:
    """``column`` (of type ``dtype``) takes one of the values :func:`_value_set` collected as
    ``name`` (or is NULL where one of them was); None past ``KEY_FILTER_LIMIT`` values. A
    timestamp is made from its microseconds by Spark, which folds it into a literal: Delta skips
    files by it as by any literal."""
    from pyspark.sql import functions as F, types as T

    values = stats[f"__values_{name}"]
    if len(values) > KEY_FILTER_LIMIT:
        return None
    if isinstance(dtype, T.TimestampType):
        values = [F.timestamp_micros(F.lit(v)) for v in values]
    cond = column.isin(list(values))
    return cond | column.isNull() if stats[f"__null_{name}"] else cond


def _change_value_sets(
    view: registry.View, types: dict[str, DataType], retracting: Column
) -> list[Column]:
    """What the two filters below need: the values of each plain key among the groups with a
    retraction (``retracted_<key>``), and of the time key among all touched groups
    (``touched``). ``types``: the keys' types (:func:`_types` of the change groups)."""
    from pyspark.sql import functions as F

    time_key = view.time_key
    return [
        *(
            agg
            for k in _plain_keys(view)
            for agg in _value_set(F.col(f"`{k}`"), types[k], f"retracted_{k}", retracting)
        ),
        *_value_set(F.col(f"`{time_key}`"), types[time_key], "touched"),
    ]


def _key_filter(view: registry.View, types: dict[str, DataType], stats: Any) -> Column | None:
    """A filter on the source keeping the rows whose plain key columns take the values of the
    groups to recompute (``stats``: a row with the columns of :func:`_change_value_sets`), for
    every such column with at most ``KEY_FILTER_LIMIT`` distinct values there. It is implied by the semi
    join that follows; it is there for Delta, which turns it into partition pruning
    (``event_date`` of a silver table) or file skipping by column statistics, so the recompute
    reads the affected files, not the table. Where keys are NULL, ``IS NULL`` is kept too."""
    from pyspark.sql import functions as F

    conds = [
        c
        for k in _plain_keys(view)
        if (c := _in_value_set(F.col(f"`{k}`"), types[k], stats, f"retracted_{k}")) is not None
    ]
    return reduce(lambda a, b: a & b, conds) if conds else None


def _view_filter(
    view: registry.View, types: dict[str, DataType], stats: Any, alias: str | None = None
) -> Column | None:
    """A filter on the view's table keeping the rows whose time key takes a value of a touched
    group (``stats``: a row with the columns of :func:`_change_value_sets`), or None past
    ``KEY_FILTER_LIMIT`` values. Every group the MERGE can match passes it, so it changes no
    result; Delta turns it into file skipping by the column's statistics, which the view's
    layout (``VIEW_FILES`` ranges of the time key) makes selective: the MERGE and the read of
    the stored state scan the touched dates' files, not the view."""
    from pyspark.sql import functions as F

    key, dtype = f"`{view.time_key}`", types[view.time_key]
    return _in_value_set(F.col(f"{alias}.{key}" if alias else key), dtype, stats, "touched")


def _view_filter_sql(
    view: registry.View, types: dict[str, DataType], stats: Any, alias: str
) -> str | None:
    """:func:`_view_filter` as SQL text, for the MERGE's condition (Delta SQL)."""
    from pyspark.sql import types as T

    values = stats["__values_touched"]
    if len(values) > KEY_FILTER_LIMIT:
        return None
    dtype, column = types[view.time_key], f"{alias}.`{view.time_key}`"
    if isinstance(dtype, T.TimestampType):  # epoch microseconds: no zone on the way
        literals = [f"timestamp_micros({int(v)})" for v in values]
    elif isinstance(dtype, T.DateType):
        literals = [f"DATE'{v.isoformat()}'" for v in values]
    elif isinstance(dtype, T.StringType):
        literals = ["'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values]
    else:
        literals = [repr(v) for v in values]
    cond = f"{column} IN ({', '.join(literals)})" if literals else "false"
    return f"({cond} OR {column} IS NULL)" if stats["__null_touched"] else cond


def _types(df: DataFrame) -> dict[str, DataType]:
    return {f.name: f.dataType for f in df.schema}


def _local_relation(spark: SparkSession, df: DataFrame) -> DataFrame:
    """``df`` computed once and held in the plan as a local relation of its rows. Its
    timestamps go through the driver as epoch microseconds and are made timestamps again by
    Spark (:func:`~spark_apps.lake.views.transforms.transform_to_micros`): as Python datetimes
    they would pass through the driver's local zone, where two groups an hour apart the night
    DST ends become one key (a MERGE with two source rows for one target row)."""
    shipped = transform_to_micros(df)
    return transform_from_micros(
        spark.createDataFrame(shipped.collect(), shipped.schema), df.schema
    )


def refresh(
    spark: SparkSession, settings: Settings, view: registry.View, *, fail_at: str | None = None
) -> RefreshReport:
    """Bring ``view`` up to date with its source's latest version; see the package docstring.

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
    start, jobs_at_start = time.monotonic(), jobs_started(spark)
    src, dst = source_path(settings, view), table_path(settings, view.name)
    # One snapshot of each table (a log listing each, no Spark job): the view's first, so a
    # source version read after it is never older than the one the view reflects.
    # The version the view reflects: recorded in the view's own log, atomically with its
    # content; the progress table only if the view has no such record (see view_state).
    v0, view_version = view_state(spark, settings, view)
    v1 = table_version(spark, src)
    if v1 is None:
        require_source(spark, src, view)  # raises, naming the table to create
    if view_version is None:
        return full_refresh(spark, settings, view)
    if v0 is None:
        v0 = recorded_version(spark, settings, view)
        if v0 is None:
            return full_refresh(spark, settings, view)
    if v1 < v0:
        raise SourceRewound(
            f"view {view.name!r} reflects {view.source} v{v0} but the source is "
            f"at v{v1} (recreated?): run with --full-refresh"
        )
    if v1 == v0:
        notes = ()
        recorded = recorded_version(spark, settings, view)
        if recorded != v0:
            # The last run committed its MERGE but crashed before its bookkeeping.
            record_progress(spark, settings, view, v0)
            notes = (
                f"progress repaired: the view's last commit reflects v{v0}, the progress "
                f"table said {recorded}",
            )
        return RefreshReport(
            view.name, "up_to_date", v0, v1, seconds=time.monotonic() - start, notes=notes
        )

    phases: dict[str, float] = {}
    jobs: dict[str, int] = {}
    lap = [start, jobs_at_start]

    def mark(phase: str) -> None:
        now, started = time.monotonic(), jobs_started(spark)
        phases[phase] = round(now - lap[0], 3)
        if started is not None:
            jobs[phase] = started - lap[1]
        lap[:] = [now, started]

    mark("bookkeeping")
    try:
        changes = transform_changes(read_changes(spark, src, v0 + 1, v1), view)
        delta = transform_change_groups(changes, view).persist()
        types = _types(delta)
        retracting = F.col("__retract")
        stats = delta.agg(
            F.count(F.lit(1)).alias("groups"),
            F.coalesce(F.sum("__rows"), F.lit(0)).alias("rows"),
            F.coalesce(F.sum(retracting.cast("int")), F.lit(0)).alias("retracting"),
            *_change_value_sets(view, types, retracting),
        ).first()
    except AnalysisException as e:
        raise ChangeFeedUnavailable(
            f"view {view.name!r}: cannot read the change feed of {view.source} versions "
            f"{v0 + 1}..{v1}: {e}; run with --full-refresh"
        ) from e
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
            pruning = _key_filter(view, types, stats)
            if pruning is not None:
                source = source.filter(pruning)
            rows = (
                transform_project(source, view)
                .alias("s")
                .join(
                    F.broadcast(keys).alias("k"), null_safe_join("s", "k", view.keys), "left_semi"
                )
            )
            recomputed, n_recompute = transform_aggregate(rows, view), stats.retracting
        # The view as the MERGE will see it: its latest snapshot (the one writer is this run),
        # shared with the MERGE instead of a time-travel snapshot rebuilt from the log.
        existing = spark.read.format("delta").load(dst)
        touched = _view_filter(view, types, stats)
        if touched is not None:
            existing = existing.filter(touched)
        new_state = transform_new_state(delta, existing, recomputed, view)
        # A negative count means the view did not reflect v0 (edited behind the engine's back):
        # fail the MERGE itself rather than spend a pass over the new state checking first.
        inconsistent = (
            f"view {view.name!r}: applying {view.source} v{v0 + 1}..{v1} leaves a "
            f"negative count: the view does not reflect v{v0}; run with "
            "--full-refresh"
        )
        new_state = new_state.withColumn(
            COUNT,
            F.when(F.col(COUNT) >= 0, F.col(COUNT)).otherwise(F.raise_error(F.lit(inconsistent))),
        )
        mark("recompute_keys")
        if fail_at == "before_merge":
            raise InjectedFailure("before_merge")
        try:
            local = 0 < stats.groups <= LOCAL_MERGE_GROUPS
            if local:
                # A small change (the usual hourly case): compute the new state once and MERGE
                # it from a local relation. Delta then neither materializes the MERGE's source
                # (a join reading the view it is about to rewrite) nor plans a shuffle join to
                # find the files it touches: it broadcasts the few rows.
                new_state = _local_relation(spark, new_state)
            metrics = (
                merge_into_view(
                    spark,
                    dst,
                    view,
                    new_state,
                    v1,
                    local=local,
                    target_filter=_view_filter_sql(view, types, stats, "t"),
                )
                if stats.groups
                else None
            )
        except Exception as e:
            if inconsistent in str(e):
                raise ViewInconsistent(inconsistent) from None
            raise
        if stats.groups and metrics is None:
            # Delta skipped the MERGE: a commit with txnVersion >= v1 is already in the view.
            # Either a concurrent refresh of this view committed this change since v0 was read
            # (the view's log now records v1 or later: nothing is left to do, and the progress
            # row below is the same as the winner's), or the txn version belongs to another
            # history of the source (recreated): refuse rather than drop the change silently.
            now = committed_version(spark, settings, view)
            if now is not None and now >= v1:
                record_progress(spark, settings, view, now)
                return RefreshReport(
                    view.name,
                    "up_to_date",
                    v0,
                    now,
                    seconds=time.monotonic() - start,
                    notes=(
                        f"a concurrent refresh applied v{v0 + 1}..v{v1} first; this one skipped it",
                    ),
                )
            raise SourceRewound(
                f"view {view.name!r}: Delta skipped the MERGE for v{v1} as already applied, "
                f"but the view reflects v{v0}: delete {dst} and run with --full-refresh"
            )
        if fail_at == "after_merge":
            # The view now reflects v1 (its commit says so) but the progress table does not.
            raise InjectedFailure("after_merge")
    finally:
        delta.unpersist()
    mark("merge")
    record_progress(spark, settings, view, v1)
    mark("progress")
    return RefreshReport(
        view.name,
        "incremental",
        v0,
        v1,
        change_rows=stats.rows,
        groups_touched=stats.groups,
        groups_recomputed=n_recompute,
        merge=metrics,
        seconds=time.monotonic() - start,
        phases=phases,
        jobs=jobs,
    )
