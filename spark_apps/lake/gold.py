"""Gold: business tables rebuilt from silver for a data interval, one slice at a time.

Every table is partitioned by ``event_date`` and has a **grain** (:data:`adlake.catalog.gold.GRAINS`):
an ``hour`` table (a row per minute, window or hour of the day) is rebuilt for the whole hours
an interval covers, a ``day`` table (a row summing a day) for the whole days
(:func:`adlake.catalog.gold.covering`). The slice (:func:`adlake.catalog.gold.slice_condition`) is recomputed
from silver and swapped in with Delta's ``replaceWhere``, in one commit. A rerun, an overlapping
interval or an Airflow backfill therefore gives the same table: no row is appended twice, and a
row outside the slice is never touched. The hourly chain rebuilds the ``hour`` tables' hour, so
its cost is its hour's data, not its day's; the daily run (``lake_daily``) rebuilds every
table's day once the day is final.

**A slice is a function of silver alone**, never of the interval that recomputed it: an hour,
its day and a backfill over a year write the same rows for it. Rows of one slice can depend on
events of another (a click just after midnight on an impression just before it), so each table
reads what its rows need *around* the interval, a margin taken from the attribution contract
(:class:`~spark_apps.common.attribution.contract.AttributionConfig`), and keeps only the slice.

Each table is a module of :mod:`adlake.catalog.gold` (:data:`adlake.catalog.gold.MODELS`): its declaration, its
grain, its business rules and its ``build``, whose docstring says what the partition of date
``D`` is made of. This job gives each build its :class:`SilverInputs` (the interval's silver,
silver around it, the contract's tunables, batch attribution) and writes what it returns.

"Function of silver" means of silver as it is when the slice is rebuilt: an event that reaches
silver later (a late event, or the next day's first minutes that a day's rows read within their
margin) shows once the slice is rebuilt again: by the daily run that finalizes the day, or a
backfill over it.

    .venv/lake/bin/python -m spark_apps.lake.gold --start 2026-11-21 --end 2026-11-22
    .venv/lake/bin/python -m spark_apps.lake.gold --start 2026-11-21T13:00Z \
        --end 2026-11-21T14:00Z --tables campaign_delivery,page_traffic
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

from adlake import registry
from adlake.catalog import gold
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from spark_apps.lake import unchanged
from spark_apps.lake.delta_log import latest_version
from spark_apps.lake.tables import ensure_table, read_table, table_path
from spark_apps.lake.unchanged import Read

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_apps.common.attribution.contract import AttributionConfig


def _default_config() -> AttributionConfig:
    from spark_apps.common.attribution.contract import AttributionConfig

    return AttributionConfig()


@dataclass(frozen=True)
class SilverInputs:
    """What a gold table's build reads (an :class:`adlake.catalog.gold.Inputs`): the silver tables of
    ``settings``, for the days ``[start, end)``, with the attribution contract's tunables."""

    spark: SparkSession
    settings: Settings
    start: datetime
    end: datetime
    config: AttributionConfig = field(default_factory=_default_config)
    # what the build asked for, in the order asked (spark_apps.lake.unchanged's memo)
    reads: list[Read] = field(default_factory=list)

    def _whole(self, topic: str) -> DataFrame:
        # A silver table no run has created yet reads as empty, not as an error.
        ensure_table(self.spark, self.settings, registry.table(f"silver_{topic}"))
        return read_table(self.spark, self.settings, f"silver_{topic}")

    def silver(self, topic: str) -> DataFrame:
        field = registry.silver_time_field(topic)
        self.reads.append(Read(f"silver_{topic}", field, 0, 0))
        return gold.around(self._whole(topic), self.start, self.end, 0, 0, field)

    def silver_around(self, topic: str, before_ms: int, after_ms: int) -> DataFrame:
        self.reads.append(Read(f"silver_{topic}", "event_time", before_ms, after_ms))
        return gold.around(self._whole(topic), self.start, self.end, before_ms, after_ms)

    def silver_from(self, topic: str, before_ms: int) -> DataFrame:
        self.reads.append(Read(f"silver_{topic}", None, before_ms, None))
        return gold.since(self._whole(topic), self.start - timedelta(milliseconds=before_ms))

    def attribute_batch(
        self, requests: DataFrame, impressions: DataFrame, callbacks: DataFrame
    ) -> DataFrame:
        from spark_apps.common.attribution.batch import attribute_batch

        return attribute_batch(requests, impressions, callbacks, self.config)


def rebuild(
    spark: SparkSession,
    settings: Settings,
    name: str,
    start: date | datetime,
    end: date | datetime,
) -> int:
    """Replace gold table ``name``'s slice covering ``[start, end)`` (whole hours or days, by
    its grain; a date is its midnight, UTC); returns the rows written.

    Two writers of one table at once (an hourly run and an overlapping backfill, or a retried
    task beside its first try) are resolved by Delta's optimistic concurrency: the first commit
    wins and the other's is rejected. The loser is retried (bounded, logged): gold is a pure
    function of silver, so the retry recomputes the same dates and replaces them again, and the
    table ends as a serial run leaves it. A damaged Delta log or a full disk fails with the
    typed error of :mod:`spark_apps.lake.errors`.
    """
    from spark_apps.lake.errors import diagnosed, retry_on_conflict
    from spark_apps.lake.freshness import record_quietly

    model = gold.model(name)
    path = table_path(settings, model.TABLE)
    sources = [settings.table_path(t) for t in model.TABLE.sources]
    inputs = SilverInputs(spark, settings, *gold.covering(model.GRAIN, start, end))
    with diagnosed("gold", settings.runtime_dir, tables=[settings.table_path(name), *sources]):
        written = retry_on_conflict(
            f"gold {name}", path, lambda: _replace(spark, settings, model, inputs)
        )
    record_quietly(spark, settings, name)  # its newest data time, for the Data quality page
    return written


