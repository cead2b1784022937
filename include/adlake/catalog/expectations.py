"""The vocabulary of a quality rule: one expectation as neutral data (no GX, no registry).

A gold-table module (:mod:`adlake.catalog.gold`) and a view's entry (``View.rules``) write their
business rules with it, and :mod:`adlake.quality.rules` the rules it derives from the catalog;
:mod:`adlake.quality.project` turns each :class:`Rule` into a GX expectation. Standard library
only, part of the catalog: nothing here imports another catalog module.

Values only known at run time are GX suite parameters (``{"$PARAMETER": name}``, :func:`param`),
supplied by the quality job (``spark_apps/lake/quality.py``): the interval's dates
(:data:`FIRST_DAY` ...), the configured minimum match rate (:data:`MIN_MATCH_RATE`,
``ADLAKE_DQ_MIN_MATCH_RATE``), a view's source row count (:data:`SOURCE_ROWS`). So the committed
suites do not change with the configuration.

>>> at_least("impressions", "clicks", WARN).name
'expect_column_pair_values_a_to_be_greater_than_b(column_A=impressions, column_B=clicks, \
or_equal=true)'
>>> expect("column_values_to_be_between", column="minute", min_value=param(DAY_START)).name
'expect_column_values_to_be_between(column=minute, min_value=$day_start)'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A rule's severity: an error fails the quality task (and holds its table back), a warn is recorded.
ERROR, WARN = "error", "warn"
SEVERITIES = (ERROR, WARN)

# Suite parameters, supplied at run time by the quality job (spark_apps/lake/quality.py).
FIRST_DAY = "first_day"  # the first event date the interval touches (ISO date)
LAST_DAY = "last_day"  # the last one (inclusive)
DAY_START = "day_start"  # midnight starting FIRST_DAY (ISO timestamp, UTC)
DAY_END = "day_end"  # midnight ending LAST_DAY (exclusive)
MIN_MATCH_RATE = "min_match_rate"  # Settings.dq_min_match_rate
SOURCE_ROWS = "source_rows"  # a view's source rows at the version the view reflects
GOLD_PARAMETERS = (FIRST_DAY, LAST_DAY, DAY_START, DAY_END, MIN_MATCH_RATE)
VIEW_PARAMETERS = (SOURCE_ROWS,)
# What a module writing rules takes from here, the severities (adlake.quality's) included.
__all__ = [
    "DAY_END",
    "DAY_START",
    "ERROR",
    "FIRST_DAY",
    "GOLD_PARAMETERS",
    "LAST_DAY",
    "MIN_MATCH_RATE",
    "SEVERITIES",
    "SOURCE_ROWS",
    "VIEW_PARAMETERS",
    "WARN",
    "Rule",
    "at_least",
    "expect",
    "param",
    "where",
]


def param(name: str) -> dict[str, str]:
    """A suite parameter reference, as GX stores it."""
    return {"$PARAMETER": name}


def where(column: str, operator: str, value: Any) -> dict[str, Any]:
    """A GX row condition (the serialized form of ``gx.expectations.row_conditions``): the rule
    applies to the rows where ``column <operator> value`` only.

    >>> where("campaign_id", "==", "*")
    {'column': {'name': 'campaign_id'}, 'operator': '==', 'parameter': '*', 'type': 'comparison'}
    """
    if operator not in ("==", "!=", "<", "<=", ">", ">="):
        raise ValueError(f"row condition operator {operator!r} is not a comparison")
    return {
        "column": {"name": column},
        "operator": operator,
        "parameter": value,
        "type": "comparison",
    }


@dataclass(frozen=True)
class Rule:
    """One expectation: a GX expectation ``type`` (snake case) with its ``kwargs``, a severity
    and, for a hand-written rule, a description (Data Docs shows it)."""

    type: str
    kwargs: Mapping[str, Any] = field(hash=False)
    severity: str = ERROR
    description: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.type}: severity {self.severity!r} not in {SEVERITIES}")
        if not self.type.startswith("expect_"):
            raise ValueError(f"{self.type!r} is not a GX expectation type")

    @property
    def name(self) -> str:
        """The stable identity of the rule: type and arguments, parameters by name.

        >>> Rule("expect_column_values_to_be_between",
        ...      {"column": "hour", "min_value": 0, "max_value": 23}).name
        'expect_column_values_to_be_between(column=hour, min_value=0, max_value=23)'
        """
        args = ", ".join(f"{k}={_render(v)}" for k, v in self.kwargs.items())
        return f"{self.type}({args})"


def _render(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"$PARAMETER"}:
        return "$" + value["$PARAMETER"]
    if isinstance(value, dict) and value.get("type") == "comparison":
        return f"{value['column']['name']} {value['operator']} {value['parameter']!r}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def expect(
    type_: str, severity: str = ERROR, description: str | None = None, **kwargs: Any
) -> Rule:
    """Rule ``expect_<type_>`` with ``kwargs`` as its arguments, in the order given."""
    return Rule(f"expect_{type_}", kwargs, severity, description)


def at_least(
    column_a: str,
    column_b: str,
    severity: str = ERROR,
    description: str | None = None,
    **kwargs: Any,
) -> Rule:
    """``column_a >= column_b`` in every row (rows where both are null are skipped)."""
    return expect(
        "column_pair_values_a_to_be_greater_than_b",
        severity,
        description,
        column_A=column_a,
        column_B=column_b,
        or_equal=True,
        **kwargs,
    )
