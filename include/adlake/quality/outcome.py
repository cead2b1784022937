"""A quality gate's outcome per table, as a small JSON file: what a cheap Airflow task reads to
pass or fail that one table, without Spark or GX.

One gate job (``spark_apps.lake.quality --tables a,b,c --outcome-dir DIR``) validates several
tables in one Spark session; for each it writes ``DIR/<table>.json`` (:func:`write_outcome`,
atomically: a reader sees the whole file or none). With ``--outcome-dir`` the job's exit status
says only whether every table *could* be validated; whether a table *passed* is its outcome's,
and the per-table task decides with :func:`check`:

* passed (no ``error`` expectation failed; ``warn`` failures are allowed): a one-paragraph
  summary is returned;
* an ``error`` expectation failed: :class:`~adlake.quality.results.QualityCheckFailed`, with the
  failed ``error`` expectations and the failure report (retrying does not help: the data or the
  rule must change);
* no outcome (the gate job did not run, or crashed before this table), or one that records an
  exception: :class:`OutcomeMissing` (rerun the gate job).

Where: :func:`outcome_dir` (``<runtime>/dq_outcomes/<dag_id>/<run_id>``, each part made safe
for a path). The file::

    {"version": 1, "table": "page_traffic", "dag_id": "lake_hourly",
     "run_id": "scheduled__2026-11-21T13:00:00+00:00",
     "interval": ["2026-11-21T13:00:00+00:00", "2026-11-21T14:00:00+00:00"],  # null: a view
     "expectations": 11, "failed": [{"expectation": ..., "severity": "error"|"warn",
     "observed_value": ...}], "error_failed": false, "failure_report": null | "...",
     "data_docs": ".../index.html", "seconds": 3.2, "error": null | "Traceback ...",
     "written_at": "2026-11-21T14:03:10.123456+00:00"}

>>> import tempfile
>>> from datetime import UTC, datetime
>>> from adlake.quality.results import RunContext
>>> d = Path(tempfile.mkdtemp())
>>> c = RunContext("lake_hourly", "manual", "t", None, None, datetime(2026, 11, 21, tzinfo=UTC))
>>> row = {"expectation": "x_is_small", "severity": "warn", "success": False,
...        "observed_value": "7"}
>>> _ = write_outcome(d, make_outcome(c, [row], "t: 1 expectation(s) failed", "index.html", 1.0))
>>> print(check(d, "t"))
t passed: 1 expectation(s), 1 failed (0 error, 1 warn: x_is_small observed 7) in lake_hourly / \
manual, validated in 1.0 s. Data Docs: index.html
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from adlake.catalog.expectations import ERROR
from adlake.config import Settings
from adlake.quality.results import QualityCheckFailed, RunContext

OUTCOMES_DIR = "dq_outcomes"  # under the runtime directory
VERSION = 1


class OutcomeMissing(RuntimeError):
    """A table has no usable outcome: its gate job did not run, crashed before validating it,
    or (:class:`ValidationRaised`) validating it raised. Rerunning the gate job may fix it."""


class ValidationRaised(OutcomeMissing):
    """The gate job recorded that validating the table raised an exception."""


def path_part(text: str) -> str:
    """``text`` as one safe path segment: percent-encoded (reversible, so two run ids never
    share a directory), a leading dot too (no ``.``/``..``/hidden names).

    >>> path_part("scheduled__2026-11-21T13:00:00+00:00")
    'scheduled__2026-11-21T13%3A00%3A00%2B00%3A00'
    >>> path_part("a/b"), path_part(".."), path_part("")
    ('a%2Fb', '%2E.', '%')
    """
    encoded = quote(text, safe="")
    if not encoded:
        return "%"
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def outcome_dir(settings: Settings, dag_id: str, run_id: str) -> Path:
    """Where the gate jobs of one DAG run write their tables' outcomes.

    >>> from adlake.config import load_settings
    >>> s = load_settings({"ADLAKE_RUNTIME_DIR": "/tmp/x"})
    >>> str(outcome_dir(s, "lake_hourly", "scheduled__2026-11-21T13:00:00+00:00"))
    '/tmp/x/dq_outcomes/lake_hourly/scheduled__2026-11-21T13%3A00%3A00%2B00%3A00'
    """
    return settings.runtime_dir / OUTCOMES_DIR / path_part(dag_id) / path_part(run_id)


def outcome_path(directory: Path | str, table: str) -> Path:
    return Path(directory) / f"{path_part(table)}.json"


def _instant(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def make_outcome(
    context: RunContext,
    rows: Iterable[Mapping[str, Any]],
    report: str | None,
    data_docs: str,
    seconds: float,
    error: str | None = None,
) -> dict[str, Any]:
    """The outcome of validating ``context.table``: its ``dq_results`` rows (none if it
    raised), the failure report, the Data Docs index, how long, and the exception's text."""
    rows = list(rows)
    failed = [r for r in rows if not r["success"]]
    interval = (
        None
        if context.interval_start is None and context.interval_end is None
        else [_instant(context.interval_start), _instant(context.interval_end)]
    )
    return {
        "version": VERSION,
        "table": context.table,
        "dag_id": context.dag_id,
        "run_id": context.run_id,
        "interval": interval,
        "expectations": len(rows),
        "failed": [
            {
                "expectation": r["expectation"],
                "severity": r["severity"],
                "observed_value": r["observed_value"],
            }
            for r in failed
        ],
        "error_failed": any(r["severity"] == ERROR for r in failed),
        "failure_report": report,
        "data_docs": data_docs,
        "seconds": round(seconds, 3),
        "error": error,
        "written_at": datetime.now(UTC).isoformat(),
    }


