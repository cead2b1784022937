"""Record a gold table's or a view's newest data time after a commit (:mod:`adlake.freshness`):
one aggregate over the table as committed, pruned to its newest partition when it has one (the
partition's maximum comes from Delta's file statistics, the expression's from that partition's
files only), formatted in the session's zone, UTC: no timestamp passes through Python's zone."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from adlake import freshness
from adlake.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ISO = "yyyy-MM-dd'T'HH:mm:ss'Z'"


def record(spark: SparkSession, settings: Settings, table: str) -> dict:
    """Compute and record ``table``'s newest data time as of its latest Delta version."""
    from pyspark.sql import functions as F

    from spark_apps.lake.delta_log import latest_version
    from spark_apps.lake.tables import table_path

    src = freshness.source(table)
    path = table_path(settings, table)
    version = latest_version(path)
    rows = spark.read.format("delta").option("versionAsOf", version).load(path)
    if src.partition is not None:
        newest_partition = rows.agg(F.max(src.partition)).first()[0]
        if newest_partition is None:
            return freshness.write_record(settings, table, None, version)
        rows = rows.where(F.col(src.partition) == F.lit(newest_partition))
    newest = rows.agg(F.date_format(F.max(F.expr(src.expression).cast("timestamp")), ISO)).first()[
        0
    ]
    return freshness.write_record(settings, table, newest, version)


def record_quietly(spark: SparkSession, settings: Settings, table: str) -> None:
    """:func:`record`, after a commit that stands whatever happens here: a failure is printed
    (the page then shows the previous record's time, or none) and the job goes on."""
    started = time.monotonic()
    try:
        done = record(spark, settings, table)
        print(
            f"[freshness] {table}: newest data {done['newest']} (version {done['version']}, "
            f"{time.monotonic() - started:.2f} s)",
            flush=True,
        )
    except Exception as error:  # noqa: BLE001 - the commit is done; its report must not undo it
        print(f"[freshness] {table}: not recorded: {type(error).__name__}: {error}", flush=True)