def _replace(
    spark: SparkSession, settings: Settings, model: gold.Model, inputs: SilverInputs
) -> int:
    path = ensure_table(spark, settings, model.TABLE)
    where = gold.slice_condition(model, inputs.start, inputs.end)
    inputs.reads.clear()  # a retried attempt builds (and asks) again
    rows = model.build(inputs).where(where).persist()
    # Taken before anything is read: a file that lands later makes the next run compute again.
    seen = unchanged.inputs(settings, inputs.reads, inputs.start, inputs.end)
    before = latest_version(path)
    try:
        rows.write.format("delta").mode("overwrite").option("replaceWhere", where).save(path)
        written = rows.count()
    finally:
        rows.unpersist()
    after = latest_version(path)
    out = unchanged.output(settings, model.TABLE.name, inputs.start, inputs.end)
    # Only when the one commit since is this write's: another writer's in between may have
    # written the slice from other inputs, so the next run computes it again.
    if before is not None and after == before + 1 and latest_version(path) == after:
        unchanged.write_memo(
            settings,
            "gold",
            model.TABLE.name,
            inputs.start,
            inputs.end,
            inputs.reads,
            seen,
            out,
            {},
            rows=written,
        )
    return written


def slices_to_rebuild(
    settings: Settings, names: list[str], start: datetime, end: datetime
) -> list[str]:
    """The tables whose slice covering ``[start, end)`` a rebuild could change (the others are
    reported and left: :mod:`spark_apps.lake.unchanged`); no Spark."""
    todo = []
    for name in names:
        first, after = gold.covering(gold.model(name).GRAIN, start, end)
        memo = unchanged.unchanged(settings, "gold", name, first, after, {})
        if memo is None:
            todo.append(name)
            continue
        print(
            f"[gold] {name} [{first:%Y-%m-%dT%H:%MZ}, {after:%Y-%m-%dT%H:%MZ}): "
            + (
                f"unchanged since its rebuild at {memo['written_at']} ({memo['rows']} rows): "
                "the same silver files, the same code"
                if memo
                else "empty, and no silver file holds a row it would read"
            )
            + "; not rebuilt",
            flush=True,
        )
    return todo


def parse_instant(text: str) -> datetime:
    """A date (its midnight) or an ISO timestamp, in UTC (the session's time zone): the
    ``--start``/``--end`` of an hourly job (this one and the quality gates that follow it).

    >>> parse_instant("2026-11-21")
    datetime.datetime(2026, 11, 21, 0, 0, tzinfo=datetime.timezone.utc)
    >>> parse_instant("2026-11-21T22:00:00-02:00") == parse_instant("2026-11-22T00:00:00Z")
    True
    """
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def days_of(start: datetime, end: datetime) -> tuple[date, date]:
    """The dates ``[first, after)`` an interval ``[start, end)`` touches: a ``day`` table's
    slice of it.

    >>> days_of(datetime(2026, 11, 21, 13), datetime(2026, 11, 21, 14))
    (datetime.date(2026, 11, 21), datetime.date(2026, 11, 22))
    >>> days_of(datetime(2026, 11, 21, 23), datetime(2026, 11, 22))
    (datetime.date(2026, 11, 21), datetime.date(2026, 11, 22))
    """
    midnight = end.time() == datetime.min.time()
    return start.date(), end.date() if midnight else end.date() + timedelta(days=1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Arguments: ``start``/``end`` UTC instants, each table rebuilding the slice of its grain
    that covers them (see :func:`adlake.catalog.gold.covering`)."""
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.gold", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--start",
        required=True,
        type=parse_instant,
        help="interval start (inclusive), a date or ISO timestamp: its hour (an hour "
        "table's) or its day (a day table's) is the first rebuilt",
    )
    parser.add_argument(
        "--end",
        required=True,
        type=parse_instant,
        help="interval end (exclusive), a date or ISO timestamp: its hour or day is the "
        "last rebuilt, unless it starts there",
    )
    parser.add_argument(
        "--tables", default=",".join(gold.NAMES), help="comma-separated gold tables to rebuild"
    )
    args = parser.parse_args(argv)
    if args.end <= args.start:
        parser.error(
            f"--end ({args.end.isoformat()}) must be after --start ({args.start.isoformat()})"
        )
    for name in args.tables.split(","):
        if name not in gold.NAMES:
            parser.error(f"unknown gold table {name!r}; gold tables: {', '.join(gold.NAMES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = load_settings()
    todo = slices_to_rebuild(settings, args.tables.split(","), args.start, args.end)
    if not todo:
        print("[gold] every slice is as its silver makes it: no Spark session", flush=True)
        return 0
    spark = get_session("lake", "gold", settings)
    for name in todo:
        started = time.monotonic()
        rows = rebuild(spark, settings, name, args.start, args.end)
        first, after = gold.covering(gold.model(name).GRAIN, args.start, args.end)
        print(
            f"[gold] {name} [{first:%Y-%m-%dT%H:%MZ}, {after:%Y-%m-%dT%H:%MZ}): {rows} rows -> "
            f"{table_path(settings, name)} in {time.monotonic() - started:.1f}s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
