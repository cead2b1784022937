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
2. **Business rules** (:data:`BUSINESS_RULES`), written here by hand, each with why it holds or
   why it is only a ``warn``. Some need a value computed from the row first (a match rate, a
   window's length): :data:`DERIVED_COLUMNS` declares them as Spark SQL expressions, added by the
   quality job before validation under a ``dq_`` name.

Values only known at run time are GX suite parameters (``{"$PARAMETER": name}``), supplied by the
quality job: the interval's dates (:data:`FIRST_DAY` ...), the configured minimum match rate
(:data:`MIN_MATCH_RATE`, ``ADLAKE_DQ_MIN_MATCH_RATE``), a view's source row count
(:data:`SOURCE_ROWS`). So the committed suites do not change with the configuration.

Every rule has a stable name, its type and identifying arguments, which is what ``dq_results``
records as the expectation:

>>> suite_rules("page_traffic")[0].name
'expect_column_values_to_not_be_null(column=page_id)'
>>> [r.name for r in suite_rules("attribution_reconciliation") if r.severity == "warn"]
['expect_column_values_to_be_between(column=dq_match_rate, min_value=$min_match_rate)']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adlake import payload_rules, registry
from adlake.quality import ERROR, SEVERITIES, WARN

# Suite parameters, supplied at run time by the quality job (spark_apps/lake/quality.py).
FIRST_DAY = "first_day"  # the first event date the interval touches (ISO date)
LAST_DAY = "last_day"  # the last one (inclusive)
DAY_START = "day_start"  # midnight starting FIRST_DAY (ISO timestamp, UTC)
DAY_END = "day_end"  # midnight ending LAST_DAY (exclusive)
MIN_MATCH_RATE = "min_match_rate"  # Settings.dq_min_match_rate
SOURCE_ROWS = "source_rows"  # a view's source rows at the version the view reflects
GOLD_PARAMETERS = (FIRST_DAY, LAST_DAY, DAY_START, DAY_END, MIN_MATCH_RATE)
VIEW_PARAMETERS = (SOURCE_ROWS,)

_NUMERIC = ("long", "int", "double")


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


def _unique(keys: tuple[str, ...]) -> Rule:
    if len(keys) == 1:
        return expect("column_values_to_be_unique", column=keys[0])
    return expect("compound_columns_to_be_unique", column_list=list(keys))


def _non_negative(column: str) -> Rule:
    return expect("column_values_to_be_between", column=column, min_value=0)


# -- business rules --------------------------------------------------------------------------

_SURGE_THRESHOLD = registry.app("click_surge").knob("threshold").default

# Columns computed from each row before validation: (name, Spark SQL expression) per suite.
DERIVED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "attribution_reconciliation": (
        ("dq_match_rate", "matched / nullif(matched + missing_in_realtime + extra_in_realtime, 0)"),
    ),
    "surge_history": (
        ("dq_window_seconds", "(unix_millis(window_end) - unix_millis(window_start)) / 1000.0"),
    ),
}

