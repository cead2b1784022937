"""The fault tier's shared reference: one broker loaded with generated traffic and the
uninterrupted lake run over it (:class:`tests.faults.harness.Lake`), built once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import private_settings
from tests.faults import harness

# The traffic of the short form: a few thousand records, a few hundred per topic of the slice.
SEED, COUNT = 14, 800


@pytest.fixture(scope="session")
def lake(tmp_path_factory, spark) -> Iterator[harness.Lake]:
    """The reference run (bronze, silver, the view, gold) on a broker of its own."""
    from adlake import generator
    from adlake.local.kafka import LocalKafka

    settings = private_settings(tmp_path_factory.mktemp("faults") / "reference")
    broker = LocalKafka(settings)
    broker.start()
    try:
        broker.create_topics()
        report = generator.run(
            harness.traffic(SEED, COUNT), settings.kafka_bootstrap, progress=False
        )
        reference = harness.Lake(settings, report)
        reference.build(spark)
        yield reference
    finally:
        broker.stop()
