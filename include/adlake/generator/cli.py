"""``python -m adlake.generator``: the command line of the event generator."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from adlake.generator.plan import GeneratorConfig, GeneratorError
from adlake.generator.produce import run, summary
from adlake.helpformat import HelpFormatter


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from adlake import generator

    d = GeneratorConfig(count=0)
    p = argparse.ArgumentParser(
        prog="python -m adlake.generator",
        description=generator.__doc__,
        formatter_class=HelpFormatter,
    )
    p.add_argument("--rate", type=float, default=d.rate, help="base events per second")
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="seconds of new traffic, then drain (default 30 unless --count is given)",
    )
    p.add_argument(
        "--count",
        type=int,
        default=None,
        help="stop after N base events, then drain (default: no limit)",
    )
    p.add_argument("--seed", type=int, default=d.seed, help="fixes the whole record sequence")
    p.add_argument(
        "--fill-rate",
        type=float,
        default=d.fill_rate,
        help="probability that a request gets an impression",
    )
    p.add_argument(
        "--click-share",
        type=float,
        default=d.click_share,
        help="fraction of the base rate that is page clicks",
    )
    p.add_argument(
        "--out-of-order",
        type=float,
        default=d.out_of_order,
        help="probability that an event is held back behind 1..50 later ones",
    )
    p.add_argument(
        "--duplicates",
        type=float,
        default=d.duplicates,
        help="probability that an event is sent twice in a row",
    )
    p.add_argument(
        "--late",
        type=float,
        default=d.late,
        help="probability that an event's time is set more than --lateness back",
    )
    p.add_argument(
        "--lateness",
        type=float,
        default=d.lateness_s,
        help="seconds behind its send time that make an event late",
    )
    p.add_argument(
        "--malformed",
        type=float,
        default=d.malformed,
        help="probability of an extra malformed record after an event",
    )
    p.add_argument(
        "--orphans",
        type=float,
        default=d.orphans,
        help="probability of an unsent request, and of a callback without impression",
    )
    p.add_argument(
        "--surge-pages",
        type=int,
        default=d.surge_pages,
        help="pages that also get --surge-rate extra clicks",
    )
    p.add_argument("--surge-rate", type=float, default=d.surge_rate, help="clicks/s per surge page")
    p.add_argument("--bootstrap", default=None, help="default: settings.kafka_bootstrap")
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        help="default: <settings.reports_dir>/generator-<timestamp>.json",
    )
    return p.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> GeneratorConfig:
    duration = args.duration if args.duration is not None or args.count is not None else 30.0
    return GeneratorConfig(
        rate=args.rate,
        duration_s=duration,
        count=args.count,
        seed=args.seed,
        fill_rate=args.fill_rate,
        click_share=args.click_share,
        out_of_order=args.out_of_order,
        duplicates=args.duplicates,
        late=args.late,
        lateness_s=args.lateness,
        malformed=args.malformed,
        orphans=args.orphans,
        surge_pages=args.surge_pages,
        surge_rate=args.surge_rate,
    )


def main(argv: list[str] | None = None) -> int:
    from adlake.config import load_settings

    args = parse_args(argv)
    try:
        config = config_from_args(args)
    except GeneratorError as e:
        print(f"generator: {e}", file=sys.stderr)
        return 2
    settings = load_settings()
    bootstrap = args.bootstrap or settings.kafka_bootstrap
    path = args.report or (
        settings.reports_dir / f"generator-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    )
    result = run(config, bootstrap, path)
    print(summary(result))
    print(f"report: {path}")
    return 0
