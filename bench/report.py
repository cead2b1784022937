"""One report of every benchmark: Markdown tables, the goals met or not, and PNG plots.

``make bench`` (and ``make bench-quick``) run each benchmark with ``--out-dir DIR``; each writes
one JSON file there (the contract is below). This module reads whichever of them are present
and writes ``OUT/REPORT.md`` and its plots::

    .venv/ops/bin/python -m bench.report DIR --to OUT

* ``views.json`` (``bench.lake.views --suite``): a row per case (delete/update,
  append, a fixed change per source size, one row): incremental and full refresh times, phases,
  Spark jobs, Delta commits.
* ``bronze.json`` (``bench.lake.bronze``): records/s steady and wall, per batch, the
  start-up, each job's fixed cost.
* ``ops.json`` (``bench.ops.latency suite``): per run the latency percentiles, 1001
  quantiles (the CDF), a 5 s timeline, the interval boundaries with their stall and durations;
  the bare Kafka hop.
* ``scale.json`` (``bench.lake.scale``): gold's hourly and daily runs at each size of silver's
  history (seconds, per table, as a process too), and the day's first and last hour.
* ``beside.json`` (``bench.ops.beside``): an app's Real-Time Mode latency with the lake idle and
  while the hourly chain runs; ``backfill.json`` (``bench.lake.backfill``): a backfill of days
  through the real scheduler, against one rebuild. Both are long (``make bench`` runs them,
  ``make bench-quick`` does not): when absent, their section says how to run them.

Every file carries ``load_average`` ([start, end], ``os.getloadavg()``'s 1-minute figure) and
its goals (``goals``, or bronze's one ``goal``: goal, target, measured, met, bound); the report
gathers them in one table. A file that is absent makes its section say "not run"; a file that is
present but malformed stops the build with :class:`MalformedReport`, naming the file and the
field. Only matplotlib's Agg backend is used (no display), imported when the plots are drawn, so
the tables build in either environment; the plots need the ops environment's matplotlib.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adlake import registry
from adlake.helpformat import HelpFormatter
from bench.harness import BRONZE_GOAL_RECORDS_PER_S, save_plot

FILES = ("views.json", "bronze.json", "ops.json")
# Gold at scale (bench.lake.scale): read and reported like FILES, listed apart because the
# report's tests (tests/bench/ops/test_report.py) hold a synthetic JSON for each of FILES.
SCALE_FILE = "scale.json"
# The lake beside the apps and backfills of days (bench.ops.beside, bench.lake.backfill):
# minutes to an hour each, so not in the quick run; absent, their section names their target.
BESIDE_FILE, BACKFILL_FILE = "beside.json", "backfill.json"
# Table maintenance after 200 hourly runs (bench.lake.maintenance), the same kind of section.
MAINTENANCE_FILE = "maintenance.json"
# What apps_supervisor's run every minute costs (bench.ops.supervisor), the same kind again.
SUPERVISOR_FILE = "supervisor.json"
# Real-Time Mode's boundary against partitions and state-store settings (bench.ops.boundary).
BOUNDARY_FILE = "boundary.json"
INPUT_FILES = (
    *FILES,
    SCALE_FILE,
    BESIDE_FILE,
    BACKFILL_FILE,
    MAINTENANCE_FILE,
    SUPERVISOR_FILE,
    BOUNDARY_FILE,
)
BOUNDARY_NOTE = "attribution-boundary.md"  # an analysis a benchmark may leave beside the report
PLOTS = {
    "cdf": "latency-cdf.png",
    "timeline": "latency-timeline.png",
    "views": "view-refresh.png",
    "bronze": "bronze-throughput.png",
}
SCALE_PLOT = "gold-scale.png"  # the plot of scale.json (see SCALE_FILE)
ALL_PLOTS = {
    **PLOTS,
    "scale": SCALE_PLOT,
    "beside": "latency-beside-lake.png",
    "maintenance": "table-maintenance.png",
    "boundary": "boundary-cdf.png",
}
# Plots of the long benchmarks that not every run has: absent, they name their target.
OPTIONAL_PLOTS = {
    "beside": "make bench-beside",
    "maintenance": "make bench-maintenance",
    "boundary": "make bench-boundary",
}


class MalformedReport(ValueError):
    """A benchmark's JSON that is not what the contract says: which file, which field, why.

    >>> str(MalformedReport("ops.json", "runs[0].whole.p99", "missing"))
    'ops.json: runs[0].whole.p99: missing'
    """

    def __init__(self, file: str, where: str, problem: str):
        self.file, self.where, self.problem = file, where, problem
        super().__init__(f"{file}: {where}: {problem}" if where else f"{file}: {problem}")


# -- reading: the contract's fields, checked as they are read ---------------------------------------


@dataclass(frozen=True)
class Node:
    """A JSON value and where it sits (file and path), so that a missing or mistyped field says
    exactly which one.

    >>> Node("bronze.json", "", {"records": 10}).num("records")
    10.0
    >>> Node("bronze.json", "", {"records": "ten"}).num("records")
    Traceback (most recent call last):
    ...
    bench.report.MalformedReport: bronze.json: records: expected a number, got 'ten'
    """

    file: str
    where: str
    value: Any

    def _child(self, key: str | int) -> Node:
        where = (
            f"{self.where}[{key}]"
            if isinstance(key, int)
            else (f"{self.where}.{key}" if self.where else key)
        )
        if isinstance(key, int):
            return Node(self.file, where, self.value[key])
        if not isinstance(self.value, Mapping):
            raise MalformedReport(
                self.file, self.where, f"expected an object, got {self.value!r:.60}"
            )
        if key not in self.value:
            raise MalformedReport(self.file, where, "missing")
        return Node(self.file, where, self.value[key])

    def _fail(self, expected: str) -> MalformedReport:
        return MalformedReport(
            self.file, self.where, f"expected {expected}, got {self.value!r:.60}"
        )

    def get(self, key: str) -> Node:
        return self._child(key)

    def has(self, key: str) -> bool:
        return isinstance(self.value, Mapping) and self.value.get(key) is not None

    def num(self, key: str | None = None, optional: bool = False) -> float | None:
        node = self._child(key) if key is not None else self
        if node.value is None and optional:
            return None
        if (
            isinstance(node.value, bool)
            or not isinstance(node.value, (int, float))
            or math.isnan(node.value)
        ):
            raise node._fail("a number" + (" or null" if optional else ""))
        return float(node.value)

    def text(self, key: str) -> str:
        return self._child(key).text_value()

    def text_value(self) -> str:
        if not isinstance(self.value, str):
            raise self._fail("a string")
        return self.value

    def flag(self, key: str) -> bool:
        node = self._child(key)
        if not isinstance(node.value, bool):
            raise node._fail("true or false")
        return node.value

    def items(self, key: str) -> list[Node]:
        node = self._child(key)
        if not isinstance(node.value, list):
            raise node._fail("a list")
        return [node._child(i) for i in range(len(node.value))]

    def numbers(self, key: str, length: int | None = None) -> list[float]:
        values = [n.num() for n in self.items(key)]
        if length is not None and len(values) != length:
            raise self._child(key)._fail(f"{length} numbers")
        return values

    def mapping(self, key: str) -> dict[str, float]:
        """An object of numbers (phases, durations), in its order; null values left out."""
        node = self._child(key)
        if not isinstance(node.value, Mapping):
            raise node._fail("an object")
        numbers = {k: node.num(k, optional=True) for k in node.value}
        return {k: v for k, v in numbers.items() if v is not None}


@dataclass(frozen=True)
class Goal:
    benchmark: str
    goal: str
    target: str
    measured: str
    met: bool
    bound: str

    @classmethod
    def read(cls, benchmark: str, node: Node) -> Goal:
        return cls(
            benchmark,
            node.text("goal"),
            node.text("target"),
            node.text("measured"),
            node.flag("met"),
            node.text("bound"),
        )


def load_average(node: Node) -> tuple[float, float]:
    start, end = node.numbers("load_average", length=2)
    return start, end


@dataclass(frozen=True)
class ViewCase:
    case: str
    rows: int
    change_rows: int
    incremental_s: float
    full_s: float | None
    ratio: float | None
    phases: dict[str, float]
    jobs: dict[str, float]
    commits: int
    verify_differences: int | None
    load: tuple[float, float]

    @property
    def total_jobs(self) -> float:
        return sum(self.jobs.values())


CASES = ("delete_update", "append", "fixed_change", "one_row")


def read_views(node: Node) -> tuple[list[ViewCase], list[Goal]]:
    cases = []
    for c in node.items("cases"):
        name = c.text("case")
        if name not in CASES:
            raise MalformedReport(
                c.file, f"{c.where}.case", f"expected one of {CASES}, got {name!r}"
            )
        differences = c.num("verify_differences", optional=True)
        cases.append(
            ViewCase(
                name,
                int(c.num("rows")),
                int(c.num("change_rows")),
                c.num("incremental_s"),
                c.num("full_s", optional=True),
                c.num("ratio", optional=True),
                c.mapping("phases"),
                c.mapping("jobs"),
                int(c.num("commits")),
                None if differences is None else int(differences),
                load_average(c),
            )
        )
    return cases, [Goal.read("views", g) for g in node.items("goals")]


@dataclass(frozen=True)
class Bronze:
    records: int
    partitions: int
    startup_s: float
    steady_records_per_s: float
    wall_records_per_s: float
    batches: list[tuple[int, float]]  # (records, seconds)
    fixed_cost_s: dict[str, float]
    load: tuple[float, float]
    fixed_cost_engine_s: dict[str, float] = field(default_factory=dict)


def read_bronze(node: Node) -> tuple[Bronze, list[Goal]]:
    bronze = Bronze(
        int(node.num("records")),
        int(node.num("partitions")),
        node.num("startup_s"),
        node.num("steady_records_per_s"),
        node.num("wall_records_per_s"),
        [(int(b.num("records")), b.num("seconds")) for b in node.items("batches")],
        node.mapping("fixed_cost_s"),
        load_average(node),
        node.mapping("fixed_cost_engine_s") if node.has("fixed_cost_engine_s") else {},
    )
    return bronze, [Goal.read("bronze", node.get("goal"))]


WHOLE = ("p50", "p95", "p99", "max", "n")
BETWEEN = ("p50", "p99", "max", "n")


@dataclass(frozen=True)
class Boundary:
    t_s: float
    stall_ms: float | None  # None: no output around it to measure the stall by
    durations_ms: dict[str, float]
    timers_fired: int | None


@dataclass(frozen=True)
class Run:
    app: str
    mode: str
    rate: float
    duration_s: float
    whole: dict[str, float | None]
    between: dict[str, float | None] | None
    quantiles_ms: list[float]
    timeline: list[dict[str, float]]
    boundaries: list[Boundary]
    load: tuple[float, float]
    notes: list[str]

    @property
    def label(self) -> str:
        return f"{self.app} {MODE_NAMES.get(self.mode, self.mode)}"


@dataclass(frozen=True)
class KafkaHop:
    rate: float
    duration_s: float
    whole: dict[str, float | None]
    quantiles_ms: list[float]
    load: tuple[float, float] | None


MODE_NAMES = {"realtime": "Real-Time Mode", "processing_time": "micro-batch"}
# The apps a run may be of: the registry's operational apps, in its order (the plots' too).
APPS = tuple(name for name, app in registry.APPS.items() if app.runtime == "ops")
QUANTILES = 1001  # latency at quantile 0.000, 0.001, ..., 1.000
SLICE_S = 5.0  # a timeline entry's span


def _percentiles(node: Node, key: str, names: Sequence[str]) -> dict[str, float | None]:
    inner = node.get(key)
    return {name: inner.num(name, optional=True) for name in names}


def _quantiles(node: Node, whole: dict[str, float | None]) -> list[float]:
    """The run's 1001 quantiles; none for a run that measured no output (``whole.n`` 0)."""
    if not whole["n"] and node.get("quantiles_ms").value in ([], None):
        return []
    return node.numbers("quantiles_ms", length=QUANTILES)


