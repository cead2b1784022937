"""The import graph, checked from the source (nothing is imported):

* the runtime line: the lake (Spark 4.2) imports no operational app (Spark 4.3), and the shared
  code imports neither side. Every import counts, including those inside functions;
* no cycle among the project's modules (``adlake``, ``spark_apps``, ``bench``, ``dags``,
  ``plugins``). Imports inside functions count (they run, later); imports under
  ``if TYPE_CHECKING:`` do not (they never run). ``from pkg import name`` is an edge to the
  submodule ``pkg.name`` when there is one, else to ``pkg``; a package's ``__init__`` importing
  its submodules to re-export them is an edge like any other;
* the product (``include/``, ``spark_apps/``, ``dags/``, ``plugins/``) and its tests (``tests/``
  but ``tests/bench/``) import nothing of the benchmark tooling (``bench``);
* no module but a test takes a private name (``_name``) from another module, by
  ``from m import _name`` or ``m._name``. A private *module* (``pkg/_impl.py``) is private to
  its package: the modules of ``pkg`` may import it, no one else. Tests are exempt (a test may
  reach into the module it tests).
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The project's top-level packages and where their source lives (dags/ and plugins/ are folders
# Airflow puts on its path; here their files are named dags.<file>, plugins.<file>).
PACKAGES = {
    "adlake": ROOT / "include" / "adlake",
    "spark_apps": ROOT / "spark_apps",
    "bench": ROOT / "bench",
    "dags": ROOT / "dags",
    "plugins": ROOT / "plugins",
}
PRODUCT = ("adlake", "spark_apps", "dags", "plugins")
TESTS = {"tests": ROOT / "tests"}
# The benchmark tooling's tests: the only tests that may import it.
BENCH_TESTS = "tests.bench"


# -- the runtime line ----------------------------------------------------------------------------


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
        # include/ is what the jobs and apps are built on: it imports nothing of them
        ("include.adlake", ("spark_apps",)),
    ],
)
def test_no_import_crosses_the_runtime_line(package, forbidden):
    assert offending_imports(package, forbidden) == {}


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from spark_apps.ops.attribution import build_query_frame\n")
    assert "spark_apps.ops.attribution" in imported_modules(module)


# -- the module graph ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One import of a project module by another, as written at ``path``:``line``."""

    importer: str
    target: str  # the module imported: the edge of the graph
    name: str | None  # ``from target import name`` (name not a submodule); None otherwise
    path: Path
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``: never runs

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def discover(packages: Mapping[str, Path]) -> dict[str, Path]:
    """Every module under the given top-level packages, by dotted name (a package by the name of
    its ``__init__``)."""
    modules = {}
    for top, base in packages.items():
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = [top, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    node: ast.AST, type_only: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under ``node``, at any depth (inside functions, classes, ``try``),
    and whether it sits under ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, type_only
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _import_nodes(ast.Module([stmt], []), True)
            for stmt in child.orelse:
                yield from _import_nodes(ast.Module([stmt], []), type_only)
        else:
            yield from _import_nodes(child, type_only)


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a project module."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:end])) in modules:
            return prefix
    return None


def _from_base(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``node`` imports from (``from ..x import y`` in
    ``pkg.sub.m``: ``pkg.x``)."""
    if not node.level:
        return node.module or ""
    package = name if is_package else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def module_imports(name: str, modules: Mapping[str, Path]) -> list[Import]:
    """The project modules the module ``name`` imports, each import resolved to a module."""
    path = modules[name]
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node, type_only in _import_nodes(tree):

        def add(target: str | None, imported: str | None, node=node, type_only=type_only) -> None:
            if target is not None:
                found.append(Import(name, target, imported, path, node.lineno, type_only))

        if isinstance(node, ast.Import):
            for alias in node.names:
                add(_owner(alias.name, modules), None)
            continue
        base = _from_base(name, is_package, node)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if alias.name != "*" and submodule in modules:
                add(submodule, None)
            else:
                owner = _owner(base, modules)
                add(owner, alias.name if owner == base and alias.name != "*" else None)
    return found


def all_imports(modules: Mapping[str, Path]) -> list[Import]:
    return [i for name in sorted(modules) for i in module_imports(name, modules)]


def import_graph(modules: Mapping[str, Path]) -> dict[str, dict[str, Import]]:
    """Module -> the modules it imports at run time (first import of each), self-imports aside."""
    graph: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for i in all_imports(modules):
        if not i.type_only and i.target != i.importer:
            graph[i.importer].setdefault(i.target, i)
    return graph


def strongly_connected(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iteratively, no recursion limit), those of more
    than one module: exactly the modules on a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def cycles(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """Cycles covering every edge of every strongly connected component: for each edge
    ``a -> b`` inside one, ``a -> b`` then the shortest way back from ``b`` to ``a``. Each
    cycle starts at its smallest module and ends where it starts."""
    found: set[tuple[str, ...]] = set()
    for component in strongly_connected(graph):
        members = set(component)
        for a in component:
            for b in sorted(set(graph.get(a, ())) & members):
                # BFS from b back to a, inside the component.
                came_from: dict[str, str | None] = {b: None}
                queue = deque([b])
                while a not in came_from:
                    node = queue.popleft()
                    for succ in sorted(set(graph.get(node, ())) & members):
                        if succ not in came_from:
                            came_from[succ] = node
                            queue.append(succ)
                back = [a]
                while back[-1] != b:
                    back.append(came_from[back[-1]])
                loop = [a, *reversed(back[1:])]
                start = loop.index(min(loop))
                found.add(tuple(loop[start:] + loop[:start]))
    return [[*c, c[0]] for c in sorted(found)]


def folder(module: str) -> str:
    """The folder a module counts in for folder loops: a subpackage of a top-level package with
    everything under it (``adlake.catalog.gold.page_traffic`` -> ``adlake.catalog``); a module
    directly in a top-level package is a node of its own (``adlake.registry``)."""
    return ".".join(module.split(".")[:2])


def folder_graph(graph: Mapping[str, Mapping[str, Import]]) -> dict[str, dict[str, Import]]:
    """The module graph with each module replaced by its :func:`folder` (first import of each
    edge between two folders)."""
    folders: dict[str, dict[str, Import]] = {}
    for importer, targets in graph.items():
        edges = folders.setdefault(folder(importer), {})
        for target, where in targets.items():
            if folder(target) != folder(importer):
                edges.setdefault(folder(target), where)
    return folders


def describe_cycles(graph: Mapping[str, Mapping[str, Import]]) -> str:
    lines = []
    for cycle in cycles(graph):
        lines.append(" -> ".join(cycle))
        lines.extend(
            f"    {a} -> {b}: {graph[a][b].where}" for a, b in zip(cycle, cycle[1:], strict=False)
        )
    return "\n".join(lines)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module_outside(target: str, importer: str) -> bool:
    """``target`` has a private segment (``pkg._impl``) and ``importer`` is not in ``pkg``."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        package = ".".join(parts[:i])
        if _is_private(part) and not (importer == package or importer.startswith(package + ".")):
            return True
    return False


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute) and (head := _dotted(node.value)) is not None:
        return [*head, node.attr]
    return None


def private_uses(name: str, modules: Mapping[str, Path]) -> list[str]:
    """Where module ``name`` takes a private name of another module: ``from m import _x``,
    ``m._x`` on a module it imported, or a private module of a package it is not part of."""
    imports = module_imports(name, modules)
    found = []
    for i in imports:
        if i.target == name:
            continue
        if i.name is not None and _is_private(i.name):
            found.append(f"{i.where}: from {i.target} import {i.name}")
        elif _private_module_outside(i.target, name):
            found.append(f"{i.where}: imports {i.target}")
    # Names bound to a project module by an import: `import a.b` binds a, `import a.b as m` m,
    # `from a import b` (a submodule) b.
    path = modules[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    bound: dict[str, str] = {}
    for node, _ in _import_nodes(tree):
        for alias in node.names:
            if isinstance(node, ast.Import):
                target = alias.name if alias.asname else alias.name.split(".")[0]
            else:
                target = f"{_from_base(name, path.name == '__init__.py', node)}.{alias.name}"
            if target in modules:
                bound[alias.asname or alias.name.split(".")[0]] = target
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or (chain := _dotted(node)) is None:
            continue
        if chain[0] not in bound:
            continue
        module = bound[chain[0]]
        for attr in chain[1:-1]:
            module = f"{module}.{attr}"
            if module not in modules:
                break
        else:
            if module != name and _is_private(chain[-1]):
                where = Import(name, module, None, path, node.lineno, False).where
                found.append(f"{where}: {'.'.join(chain)} ({module}.{chain[-1]})")
    return sorted(set(found))


def bench_imports(modules: Mapping[str, Path]) -> list[str]:
    """Imports of the ``bench`` package by the given modules (those under ``if TYPE_CHECKING:``
    too: a type is a dependency all the same)."""
    found = []
    for name in sorted(modules):
        tree = ast.parse(modules[name].read_text(), filename=str(modules[name]))
        for node, _ in _import_nodes(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if node.level == 0 else [])
            )
            for imported in names:
                if imported == "bench" or imported.startswith("bench."):
                    where = Import(name, imported, None, modules[name], node.lineno, False).where
                    found.append(f"{where}: {name} imports {imported}")
    return found


# -- the checks on this repository ---------------------------------------------------------------


def test_the_project_has_no_import_cycle():
    graph = import_graph(discover(PACKAGES))
    assert {"adlake", "spark_apps.lake.views", "adlake.ui.app"} <= set(graph)
    found = describe_cycles(graph)
    assert not found, f"import cycles (break each, e.g. by moving what both need):\n{found}"


# Folder loops older than this check, each through imports inside functions (the platform's
# start and the engine's client; the alerts naming an app's state). Not to grow: a new folder
# joining one, or a new loop, fails.
KNOWN_FOLDER_LOOPS = [
    ["adlake.airflow", "adlake.local", "adlake.spark_session"],
    ["adlake.alerts", "adlake.apps"],
]


def test_no_folder_loop():
    """Folders import one way (the catalog is imported by quality and everything else, never
    the other way): a loop between folders, even through different modules of each, means two
    folders that are one."""
    graph = folder_graph(import_graph(discover(PACKAGES)))
    assert {"adlake.catalog", "adlake.quality", "adlake.registry"} <= set(graph)
    new = [c for c in strongly_connected(graph) if c not in KNOWN_FOLDER_LOOPS]
    loops = {tuple(c) for c in new}
    found = describe_cycles(
        {
            a: {b: i for b, i in e.items() if any(a in c and b in c for c in loops)}
            for a, e in graph.items()
        }
    )
    assert not new, f"folder loops (move what both need to one side):\n{found}"


def test_the_product_and_its_tests_import_nothing_of_bench():
    modules = {
        name: path
        for name, path in discover({**PACKAGES, **TESTS}).items()
        if name.split(".")[0] in (*PRODUCT, "tests")
        and not (name == BENCH_TESTS or name.startswith(BENCH_TESTS + "."))
    }
    assert "tests.spark_apps.test_import_graph" in modules
    found = bench_imports(modules)
    assert not found, "the benchmark tooling is not a dependency:\n" + "\n".join(found)


def test_no_module_takes_a_private_name_of_another():
    modules = discover(PACKAGES)
    found = [use for name in sorted(modules) for use in private_uses(name, modules)]
    assert not found, (
        "private names used outside their module (make them public where they belong, or "
        "move the code that needs them):\n" + "\n".join(found)
    )


# -- the checks can fail -------------------------------------------------------------------------


def write_package(root: Path, files: Mapping[str, str]) -> dict[str, Path]:
    """A package ``pkg`` of ``files`` (relative path -> source) under ``root``; its modules."""
    for relative, source in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return discover({"pkg": root / "pkg"})


def test_a_loop_between_folders_through_different_modules_is_reported(tmp_path):
    modules = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "catalog/__init__.py": "",
            "catalog/tables.py": "from pkg.quality.rules import Rule\n",
            "quality/__init__.py": "",
            "quality/rules.py": "Rule = object\n",
            "quality/derive.py": "from pkg.catalog import tables\n",
        },
    )
    graph = import_graph(modules)
    assert not cycles(graph)  # no module cycle...
    assert cycles(folder_graph(graph)) == [["pkg.catalog", "pkg.quality", "pkg.catalog"]]


