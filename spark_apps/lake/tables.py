"""Delta tables of the registry: where they live and how they are created.

Every table is a path under ``settings.tables_dir`` (no metastore needed), created from its
registry schema with its partitioning and, for the sources of views, Change Data Feed on.

>>> ensure_table(spark, settings, registry.table("silver_page_clicks"))   # doctest: +SKIP
'/…/.runtime/tables/silver_page_clicks'
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def table_path(settings: Settings, table: registry.Table | str) -> str:
    name = table if isinstance(table, str) else table.name
    return str(settings.table_path(name))


def ensure_table(spark: SparkSession, settings: Settings, table: registry.Table) -> str:
    """Create ``table`` (empty) if it does not exist; return its path. Idempotent."""
    if table.schema is None:
        raise ValueError(f"table {table.name!r} has no schema in the registry")
    path = table_path(settings, table)
    create_table(
        spark,
        path,
        table.schema.spark(),
        table.partition_by,
        {"delta.enableChangeDataFeed": "true"} if table.change_feed else {},
    )
    return path


def create_table(
    spark: SparkSession,
    path: str,
    schema: StructType,
    partition_by: Sequence[str] = (),
    properties: dict[str, str] | None = None,
) -> None:
    """``CREATE TABLE IF NOT EXISTS`` a Delta table at ``path``: Delta SQL, which runs the same
    in a session of its own and over Spark Connect (Delta's Python ``DeltaTable`` needs Delta's
    Connect plugin in the engine there)."""
    columns = ", ".join(
        f"`{f.name}` {f.dataType.simpleString()}{'' if f.nullable else ' NOT NULL'}"
        for f in schema.fields
    )
    sql = f"CREATE TABLE IF NOT EXISTS delta.`{path}` ({columns}) USING DELTA"
    if partition_by:
        sql += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in partition_by) + ")"
    if properties:
        sql += " TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
        sql += ")"
    spark.sql(sql).collect()


def merge_into(
    spark: SparkSession, path: str, source: DataFrame, on: str, clauses: str
) -> list[dict]:
    """``MERGE INTO`` the Delta table at ``path`` (alias ``t``) ``source`` (alias ``s``) ``ON``
    the SQL condition ``on``, with the ``WHEN ...`` ``clauses``; returns Delta's metrics rows
    (``num_affected_rows``, ``num_inserted_rows`` ...; none when Delta skipped a commit its
    ``txnAppId``/``txnVersion`` says it holds). Delta SQL, for the reason :func:`create_table`
    gives; the source is a temporary view of the session for the statement's time."""
    view = f"adlake_merge_source_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    try:
        rows = spark.sql(
            f"MERGE INTO delta.`{path}` AS t USING {view} AS s ON {on} {clauses}"
        ).collect()
    finally:
        spark.catalog.dropTempView(view)
    return [row.asDict() for row in rows]


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    return spark.read.format("delta").load(table_path(settings, registry.table(name)))
