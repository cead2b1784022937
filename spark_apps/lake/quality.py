"""Quality: validate what a gold job or a view refresh just wrote against its Great Expectations
suite, record the results in ``dq_results`` and Data Docs, and fail if an ``error`` rule failed.

What is validated (the slice):

* a **gold table**, with ``--start/--end`` (the Airflow data interval): the slice the interval
  covers, as gold rebuilds it (:func:`adlake.catalog.gold.slice_condition`: an hour table's hours, a day
  table's days; the hourly run of 13:00-14:00 validates the hour tables' 13:00 hour, which gold
  has just rewritten). Keys must be unique within that slice; its dates and times must lie
  within the days it touches.
* a **view**, without an interval (its quality DAG runs when the view is updated, and an
  asset-triggered run has none): the whole view, as of one Delta snapshot, its visible columns
  (keys and aggregates, not the engine's helpers). Views are small (a row per group), and a
  refresh can touch any group, so the whole view is cheaper than finding the touched groups. Its
  count aggregate's total must equal the source's rows at the source version the view reflects
  (read pinned, so a later source commit does not count).

Several tables, one job (``--tables a,b,c``; ``--table X`` is ``--tables X``): all gold tables
over one interval, or all views. One Spark session and one GX context (:class:`Checkpoints`) for
all, each table validated in turn with a result of its own: a table whose validation raises is
recorded as such (its traceback) and the others are validated all the same.

How: the slice is read from Delta as a DataFrame and cached, the rule's derived columns
(:data:`adlake.quality.rules.DERIVED_COLUMNS`) added, and the table's GX checkpoint run from the
job's working copy of the committed project (``expectations/``), to whose Spark data source each
table adds its dataframe asset; the checkpoint's action updates Data Docs under
``<runtime>/gx/uncommitted/data_docs``.

Results: one ``dq_results`` row per expectation, written with ``replaceWhere`` on
``(table, dag_id, run_id, interval)``: a retried task replaces its rows, never doubles them. Then
the log lists every failed expectation (observed value, a sample of unexpected values and rows);
``warn`` failures pass. With ``--outcome-dir DIR`` each table's outcome is written to
``DIR/<table>.json`` (:mod:`adlake.quality.outcome`, which a cheap task per table reads to pass or
fail that table) and failed ``error`` expectations leave the exit status 0. Without it, a failed
``error`` expectation of any table exits :data:`~adlake.quality.results.EXIT_EXPECTATIONS_FAILED`
(which the DAG does not retry), so nothing downstream runs. A validation that raised exits
:data:`EXIT_VALIDATION_RAISED` (1) either way, after the other tables: a retry may fix it.

    .venv/lake/bin/python -m spark_apps.lake.quality --table page_traffic \\
        --start 2026-11-21T13:00:00+00:00 --end 2026-11-21T14:00:00+00:00
    .venv/lake/bin/python -m spark_apps.lake.quality \\
        --tables campaign_delivery,attribution_funnel,page_traffic --outcome-dir /tmp/dq \\
        --start 2026-11-21T13:00:00+00:00 --end 2026-11-21T14:00:00+00:00
    .venv/lake/bin/python -m spark_apps.lake.quality --table page_clicks_hourly
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time as dtime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.atomic import exclusive
from adlake.catalog import expectations, gold
from adlake.catalog.expectations import ERROR
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.quality import project, rules
from adlake.quality.outcome import clear_outcomes, make_outcome, write_outcome
from adlake.quality.results import (
    EXIT_EXPECTATIONS_FAILED,
    RunContext,
    blocking,
    failure_report,
    result_rows,
)
from spark_apps.lake import unchanged
from spark_apps.lake.gold import days_of, parse_instant
from spark_apps.lake.tables import ensure_table, read_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RESULTS_TABLE = "dq_results"
# The exit status when a table's validation raised (an infrastructure error: a retry may fix it).
EXIT_VALIDATION_RAISED = 1
# When run by hand (no --dag-id/--run-id and no Airflow task around it).
MANUAL = "manual"


@dataclass(frozen=True)
class Outcome:
    """One validation: its ``dq_results`` rows, the suite parameters it ran with, the failure
    report, where Data Docs are."""

    rows: list[dict[str, Any]]
    parameters: dict[str, Any]
    report: str | None
    data_docs: str
    seconds: float

    @property
    def failed_errors(self) -> list[dict[str, Any]]:
        return list(blocking(self.rows))


# -- the slice ---------------------------------------------------------------------------------


def _midnight(day: date) -> datetime:
    return datetime.combine(day, dtime.min, tzinfo=UTC)


def gold_parameters(first: date, after: date, settings: Settings) -> dict[str, Any]:
    """The suite parameters of a gold slice ``[first, after)``.

    >>> s = load_settings({})
    >>> gold_parameters(date(2026, 11, 21), date(2026, 11, 22), s)  # doctest: +NORMALIZE_WHITESPACE
    {'first_day': '2026-11-21', 'last_day': '2026-11-21', 'day_start': '2026-11-21T00:00:00',
     'day_end': '2026-11-22T00:00:00', 'min_match_rate': 0.95}
    """
    # Timestamps as UTC wall-clock text: the lake sessions' time zone is UTC.
    return {
        expectations.FIRST_DAY: first.isoformat(),
        expectations.LAST_DAY: (after - timedelta(days=1)).isoformat(),
        expectations.DAY_START: _midnight(first).replace(tzinfo=None).isoformat(),
        expectations.DAY_END: _midnight(after).replace(tzinfo=None).isoformat(),
        expectations.MIN_MATCH_RATE: settings.dq_min_match_rate,
    }


# What selects a gold table's dates (the partitions of its slice), whatever its grain.
DAYS = SimpleNamespace(GRAIN=gold.DAY, ROW_TIME=None)


def gold_slice(
    spark: SparkSession, settings: Settings, name: str, start: datetime, end: datetime
) -> DataFrame:
    """Gold table ``name``'s slice covering ``[start, end)``: the hours or days (by its grain)
    gold rebuilds for that interval."""
    model = gold.model(name)
    ensure_table(spark, settings, model.TABLE)
    first, after = gold.covering(model.GRAIN, start, end)
    where = gold.slice_condition(model, first, after)
    if model.GRAIN == gold.HOUR:
        # A row whose instant is not on its own date is in no hour's slice, so no rebuild ever
        # replaces it: every gate over its date shows it (its dates-and-times rule fails).
        where = (
            f"({where}) OR ({gold.slice_condition(DAYS, first, after)} "
            f"AND to_date({model.ROW_TIME}) <> event_date)"
        )
    return read_table(spark, settings, name).where(where)


def view_slice(
    spark: SparkSession, settings: Settings, name: str
) -> tuple[DataFrame, dict[str, Any]]:
    """View ``name`` as of its latest snapshot (visible columns), and its suite parameters: the
    rows of its source at the version that snapshot reflects."""
    from spark_apps.lake.views.bookkeeping import read_version, view_state
    from spark_apps.lake.views.results import ViewNotMaterialized

    view = registry.view(name)
    source_version, view_version = view_state(spark, settings, view)
    if source_version is None:
        raise ViewNotMaterialized(
            f"view {name!r} has never been refreshed, so there is nothing "
            f"to validate: run spark_apps.lake.views --view {name}"
        )
    source_rows = read_version(spark, table_path(settings, view.source), source_version).count()
    columns = [*view.keys, *(a.name for a in view.aggregates)]
    df = read_version(spark, table_path(settings, name), view_version).select(*columns)
    return df, {expectations.SOURCE_ROWS: source_rows}


def transform_derived(df: DataFrame, name: str) -> DataFrame:
    """``df`` with suite ``name``'s derived columns (``dq_*``) added."""
    from pyspark.sql import functions as F

    for column, expression in rules.DERIVED_COLUMNS.get(name, ()):
        df = df.withColumn(column, F.expr(expression))
    return df


