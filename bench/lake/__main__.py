"""The lake's part of the benchmark report in one process and one Spark session: bronze
(:mod:`bench.lake.bronze`), then the view refresh suite (:mod:`bench.lake.views` ``--suite``),
each writing its JSON into ``--out-dir``. ``make bench-quick`` runs it with ``--quick``, the
smoke form of both: one Spark start instead of two (the broker starting beside it), two
shuffle partitions, and the views' tables under a work directory of their own. (``make bench``
runs each benchmark as a process of its own, as its figures were measured.)

    .venv/lake/bin/python -m bench.lake --quick --out-dir .runtime/reports/bench-quick

A benchmark that fails is reported and the other still runs; the exit status is 1 if either
failed.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import load_average, say
from bench.lake import bronze, views, views_suite


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.lake", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--out-dir",
        default=None,
        help="where bronze.json and views.json go (unset: <reports>/bench, or "
        "<reports>/bench-quick with --quick)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="each benchmark's smoke form (its --quick)"
    )
    return parser.parse_args(argv)


# The quick form's shuffle partitions: its tables are a few thousand rows.
QUICK_SHUFFLE_PARTITIONS = 2


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_settings()
    if args.quick:
        base = base.with_overrides(shuffle_partitions=QUICK_SHUFFLE_PARTITIONS)
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(base, args.quick)
    flags = ["--out-dir", str(out_dir), *(["--quick"] if args.quick else [])]
    load_start = load_average()
    failed = []
    with bronze.session_and_broker(base) as (spark, session_s, settings):
        say(f"session started in {session_s:.1f} s (load {load_start:.2f})")
        try:
            bronze.run(spark, base, settings, bronze.parse_args(flags), session_s, load_start)
        except Exception:  # noqa: BLE001 - the views still run; the status says it failed
            traceback.print_exc()
            failed.append("bronze")
    try:
        own = base.with_overrides(runtime_dir=harness.work_dir("views"))
        report = views_suite.suite(spark, own, views.parse_args(["--suite", *flags]), out_dir)
        if any(c.get("verify_differences") for c in report["cases"]):
            failed.append("views (the incremental refresh differs from a recomputation)")
    except Exception:  # noqa: BLE001 - reported, and the status says it failed
        traceback.print_exc()
        failed.append("views")
    if failed:
        say(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
