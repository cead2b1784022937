"""The crash-recovery benchmark in the report, on synthetic JSON (no JVM, no broker): its
section's rows and goals from ``recovery.json``, a malformed one named with its field, an older
run file read as what its fields meant, and the benchmark's own summary of its run files (the
run type it writes is the one the report reads)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import pytest

from bench.ops import recovery
from bench.ops.recovery_report import GOAL_S, RecoveryRun, read_run
from bench.report import MalformedReport, build
from bench.report_kit import Node
from tests.bench.ops.test_report import section, synthetic, write


def run_json(interval: str, back_under: float | None, p99_after: float | None) -> dict:
    """A run as bench.ops.recovery writes it (asdict of a RecoveryRun)."""
    return {
        "app": "click_surge",
        "rtm_interval": interval,
        "rate": 1000.0,
        "warmup_s": 60.0,
        "after_s": 120.0,
        "target_ms": 1000.0,
        "killed_after_boundary_s": 15.0,
        "cores": 2,
        "load_average": [1.5, 2.25],
        "outage_s": 21.4,
        "replayed_outputs": 15_426,
        "duplicates": 15_401,
        "distinct_ids": 314_802,
        "back_under_target_s": back_under,
        "last_over_target_s": 95.2,
        "caught_up_s": None,
        "p99_before_ms": 1657.0,
        "after": {"p50": 31.0, "p95": 54.0, "p99": p99_after, "max": 993.0, "n": 1200},
    }


def recovery_json() -> dict:
    """Two runs, as summarise writes them: one meets the goal, one was never back under the
    target before its traffic ended (and has no p99 after)."""
    runs = [run_json("30 seconds", 36.2, 739.0), run_json("5 minutes", None, None)]
    goals = [recovery.goal(*read_run(Node("run", "", r))) for r in runs]
    return {"quick": False, "command": "python -m bench.ops.recovery", "runs": runs, "goals": goals}


def older_run() -> dict:
    """A run file of the older field set: no last_over_target_s, and its back_under_target_s
    was the last output over the target."""
    run = run_json("5 minutes", 40.1, 59.0)
    del run["last_over_target_s"]
    return run


def test_the_section_has_a_row_per_run_and_the_goals_table_each_runs_goal(tmp_path):
    files = {**synthetic(), "recovery.json": recovery_json()}
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    part = section(report, "Recovery from a crash")
    assert (
        "| click_surge | 30 seconds | 15.0 s | 21.4 s | 15,426 | 15,401 | 36.2 s | – | 95.2 s "
        "| 1,657 ms / 739 ms | yes | 1.5 → 2.2 |" in part
    )
    assert (
        "| click_surge | 5 minutes | 15.0 s | 21.4 s | 15,426 | 15,401 | not within the run | – "
        "| 95.2 s | 1,657 ms / – | **no** | 1.5 → 2.2 |" in part
    )
    assert "1,000 events/s with 60 s of warm-up" in part and "target (1 s" in part
    assert f"within {GOAL_S:.0f} s of the restart" in part
    assert "older field set" not in part
    goals = section(report, "Goals")
    assert (
        "| recovery | click_surge back under the page's 1 s target after a kill -9 mid-interval "
        "(30 seconds checkpoint interval, 1,000 events/s), from the restart | <= 60 s | 36.2 s "
        "(the last output over the target 95.2 s) | yes |" in goals
    )
    assert (
        "(5 minutes checkpoint interval, 1,000 events/s), from the restart | <= 60 s | not back "
        "under it before the traffic ended | **no** |" in goals
    )
    # the report's order: after the boundary's section
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings.index("## Recovery from a crash (`recovery.json`)") == (
        headings.index("## Real-Time Mode's boundary against its settings (`boundary.json`)") + 1
    )

    (tmp_path / "in" / "recovery.json").unlink()
    report = build(tmp_path / "in", tmp_path / "out").read_text()
    assert "`make bench-recovery` writes `recovery.json`" in section(report, "Recovery from")
    assert "| recovery |" not in section(report, "Goals")


def test_a_run_file_of_the_older_field_set_is_read_as_what_its_fields_meant(tmp_path):
    """Its back_under_target_s was the last output over the target: shown as that, back under
    the target not measured, and its goal neither met nor missed in the section."""
    files = {**synthetic(), "recovery.json": {"command": "old", "runs": [older_run()]}}
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    part = section(report, "Recovery from a crash")
    assert "| 15,401 | – | – | 40.1 s | 1,657 ms / 59 ms | – | 1.5 → 2.2 |" in part
    assert "older field set" in part
    assert "| recovery |" not in section(report, "Goals")  # it wrote no goals
    run, older = read_run(Node("run", "", older_run()))
    assert older and (run.back_under_target_s, run.last_over_target_s) == (None, 40.1)
    assert recovery.goal(run, older)["measured"].startswith("not measured")
    # a later run without the figure at all: not measured either
    bare = older_run()
    del bare["back_under_target_s"]
    assert read_run(Node("run", "", bare))[0].last_over_target_s is None


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d["runs"][1].pop("outage_s"), "recovery.json: runs[1].outage_s: missing"),
        (
            lambda d: d["runs"][0].update(duplicates="many"),
            "recovery.json: runs[0].duplicates: expected a number, got 'many'",
        ),
        (
            lambda d: d["runs"][0]["after"].pop("p99"),
            "recovery.json: runs[0].after.p99: missing",
        ),
        (
            lambda d: d["goals"][1].update(met=None),
            "recovery.json: goals[1].met: expected true or false, got None",
        ),
    ],
)
def test_a_malformed_recovery_json_names_its_file_and_field(tmp_path, damage, message):
    files = {**synthetic(), "recovery.json": recovery_json()}
    damage(files["recovery.json"])
    write(tmp_path / "in", files)

    with pytest.raises(MalformedReport, match="^" + re.escape(message)):
        build(tmp_path / "in", tmp_path / "out")
    assert not (tmp_path / "out" / "REPORT.md").exists()


def test_a_report_built_from_the_recovery_summary_is_the_same_report(tmp_path):
    recovery_file = recovery_json()
    recovery_file["runs"].append(older_run())
    files = {**synthetic(), "recovery.json": recovery_file}
    first = build(write(tmp_path / "in", files), tmp_path / "out")
    second = build(tmp_path / "out", tmp_path / "again")

    def masked(path) -> str:
        return re.sub(r"report built [0-9-]+ [0-9:]+", "report built", path.read_text())

    assert masked(second) == masked(first)
    assert "older field set" in section(masked(second), "Recovery from a crash")


def test_the_runs_figures_fill_the_run_type_that_the_report_reads_back():
    """analyse's figures and the run's settings are the fields of RecoveryRun: what the
    benchmark writes (asdict) is what the report reads."""
    samples = [(1000, 990, ("a",)), (9000, 1990, ("b",)), (9500, 9495, ("c",))]
    figures = recovery.analyse(samples, 0, 3000, 6000, 1000)
    run = RecoveryRun(
        app="click_surge",
        rtm_interval="5 seconds",
        rate=200.0,
        warmup_s=5.0,
        after_s=10.0,
        target_ms=1000.0,
        killed_after_boundary_s=2.5,
        cores=2,
        load_average=(1.0, 1.5),
        **figures,
    )
    written = json.loads(json.dumps(asdict(run)))
    assert read_run(Node("run", "", written)) == (run, False)


def test_summarise_keeps_full_and_quick_runs_apart_with_their_goals(tmp_path):
    full = recovery.run_file(tmp_path, "click_surge", "30 seconds")
    older = recovery.run_file(tmp_path, "click_surge", "5 minutes")
    quick = recovery.run_file(tmp_path, "click_surge", recovery.QUICK_RTM_INTERVAL, quick=True)
    for path, value in (
        (full, run_json("30 seconds", 36.2, 739.0)),
        (older, older_run()),
        (quick, run_json(recovery.QUICK_RTM_INTERVAL, 3.1, 40.0)),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    summary = recovery.summarise(tmp_path)
    assert [r["rtm_interval"] for r in summary["runs"]] == ["30 seconds", "5 minutes"]
    assert summary["runs"][1] == older_run()  # as it was written
    assert [g["met"] for g in summary["goals"]] == [True, False]
    assert not summary["quick"]
    assert json.loads((tmp_path / "recovery.json").read_text()) == summary

    summary = recovery.summarise(tmp_path, quick=True)
    assert [r["rtm_interval"] for r in summary["runs"]] == ["5 seconds"]
    assert summary["quick"] and "--quick" in summary["command"]

    older.write_text(json.dumps({**older_run(), "outage_s": "soon"}))
    with pytest.raises(MalformedReport, match=r"^recovery/click_surge-300s\.json: outage_s"):
        recovery.summarise(tmp_path)


def test_the_quick_form_is_one_short_run_and_takes_no_intervals(capsys):
    pace = recovery.QUICK
    traffic_s = pace.warmup_s + 1.5 * 5 + pace.restart_allowance_s + pace.after_s
    assert traffic_s < 60 and pace.rate == 200.0
    with pytest.raises(SystemExit):
        recovery.main(["--quick", "--intervals", "30 seconds"])
    assert "--quick runs one interval" in capsys.readouterr().err
