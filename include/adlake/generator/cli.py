"""``python -m adlake.generator``: realistic ad and page-click traffic to the input topics, with
anomalies injected on purpose (the package: :mod:`adlake.generator`).

Traffic. Ad *chains*: an ad request, filled with probability ``fill_rate`` by one impression 10-500
ms later, followed by 0..n callbacks 100 ms-5 s after the impression (the quartiles in order with
drop-off, sometimes a click, rarely a conversion with a value). Page clicks hit a population of
pages with skewed popularity; ``surge_pages`` pages also get ``surge_rate`` extra clicks/s each.
Every event is sent when the wall clock reaches its event time, so a healthy record has
``kafka_timestamp - event_time`` of a few milliseconds.

Anomalies (each a probability, 0 disables it):

* ``out_of_order``: an event is held back and delivered after k (1..50) later events.
* ``duplicates``: an event is sent twice in a row (same key, value and partition).
* ``late``: an event's event_time is set ``lateness_s`` + 1..60 s before its send time.
* ``malformed``: an extra standalone record, not part of any chain, is sent to a random input topic:
  unparseable JSON, a required field removed, or a required non-string field with a value of the
  wrong JSON type.
* ``orphans``: a filled chain's request is never sent, and (same probability) a chain gets an
  extra callback whose impression is never sent.

The report counts anomalies from what was actually produced, by rules a consumer can apply to
the topics read back partition by partition in offset order (see :class:`adlake.generator.Tally`), so an
end-to-end test can recount them exactly. Rejected records are counted by the kind of reason
the DLQs and silver's quarantine give them (:func:`adlake.payload_rules.check_record`, the same rules).
The injected knobs and the counted anomalies differ on purpose: a held-back event is out of order
only if a later event of its own partition overtook it, a late event is usually out of order too,
a duplicate of a late event is late as well.

Command line::

    python -m adlake.generator --rate 1000 --duration 30 --seed 1 --late 0.01
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from adlake.generator.plan import GeneratorConfig, GeneratorError
from adlake.generator.produce import run, summary
from adlake.helpformat import HelpFormatter


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = GeneratorConfig(count=0)
    p = argparse.ArgumentParser(
        prog="python -m adlake.generator",
        description=__doc__,
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
    # the topics' partitions as configured: records must land on partitions that exist
    config = replace(config, topic_partitions=settings.topic_partitions)
    bootstrap = args.bootstrap or settings.kafka_bootstrap
    path = args.report or (
        settings.reports_dir / f"generator-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    )
    result = run(config, bootstrap, path)
    print(summary(result))
    print(f"report: {path}")
    return 0
