"""The "Data quality" page: per gold table and view, its latest validation (passed, failed
``error`` and ``warn`` expectations, when, its Data Docs page) and its pass rate over the last
runs; and the latest table maintenance (:mod:`adlake.maintenance`). GX's Data Docs site, which
the page links to, is :mod:`adlake.ui.data_docs`.

Read from GX's JSON result store by :mod:`adlake.quality.history` (no Spark, no GX). A run
*passed* when no ``error`` expectation failed (a failed ``warn`` is recorded and passes).

A user sees the tables, and of their runs those, that the DAGs they may read validate
(:class:`adlake.ui.access.TableAccess`); ``all_data_docs`` says whether they may open GX's Data
Docs index, which lists every table's runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse

from adlake import freshness
from adlake.airflow.factory import MAINTENANCE_DAG_ID
from adlake.config import Settings
from adlake.maintenance import read_latest
from adlake.quality.history import RunSummary, recent_runs
from adlake.quality.project import data_docs_index
from adlake.quality.rules import GOLD_SUITES, VIEW_SUITES
from adlake.ui.access import DagAccess, Grants, TableAccess, dag_access
from adlake.ui.deps import current_settings, page

router = APIRouter()
SettingsDep = Annotated[Settings, Depends(current_settings)]
DEFAULT_RUNS = 24


def run_json(run: RunSummary) -> dict:
    """One validation as the page shows it, with the Airflow run that made it: GX's run name is
    ``<dag_id>__<run_id>`` (a DAG id has no ``__``; a run id may: ``scheduled__…``).

    >>> from datetime import datetime
    >>> r = RunSummary("page_traffic", "lake_hourly__scheduled__2026-11-21T13:00:00+00:00",
    ...                datetime(2026, 11, 21, 14, 5), True, 11, 0, 1, "validations/x.html")
    >>> {k: run_json(r)[k] for k in ("dag_id", "run_id")}
    {'dag_id': 'lake_hourly', 'run_id': 'scheduled__2026-11-21T13:00:00+00:00'}
    """
    dag_id, _, run_id = run.run_name.partition("__")
    return {
        "run_name": run.run_name,
        "dag_id": dag_id if run_id else None,
        "run_id": run_id or None,
        "run_time": run.run_time.isoformat(),
        "passed": run.passed,
        "evaluated": run.evaluated,
        "failed_errors": run.failed_errors,
        "failed_warns": run.failed_warns,
        "page": run.page,
    }


def summary(settings: Settings, access: DagAccess | Grants, last: int = DEFAULT_RUNS) -> dict:
    """Every gold table and view (registry order, then any other suite in the store) the user
    may see (``access``): its ``last`` runs oldest first, less those of DAGs the user may not
    read, the latest, the share that passed (None before a first run), and its freshness
    (:func:`adlake.freshness.shown`).

    >>> from adlake.config import load_settings
    >>> s = summary(load_settings({"ADLAKE_RUNTIME_DIR": "/nonexistent"}),
    ...             Grants(read={"view_page_clicks_hourly"}))
    >>> [(t["table"], t["latest"], t["pass_rate"]) for t in s["tables"]], s["all_data_docs"]
    ([('page_clicks_hourly', None, None)], False)
    """
    runs = recent_runs(settings, last=last)
    kinds = {**dict.fromkeys(GOLD_SUITES, "gold"), **dict.fromkeys(VIEW_SUITES, "view")}
    fresh = {r["table"]: r for r in freshness.shown(settings)}
    tables = []
    shown = TableAccess(access)
    for table in [*kinds, *sorted(set(runs) - set(kinds))]:
        if not shown.may_see(table):
            continue
        history = [
            run_json(r)
            for r in reversed(runs.get(table, []))
            if shown.may_see_run(table, r.run_name)
        ]
        tables.append(
            {
                "table": table,
                "kind": kinds.get(table, "other"),
                "runs": len(history),
                "latest": history[-1] if history else None,
                "pass_rate": (sum(r["passed"] for r in history) / len(history))
                if history
                else None,
                "history": history,
                # its newest data time and how far behind now (None: not a gold table or view)
                "freshness": fresh.get(table),
            }
        )
    # lake_maintenance's own record: for a user who may read that DAG
    maintenance = access.may_read(MAINTENANCE_DAG_ID)
    return {
        "last": last,
        "data_docs": data_docs_index(settings).is_file(),
        "all_data_docs": shown.may_see_everything(),
        "tables": tables,
        "maintenance_allowed": maintenance,
        "maintenance": read_latest(settings) if maintenance else None,
    }


@router.get("/quality/", include_in_schema=False)
def quality_page() -> FileResponse:
    return page("quality.html")


@router.get("/quality/api/summary")
def quality_summary(
    settings: SettingsDep,
    access: Annotated[DagAccess, Depends(dag_access)],
    last: Annotated[int, Query(ge=1, le=500)] = DEFAULT_RUNS,
) -> dict:
    return summary(settings, access, last)
