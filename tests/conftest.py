"""Shared fixtures. Servers are started here, by the tests, never by hand.

Two interpreters run this suite and the modules' doctests (see the Makefile); which files each
collects is :mod:`tests.runtimes`, and which runtime a ``spark`` fixture builds follows from the
interpreter's PySpark. Tiers (``unit``, ``integration``, ``e2e``) come from :mod:`tests.tiers`:
a test using ``spark`` or ``kafka`` (or a fixture built on them) is an integration test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adlake import registry
from adlake.config import Settings, load_settings
from adlake.local.kafka import free_ports

if TYPE_CHECKING:
    from adlake.local.kafka import LocalKafka

pytest_plugins = ["tests.runtimes", "tests.tiers", "pytester"]
ENGINE_VARS = ("ADLAKE_LAKE_ENGINE", "ADLAKE_LAKE_ENGINE_PORT")


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Local-profile settings with all state under a temporary directory and a broker address on
    free loopback ports, so a test run never touches a developer's own broker or tables."""
    return private_settings(tmp_path_factory.mktemp("runtime"))


def private_settings(runtime_dir: Path) -> Settings:
    """Local settings of a test's own: state under ``runtime_dir``, a broker address on free
    loopback ports."""
    port, controller_port = free_ports(2)
    return load_settings(
        {
            "ADLAKE_PROFILE": "local",
            "ADLAKE_RUNTIME_DIR": str(runtime_dir),
            "ADLAKE_KAFKA_BOOTSTRAP": f"127.0.0.1:{port}",
            "ADLAKE_KAFKA_CONTROLLER_PORT": str(controller_port),
            "ADLAKE_SHUFFLE_PARTITIONS": "2",
            # The suites' records name partitions of the registry's count (4), not the local
            # profile's 2; a test of the partition settings sets its own.
            "ADLAKE_TOPIC_PARTITIONS": str(registry.topic("page_clicks").partitions),
            "ADLAKE_DRIVER_MEMORY": "2g",
            # where the lake's sessions run: the test session's engine, when one is shared
            **{k: os.environ[k] for k in ENGINE_VARS if k in os.environ},
        }
    )


@pytest.fixture(scope="session")
def kafka(settings: Settings) -> Iterator[LocalKafka]:
    """A real broker on a free loopback port with every registry topic created."""
    from adlake.local.kafka import LocalKafka

    broker = LocalKafka(settings)
    broker.start()
    broker.create_topics()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def spark(settings: Settings):
    """The session of this interpreter's runtime, built by the one session factory."""
    from adlake.spark_session import get_session
    from tests.runtimes import current_runtime

    session = get_session(current_runtime(), "adlake-tests", settings)
    yield session
    session.stop()
