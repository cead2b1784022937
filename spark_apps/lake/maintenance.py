"""Table maintenance (``lake_maintenance``): compact small files, remove what the retention lets
go, and record both.

For every Delta table chosen (default: all of the lake's, views and their bookkeeping included):

1. **The guard** (:mod:`adlake.maintenance`), before anything is touched: each reader's need
   (the silver checkpoints over bronze, the views' change feed over their sources, the time
   travel the configuration promises, Delta's own minimum) against the retention. One unmet
   need refuses the whole run, naming the reader, and nothing is removed anywhere.
2. ``OPTIMIZE`` of a table with a partition (or, unpartitioned, the table) of more than one
   file: Delta bin-packs each such partition's small files into few. Its commit changes no
   data (``dataChange=false``): the silver queries' Delta source and the views' change feed
   skip it. A concurrent writer that wins the commit (an hourly gold run replacing the same
   partition) makes it retry on the new state (:func:`spark_apps.lake.errors.retry_on_conflict`).
3. ``VACUUM … RETAIN <retention> HOURS``: deletes the data and change files the table removed
   longer ago than the retention. Files are deleted only once no version of the retention
   window references them, so a ``kill -9`` mid-way leaves the table as readable as before.
4. One row per table in ``maintenance_history``: live files and bytes (the latest version's),
   files and bytes on disk (every data file under the table's directory, removed ones too),
   before and after, what was compacted and removed, and the seconds it took; a run's rows
   replace that run's earlier rows (a retried task does not double them).

Then the quality results (GX's stored validations and their Data Docs pages) run before their
retention (``gx_results_retention_hours``, the lake's unless set) are deleted, each table's latest
kept (:func:`adlake.quality.history.prune`).

``--dry-run`` does 1, then lists for each table what 2 and 3 would do (the partitions that
would be compacted; the files and bytes ``VACUUM … DRY RUN`` would delete) and changes nothing
(its history rows say ``dry_run``).

    python -m spark_apps.lake.maintenance --dry-run
    python -m spark_apps.lake.maintenance --tables campaign_delivery,page_traffic --retention-hours 336
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from adlake import maintenance, registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.quality import history
from spark_apps.lake.delta_log import log_state
from spark_apps.lake.tables import ensure_table, table_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HISTORY = "maintenance_history"
# VACUUM lists a table's directories in a Spark job of this many tasks; Spark's default, 10,000,
# made a VACUUM of a three-file table take 16 to 45 s on 2 cores, 8 tasks 1.5 s.
LISTING_PARALLELISM = "8"


def say(message: str) -> None:
    print(f"[maintenance] {message}", flush=True)


def all_tables() -> list[str]:
    """Every Delta table of the lake: the registry's, the views and their progress table."""
    from spark_apps.lake.views.bookkeeping import PROGRESS_TABLE

    return [*registry.TABLES, *registry.VIEWS, PROGRESS_TABLE]


# -- what is on disk -------------------------------------------------------------------------


def data_files(path: Path) -> dict[str, int]:
    """Data and change files under a table's directory (its log left out), by relative path,
    with their bytes: what VACUUM can reclaim, and what stays."""
    found = {}
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        for name in names:
            if name.endswith(".parquet"):
                full = os.path.join(root, name)
                found[os.path.relpath(full, path)] = os.path.getsize(full)
    return found


def disk_usage(path: Path) -> tuple[int, int]:
    """:func:`data_files`' count and bytes."""
    files = data_files(path)
    return len(files), sum(files.values())


def live(spark: SparkSession, path: str) -> tuple[int, int]:
    """The latest version's files and bytes (from the log: no Spark job)."""
    state = log_state(path)
    return state.num_files, state.size_bytes


def crowded_partitions(spark: SparkSession, path: str) -> dict[str, int]:
    """The table's partitions (their values as JSON; ``{}`` unpartitioned) holding more than
    one file in the latest version, and how many: what OPTIMIZE would compact."""
    counts = Counter(
        json.dumps(f["partitionValues"], separators=(",", ":"))
        for f in log_state(path, with_files=True).files or []
    )
    return {partition: count for partition, count in counts.items() if count > 1}