# -- GX ----------------------------------------------------------------------------------------

# GX asks Spark about four questions per expectation (the unexpected count, values, rows, index
# list), a hundred or more per table, each a query of its own over the small cached slice: their
# fixed cost, not the data, is the gate's time. Over a slice this small neither a task per
# partition nor compiling each plan to Java (whole-stage code generation) pays: the slice is one
# partition and the validation runs interpreted, with the same results. Together they cut a warm
# engine's gate of three gold tables of a 1M-row day from 31-38 s to 24-25 s.
_WHOLE_STAGE = "spark.sql.codegen.wholeStage"


@contextmanager
def _interpreted(spark: SparkSession) -> Iterator[None]:
    """Whole-stage code generation off in ``spark`` for the block, then as it was (a test's or
    a notebook's session is shared)."""
    before = spark.conf.get(_WHOLE_STAGE)
    spark.conf.set(_WHOLE_STAGE, "false")
    try:
        yield
    finally:
        spark.conf.set(_WHOLE_STAGE, before)


@contextmanager
def _data_docs_lock(settings: Settings) -> Iterator[None]:
    """Quality tasks of several tables run at once and share one Data Docs site: one checkpoint
    run (validation, then the site's rebuild) at a time, so no run overwrites another's index."""
    with exclusive(settings.gx_dir / "data_docs.lock"):
        yield


