"""Refresh, full-refresh or verify registered views (incremental materialized views: group-by
aggregates over a Delta source, kept up to date from its Change Data Feed and a MERGE), one
line per view.

.venv/lake/bin/python -m spark_apps.lake.views --all
.venv/lake/bin/python -m spark_apps.lake.views --view campaign_daily_totals --full-refresh
.venv/lake/bin/python -m spark_apps.lake.views --all --verify

How a refresh works: :mod:`spark_apps.lake.views`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from spark_apps.lake.views.engine import refresh
from spark_apps.lake.views.recompute import full_refresh, verify
from spark_apps.lake.views.results import RefreshReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


MODES = registry.VIEW_MODE.choices


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="spark_apps.lake.views",
        description=__doc__.split("\n\n")[0],
        formatter_class=HelpFormatter,
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--view",
        action="append",
        choices=sorted(registry.VIEWS),
        help="a registered view (repeatable)",
    )
    which.add_argument("--all", action="store_true", help="every registered view")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--full-refresh",
        action="store_true",
        help="recompute from the source instead of applying the change feed",
    )
    mode.add_argument(
        "--verify",
        action="store_true",
        help="recompute in memory and report groups where the view differs (exit status 1 if any)",
    )
    mode.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="the same as a flag: incremental (the default), full-refresh or "
        "verify (the view DAGs' trigger form passes it)",
    )
    args = parser.parse_args(argv)
    args.full_refresh = args.full_refresh or args.mode == "full-refresh"
    args.verify = args.verify or args.mode == "verify"
    return args


def main(argv: Sequence[str] | None = None, settings: Settings | None = None) -> int:
    from adlake.spark_session import get_session

    args = parse_args(argv)
    settings = settings or load_settings()
    names = sorted(registry.VIEWS) if args.all else args.view
    spark = get_session("lake", "views", settings)
    status = 0
    for name in names:
        view = registry.view(name)
        if args.verify:
            differences = verify(spark, settings, view)
            if differences:
                status = 1
                print(
                    f"{name}: {len(differences)} group(s) differ from a recomputation "
                    f"(first {min(len(differences), 20)}):"
                )
                for diff in differences[:20]:
                    print(f"  {diff}")
            else:
                print(f"{name}: consistent with its source")
        else:
            print(refresh_view(spark, settings, view, args.full_refresh).line(), flush=True)
    return status


def refresh_view(
    spark: SparkSession, settings: Settings, view: registry.View, full: bool = False
) -> RefreshReport:
    """One refresh (``full``: a full refresh) of ``view`` as the command runs it.

    Two refreshes of one view at once (a manual run beside the DAG's, or a retried task beside
    its first try) both compute the same change; Delta lets one commit win and rejects the
    other's MERGE. The loser is retried (bounded, logged): it finds the winner's ``txnVersion``
    in the view's log and has nothing left to do, so no change is counted twice. A damaged
    Delta log or a full disk fails with the typed error of :mod:`spark_apps.lake.errors`.

    For example, ``refresh_view(spark, settings, registry.view("page_clicks_hourly"))`` while
    another refresh of it commits first returns a report of mode ``up_to_date`` noting that a
    concurrent refresh applied the change.
    """
    from spark_apps.lake.errors import diagnosed, retry_on_conflict
    from spark_apps.lake.freshness import record_quietly
    from spark_apps.lake.tables import table_path
    from spark_apps.lake.views.bookkeeping import PROGRESS_TABLE

    path = table_path(settings, view.name)
    tables = [settings.table_path(name) for name in (view.name, view.source, PROGRESS_TABLE)]
    with diagnosed(f"view {view.name}", settings.runtime_dir, tables=tables):
        report = retry_on_conflict(
            f"view {view.name}",
            path,
            lambda: (full_refresh if full else refresh)(spark, settings, view),
        )
    record_quietly(spark, settings, view.name)  # its newest data time, for the Data quality page
    return report
