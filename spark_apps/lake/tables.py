"""Delta tables of the registry: where they live and how they are created.

Every table is a path under ``settings.tables_dir`` (no metastore needed), created from its
registry schema with its partitioning and, for the sources of views, Change Data Feed on.

>>> ensure_table(spark, settings, registry.table("silver_page_clicks"))   # doctest: +SKIP
'/…/.runtime/tables/silver_page_clicks'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def table_path(settings: Settings, table: registry.Table | str) -> str:
    name = table if isinstance(table, str) else table.name
    return str(settings.table_path(name))


def ensure_table(spark: SparkSession, settings: Settings, table: registry.Table) -> str:
    """Create ``table`` (empty) if it does not exist; return its path. Idempotent."""
    from delta.tables import DeltaTable

    path = table_path(settings, table)
    if table.schema is None:
        raise ValueError(f"table {table.name!r} has no schema in the registry")
    builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(table.schema.spark())
    if table.partition_by:
        builder = builder.partitionedBy(*table.partition_by)
    if table.change_feed:
        builder = builder.property("delta.enableChangeDataFeed", "true")
    builder.execute()
    return path


def delta_snapshot(spark: SparkSession, path: str) -> Any:
    """The latest snapshot (JVM ``Snapshot``) of the Delta table at ``path``: Delta lists the log
    and reuses the state it already holds for the table, so this runs no Spark job, where reading
    ``history()`` costs a DataFrame and half a second."""
    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path).update(
        False, none, none
    )


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    return spark.read.format("delta").load(table_path(settings, registry.table(name)))
