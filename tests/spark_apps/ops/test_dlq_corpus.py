"""The bad-input corpus through both operational apps, on the ops runtime, for real: a broker of
its own holding the whole corpus, each app's query run in this process as the runner builds it
(its source, its query frame, its Kafka sink) with an ``availableNow`` trigger.

Each rejected input record must be in the app's DLQ exactly once with exactly its written-down
reason (attribution: ``ad_requests``, ``ad_impressions``, ``ad_callbacks`` into
``ad_events_dlq``; click-surge: ``page_clicks`` into ``page_clicks_dlq``), and no valid one may
be there. Click-surge runs with threshold 0, so every window is written with its count: the
counts of the last records of each window must add up to the valid clicks, so every input
record is accounted for, in the DLQ or in a window. The record limit is set to the one the
corpus is written for.
"""

from __future__ import annotations

import json
import time

import pytest

from adlake import registry
from tests.spark_apps.ops.conftest import read_topic
from tests.support import corpus
from tests.support.corpus import corpus_broker, corpus_limit  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration


def run_available_now(spark, settings, spec, *flags: str) -> list[dict]:
    """Run ``spec``'s query as its runner builds it, to the end of what its inputs hold now;
    returns the query's progress reports."""
    from spark_apps.common.streaming.kafka_io import read_kafka, write_kafka
    from spark_apps.common.streaming.runner import parse_args
    from spark_apps.common.streaming.triggers import TriggerConfig

    args = parse_args(spec, ["--trigger", "available_now", *flags])
    trigger = TriggerConfig(args.trigger)
    raw = read_kafka(spark, settings, list(spec.app.inputs))
    query = write_kafka(
        spec.build(raw, args, trigger),
        settings,
        settings.checkpoint_path(spec.app.name),
        trigger,
        spec.output_mode(trigger),
        f"corpus_{spec.app.name}",
    )
    query.awaitTermination()
    return query.recentProgress


def check_dlq(settings, app: registry.App, placed: dict) -> dict:
    """Assert the app's DLQ holds each rejected input record once, with its reason and what the
    DLQ keeps of its raw value, and nothing else; returns the DLQ values by coordinates."""
    dlq: dict[tuple[str, int, int], dict] = {}
    records = read_topic(settings.kafka_bootstrap, app.dlq)
    for record in records:
        value = json.loads(record.value)
        dlq[value["source_topic"], value["source_partition"], value["source_offset"]] = value
    assert len(records) == len(dlq), "a rejected record is in the DLQ more than once"
    wrong = corpus.wrong_reasons(placed, {c: v["reason"] for c, v in dlq.items()}, app.inputs)
    assert not wrong, (
        f"{len(wrong)} records (kind, expected, DLQ reason): {sorted(wrong.items())[:20]}"
    )
    assert corpus.wrong_raw_values(placed, {c: v["raw_value"] for c, v in dlq.items()}) == {}
    return dlq


def test_attribution_sends_each_rejected_record_to_its_dlq_with_its_reason(
    spark, corpus_broker, corpus_limit
):
    from spark_apps.ops.attribution import SPEC

    settings, placed = corpus_broker
    started = time.monotonic()
    progress = run_available_now(spark, settings, SPEC)
    elapsed = time.monotonic() - started

    dlq = check_dlq(settings, SPEC.app, placed)
    inputs = sum(c[0] in SPEC.app.inputs for c in placed)
    assert sum(p["numInputRows"] for p in progress) == inputs
    print(
        f"\nattribution: {inputs} records in {len(progress)} batches, {len(dlq)} in the DLQ, "
        f"{inputs - len(dlq)} valid; {elapsed:.0f} s"
    )


def test_click_surge_sends_each_rejected_click_to_its_dlq_and_counts_every_valid_one(
    spark, corpus_broker, corpus_limit
):
    from spark_apps.ops.click_surge import SPEC

    settings, placed = corpus_broker
    started = time.monotonic()
    progress = run_available_now(spark, settings, SPEC, "--threshold", "0")
    elapsed = time.monotonic() - started

    dlq = check_dlq(settings, SPEC.app, placed)
    clicks = [rec for c, rec in placed.items() if c[0] in SPEC.app.inputs]
    valid = sum(rec.expected is None for rec in clicks)
    # Update mode: a window is written again as its count grows; its last count is the final.
    final: dict[str, int] = {}
    for record in read_topic(settings.kafka_bootstrap, SPEC.app.outputs[0]):
        final[record.key.decode()] = max(
            final.get(record.key.decode(), 0), json.loads(record.value)["click_count"]
        )
    assert (len(dlq), sum(final.values())) == (len(clicks) - valid, valid)
    print(
        f"\nclick_surge: {len(clicks)} clicks in {len(progress)} batches, {len(dlq)} in the "
        f"DLQ, {valid} counted in {len(final)} windows; {elapsed:.0f} s"
    )
