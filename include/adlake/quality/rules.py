"""What each gold table and view must satisfy: its expectations, as neutral data (no GX here).

Two sources, in this order in every suite:

1. **The registry** (:func:`registry_rules`), where it already knows the rule. For a gold table:
   every required field not null; its keys unique (compound) in the validated slice; a column of
   :data:`~adlake.registry.COLUMN_ENUMERATIONS` (``record_type``...) within its values; every
   numeric column non-negative (counts, amounts and rates are); the partition column within the
   interval's event dates. For a view: keys not null and unique; counts and sketches present and
   non-negative; aggregates of a field the payload rules declare non-negative
   (:data:`adlake.payload_rules.NON_NEGATIVE`) non-negative; the count aggregate's total equal to the
   source's row count at the version the view reflects.
2. **Business rules** (:func:`business_rules`), written by hand, each with why it holds or why it
   is only a ``warn``, on what they are about: a gold table's in its module
   (:mod:`adlake.catalog.gold`), a view's on its entry (``View.rules``); collected here. Some need a value computed from the row first (a match rate, a window's length):
   :data:`DERIVED_COLUMNS` declares them as Spark SQL expressions, added by the quality job
   before validation under a ``dq_`` name.

The rule types and the suite parameters (values only known at run time, supplied by the quality
job) are :mod:`adlake.catalog.expectations`.

Every rule has a stable name, its type and identifying arguments, which is what ``dq_results``
records as the expectation:

>>> suite_rules("page_traffic")[0].name
'expect_column_values_to_not_be_null(column=page_id)'
>>> [r.name for r in suite_rules("attribution_reconciliation") if r.severity == "warn"]
['expect_column_values_to_be_between(column=dq_match_rate, min_value=$min_match_rate)']
"""

from __future__ import annotations

from typing import Any

from adlake import payload_rules, registry
from adlake.catalog import gold
from adlake.catalog.expectations import (
    FIRST_DAY,
    LAST_DAY,
    SOURCE_ROWS,
    Rule,
    expect,
    param,
)

_NUMERIC = ("long", "int", "double")


def _unique(keys: tuple[str, ...]) -> Rule:
    if len(keys) == 1:
        return expect("column_values_to_be_unique", column=keys[0])
    return expect("compound_columns_to_be_unique", column_list=list(keys))


def _non_negative(column: str) -> Rule:
    return expect("column_values_to_be_between", column=column, min_value=0)


# -- business rules ----------------------------------------------------------------------------

# Columns computed from each row before validation: (name, Spark SQL expression) per suite.
DERIVED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    m.TABLE.name: m.DERIVED_COLUMNS for m in gold.MODELS if m.DERIVED_COLUMNS
}


def business_rules(name: str) -> tuple[Rule, ...]:
    """The hand-written rules of gold table or view ``name``, read from where they live: the
    table's module (``BUSINESS_RULES``) or the view's entry (``rules``)."""
    if name in registry.VIEWS:
        return registry.view(name).rules
    return gold.model(name).BUSINESS_RULES if name in gold.NAMES else ()


# -- from the registry -------------------------------------------------------------------------


def _gold_rules(table: registry.Table) -> list[Rule]:
    schema = table.schema
    out = [expect("column_values_to_not_be_null", column=name) for name in schema.required]
    out.append(_unique(table.keys))
    out += [
        expect(
            "column_values_to_be_in_set",
            column=f.name,
            value_set=list(registry.COLUMN_ENUMERATIONS[f.name]),
        )
        for f in schema.fields
        if f.name in registry.COLUMN_ENUMERATIONS
    ]
    out += [_non_negative(f.name) for f in schema.fields if f.type in _NUMERIC]
    out += [
        expect(
            "column_values_to_be_between",
            column=name,
            min_value=param(FIRST_DAY),
            max_value=param(LAST_DAY),
        )
        for name in table.partition_by
        if schema.field(name).type == "date"
    ]
    return out


def count_aggregate(view: registry.View) -> str:
    """The view's ``count`` aggregate column (every view has one: the engine needs it).

    >>> count_aggregate(registry.view("page_clicks_hourly"))
    'clicks'
    """
    return next(a.name for a in view.aggregates if a.kind == "count")


def _view_rules(view: registry.View) -> list[Rule]:
    source = registry.table(view.source)
    topic = view.source.removeprefix("silver_")
    out = [expect("column_values_to_not_be_null", column=k) for k in view.keys]
    out.append(_unique(view.keys))
    for agg in view.aggregates:
        if agg.kind in ("count", "approx_distinct"):
            out += [
                expect("column_values_to_not_be_null", column=agg.name),
                _non_negative(agg.name),
            ]
        elif (
            source.schema.field(agg.column).type in _NUMERIC
            and (topic, agg.column) in payload_rules.NON_NEGATIVE
        ):
            out.append(_non_negative(agg.name))
    out.append(
        expect(
            "column_sum_to_be_between",
            column=count_aggregate(view),
            min_value=param(SOURCE_ROWS),
            max_value=param(SOURCE_ROWS),
        )
    )
    return out


GOLD_SUITES = gold.NAMES
VIEW_SUITES = tuple(registry.VIEWS)
SUITES = GOLD_SUITES + VIEW_SUITES


def registry_rules(name: str) -> list[Rule]:
    """The rules the registry implies for gold table or view ``name``."""
    if name in registry.VIEWS:
        return _view_rules(registry.view(name))
    table = registry.table(name)
    if table.layer != "gold":
        raise KeyError(
            f"{name!r} is a {table.layer} table; suites cover gold tables and views: "
            f"{', '.join(SUITES)}"
        )
    return _gold_rules(table)


def suite_rules(name: str) -> tuple[Rule, ...]:
    """Every rule of suite ``name`` (a gold table or a view): the registry's, then the business
    rules; two rules with the same name are refused."""
    rules = [*registry_rules(name), *business_rules(name)]
    seen: set[str] = set()
    for rule in rules:
        if rule.name in seen:
            raise ValueError(f"suite {name!r}: rule {rule.name} declared twice")
        seen.add(rule.name)
    return tuple(rules)


def parameters(name: str) -> tuple[str, ...]:
    """The suite parameters suite ``name`` refers to, in first-use order."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict) and set(value) == {"$PARAMETER"}:
            if value["$PARAMETER"] not in found:
                found.append(value["$PARAMETER"])
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for rule in suite_rules(name):
        walk(dict(rule.kwargs))
    return tuple(found)