# -- the readers' needs ----------------------------------------------------------------------


def first_data_change(path: str, version: int, latest: int) -> tuple[int, datetime | None] | None:
    """The first version from ``version`` to ``latest`` of the Delta table at ``path`` that
    changes data, and its commit time (None when the log no longer holds it): what a reader
    that has processed everything before ``version`` will read first. Commits that change no
    data (``OPTIMIZE``, table properties) are skipped, as the silver queries' Delta source and
    the views' change feed skip them. None when no version changes data."""
    for v in range(version, latest + 1):
        log = Path(path, "_delta_log", f"{v:020d}.json")
        try:
            actions = [json.loads(line) for line in log.read_text().splitlines() if line]
        except OSError:
            return v, None
        changes = any(
            "cdc" in a or any(a.get(kind, {}).get("dataChange") for kind in ("add", "remove"))
            for a in actions
        )
        if changes:
            info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            stamp = info.get("timestamp")
            return v, None if stamp is None else datetime.fromtimestamp(stamp / 1000, UTC)
    return None


def checkpoint_version(checkpoint: Path) -> int | None:
    """The first Delta version the streaming query at ``checkpoint`` has not fully processed:
    the start offset of its next batch, from its newest committed batch's offsets. None for a
    checkpoint without a committed batch (a new query reads the latest snapshot, no removed
    file)."""
    from spark_apps.lake.errors import numbered_files

    offsets = numbered_files(checkpoint / "offsets")
    committed = set(numbered_files(checkpoint / "commits")) & set(offsets)
    if not committed:
        return None
    try:
        # offsets/N: a version line, the batch's metadata, then the offset of its one source.
        offset = json.loads(offsets[max(committed)].read_text().splitlines()[2])
        return int(offset["reservoirVersion"])
    except (OSError, ValueError, IndexError, KeyError, TypeError):
        return None


def reader_needs(
    spark: SparkSession, settings: Settings, tables: list[str], now: datetime
) -> list[maintenance.Need]:
    """What the lake's readers need of ``tables``' removed files (see :mod:`adlake.maintenance`)."""
    from spark_apps.lake.views.bookkeeping import committed_version, table_version

    readers: list[tuple[str, str, int]] = []  # (table, reader, first version it needs)
    for topic in registry.SILVER_TOPICS:
        query = f"silver_{topic}"
        version = checkpoint_version(settings.checkpoint_path(query))
        if version is not None:
            readers.append((f"bronze_{topic}", f"the silver checkpoint {query}", version))
    for view in registry.VIEWS.values():
        reflected = committed_version(spark, settings, view)
        if reflected is not None:
            readers.append((view.source, f"the view {view.name}", reflected + 1))
    needs = []
    for table, reader, version in readers:
        if table not in tables:
            continue
        path = table_path(settings, table)
        latest = table_version(spark, path)
        if latest is None or version > latest:
            continue  # caught up: what it reads next is not written yet
        first = first_data_change(path, version, latest)
        if first is not None:  # else nothing it will read has changed data yet
            needs.append(maintenance.version_need(table, reader, *first, now))
    return needs


def delta_needs(spark: SparkSession, settings: Settings, tables: list[str]) -> list:
    """Delta's own minimum on each table: its ``delta.deletedFileRetentionDuration``."""
    needs = []
    for table in tables:
        conf = log_state(table_path(settings, table)).configuration
        value = conf.get("delta.deletedFileRetentionDuration")
        needs.append(
            maintenance.Need(
                table,
                "Delta's own safety check",
                maintenance.delta_interval_hours(value),
                f"keeps removed files for delta.deletedFileRetentionDuration "
                f"({value or 'unset: 7 days'})",
            )
        )
    return needs


