"""Fault injection for the lake jobs: run a job as its real process, SIGKILL it at a moment read
off its files, finish cleanly, and compare the tables with an uninterrupted run.

The pieces, shared by the short form (``tests/faults/test_*.py``, in ``make test``) and the long
form (``tests/faults/run.py``, ``make faults``):

* :class:`Lake`: the uninterrupted reference. One runtime directory, fed by a broker holding
  generated traffic, built in-process in stages: bronze; silver up to its first batch; a full
  refresh of the view; silver to the end (:meth:`Lake.snapshot` ``silver``: the input of the gold
  and view faults); the view's incremental refresh; gold. Each faulted job starts from a byte copy
  of the reference's state just before that job ran, so a difference can only come from the
  fault.
* :func:`start_job`: ``python -m spark_apps.lake.<job> …`` with the runtime's ``ADLAKE_*``
  variables, as ``spark_apps/submit.py`` runs it for Airflow, in a process group of its own.
* :func:`kill_when`: poll the job's files (checkpoint offsets and commits, ``_delta_log``
  versions, data files) and SIGKILL the group the moment a condition holds; what the files said
  at that instant is recorded, so a report says which moment was hit.
* :func:`compare`: the faulted run's table against the reference's: lost rows, extra rows and
  duplicated ids.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from adlake import generator, registry
from adlake.apps.process import settings_env
from adlake.config import REPO_ROOT, Settings

# The slice of the lake the faults exercise: one topic with a quarantine (malformed records) and
# a view, one without; a gold table over each (two of adlake.catalog.gold.NAMES).
TOPICS = ("ad_impressions", "page_clicks")
FAULTED_GOLD_TABLES = ("campaign_delivery", "page_traffic")
VIEW = registry.view("page_clicks_hourly")
# Small batches, so each job runs several and a kill falls between two of them.
BRONZE_BATCH = 60
SILVER_FILES = 1
# How often the files are looked at while waiting for a moment to kill at.
POLL_S = 0.005


def traffic(seed: int, count: int) -> generator.GeneratorConfig:
    """Generated input with every anomaly the jobs handle (duplicates, malformed, late…)."""
    return generator.GeneratorConfig(
        rate=4000,
        count=count,
        seed=seed,
        out_of_order=0.05,
        duplicates=0.05,
        late=0.02,
        malformed=0.05,
        orphans=0.05,
        surge_pages=0,
    )


# -- the reference run ---------------------------------------------------------------------------


def table_dir(settings: Settings, name: str) -> Path:
    return settings.table_path(name)


def copy_state(
    source: Settings, target: Settings, tables: tuple[str, ...], checkpoints: tuple[str, ...] = ()
) -> None:
    """Byte copies of ``tables`` (their whole Delta history) and ``checkpoints``."""
    for name in tables:
        if source.table_path(name).exists():
            shutil.copytree(source.table_path(name), target.table_path(name))
    for name in checkpoints:
        shutil.copytree(source.checkpoint_path(name), target.checkpoint_path(name))


def interval(report: dict) -> tuple[date, date]:
    """Whole days around the generated traffic (its events fall on the day it ran, give or take
    lateness), as gold's ``[start, end)``."""
    day = date.fromisoformat(report["started_at"][:10])
    return day - timedelta(days=1), day + timedelta(days=2)


