"""The event generator: realistic ad and page-click traffic, with anomalies injected on purpose.

Two layers, so everything worth testing runs without a broker:

* :class:`Traffic` (``traffic.py``; settings and records in ``plan.py``) is pure logic. From a
  :class:`GeneratorConfig` and a start instant it yields the exact ordered sequence of
  :class:`OutRecord` to produce (topic, partition, key, value bytes and the offset from the start
  at which to send each). A seed fixes the sequence.
* :func:`emit` (``produce.py``) paces that sequence against a clock and hands each record to a
  ``deliver`` callable; :func:`run` wires it to a confluent-kafka ``Producer`` and writes the
  report, counted by :class:`Tally` (``tally.py``); ``cli.py`` is the command line.

What the traffic is and which anomalies it carries (each a knob of :class:`GeneratorConfig` and
a flag of the command), and what the report counts: :mod:`adlake.generator.cli`, the command's
``--help``.

>>> cfg = GeneratorConfig(count=3, seed=7, click_share=0.0, fill_rate=1.0, orphans=0.0,
...                       out_of_order=0.0, duplicates=0.0, late=0.0, malformed=0.0, surge_pages=0)
>>> [(r.topic, r.kind) for r in Traffic(cfg, start_ms=0).records()]
[('ad_requests', 'event'), ('ad_impressions', 'event'), ('ad_callbacks', 'event')]

Command line::

    python -m adlake.generator --rate 1000 --duration 30 --seed 1 --late 0.01
"""

from adlake.generator.cli import config_from_args, main, parse_args
from adlake.generator.plan import (
    AD_CALLBACKS,
    AD_IMPRESSIONS,
    AD_REQUESTS,
    ANOMALY_KINDS,
    CLICK,
    CONVERSION,
    EVENT_TIME,
    INPUT_TOPICS,
    MALFORMED_KINDS,
    PAGE_CLICKS,
    QUARTILES,
    GeneratorConfig,
    GeneratorError,
    OutRecord,
    closing_request,
    iso_ms,
    partition_for,
)
from adlake.generator.produce import emit, report, run, summary
from adlake.generator.tally import Tally, classify
from adlake.generator.traffic import Traffic

__all__ = [
    "AD_CALLBACKS",
    "AD_IMPRESSIONS",
    "AD_REQUESTS",
    "ANOMALY_KINDS",
    "CLICK",
    "CONVERSION",
    "EVENT_TIME",
    "INPUT_TOPICS",
    "MALFORMED_KINDS",
    "PAGE_CLICKS",
    "QUARTILES",
    "GeneratorConfig",
    "GeneratorError",
    "OutRecord",
    "Tally",
    "Traffic",
    "classify",
    "closing_request",
    "config_from_args",
    "emit",
    "iso_ms",
    "main",
    "parse_args",
    "partition_for",
    "report",
    "run",
    "summary",
]