def _boundaries(run: Node) -> list[Boundary]:
    boundaries = []
    for b in run.items("boundaries"):
        fired = (
            b.num("timers_fired", optional=True)
            if isinstance(b.value, Mapping) and "timers_fired" in b.value
            else None
        )
        boundaries.append(
            Boundary(
                b.num("t_s"),
                b.num("stall_ms", optional=True),
                b.mapping("durations_ms"),
                None if fired is None else int(fired),
            )
        )
    return boundaries


def read_ops(node: Node) -> tuple[list[Run], KafkaHop | None, list[Goal]]:
    runs = []
    for r in node.items("runs"):
        app, mode = r.text("app"), r.text("mode")
        if app not in APPS:
            raise MalformedReport(r.file, f"{r.where}.app", f"expected one of {APPS}, got {app!r}")
        if mode not in MODE_NAMES:
            raise MalformedReport(
                r.file, f"{r.where}.mode", f"expected one of {tuple(MODE_NAMES)}, got {mode!r}"
            )
        timeline = [
            {k: s.num(k, optional=k != "t_s") for k in ("t_s", "n", "p50", "p99", "max")}
            for s in r.items("timeline")
        ]
        boundaries = _boundaries(r)
        whole = _percentiles(r, "whole", WHOLE)
        notes = [str(n.value) for n in r.items("notes")] if r.has("notes") else []
        runs.append(
            Run(
                app,
                mode,
                r.num("rate"),
                r.num("duration_s"),
                whole,
                _percentiles(r, "between_boundaries", BETWEEN)
                if r.has("between_boundaries")
                else None,
                _quantiles(r, whole),
                timeline,
                boundaries,
                load_average(r),
                notes,
            )
        )
    hop = None
    # The suite leaves the hop's `whole` empty when measuring it failed (its `errors` say why).
    if node.has("kafka_hop") and node.get("kafka_hop").value.get("whole") != {}:
        h = node.get("kafka_hop")
        whole = _percentiles(h, "whole", WHOLE)
        hop = KafkaHop(
            h.num("rate"),
            h.num("duration_s"),
            whole,
            _quantiles(h, whole),
            load_average(h) if h.has("load_average") else None,
        )
    goals = [Goal.read("ops", g) for g in node.items("goals")] if node.has("goals") else []
    return runs, hop, goals


@dataclass(frozen=True)
class GoldRun:
    """One gold run of ``scale.json``: its wall time, each table's seconds, the load around it."""

    seconds: float
    tables: dict[str, float]
    load: tuple[float, float]


@dataclass(frozen=True)
class ScaleStep:
    days: int
    rows: int  # the silver rows written for this size (the days added)
    files: int  # silver's files, all tables
    hourly: GoldRun
    daily: GoldRun
    process: GoldRun | None


@dataclass(frozen=True)
class HourRuns:
    label: str  # the hour's interval
    runs_s: list[float]
    median_s: float
    tables: dict[str, float]
    load: tuple[float, float]


@dataclass(frozen=True)
class Scale:
    rows_per_day: int
    last_day: str
    hourly_tables: list[str]
    daily_tables: list[str]
    history: list[ScaleStep]
    first_hour: HourRuns
    last_hour: HourRuns
    goal_ratio: float  # a run's goal: at most this many times its smallest history's time


def _table_seconds(node: Node) -> dict[str, float]:
    tables = node.get("tables")
    if not isinstance(tables.value, Mapping):
        raise tables._fail("an object")
    return {name: tables.get(name).num("seconds") for name in tables.value}


def _gold_run(node: Node) -> GoldRun:
    return GoldRun(node.num("seconds"), _table_seconds(node), load_average(node))


def _hour_runs(node: Node) -> HourRuns:
    interval = [n.value for n in node.items("interval")]
    return HourRuns(
        " to ".join(str(t) for t in interval),
        node.numbers("runs_s"),
        node.num("median_s"),
        _table_seconds(node),
        load_average(node),
    )


def read_scale(node: Node) -> tuple[Scale, list[Goal]]:
    history = []
    for step in node.items("history"):
        rows = step.get("rows_written")
        if not isinstance(rows.value, Mapping):
            raise rows._fail("an object")
        history.append(
            ScaleStep(
                int(step.num("days")),
                int(sum(rows.num(topic) for topic in rows.value)),
                int(step.num("files")),
                _gold_run(step.get("hourly")),
                _gold_run(step.get("daily")),
                _gold_run(step.get("process")) if step.has("process") else None,
            )
        )
    if not history:
        raise MalformedReport(node.file, "history", "expected at least one size")
    position = node.get("position")
    scale = Scale(
        int(node.num("rows_per_day")),
        node.text("last_day"),
        [n.value for n in node.items("hourly_tables")],
        [n.value for n in node.items("daily_tables")],
        history,
        _hour_runs(position.get("first")),
        _hour_runs(position.get("last")),
        node.num("goal_ratio"),
    )
    return scale, [Goal.read("scale", g) for g in node.items("goals")]


@dataclass
class Inputs:
    """What DIR holds: each benchmark's figures, or None where its JSON is absent."""

    directory: Path
    views: list[ViewCase] | None = None
    bronze: Bronze | None = None
    runs: list[Run] | None = None
    kafka_hop: KafkaHop | None = None
    scale: Scale | None = None
    beside: Beside | None = None
    backfill: Backfill | None = None
    maintenance: Maintenance | None = None
    supervisor: Supervisor | None = None
    boundary: BoundaryMatrix | None = None
    goals: list[Goal] = field(default_factory=list)
    extras: dict[str, dict] = field(default_factory=dict)  # each file's raw JSON (machine, command)
    modified: dict[str, float] = field(default_factory=dict)  # each file's mtime