@dataclass
class Lake:
    """The uninterrupted run, stage by stage, in ``settings.runtime_dir``; ``snapshots`` holds
    the runtime directories copied before the later stages (``bronze``: bronze tables only;
    ``silver``: silver, quarantine, the view as of its first refresh and its progress)."""

    settings: Settings
    report: dict
    snapshots: dict[str, Settings] = field(default_factory=dict)

    def build(self, spark: Any) -> None:
        from spark_apps.lake import bronze, gold, silver, views

        s = self.settings
        bronze.run(spark, s, list(TOPICS))  # one batch: bronze's rows do not depend on batching
        self.snapshots["bronze"] = self._snapshot("bronze", bronze_tables())
        # Silver in two runs with the view refreshed between them, so the faulted view refresh
        # is incremental (change feed, recompute, MERGE), not a first full refresh.
        query = silver.start_refine(spark, s, VIEW_TOPIC, max_files=SILVER_FILES)
        while query.isActive and not query.recentProgress:
            query.awaitTermination(0.2)
        query.stop()
        views.refresh_view(spark, s, VIEW)
        silver.run(spark, s, list(TOPICS))
        self.snapshots["silver"] = self._snapshot("silver", silver_state())
        views.refresh_view(spark, s, VIEW)
        start, end = interval(self.report)
        for name in FAULTED_GOLD_TABLES:
            gold.rebuild(spark, s, name, start, end)
        # Maintenance starts from a copy of the whole lake with Delta's own minimum retention
        # lowered, so that a VACUUM at retention 0 deletes what the rebuilds and MERGEs
        # replaced (in the reference it would also refuse the change feed's older versions).
        self.snapshots["gold"] = self._snapshot("gold", maintained_tables())
        allow_short_retention(spark, self.snapshots["gold"], maintained_tables())

    def _snapshot(self, stage: str, tables: tuple[str, ...]) -> Settings:
        target = self.settings.with_overrides(
            runtime_dir=self.settings.runtime_dir.with_name(
                f"{self.settings.runtime_dir.name}-{stage}"
            )
        )
        copy_state(self.settings, target, tables)
        return target

    def fork(self, stage: str, runtime_dir: Path) -> Settings:
        """A runtime of its own at ``runtime_dir`` holding a copy of snapshot ``stage``
        (``empty``: nothing), on the reference's broker; from ``gold`` (maintenance's), with no
        time travel promised, so that its VACUUM may run at retention 0."""
        target = self.settings.with_overrides(runtime_dir=runtime_dir)
        if stage == "gold":
            target = target.with_overrides(lake_retention_hours=0)
        if stage != "empty":
            shutil.copytree(self.snapshots[stage].tables_dir, target.tables_dir)
        return target


VIEW_TOPIC = "page_clicks"


def bronze_tables() -> tuple[str, ...]:
    return tuple(f"bronze_{t}" for t in TOPICS)


def silver_tables() -> tuple[str, ...]:
    return (*(f"silver_{t}" for t in TOPICS), "quarantine")


def silver_state() -> tuple[str, ...]:
    from spark_apps.lake.views import PROGRESS_TABLE

    return (*bronze_tables(), *silver_tables(), VIEW.name, PROGRESS_TABLE)


def allow_short_retention(
    spark: Any, settings: Settings, tables: tuple[str, ...], hours: int = 0
) -> None:
    """Lower Delta's own minimum retention on ``tables`` to ``hours`` (7 days unless set)."""
    for name in tables:
        spark.sql(
            f"ALTER TABLE delta.`{settings.table_path(name)}` SET TBLPROPERTIES "
            f"('delta.deletedFileRetentionDuration' = 'interval {hours} hours')"
        )


def maintained_tables() -> tuple[str, ...]:
    """Every table of the slice, the first one with partitions of several files (silver's
    page clicks, written a file per batch): maintenance compacts it first."""
    first = f"silver_{VIEW_TOPIC}"
    return (first, *(t for t in silver_state() if t != first), *FAULTED_GOLD_TABLES)


# -- jobs as processes -------------------------------------------------------------------------


# Each job's command line (after ``python -m``), as the lake DAG runs it, narrowed to the slice.
def job_argv(job: str, report: dict) -> list[str]:
    start, end = interval(report)
    return {
        "bronze": [
            "spark_apps.lake.bronze",
            "--topics",
            ",".join(TOPICS),
            "--max-offsets-per-trigger",
            str(BRONZE_BATCH),
        ],
        "silver": [
            "spark_apps.lake.silver",
            "--topics",
            ",".join(TOPICS),
            "--max-files-per-trigger",
            str(SILVER_FILES),
        ],
        "gold": [
            "spark_apps.lake.gold",
            "--tables",
            ",".join(FAULTED_GOLD_TABLES),
            "--start",
            start.isoformat(),
            "--end",
            end.isoformat(),
        ],
        "views": ["spark_apps.lake.views", "--view", VIEW.name],
        "maintenance": [
            "spark_apps.lake.maintenance",
            "--tables",
            ",".join(maintained_tables()),
            "--retention-hours",
            "0",
        ],
    }[job]