def test_a_cycle_through_an_import_inside_a_function_is_reported(tmp_path):
    modules = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from pkg import a\n    return a\n",
            "c.py": "import pkg.a\n",
        },
    )
    graph = import_graph(modules)
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert "pkg.b -> pkg.a: " in describe_cycles(graph)
    assert describe_cycles(graph).endswith("b.py:2")


def test_a_back_import_under_type_checking_is_no_cycle(tmp_path):
    modules = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n\nclass A: ...\n",
            "b.py": (
                "import typing\nfrom typing import TYPE_CHECKING\n\n"
                "if TYPE_CHECKING:\n    from pkg.a import A\n"
                "if typing.TYPE_CHECKING:\n    import pkg.a\nelse:\n    import pkg.c\n\n"
                "def helper(a: 'A') -> None: ...\n"
            ),
            "c.py": "",
        },
    )
    imports = all_imports(modules)
    assert {(i.importer, i.target, i.type_only) for i in imports} == {
        ("pkg.a", "pkg.b", False),
        ("pkg.b", "pkg.a", True),
        ("pkg.b", "pkg.c", False),
    }
    assert cycles(import_graph(modules)) == []


def test_every_cycle_is_reported_with_a_package_reexporting_its_submodules(tmp_path):
    # pkg re-exports pkg.a, which takes a name from pkg: one cycle. pkg.b and pkg.c import each
    # other, and pkg.c pkg.d, which imports pkg.b back (relative): two more, in one component.
    modules = write_package(
        tmp_path,
        {
            "__init__.py": "from pkg.a import run\nVERSION = 1\n",
            "a.py": "from pkg import VERSION\n\ndef run(): ...\n",
            "b.py": "from . import c\n",
            "c.py": "import pkg.b\nimport pkg.d as d\n",
            "d.py": "def f():\n    from .b import c\n",
        },
    )
    graph = import_graph(modules)
    assert graph["pkg"] == {"pkg.a": graph["pkg"]["pkg.a"]}
    assert graph["pkg.d"].keys() == {"pkg.b"}  # `from .b import c`: c is no module of pkg.b
    assert cycles(graph) == [
        ["pkg", "pkg.a", "pkg"],
        ["pkg.b", "pkg.c", "pkg.b"],
        ["pkg.b", "pkg.c", "pkg.d", "pkg.b"],
    ]
    assert strongly_connected(graph) == [["pkg", "pkg.a"], ["pkg.b", "pkg.c", "pkg.d"]]