def promised_need(settings: Settings) -> maintenance.Need:
    return maintenance.Need(
        "every table",
        "time travel",
        settings.lake_retention_hours,
        "is promised over the configured retention (ADLAKE_LAKE_RETENTION_HOURS)",
    )


# -- the run ---------------------------------------------------------------------------------


def maintain(
    spark: SparkSession, settings: Settings, table: str, retention_hours: int, dry_run: bool
) -> dict:
    """OPTIMIZE (where a partition holds more than one file) and VACUUM one table; its
    history row's figures."""
    from spark_apps.lake.errors import retry_on_conflict

    path = table_path(settings, table)
    started = time.monotonic()
    row: dict = {"table": table, "dry_run": dry_run, "retention_hours": retention_hours}
    row["live_files_before"], row["live_bytes_before"] = live(spark, path)
    before = data_files(Path(path))
    row["disk_files_before"], row["disk_bytes_before"] = len(before), sum(before.values())
    crowded = crowded_partitions(spark, path)
    row["partitions_compacted"] = len(crowded)
    row["files_compacted"] = sum(crowded.values())
    if dry_run:
        doomed = [r["path"] for r in spark.sql(_vacuum_sql(path, retention_hours, True)).collect()]
        row["files_removed"] = len(doomed)
        row["bytes_removed"] = sum(_size(p) for p in doomed)
        row["detail"] = (
            f"would compact {row['files_compacted']} files in {len(crowded)} partition(s); "
            f"would remove {len(doomed)} files ({row['bytes_removed']:,} bytes)"
        )
    else:
        if crowded:
            retry_on_conflict(
                "maintenance", path, lambda: spark.sql(f"OPTIMIZE delta.`{path}`").collect()
            )
        spark.sql(_vacuum_sql(path, retention_hours, False)).collect()
        row["live_files_after"], row["live_bytes_after"] = live(spark, path)
        after = data_files(Path(path))
        row["disk_files_after"], row["disk_bytes_after"] = len(after), sum(after.values())
        deleted = before.keys() - after.keys()  # OPTIMIZE's new files are all still there
        row["files_removed"] = len(deleted)
        row["bytes_removed"] = sum(before[name] for name in deleted)
        row["detail"] = (
            f"compacted {row['files_compacted']} files in {len(crowded)} partition(s); removed "
            f"{row['files_removed']} files ({row['bytes_removed']:,} bytes)"
        )
    row["seconds"] = round(time.monotonic() - started, 2)
    return row


def _vacuum_sql(path: str, retention_hours: int, dry_run: bool) -> str:
    return f"VACUUM delta.`{path}` RETAIN {retention_hours} HOURS" + (" DRY RUN" if dry_run else "")


def _size(uri: str) -> int:
    local = uri.removeprefix("file:")
    try:
        return os.path.getsize(local)
    except OSError:
        return 0


