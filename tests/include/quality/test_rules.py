"""The rules each suite holds: what the registry implies, and the hand-written ones."""

from __future__ import annotations

import pytest

from adlake import registry
from adlake.catalog.expectations import GOLD_PARAMETERS, VIEW_PARAMETERS, Rule
from adlake.quality import rules
from adlake.quality.rules import DERIVED_COLUMNS, parameters, suite_rules


def names(suite: str, severity: str | None = None) -> list[str]:
    return [r.name for r in suite_rules(suite) if severity in (None, r.severity)]


def test_every_gold_table_and_view_has_a_suite():
    assert set(rules.SUITES) == (
        {t.name for t in registry.TABLES.values() if t.layer == "gold"} | set(registry.VIEWS)
    )


def test_a_gold_suite_follows_the_registry():
    got = names("attribution_reconciliation")
    assert got[:8] == [
        "expect_column_values_to_not_be_null(column=event_date)",
        "expect_column_values_to_not_be_null(column=record_type)",
        "expect_column_values_to_not_be_null(column=matched)",
        "expect_column_values_to_not_be_null(column=missing_in_realtime)",
        "expect_column_values_to_not_be_null(column=extra_in_realtime)",
        "expect_compound_columns_to_be_unique(column_list=[event_date, record_type])",
        "expect_column_values_to_be_in_set(column=record_type, value_set=[attributed_impression,"
        " attributed_callback, request_closed, orphan_impression, orphan_callback])",
        "expect_column_values_to_be_between(column=matched, min_value=0)",
    ]
    assert (
        "expect_column_values_to_be_between(column=event_date, min_value=$first_day, "
        "max_value=$last_day)"
    ) in got


def test_optional_fields_are_not_required_and_the_funnel_rules_say_where_they_are_null():
    got = names("attribution_funnel")
    assert "expect_column_values_to_not_be_null(column=requests)" not in got
    assert (
        "expect_column_values_to_not_be_null(column=requests, row_condition=campaign_id == '*')"
    ) in got
    assert (
        "expect_column_values_to_be_null(column=requests, row_condition=campaign_id != '*')"
    ) in got


def test_a_view_suite_checks_keys_aggregates_and_its_count_against_the_source():
    assert names("page_clicks_hourly", "error") == [
        "expect_column_values_to_not_be_null(column=page_id)",
        "expect_column_values_to_not_be_null(column=hour)",
        "expect_compound_columns_to_be_unique(column_list=[page_id, hour])",
        "expect_column_values_to_not_be_null(column=clicks)",
        "expect_column_values_to_be_between(column=clicks, min_value=0)",
        "expect_column_values_to_not_be_null(column=users)",
        "expect_column_values_to_be_between(column=users, min_value=0)",
        "expect_column_sum_to_be_between(column=clicks, min_value=$source_rows, "
        "max_value=$source_rows)",
        "expect_column_pair_values_a_to_be_greater_than_b(column_A=last_click, "
        "column_B=first_click, or_equal=true)",
    ]
    # win_price is non-negative in the payload rules, so are the aggregates over it.
    assert "expect_column_values_to_be_between(column=spend, min_value=0)" in names(
        "campaign_daily_totals"
    )


def test_thresholds_come_from_the_registry_and_the_configuration():
    surge = {r.name: r for r in suite_rules("surge_history")}
    threshold = registry.app("click_surge").knob("threshold").default
    name = (
        f"expect_column_values_to_be_between(column=click_count, min_value={threshold}, "
        "strict_min=true)"
    )
    assert surge[name].severity == "warn"
    assert (
        "expect_column_values_to_be_between(column=dq_window_seconds, "
        f"min_value={registry.SURGE_WINDOW_S}, max_value={registry.SURGE_WINDOW_S})"
    ) in surge
    assert "min_match_rate" in parameters("attribution_reconciliation")


@pytest.mark.parametrize("suite", rules.SUITES)
def test_rules_name_existing_columns_and_known_parameters(suite):
    if suite in registry.VIEWS:
        view = registry.view(suite)
        columns = {*view.keys, *(a.name for a in view.aggregates)}
        allowed = set(VIEW_PARAMETERS)
    else:
        columns = set(registry.table(suite).schema.names)
        allowed = set(GOLD_PARAMETERS)
    columns |= {name for name, _ in DERIVED_COLUMNS.get(suite, ())}
    for rule in suite_rules(suite):
        kwargs = dict(rule.kwargs)
        named = [kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs]
        named += kwargs.get("column_list", [])
        if "row_condition" in kwargs:
            named.append(kwargs["row_condition"]["column"]["name"])
        assert set(named) <= columns, rule.name
    assert set(parameters(suite)) <= allowed


def test_rule_names_are_unique_and_severities_known():
    with pytest.raises(ValueError, match="severity 'fatal'"):
        Rule("expect_column_values_to_be_unique", {"column": "x"}, "fatal")
    for suite in rules.SUITES:
        assert len(set(names(suite))) == len(names(suite))


def test_only_gold_tables_and_views_have_suites():
    with pytest.raises(KeyError, match="silver table"):
        rules.registry_rules("silver_page_clicks")
