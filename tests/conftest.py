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


def pytest_configure(config: pytest.Config) -> None:
    # The lake pass's jobs started as processes (Airflow's tasks, the jobs' command lines) are
    # clients of one lake engine of this test run (the lake_engine fixture), on a port chosen
    # now so that every test's settings name it. An engine given by the caller (the port and
    # SPARK_CONNECT_AUTHENTICATE_TOKEN both set) is used instead.
    os.environ.setdefault("ADLAKE_LAKE_ENGINE_PORT", str(free_ports(1)[0]))


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
    """The session of this interpreter's runtime, built by the one session factory: a classic
    session in this process (its tests look into its JVM), in which a job called in-process
    runs too (:func:`adlake.spark_session.get_session`)."""
    from adlake.spark_session import get_session
    from tests.runtimes import current_runtime

    local = settings.with_overrides(lake_engine="local")
    session = get_session(current_runtime(), "adlake-tests", local)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def lake_engine(tmp_path_factory: pytest.TempPathFactory):
    """The lake engine the lake jobs of this test run's processes are sessions of (started once,
    in a runtime directory of its own; every test's settings name its port, its token is in
    this process's environment). None when the caller gave one."""
    from adlake.local.engine import LakeEngine
    from adlake.local.engine_client import TOKEN_VAR, ensure_token

    if os.environ.get(TOKEN_VAR):
        yield None
        return
    engine = LakeEngine(private_settings(tmp_path_factory.mktemp("lake-engine")))
    engine.start()
    os.environ[TOKEN_VAR] = ensure_token(engine.settings)
    try:
        yield engine
    finally:
        os.environ.pop(TOKEN_VAR, None)
        engine.stop()


@pytest.fixture(autouse=True)
def _lake_engine_for_integration(request: pytest.FixtureRequest) -> None:
    """Every test of the lake pass that may start a lake job (an integration or end-to-end
    test) has the shared engine running; a unit test starts nothing."""
    from tests.runtimes import current_runtime

    if not request.node.get_closest_marker("unit") and current_runtime() == "lake":
        request.getfixturevalue("lake_engine")
