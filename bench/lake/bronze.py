"""Benchmark of bronze and silver (not a test): ingest throughput, start-up, and each lake job's
fixed cost, from one run, printed and written as ``bronze.json``.

On a broker of its own (free loopback ports, runtime under a temporary directory):

1. **Fill.** ``--records`` valid clicks into ``page_clicks`` (written by a Spark batch job, so
   the producer is not what is measured).
2. **Bronze ingest.** The bronze job's ``AvailableNow`` ingest of that topic on a fresh
   checkpoint, in batches of ``--max-offsets-per-trigger`` records. Reported apart:
   *start-up*, the benchmark's session start plus the time from the job's call to its first
   batch's trigger; the *batches*, each its records and the query's own duration
   (``triggerExecution``) from its progress; *steady-state* records/s over the batches after the
   first (the first pays planning and code generation), without a last partial batch (see
   :func:`steady_batches`; its time, a batch's fixed cost, is reported as ``tail_batch``); *wall* records/s, all records over the
   job's whole call. The bronze table must hold exactly the records sent.
3. **Silver** refines those bronze rows (its records/s, same progress figures; ``--no-silver``
   skips it).
4. **Fixed cost.** After a first run of bronze and silver over every topic (which creates their
   tables and checkpoints, as the first hourly run does), each job of the hourly chain run as
   Airflow runs it, a process of its own, on an empty hour (yesterday's last: the clicks are
   today's): nothing new in Kafka for bronze, nothing new in bronze for silver, no row for gold's
   hour tables and their quality gate (``--no-gold`` skips those two), then a refresh of
   ``page_clicks_hourly`` with no change in its source. The process's wall time is the figure,
   and ``chain`` the hourly jobs' sum; each is measured twice: in a Spark session of its own
   (``fixed_cost_s``: what spark-submit pays, a JVM per job) and as a client of the lake engine
   (``fixed_cost_engine_s``; the engine is started first and warmed by one unmeasured round,
   as a running engine is by the hours before; neither counted).
   ``--no-fixed-costs`` skips this step.

``--out-dir DIR`` writes ``DIR/bronze.json``: what it writes is
:class:`~bench.lake.bronze_report.Bronze`, the type the report reads.
``--quick`` is a smoke run of the tool (``make bench-quick``): steps 1 and 2 on 2,000 records
in batches of half of them; no silver (the report shows none of its figures; its first run is
seconds of table creation) and no fixed cost (each is a Spark start of its own, ten seconds and
more).

    .venv/lake/bin/python -m bench.lake.bronze --out-dir .runtime/reports/bench
    .venv/lake/bin/python -m bench.lake.bronze --quick --out-dir .runtime/reports/bench-quick
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import BRONZE_GOAL_RECORDS_PER_S, cores, load_average, say
from bench.lake.bronze_report import Batch, Bronze, TailBatch, Throughput
from bench.report_kit import StatedGoal
from spark_apps.lake import bronze, silver
from spark_apps.lake.tables import table_path

TOPIC = "page_clicks"
QUICK_RECORDS = 2_000


def fill_topic(spark, settings: Settings, topic: str, records: int, first_id: int = 0) -> None:
    """``records`` valid clicks into ``topic``, spread over its partitions by key, their ids
    from ``first_id`` on."""
    from pyspark.sql import functions as F

    fields = {
        "click_id": F.concat(F.lit("k"), F.col("id").cast("string")),
        "page_id": F.concat(F.lit("p"), (F.col("id") % 1000).cast("string")),
        "user_id": F.concat(F.lit("u"), (F.col("id") % 50_000).cast("string")),
        "event_time": F.date_format(F.current_timestamp(), "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"),
    }
    names = registry.topic(topic).schema.names
    missing = set(names) - set(fields)
    if missing:
        raise RuntimeError(f"fill_topic does not know how to fill {sorted(missing)} of {topic}")
    (
        spark.range(first_id, first_id + records, numPartitions=settings.shuffle_partitions)
        .select(
            fields["click_id"].alias("key"),
            F.to_json(F.struct(*(fields[n].alias(n) for n in names))).alias("value"),
        )
        .write.format("kafka")
        .option("kafka.bootstrap.servers", settings.kafka_bootstrap)
        .option("topic", topic)
        .save()
    )


class Progress:
    """Every progress event of the session's streaming queries, by query name, as they come
    (a listener, so nothing is lost to ``recentProgress``'s window)."""

    def __init__(self, spark) -> None:
        from pyspark.sql.streaming import StreamingQueryListener

        self.events: dict[str, list] = {}
        outer = self

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event):
                pass

            def onQueryProgress(self, event):
                p = event.progress
                outer.events.setdefault(p.name, []).append(
                    {
                        "timestamp": p.timestamp,
                        "records": p.numInputRows,
                        "durations_ms": dict(p.durationMs),
                    }
                )

            def onQueryIdle(self, event):
                pass

            def onQueryTerminated(self, event):
                pass

        self.listener = Listener()
        spark.streams.addListener(self.listener)

    def batches(self, name: str, records: int) -> list[dict]:
        """The query's batches that read records: their records, seconds and phases. Waits
        (up to 30 s) for the events of ``records`` records: the listener hears of them after
        the query has ended."""
        deadline = time.monotonic() + 30
        while (
            sum(e["records"] for e in self.events.get(name, [])) < records
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        return [
            {
                "records": e["records"],
                "seconds": e["durations_ms"]["triggerExecution"] / 1000,
                "timestamp": e["timestamp"],
                "durations_ms": e["durations_ms"],
            }
            for e in self.events.get(name, [])
            if e["records"]
        ]


def _epoch(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def steady_batches(batches: list[dict]) -> list[dict]:
    """The batches after the first (which pays planning and code generation), without a last
    batch of under half the others' size: the remainder of the split, which costs a batch's
    fixed time for a few records. It is kept in ``batches`` and in ``tail_batch``: its time is
    the per-batch fixed cost.

    >>> [b["records"] for b in steady_batches([{"records": 10}, {"records": 10},
    ...                                         {"records": 9}, {"records": 2}])]
    [10, 9]
    """
    steady = batches[1:]
    if len(steady) > 1 and steady[-1]["records"] < max(b["records"] for b in steady) / 2:
        steady = steady[:-1]
    return steady


def throughput(batches: list[dict], started_epoch: float, wall_s: float) -> Throughput:
    """Start-up, steady-state and wall figures of one query's ``batches``."""
    records = sum(b["records"] for b in batches)
    steady = steady_batches(batches)
    steady_s = sum(b["seconds"] for b in steady)
    return Throughput(
        records=records,
        wall_s=round(wall_s, 2),
        query_start_s=round(_epoch(batches[0]["timestamp"]) - started_epoch, 2)
        if batches
        else None,
        first_batch_s=round(batches[0]["seconds"], 2) if batches else None,
        steady_records_per_s=round(sum(b["records"] for b in steady) / steady_s)
        if steady_s
        else None,
        wall_records_per_s=round(records / wall_s) if wall_s else None,
        tail_batch=next(
            (
                TailBatch(records=b["records"], seconds=round(b["seconds"], 3))
                for b in batches[len(steady) + 1 :]
            ),
            None,
        ),
        batches=[
            Batch(
                records=b["records"],
                seconds=round(b["seconds"], 3),
                durations_ms=b["durations_ms"],
            )
            for b in batches
        ],
    )


def bench(spark, settings: Settings, args: argparse.Namespace, session_s: float) -> dict:
    """Steps 1 to 4 on ``spark`` against the broker and runtime of ``settings`` (a private
    one: see :func:`session_and_broker`)."""
    progress = Progress(spark)
    fixed: dict[str, dict[str, float]] = {}
    logs: dict[str, list[str]] = {}
    started = time.monotonic()
    fill_topic(spark, settings, TOPIC, args.records)
    say(f"fill: {args.records:,} records in {TOPIC} ({time.monotonic() - started:.1f} s)")

    say(f"bronze: ingest, batches of {args.max_offsets_per_trigger:,} records")
    started, started_epoch = time.monotonic(), time.time()
    written = bronze.run(spark, settings, [TOPIC], args.max_offsets_per_trigger)
    ingest = throughput(
        progress.batches(bronze.bronze_table(TOPIC).name, args.records),
        started_epoch,
        time.monotonic() - started,
    )
    table = bronze.bronze_table(TOPIC)
    stored = spark.read.format("delta").load(table_path(settings, table)).count()
    if stored != args.records or written[table.name] != args.records:
        raise RuntimeError(
            f"bronze holds {stored:,} rows (query reported "
            f"{written[table.name]:,}) for {args.records:,} records sent"
        )
    say(
        f"bronze: {args.records:,} records, start-up {session_s + ingest.query_start_s:.1f} s"
        f" (session {session_s:.1f} s), steady {ingest.steady_records_per_s:,} records/s, "
        f"wall {ingest.wall_records_per_s:,} records/s"
    )

    refine = None
    if args.silver:
        say("silver: refine")
        started, started_epoch = time.monotonic(), time.time()
        silver.run(spark, settings, [TOPIC], args.max_files_per_trigger)
        refine = throughput(
            progress.batches(silver.silver_table(TOPIC).name, args.records),
            started_epoch,
            time.monotonic() - started,
        )
        say(
            f"silver: {refine.records:,} records in {refine.wall_s:.1f} s = "
            f"{refine.wall_records_per_s:,} records/s"
        )

    if args.fixed_costs:
        fixed, logs = fixed_costs(spark, settings, args.gold)
    spark.streams.removeListener(progress.listener)
    return {
        "ingest": ingest,
        "silver": refine,
        "fixed_cost_s": fixed.get("fixed_cost_s", {}),
        "fixed_cost_engine_s": fixed.get("fixed_cost_engine_s", {}),
        "fixed_cost_logs": logs,
    }


# How a lake job runs, by its fixed-cost key: "local", a process with a Spark session of its own
# (what spark-submit does: a JVM per task); "engine", a client process of the lake engine.
MODES = {"local": "fixed_cost_s", "engine": "fixed_cost_engine_s"}
# The view whose no-change refresh is measured beside the chain.
FIXED_COST_VIEW = "page_clicks_hourly"


def fixed_costs(spark, settings: Settings, gold: bool) -> tuple[dict, dict]:
    """Step 4: each job's wall time as a process of its own on an empty interval, in each mode
    of :data:`MODES` (the engine started here, its start not counted), and their progress
    lines, by mode and job."""
    from adlake.local.engine import LakeEngine
    from spark_apps.lake import views

    # Hourly runs find every table and checkpoint in place: the first run of the other
    # topics (nothing in them) is not what is measured; nor is the view's first refresh.
    started = time.monotonic()
    bronze.run(spark, settings, list(registry.TOPICS))
    silver.run(spark, settings, list(registry.SILVER_TOPICS))
    views.refresh_view(spark, settings, registry.view(FIXED_COST_VIEW))
    say(f"first run of every topic's bronze and silver ({time.monotonic() - started:.1f} s)")
    # The hourly chain's jobs as its DAG runs them (registry order: bronze, silver, gold's hour
    # tables, their one quality gate), over yesterday's last hour: the clicks are all today's,
    # so no interval holds a row. Their sum is the chain's compute floor, without Airflow.
    jobs = [
        (j.name, j.module, [*j.args, *(["--outcome-dir", "{outcomes}"] if j.gate else [])])
        for j in registry.JOBS.values()
        if j.runs("hourly") and (gold or j.name in ("bronze", "silver"))
    ]
    view_job = ("view_refresh", "spark_apps.lake.views", ["--view", FIXED_COST_VIEW])
    hour = datetime.combine(date.today(), datetime.min.time(), tzinfo=UTC) - timedelta(hours=1)
    interval = ["--start", hour.isoformat(), "--end", (hour + timedelta(hours=1)).isoformat()]
    outcomes = str(settings.runtime_dir / "bench-outcomes")
    fixed: dict[str, dict[str, float]] = {}
    logs: dict[str, list[str]] = {}

    def command(name: str, args: list[str]) -> list[str]:
        argv = [a.replace("{outcomes}", outcomes) for a in args]
        return argv if name == view_job[0] else [*argv, *interval]

    engine = LakeEngine(settings.with_overrides(lake_engine="connect"))
    for mode, key in MODES.items():
        run_settings = settings.with_overrides(
            lake_engine="connect" if mode == "engine" else "local"
        )
        if mode == "engine":
            began = time.monotonic()
            engine.start()
            say(f"fixed cost: the lake engine started in {time.monotonic() - began:.1f} s")
            # A running engine has run the chain before (every hour): its classes loaded and its
            # code compiled. One unmeasured round brings a new one there (its seconds said).
            for name, module, args in [*jobs, view_job]:
                warm = harness.run_module(run_settings, module, *command(name, args))["seconds"]
                say(f"fixed cost (engine, warming up): {name} {warm:.1f} s")
        fixed[key] = {}
        for name, module, args in [*jobs, view_job]:
            run = harness.run_module(run_settings, module, *command(name, args))
            fixed[key][name], logs[f"{mode}:{name}"] = run["seconds"], run["log"]
            say(f"fixed cost ({mode}): {name} {run['seconds']:.1f} s")
        chain = [fixed[key][name] for name, _, _ in jobs]
        fixed[key]["chain"] = round(sum(chain), 2)
        say(f"fixed cost ({mode}): the hourly chain's jobs in sequence {fixed[key]['chain']:.1f} s")
        one_row = one_row_refresh(spark, settings, run_settings, 10**9 + len(fixed))
        fixed[key]["view_refresh_1_row_to_commit"] = one_row["to_commit_s"]
        say(f"fixed cost ({mode}): a 1-row view refresh, process start to commit {one_row}")
    engine.stop()
    return fixed, logs


def one_row_refresh(spark, settings: Settings, run_settings: Settings, click_id: int) -> dict:
    """One new click in the view's source (bronze and silver run here), then the view's refresh
    as its Airflow task runs it (``spark_apps/submit.py`` under a try's session id): seconds from
    the process's start to the view's Delta commit, and to the process's exit."""
    import subprocess
    import uuid

    from adlake.config import REPO_ROOT

    fill_topic(spark, settings, TOPIC, 1, click_id)
    bronze.run(spark, settings, [TOPIC])
    silver.run(spark, settings, [TOPIC])
    view = settings.table_path(FIXED_COST_VIEW)
    before, _ = latest_commit(view)
    env = harness.process_env(run_settings, {"ADLAKE_LAKE_SESSION_ID": str(uuid.uuid4())})
    argv = [sys.executable, str(REPO_ROOT / "spark_apps" / "submit.py"), "spark_apps.lake.views"]
    started = time.time()
    done = subprocess.run(
        [*argv, "--view", FIXED_COST_VIEW],
        check=False,
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    ended = time.time()
    version, committed_ms = latest_commit(view)
    if done.returncode or version <= before:
        raise RuntimeError(
            f"the 1-row refresh did not commit (v{before}→v{version}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return {
        "to_commit_s": round(committed_ms / 1000 - started, 2),
        "process_s": round(ended - started, 2),
    }


def latest_commit(table: Path) -> tuple[int, int]:
    """The newest version of a Delta table and its commit's timestamp (ms), from its log."""
    newest = max(table.glob("_delta_log/*.json"), key=lambda p: int(p.stem))
    for line in newest.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return int(newest.stem), int(action["commitInfo"]["timestamp"])
    raise RuntimeError(f"{newest} holds no commitInfo")


def bound(ingest: Throughput, load: tuple[float, float]) -> str:
    """What the steady-state figure is made of: the share of the steady batches' time spent in
    ``addBatch`` (read Kafka, convert, write Parquet with its statistics, commit to Delta) and
    the load the machine carried."""
    steady = steady_batches([asdict(b) for b in ingest.batches])
    total = sum(b["durations_ms"].get("triggerExecution", 0) for b in steady)
    add = sum(b["durations_ms"].get("addBatch", 0) for b in steady)
    share = (
        f"addBatch {add / total:.0%} of the steady batches' time" if total else "no steady batch"
    )
    return (
        f"{share}; {cores()} cores at load average {load[0]:.1f} (start) and "
        f"{load[1]:.1f} (end), this run's own load included"
    )


def report(
    args: argparse.Namespace, session_s: float, measured: dict, load: tuple[float, float]
) -> Bronze:
    ingest: Throughput = measured["ingest"]
    steady = ingest.steady_records_per_s
    return Bronze(
        records=args.records,
        partitions=registry.topic(TOPIC).partitions,
        topic=TOPIC,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        cores=cores(),
        quick=args.quick,
        session_s=round(session_s, 2),
        startup_s=round(session_s + ingest.query_start_s, 2),
        query_start_s=ingest.query_start_s,
        first_batch_s=ingest.first_batch_s,
        tail_batch=ingest.tail_batch,
        steady_records_per_s=steady,
        wall_records_per_s=ingest.wall_records_per_s,
        ingest_wall_s=ingest.wall_s,
        batches=ingest.batches,
        silver=measured["silver"],
        fixed_cost_s=measured["fixed_cost_s"],
        fixed_cost_engine_s=measured["fixed_cost_engine_s"],
        fixed_cost_logs=measured["fixed_cost_logs"],
        goal=StatedGoal(
            goal="bronze steady-state ingest on 2 cores",
            target=f">= {BRONZE_GOAL_RECORDS_PER_S:,} records/s",
            measured=f"{steady:,} records/s" if steady else "no batch after the first",
            met=bool(steady and steady >= BRONZE_GOAL_RECORDS_PER_S),
            bound=args.bound or bound(ingest, load),
        ),
        load_average=load,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake.bronze", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--records",
        "--bronze-records",
        type=int,
        default=None,
        help=f"records produced to {TOPIC} and ingested (unset: 2,000,000; "
        f"--quick: {QUICK_RECORDS:,})",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=None,
        help="records per bronze batch (unset: a quarter of --records; --quick: half)",
    )
    parser.add_argument(
        "--max-files-per-trigger",
        type=int,
        default=None,
        help="bronze files per silver batch (default: all in one)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run of the tool: {QUICK_RECORDS:,} records, no silver, no fixed cost",
    )
    parser.add_argument(
        "--silver",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="measure silver's refine of the ingested records (step 3; unset: yes, except --quick)",
    )
    parser.add_argument(
        "--fixed-costs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="measure each job's fixed cost (step 4; unset: yes, except --quick)",
    )
    parser.add_argument(
        "--gold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with the fixed costs, gold's too",
    )
    parser.add_argument(
        "--out-dir",
        default=None,
        help="write DIR/bronze.json (unset: <reports>/bench-bronze-<time>.json)",
    )
    parser.add_argument(
        "--bound",
        default="",
        help="what bounds the figure, for the report (default: addBatch's share and the load)",
    )
    args = parser.parse_args(argv)
    if args.records is None:
        args.records = QUICK_RECORDS if args.quick else 2_000_000
    if args.fixed_costs is None:
        args.fixed_costs = not args.quick
    if args.silver is None:
        args.silver = not args.quick
    if args.max_offsets_per_trigger is None:
        args.max_offsets_per_trigger = max(args.records // (2 if args.quick else 4), 1)
    return args


@contextmanager
def session_and_broker(base: Settings) -> Iterator[tuple[object, float, Settings]]:
    """The lake's Spark session (on ``base``) and a private broker and runtime
    (:func:`bench.harness.private_broker`), started at the same time: the session, the seconds
    it took to start, and the private settings. The broker stops on exit."""
    from adlake.spark_session import get_session

    with ExitStack() as stack, ThreadPoolExecutor(1) as pool:
        broker = pool.submit(stack.enter_context, harness.private_broker("bronze", base))
        spark, session_s = harness.timed(
            get_session, "lake", "lake-benchmark", base.with_overrides(lake_engine="local")
        )
        settings, _ = broker.result()
        yield spark, session_s, settings


def run(
    spark,
    base: Settings,
    settings: Settings,
    args: argparse.Namespace,
    session_s: float,
    load_start: float,
) -> Path:
    """:func:`bench` on ``spark`` (started in ``session_s``, at load ``load_start``) against the
    private broker of ``settings``, written to ``--out-dir``/bronze.json (unset:
    ``<reports>/bench-bronze-<time>.json`` of ``base``); its path."""
    measured = bench(spark, settings, args, session_s)
    result = asdict(report(args, session_s, measured, (load_start, load_average())))
    out = harness.write_json(
        Path(args.out_dir) / "bronze.json"
        if args.out_dir
        else harness.stamped(base.reports_dir, "bench-bronze"),
        result,
    )
    print(
        json.dumps(
            {k: v for k, v in result.items() if k not in ("batches", "silver", "fixed_cost_logs")},
            indent=2,
        )
    )
    say(f"written to {out}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_settings()
    load_start = load_average()
    with session_and_broker(base) as (spark, session_s, settings):
        say(f"session started in {session_s:.1f} s (load {load_start:.2f})")
        run(spark, base, settings, args, session_s, load_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
