"""bench.report on synthetic benchmark JSON (no JVM, no broker): the tables, the goals,
the plots written, a missing file reported as not run, a malformed one named with its field.

In the ops environment: the plots need its matplotlib (the lake environment has none).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from bench import report as bench_report
from bench.report import MalformedReport, build, main
from bench.report_kit import Node
from tests.conftest import private_settings

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# The JSON files synthetic() holds (the quick run's benchmarks), and their plots.
FILES = ("views.json", "bronze.json", "ops.json")
PLOTS = tuple(bench_report.ALL_PLOTS[key] for key in ("cdf", "timeline", "views", "bronze"))


def latency_quantiles(p50: float, p99: float, top: float) -> list[float]:
    """1001 increasing latencies with the given median, p99 and max (log-linear between)."""
    low = p50 / 3
    out = []
    for i in range(1001):
        q = i / 1000
        if q <= 0.5:
            out.append(low * (p50 / low) ** (q / 0.5))
        elif q <= 0.99:
            out.append(p50 * (p99 / p50) ** ((q - 0.5) / 0.49))
        else:
            out.append(p99 * (top / p99) ** ((q - 0.99) / 0.01))
    return out


def ops_run(app: str, mode: str, p50: float, p99: float, top: float, boundaries: list[float]):
    stalled = [any(t <= b < t + 5 for b in boundaries) for t in range(0, 120, 5)]
    timeline = [
        {
            "t_s": t * 5,
            "n": 5000,
            "p50": p50,
            "p99": top * 0.8 if stall else p99 * 0.8,
            "max": top if stall else p99,
        }
        for t, stall in enumerate(stalled)
    ]
    return {
        "app": app,
        "mode": mode,
        "rate": 1000.0,
        "duration_s": 120.0,
        "whole": {"p50": p50, "p95": p99 / 2, "p99": p99, "max": top, "n": 120000},
        "between_boundaries": {"p50": p50, "p99": p99 / 4, "max": top / 4, "n": 100000},
        "quantiles_ms": latency_quantiles(p50, p99, top),
        "timeline": timeline,
        "boundaries": [
            {
                "t_s": b,
                "stall_ms": 2100.0 + i,
                "durations_ms": {
                    "queryPlanning": 700.0,
                    "latestOffset": 400.0,
                    "addBatch": 900.0,
                    "commitOffsets": 40.0,
                    "walCommit": 30.0,
                },
                "timers_fired": 1200 + i,
            }
            for i, b in enumerate(boundaries)
        ],
        "load_average": [1.5, 2.25],
    }


def goal(name: str, met: bool) -> dict:
    return {
        "goal": name,
        "target": "≤ 1.5 s",
        "measured": "1.2 s",
        "met": met,
        "bound": "Delta's MERGE commit",
    }


def synthetic() -> dict[str, dict]:
    """One JSON per benchmark, shaped as the contract says."""
    views = {
        "cases": [
            {
                "case": case,
                "rows": rows,
                "change_rows": change,
                "incremental_s": inc,
                "full_s": full,
                "ratio": None if full is None else full / inc,
                "phases": {"bookkeeping": 0.4, "change": 0.6, "merge": inc - 1.0},
                "jobs": {"bookkeeping": 2, "change": 3, "merge": 7},
                "commits": 1,
                "verify_differences": 0,
                "load_average": [0.5, 1.0],
            }
            for case, rows, change, inc, full in [
                ("delete_update", 10_000_000, 129_879, 8.0, 13.4),
                ("append", 10_000_000, 100_000, 2.1, 13.0),
                ("fixed_change", 10_000_000, 100_000, 2.0, 12.8),
                ("fixed_change", 30_000_000, 100_000, 2.3, 36.0),
                ("fixed_change", 100_000_000, 100_000, 2.7, 118.0),
                ("one_row", 10_000_000, 1, 1.3, None),
            ]
        ],
        "goals": [goal("1-row refresh", True), goal("append-only at 10M ≥ 5× full", False)],
    }
    bronze = {
        "records": 1_000_000,
        "partitions": 8,
        "startup_s": 6.5,
        "steady_records_per_s": 104_000.0,
        "wall_records_per_s": 71_000.0,
        "batches": [{"records": 250_000, "seconds": s} for s in (3.1, 2.4, 2.3, 2.5)],
        "fixed_cost_s": {"bronze": 7.2, "silver": 11.4},
        "goal": {
            "goal": "bronze steady-state ingest",
            "target": "≥ 100,000 records/s",
            "measured": "104,000 records/s",
            "met": True,
            "bound": "2 cores",
        },
        "load_average": [0.75, 1.25],
    }
    ops = {
        "runs": [
            ops_run("click_surge", "realtime", 31, 60, 122, [30, 60, 90]),
            ops_run("click_surge", "processing_time", 743, 1730, 2624, []),
            ops_run("attribution", "realtime", 36, 1413, 2366, [25, 55, 85, 115]),
        ],
        "kafka_hop": {
            "rate": 1000.0,
            "duration_s": 120.0,
            "whole": {"p50": 3.0, "p95": 5.0, "p99": 8.0, "max": 20.0, "n": 120000},
            "quantiles_ms": latency_quantiles(3.0, 8.0, 20.0),
        },
        "goals": [goal("attribution RTM whole-run p99 ≤ 250 ms", False)],
    }
    return {"views.json": views, "bronze.json": bronze, "ops.json": ops}


def write(directory: Path, files: dict[str, dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (directory / name).write_text(json.dumps(value))
    return directory


def section(report: str, heading: str) -> str:
    """The text of one '## heading' section."""
    start = report.index(f"## {heading}")
    end = report.find("\n## ", start + 1)
    return report[start:] if end < 0 else report[start:end]


def test_the_report_has_a_table_per_benchmark_the_goals_and_every_plot(tmp_path):
    report_path = build(write(tmp_path / "in", synthetic()), tmp_path / "out", "make bench")
    report = report_path.read_text()

    views = section(report, "View refresh")
    assert (
        "| `fixed_change` | 100,000,000 | 100,000 | 2.70 s | 118.00 s | 43.7× | 12 | 1 | 0 |"
        in views
    )
    assert "| `one_row` | 10,000,000 | 1 | 1.30 s | – | – |" in views
    assert "| bookkeeping | change | merge |" in views  # the phases' columns
    bronze = section(report, "Bronze and silver")
    assert "| 1,000,000 | 8 | 6.50 s | 104,000 records/s | 71,000 records/s | 4 |" in bronze
    assert "| `silver` | 11.40 s |" in bronze
    ops = section(report, "Operational apps")
    assert (
        "| attribution | Real-Time Mode | 1,000/s | 120 s | 36 ms | 706 ms | 1,413 ms | "
        "2,366 ms | 120,000 | 36 ms | 353 ms | 592 ms | 4 | 1.5 → 2.2 |" in ops
    )
    assert "| bare Kafka hop (produce → consume) | – | 1,000/s | 120 s | 3.0 ms |" in ops
    assert "| click_surge Real-Time Mode | 10.3× | 7.5× |" in ops  # 31/3, 60/8
    assert "**Boundaries of attribution Real-Time Mode" in ops
    assert "| 115 s | 2,103 ms | 700 ms | 400 ms | 900 ms | 40 ms | 30 ms | 1,203 |" in ops

    goals = section(report, "Goals")
    assert "| views | 1-row refresh | ≤ 1.5 s | 1.2 s | yes | Delta's MERGE commit |" in goals
    assert "| views | append-only at 10M ≥ 5× full | ≤ 1.5 s | 1.2 s | **no** |" in goals
    assert (
        "| bronze | bronze steady-state ingest | ≥ 100,000 records/s | 104,000 records/s "
        "| yes | 2 cores |" in goals
    )
    assert "| ops | attribution RTM whole-run p99 ≤ 250 ms |" in goals

    machine = section(report, "Machine and run")
    assert "Command: `make bench`" in machine
    assert "| bronze | 0.8 → 1.2 |" in machine

    for name in FILES:  # the figures travel with the report
        assert json.loads((tmp_path / "out" / name).read_text()) == synthetic()[name]
        assert f"[{name}]({name})" in report
    for name in PLOTS:
        png = tmp_path / "out" / name
        assert png.read_bytes()[:8] == PNG_MAGIC, name
        # axes, lines and labels, not a blank canvas; small enough to commit with the report
        assert 10_000 < png.stat().st_size <= 80_000, name
        assert f"]({name})" in report


def test_a_run_that_measured_no_output_is_a_row_of_dashes_with_its_note(tmp_path):
    files = synthetic()
    attribution = files["ops.json"]["runs"][2]
    attribution.update(
        whole={"p50": None, "p95": None, "p99": None, "max": None, "n": 0},
        quantiles_ms=[],
        timeline=[],
        notes=["no output measured; see its log"],
    )
    attribution["boundaries"][0]["stall_ms"] = None
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    ops = section(report, "Operational apps")
    assert "| attribution | Real-Time Mode | 1,000/s | 120 s | – | – | – | – | 0 |" in ops
    assert "* attribution Real-Time Mode at 1,000/s: no output measured; see its log" in ops
    assert "| 25 s | – | 700 ms |" in ops  # the boundary without a measured stall
    assert "| attribution Real-Time Mode | – | – |" in ops  # no ratio to the hop
    assert (tmp_path / "out" / "latency-cdf.png").stat().st_size > 10_000
    assert (tmp_path / "out" / "latency-timeline.png").stat().st_size > 10_000  # click-surge's


def test_a_runs_interval_and_its_timer_driven_records_are_shown(tmp_path):
    files = synthetic()
    attribution = files["ops.json"]["runs"][2]
    attribution["rtm_interval"] = "30 seconds"
    attribution["timer_driven"] = {
        "p50": 31_000.0,
        "p95": 40_000.0,
        "p99": 48_500.0,
        "max": 50_200.0,
        "n": 7_000,
        "bound_ms": 56_000.0,
        "within_bound": 7_000,
    }
    ops = section(build(write(tmp_path / "in", files), tmp_path / "out").read_text(), "Operational")
    assert "| attribution | Real-Time Mode (30 seconds) | 1,000/s |" in ops
    assert "| click_surge | Real-Time Mode | 1,000/s |" in ops  # a run without one: as before
    assert "| attribution Real-Time Mode | 31,000 ms | 48,500 ms | 50,200 ms | 7,000 |" in ops
    assert "| 56,000 ms | 7,000 |" in ops


def test_what_a_benchmark_could_not_measure_is_listed_as_failed(tmp_path):
    files = synthetic()
    files["ops.json"]["kafka_hop"] = {"rate": 1000.0, "duration_s": 120.0, "whole": {}}
    files["ops.json"]["errors"] = ["kafka hop: KafkaException: broker down"]
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    ops = section(report, "Operational apps")
    assert "**Failed** (not measured):\n\n* kafka hop: KafkaException: broker down" in ops
    assert "bare Kafka hop (produce → consume)" not in ops
    assert "**Failed**" not in section(report, "View refresh")


def test_a_missing_benchmark_is_reported_as_not_run(tmp_path):
    build(write(tmp_path / "in", synthetic()), tmp_path / "out")  # an earlier, complete run
    files = synthetic()
    del files["ops.json"], files["views.json"]
    for name in ("ops.json", "views.json"):
        (tmp_path / "in" / name).unlink()
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    assert "Not run: no `ops.json`" in section(report, "Operational apps")
    assert "Not run: no `views.json`" in section(report, "View refresh")
    assert "104,000 records/s" in section(report, "Bronze and silver")
    assert "Not drawn: no ops.json." in report
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["bronze-throughput.png"]
    assert "[bronze.json](bronze.json)" in report and "[ops.json]" not in report


def test_an_empty_directory_gives_a_report_of_nothing_run(tmp_path):
    (tmp_path / "in").mkdir()
    report = build(tmp_path / "in", tmp_path / "out").read_text()

    for file in FILES:
        assert f"Not run: no `{file}`" in report
    assert "No goals" in report


def test_the_boundary_analysis_is_linked_when_it_is_beside_the_report(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "attribution-boundary.md").write_text("# boundary\n")
    report = build(write(tmp_path / "in", synthetic()), tmp_path / "out").read_text()

    assert "[attribution-boundary.md](attribution-boundary.md)" in report


@pytest.mark.parametrize(
    ("file", "damage", "message"),
    [
        (
            "ops.json",
            lambda d: d["runs"][1]["whole"].pop("p99"),
            "ops.json: runs[1].whole.p99: missing",
        ),
        (
            "ops.json",
            lambda d: d["runs"][0].update(quantiles_ms=[1.0, 2.0]),
            "ops.json: runs[0].quantiles_ms: expected 1001 numbers",
        ),
        (
            "ops.json",
            lambda d: d["runs"][2].update(mode="continuous"),
            "ops.json: runs[2].mode: expected one of",
        ),
        (
            "views.json",
            lambda d: d["cases"][3].update(incremental_s="2.3 s"),
            "views.json: cases[3].incremental_s: expected a number, got '2.3 s'",
        ),
        (
            "views.json",
            lambda d: d["goals"][0].update(met="yes"),
            "views.json: goals[0].met: expected true or false, got 'yes'",
        ),
        (
            "bronze.json",
            lambda d: d.update(load_average=[1.0]),
            "bronze.json: load_average: expected 2 numbers",
        ),
        ("bronze.json", lambda d: d.pop("goal"), "bronze.json: goal: missing"),
    ],
)
def test_a_malformed_json_names_its_file_and_field(tmp_path, file, damage, message):
    files = synthetic()
    damage(files[file])
    write(tmp_path / "in", files)

    with pytest.raises(
        MalformedReport,
        match="^" + message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\."),
    ):
        build(tmp_path / "in", tmp_path / "out")
    assert not (tmp_path / "out" / "REPORT.md").exists()


def test_a_file_that_is_not_json_fails_the_command_with_its_name(tmp_path, capsys):
    write(tmp_path / "in", synthetic())
    (tmp_path / "in" / "bronze.json").write_text('{"records": 1,')

    assert main([str(tmp_path / "in"), "--to", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "bronze.json: not JSON" in err and "line 1" in err


def test_the_command_writes_the_report_beside_the_json_by_default(tmp_path, capsys):
    write(tmp_path, synthetic())

    assert main([str(tmp_path), "--command", "make bench-quick"]) == 0
    assert "Command: `make bench-quick`" in (tmp_path / "REPORT.md").read_text()
    assert "**A quick run**" not in (tmp_path / "REPORT.md").read_text()
    assert f"wrote {tmp_path / 'REPORT.md'}" in capsys.readouterr().out


# -- the smoke test: make bench-quick end to end --------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[3]
SECTIONS = (
    "## Machine and run",
    "## Goals",
    "## View refresh",
    "## Bronze and silver",
    "## Operational apps",
    "## Recovery from a crash",
    "## Plots",
)


@pytest.mark.integration  # make starts the benchmarks' brokers and Spark as subprocesses
def test_make_bench_quick_writes_every_section_and_plot(tmp_path):
    """`make bench-quick` as CI runs it: the smoke form of every benchmark of the report on real
    brokers and Spark (each its own, under a runtime directory of this test's), then the report
    from the JSON they wrote. No figure is asserted: a broken tool fails it."""
    settings = private_settings(tmp_path / "runtime")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADLAKE_")} | {
        "ADLAKE_PROFILE": "local",
        "ADLAKE_RUNTIME_DIR": str(settings.runtime_dir),
        "ADLAKE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "ADLAKE_KAFKA_CONTROLLER_PORT": str(settings.kafka_controller_port),
    }
    out = tmp_path / "bench-quick"
    log = tmp_path / "make.log"
    with open(log, "wb") as sink:
        done = subprocess.run(
            ["make", "--no-print-directory", "bench-quick", f"BENCH_DIR={out}"],
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=10 * 60,
            check=False,
        )
    assert done.returncode == 0, log.read_text()[-6000:]

    for name in (*FILES, "recovery.json", "recovery-quick/click_surge-5s.json"):
        assert (out / name).is_file(), f"make bench-quick wrote no {name}"
    assert not (out / "recovery").exists()  # the smoke run's file is apart from full runs'
    report = (out / "REPORT.md").read_text()
    for heading in SECTIONS:
        assert heading in report
    assert "Not run" not in report and "Not drawn" not in report
    assert "| bare Kafka hop (produce → consume) |" in report
    # the quick suite's one app, at the interval it ran
    assert "| click_surge | Real-Time Mode (5 seconds) |" in report
    assert "| click_surge | 5 seconds |" in section(report, "Recovery from a crash")
    assert "| recovery | click_surge back under the page's 1 s target" in report
    assert "| `append` |" in report and "| `one_row` |" in report
    assert "Command: `make bench-quick`" in report
    assert "**A quick run**" in report
    for name in PLOTS:
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name


def beside_and_backfill() -> dict[str, dict]:
    """``beside.json`` and ``backfill.json`` as bench.ops.beside and bench.lake.backfill write
    them (the fields the report reads)."""
    idle = ops_run("click_surge", "realtime", 30.0, 120.0, 900.0, [])
    beside = ops_run("click_surge", "realtime", 34.0, 300.0, 1900.0, [30.0, 60.0, 90.0])
    a_idle = ops_run("attribution", "processing_time", 900.0, 2000.0, 3000.0, [])
    a_beside = ops_run("attribution", "processing_time", 1500.0, 6000.0, 9000.0, [])
    return {
        "beside.json": {
            "apps": ["click_surge", "attribution"],
            "rate": 200.0,
            "rtm_interval": "30 seconds",
            "runs": {
                "idle": {"click_surge": idle, "attribution": a_idle},
                "beside": {"click_surge": beside, "attribution": a_beside},
            },
            "lake": {
                "slots": 1,
                "nice": 10,
                "rounds": [
                    {"views_s": 40.0, "gold_s": 120.0, "round_s": 130.0},
                    {"views_s": 44.0, "gold_s": 125.0, "round_s": 131.0},
                ],
            },
            "p99_ratio": {"click_surge": 2.5, "attribution": 3.0},
            "goals": [goal("click_surge p99 beside the lake", False)],
            "errors": [],
        },
        "backfill.json": {
            "days": 7,
            "rows_per_day": 1_000_000,
            "command": "airflow backfill create --dag-id lake_daily",
            "backfill": {
                "wall_s": 1500.0,
                "days_per_minute": 0.28,
                "runs": [{"day": "2026-11-14", "seconds": 210.0}],
                "task_seconds": {"gold_daily": 1200.0, "bronze": 40.0},
                "load_average": [2.0, 3.5],
            },
            "equal": {"rebuild_total_s": 400.0, "differences": 0},
            "goals": [goal("backfill of 7 days", False)],
            "errors": [],
        },
    }


def test_the_lake_beside_the_apps_and_backfills_have_their_section_when_run(tmp_path):
    files = {**synthetic(), **beside_and_backfill()}
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    lake = section(report, "The lake beside the apps")
    assert "| click_surge Real-Time Mode | idle | 30 ms | 120 ms | 900 ms | 120,000 |" in lake
    assert "| click_surge Real-Time Mode | beside | 34 ms | 300 ms | 1,900 ms | 120,000 |" in lake
    assert "| attribution micro-batch | beside | 1,500 ms | 6,000 ms | 9,000 ms |" in lake
    assert "| **click_surge** | **beside / idle** |  | **2.50×** |" in lake
    assert "| **attribution** | **beside / idle** |  | **3.00×** |" in lake
    assert "(1 slot(s), niceness 10)" in lake
    assert "views 40 s after silver, gold 120 s; views 44 s after silver, gold 125 s" in lake
    assert "**25.0 min** (0.28 days/min; load average 2.0 → 3.5)" in lake
    assert "differs from it in 0 rows" in lake and "| run | 210 s |" in lake
    goals = section(report, "Goals")
    assert "| beside | click_surge p99 beside the lake |" in goals
    assert "| backfill | backfill of 7 days |" in goals
    png = tmp_path / "out" / bench_report.ALL_PLOTS["beside"]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000

    # Without them (a quick run): the section and the plot name their targets, nothing "not run".
    for name in beside_and_backfill():
        (tmp_path / "in" / name).unlink()
    report = build(tmp_path / "in", tmp_path / "out").read_text()
    lake = section(report, "The lake beside the apps")
    assert "`make bench-beside` writes it" in lake and "`make bench-backfill` writes it" in lake
    assert "Not run" not in lake and "Not drawn: no beside" not in report  # make bench-quick's test
    assert not png.exists()


def maintenance_json() -> dict:
    def state(mean, top, live, disk, read, refresh):
        return {
            "gold_files": {"partitions": 9, "mean": mean, "max": top},
            "disk": {"live_bytes": live, "disk_bytes": disk, "ratio": round(disk / live, 2)},
            "gold_read_s": read,
            "view_refresh_s": refresh,
            "load_average": 1.25,
        }

    return {
        "hours": 200,
        "clicks_per_day": 13_581,
        "first": state(1, 1, 1e6, 1e6, 0.4, 2.0),
        "without": state(22.5, 24, 9e6, 60e6, 1.5, 3.5),
        "after": state(1, 1, 9e6, 9.5e6, 0.45, 2.1),
        "maintenance_s": 31.5,
        "goals": [goal("files per gold day-partition after maintenance", True)],
        "clustering": {
            "key": "page_id",
            "files_per_day": 8,
            "max_file_bytes": 5120,
            "one_file_a_day": {"files": 9, "files_opened": 9, "read_s": 0.3},
            "spread": {"files": 72, "files_opened": 72, "read_s": 0.9},
            "zordered": {"files": 72, "files_opened": 10, "read_s": 0.35, "optimize_s": 12.0},
        },
    }


def supervisor_json() -> dict:
    return {
        "runs": 5,
        "window_s": 300,
        "per_run": {
            "airflow_cpu_s": 4.5,
            "machine_cpu_s": 5.0,
            "rows": 12,
            "db_bytes": 8192,
            "log_bytes": 2048,
        },
        "timing": {"due_to_done_s": {"median": 6.0, "max": 9.0}},
        "trade_off": [
            {
                "interval_min": 1,
                "runs_per_day": 1440,
                "airflow_cpu_s_per_day": 6480,
                "cpu_share_of_cores": 0.0375,
                "rows_per_day": 17280,
                "log_mib_per_day": 2.8,
                "restart_wait_max_s": 69,
            }
        ],
        "clean_db": {"dag_run": [6, 1], "task_instance": [6, 1], "log": [40, 0]},
    }


def test_table_maintenance_has_its_section_and_plot_when_run(tmp_path):
    files = {**synthetic(), "maintenance.json": maintenance_json()}
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    part = section(report, "Table maintenance")
    assert "| 200 hours, no maintenance | 22.5, 24 | 9.0 MB | 60.0 MB | 6.67× | 1.50 s |" in part
    assert "| 200 hours and maintenance | 1.0, 1 | 9.0 MB | 9.5 MB | 1.06× | 0.45 s |" in part
    assert "| maintenance | files per gold day-partition after maintenance |" in report
    assert "| ZORDER BY key, files up to 5.0 KiB | 72 | 10 | 0.35 s |" in part
    assert "(`page_id`)" in part and "at that file size (12.0 s)" in part
    png = tmp_path / "out" / bench_report.ALL_PLOTS["maintenance"]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000

    (tmp_path / "in" / "maintenance.json").unlink()
    report = build(tmp_path / "in", tmp_path / "out").read_text()
    assert "`make bench-maintenance` writes `maintenance.json`" in report
    assert "Not in this run (no maintenance.json): `make bench-maintenance`." in report


def test_the_supervisor_runs_have_their_section_when_run(tmp_path):
    files = {**synthetic(), "supervisor.json": supervisor_json()}
    report = build(write(tmp_path / "in", files), tmp_path / "out").read_text()

    part = section(report, "The supervisor's runs")
    assert "5 runs in 300 s" in part and "4.50 CPU s" in part and "12 rows" in part
    assert "| 1 min | 1,440 | 108 CPU min | 3.75 % | 17,280 | 2.8 MiB | 69 s |" in part
    assert "dag_run 1 of 6, task_instance 1 of 6, log 0 of 40" in part

    (tmp_path / "in" / "supervisor.json").unlink()
    report = build(tmp_path / "in", tmp_path / "out").read_text()
    assert "`make bench-supervisor` writes `supervisor.json`" in section(
        report, "The supervisor's runs"
    )


def boundary_run(app: str, stalls: list[float], commits: list[float], p99: float) -> dict:
    """A run file as bench.ops.boundary keeps it: two state partitions per boundary."""
    bounds = [
        {
            "stall_ms": stall,
            "peak_ms": stall + 100,
            "durations_ms": {
                "commitOffsets": 40,
                "latestOffset": 10,
                "walCommit": 30,
                "queryPlanning": 120,
                "addBatchOverInterval": commit / 2,
            },
            "state_operator_metrics": [
                {
                    "commitTimeMs": commit / 2,
                    "customMetrics": {
                        "rocksdbCommitFileSyncLatencyMs": commit / 2 - 5,
                        "rocksdbLoadLatencyMs": 25,
                    },
                },
                {
                    "commitTimeMs": commit / 2,
                    "customMetrics": {
                        "rocksdbCommitFileSyncLatencyMs": commit / 2 - 5,
                        "rocksdbLoadLatencyMs": 25,
                    },
                },
            ],
            "timers_fired": 0 if app == "attribution" else None,
        }
        for stall, commit in zip(stalls, commits)
    ]
    return {
        "app": app,
        "results": [
            {
                "boundaries": bounds,
                "whole": {"p50": 30.0, "p95": 60.0, "p99": p99, "max": max(stalls) + 100},
                "between_boundaries": {"p50": 30.0, "p99": 56.0, "max": 90.0},
                "output_rows_per_s": 999.0,
                "lag_at_end_ms": 40.0,
                "load_average": [0.5, 1.5],
                "quantiles_ms": latency_quantiles(30, p99, max(stalls) + 100),
            }
        ],
    }


def test_the_boundary_runs_are_summarised_into_a_table_and_the_best_ones_cdf(tmp_path):
    from bench.ops import boundary

    runs = {
        ("4-4", "click_surge", 1): boundary_run(
            "click_surge", [800, 900, 700], [600, 700, 650], 450
        ),
        ("2-2", "click_surge", 1): boundary_run("click_surge", [700, 650], [180, 200], 380),
        ("2-2", "click_surge", 2): boundary_run("click_surge", [600, 640], [170, 190], 360),
        ("2-2-window-20", "attribution", 1): boundary_run("attribution", [900], [200], 100),
        ("2-2", "attribution", 1): boundary_run("attribution", [880, 920], [210, 230], 660),
    }
    for (name, app, repeat), run in runs.items():
        path = boundary.run_file(tmp_path / "in", boundary.by_name()[name], app, repeat)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run))
    summary = boundary.summarise(tmp_path / "in")
    assert [r.key for r in summary.runs] == [
        ("4-4", "click_surge", 1),
        ("2-2", "click_surge", 1),
        ("2-2", "click_surge", 2),
        ("2-2", "attribution", 1),
        ("2-2-window-20", "attribution", 1),
    ]
    first = summary.runs[0]
    assert first.stall_ms == {"median": 800, "max": 900}
    assert first.steps_ms["state_commit"] == 650 and first.steps_ms["state_load"] == 50
    assert first.tasks == 8  # 4 source partitions + 4 shuffle partitions

    report = build(write(tmp_path / "in", synthetic()), tmp_path / "out").read_text()
    part = section(report, "Real-Time Mode's boundary against its settings")
    assert "| click_surge | checksums on (run 2) | (2, 2) | 4 | 620 ms / 640 ms |" in part
    assert "| 180 ms (170 ms) / 50 ms | 200 ms |" in part  # commit (sync) / load, plan + logs
    # the 20 s window changes attribution's rules: its 100 ms p99 is not the best
    assert "attribution 660 ms (checksums on, (2, 2))" in part
    assert "click_surge 360 ms (checksums on, (2, 2))" in part
    assert "(2, 2) (topic, shuffle) partitions, checkpoint checksums off." in part
    goals = section(report, "Goals")
    assert "click_surge whole-run p99 in Real-Time Mode at 1,000 events/s (30 seconds " in goals
    assert "| <= 120 ms | 360 ms (checksums on, (2, 2)) | **no** |" in goals
    assert "| <= 500 ms | 660 ms (checksums on, (2, 2)) | **no** |" in goals
    # the burst runs are their own goal row, against the same target
    assert "timers firing at every boundary | <= 500 ms | 100 ms (a 20 s" in goals
    png = tmp_path / "out" / bench_report.ALL_PLOTS["boundary"]
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000

    (tmp_path / "in" / "boundary.json").unlink()
    report = build(tmp_path / "in", tmp_path / "out").read_text()
    assert "`make bench-boundary` writes `boundary.json`" in report


def test_the_boundary_summary_as_written_is_the_value_the_report_reads(tmp_path):
    """bench.ops.boundary writes a BoundaryMatrix with asdict; the report reads the same value
    back, and a later summary keeps an earlier one's runs (``--keep``) that it does not measure
    again, read from that summary's file."""
    from bench.ops import boundary, boundary_report

    def run_in(out: Path, name: str, app: str, p99: float) -> None:
        path = boundary.run_file(out, boundary.by_name()[name], app)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(boundary_run(app, [700, 650], [180, 200], p99)))

    run_in(tmp_path / "a", "2-2", "click_surge", 380)
    run_in(tmp_path / "a", "4-4", "click_surge", 450)
    earlier = boundary.summarise(tmp_path / "a")
    written = json.loads((tmp_path / "a" / "boundary.json").read_text())
    read, goals = boundary_report.read_boundary(Node("boundary.json", "", written))
    assert read == earlier and goals[0].measured == "380 ms (checksums on, (2, 2))"
    run_in(tmp_path / "b", "2-2", "click_surge", 300)
    later = boundary.summarise(tmp_path / "b", keep=read)
    assert [(r.configuration, r.whole["p99"]) for r in later.runs] == [("4-4", 450), ("2-2", 300)]


