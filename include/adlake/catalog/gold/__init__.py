"""The gold tables, one module each: its declaration, its build and its business rules.

Each module (a :class:`Model`) holds, like a dbt model beside its YAML:

* ``TABLE``, its :class:`~adlake.catalog.types.Table` (schema, keys, the silver tables it reads,
  partitioning, description), which :mod:`adlake.registry` collects with the other tables;
* ``BUSINESS_RULES`` and ``DERIVED_COLUMNS``, the expectations written by hand for it
  (:mod:`adlake.catalog.expectations`), which :mod:`adlake.quality.rules` adds to those it
  derives from ``TABLE``;
* its transforms (DataFrames in, DataFrame out) and ``build(inputs)``, the table's rows of the
  days the gold job (``spark_apps/lake/gold.py``) rebuilds, read through :class:`Inputs`. Its
  docstring says what the partition of a date is made of.

:data:`MODELS` lists them once, in the order the registry, the ``gold`` job, the DAG's quality
gates and the suites take them. A new gold table is a new module here and its entry in
:data:`MODELS`. No module imports the registry (which imports them) or PySpark at module level.

>>> NAMES
('campaign_delivery', 'attribution_funnel', 'page_traffic', 'surge_history', \
'attribution_reconciliation')
>>> model("page_traffic").TABLE.keys
('page_id', 'minute')
"""

from __future__ import annotations

from adlake.catalog.gold import (
    attribution_funnel,
    attribution_reconciliation,
    campaign_delivery,
    page_traffic,
    surge_history,
)
from adlake.catalog.gold.shared import (
    DAY,
    GRAINS,
    HOUR,
    AttributionWindow,
    Inputs,
    Model,
    around,
    covering,
    instant,
    instant_sql,
    rate,
    since,
    slice_condition,
    transform_paired_callbacks,
)
from adlake.catalog.types import Table, lookup

__all__ = [
    "DAY",
    "GRAINS",
    "HOUR",
    "MODELS",
    "NAMES",
    "TABLES",
    "AttributionWindow",
    "Inputs",
    "Model",
    "around",
    "covering",
    "instant",
    "instant_sql",
    "model",
    "rate",
    "since",
    "slice_condition",
    "transform_paired_callbacks",
]

MODELS: tuple[Model, ...] = (
    campaign_delivery,
    attribution_funnel,
    page_traffic,
    surge_history,
    attribution_reconciliation,
)
TABLES: tuple[Table, ...] = tuple(m.TABLE for m in MODELS)
NAMES: tuple[str, ...] = tuple(t.name for t in TABLES)
_BY_NAME = dict(zip(NAMES, MODELS))


def model(name: str) -> Model:
    """The module of gold table ``name``; a KeyError lists the gold tables."""
    return lookup("gold table", _BY_NAME, name)
