"""The runtime line: the lake (Spark 4.2) imports no operational app (Spark 4.3), and the shared
code imports neither side. Every import counts, including those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def offending_imports(package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
        bad = sorted(
            m
            for m in imported_modules(path)
            if any(m == f or m.startswith(f + ".") for f in forbidden)
        )
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    return found


@pytest.mark.parametrize(
    "package, forbidden",
    [
        ("spark_apps.lake", ("spark_apps.ops",)),
        ("spark_apps.common", ("spark_apps.ops", "spark_apps.lake")),
        ("include.adlake", ("spark_apps.ops", "spark_apps.lake")),
    ],
)
def test_no_import_crosses_the_runtime_line(package, forbidden):
    assert offending_imports(package, forbidden) == {}


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from spark_apps.ops.attribution import build_query_frame\n")
    assert "spark_apps.ops.attribution" in imported_modules(module)
