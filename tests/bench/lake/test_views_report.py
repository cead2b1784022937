"""The view refresh suite's file and its report share one type: what ``bench.lake.views_suite``
builds and writes (``asdict`` of a ``Views``, its goals from its own function) reads back as the
same value, each case as its kind, its goals as the report's, and a file without the fields the
report does not show (its summary) still reads."""

from __future__ import annotations

import json
from dataclasses import asdict

from bench.lake import views_report as report, views_suite
from bench.report_kit import Goal, Node


def refresh(incremental_s: float, change_rows: int) -> dict:
    """A measured incremental refresh, as the suite's ``measured_refresh`` gives it."""
    jobs = {"bookkeeping": 3, "change": 4, "merge": 11, "progress": 7}
    return {
        "incremental_s": incremental_s,
        "phases": {"bookkeeping": 0.39, "change": 0.9, "merge": 1.25, "progress": 1.06},
        "jobs": jobs,
        "total_jobs": sum(jobs.values()),
        "commits": 2,
        "change_rows": change_rows,
        "groups_touched": 1000,
        "groups_recomputed": 0,
        "line": f"incremental, {change_rows:,} change rows",
    }


def written() -> report.Views:
    """A file as the suite fills it."""
    load = (2.5, 3.1)
    cases = [
        report.OneRow(
            case="one_row",
            rows=10_000_000,
            **refresh(2.41, 1),
            full_s=None,
            ratio=None,
            verify_differences=None,
            all_s=[2.3, 2.41, 2.6],
            load_average=load,
        ),
        *(
            report.ViewCase(
                case="append",
                rows=rows,
                **refresh(inc, 100_000),
                full_s=full,
                ratio=round(full / inc, 2),
                verify_differences=0 if rows <= 30_000_000 else None,
                load_average=load,
            )
            for rows, inc, full in [(10_000_000, 4.2, 7.3), (100_000_000, 3.0, 54.8)]
        ),
        report.DeleteUpdate(
            case="delete_update",
            rows=10_000_000,
            **refresh(5.8, 130_100),
            full_s=7.6,
            ratio=1.31,
            verify_differences=0,
            load_average=load,
            changes=report.Changes(inserted=50_000, updated=29_936, deleted=20_228),
        ),
    ]
    return report.Views(
        cases=cases,
        goals=views_suite.goals(cases),
        quick=False,
        aggregates=["count()", "sum(win_price)"],
        campaigns=500,
        days=30,
        cores=2,
        master="local[2]",
        started_at="2026-11-24T17:01:10+00:00",
        seconds=493.9,
    )


def test_what_the_suite_writes_the_report_reads_back_equal():
    result = written()
    value = json.loads(json.dumps(asdict(result)))
    read, goals = report.read_views(Node("views.json", "", value))
    assert read == result
    assert [type(c) for c in read.cases] == [type(c) for c in result.cases]
    assert goals == [Goal.of("views", g) for g in result.goals]
    assert [g.met for g in goals] == [False, False, True]
    # each case's keys as the suite writes them: the one-row repeats before the load average,
    # the delete/update change after it
    assert list(value["cases"][0])[-2:] == ["all_s", "load_average"]
    assert list(value["cases"][1])[-2:] == ["verify_differences", "load_average"]
    assert list(value["cases"][3])[-2:] == ["load_average", "changes"]


def test_the_fields_the_report_does_not_show_are_optional():
    value = json.loads(json.dumps(asdict(written())))
    for key in ("quick", "aggregates", "master", "started_at", "seconds"):
        del value[key]
    for case in value["cases"]:
        for key in ("total_jobs", "groups_touched", "groups_recomputed", "line"):
            del case[key]
    del value["cases"][0]["all_s"], value["cases"][3]["changes"]
    read, _ = report.read_views(Node("views.json", "", value))
    assert read.aggregates is None and read.cases[0].all_s is None
    assert read.cases[3].changes is None and read.cases[1].line is None
