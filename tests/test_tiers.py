"""The suite's own rules: tiers derived from the fixtures a test uses, the check that a unit test
starts no JVM (:mod:`tests.tiers`), and which interpreter collects which module
(:mod:`tests.runtimes`). Each rule runs in a pytest of its own, on small test files written here."""

from __future__ import annotations

import pytest

from tests import runtimes

pytestmark = pytest.mark.usefixtures("plugin_on_path")

INI = """[pytest]
markers =
    unit: u
    integration: i
    e2e: e
"""


@pytest.fixture
def plugin_on_path(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(runtimes.REPO_ROOT))
    pytester.makeini(INI)


def selected(pytester: pytest.Pytester, marker: str) -> set[str]:
    # In-process: collecting runs no test, so it leaves this test's own JVM check alone.
    result = pytester.runpytest("-p", "tests.tiers", "-m", marker, "--collect-only", "-q")
    return {line.split("::")[1] for line in result.outlines if "::" in line}


def test_a_test_using_a_server_fixture_even_through_another_is_integration(pytester):
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def spark():  # the name is what counts; this one starts nothing
            yield None

        @pytest.fixture
        def chain(spark):
            return spark
    """)
    pytester.makepyfile(
        test_some="""
        import pytest

        def test_direct(spark): pass
        def test_through_another_fixture(chain): pass
        def test_plain(tmp_path): pass

        @pytest.mark.integration
        def test_marked(): pass

        @pytest.mark.e2e
        def test_whole_platform(spark): pass
    """
    )
    assert selected(pytester, "integration") == {
        "test_direct",
        "test_through_another_fixture",
        "test_marked",
    }
    assert selected(pytester, "unit") == {"test_plain"}
    assert selected(pytester, "e2e") == {"test_whole_platform"}


def test_a_unit_test_that_starts_a_jvm_fails_naming_the_command(pytester):
    pytester.makepyfile(
        test_jvm="""
        import subprocess
        import sys

        import pytest

        def fake_java(tmp_path):
            java = tmp_path / "java"  # a JVM by its name; it only exits
            java.write_text("#!/bin/sh\\nexit 0\\n")
            java.chmod(0o755)
            return str(java)

        def test_unit_starting_java(tmp_path):
            subprocess.run([fake_java(tmp_path), "-version"], check=True)

        def test_unit_starting_python():
            subprocess.run([sys.executable, "-c", "pass"], check=True)

        @pytest.mark.integration
        def test_integration_starting_java(tmp_path):
            subprocess.run([fake_java(tmp_path), "-version"], check=True)
    """
    )
    result = pytester.runpytest_subprocess("-p", "tests.tiers")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_unit_starting_java is a unit test but started a JVM:", "*/java -version"]
    )


@pytest.mark.parametrize(
    "path, runtime",
    [
        ("spark_apps/ops/click_surge.py", "ops"),
        ("tests/spark_apps/ops/test_click_surge.py", "ops"),
        ("spark_apps/lake/silver.py", "lake"),
        ("include/adlake/local/versions.py", "lake"),
        ("tests/include/test_spark_session.py", "both"),
    ],
)
def test_each_interpreter_collects_its_own_runtimes_modules(path, runtime, monkeypatch):
    for current in ("lake", "ops"):
        monkeypatch.setattr(runtimes, "current_runtime", lambda: current)
        ignored = runtimes.pytest_ignore_collect(runtimes.REPO_ROOT / path, None)
        assert (not ignored) == (runtime in (current, "both")), (path, current)
