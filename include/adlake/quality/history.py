"""Past validations, read from GX's validation results store (JSON files, no Spark, no GX), for
what a person reads: the latest result per table and its pass rate over the last runs.

GX keeps one JSON file per validation under
``<runtime>/gx/uncommitted/validations/<suite>/<run name>/<run time>/<batch>.json`` (the run name
is ``<dag_id>__<run_id>``, see :func:`spark_apps.lake.quality.run_checkpoint`); its Data Docs page
has the same path under the site, with ``.html``. A run *passed* when no ``error`` expectation
failed, as the quality task decides (GX's own ``success`` is false on a failed ``warn`` too).
The full history, with intervals, is the Delta table ``dq_results``; this reads the files only,
so an Airflow web process can show it.

>>> summarize([])
{}
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from adlake.catalog.expectations import ERROR
from adlake.config import Settings
from adlake.quality.results import severity_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSummary:
    """One validation of one table: when, which Airflow run, what failed, its Data Docs page
    (relative to the site's root)."""

    table: str
    run_name: str
    run_time: datetime
    passed: bool
    evaluated: int
    failed_errors: int
    failed_warns: int
    page: str


def validations_dir(settings: Settings) -> Path:
    return settings.gx_dir / "uncommitted" / "validations"


def read_run(path: Path, root: Path) -> RunSummary:
    """The summary of one stored validation result at ``path`` (under store ``root``). Raises
    ``ValueError`` (or ``OSError``, ``LookupError``) for a file that is not one: not JSON, a key
    missing, or a value of another type than GX writes (the suite's name and the run's name
    text, the latter or null; the run's time an ISO text; the results a list of objects, each
    with a boolean ``success`` and an object ``expectation_config``)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    results = doc["results"]
    if not isinstance(results, list) or not all(
        isinstance(r, dict)
        and isinstance(r["success"], bool)
        and isinstance(r["expectation_config"], dict)
        for r in results
    ):
        raise ValueError("results is not a list of results, each with success and its config")
    failed = [severity_of(r["expectation_config"]) for r in results if not r["success"]]
    errors = failed.count(ERROR)
    run = doc["meta"]["run_id"]
    suite, run_name, run_time = doc["suite_name"], run["run_name"], run["run_time"]
    for key, value, types in (
        ("suite_name", suite, str),
        ("run_name", run_name, (str, type(None))),
        ("run_time", run_time, str),
    ):
        if not isinstance(value, types):
            raise ValueError(f"{key} {value!r} is not text")
    return RunSummary(
        table=suite,
        run_name=run_name or "",
        run_time=datetime.fromisoformat(run_time),
        passed=errors == 0,
        evaluated=len(results),
        failed_errors=errors,
        failed_warns=len(failed) - errors,
        page=str(Path("validations") / path.relative_to(root).with_suffix(".html")),
    )


def recent_runs(settings: Settings, last: int = 24) -> dict[str, list[RunSummary]]:
    """Per table, its ``last`` validations, newest first. Only those files are read: the run
    time directories (``20261121T130512.123456Z``) sort as text in time order. A file that is
    not a validation result (truncated by a crash or a full disk, not JSON, another shape) is
    skipped with a warning naming it: one bad file hides one run, not every table's page."""
    root = validations_dir(settings)
    out: dict[str, list[RunSummary]] = {}
    if not root.is_dir():
        return out
    for suite in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(suite.glob("*/*/*.json"), key=lambda p: p.parent.name, reverse=True)
        runs = out[suite.name] = []
        for path in files:
            if len(runs) == last:
                break
            try:
                runs.append(read_run(path, root))
            except (OSError, ValueError, LookupError, TypeError, AttributeError) as error:
                log.warning(
                    "skipped validation result %s: not a readable result (%s: %s)",
                    path,
                    type(error).__name__,
                    error,
                )
    return out


def summarize(runs: Iterable[RunSummary]) -> dict[str, dict]:
    """Per table: the latest run, and the share of the given runs that passed.

    >>> t = datetime(2026, 11, 21, 13)
    >>> runs = [RunSummary("page_traffic", "r1", t, True, 11, 0, 1, "a.html"),
    ...         RunSummary("page_traffic", "r2", t.replace(hour=14), False, 11, 2, 0, "b.html")]
    >>> s = summarize(runs)["page_traffic"]
    >>> s["latest"].run_name, s["pass_rate"], s["runs"]
    ('r2', 0.5, 2)
    """
    by_table: dict[str, list[RunSummary]] = defaultdict(list)
    for run in runs:
        by_table[run.table].append(run)
    return {
        table: {
            "latest": max(rs, key=lambda r: r.run_time),
            "pass_rate": sum(r.passed for r in rs) / len(rs),
            "runs": len(rs),
        }
        for table, rs in sorted(by_table.items())
    }


def run_time_of(directory: str) -> datetime | None:
    """The UTC time of a run-time directory's name (``20261121T130512.123456Z``), or None.

    >>> run_time_of("20261121T130512.123456Z")
    datetime.datetime(2026, 11, 21, 13, 5, 12, 123456, tzinfo=datetime.timezone.utc)
    >>> run_time_of("latest") is None
    True
    """
    try:
        return datetime.strptime(directory, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def prune(
    settings: Settings, older_than: datetime, keep: int = 1, dry_run: bool = False
) -> dict[str, int]:
    """Delete the stored validations run before ``older_than`` and their Data Docs pages,
    keeping each table's ``keep`` newest whatever their age (a table validated rarely still
    shows its latest); the runs since ``older_than`` are untouched, so the page's history of
    that window reads as before. ``{"validations": n, "pages": m}`` deleted (or, ``dry_run``,
    that would be)."""
    from adlake.quality.project import data_docs_index

    root = validations_dir(settings)
    site = data_docs_index(settings).parent / "validations"
    deleted = {"validations": 0, "pages": 0}
    if not root.is_dir():
        return deleted
    for suite in sorted(p for p in root.iterdir() if p.is_dir()):
        runs = sorted(suite.glob("*/*"), key=lambda p: p.name, reverse=True)
        for run_dir in runs[keep:]:
            when = run_time_of(run_dir.name)
            if when is None or when >= older_than:
                continue
            relative = run_dir.relative_to(root)
            for tree, kind in ((run_dir, "validations"), (site / relative, "pages")):
                if tree.is_dir():
                    deleted[kind] += sum(1 for p in tree.rglob("*") if p.is_file())
                    if not dry_run:
                        shutil.rmtree(tree)
                        _remove_if_empty(tree.parent)
    return deleted


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (another run time), or gone
        directory.rmdir()