class Checkpoints:
    """The job's one GX context: a working copy of the committed project, the context on it and
    its Spark data source, made at the first :meth:`run` (a job that validates nothing, an
    empty view, pays nothing) and reused for every table; :meth:`close` removes the copy. Each
    table adds its own dataframe asset to the one data source."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.setup_seconds = 0.0  # making the context (the first run's share)
        self._copy: Path | None = None
        self._context: Any = None
        self._source: Any = None
        self._assets: set[str] = set()

    def _gx(self) -> Any:
        if self._context is None:
            started = time.monotonic()
            os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
            import great_expectations as gx

            self._copy = project.working_copy(self.settings)
            self._context = gx.get_context(
                mode="file",
                context_root_dir=self._copy,
                runtime_environment=project.runtime_environment(self.settings),
            )
            self._source = self._context.data_sources.add_or_update_spark(name=project.DATASOURCE)
            self.setup_seconds = time.monotonic() - started
        return self._context

    def run(
        self, name: str, df: DataFrame, parameters: dict[str, Any], context: RunContext
    ) -> dict[str, Any]:
        """Run suite ``name``'s checkpoint over ``df``; returns the validation result as a
        dict."""
        gx_context = self._gx()  # first: its time includes importing GX
        from great_expectations.core.run_identifier import RunIdentifier

        if name not in self._assets:
            self._source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe(
                project.BATCH_DEFINITION
            )
            self._assets.add(name)
        checkpoint = gx_context.checkpoints.get(name)
        # The run's name is what Data Docs lists; a path segment, so no slash in it.
        run_name = f"{context.dag_id}__{context.run_id}".replace("/", "_")
        with _data_docs_lock(self.settings):
            result = checkpoint.run(
                batch_parameters={"dataframe": df},
                expectation_parameters=parameters,
                run_id=RunIdentifier(run_name=run_name, run_time=context.run_time),
            )
        [validation] = result.run_results.values()
        return validation.to_json_dict()

    def close(self) -> None:
        if self._copy is not None:
            shutil.rmtree(self._copy, ignore_errors=True)
        self._copy = self._context = self._source = None
        self._assets.clear()


@contextmanager
def checkpoints(settings: Settings) -> Iterator[Checkpoints]:
    """One :class:`Checkpoints` for a job, closed at the end."""
    runner = Checkpoints(settings)
    try:
        yield runner
    finally:
        runner.close()


def run_checkpoint(
    settings: Settings,
    name: str,
    df: DataFrame,
    parameters: dict[str, Any],
    context: RunContext,
    runner: Checkpoints | None = None,
) -> dict[str, Any]:
    """Run suite ``name``'s checkpoint over ``df`` with ``runner`` (a job's), else with a GX
    context of its own; returns the validation result as a dict."""
    if runner is not None:
        return runner.run(name, df, parameters, context)
    with checkpoints(settings) as own:
        return own.run(name, df, parameters, context)


# -- dq_results --------------------------------------------------------------------------------


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _micros(value: datetime) -> int:
    """An instant as epoch microseconds, by integer arithmetic (no local zone involved); a naive
    datetime is taken as UTC, as :func:`~spark_apps.lake.gold.parse_instant` takes it.

    >>> _micros(datetime(2026, 10, 25, 1, 30, tzinfo=UTC)), _micros(datetime(2026, 10, 25, 1, 30))
    (1792891800000000, 1792891800000000)
    """
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _sql_instant(column: str, value: datetime | None) -> str:
    if value is None:
        return f"{column} IS NULL"
    return f"{column} = timestamp_micros({_micros(value)})"


def results_predicate(context: RunContext) -> str:
    """The rows of one validation run in ``dq_results``, what its write replaces.

    >>> print(results_predicate(RunContext("lake_hourly", "manual", "page_traffic",
    ...     datetime(2026, 11, 21, 13, tzinfo=UTC), None, datetime.now(UTC))))
    `table` = 'page_traffic' AND dag_id = 'lake_hourly' AND run_id = 'manual' AND \
