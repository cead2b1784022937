"""Shared fixtures. Servers are started here, by the tests, never by hand.

Two interpreters run this suite (see the Makefile): the *lake* environment collects everything
except ``ops/`` test directories, the *ops* environment collects only those. Which runtime a
``spark`` fixture builds follows from the interpreter's PySpark.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adlake.config import Settings, load_settings
from adlake.kafka_local import free_port

TESTS_DIR = Path(__file__).parent


def current_runtime() -> str:
    from adlake import versions

    try:
        import pyspark
    except ImportError:
        return "none"
    return "ops" if pyspark.__version__ == versions.SPARK_OPS else "lake"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.is_dir() or not collection_path.name.startswith("test_"):
        return None
    in_ops_dir = "ops" in collection_path.relative_to(TESTS_DIR).parts[:-1]
    return in_ops_dir != (current_runtime() == "ops")


def pytest_configure(config: pytest.Config) -> None:
    # Registered here, not in pyproject.toml: the environments' stamps hash that file.
    config.addinivalue_line(
        "markers", "python_only: an attribution processor test only the Python engine's "
                   "TwsTester can run (it reads the tester's internals)")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Unmarked tests are unit tests: `-m unit` selects exactly the fast tier.
    for item in items:
        if not any(item.get_closest_marker(name) for name in ("integration", "e2e")):
            item.add_marker(pytest.mark.unit)


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Local-profile settings with all state under a temporary directory and a broker address on
    free loopback ports, so a test run never touches a developer's own broker or tables."""
    return private_settings(tmp_path_factory.mktemp("runtime"))


def private_settings(runtime_dir: Path) -> Settings:
    """Local settings of a test's own: state under ``runtime_dir``, a broker address on free
    loopback ports."""
    return load_settings({
        "ADLAKE_PROFILE": "local",
        "ADLAKE_RUNTIME_DIR": str(runtime_dir),
        "ADLAKE_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}",
        "ADLAKE_KAFKA_CONTROLLER_PORT": str(free_port()),
        "ADLAKE_SHUFFLE_PARTITIONS": "2",
        "ADLAKE_DRIVER_MEMORY": "2g",
    })


@pytest.fixture(scope="session")
def kafka(settings: Settings) -> Iterator["LocalKafka"]:  # noqa: F821
    """A real broker on a free loopback port with every registry topic created."""
    from adlake.kafka_local import LocalKafka

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

    session = get_session(current_runtime(), "adlake-tests", settings)
    yield session
    session.stop()
