"""The command: refresh, full-refresh or verify registered views, one line each.

    .venv/lake/bin/python -m spark_apps.lake.views --all
    .venv/lake/bin/python -m spark_apps.lake.views --view campaign_daily_totals --full-refresh
    .venv/lake/bin/python -m spark_apps.lake.views --all --verify
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from spark_apps.lake.views.engine import full_refresh, refresh, verify


MODES = registry.VIEW_MODE.choices


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from spark_apps.lake import views  # the package: its docstring describes the command

    parser = argparse.ArgumentParser(prog="spark_apps.lake.views",
                                     description=views.__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--view", action="append", choices=sorted(registry.VIEWS),
                       help="a registered view (repeatable)")
    which.add_argument("--all", action="store_true", help="every registered view")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full-refresh", action="store_true",
                      help="recompute from the source instead of applying the change feed")
    mode.add_argument("--verify", action="store_true",
                      help="recompute in memory and report groups where the view differs "
                           "(exit status 1 if any)")
    mode.add_argument("--mode", choices=MODES, default=None,
                      help="the same as a flag: incremental (the default), full-refresh or "
                           "verify (the view DAGs' trigger form passes it)")
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
                print(f"{name}: {len(differences)} group(s) differ from a recomputation "
                      f"(first {min(len(differences), 20)}):")
                for diff in differences[:20]:
                    print(f"  {diff}")
            else:
                print(f"{name}: consistent with its source")
        else:
            report = (full_refresh if args.full_refresh else refresh)(spark, settings, view)
            print(report.line(), flush=True)
    return status
