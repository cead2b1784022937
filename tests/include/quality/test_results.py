"""dq_results rows from a GX validation result, and which failures fail the quality task."""

from __future__ import annotations

from datetime import datetime

import pytest

from adlake import registry
from adlake.quality.results import (
    COLUMNS,
    RunContext,
    blocking,
    failure_report,
    result_rows,
    severity_of,
)

CONTEXT = RunContext(
    "lake_hourly",
    "scheduled__2026-11-21T13:00:00+00:00",
    "page_traffic",
    datetime(2026, 11, 21, 13),
    datetime(2026, 11, 21, 14),
    datetime(2026, 11, 21, 14, 5, 30),
)


def item(type_, kwargs, severity, success, result=None, exception=None):
    """One entry of a validation result's ``results``, as GX's ``to_json_dict()`` gives it."""
    return {
        "success": success,
        "expectation_config": {
            "type": type_,
            "kwargs": {"batch_id": "adlake_spark-x", **kwargs},
            "meta": {"severity": severity},
            "id": "0000",
            "severity": {"error": "critical", "warn": "warning"}[severity],
        },
        "result": result or {},
        "exception_info": {
            "raised_exception": exception is not None,
            "exception_message": exception,
            "exception_traceback": None,
        },
    }


VALIDATION = {
    "suite_name": "page_traffic",
    "success": False,
    "results": [
        item(
            "expect_column_values_to_not_be_null",
            {"column": "page_id"},
            "error",
            False,
            {
                "element_count": 5,
                "unexpected_count": 1,
                "partial_unexpected_list": [None],
                "unexpected_rows": [{"page_id": None, "clicks": 3}],
            },
        ),
        item(
            "expect_compound_columns_to_be_unique",
            {"column_list": ["page_id", "minute"]},
            "error",
            True,
            {"element_count": 5, "unexpected_count": 0},
        ),
        item(
            "expect_column_sum_to_be_between",
            {"column": "clicks", "min_value": 9, "max_value": 9},
            "warn",
            False,
            {"observed_value": 12},
        ),
        item(
            "expect_column_values_to_be_between",
            {"column": "minute"},
            "error",
            False,
            exception="AnalysisException: cannot resolve minute",
        ),
    ],
}


def test_one_row_per_expectation_in_the_registry_columns():
    rows = result_rows(VALIDATION, CONTEXT)
    assert tuple(rows[0]) == COLUMNS == tuple(registry.table("dq_results").schema.names)
    common = {
        "dag_id": "lake_hourly",
        "run_id": "scheduled__2026-11-21T13:00:00+00:00",
        "table": "page_traffic",
        "interval_start": datetime(2026, 11, 21, 13),
        "interval_end": datetime(2026, 11, 21, 14),
        "suite": "page_traffic",
        "run_time": datetime(2026, 11, 21, 14, 5, 30),
    }
    assert rows == [
        {
            **common,
            "expectation": "expect_column_values_to_not_be_null(column=page_id)",
            "severity": "error",
            "success": False,
            "observed_value": "1 of 5 rows unexpected",
            "unexpected_count": 1,
        },
        {
            **common,
            "expectation": 'expect_compound_columns_to_be_unique(column_list=["page_id",'
            ' "minute"])',
            "severity": "error",
            "success": True,
            "observed_value": "0 of 5 rows unexpected",
            "unexpected_count": 0,
        },
        {
            **common,
            "expectation": "expect_column_sum_to_be_between(column=clicks, min_value=9, "
            "max_value=9)",
            "severity": "warn",
            "success": False,
            "observed_value": "12",
            "unexpected_count": None,
        },
        {
            **common,
            "expectation": "expect_column_values_to_be_between(column=minute)",
            "severity": "error",
            "success": False,
            "observed_value": "exception: AnalysisException: cannot resolve minute",
            "unexpected_count": None,
        },
    ]


def test_the_generators_stable_name_wins_over_the_substituted_kwargs():
    validation = {
        "suite_name": "s",
        "results": [
            item(
                "expect_column_values_to_be_between",
                {"column": "event_date", "min_value": "2026-11-21"},
                "error",
                True,
            )
        ],
    }
    validation["results"][0]["expectation_config"]["meta"]["expectation"] = (
        "expect_column_values_to_be_between(column=event_date, min_value=$first_day)"
    )
    [row] = result_rows(validation, CONTEXT)
    assert row["expectation"] == (
        "expect_column_values_to_be_between(column=event_date, min_value=$first_day)"
    )


def test_only_failed_error_expectations_fail_the_task():
    rows = result_rows(VALIDATION, CONTEXT)
    assert [(r["expectation"].split("(")[0], r["severity"]) for r in blocking(rows)] == [
        ("expect_column_values_to_not_be_null", "error"),
        ("expect_column_values_to_be_between", "error"),
    ]
    warn_only = [r for r in rows if r["severity"] == "warn"]
    assert warn_only and blocking(warn_only) == []


@pytest.mark.parametrize(
    ("config", "severity"),
    [
        ({"meta": {"severity": "error"}, "severity": "warning"}, "error"),  # ours wins
        ({"meta": {"severity": "warn"}}, "warn"),
        ({"severity": "critical"}, "error"),  # GX's, when ours is absent
        ({"severity": "warning"}, "warn"),
        ({"severity": "info"}, "warn"),
        ({}, "error"),  # unclassified: fails the task
    ],
)
def test_severity(config, severity):
    assert severity_of(config) == severity


def test_an_unknown_severity_is_refused():
    with pytest.raises(ValueError, match="'blocker' is not one of error, warn"):
        severity_of({"meta": {"severity": "blocker"}})


def test_the_report_names_each_failure_with_its_observed_value_and_sample_rows_errors_first():
    report = failure_report(VALIDATION, CONTEXT)
    assert report.splitlines() == [
        "page_traffic: 3 expectation(s) failed (2 error, 1 warn) in lake_hourly / "
        "scheduled__2026-11-21T13:00:00+00:00 for [2026-11-21T13:00:00, 2026-11-21T14:00:00)",
        "  [error] expect_column_values_to_not_be_null(column=page_id)",
        "    observed: 1 of 5 rows unexpected",
        "    unexpected values (sample): [null]",
        '    unexpected rows (sample): {"clicks": 3, "page_id": null}',
        "  [error] expect_column_values_to_be_between(column=minute)",
        "    observed: exception: AnalysisException: cannot resolve minute",
        "  [warn] expect_column_sum_to_be_between(column=clicks, min_value=9, max_value=9)",
        "    observed: 12",
    ]
