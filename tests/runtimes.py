"""Which interpreter collects what (a pytest plugin, loaded by ``tests/conftest.py``).

Two interpreters run this suite and the modules' doctests (see the Makefile): the *lake*
environment collects every Python file outside ``ops/`` directories (``tests/**/ops/``,
``spark_apps/ops/``), the *ops* environment only the files inside them, plus
:data:`BOTH_RUNTIMES`. A plugin rather than a conftest hook: a conftest's hooks see only paths
under its own directory, and the doctests live in ``include/adlake`` and ``spark_apps``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# Test files that check the session factory itself: each interpreter runs them.
BOTH_RUNTIMES = {Path("tests/include/test_spark_session.py")}


def current_runtime() -> str:
    """``ops`` or ``lake``, from this interpreter's PySpark (``none`` without one)."""
    from adlake.local import versions

    try:
        import pyspark
    except ImportError:
        return "none"
    return "ops" if pyspark.__version__ == versions.SPARK_OPS else "lake"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Every Python file, not only test_*: --doctest-modules imports the modules too, and an ops
    # module needs the ops runtime's PySpark. None, not False, lets --ignore and the defaults act.
    if collection_path.suffix != ".py" or collection_path.name == "conftest.py":
        return None
    try:
        relative = collection_path.resolve().relative_to(REPO_ROOT)
    except ValueError:
        return None
    if relative in BOTH_RUNTIMES:
        return None
    in_ops_dir = "ops" in relative.parts[:-1]
    return True if in_ops_dir != (current_runtime() == "ops") else None
