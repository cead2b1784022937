"""A GX validation result → ``dq_results`` rows, and which failures fail the quality task.

Pure functions over the plain dict of a result (``ExpectationSuiteValidationResult``'s
``to_json_dict()``), so they are tested without GX or Spark:

* :func:`result_rows` — one row per expectation, in ``dq_results``' columns;
* :func:`severity_of` — an expectation's severity: ``meta.severity`` (``error`` or ``warn``);
  else GX's own ``severity`` (``critical`` → ``error``, ``warning``/``info`` → ``warn``); else
  ``error`` (an expectation nobody classified fails the task: fail safe);
* :func:`blocking` — the rows that fail the task: ``error`` expectations that did not succeed (an
  expectation that raised did not succeed);
* :func:`failure_report` — what the log says about each failed expectation: its observed value and
  a sample of unexpected values and rows.

>>> validation = {"suite_name": "page_traffic", "results": [{
...     "success": False, "expectation_config": {
...         "type": "expect_column_values_to_not_be_null", "kwargs": {"column": "page_id"},
...         "meta": {"severity": "error",
...                  "expectation": "expect_column_values_to_not_be_null(column=page_id)"}},
...     "result": {"element_count": 4, "unexpected_count": 1, "partial_unexpected_list": [None]},
...     "exception_info": {"raised_exception": False}}]}
>>> context = RunContext("lake_hourly", "manual", "page_traffic", None, None,
...                      datetime(2026, 11, 21, 14, 5))
>>> [row] = result_rows(validation, context)
>>> row["expectation"], row["severity"], row["success"], row["observed_value"]
('expect_column_values_to_not_be_null(column=page_id)', 'error', False, '1 of 4 rows unexpected')
>>> [r["expectation"] for r in blocking([row])]
['expect_column_values_to_not_be_null(column=page_id)']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adlake.catalog.expectations import ERROR, SEVERITIES, WARN

# dq_results' columns, in the registry's order.
COLUMNS = (
    "dag_id",
    "run_id",
    "table",
    "interval_start",
    "interval_end",
    "suite",
    "expectation",
    "severity",
    "success",
    "observed_value",
    "unexpected_count",
    "run_time",
)
_GX_SEVERITY = {"critical": ERROR, "warning": WARN, "info": WARN}
# Kwargs GX adds to a result's expectation config that do not identify the expectation.
_NOT_IDENTIFYING = ("batch_id",)
SAMPLE = 5  # unexpected values and rows shown per failed expectation


# The gate's exit status when an ``error`` expectation failed (1 is any other failure). A retry
# would validate the same data again, so the DAG's gate task fails at once on this status and
# keeps its retries for what a retry can fix (the cluster, the JVM, the disk).
EXIT_EXPECTATIONS_FAILED = 3


class QualityCheckFailed(RuntimeError):
    """An ``error`` expectation failed: the slice must not be used downstream until fixed."""


@dataclass(frozen=True)
class RunContext:
    """Where a validation ran: the Airflow DAG and run, the table or view, the data interval
    (``None`` for a view) and when."""

    dag_id: str
    run_id: str
    table: str
    interval_start: datetime | None
    interval_end: datetime | None
    run_time: datetime


def severity_of(config: Mapping[str, Any]) -> str:
    """The severity of an expectation config (see the module docstring).

    >>> severity_of({"meta": {"severity": "warn"}, "severity": "critical"})
    'warn'
    >>> severity_of({"severity": "warning"}), severity_of({})
    ('warn', 'error')
    >>> severity_of({"meta": {"severity": "fatal"}})
    Traceback (most recent call last):
    ...
    ValueError: expectation meta.severity 'fatal' is not one of error, warn
    """
    ours = (config.get("meta") or {}).get("severity")
    if ours is not None:
        if ours not in SEVERITIES:
            raise ValueError(
                f"expectation meta.severity {ours!r} is not one of {', '.join(SEVERITIES)}"
            )
        return ours
    return _GX_SEVERITY.get(config.get("severity") or "", ERROR)


def expectation_name(config: Mapping[str, Any]) -> str:
    """The stable name of an expectation: the generator's (``meta.expectation``), else its type
    and identifying kwargs.

    >>> expectation_name({"type": "expect_column_values_to_be_unique",
    ...                   "kwargs": {"column": "id", "batch_id": "x"}})
    'expect_column_values_to_be_unique(column=id)'
    """
    named = (config.get("meta") or {}).get("expectation")
    if named:
        return named
    kwargs = {k: v for k, v in (config.get("kwargs") or {}).items() if k not in _NOT_IDENTIFYING}
    args = ", ".join(f"{k}={_text(v)}" for k, v in kwargs.items())
    return f"{config.get('type')}({args})"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def observed_value(item: Mapping[str, Any]) -> str | None:
    """What an expectation saw, as text: GX's ``observed_value`` (an aggregate's), else the
    share of unexpected rows (a per-row rule's), else the exception it raised."""
    exception = item.get("exception_info") or {}
    if exception.get("raised_exception"):
        return f"exception: {exception.get('exception_message')}"
    result = item.get("result") or {}
    if result.get("observed_value") is not None:
        return _text(result["observed_value"])
    if "unexpected_count" in result:
        return f"{result['unexpected_count']} of {result.get('element_count')} rows unexpected"
    return None


def result_rows(validation: Mapping[str, Any], context: RunContext) -> list[dict[str, Any]]:
    """One ``dq_results`` row per expectation of a validation result (see the module doctest)."""
    rows = []
    for item in validation["results"]:
        config = item["expectation_config"]
        unexpected = (item.get("result") or {}).get("unexpected_count")
        rows.append(
            {
                "dag_id": context.dag_id,
                "run_id": context.run_id,
                "table": context.table,
                "interval_start": context.interval_start,
                "interval_end": context.interval_end,
                "suite": validation["suite_name"],
                "expectation": expectation_name(config),
                "severity": severity_of(config),
                "success": bool(item["success"]),
                "observed_value": observed_value(item),
                "unexpected_count": None if unexpected is None else int(unexpected),
                "run_time": context.run_time,
            }
        )
    return rows


def blocking(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows that fail the task: failed ``error`` expectations."""
    return [r for r in rows if r["severity"] == ERROR and not r["success"]]


def failure_report(validation: Mapping[str, Any], context: RunContext) -> str:
    """Every failed expectation of ``validation``, one paragraph each, ``error`` ones first: its
    severity and name, observed value, and a sample of unexpected values and rows.

    >>> validation = {"suite_name": "t", "results": [{"success": False,
    ...     "expectation_config": {"type": "expect_column_values_to_be_unique",
    ...                            "kwargs": {"column": "id"}, "meta": {"severity": "warn"}},
    ...     "result": {"element_count": 3, "unexpected_count": 2,
    ...                "partial_unexpected_list": ["a", "a"],
    ...                "unexpected_rows": [{"id": "a", "n": 1}, {"id": "a", "n": 2}]}}]}
    >>> print(failure_report(validation, RunContext("d", "r", "t", None, None,
    ...                                             datetime(2026, 1, 1))))
    t: 1 expectation(s) failed (0 error, 1 warn) in d / r
      [warn] expect_column_values_to_be_unique(column=id)
        observed: 2 of 3 rows unexpected
        unexpected values (sample): ["a", "a"]
        unexpected rows (sample): {"id": "a", "n": 1}
                                  {"id": "a", "n": 2}
    """
    failed = [item for item in validation["results"] if not item["success"]]
    failed.sort(key=lambda item: severity_of(item["expectation_config"]) != ERROR)
    errors = sum(severity_of(i["expectation_config"]) == ERROR for i in failed)
    interval = (
        ""
        if context.interval_start is None
        else f" for [{context.interval_start.isoformat()}, {context.interval_end.isoformat()})"
    )
    lines = [
        f"{validation['suite_name']}: {len(failed)} expectation(s) failed ({errors} error, "
        f"{len(failed) - errors} warn) in {context.dag_id} / {context.run_id}{interval}"
    ]
    for item in failed:
        config = item["expectation_config"]
        result = item.get("result") or {}
        lines.append(f"  [{severity_of(config)}] {expectation_name(config)}")
        lines.append(f"    observed: {observed_value(item)}")
        values = result.get("partial_unexpected_list")
        if values:
            lines.append(f"    unexpected values (sample): {_text(values[:SAMPLE])}")
        sample = (result.get("unexpected_rows") or [])[:SAMPLE]
        for n, row in enumerate(sample):
            label = "unexpected rows (sample): " if n == 0 else " " * 26
            lines.append(f"    {label}{_text(row)}")
    return "\n".join(lines)