interval_start = timestamp_micros(1795266000000000) AND interval_end IS NULL
    """
    return " AND ".join(
        [
            f"`table` = {_sql_string(context.table)}",
            f"dag_id = {_sql_string(context.dag_id)}",
            f"run_id = {_sql_string(context.run_id)}",
            _sql_instant("interval_start", context.interval_start),
            _sql_instant("interval_end", context.interval_end),
        ]
    )


def write_results(
    spark: SparkSession, settings: Settings, rows: list[dict[str, Any]], context: RunContext
) -> None:
    """Replace this run's rows of ``dq_results`` by ``rows`` (one commit; partition ``table``,
    so runs of different tables never conflict)."""
    from pyspark.sql import functions as F, types as T

    table = registry.table(RESULTS_TABLE)
    path = ensure_table(spark, settings, table)
    schema = table.schema.spark()
    # The interval and the run time go to Spark as epoch microseconds and become timestamps
    # there: PySpark converts a naive datetime through the driver's local zone (TZ), which need
    # not be UTC and, the night it repeats an hour, cannot tell the two apart.
    instants = {f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)}
    micros = T.StructType(
        [
            T.StructField(f.name, T.LongType(), f.nullable) if f.name in instants else f
            for f in schema
        ]
    )

    def value(row: dict[str, Any], name: str) -> Any:
        v = row[name]
        return _micros(v) if name in instants and v is not None else v

    columns = [
        (F.timestamp_micros(F.col(f"`{c}`")) if c in instants else F.col(f"`{c}`")).alias(c)
        for c in schema.names
    ]
    frame = spark.createDataFrame(
        [tuple(value(r, c) for c in schema.names) for r in rows], micros
    ).select(*columns)
    (
        frame.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", results_predicate(context))
        .save(path)
    )


# -- the job -----------------------------------------------------------------------------------


def validate(
    spark: SparkSession,
    settings: Settings,
    name: str,
    context: RunContext,
    runner: Checkpoints | None = None,
) -> Outcome:
    """Validate ``name`` (a gold table over ``context``'s interval, or a view), write its
    ``dq_results`` rows and Data Docs; raises nothing for failed expectations (see
    :func:`main`). ``runner``: the job's GX context (else one of its own)."""
    started = time.monotonic()
    if name in registry.VIEWS:
        df, parameters = view_slice(spark, settings, name)
    else:
        first, after = days_of(context.interval_start, context.interval_end)
        df = gold_slice(spark, settings, name, context.interval_start, context.interval_end)
        parameters = gold_parameters(first, after, settings)
    # One partition: a gold day's or a view's slice is small (thousands to about 100,000 rows).
    df = transform_derived(df, name).coalesce(1).persist()
    try:
        if parameters.get(expectations.SOURCE_ROWS) == 0 and df.isEmpty():
            # An empty view of an empty source (silver updated without rows of this topic) is
            # consistent, but GX's sum of no rows is null and fails the count rule: nothing to
            # validate, and no rows for this run (a rerun's earlier ones removed too).
            print(f"[quality] {name}: empty, as its source is: nothing to validate", flush=True)
            write_results(spark, settings, [], context)
            return Outcome(
                [],
                parameters,
                None,
                str(project.data_docs_index(settings)),
                time.monotonic() - started,
            )
        with _interpreted(spark):
            validation = run_checkpoint(settings, name, df, parameters, context, runner)
    finally:
        df.unpersist()
    rows = result_rows(validation, context)
    write_results(spark, settings, rows, context)
    failed = any(not r["success"] for r in rows)
    return Outcome(
        rows,
        parameters,
        failure_report(validation, context) if failed else None,
        str(project.data_docs_index(settings)),
        time.monotonic() - started,
    )


def table_list(text: str) -> list[str]:
    """``--tables``: comma-separated suite names, each once, in the order given.

    >>> table_list("page_traffic, surge_history,page_traffic")
    ['page_traffic', 'surge_history']
    """
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise argparse.ArgumentTypeError("no table named")
    unknown = [n for n in names if n not in rules.SUITES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"no suite for {', '.join(unknown)} (choose from {', '.join(rules.SUITES)})"
        )
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Arguments; ``tables`` the list to validate, whichever of ``--tables``/``--table``."""
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.quality", description=__doc__, formatter_class=HelpFormatter
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--tables",
        type=table_list,
        metavar="A,B,...",
        help="the gold tables (all with --start/--end) or the views to validate, "
        "comma-separated: one Spark session and GX context for all, a result for each",
    )
    which.add_argument(
        "--table", choices=rules.SUITES, help="one gold table or view to validate (--tables X)"
    )
    parser.add_argument(
        "--start",
        type=parse_instant,
        help="a gold table's interval start (a date or ISO timestamp); not for a view",
    )
    parser.add_argument("--end", type=parse_instant, help="a gold table's interval end (exclusive)")
    parser.add_argument(
        "--dag-id",
        default=os.environ.get("AIRFLOW_CTX_DAG_ID", MANUAL),
        help="the Airflow DAG recorded in dq_results (default: the task's, else 'manual')",
    )
    parser.add_argument(
        "--run-id",
        default=os.environ.get("AIRFLOW_CTX_DAG_RUN_ID", MANUAL),
        help="the Airflow run recorded in dq_results; a rerun with the same "
        "one replaces its rows (default: the task's, else 'manual')",
    )
    parser.add_argument(
        "--outcome-dir",
        type=Path,
        metavar="DIR",
        help="write each table's outcome to DIR/<table>.json (adlake.quality.outcome) and exit 0 "
        "when error expectations fail (a task per table checks its outcome); unset: exit "
        f"{EXIT_EXPECTATIONS_FAILED} when any table's error expectation fails",
    )
    parser.add_argument(
        "--reuse-verdicts",
        action="store_true",
        help="a gold table whose slice and suite are as an earlier run validated them gets "
        "that run's verdict, without Spark (spark_apps.lake.unchanged; the chains' gates do); "
        "unset: every table is validated",
    )
    args = parser.parse_args(argv)
    args.tables = args.tables or [args.table]
    views = [t for t in args.tables if t in registry.VIEWS]
    gold = [t for t in args.tables if t not in registry.VIEWS]
    if views and gold:
        parser.error(
            f"{', '.join(views)}: view(s), validated whole without an interval, and "
            f"{', '.join(gold)}: gold table(s), over one: validate them in separate jobs"
        )
    if views:
        if args.start or args.end:
            parser.error(f"{', '.join(views)}: a view is validated whole, without --start/--end")
    elif not (args.start and args.end):
        parser.error(f"{', '.join(gold)}: a gold table needs --start and --end")
    elif args.end <= args.start:
        parser.error(
            f"--end ({args.end.isoformat()}) must be after --start ({args.start.isoformat()})"
        )
    return args


def _print_outcome(name: str, outcome: Outcome, settings: Settings) -> None:
    failed = [r for r in outcome.rows if not r["success"]]
    print(
        f"[quality] {name}: {len(outcome.rows)} expectations, {len(failed)} failed "
        f"({len(outcome.failed_errors)} error) in {outcome.seconds:.1f}s; dq_results: "
        f"{table_path(settings, RESULTS_TABLE)}; Data Docs: {outcome.data_docs}",
        flush=True,
    )
    if outcome.report:
        print(outcome.report, flush=True)
        print(
            "  with parameters: " + ", ".join(f"${k}={v}" for k, v in outcome.parameters.items()),
            flush=True,
        )


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """Validate every table; returns the exit status: 0, :data:`EXIT_VALIDATION_RAISED` if a
    table's validation raised (the others are validated all the same), else
    :data:`~adlake.quality.results.EXIT_EXPECTATIONS_FAILED` if a table's ``error``
    expectation failed and there is no ``--outcome-dir`` (with one, each table's outcome says
    so and the job passes)."""
    started = time.monotonic()
    args = parse_args(argv)
    settings = settings or load_settings()
    if args.outcome_dir:
        # An earlier attempt's outcomes must not outlive this one if it dies before writing.
        clear_outcomes(args.outcome_dir, args.tables)
    from adlake.spark_session import get_session

    blocked: dict[str, list[dict[str, Any]]] = {}  # table → its failed error expectations
    raised: dict[str, str] = {}  # table → its exception
    stands = (
        unchanged.verdicts_that_stand(
            settings,
            args.tables,
            args.start,
            args.end,
            gold_parameters(*days_of(args.start, args.end), settings),
            args.dag_id,
            args.run_id,
        )
        if args.start and args.reuse_verdicts
        else {}  # views are always validated
    )
    for name, record in stands.items():
        if args.outcome_dir:
            write_outcome(args.outcome_dir, record)
        if record["error_failed"]:
            blocked[name] = [f for f in record["failed"] if f["severity"] == ERROR]
    todo = [name for name in args.tables if name not in stands]
    spark = get_session("lake", "quality-" + ",".join(todo), settings) if todo else None
    session_seconds = time.monotonic() - started
    with checkpoints(settings) as runner:
        for name in todo:
            context = RunContext(
                args.dag_id, args.run_id, name, args.start, args.end, datetime.now(UTC)
            )
            table_started = time.monotonic()
            gated_slice = args.start is not None  # a gold table's: what its memo records
            seen = (
                unchanged.inputs(settings, [unchanged.gate_read(name)], args.start, args.end)
                if gated_slice
                else None
            )
            try:
                outcome = validate(spark, settings, name, context, runner)
            except Exception:  # noqa: BLE001 - recorded as this table's; the job exits 1
                seconds = time.monotonic() - table_started
                raised[name] = traceback.format_exc()
                print(
                    f"[quality] {name}: validation raised after {seconds:.1f}s (the other "
                    f"tables are validated all the same):\n{raised[name]}",
                    file=sys.stderr,
                    flush=True,
                )
                record = make_outcome(
                    context,
                    [],
                    None,
                    str(project.data_docs_index(settings)),
                    seconds,
                    error=raised[name],
                )
            else:
                _print_outcome(name, outcome, settings)
                if outcome.failed_errors:
                    blocked[name] = outcome.failed_errors
                record = make_outcome(
                    context, outcome.rows, outcome.report, outcome.data_docs, outcome.seconds
                )
                if gated_slice:
                    parameters = gold_parameters(*days_of(args.start, args.end), settings)
                    unchanged.remember_verdict(
                        settings, args.start, args.end, seen, parameters, record
                    )
            if args.outcome_dir:
                write_outcome(args.outcome_dir, record)
        gx_seconds = runner.setup_seconds
    total = time.monotonic() - started
    passed = len(args.tables) - len(blocked) - len(raised)
    print(
        f"[quality] {len(args.tables)} table(s) in {total:.1f}s ({len(stands)} verdict(s) "
        f"standing): {passed} passed, "
        f"{len(blocked)} failed, {len(raised)} raised (Spark session {session_seconds:.1f}s, "
        f"then the tables {total - session_seconds:.1f}s, GX set-up {gx_seconds:.1f}s of it)"
        + (f"; outcomes in {args.outcome_dir}" if args.outcome_dir else ""),
        flush=True,
    )
    if raised:
        print(
            f"[quality] FAILED: validating {', '.join(raised)} raised (see above); rerun the job",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_VALIDATION_RAISED
    if blocked and not args.outcome_dir:
        message = " ".join(
            f"{name}: {len(rows)} error expectation(s) failed: "
            + "; ".join(r["expectation"] for r in rows)
            + "."
            for name, rows in blocked.items()
        )
        print(
            f"[quality] FAILED: {message} Fix the data or the rule, then clear this task to "
            "rerun it.",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_EXPECTATIONS_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
