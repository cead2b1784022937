"""Reading Delta tables and their log, and the bookkeeping of what a view reflects: the latest
version (from the JVM snapshot, no Spark job), pinned reads and the change feed, the
``txnAppId``/``txnVersion`` a view's commits record, the progress table, and the two writes
that record them (a full refresh's overwrite, the idempotent MERGE). See the package docstring
(:mod:`spark_apps.lake.views`) for the exactly-once argument."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings
from adlake.frames import null_safe_sql
from spark_apps.lake.delta_log import DeltaLogError, latest_version as _latest, log_state
from spark_apps.lake.tables import create_table, merge_into, table_path
from spark_apps.lake.views.layout import COUNT, view_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PROGRESS_TABLE = "_view_progress"
# How far back in the view's history to look for the last commit of this engine.
HISTORY_LOOKBACK = 50

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"


def latest_version(spark: SparkSession, path: str) -> int:
    """The latest committed version of the Delta table at ``path``."""
    version = _latest(path)
    if version is None:
        raise DeltaLogError(f"no Delta table at {path}")
    return version


def table_version(spark: SparkSession, path: str) -> int | None:
    """The latest committed version of the Delta table at ``path``, or None when there is no
    Delta table there: one listing of its log, no Spark job (an existence check and a version
    read in one)."""
    return _latest(path)


def read_version(spark: SparkSession, path: str, version: int) -> DataFrame:
    """The table at ``version`` (pinned: a DataFrame over a bare path would see later commits
    each time it is evaluated)."""
    return spark.read.format("delta").option("versionAsOf", version).load(path)


def read_changes(spark: SparkSession, path: str, start: int, end: int) -> DataFrame:
    """The change feed of versions ``start..end`` (both included)."""
    return (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", start)
        .option("endingVersion", end)
        .load(path)
    )


def is_delta(spark: SparkSession, path: str) -> bool:
    """Whether there is a Delta table at ``path`` (a commit in its log)."""
    return _latest(path) is not None


def _progress_path(settings: Settings) -> str:
    return table_path(settings, PROGRESS_TABLE)


def recorded_version(spark: SparkSession, settings: Settings, view: registry.View) -> int | None:
    """The last source version the progress table records for ``view`` (its newest row)."""
    from pyspark.sql import functions as F

    path = _progress_path(settings)
    if not is_delta(spark, path):
        return None
    row = (
        spark.read.format("delta")
        .load(path)
        .filter(F.col("view") == view.name)
        .orderBy(F.col("refreshed_at").desc(), F.col("source_version").desc())
        .select("source_version")
        .first()
    )
    return None if row is None else row.source_version


def committed_version(spark: SparkSession, settings: Settings, view: registry.View) -> int | None:
    """The source version the view table itself records (see :func:`view_state`), or None."""
    return view_state(spark, settings, view)[0]


def _txn_app_id(view: registry.View) -> str:
    return f"view:{view.name}"


def view_state(
    spark: SparkSession, settings: Settings, view: registry.View
) -> tuple[int | None, int | None]:
    """``(source version the view reflects, latest version of the view table)``, both from one
    snapshot of the view table: the ``txnVersion`` its last MERGE or full refresh recorded under
    ``view:<name>``. A table without it (last written before full refreshes recorded it) falls
    back to the ``userMetadata`` of its commits."""
    path = table_path(settings, view.name)
    if _latest(path) is None:  # no Delta table there
        return None, None
    state = log_state(path)
    recorded = state.transactions.get(_txn_app_id(view))
    if recorded is not None:
        return recorded, state.version
    return _view_history(spark, path, view)


def _view_history(
    spark: SparkSession, path: str, view: registry.View
) -> tuple[int | None, int | None]:
    """``(source version in the userMetadata of the engine's newest commit among the last
    ``HISTORY_LOOKBACK``, latest version of the view table)``."""
    rows = (
        spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT {HISTORY_LOOKBACK}")
        .select("version", "userMetadata")
        .orderBy("version", ascending=False)
        .collect()
    )
    for row in rows:
        try:
            meta = json.loads(row.userMetadata or "")
        except ValueError:
            continue
        if isinstance(meta, dict) and meta.get("adlake_view") == view.name:
            return int(meta["source_version"]), rows[0].version
    return None, rows[0].version


def record_progress(
    spark: SparkSession, settings: Settings, view: registry.View, source_version: int
) -> None:
    """Append ``(view, source_version, refreshed_at)`` to the progress table (an append-only log:
    appends of different views never conflict; the newest row of a view is its state)."""
    from pyspark.sql import functions as F, types as T

    schema = T.StructType(
        [
            T.StructField("view", T.StringType()),
            T.StructField("source_version", T.LongType()),
            T.StructField("refreshed_at", T.TimestampType()),
        ]
    )
    path = _progress_path(settings)
    if table_version(spark, path) is None:
        create_table(spark, path, schema)
    # refreshed_at is Spark's clock, never a Python datetime: PySpark would read a naive one in
    # the driver's local zone (TZ), an hour or two off UTC and not even monotonic across a DST
    # change, and the newest row is found by it.
    row = spark.createDataFrame([(view.name, source_version)], schema[:2]).select(
        "view", "source_version", F.current_timestamp().alias("refreshed_at")
    )
    row.write.format("delta").mode("append").save(path)


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


def overwrite_view(
    spark: SparkSession,
    path: str,
    view: registry.View,
    state: DataFrame,
    source_version: int,
    *,
    record_txn: bool = True,
) -> None:
    """Overwrite the view at ``path`` with ``state`` (its full state, laid out as it is to be
    stored), schema included, in one commit whose ``userMetadata`` names ``source_version``.
    With ``record_txn`` the commit also records it as the ``txnVersion`` of ``view:<name>``;
    without it (the view already records that very version), Delta would skip the write as
    already applied."""
    options = {_USER_METADATA: _metadata(view, source_version, "full")}
    if record_txn:
        options |= {_TXN_APP_ID: _txn_app_id(view), _TXN_VERSION: str(source_version)}
    with _commit_options(spark, options):
        state.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)


def merge_into_view(
    spark: SparkSession,
    path: str,
    view: registry.View,
    new_state: DataFrame,
    source_version: int,
    *,
    local: bool = False,
    target_filter: str | None = None,
) -> dict[str, int] | None:
    """MERGE ``new_state`` (``transform_new_state``) into the view at ``path``: update the
    matched groups, insert the new ones, delete the groups whose count is 0. Returns Delta's
    metrics row, or None when Delta skipped the MERGE because a commit with the same
    ``txnAppId``/``txnVersion`` (``view:<name>``, ``source_version``) is already in the view.
    ``local``: ``new_state`` is a local relation (collected rows). ``target_filter``: a SQL
    condition on the view's rows (alias ``t``) that every row a source row matches satisfies;
    added to the join condition, it lets Delta skip the files no source row can match.
    """
    cond = null_safe_sql("t", "s", view.keys)
    if target_filter is not None:
        cond = f"{cond} AND ({target_filter})"
    columns = [f"`{c}`" for c in view_columns(view)]
    clauses = (
        f"WHEN MATCHED AND s.{COUNT} = 0 THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {', '.join(f'{c} = s.{c}' for c in columns)} "
        f"WHEN NOT MATCHED AND s.{COUNT} > 0 THEN INSERT ({', '.join(columns)}) "
        f"VALUES ({', '.join(f's.{c}' for c in columns)})"
    )
    options = {
        _TXN_APP_ID: _txn_app_id(view),
        _TXN_VERSION: str(source_version),
        _USER_METADATA: _metadata(view, source_version, "incremental"),
    }
    if local:
        # A local relation is deterministic and already in memory: nothing to materialize.
        options[_MATERIALIZE_SOURCE] = "none"
    with _commit_options(spark, options):
        rows = merge_into(spark, path, new_state, cond, clauses)
    return rows[0] if rows else None
