"""DataFrame helpers every Spark program may use: the lake's jobs, the view engine and the gold
tables' modules (:mod:`adlake.catalog.gold`). No import of the registry or of either runtime's apps, so
any of them can import this module without a cycle; PySpark is imported inside the functions."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column


def null_safe_join(left: str, right: str, keys: Sequence[str]) -> Column:
    """The condition joining the DataFrame aliased ``left`` to the one aliased ``right`` on
    ``keys``, where a null key equals a null key (``<=>``), as ``GROUP BY`` groups them: an
    ``attributed_events`` record without an impression id, a view's group with a null key.

    ``null_safe_join("t", "s", ["request_id", "impression_id"])`` is
    ``t.request_id <=> s.request_id AND t.impression_id <=> s.impression_id``: a join condition
    (``a.alias("t").join(b.alias("s"), null_safe_join("t", "s", keys), "full_outer")``) or a
    Delta MERGE's. Spark plans it as an equi-join, as it does ``=``. Each side keeps its own key
    columns (``t.<key>``, ``s.<key>``): in an outer join the side without a match has them null.
    """
    from pyspark.sql import functions as F

    return reduce(
        lambda a, b: a & b,
        [F.col(f"{left}.`{k}`").eqNullSafe(F.col(f"{right}.`{k}`")) for k in keys],
    )


def null_safe_sql(left: str, right: str, keys: Sequence[str]) -> str:
    """:func:`null_safe_join` as SQL text, for a statement (a Delta ``MERGE INTO``).

    >>> null_safe_sql("t", "s", ["request_id", "impression_id"])
    't.`request_id` <=> s.`request_id` AND t.`impression_id` <=> s.`impression_id`'
    """
    return " AND ".join(f"{left}.`{k}` <=> {right}.`{k}`" for k in keys)


def is_connect(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (a client of the lake engine): no JVM on
    this side, so nothing may reach for one (``sparkContext``, ``_jvm``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