def test_a_private_name_taken_from_another_module_is_reported(tmp_path):
    modules = write_package(
        tmp_path,
        {
            "__init__.py": "from pkg.a import public\nfrom pkg import _impl\n",
            "_impl.py": "def _own(): ...\n\ndef shared(): ...\n",
            "a.py": "def public(): ...\n\ndef _helper(): ...\n\n_helper()\n",
            "b.py": (
                "from pkg.a import _helper, public\nfrom pkg import a\n"
                "from pkg._impl import shared\n\n"
                "def f():\n    return a._helper(), a.__name__, public()\n"
            ),
            "sub/__init__.py": "",
            "sub/c.py": "import pkg.a\nfrom .. import _impl\n\npkg.a._helper()\n",
        },
    )
    found = {name: private_uses(name, modules) for name in modules}
    assert found == {
        "pkg": [],
        "pkg._impl": [],
        "pkg.a": [],
        "pkg.b": [
            f"{tmp_path}/pkg/b.py:1: from pkg.a import _helper",
            f"{tmp_path}/pkg/b.py:6: a._helper (pkg.a._helper)",
        ],
        "pkg.sub": [],
        "pkg.sub.c": [f"{tmp_path}/pkg/sub/c.py:4: pkg.a._helper (pkg.a._helper)"],
    }
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "__init__.py").write_text("from pkg._impl import shared\n")
    outside = discover({"pkg": tmp_path / "pkg", "other": tmp_path / "other"})
    assert private_uses("other", outside) == [f"{tmp_path}/other/__init__.py:1: imports pkg._impl"]


def test_an_import_of_bench_is_reported(tmp_path):
    (tmp_path / "m.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bench.report import R\n"
        "def f():\n    import bench\n    from benchmarks import x\n"
    )
    assert bench_imports({"m": tmp_path / "m.py"}) == [
        f"{tmp_path}/m.py:3: m imports bench.report",
        f"{tmp_path}/m.py:5: m imports bench",
    ]
