"""The bad-input corpus (``tests/corpus/``, written by ``tests/support/corpus.py``) against the
pure-Python checker of the payload rules: no JVM.

Every record must get exactly the reason written down for its kind; the committed file must be
what the seeded script writes; and the corpus must be big enough and cover every kind, every
field of every input topic and every kind of reason. Silver's quarantine and both DLQs are held
to the same reasons by ``tests/spark_apps/lake/test_silver_corpus.py`` and
``tests/spark_apps/ops/test_dlq_corpus.py``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from adlake import payload_rules, registry
from tests.support import corpus

# A Kafka timestamp long after the corpus's earliest one: the reasons must not depend on it.
YEAR_2099_MS = 4_070_908_800_000


@pytest.fixture(scope="module")
def records() -> list[corpus.CorpusRecord]:
    return corpus.load()


def mismatches(records, kafka_ts_ms: int) -> Counter:
    """(topic, kind, expected, got) of every record whose reason is not its written-down one."""
    return Counter(
        (r.topic, r.kind, r.expected, got)
        for r in records
        if (
            got := payload_rules.check_record(
                r.topic, r.value, kafka_ts_ms, max_bytes=corpus.MAX_BYTES
            )
        )
        != r.expected
    )


def test_every_record_gets_exactly_its_written_down_reason(records):
    assert mismatches(records, corpus.NOT_BEFORE_MS) == Counter()


def test_the_reasons_do_not_depend_on_when_the_corpus_is_produced(records):
    assert mismatches(records, YEAR_2099_MS) == Counter()


def test_the_committed_corpus_is_what_the_seeded_script_writes(records):
    assert records == corpus.generate(corpus.SEED), (
        "tests/corpus/ drifted from tests/support/corpus.py: run "
        "`python -m tests.support.corpus --seed 7 --out tests/corpus/bad_inputs.jsonl.gz` "
        "and commit the file"
    )


def test_the_corpus_is_large_and_every_kind_is_in_every_topic_it_applies_to(records):
    assert len(records) >= 10_000
    kinds_by_topic = {t: {r.kind for r in records if r.topic == t} for t in corpus.TOPICS}
    for topic, kinds in kinds_by_topic.items():
        field_kinds = {
            corpus.field_kind(t, f, what) for t, f, what, _, _ in corpus.FIELD_KINDS if t == topic
        }
        assert kinds == set(corpus.WHOLE_VALUE_KINDS) | field_kinds, topic
    # Each record of a kind carries that kind's reason.
    table = {
        **corpus.WHOLE_VALUE_KINDS,
        **{
            corpus.field_kind(t, f, what): expected
            for t, f, what, _, expected in corpus.FIELD_KINDS
        },
    }
    assert {(r.kind, r.expected) for r in records} == set(table.items())


def test_every_field_of_every_input_topic_is_missing_and_mistyped_somewhere(records):
    reasons = {(r.topic, r.expected) for r in records}
    for topic in corpus.TOPICS:
        for field in registry.topic(topic).schema.fields:
            if field.required:
                assert (topic, f"missing_field:{field.name}") in reasons, (topic, field)
            assert (topic, f"wrong_type:{field.name}") in reasons, (topic, field)
        for kind in payload_rules.REASON_KINDS:
            assert any(t == topic and e and e.split(":")[0] == kind for t, e in reasons), (
                topic,
                kind,
            )
    assert (
        {t for t, _ in reasons}
        == set(corpus.TOPICS)
        == {name for app in registry.APPS.values() for name in app.inputs}
    )


def test_kafka_null_and_empty_values_are_both_invalid_json(records):
    null = [r for r in records if r.value is None]
    empty = [r for r in records if r.value == b""]
    assert null and empty
    assert {r.expected for r in null} == {r.expected for r in empty} == {"invalid_json"}