def test_a_report_built_from_its_own_summaries_is_the_same_report(tmp_path):
    """The JSON beside a report is what the report read of each benchmark's output (not the
    whole run output): building again from it gives the same report and the same summaries."""
    files = {
        **synthetic(),
        **beside_and_backfill(),
        "maintenance.json": maintenance_json(),
        "supervisor.json": supervisor_json(),
    }
    files["ops.json"]["workdir_files"] = {"app.log": "raw output the report never reads"}
    files["ops.json"]["cores"] = 2  # a plain top-level value the machine section reads as is
    for run in files["ops.json"]["runs"]:
        run["batches"] = [{"batch_id": 1, "state_operator_metrics": [{"numRowsTotal": 5}]}]
    first = build(write(tmp_path / "in", files), tmp_path / "out")
    second = build(tmp_path / "out", tmp_path / "again")

    def masked(report: Path) -> str:
        return re.sub(r"report built [0-9-]+ [0-9:]+", "report built", report.read_text())

    assert masked(second) == masked(first)
    for name in files:
        kept = json.loads((tmp_path / "out" / name).read_text())
        assert json.loads((tmp_path / "again" / name).read_text()) == kept, name
    ops = json.loads((tmp_path / "out" / "ops.json").read_text())
    assert "workdir_files" not in ops and all("batches" not in r for r in ops["runs"])
    assert (ops["cores"], ops["goals"]) == (2, files["ops.json"]["goals"])
