"""The apps-beside-the-lake file and its report share one type: the ``Beside`` that
``bench.ops.beside`` builds and writes (``asdict``) reads back as the same value, and the fields
the report does not show stay out of its summary."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

from bench.ops import beside_report as report
from bench.report_kit import Goal, Node, StatedGoal, summary
from tests.bench.ops.test_latency_result import realtime_run


def written() -> report.Beside:
    """A file as ``bench.ops.beside`` fills it: one app idle and beside, two lake rounds."""
    idle = realtime_run()
    beside = replace(idle, load_average=(3.0, 4.5), whole={**idle.whole, "p99": 60.0})
    goal = StatedGoal(
        goal="attribution p99 beside the lake against idle",
        target="<= 1.5x",
        measured="1.2x",
        met=True,
        bound="the cores the lake engine's work takes from the app's tasks",
    )
    return report.Beside(
        apps=["attribution"],
        scenarios=["attribution-realtime-100"],
        rate=100.0,
        warmup_s=10.0,
        duration_s=50.0,
        rtm_interval="each app's own: attribution 30 seconds",
        lake=report.Lake(
            slots=1,
            nice=10,
            rounds=[
                report.LakeRound(
                    slots=1,
                    jobs={"bronze": [0.0, 20.5], "silver": [20.5, 41.0]},
                    views_s=40.0 + n,
                    gold_s=120.0,
                    round_s=131.0,
                )
                for n in range(2)
            ],
        ),
        cores=2,
        runs={"idle": {"attribution": idle}, "beside": {"attribution": beside}},
        p99_ratio={"attribution": 1.2},
        goals=[goal],
        errors=[],
        load_average_end=4.1,
        workdir="/tmp/adlake-bench-beside-x",
    )


def test_a_file_as_written_is_the_value_the_report_reads():
    beside = written()
    as_json = json.loads(json.dumps(asdict(beside)))
    read, goals = report.read_beside(Node("beside.json", "", as_json))
    assert read == beside
    assert goals == [Goal.of("beside", beside.goals[0])]
    assert json.loads(json.dumps(asdict(read))) == as_json


def test_its_summary_keeps_what_the_section_shows_and_reads_back():
    as_json = json.loads(json.dumps(asdict(written())))
    trail: set = set()
    report.read_beside(Node("beside.json", "", as_json, trail=trail))
    kept = summary(as_json, trail)
    run = kept["runs"]["beside"]["attribution"]
    assert "batches" not in run and "timeline" not in run and "notes" not in run
    assert run["whole"]["p99"] == 60.0 and len(run["quantiles_ms"]) == 1001
    assert set(kept["lake"]["rounds"][0]) == {"views_s", "gold_s", "round_s"}
    again, _ = report.read_beside(Node("beside.json", "", kept))
    assert report.lake_beside_section(again, None) == report.lake_beside_section(
        report.read_beside(Node("beside.json", "", as_json))[0], None
    )
