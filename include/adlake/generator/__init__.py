"""The event generator: realistic ad and page-click traffic, with anomalies injected on purpose.

Two layers, so everything worth testing runs without a broker:

* :class:`Traffic` (``traffic.py``; settings and records in ``plan.py``) is pure logic. From a
  :class:`GeneratorConfig` and a start instant it yields the exact ordered sequence of
  :class:`OutRecord` to produce (topic, partition, key, value bytes and the offset from the start
  at which to send each). A seed fixes the sequence.
* :func:`emit` (``produce.py``) paces that sequence against a clock and hands each record to a
  ``deliver`` callable; :func:`run` wires it to a confluent-kafka ``Producer`` and writes the
  report, counted by :class:`Tally` (``tally.py``); ``cli.py`` is the command line.

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
the topics read back partition by partition in offset order (see :class:`Tally`), so an
end-to-end test can recount them exactly. Rejected records are counted by the kind of reason
the DLQs and silver's quarantine give them (:func:`adlake.payload_rules.check_record`, the same rules).
The injected knobs and the counted anomalies differ on purpose: a held-back event is out of order
only if a later event of its own partition overtook it, a late event is usually out of order too,
a duplicate of a late event is late as well.

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
