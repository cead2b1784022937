"""Test tiers, derived from what a test starts (a pytest plugin, loaded by ``tests/conftest.py``).

* ``integration``: every test that uses a fixture of :data:`SERVER_FIXTURES` (a JVM or a Kafka
  broker), directly or through other fixtures, gets the marker here. A test that starts a JVM
  without such a fixture (an app run as a subprocess, ``javac``) carries it explicitly.
* ``e2e``: marked explicitly.
* ``unit``: everything else, doctests included. ``-m unit`` selects exactly the tests that need
  nothing running.

The rule is checked, not trusted: while a ``unit`` test runs (setup to teardown), an audit hook
sees every process this interpreter starts, and a JVM among them (``java``, ``javac``, ``jar``,
``spark-submit``, ``spark-class``: PySpark's gateway and the local broker included) fails the
test with the command. A JVM that a session fixture already started (in a run that mixes tiers)
is not started again, so the check is exact in a ``-m unit`` run, as ``make test-unit`` does.
"""

from __future__ import annotations

import os
import shlex
import sys

import pytest

# Fixtures that start a JVM or a Kafka broker, wherever they are defined.
SERVER_FIXTURES = frozenset(
    {
        "spark",  # tests/conftest.py: the interpreter's SparkSession
        "kafka",  # tests/conftest.py: the session's broker
        "lake_engine",  # tests/conftest.py: the session's lake engine (a Spark Connect JVM)
        "fresh_kafka",  # tests/spark_apps/ops/conftest.py: a broker per test
        "own_broker",  # tests/include/local/test_kafka.py: a broker per test
    }
)
JVM_PROGRAMS = frozenset({"java", "javac", "jar", "spark-submit", "spark-class"})


def variants(values, in_make_test) -> list:
    """Parameters of a test whose cases are variants of one property: those in
    ``in_make_test`` run in ``make test``, the others are marked ``e2e`` (the exhaustive tier).

    >>> [p.marks for p in variants(["a", "b"], {"a"})]
    [(), (MarkDecorator(mark=Mark(name='e2e', args=(), kwargs={})),)]
    """
    return [pytest.param(v, marks=() if v in in_make_test else (pytest.mark.e2e,)) for v in values]


def starts_servers(item: pytest.Item) -> bool:
    # A fixture that asks for a server at run time (request.getfixturevalue) is invisible
    # here: such parameters carry the integration mark themselves (pytest.param(..., marks=)).
    return bool(SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e"):
            continue
        if not item.get_closest_marker("integration") and starts_servers(item):
            item.add_marker(pytest.mark.integration)
        if not item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.unit)


# -- the check: a unit test starts no JVM ---------------------------------------------------------

# The JVM commands started by the unit test running now; None while no unit test runs.
_jvms_started: list[str] | None = None
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system"}
)


def _command(event: str, args: tuple) -> list[str]:
    """The argv (or shell words) of a process-start audit event."""
    if event == "os.system":
        program, argv = None, args[0]
    elif event == "os.spawn":
        program, argv = args[1], args[2]
    else:  # subprocess.Popen (executable, args, ...), os.posix_spawn / os.exec (path, argv, ...)
        program, argv = args[0], args[1]
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = os.fsdecode(argv)
        try:
            words = shlex.split(argv)
        except ValueError:
            words = argv.split()
    else:
        words = [os.fsdecode(a) for a in argv]
    if program is not None and (not words or os.fsdecode(program) != words[0]):
        words.insert(0, os.fsdecode(program))
    return words


def is_jvm(words: list[str]) -> bool:
    """Whether a command runs a JVM: any of its words (a shell's ``-c`` script included) is a
    JVM program.

    >>> is_jvm(["/opt/spark/bin/spark-submit", "--master", "local[2]", "pyspark-shell"])
    True
    >>> is_jvm(["/bin/sh", "-c", "exec java -cp 'x/*' kafka.Kafka"])
    True
    >>> is_jvm([sys.executable, "-m", "adlake.apps", "--help"])
    False
    """
    for word in words:
        parts = shlex.split(word) if " " in word else [word]
        if any(os.path.basename(part) in JVM_PROGRAMS for part in parts):
            return True
    return False


def _audit(event: str, args: tuple) -> None:
    if _jvms_started is None or event not in _SPAWN_EVENTS:
        return
    try:
        words = _command(event, args)
    except Exception:  # noqa: BLE001 - an audit hook must never break the call it observes
        return
    if is_jvm(words):
        _jvms_started.append(shlex.join(words)[:300])


sys.addaudithook(_audit)


@pytest.hookimpl(tryfirst=True)  # before the fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _jvms_started
    _jvms_started = [] if item.get_closest_marker("unit") else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    global _jvms_started
    report = yield
    if call.when == "teardown" and _jvms_started is not None:
        started, _jvms_started = _jvms_started, None
        if started:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is a unit test but started a JVM:\n  "
                + "\n  ".join(started)
                + "\nUse a fixture of tests/tiers.py SERVER_FIXTURES, or mark the test "
                "`pytest.mark.integration`."
            )
    return report
