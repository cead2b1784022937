"""A view recomputed from its source at one version: :func:`full_refresh` writes it as the view's
table, :func:`verify` compares the table with it. The incremental refresh
(:mod:`~spark_apps.lake.views.engine`) falls back to a full refresh; the algorithm and its
exactly-once argument are in the package docstring (:mod:`spark_apps.lake.views`)."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.config import Settings
from spark_apps.lake.tables import table_path
from spark_apps.lake.views.bookkeeping import (
    committed_version,
    is_delta,
    latest_version,
    overwrite_view,
    read_version,
    record_progress,
    recorded_version,
    view_state,
)
from spark_apps.lake.views.results import Difference, RefreshReport, ViewNotMaterialized
from spark_apps.lake.views.transforms import (
    has_timestamp,
    transform_aggregate,
    transform_compare,
    transform_project,
    transform_to_micros,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType

# A full refresh writes the view as this many ranges of its time key (registry.View.time_key),
# each a file whose statistics span a few dates: a change touching a day's groups makes the
# MERGE scan and rewrite that day's file, not the whole view.
VIEW_FILES = 32


def source_path(settings: Settings, view: registry.View) -> str:
    """Where ``view``'s source is: resolved by name under the settings' tables directory, so a
    test can declare a View over a table of its own under tmp_path without touching the
    registry."""
    return table_path(settings, view.source)


def require_source(spark: SparkSession, path: str, view: registry.View) -> None:
    """Fail, naming the table to create, when ``view``'s source at ``path`` is no Delta table."""
    if not is_delta(spark, path):
        raise FileNotFoundError(
            f"view {view.name!r}: its source {view.source!r} is not a Delta "
            f"table at {path}; create it first (spark_apps.lake.tables)"
        )


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
    from pyspark.sql import functions as F

    start = time.monotonic()
    src, dst = source_path(settings, view), table_path(settings, view.name)
    require_source(spark, src, view)
    version = latest_version(spark, src)
    notes = []
    previous = committed_version(spark, settings, view)
    if previous is not None and version < previous:
        shutil.rmtree(dst)
        notes.append(
            f"source at v{version} is older than the v{previous} the view reflected "
            "(recreated): view table recreated"
        )
        previous = None
    # Persisted: the range partitioning samples its input with a job of its own, which would
    # otherwise aggregate the whole source once more.
    state = transform_aggregate(
        transform_project(read_version(spark, src, version), view), view
    ).persist()
    try:
        overwrite_view(
            spark,
            dst,
            view,
            state.repartitionByRange(VIEW_FILES, F.col(f"`{view.time_key}`")),
            version,
            record_txn=previous is None or version > previous,
        )
    finally:
        state.unpersist()
    record_progress(spark, settings, view, version)
    return RefreshReport(
        view.name, "full", None, version, seconds=time.monotonic() - start, notes=tuple(notes)
    )


def verify(
    spark: SparkSession, settings: Settings, view: registry.View, *, limit: int = 1000
) -> list[Difference]:
    """Recompute ``view`` in memory from its source at the version the view reflects and list
    the groups that differ (at most ``limit``); an empty list means the view is consistent.

    >>> verify(spark, settings, registry.view("page_clicks_hourly"))        # doctest: +SKIP
    []
    """
    dst = table_path(settings, view.name)
    version, view_version = view_state(spark, settings, view)
    if version is None:
        version = recorded_version(spark, settings, view)
    if version is None or not is_delta(spark, dst):
        raise ViewNotMaterialized(
            f"view {view.name!r} has never been refreshed; run a refresh first"
        )
    src = source_path(settings, view)
    expected = transform_aggregate(transform_project(read_version(spark, src, version), view), view)
    actual = read_version(spark, dst, view_version)
    differences = transform_compare(actual, expected, view)
    # Timestamps (an hour key, a first click) come to the driver as epoch microseconds and
    # become UTC datetimes here: as PySpark's naive local-zone datetimes, two groups an hour
    # apart the night DST ends would be reported as the same group.
    types = {f.name: f.dataType for f in differences.schema}
    rows = transform_to_micros(differences).limit(limit).collect()
    return [
        Difference(
            keys={k: _instants(r[k], types[k]) for k in view.keys},
            columns=tuple(r["__differs"]),
            view=_instants(r["__view"], types["__view"]),
            expected=_instants(r["__expected"], types["__expected"]),
        )
        for r in rows
    ]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _instants(value: Any, dtype: DataType) -> Any:
    """A collected value of :func:`~spark_apps.lake.views.transforms.transform_to_micros`'s
    output whose type was ``dtype``, its timestamps as UTC datetimes (exact: integer
    arithmetic, no local zone) and its structs as dicts.

    >>> from pyspark.sql import types as T
    >>> _instants(1792890000000000, T.TimestampType())
    datetime.datetime(2026, 10, 25, 1, 0, tzinfo=datetime.timezone.utc)
    """
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dtype, T.StructType):
        return {f.name: _instants(value[f.name], f.dataType) for f in dtype.fields}
    if not has_timestamp(dtype):
        return value
    if isinstance(dtype, T.TimestampType):
        return _EPOCH + timedelta(microseconds=value)
    if isinstance(dtype, T.ArrayType):
        return [_instants(v, dtype.elementType) for v in value]
    return {_instants(k, dtype.keyType): _instants(v, dtype.valueType) for k, v in value.items()}