def write_outcome(directory: Path | str, outcome: Mapping[str, Any]) -> Path:
    """Write ``outcome`` to ``directory/<table>.json`` atomically (a temporary file in the same
    directory, flushed to disk, then renamed over the old one); returns the path."""
    path = outcome_path(directory, outcome["table"])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(outcome, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    finally:
        os.close(dir_fd)
    return path


def clear_outcomes(directory: Path | str, tables: Iterable[str]) -> None:
    """Remove ``tables``' outcomes from ``directory`` (a gate job does first: if it then dies, a
    retry's checks find no outcome rather than an earlier attempt's)."""
    for table in tables:
        outcome_path(directory, table).unlink(missing_ok=True)


def read_outcome(directory: Path | str, table: str) -> dict[str, Any]:
    """``table``'s outcome in ``directory``; :class:`OutcomeMissing` if there is none (or it is
    not one: unreadable, or another table's)."""
    path = outcome_path(directory, table)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OutcomeMissing(
            f"{table}: no quality outcome at {path}: its gate job did not run, or stopped before "
            "validating it (see the gate task's log); rerun the gate task"
        ) from None
    try:
        outcome = json.loads(text)
    except ValueError as e:
        raise OutcomeMissing(f"{table}: the quality outcome {path} is not JSON: {e}") from None
    if not isinstance(outcome, dict) or outcome.get("table") != table:
        raise OutcomeMissing(f"{table}: {path} is not this table's quality outcome")
    return outcome


def _run(outcome: Mapping[str, Any]) -> str:
    interval = outcome.get("interval")
    span = f" for [{interval[0]}, {interval[1]})" if interval else ""
    return f"{outcome['dag_id']} / {outcome['run_id']}{span}"


def check(directory: Path | str, table: str) -> str:
    """Pass or fail ``table`` by its outcome in ``directory``: a one-paragraph summary if no
    ``error`` expectation failed; else :class:`~adlake.quality.results.QualityCheckFailed`
    (the failed ``error`` expectations, then the report); :class:`OutcomeMissing` if there is
    no outcome, :class:`ValidationRaised` if validating raised (see the module docstring)."""
    outcome = read_outcome(directory, table)
    if outcome.get("error"):
        raise ValidationRaised(
            f"{table}: validating it raised in {_run(outcome)}, so it was not checked; rerun "
            f"the gate task. The exception:\n{outcome['error']}"
        )
    failed = outcome["failed"]
    errors = [f for f in failed if f["severity"] == ERROR]
    if errors or outcome["error_failed"]:
        raise QualityCheckFailed(
            f"{table}: {len(errors)} error expectation(s) failed in {_run(outcome)}: "
            + "; ".join(f"{f['expectation']} (observed {f['observed_value']})" for f in errors)
            + ". Fix the data or the rule, then rerun the gate and this task."
            + (f"\n\n{outcome['failure_report']}" if outcome.get("failure_report") else "")
            + f"\nData Docs: {outcome['data_docs']}"
        )
    warned = "; ".join(f"{f['expectation']} observed {f['observed_value']}" for f in failed)
    return (
        f"{table} passed: {outcome['expectations']} expectation(s), {len(failed)} failed "
        f"(0 error, {len(failed)} warn{': ' + warned if warned else ''}) in {_run(outcome)}, "
        f"validated in {outcome['seconds']:.1f} s. Data Docs: {outcome['data_docs']}"
    )