def _load_json(path: Path) -> Node:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise MalformedReport(
            path.name, "", f"not JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        ) from None
    if not isinstance(value, dict):
        raise MalformedReport(path.name, "", f"expected a JSON object, got {type(value).__name__}")
    return Node(path.name, "", value)


def read_inputs(directory: Path) -> Inputs:
    """Every benchmark JSON present in ``directory``, checked against the contract."""
    inputs = Inputs(directory)
    for name in INPUT_FILES:
        path = directory / name
        if not path.is_file():
            continue
        node = _load_json(path)
        inputs.extras[name] = node.value
        inputs.modified[name] = path.stat().st_mtime
        if name == "views.json":
            inputs.views, goals = read_views(node)
        elif name == "bronze.json":
            inputs.bronze, bronze_goals = read_bronze(node)
            goals = bronze_goals
        elif name == SCALE_FILE:
            inputs.scale, goals = read_scale(node)
        elif name == BESIDE_FILE:
            inputs.beside, goals = read_beside(node)
        elif name == BACKFILL_FILE:
            inputs.backfill, goals = read_backfill(node)
        elif name == MAINTENANCE_FILE:
            inputs.maintenance, goals = read_maintenance(node)
        elif name == SUPERVISOR_FILE:
            inputs.supervisor, goals = read_supervisor(node), []
        elif name == BOUNDARY_FILE:
            inputs.boundary = read_boundary(node)
            goals = [Goal.read("boundary", g) for g in node.items("goals")]
        else:
            inputs.runs, inputs.kafka_hop, goals = read_ops(node)
        inputs.goals.extend(goals)
    return inputs


# -- writing: Markdown ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Beside:
    """``beside.json``: each app in its default trigger, with the lake idle and beside the lake
    (its engine running the chain and the view refreshes), and the lake's rounds meanwhile."""

    rate: float
    rtm_interval: str
    runs: dict[str, dict[str, Run]]  # app -> "idle" / "beside" -> its run
    ratios: dict[str, float | None]  # app -> its p99 beside / idle
    slots: int
    nice: int
    rounds: list[dict[str, float]]  # views_s, gold_s, round_s of each of the lake's rounds


def read_beside(node: Node) -> tuple[Beside, list[Goal]]:
    runs: dict[str, dict[str, Run]] = {}
    for key in ("idle", "beside"):
        by_app = node.get("runs").get(key)
        for app in node.items("apps"):
            name = app.text_value()
            r = by_app.get(name)
            whole = _percentiles(r, "whole", WHOLE)
            runs.setdefault(name, {})[key] = Run(
                name,
                r.text("mode"),
                r.num("rate"),
                r.num("duration_s"),
                whole,
                _percentiles(r, "between_boundaries", BETWEEN),
                _quantiles(r, whole),
                [],
                _boundaries(r),
                load_average(r),
                [],
            )
    lake = node.get("lake")
    rounds = [{k: r.num(k) for k in ("views_s", "gold_s", "round_s")} for r in lake.items("rounds")]
    beside = Beside(
        node.num("rate"),
        node.text("rtm_interval"),
        runs,
        {name: node.get("p99_ratio").num(name, optional=True) for name in runs},
        int(lake.num("slots")),
        int(lake.num("nice")),
        rounds,
    )
    return beside, [Goal.read("beside", g) for g in node.items("goals")]


@dataclass(frozen=True)
class Backfill:
    """``backfill.json``: a backfill of days through the scheduler, against one rebuild."""

    days: int
    rows_per_day: int
    command: str
    wall_s: float
    days_per_minute: float
    runs: list[tuple[str, float | None]]  # (day, seconds)
    task_seconds: dict[str, float]
    rebuild_s: float
    differences: int
    load: tuple[float, float]


def read_backfill(node: Node) -> tuple[Backfill, list[Goal]]:
    run = node.get("backfill")
    backfill = Backfill(
        int(node.num("days")),
        int(node.num("rows_per_day")),
        node.text("command"),
        run.num("wall_s"),
        run.num("days_per_minute"),
        [(r.text("day"), r.num("seconds", optional=True)) for r in run.items("runs")],
        run.mapping("task_seconds"),
        node.get("equal").num("rebuild_total_s"),
        int(node.get("equal").num("differences")),
        load_average(run),
    )
    return backfill, [Goal.read("backfill", g) for g in node.items("goals")]


@dataclass(frozen=True)
class MaintenanceState:
    """The lake's files after some hourly runs (``maintenance.json``'s ``first``, ``without``,
    ``after``)."""

    files_mean: float
    files_max: float
    live_bytes: float
    disk_bytes: float
    ratio: float | None
    read_s: float
    refresh_s: float
    load: float


@dataclass(frozen=True)
class Maintenance:
    hours: int
    clicks_per_day: int
    states: dict[str, MaintenanceState]  # "first", "without", "after"
    maintenance_s: float
    # gold's key point read: label → (files, files opened, read s); absent in older runs
    clustering: dict[str, tuple[float, float, float]] | None = None
    clustering_key: str | None = None
    zorder_s: float | None = None


def read_maintenance(node: Node) -> tuple[Maintenance, list[Goal]]:
    states = {}
    for key in ("first", "without", "after"):
        state = node.get(key)
        files, disk = state.get("gold_files"), state.get("disk")
        states[key] = MaintenanceState(
            files.num("mean"),
            files.num("max"),
            disk.num("live_bytes"),
            disk.num("disk_bytes"),
            disk.num("ratio", optional=True),
            state.num("gold_read_s"),
            state.num("view_refresh_s"),
            state.num("load_average"),
        )
    clustering, key, zorder_s = None, None, None
    if node.has("clustering"):
        c = node.get("clustering")
        clustering = {
            label: (c.get(k).num("files"), c.get(k).num("files_opened"), c.get(k).num("read_s"))
            for label, k in (
                ("one file a day (after maintenance)", "one_file_a_day"),
                (f"each day in about {int(c.num('files_per_day'))} files, unclustered", "spread"),
                (
                    f"ZORDER BY key, files up to {fmt(c.num('max_file_bytes') / 1024, ' KiB')}",
                    "zordered",
                ),
            )
        }
        key, zorder_s = c.text("key"), c.get("zordered").num("optimize_s")
    maintenance = Maintenance(
        int(node.num("hours")),
        int(node.num("clicks_per_day")),
        states,
        node.num("maintenance_s"),
        clustering,
        key,
        zorder_s,
    )
    return maintenance, [Goal.read("maintenance", g) for g in node.items("goals")]


@dataclass(frozen=True)
class Supervisor:
    """``supervisor.json``: one ``apps_supervisor`` run's cost and the interval's trade-off."""

    runs: int
    window_s: float
    per_run: dict[str, float]  # airflow_cpu_s, machine_cpu_s, rows, db_bytes, log_bytes
    due_to_done_s: tuple[float, float]  # median, max
    trade_off: list[dict[str, float]]
    clean_db: dict[str, tuple[float, float]]  # table: rows before, after clean-db


def read_supervisor(node: Node) -> Supervisor:
    run, timing = node.get("per_run"), node.get("timing").get("due_to_done_s")
    columns = (
        "interval_min",
        "runs_per_day",
        "airflow_cpu_s_per_day",
        "cpu_share_of_cores",
        "rows_per_day",
        "log_mib_per_day",
        "restart_wait_max_s",
    )
    return Supervisor(
        int(node.num("runs")),
        node.num("window_s"),
        {
            k: run.num(k)
            for k in ("airflow_cpu_s", "machine_cpu_s", "rows", "db_bytes", "log_bytes")
        },
        (timing.num("median"), timing.num("max")),
        [{k: row.num(k) for k in columns} for row in node.items("trade_off")],
        {
            name: tuple(node.get("clean_db").numbers(name, 2))
            for name in ("dag_run", "task_instance", "log")
        },
    )


@dataclass(frozen=True)
class BoundaryRun:
    """One run of ``boundary.json``: an app under one configuration (bench.ops.boundary)."""

    configuration: str
    changes: str
    app: str
    repeat: int
    partitions: tuple[int, int]  # topic, shuffle (state store)
    tasks: int
    stall_ms: tuple[float | None, float | None]  # median, max
    whole: dict[str, float]  # p50, p99, max
    between_p99: float | None
    steps_ms: dict[str, float]  # median per step (bench.ops.boundary.STEPS, STATE_STEPS)
    timers_fired: float | None
    output_rows_per_s: float | None
    load: tuple[float, float]
    quantiles_ms: list[float]
    conf: tuple[str, ...] = ()  # Spark settings of the app's session
    app_args: tuple[str, ...] = ()  # the app's own arguments (its rules)

    @property
    def plain(self) -> bool:
        """Partitions only: no setting and no rule changed."""
        return not self.conf and not self.app_args


@dataclass(frozen=True)
class BoundaryMatrix:
    """``boundary.json``: the runs, their rate, interval and times, and the local default."""

    rate: float
    rtm_interval: str
    warmup_s: float
    duration_s: float
    default: tuple[int, int]  # the local profile's (topic, shuffle) partitions
    default_checksums: bool  # and its checkpoint checksums
    runs: list[BoundaryRun]
    p99_goal_ms: dict[str, float] = field(default_factory=dict)  # per app


def read_boundary(node: Node) -> BoundaryMatrix:
    runs = []
    for r in node.items("runs"):
        stall = r.get("stall_ms")
        quantiles = r.numbers("quantiles_ms")
        if quantiles and len(quantiles) != QUANTILES:
            raise r.get("quantiles_ms")._fail(f"{QUANTILES} numbers or none")
        runs.append(
            BoundaryRun(
                r.text("configuration"),
                r.text("changes"),
                r.text("app"),
                int(r.num("repeat")),
                (int(r.num("topic_partitions")), int(r.num("shuffle_partitions"))),
                int(r.num("tasks")),
                (stall.num("median", optional=True), stall.num("max", optional=True)),
                r.mapping("whole"),
                r.get("between_boundaries").num("p99", optional=True),
                r.mapping("steps_ms"),
                r.num("timers_fired", optional=True),
                r.num("output_rows_per_s", optional=True),
                load_average(r),
                quantiles,
                tuple(n.text_value() for n in r.items("conf")),
                tuple(n.text_value() for n in r.items("app_args")),
            )
        )
    default = node.get("local_default")
    return BoundaryMatrix(
        node.num("rate"),
        node.text("rtm_interval"),
        node.num("warmup_s"),
        node.num("duration_s"),
        (int(default.num("topic_partitions")), int(default.num("shuffle_partitions"))),
        default.flag("checkpoint_checksums"),
        runs,
        node.mapping("p99_goal_ms"),
    )


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    """A figure as the report prints it: thousands separated, '–' for a missing one.

    >>> fmt(52073.4, "/s", 0), fmt(3.94, " s"), fmt(None, " ms"), fmt(0.123, " s", 2)
    ('52,073/s', '3.9 s', '–', '0.12 s')
    """
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{unit}"


def ms(value: float | None) -> str:
    """A latency: whole milliseconds from 10 ms up, one decimal below.

    >>> ms(1413.2), ms(3.25), ms(None)
    ('1,413 ms', '3.2 ms', '–')
    """
    return fmt(value, " ms", 0 if value is None or value >= 10 else 1)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table.

    >>> print(table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def load_text(load: tuple[float, float]) -> str:
    return f"{load[0]:.1f} → {load[1]:.1f}"


NOT_RUN = "Not run: no `{file}` in the benchmark directory."


def views_section(cases: list[ViewCase] | None) -> str:
    out = ["## View refresh (`views.json`)", ""]
    if cases is None:
        return "\n".join(out + [NOT_RUN.format(file="views.json")])
    out.append(
        table(
            [
                "case",
                "source rows",
                "change rows",
                "incremental",
                "full",
                "full / incremental",
                "Spark jobs",
                "commits",
                "verify: differing groups",
                "load average",
            ],
            [
                [
                    f"`{c.case}`",
                    fmt(c.rows, digits=0),
                    fmt(c.change_rows, digits=0),
                    fmt(c.incremental_s, " s", 2),
                    fmt(c.full_s, " s", 2),
                    fmt(c.ratio, "×"),
                    fmt(c.total_jobs, digits=0),
                    str(c.commits),
                    "–" if c.verify_differences is None else str(c.verify_differences),
                    load_text(c.load),
                ]
                for c in cases
            ],
        )
    )
    phases = list(dict.fromkeys(p for c in cases for p in c.phases))
    if phases:
        out += [
            "",
            "Where each incremental refresh's time goes (seconds; Spark jobs in brackets):",
            "",
            table(
                ["case", "source rows", *phases],
                [
                    [f"`{c.case}`", fmt(c.rows, digits=0)] + [_phase_cell(c, p) for p in phases]
                    for c in cases
                ],
            ),
        ]
    return "\n".join(out)


def _phase_cell(case: ViewCase, phase: str) -> str:
    seconds = fmt(case.phases.get(phase), digits=2)
    jobs = case.jobs.get(phase)
    return seconds if jobs is None else f"{seconds} ({jobs:.0f})"


def bronze_section(bronze: Bronze | None) -> str:
    out = ["## Bronze and silver (`bronze.json`)", ""]
    if bronze is None:
        return "\n".join(out + [NOT_RUN.format(file="bronze.json")])
    out.append(
        table(
            [
                "records",
                "source partitions",
                "start-up",
                "steady state",
                "wall (start-up included)",
                "batches",
                "goal",
                "load average",
            ],
            [
                [
                    fmt(bronze.records, digits=0),
                    str(bronze.partitions),
                    fmt(bronze.startup_s, " s", 2),
                    fmt(bronze.steady_records_per_s, " records/s", 0),
                    fmt(bronze.wall_records_per_s, " records/s", 0),
                    str(len(bronze.batches)),
                    fmt(BRONZE_GOAL_RECORDS_PER_S, " records/s", 0),
                    load_text(bronze.load),
                ]
            ],
        )
    )
    if bronze.fixed_cost_s:
        out += [
            "",
            "Each job's fixed cost (a run over an empty interval, as a process of its own): in a "
            "Spark session of its own (what spark-submit pays) and as a client of the lake engine:",
            "",
            table(
                ["job", "own session", "on the engine"],
                [
                    [f"`{job}`", fmt(s, " s", 2), fmt(bronze.fixed_cost_engine_s.get(job), " s", 2)]
                    for job, s in bronze.fixed_cost_s.items()
                ],
            ),
        ]
    if bronze.batches:
        out += [
            "",
            "Per batch:",
            "",
            table(
                ["batch", "records", "seconds", "records/s"],
                [
                    [str(i), fmt(n, digits=0), fmt(s, " s", 2), fmt(n / s if s else None, digits=0)]
                    for i, (n, s) in enumerate(bronze.batches, 1)
                ],
            ),
        ]
    return "\n".join(out)


def _ratio(last: float | None, first: float | None) -> str:
    """``last / first`` as the report prints a ratio, '–' without both.

    >>> _ratio(5.25, 5.0), _ratio(None, 5.0)
    ('1.05×', '–')
    """
    return fmt(last / first, "×", 2) if last is not None and first else "–"


def scale_section(scale: Scale | None) -> str:
    out = ["## Gold at scale (`scale.json`)", ""]
    if scale is None:
        return "\n".join(out + [NOT_RUN.format(file=SCALE_FILE)])
    first, last = scale.history[0], scale.history[-1]
    out += [
        f"Synthetic silver of about {fmt(scale.rows_per_day, digits=0)} rows a day, grown "
        f"backwards from {scale.last_day} (D): the same rows measured at every size. The "
        f"*hourly run* rebuilds {', '.join(f'`{t}`' for t in scale.hourly_tables)} over D's last "
        f"hour, the *daily run* {', '.join(f'`{t}`' for t in scale.daily_tables)} over D, in one "
        "warm Spark session; *as a process* is the hourly run as Airflow runs it, "
        "`python -m spark_apps.lake.gold` with its JVM start.",
        "",
    ]
    rows = [
        [
            str(step.days),
            fmt(step.rows, digits=0),
            fmt(step.files, digits=0),
            fmt(step.hourly.seconds, " s"),
            fmt(step.daily.seconds, " s"),
            fmt(step.process.seconds if step.process else None, " s"),
            f"{load_text(step.hourly.load)}, {load_text(step.daily.load)}",
        ]
        for step in scale.history
    ]
    if len(scale.history) > 1:
        rows.append(
            [
                f"**{last.days} / {first.days}**",
                "",
                _ratio(last.files, first.files),
                f"**{_ratio(last.hourly.seconds, first.hourly.seconds)}**",
                f"**{_ratio(last.daily.seconds, first.daily.seconds)}**",
                _ratio(
                    last.process.seconds if last.process else None,
                    first.process.seconds if first.process else None,
                ),
                "",
            ]
        )
    out.append(
        table(
            [
                "days of history",
                "silver rows added",
                "silver files",
                "hourly run",
                "daily run",
                "hourly run as a process",
                "load average (hourly, daily)",
            ],
            rows,
        )
    )
    names = list(dict.fromkeys(scale.hourly_tables + scale.daily_tables))
    runs = [
        (f"{step.days}", kind, run)
        for step in scale.history
        for kind, run in (("hourly", step.hourly), ("daily", step.daily), ("process", step.process))
        if run is not None
    ]
    out += [
        "",
        "Each table's seconds (the process's as it logged them, its start left out):",
        "",
        table(
            ["days", "run", *(f"`{n}`" for n in names)],
            [[days, kind, *(fmt(run.tables.get(n)) for n in names)] for days, kind, run in runs],
        ),
        "",
        f"**Position in the day** ({fmt(last.days, digits=0)} days of history): the hourly run "
        "over D's first and last hour, alternated:",
        "",
        table(
            ["hour of D", "interval", "runs", "median", "load average"],
            [
                [
                    name,
                    hour.label,
                    ", ".join(fmt(r, " s") for r in hour.runs_s),
                    fmt(hour.median_s, " s"),
                    load_text(hour.load),
                ]
                for name, hour in (("1st", scale.first_hour), ("24th", scale.last_hour))
            ]
            + [
                [
                    "**24th / 1st**",
                    "",
                    "",
                    f"**{_ratio(scale.last_hour.median_s, scale.first_hour.median_s)}**",
                    "",
                ]
            ],
        ),
    ]
    return "\n".join(out)


def ops_section(runs: list[Run] | None, hop: KafkaHop | None) -> str:
    out = ["## Operational apps (`ops.json`)", ""]
    if runs is None:
        return "\n".join(out + [NOT_RUN.format(file="ops.json")])
    out += [
        "End-to-end latency, output Kafka timestamp − input Kafka timestamp, over each run's "
        "measured span; *between boundaries* leaves out the inputs a checkpoint-interval "
        "boundary held: from the first input its stall held to 1 s after the stall "
        "(`between_boundaries` in `bench/ops/latency.py`).",
        "",
    ]
    rows = [
        [
            r.app,
            MODE_NAMES[r.mode],
            fmt(r.rate, "/s", 0),
            fmt(r.duration_s, " s", 0),
            *(ms(r.whole[k]) for k in ("p50", "p95", "p99", "max")),
            fmt(r.whole["n"], digits=0),
            *((ms(r.between[k]) for k in ("p50", "p99", "max")) if r.between else ("–",) * 3),
            str(len(r.boundaries)),
            load_text(r.load),
        ]
        for r in runs
    ]
    if hop is not None:
        rows.append(
            [
                "bare Kafka hop (produce → consume)",
                "–",
                fmt(hop.rate, "/s", 0),
                fmt(hop.duration_s, " s", 0),
                *(ms(hop.whole[k]) for k in ("p50", "p95", "p99", "max")),
                fmt(hop.whole["n"], digits=0),
                "–",
                "–",
                "–",
                "–",
                load_text(hop.load) if hop.load else "–",
            ]
        )
    out.append(
        table(
            [
                "app",
                "mode",
                "rate",
                "measured",
                "p50",
                "p95",
                "p99",
                "max",
                "records",
                "p50 between boundaries",
                "p99 between",
                "max between",
                "boundaries",
                "load average",
            ],
            rows,
        )
    )
    notes = [f"* {r.label} at {fmt(r.rate, '/s', 0)}: {note}" for r in runs for note in r.notes]
    if notes:
        out += ["", "Notes of the runs:", "", *notes]
    ratios = _hop_ratios(runs, hop)
    if ratios:
        out += [
            "",
            "Spark's latency as a multiple of the bare Kafka hop measured in the same run "
            "(same broker, same rate):",
            "",
            table(["run", "p50 / hop p50", "p99 / hop p99"], ratios),
        ]
    for run in runs:
        if run.boundaries:
            out += ["", boundary_table(run)]
    return "\n".join(out)


def _hop_ratios(runs: list[Run], hop: KafkaHop | None) -> list[list[str]]:
    if hop is None:
        return []
    rows = []
    for run in runs:
        cells = []
        for p in ("p50", "p99"):
            floor, value = hop.whole[p], run.whole[p]
            cells.append(fmt(value / floor, "×") if floor and value is not None else "–")
        rows.append([run.label, *cells])
    return rows


def boundaries(count: int) -> str:
    """How many boundaries, in words.

    >>> boundaries(1), boundaries(3)
    ('1 boundary', '3 boundaries')
    """
    return f"{count} boundar{'y' if count == 1 else 'ies'}"


def boundary_table(run: Run) -> str:
    """A run's checkpoint-interval boundaries: when, how long input waited, and on what."""
    names = list(dict.fromkeys(k for b in run.boundaries for k in b.durations_ms))
    rows = [
        [
            fmt(b.t_s, " s", 0),
            ms(b.stall_ms),
            *(ms(b.durations_ms.get(k)) for k in names),
            "–" if b.timers_fired is None else fmt(b.timers_fired, digits=0),
        ]
        for b in run.boundaries
    ]
    stalls = sorted(b.stall_ms for b in run.boundaries if b.stall_ms is not None)
    summary = f"{boundaries(len(run.boundaries))}, " + (
        f"stall median {ms(stalls[len(stalls) // 2])}, max {ms(stalls[-1])}"
        if stalls
        else "no stall measured"
    )
    return "\n".join(
        [
            f"**Boundaries of {run.label} at {fmt(run.rate, '/s', 0)}** ({summary}; the "
            "batch's durations from its progress event):",
            "",
            table(["t", "stall", *(f"`{k}`" for k in names), "timers fired"], rows),
        ]
    )


def median_stall(run: Run) -> float | None:
    """The median of a run's boundary stalls (None without a measured one)."""
    stalls = sorted(b.stall_ms for b in run.boundaries if b.stall_ms is not None)
    return stalls[len(stalls) // 2] if stalls else None


def lake_beside_section(beside: Beside | None, backfill: Backfill | None) -> str:
    out = ["## The lake beside the apps, and backfills of days", ""]
    if beside is None:
        out.append(
            f"Apps beside the lake: no `{BESIDE_FILE}` here (`make bench-beside` writes it)."
        )
    else:
        lake = "; ".join(
            f"views {fmt(r['views_s'], ' s', 0)} after silver, gold {fmt(r['gold_s'], ' s', 0)}"
            for r in beside.rounds
        )
        out += [
            f"The apps at once, each in its default trigger at {fmt(beside.rate, '/s', 0)} "
            f"(Real-Time Mode's checkpoint interval {beside.rtm_interval}), on fresh "
            "checkpoints: with the lake idle, then while the lake engine runs the hourly chain "
            "and every view's refresh and gate in rounds, as the platform's pool runs them "
            f"({beside.slots} slot(s), niceness {beside.nice}). Latency after the warm-up "
            "(`beside.json`):",
            "",
            table(
                ["app", "lake", "p50", "p99", "max", "outputs", "load average"],
                [
                    [
                        run.label,
                        name,
                        ms(run.whole["p50"]),
                        ms(run.whole["p99"]),
                        ms(run.whole["max"]),
                        fmt(run.whole["n"], digits=0),
                        load_text(run.load),
                    ]
                    for app, by_key in beside.runs.items()
                    for name, run in (("idle", by_key["idle"]), ("beside", by_key["beside"]))
                ]
                + [
                    [f"**{app}**", "**beside / idle**", "", f"**{fmt(r, '×', 2)}**", "", "", ""]
                    for app, r in beside.ratios.items()
                ],
            ),
            "",
            f"The lake's rounds meanwhile (each view published after silver's commit, gold "
            f"after the round's start): {lake or 'none finished'}.",
        ]
    out.append("")
    if backfill is None:
        out.append(
            f"Backfills of days: no `{BACKFILL_FILE}` here (`make bench-backfill` writes it)."
        )
        return "\n".join(out)
    tasks = ", ".join(f"`{t}` {fmt(s, ' s', 0)}" for t, s in backfill.task_seconds.items())
    out += [
        f"A backfill of {backfill.days} days of synthetic silver (about "
        f"{fmt(backfill.rows_per_day, digits=0)} rows a day) through the platform's scheduler "
        f"(`{backfill.command}`, `backfill.json`): **{fmt(backfill.wall_s / 60, ' min')}** "
        f"({fmt(backfill.days_per_minute, ' days/min', 2)}; load average "
        f"{load_text(backfill.load)}). One rebuild of every gold table over the same days in a "
        f"warm session took {fmt(backfill.rebuild_s, ' s', 0)}; the backfill's gold differs "
        f"from it in {backfill.differences} rows.",
        "",
        table(
            ["day", *(d for d, _ in backfill.runs)],
            [["run", *(fmt(s, " s", 0) for _, s in backfill.runs)]],
        ),
        "",
        f"Tasks' time summed over the runs: {tasks}.",
    ]
    return "\n".join(out)


def maintenance_section(m: Maintenance | None) -> str:
    out = ["## Table maintenance (`maintenance.json`)", ""]
    if m is None:
        return "\n".join(
            out + [f"Not in this run: `make bench-maintenance` writes `{MAINTENANCE_FILE}`."]
        )
    out += [
        f"{m.hours} hourly runs' writes on page clicks ({fmt(m.clicks_per_day, digits=0)} a day): "
        "the hour appended to silver, gold's `page_traffic` hour rebuilt, the view "
        "`page_clicks_hourly` refreshed; then one `lake_maintenance` run "
        f"({fmt(m.maintenance_s, ' s')}, retention 0: the simulated days pass in minutes). "
        "Reads are medians; bytes are the three tables together.",
        "",
        table(
            [
                "after",
                "files per gold day (mean, max)",
                "live data",
                "on disk",
                "disk / live",
                "gold read",
                "view refresh",
                "load average",
            ],
            [
                [
                    label,
                    f"{fmt(st.files_mean, digits=1)}, {fmt(st.files_max, digits=0)}",
                    fmt(st.live_bytes / 1e6, " MB"),
                    fmt(st.disk_bytes / 1e6, " MB"),
                    fmt(st.ratio, "×", 2),
                    fmt(st.read_s, " s", 2),
                    fmt(st.refresh_s, " s", 2),
                    fmt(st.load),
                ]
                for label, st in (
                    ("the first hour", m.states["first"]),
                    (f"{m.hours} hours, no maintenance", m.states["without"]),
                    (f"{m.hours} hours and maintenance", m.states["after"]),
                )
            ],
        ),
    ]
    if m.clustering:
        out += [
            "",
            f"Clustering gold on its key (`{m.clustering_key}`): one key's read over every day, "
            "the files whose min/max statistics admit the key (what Delta's data skipping "
            "opens) and its median time; then each day spread over several files as a day too "
            "big for one is, and `OPTIMIZE … ZORDER BY` at that file size "
            f"({fmt(m.zorder_s, ' s')}).",
            "",
            table(
                ["gold's layout", "files", "files opened", "read"],
                [
                    [label, fmt(files, digits=0), fmt(opened, digits=0), fmt(read, " s", 2)]
                    for label, (files, opened, read) in m.clustering.items()
                ],
            ),
        ]
    return "\n".join(out)


def supervisor_section(sv: Supervisor | None) -> str:
    out = ["## The supervisor's runs (`supervisor.json`)", ""]
    if sv is None:
        return "\n".join(
            out + [f"Not in this run: `make bench-supervisor` writes `{SUPERVISOR_FILE}`."]
        )
    run = sv.per_run
    out += [
        f"`apps_supervisor` every minute on the platform's Airflow, {sv.runs} runs in "
        f"{fmt(sv.window_s, ' s', 0)}, against as long with every DAG paused. One run: "
        f"{fmt(run['airflow_cpu_s'], ' CPU s', 2)} in Airflow's processes, "
        f"{fmt(run['rows'], ' rows', 0)} in the metadata database "
        f"({fmt(run['db_bytes'] / 1024, ' KiB')}), {fmt(run['log_bytes'] / 1024, ' KiB')} of "
        f"task log; due to done {fmt(sv.due_to_done_s[0], ' s')} median, "
        f"{fmt(sv.due_to_done_s[1], ' s')} max. `platform clean-db` at retention 0 left "
        + ", ".join(
            f"{name} {fmt(a, digits=0)} of {fmt(b, digits=0)}"
            for name, (b, a) in sv.clean_db.items()
        )
        + ".",
        "",
        table(
            [
                "interval",
                "runs a day",
                "CPU a day",
                "share of the cores",
                "rows a day",
                "task log a day",
                "a crashed app waits up to",
            ],
            [
                [
                    fmt(row["interval_min"], " min", 0),
                    fmt(row["runs_per_day"], digits=0),
                    fmt(row["airflow_cpu_s_per_day"] / 60, " CPU min", 0),
                    fmt(row["cpu_share_of_cores"] * 100, " %", 2),
                    fmt(row["rows_per_day"], digits=0),
                    fmt(row["log_mib_per_day"], " MiB"),
                    fmt(row["restart_wait_max_s"], " s", 0),
                ]
                for row in sv.trade_off
            ],
        ),
    ]
    return "\n".join(out)


def best_runs(boundary: BoundaryMatrix) -> dict[str, BoundaryRun]:
    """Per app, the run with the lowest whole-run p99 among those at the app's usual rules (a
    timer-burst run changes the app's rules, so it is compared only with its own kind)."""
    best: dict[str, BoundaryRun] = {}
    for run in boundary.runs:
        p99 = run.whole.get("p99")
        if p99 is None or run.app_args:
            continue
        if run.app not in best or p99 < best[run.app].whole["p99"]:
            best[run.app] = run
    return best


def boundary_section(b: BoundaryMatrix | None) -> str:
    out = ["## Real-Time Mode's boundary against its settings (`boundary.json`)", ""]
    if b is None:
        return "\n".join(
            out + [f"Not in this run: `make bench-boundary` writes `{BOUNDARY_FILE}`."]
        )
    out += [
        f"Each app in Real-Time Mode at {fmt(b.rate, ' events/s', 0)}, a checkpoint interval "
        f"of {b.rtm_interval}, {fmt(b.warmup_s, ' s', 0)} of warm-up and "
        f"{fmt(b.duration_s, ' s', 0)} measured, one run after another on a private broker "
        "whose topics have the configuration's partitions (`python -m bench.ops.boundary`). "
        "A boundary's **stall** is the longest gap in the output around the end of a "
        "long-running batch; the steps are medians over the run's boundaries: the ending "
        "batch's `addBatch` past the interval and `commitOffsets`, the next batch's "
        "`latestOffset`, `walCommit` and `queryPlanning`, and the stateful operator's state "
        "commit (of it the changelog file written and synced) and reload, summed over its "
        f"state-store partitions. The local default is ({b.default[0]}, {b.default[1]}) "
        "(topic, shuffle) partitions, checkpoint checksums "
        + ("on." if b.default_checksums else "off."),
        "",
        table(
            [
                "app",
                "configuration",
                "(topic, shuffle) partitions",
                "tasks",
                "stall median / max",
                "whole p50 / p99 / max",
                "between-boundary p99",
                "state commit (sync) / load",
                "planning + logs",
                "addBatch past interval",
                "timers fired (their time)",
                "outputs/s",
                "load avg",
            ],
            [
                [
                    r.app,
                    r.changes + (f" (run {r.repeat})" if r.repeat > 1 else ""),
                    f"({r.partitions[0]}, {r.partitions[1]})",
                    str(r.tasks),
                    f"{ms(r.stall_ms[0])} / {ms(r.stall_ms[1])}",
                    " / ".join(ms(r.whole.get(k)) for k in ("p50", "p99", "max")),
                    ms(r.between_p99),
                    f"{ms(r.steps_ms.get('state_commit'))} "
                    f"({ms(r.steps_ms.get('changelog_sync'))}) / "
                    f"{ms(r.steps_ms.get('state_load'))}",
                    ms(
                        sum(
                            r.steps_ms.get(k, 0)
                            for k in ("commitOffsets", "latestOffset", "walCommit", "queryPlanning")
                        )
                    ),
                    ms(r.steps_ms.get("addBatchOverInterval")),
                    fmt(r.timers_fired, digits=0)
                    + (
                        f" ({ms(r.steps_ms['timer_processing'])})"
                        if r.timers_fired and "timer_processing" in r.steps_ms
                        else ""
                    ),
                    fmt(r.output_rows_per_s, digits=0),
                    load_text(r.load),
                ]
                for r in sorted(b.runs, key=lambda r: APPS.index(r.app) if r.app in APPS else 99)
            ],
        ),
    ]
    best = best_runs(b)
    if best:
        out += [
            "",
            "Lowest whole-run p99 per app: "
            + "; ".join(
                f"{app} {ms(r.whole['p99'])} ({r.changes}, ({r.partitions[0]}, {r.partitions[1]}))"
                for app, r in best.items()
            )
            + ". Checksums: checkpoint file checksums (`ADLAKE_CHECKPOINT_CHECKSUMS`).",
        ]
    return "\n".join(out)


def goals_section(goals: list[Goal]) -> str:
    out = ["## Goals", ""]
    if not goals:
        return "\n".join(out + ["No goals: no benchmark JSON with goals in the directory."])
    return "\n".join(
        out
        + [
            table(
                ["benchmark", "goal", "target", "measured", "met", "what bounds it"],
                [
                    [
                        g.benchmark,
                        g.goal,
                        g.target,
                        g.measured,
                        "yes" if g.met else "**no**",
                        g.bound or "not stated",
                    ]
                    for g in goals
                ],
            )
        ]
    )


def machine_section(inputs: Inputs, command: str | None) -> str:
    cores = {str(extra.get("cores")) for extra in inputs.extras.values() if "cores" in extra}
    loads = []  # in the order make bench runs them
    if inputs.runs:
        loads += [(f"{r.label} {fmt(r.rate, '/s', 0)}", r.load) for r in inputs.runs]
    if inputs.kafka_hop and inputs.kafka_hop.load:
        loads.append(("bare Kafka hop", inputs.kafka_hop.load))
    if inputs.bronze:
        loads.append(("bronze", inputs.bronze.load))
    if inputs.views:
        loads += [(f"views `{c.case}` {fmt(c.rows, digits=0)} rows", c.load) for c in inputs.views]
    if inputs.scale:
        for step in inputs.scale.history:
            loads += [
                (f"gold hourly run, {step.days} days of history", step.hourly.load),
                (f"gold daily run, {step.days} days of history", step.daily.load),
            ]
        loads += [
            ("gold hourly runs, the day's 1st hour", inputs.scale.first_hour.load),
            ("gold hourly runs, the day's 24th hour", inputs.scale.last_hour.load),
        ]
    if inputs.beside:
        loads += [
            (f"{app}, lake {key}", by_key[key].load)
            for app, by_key in inputs.beside.runs.items()
            for key in ("idle", "beside")
        ]
    if inputs.backfill:
        loads.append((f"backfill of {inputs.backfill.days} days", inputs.backfill.load))
    when = [datetime.fromtimestamp(t, UTC) for t in inputs.modified.values()]
    lines = [
        "## Machine and run",
        "",
        f"* Cores: {', '.join(sorted(cores)) if cores else os.cpu_count()} "
        f"({platform.machine()}, {platform.system()} {platform.release()}).",
        "* Benchmarks written: "
        + (f"{min(when):%Y-%m-%d %H:%M} to {max(when):%Y-%m-%d %H:%M} UTC" if when else "none")
        + f"; report built {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        f"* Command: `{command}`." if command else "* Command: not recorded.",
    ]
    if loads:
        lines += [
            "",
            "Load average (1 minute) at each measurement's start and end; the machine "
            "has other work on it when these exceed the core count:",
            "",
            table(
                ["measurement", "load average"], [[name, load_text(load)] for name, load in loads]
            ),
        ]
    return "\n".join(lines)


def failures(inputs: Inputs, name: str) -> str:
    """What a benchmark says failed (its JSON's ``errors``: the parts it could not measure)."""
    errors = inputs.extras.get(name, {}).get("errors") or []
    if not isinstance(errors, list):
        raise MalformedReport(name, "errors", f"expected a list, got {errors!r:.60}")
    return (
        "".join(["\n\n**Failed** (not measured):\n"] + [f"\n* {e}" for e in errors])
        if errors
        else ""
    )


def render(inputs: Inputs, plots: Mapping[str, str], out: Path, command: str | None) -> str:
    """The whole REPORT.md; ``plots`` maps a plot's key (:data:`ALL_PLOTS`) to its file name, or to
    why it was not drawn."""
    parts = [
        "# Benchmark report",
        "",
        "The benchmarks of one run: view refresh, bronze ingest, the operational apps' "
        "latency, gold at scale. Built by `python -m bench.report` from the JSON each benchmark "
        "wrote: "
        + (", ".join(f"[{name}]({name})" for name in inputs.extras) or "none")
        + ", beside this report.",
        *(
            [
                "",
                "**A quick run** (`--quick`, a smoke test of the report: short and small, "
                "on whatever else the machine was doing); its figures are not ones to quote.",
            ]
            if any(extra.get("quick") for extra in inputs.extras.values())
            else []
        ),
        "",
        machine_section(inputs, command),
        "",
        goals_section(inputs.goals),
        "",
        views_section(inputs.views) + failures(inputs, "views.json"),
        "",
        bronze_section(inputs.bronze) + failures(inputs, "bronze.json"),
        "",
        scale_section(inputs.scale) + failures(inputs, SCALE_FILE),
        "",
        ops_section(inputs.runs, inputs.kafka_hop) + failures(inputs, "ops.json"),
        "",
        lake_beside_section(inputs.beside, inputs.backfill)
        + failures(inputs, BESIDE_FILE)
        + failures(inputs, BACKFILL_FILE),
        "",
        maintenance_section(inputs.maintenance) + failures(inputs, MAINTENANCE_FILE),
        "",
        supervisor_section(inputs.supervisor) + failures(inputs, SUPERVISOR_FILE),
        "",
        boundary_section(inputs.boundary),
    ]
    if (out / BOUNDARY_NOTE).is_file():
        parts += [
            "",
            f"What an attribution boundary spends its time on: [{BOUNDARY_NOTE}]({BOUNDARY_NOTE}).",
        ]
    parts += ["", "## Plots", ""]
    for key, title in (
        ("cdf", "Latency CDFs"),
        ("timeline", "Latency timeline, Real-Time Mode"),
        ("views", "View refresh time vs source size"),
        ("bronze", "Bronze ingest records/s"),
        ("scale", "Gold run time vs days of history"),
        ("beside", "Latency with the lake idle and beside the chain"),
        ("maintenance", "Files and bytes before and after maintenance"),
        ("boundary", "Real-Time Mode's boundary: the best configuration's CDF"),
    ):
        drawn = plots.get(key, "not drawn")
        if drawn.endswith(".png"):
            parts += [f"### {title}", "", f"![{title}]({drawn})", ""]
        elif key in OPTIONAL_PLOTS:  # a long benchmark, not in every run
            parts += [
                f"### {title}",
                "",
                f"Not in this run ({drawn}): `{OPTIONAL_PLOTS[key]}`.",
                "",
            ]
        else:
            parts += [f"### {title}", "", f"Not drawn: {drawn}.", ""]
    return "\n".join(parts).rstrip() + "\n"


# -- plots ------------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


COLOURS = {"realtime": "tab:blue", "processing_time": "tab:orange", "hop": "tab:grey"}


def cdf_axes(ax) -> None:
    """A latency CDF's axes: latency on a log x axis, the fraction at or below on a logit y axis,
    which spreads the tail (0.5, 0.9, 0.99 and 0.999 stand equally apart; quantiles 0 and 1, the
    min and max, lie at infinity on it: the legends give the max)."""
    ax.set_yscale("logit")
    ax.set_ylim(0.005, 0.9995)
    ax.set_yticks([0.01, 0.1, 0.5, 0.9, 0.99, 0.999])
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_minor_formatter(lambda v, _: "")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:,g}")
    ax.set_xlabel("end-to-end latency (ms, log scale)")
    ax.set_ylabel("fraction of records at or below (logit scale)")


def plot_cdf(runs: list[Run], hop: KafkaHop | None, path: Path) -> None:
    """Latency CDFs, one panel per app: each mode, and the bare Kafka hop as the floor."""
    plt = _pyplot()
    apps = [a for a in APPS if any(r.app == a for r in runs)]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.5 * len(apps), 5.6), squeeze=False)
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    for ax, app in zip(axes[0], apps):
        for run in (r for r in runs if r.app == app):
            if not run.quantiles_ms:
                ax.plot(
                    [],
                    [],
                    color=COLOURS[run.mode],
                    linestyle=":",
                    label=f"{MODE_NAMES[run.mode]}, {run.rate:,.0f}/s: no output measured",
                )
                continue
            ax.plot(
                run.quantiles_ms[1:-1],
                fractions[1:-1],
                color=COLOURS[run.mode],
                label=f"{MODE_NAMES[run.mode]}, {run.rate:,.0f}/s (p99 "
                f"{ms(run.whole['p99'])}, max {ms(run.whole['max'])})",
            )
        if hop is not None and hop.quantiles_ms:
            ax.plot(
                hop.quantiles_ms[1:-1],
                fractions[1:-1],
                color=COLOURS["hop"],
                linestyle="--",
                label=f"bare Kafka hop, {hop.rate:,.0f}/s (p99 "
                f"{ms(hop.whole['p99'])}, max {ms(hop.whole['max'])})",
            )
        cdf_axes(ax)
        ax.set_title(app.replace("_", "-"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    fig.suptitle("Latency CDFs: Real-Time Mode vs micro-batch vs the bare Kafka hop")
    fig.tight_layout()
    save_plot(fig, path)


def plot_boundary(b: BoundaryMatrix, path: Path) -> None:
    """Per app, the latency CDF of the local default's run, the earlier (4, 4) default's and the
    best run's (:func:`best_runs`), the tail spread by the logit axis."""
    plt = _pyplot()
    best = best_runs(b)
    apps = [a for a in APPS if a in best]
    fig, axes = plt.subplots(1, len(apps), figsize=(6.5 * len(apps), 5.6), squeeze=False)
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    for ax, app in zip(axes[0], apps):
        shown = [
            run
            for run in b.runs
            if run.app == app
            and run.plain
            and run.repeat == 1
            and run.quantiles_ms
            and run.partitions in ((4, 4), b.default)
        ]
        if best[app] not in shown:
            shown.append(best[app])
        for run in shown:
            ax.plot(
                run.quantiles_ms[1:-1],
                fractions[1:-1],
                label=f"{run.changes} ({run.partitions[0]}, {run.partitions[1]}): p99 "
                f"{ms(run.whole['p99'])}, max {ms(run.whole['max'])}",
            )
        if app in b.p99_goal_ms:
            ax.axvline(b.p99_goal_ms[app], color="grey", linestyle="--", linewidth=1)
            ax.axhline(0.99, color="grey", linestyle=":", linewidth=1)
            ax.annotate(
                f"p99 goal {ms(b.p99_goal_ms[app])}",
                (b.p99_goal_ms[app], 0.99),
                xytext=(4, -14),
                textcoords="offset points",
                fontsize=8,
                color="dimgrey",
            )
        cdf_axes(ax)
        ax.set_title(f"{app.replace('_', '-')}, Real-Time Mode, {b.rate:,.0f} events/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    fig.suptitle(f"Latency CDFs by configuration (checkpoint interval {b.rtm_interval})")
    fig.tight_layout()
    save_plot(fig, path)


def plot_timeline(runs: list[Run], path: Path) -> None:
    """Per 5 s slice p50, p99 and max of each Real-Time Mode run; boundaries as vertical lines."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 3.6 * len(runs)), squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        # Each slice holds [t_s, t_s + 5): drawn as a step across it, so a boundary's line
        # falls inside the slice it stalled.
        t = [s["t_s"] for s in run.timeline]
        t.append(t[-1] + SLICE_S)
        for key, style in (("max", ":"), ("p99", "-"), ("p50", "-")):
            values = [s[key] if s[key] is not None else math.nan for s in run.timeline]
            ax.step(t, [*values, values[-1]], where="post", linestyle=style, label=key)
        for i, b in enumerate(run.boundaries):
            ax.axvline(
                b.t_s,
                color="tab:red",
                alpha=0.6,
                linewidth=1,
                label="interval boundary" if i == 0 else None,
            )
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:,g}")
        ax.yaxis.set_minor_formatter(lambda v, _: f"{v:,g}" if str(v)[0] in "235" else "")
        top = max((s[k] or 0 for s in run.timeline for k in ("p50", "p99", "max")), default=0)
        if top > 0:
            ax.set_ylim(top=top * 4)  # room for the legend above the lines
        ax.set_xlabel("seconds since the measured start")
        ax.set_ylabel("latency per 5 s slice (ms, log)")
        ax.set_title(
            f"{run.label}, {run.rate:,.0f} events/s: p50/p99 {ms(run.whole['p50'])}/"
            f"{ms(run.whole['p99'])}, {boundaries(len(run.boundaries))}"
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, ncol=4)
    fig.tight_layout()
    save_plot(fig, path)


CASE_NAMES = {
    "delete_update": "delete/update",
    "append": "append",
    "fixed_change": "fixed change",
    "one_row": "one row",
}


def plot_views(cases: list[ViewCase], path: Path) -> None:
    """Refresh time against source rows, incremental (solid) and full (dashed), per case."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    markers = {"delete_update": "o", "append": "s", "fixed_change": "D", "one_row": "^"}
    colours = {
        "delete_update": "tab:purple",
        "append": "tab:green",
        "fixed_change": "tab:blue",
        "one_row": "tab:red",
    }
    for case in CASES:
        points = sorted((c for c in cases if c.case == case), key=lambda c: c.rows)
        if not points:
            continue
        rows = [c.rows for c in points]
        ax.plot(
            rows,
            [c.incremental_s for c in points],
            marker=markers[case],
            color=colours[case],
            label=f"{CASE_NAMES[case]}: incremental",
        )
        full = [(c.rows, c.full_s) for c in points if c.full_s is not None]
        if full:
            ax.plot(
                *zip(*full),
                marker=markers[case],
                color=colours[case],
                linestyle="--",
                markerfacecolor="none",
                label=f"{CASE_NAMES[case]}: full",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({c.rows for c in cases})
    ax.set_xticks(sizes, [f"{n / 1e6:,g}M" if n >= 1e6 else f"{n:,}" for n in sizes])
    ax.xaxis.set_minor_formatter(lambda v, _: "")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g} s")
    ax.yaxis.set_minor_formatter(lambda v, _: f"{v:g} s" if str(v)[0] in "235" else "")
    ax.set_xlabel("source rows (log scale)")
    ax.set_ylabel("refresh time (s, log scale)")
    ax.set_title("View refresh time vs source size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_plot(fig, path)


def plot_bronze(bronze: Bronze, path: Path) -> None:
    """Records/s of each batch, with the steady-state figure and the 100k goal."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.4))
    rates = [n / s if s else 0.0 for n, s in bronze.batches]
    ax.bar(range(1, len(rates) + 1), rates, color="tab:blue", alpha=0.7, label="per batch")
    ax.axhline(
        bronze.steady_records_per_s,
        color="tab:green",
        label=f"steady state {bronze.steady_records_per_s:,.0f}/s",
    )
    ax.axhline(
        bronze.wall_records_per_s,
        color="tab:grey",
        linestyle=":",
        label=f"wall, start-up included {bronze.wall_records_per_s:,.0f}/s",
    )
    ax.axhline(
        BRONZE_GOAL_RECORDS_PER_S,
        color="tab:red",
        linestyle="--",
        label=f"goal {BRONZE_GOAL_RECORDS_PER_S:,}/s",
    )
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("batch")
    highest = max([*rates, BRONZE_GOAL_RECORDS_PER_S, bronze.steady_records_per_s])
    lowest = min([r for r in rates if r > 0] or [highest])
    if highest / lowest > 5:  # bars far under the goal line (a quick run) stay readable
        ax.set_yscale("log")
        ax.set_ylim(lowest / 2, highest * 2)
        ax.set_ylabel("records/s (log scale)")
    else:
        ax.set_ylim(0, highest * 1.15)
        ax.set_ylabel("records/s")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")
    ax.set_title(f"Bronze ingest: {bronze.records:,} records, {bronze.partitions} partitions")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    fig.tight_layout()
    save_plot(fig, path)


def plot_scale(scale: Scale, path: Path) -> None:
    """Run time against days of silver history, a panel each for the hourly run (in the warm
    session and as a process) and the daily run; each line with its goal, a dotted line at
    ``goal_ratio`` times its time at the smallest history."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2))
    days = [step.days for step in scale.history]
    hourly = [("warm session", "tab:blue", "-", [s.hourly.seconds for s in scale.history])]
    if all(s.process for s in scale.history):
        process = [s.process.seconds for s in scale.history if s.process]
        hourly.append(("as a process (JVM start included)", "tab:grey", "--", process))
    panels = (
        (axes[0], f"Hourly run: {', '.join(scale.hourly_tables)}, D's last hour", hourly),
        (
            axes[1],
            f"Daily run: {len(scale.daily_tables)} tables, day D",
            [("warm session", "tab:purple", "-", [s.daily.seconds for s in scale.history])],
        ),
    )
    for ax, title, lines in panels:
        top = 0.0
        for label, colour, style, seconds in lines:
            ax.plot(days, seconds, marker="o", color=colour, linestyle=style, label=label)
            for x, y in zip(days, seconds):
                ax.annotate(
                    f"{y:,.1f} s",
                    (x, y),
                    textcoords="offset points",
                    xytext=(0, -14),
                    ha="center",
                    fontsize=8,
                    color=colour,
                )
            goal = seconds[0] * scale.goal_ratio
            ax.hlines(
                goal,
                days[0],
                days[-1],
                colors=colour,
                linestyles=":",
                label=f"goal: {scale.goal_ratio:g}× its {days[0]}-day time",
            )
            top = max(top, goal, *seconds)
        ax.set_xscale("log")
        ax.set_xticks(days, [str(d) for d in days])
        ax.xaxis.set_minor_formatter(lambda v, _: "")
        ax.set_ylim(0, top * 1.25)
        ax.set_xlabel("days of silver history (log scale)")
        ax.set_ylabel("run time (s)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"Gold run time vs silver history ({scale.rows_per_day:,} rows a day; D = {scale.last_day})"
    )
    fig.tight_layout()
    save_plot(fig, path)


def plot_beside(beside: Beside, path: Path) -> None:
    """Each app's latency CDF with the lake idle and beside the lake, on the CDF plot's axes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.4))
    fractions = [i / (QUANTILES - 1) for i in range(QUANTILES)]
    colours = iter(("tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple", "tab:brown"))
    for by_key in beside.runs.values():
        for key, style in (("idle", ":"), ("beside", "-")):
            run = by_key[key]
            if run.quantiles_ms:
                ax.plot(
                    run.quantiles_ms[1:-1],
                    fractions[1:-1],
                    style,
                    color=next(colours),
                    label=f"{run.label}, lake {key} (p99 {ms(run.whole['p99'])}, max "
                    f"{ms(run.whole['max'])}; load {load_text(run.load)})",
                )
    cdf_axes(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8)
    ax.set_title(
        f"The apps at {beside.rate:,.0f} events/s: lake idle vs beside the lake", fontsize=10
    )
    fig.tight_layout()
    save_plot(fig, path)


def plot_maintenance(m: Maintenance, path: Path) -> None:
    """A panel per figure, a bar per state (after the first hour, after all of them without and
    with maintenance): files per gold day-partition, bytes on disk over live bytes, the gold
    read's and the view refresh's time."""
    plt = _pyplot()
    labels = ["first hour", f"{m.hours} h, none", f"{m.hours} h, maintained"]
    states = [m.states[k] for k in ("first", "without", "after")]
    colours = ["tab:grey", "tab:red", "tab:green"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.6))
    panels = (
        ("files per gold day-partition (max)", [s.files_max for s in states], 4, "goal ≤ 4"),
        ("bytes on disk / live bytes", [s.ratio or 0 for s in states], 1.5, "goal ≤ 1.5×"),
        ("gold read (s, median)", [s.read_s for s in states], None, None),
        ("view refresh of one hour (s, median)", [s.refresh_s for s in states], None, None),
    )
    for ax, (title, values, goal, goal_label) in zip(axes, panels):
        bars = ax.bar(labels, values, color=colours)
        ax.bar_label(bars, labels=[f"{v:,.2f}".rstrip("0").rstrip(".") for v in values])
        if goal is not None:
            ax.axhline(goal, color="black", linestyle=":", label=goal_label)
            ax.legend(fontsize=8, loc="upper left")
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, max([*values, goal or 0]) * 1.25 or 1)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(
        f"Table maintenance after {m.hours} hourly runs ({m.clicks_per_day:,} clicks a day)"
    )
    fig.tight_layout()
    save_plot(fig, path)


def draw_plots(inputs: Inputs, out: Path) -> dict[str, str]:
    """Each plot the inputs allow, into ``out``: its key -> file name, or why it was not drawn."""
    todo: dict[str, tuple[str | None, Callable[[Path], None]]] = {}
    runs = inputs.runs
    rtm = [r for r in runs or [] if r.mode == "realtime" and r.timeline]
    todo["cdf"] = (
        "no ops.json" if runs is None else "no runs in ops.json" if not runs else None,
        lambda p: plot_cdf(runs, inputs.kafka_hop, p),
    )
    todo["timeline"] = (
        "no ops.json"
        if runs is None
        else "no Real-Time Mode run with a timeline"
        if not rtm
        else None,
        lambda p: plot_timeline(rtm, p),
    )
    todo["views"] = (
        "no views.json"
        if inputs.views is None
        else "no cases in views.json"
        if not inputs.views
        else None,
        lambda p: plot_views(inputs.views, p),
    )
    todo["bronze"] = (
        "no bronze.json" if inputs.bronze is None else None,
        lambda p: plot_bronze(inputs.bronze, p),
    )
    todo["scale"] = (
        f"no {SCALE_FILE}" if inputs.scale is None else None,
        lambda p: plot_scale(inputs.scale, p),
    )
    todo["beside"] = (
        f"no {BESIDE_FILE}" if inputs.beside is None else None,
        lambda p: plot_beside(inputs.beside, p),
    )
    todo["maintenance"] = (
        f"no {MAINTENANCE_FILE}" if inputs.maintenance is None else None,
        lambda p: plot_maintenance(inputs.maintenance, p),
    )
    todo["boundary"] = (
        f"no {BOUNDARY_FILE}"
        if inputs.boundary is None
        else "no runs in it"
        if not inputs.boundary.runs
        else None,
        lambda p: plot_boundary(inputs.boundary, p),
    )
    drawn = {}
    for key, (missing, draw) in todo.items():
        if missing:
            (out / ALL_PLOTS[key]).unlink(
                missing_ok=True
            )  # an earlier run's plot is not this one's
            drawn[key] = missing
        else:
            draw(out / ALL_PLOTS[key])
            drawn[key] = ALL_PLOTS[key]
    return drawn


def build(directory: Path, out: Path, command: str | None = None) -> Path:
    """Read ``directory``'s benchmark JSONs, write ``out/REPORT.md`` and the plots, with a copy
    of the JSONs; the report's path. Raises :class:`MalformedReport` before writing anything if a JSON is malformed."""
    inputs = read_inputs(directory)
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != directory.resolve():  # the figures travel with the report (docs/bench/)
        for name in inputs.extras:
            shutil.copy2(directory / name, out / name)
    plots = draw_plots(inputs, out)
    report = out / "REPORT.md"
    report.write_text(render(inputs, plots, out, command))
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.report",
        formatter_class=HelpFormatter,
        description="Build the benchmark report (REPORT.md and PNG plots) from the JSON files "
        "the benchmarks wrote with --out-dir: " + ", ".join(INPUT_FILES) + ".",
    )
    parser.add_argument("directory", type=Path, help="where the benchmarks wrote their JSON")
    parser.add_argument(
        "--to",
        type=Path,
        default=None,
        help="where REPORT.md and the plots go (default: the same directory)",
    )
    parser.add_argument(
        "--command",
        default=None,
        help="the command that ran the benchmarks, as the report should name it",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.directory.is_dir():
        print(f"bench.report: {args.directory} is not a directory", file=sys.stderr)
        return 2
    try:
        report = build(args.directory, args.to or args.directory, args.command)
    except MalformedReport as e:
        print(f"bench.report: malformed benchmark JSON in {args.directory}: {e}", file=sys.stderr)
        return 1
    print(f"bench.report: wrote {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