def record(spark: SparkSession, settings: Settings, rows: list[dict], dag_id: str, run_id: str):
    """The run's rows into ``maintenance_history``, replacing that run's earlier rows; the
    time is the JVM's (``current_timestamp``), never a Python datetime."""
    from pyspark.sql import functions as F

    table = registry.table(HISTORY)
    path = ensure_table(spark, settings, table)
    ids = {"dag_id": dag_id, "run_id": run_id}
    frame = spark.createDataFrame(
        [tuple(ids.get(n, r.get(n)) for n in table.schema.names) for r in rows],
        table.schema.spark(),
    ).withColumn("run_time", F.current_timestamp())
    condition = f"dag_id = '{_quote(dag_id)}' AND run_id = '{_quote(run_id)}'"
    frame.write.format("delta").mode("overwrite").option("replaceWhere", condition).save(path)


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def run(
    spark: SparkSession,
    settings: Settings,
    tables: list[str],
    retention_hours: int,
    dry_run: bool,
    dag_id: str = "manual",
    run_id: str | None = None,
) -> list[dict]:
    """The guard, then each table's maintenance, then the history; the history rows."""
    spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.parallelism", LISTING_PARALLELISM)
    present = [t for t in tables if (Path(table_path(settings, t)) / "_delta_log").is_dir()]
    for missing in sorted(set(tables) - set(present)):
        say(f"{missing}: no table yet, nothing to do")
    now = datetime.now(UTC)
    needs = [
        promised_need(settings),
        *delta_needs(spark, settings, present),
        *reader_needs(spark, settings, present, now),
    ]
    maintenance.check(retention_hours, needs)
    say(
        f"retention {retention_hours} h covers every reader ({len(needs)} needs checked); "
        f"{'dry run: nothing changes' if dry_run else 'maintaining'} {len(present)} tables"
    )
    rows = []
    for table in present:
        row = maintain(spark, settings, table, retention_hours, dry_run)
        say(f"{table}: {row['detail']} in {row['seconds']:.1f}s")
        rows.append(row)
    run_id = run_id or f"manual__{now.isoformat()}"
    record(spark, settings, rows, dag_id, run_id)
    if not dry_run:
        finished = datetime.now(UTC).isoformat(timespec="seconds")
        run = {"dag_id": dag_id, "run_id": run_id, "finished_at": finished}
        maintenance.write_latest(settings, {**run, "retention_hours": retention_hours}, rows)
    # The quality results keep their own retention (the lake's unless set), whatever this run's
    # VACUUM retains.
    kept = settings.gx_results_retention_hours
    pruned = history.prune(settings, now - timedelta(hours=kept), dry_run=dry_run)
    say(
        f"quality results run more than {kept} h ago: "
        f"{'would delete' if dry_run else 'deleted'} {pruned['validations']} validations and "
        f"{pruned['pages']} Data Docs pages (each table's latest kept)"
    )
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    settings = load_settings()
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.maintenance", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--tables",
        default="all",
        help="comma-separated tables to maintain, or `all` (the registry's, the views and "
        "their progress table)",
    )
    parser.add_argument(
        "--retention-hours",
        type=_hours,
        default=None,
        help="VACUUM keeps files removed within this many hours (unset, empty or None: the "
        f"configuration's ADLAKE_LAKE_RETENTION_HOURS, now {settings.lake_retention_hours}; "
        "less than that or than a reader needs is refused)",
    )
    parser.add_argument(
        "--dry-run",
        default="false",
        choices=("true", "false", "True", "False"),
        help="list what would be done, change nothing (a DAG form's boolean)",
    )
    parser.add_argument("--dag-id", default="manual", help="the Airflow run it records under")
    parser.add_argument("--run-id", default=None, help="the Airflow run it records under")
    args = parser.parse_args(argv)
    known = all_tables()
    args.tables = known if args.tables == "all" else args.tables.split(",")
    for name in args.tables:
        if name not in known:
            parser.error(f"unknown table {name!r}; tables: {', '.join(known)}")
    args.dry_run = args.dry_run.lower() == "true"
    if args.retention_hours is None:
        args.retention_hours = settings.lake_retention_hours
    return args


_RETENTION = next(k for k in registry.MAINTENANCE_PARAMS if k.name == "retention_hours")


def _hours(text: str) -> int | None:
    """``--retention-hours``: whole hours within the form field's range (the registry's knob);
    empty or ``None`` (an empty form field) for the configuration's.

    >>> _hours("336"), _hours("None"), _hours("")
    (336, None, None)
    >>> _hours("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '-1' is out of range: allowed integers from 0 to 87600
    """
    if text.strip() in ("", "None"):
        return None
    try:
        return _RETENTION.parse(text)  # type: ignore[return-value]
    except ValueError as refused:
        raise argparse.ArgumentTypeError(str(refused)) from None


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    spark = get_session("lake", "maintenance", settings)
    try:
        run(
            spark,
            settings,
            args.tables,
            args.retention_hours,
            args.dry_run,
            args.dag_id,
            args.run_id,
        )
    except maintenance.RetentionRefused as refused:
        print(refused, file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