def job_env(settings: Settings, engine_token: str | None = None) -> dict[str, str]:
    """This interpreter's environment with ``settings`` as ``ADLAKE_*`` variables. The job runs
    in a Spark session of its own (``lake_engine=local``): killing its process kills its
    writes. With ``engine_token``, a session of the engine at ``settings.lake_engine_port``
    instead (a dead client's stream runs on there; the engine's own kill is
    :mod:`tests.faults.test_engine_kill`'s)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADLAKE_")}
    if engine_token is None:
        settings = settings.with_overrides(lake_engine="local")
    else:
        settings = settings.with_overrides(lake_engine="connect")
        env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = engine_token
    env.update(settings_env(settings))
    env["PYTHONUNBUFFERED"] = "1"
    # A job killed after seconds gains nothing from the JIT's optimizing compiler: C1 only
    # starts a small Spark job a few seconds sooner (README, "Tests"). Semantics are unchanged.
    env["JDK_JAVA_OPTIONS"] = "-XX:TieredStopAtLevel=1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def start_job(
    settings: Settings,
    argv: list[str],
    log_name: str,
    engine_token: str | None = None,
    session_id: str | None = None,
) -> subprocess.Popen:
    """``python -m <argv>`` with ``settings``, output in ``<runtime>/logs/<log_name>.log``, in a
    process group of its own (the JVM it starts is killed with it); on the engine with
    ``engine_token`` (:func:`job_env`), under the engine session ``session_id`` if given (as a
    task's try runs it: :mod:`adlake.airflow.engine_task`)."""
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    log = open(settings.logs_dir / f"{log_name}.log", "ab")  # noqa: SIM115 - the child owns it
    try:
        return subprocess.Popen(
            [sys.executable, "-m", *argv],
            env={
                **job_env(settings, engine_token),
                **({"ADLAKE_LAKE_SESSION_ID": session_id} if session_id else {}),
            },
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log.close()


def log_text(settings: Settings, log_name: str) -> str:
    path = settings.logs_dir / f"{log_name}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def finish(proc: subprocess.Popen, timeout: float = 600) -> int:
    """Wait for ``proc``; kill its group if it outlives ``timeout``. Returns its exit status."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# -- moments: what the files say ----------------------------------------------------------------


def _numbered(directory: Path) -> set[int]:
    try:
        return {int(n) for n in os.listdir(directory) if n.isdigit()}
    except FileNotFoundError:
        return set()


def log_versions(table: Path) -> set[int]:
    """The committed versions of the Delta table at ``table`` (its ``_delta_log`` JSON files)."""
    try:
        return {
            int(n[:20])
            for n in os.listdir(table / "_delta_log")
            if n.endswith(".json") and n[:20].isdigit()
        }
    except FileNotFoundError:
        return set()


def data_files(table: Path) -> set[str]:
    """Parquet files under ``table`` (every partition), as relative paths."""
    found = set()
    for root, dirs, files in os.walk(table):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found.update(
            os.path.relpath(os.path.join(root, f), table) for f in files if f.endswith(".parquet")
        )
    return found


def open_batch(checkpoint: Path) -> int | None:
    """The batch whose offsets are written and whose commit is not: the stream is inside it."""
    pending = _numbered(checkpoint / "offsets") - _numbered(checkpoint / "commits")
    return max(pending) if pending else None


@dataclass(frozen=True)
class Moment:
    """A named condition on the files, checked every ``POLL_S`` seconds."""

    name: str
    holds: Callable[[], bool]
    describe: Callable[[], str] = lambda: ""


def batch_open(checkpoint: Path, min_batch: int = 1) -> Moment:
    """Inside batch N >= ``min_batch``: ``offsets/N`` written, ``commits/N`` not yet."""

    def holds() -> bool:
        n = open_batch(checkpoint)
        return n is not None and n >= min_batch

    return Moment(
        f"offsets/N written, commits/N not (N >= {min_batch})",
        holds,
        lambda: f"open batch {open_batch(checkpoint)}",
    )


def sink_committed_batch_open(
    checkpoint: Path, table: Path, versions_before: int, min_batch: int = 1
) -> Moment:
    """Bronze: the Delta sink committed batch N (version ``versions_before`` + N exists: one
    commit per batch after the ones already there) and ``commits/N`` is not written: the state
    a rerun must recognise as done, or write the batch twice."""

    def holds() -> bool:
        n = open_batch(checkpoint)
        return n is not None and n >= min_batch and (versions_before + n) in log_versions(table)

    return Moment(
        "after the Delta commit of batch N, before commits/N",
        holds,
        lambda: (
            f"open batch {open_batch(checkpoint)}, table at v{max(log_versions(table), default=-1)}"
        ),
    )


def commit_during_batch(checkpoint: Path, table: Path, min_batch: int = 1) -> Moment:
    """Silver: inside batch N, a new commit of ``table`` (the quarantine's MERGE) is there, the
    silver MERGE and ``commits/N`` are not: half of a batch's writes done."""
    seen: dict[int, int] = {}

    def holds() -> bool:
        n = open_batch(checkpoint)
        if n is None or n < min_batch:
            return False
        latest = max(log_versions(table), default=-1)
        first = seen.setdefault(n, latest)
        return latest > first

    return Moment(
        "inside batch N, after the quarantine MERGE's commit, before commits/N",
        holds,
        lambda: f"open batch {open_batch(checkpoint)}",
    )


def new_version(table: Path, after: int) -> Moment:
    """The Delta table at ``table`` has a commit past version ``after``."""
    return Moment(
        f"after a new _delta_log commit of {table.name} (past v{after})",
        lambda: max(log_versions(table), default=-1) > after,
        lambda: f"{table.name} at v{max(log_versions(table), default=-1)}",
    )


def committed_not_recorded(
    view_table: Path, view_after: int, progress: Path, progress_after: int
) -> Moment:
    """A view's MERGE committed, the progress table's row not yet written."""

    def holds() -> bool:
        return (
            max(log_versions(view_table), default=-1) > view_after
            and max(log_versions(progress), default=-1) <= progress_after
        )

    return Moment(
        "after the view MERGE's commit, before the progress row",
        holds,
        lambda: (
            f"view at v{max(log_versions(view_table), default=-1)}, progress at "
            f"v{max(log_versions(progress), default=-1)}"
        ),
    )


def merge_writing(table: Path) -> Moment:
    """A MERGE has written data files into ``table`` and not committed them."""
    before, version = data_files(table), max(log_versions(table), default=-1)
    return Moment(
        "during a MERGE (data files written, no commit yet)",
        lambda: (
            bool(data_files(table) - before) and max(log_versions(table), default=-1) == version
        ),
    )


def vacuum_deleting(table: Path) -> Moment:
    """A VACUUM has begun deleting: a file of the table present at the start is gone."""
    before = data_files(table)
    return Moment(
        "during a VACUUM (some replaced files deleted)",
        lambda: bool(before - data_files(table)),
        lambda: f"{len(before - data_files(table))} of {len(before)} files deleted",
    )


def after_seconds(seconds: float, settings: Settings, job: str) -> Moment:
    """A moment by the clock (the long form's random kills); what the job's files say at it is
    recorded (:func:`job_state`)."""
    deadline = time.monotonic() + seconds
    return Moment(
        f"{seconds:.2f} s after the start",
        lambda: time.monotonic() >= deadline,
        lambda: job_state(settings, job),
    )


def job_state(settings: Settings, job: str) -> str:
    """The job's progress as its files show it: open batches of its checkpoints, versions of
    the tables it writes."""
    from spark_apps.lake.views import PROGRESS_TABLE

    names = {
        "bronze": bronze_tables(),
        "silver": silver_tables(),
        "gold": FAULTED_GOLD_TABLES,
        "views": (VIEW.name, PROGRESS_TABLE),
        "maintenance": maintained_tables(),
    }[job]
    parts = [f"{n} v{max(log_versions(settings.table_path(n)), default=-1)}" for n in names]
    if job in ("bronze", "silver"):
        for topic in TOPICS:
            checkpoint = settings.checkpoint_path(f"{job}_{topic}")
            parts.append(f"{checkpoint.name} open batch {open_batch(checkpoint)}")
    return ", ".join(parts)


@dataclass
class Kill:
    """One SIGKILL: the moment asked for, whether it was hit (else the job ended first, with
    ``exit_code``), what the files said, and when."""

    job: str
    moment: str
    hit: bool
    observed: str = ""
    after_s: float = 0.0
    exit_code: int | None = None


def kill_when(job: str, proc: subprocess.Popen, moment: Moment, timeout: float = 300) -> Kill:
    """SIGKILL ``proc``'s process group as soon as ``moment`` holds (checked every ``POLL_S``
    seconds, up to ``timeout``). If the job exits first, nothing is killed (``hit`` False)."""
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return Kill(
                job,
                moment.name,
                False,
                moment.describe(),
                time.monotonic() - started,
                proc.returncode,
            )
        if moment.holds():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            observed = moment.describe()
            proc.wait()
            return Kill(job, moment.name, True, observed, time.monotonic() - started)
        time.sleep(POLL_S)
    kill_group(proc)
    raise TimeoutError(f"{job}: {moment.name} did not happen within {timeout:.0f} s")


# -- comparison ---------------------------------------------------------------------------------

# Columns of bronze that are the wall clock of the ingest, not a function of the input.
BRONZE_WALL_CLOCK = ("ingest_time", "ingest_date")


def rows(spark: Any, settings: Settings, name: str, drop: tuple[str, ...] = ()) -> list:
    """Every row of table ``name`` (all columns but ``drop``), sorted."""
    df = spark.read.format("delta").load(str(settings.table_path(name)))
    return sorted(df.drop(*drop).collect(), key=lambda r: tuple(map(repr, r)))


@dataclass
class Comparison:
    """The faulted table against the reference: rows lost, rows extra, and ids seen more than
    once (``key``: the table's identity columns)."""

    table: str
    expected: int
    got: int
    lost: int
    extra: int
    duplicated: int

    @property
    def equal(self) -> bool:
        return self.lost == self.extra == self.duplicated == 0


def compare(
    spark: Any,
    reference: Settings,
    faulted: Settings,
    name: str,
    key: tuple[str, ...],
    drop: tuple[str, ...] = (),
) -> Comparison:
    """Compare table ``name`` of ``faulted`` with ``reference`` row for row (all columns but
    ``drop``): a multiset difference both ways, plus how many ids of ``key`` occur twice."""
    from collections import Counter

    want = Counter(rows(spark, reference, name, drop))
    have_rows = rows(spark, faulted, name, drop)
    have = Counter(have_rows)
    ids = Counter(tuple(r[k] for k in key) for r in have_rows)
    return Comparison(
        name,
        sum(want.values()),
        len(have_rows),
        sum((want - have).values()),
        sum((have - want).values()),
        sum(n - 1 for n in ids.values() if n > 1),
    )


def table_key(name: str) -> tuple[str, ...]:
    """The columns identifying one row of ``name``: Kafka coordinates in bronze, the event
    (id, date) in silver, the grouping keys of gold and views."""
    from spark_apps.lake.views import PROGRESS_TABLE

    if name in registry.VIEWS:
        return registry.view(name).keys
    if name == PROGRESS_TABLE:  # a row per refresh of a view
        return ("view", "source_version")
    table = registry.table(name)
    if table.layer == "silver":
        return (*table.keys, "event_date")
    return table.keys


def compare_job(spark: Any, reference: Settings, faulted: Settings, job: str) -> list[Comparison]:
    """Every table ``job`` writes, compared with the reference."""
    names = {
        "bronze": bronze_tables(),
        "silver": silver_tables(),
        "gold": FAULTED_GOLD_TABLES,
        "views": (VIEW.name,),
        "maintenance": maintained_tables(),
    }[job]
    drop = BRONZE_WALL_CLOCK if job == "bronze" else ()
    return [compare(spark, reference, faulted, n, table_key(n), drop) for n in names]


def finish_in_process(spark: Any, settings: Settings, job: str, report: dict) -> float:
    """The clean finish after the kills, in the test's own session (a JVM start saved); returns
    its seconds (the time to recover)."""
    from spark_apps.lake import bronze, gold, maintenance, silver, views

    started = time.monotonic()
    if job == "bronze":
        bronze.run(spark, settings, list(TOPICS))
    elif job == "silver":
        silver.run(spark, settings, list(TOPICS))
    elif job == "gold":
        start, end = interval(report)
        for name in FAULTED_GOLD_TABLES:
            gold.rebuild(spark, settings, name, start, end)
    elif job == "maintenance":
        maintenance.run(spark, settings, list(maintained_tables()), 0, dry_run=False)
    else:
        views.refresh_view(spark, settings, VIEW)
    return time.monotonic() - started


def dangerous_moment(settings: Settings, job: str) -> Moment:
    """The short form's moment per job: the one where a non-idempotent write would show."""
    from spark_apps.lake.views import PROGRESS_TABLE

    if job == "bronze":
        table = settings.table_path("bronze_page_clicks")
        return sink_committed_batch_open(
            settings.checkpoint_path("bronze_page_clicks"), table, versions_before=1
        )
    if job == "silver":
        return commit_during_batch(
            settings.checkpoint_path("silver_ad_impressions"), settings.table_path("quarantine")
        )
    if job == "gold":
        # A table not created yet gets v0 from the job's create, then its rows as v1.
        first = settings.table_path(FAULTED_GOLD_TABLES[0])
        return new_version(first, max(log_versions(first), default=0))
    if job == "maintenance":
        return vacuum_deleting(settings.table_path(maintained_tables()[0]))
    view, progress = settings.table_path(VIEW.name), settings.table_path(PROGRESS_TABLE)
    return committed_not_recorded(
        view, max(log_versions(view)), progress, max(log_versions(progress))
    )


# The snapshot each job's fault starts from.
STAGE = {
    "bronze": "empty",
    "silver": "bronze",
    "gold": "silver",
    "views": "silver",
    "maintenance": "gold",
}
JOBS = tuple(STAGE)