BUSINESS_RULES: dict[str, tuple[Rule, ...]] = {
    "campaign_delivery": (
        expect(
            "column_values_to_be_between",
            column="hour",
            min_value=0,
            max_value=23,
            description="An hour of the day, UTC.",
        ),
        # A callback counts in its own hour for an impression that may lie in the hour (or the
        # day) before, so an hour can show a click and no impression: a warn, not an error.
        at_least(
            "impressions",
            "clicks",
            WARN,
            "Impressions ≥ clicks in the row's hour (a click just after an hour boundary "
            "counts in the next hour, so this can fail on good data).",
        ),
        at_least(
            "impressions",
            "completes",
            WARN,
            "Impressions ≥ completes in the row's hour (as for clicks).",
        ),
    ),
    "attribution_funnel": (
        # A count is at least the count of distinct requests among the same rows: always.
        at_least(
            "impressions",
            "filled_requests",
            ERROR,
            "Impressions ≥ filled requests: each filled request has an impression.",
        ),
        expect(
            "column_values_to_not_be_null",
            ERROR,
            "The day's total row ('*') carries the day's requests.",
            column="requests",
            row_condition=where("campaign_id", "==", "*"),
        ),
        expect(
            "column_values_to_be_null",
            ERROR,
            "A campaign's row has no requests (a request has no campaign until filled).",
            column="requests",
            row_condition=where("campaign_id", "!=", "*"),
        ),
        expect(
            "column_values_to_be_null",
            ERROR,
            "A campaign's row has no fill rate (only the day's total has one).",
            column="fill_rate",
            row_condition=where("campaign_id", "!=", "*"),
        ),
        # Clicks and conversions of date D may belong to impressions of D-1 (the attribution
        # window crosses midnight), and the '*' row counts unpaired callbacks too: warns.
        at_least(
            "impressions",
            "clicks",
            WARN,
            "Funnel: impressions ≥ clicks (callbacks after midnight count on their own date).",
        ),
        at_least(
            "clicks",
            "conversions",
            WARN,
            "Funnel: clicks ≥ conversions (a conversion needs no click in the data model).",
        ),
        at_least(
            "requests",
            "filled_requests",
            WARN,
            "The day's requests ≥ its filled requests (an impression just after midnight "
            "fills a request of the day before).",
            row_condition=where("campaign_id", "==", "*"),
        ),
    ),
    "page_traffic": (
        at_least(
            "clicks",
            "distinct_users",
            ERROR,
            "Clicks ≥ distinct users: each user counted clicked at least once.",
        ),
        expect(
            "column_values_to_be_between",
            ERROR,
            "Each minute lies within the event dates the interval touches.",
            column="minute",
            min_value=param(DAY_START),
            max_value=param(DAY_END),
            strict_max=True,
        ),
    ),
    "surge_history": (
        expect(
            "column_values_to_be_between",
            ERROR,
            f"Windows are click_surge's tumbling {registry.SURGE_WINDOW_S}-second windows.",
            column="dq_window_seconds",
            min_value=registry.SURGE_WINDOW_S,
            max_value=registry.SURGE_WINDOW_S,
        ),
        expect(
            "column_values_to_be_between",
            ERROR,
            "Each window starts within the event dates the interval touches.",
            column="window_start",
            min_value=param(DAY_START),
            max_value=param(DAY_END),
            strict_max=True,
        ),
        # The app may be started with a lower threshold (its trigger form's knob; `make up
        # THRESHOLD=50`), so only the default is known here: a warn.
        expect(
            "column_values_to_be_between",
            WARN,
            f"A surge's count is above click_surge's default threshold ({_SURGE_THRESHOLD}); "
            "an app started with a lower threshold reports smaller surges.",
            column="click_count",
            min_value=_SURGE_THRESHOLD,
            strict_min=True,
        ),
    ),
    "attribution_reconciliation": (
        expect(
            "column_values_to_be_between",
            WARN,
            "Batch and real-time attribution agree on at least ADLAKE_DQ_MIN_MATCH_RATE of "
            "the records of each date and type (the stream may lag or drop late events).",
            column="dq_match_rate",
            min_value=param(MIN_MATCH_RATE),
        ),
    ),
    "campaign_daily_totals": (
        at_least(
            "max_price", "min_price", ERROR, "A group's highest price is at least its lowest."
        ),
    ),
    "page_clicks_hourly": (
        at_least(
            "last_click", "first_click", ERROR, "A group's last click is not before its first."
        ),
        at_least(
            "clicks",
            "users",
            WARN,
            "Clicks ≥ users (users is an HLL estimate, so it may overshoot a little).",
        ),
    ),
    "household_reach_by_geo": (
        at_least(
            "requests", "households", WARN, "Requests ≥ households (households is an HLL estimate)."
        ),
    ),
}


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


GOLD_SUITES = tuple(t.name for t in registry.TABLES.values() if t.layer == "gold")
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
    rules = [*registry_rules(name), *BUSINESS_RULES.get(name, ())]
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
