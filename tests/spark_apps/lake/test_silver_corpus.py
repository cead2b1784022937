"""The bad-input corpus through the lake for real: a broker of its own, bronze, then silver.

Every corpus record is produced (one Kafka timestamp for all: see ``tests/support/corpus.py``)
and found again by its Kafka coordinates: a rejected record must be in the quarantine with
exactly its written-down reason and what the quarantine keeps of its raw value, a valid one in
silver, a duplicate in neither, and each topic's bronze rows must equal silver + quarantine +
duplicates (``silver.accounting()``), exactly. The record limit is the one the corpus is
written for, whatever the caller's environment says.
"""

from __future__ import annotations

import time

import pytest

from adlake import payload_rules, registry
from spark_apps.lake.tables import read_table
from tests.support import corpus
from tests.support.corpus import corpus_broker, corpus_limit  # noqa: F401 - fixtures

pytestmark = pytest.mark.integration


def test_silver_quarantines_each_record_with_its_reason_and_accounts_for_every_one(
    spark, corpus_broker, corpus_limit
):
    from pyspark.sql import functions as F

    from spark_apps.lake import bronze, silver

    settings, placed = corpus_broker
    started = time.monotonic()
    bronze.run(spark, settings, list(corpus.TOPICS))
    bronze_s = time.monotonic() - started
    silver.run(spark, settings, list(corpus.TOPICS))
    silver_s = time.monotonic() - started - bronze_s

    quarantine = {
        (r.topic, r.partition, r.offset): r
        for r in read_table(spark, settings, silver.QUARANTINE.name).collect()
    }
    wrong = corpus.wrong_reasons(
        placed, {c: r.reason for c, r in quarantine.items()}, corpus.TOPICS
    )
    assert not wrong, (
        f"{len(wrong)} records (kind, expected, quarantined): {sorted(wrong.items())[:20]}"
    )
    assert corpus.wrong_raw_values(placed, {c: r.raw_value for c, r in quarantine.items()}) == {}

    in_silver = set()
    for topic in corpus.TOPICS:
        table = silver.silver_table(topic).name
        in_silver |= {
            tuple(r)
            for r in read_table(spark, settings, table)
            .select(*registry.BRONZE_COORDINATES)
            .collect()
        }
    want_silver = {
        c for c, rec in placed.items() if rec.expected is None and rec.kind != corpus.DUPLICATE
    }
    assert in_silver == want_silver, (
        f"valid records missing from silver: {sorted(want_silver - in_silver)[:10]}; "
        f"in silver but not expected there: {sorted(in_silver - want_silver)[:10]}"
    )

    for topic in corpus.TOPICS:
        mine = [rec for (t, _, _), rec in placed.items() if t == topic]
        assert silver.accounting(spark, settings, topic) == {
            "bronze": len(mine),
            "silver": sum(r.expected is None and r.kind != corpus.DUPLICATE for r in mine),
            "quarantine": sum(r.expected is not None for r in mine),
            "duplicates": sum(r.kind == corpus.DUPLICATE for r in mine),
        }, topic

    longest = (
        read_table(spark, settings, silver.QUARANTINE.name)
        .where(F.col("reason") == payload_rules.TOO_LARGE)
        .agg(F.max(F.octet_length("raw_value")))
        .first()[0]
    )
    print(
        f"\n{len(placed)} records: {len(in_silver)} in silver, {len(quarantine)} "
        f"quarantined, {len(placed) - len(in_silver) - len(quarantine)} duplicates; the "
        f"longest raw value kept of a too_large record: {longest} bytes; bronze "
        f"{bronze_s:.0f} s, silver {silver_s:.0f} s, checks "
        f"{time.monotonic() - started - bronze_s - silver_s:.0f} s"
    )
