"""A benchmark added to the report in one module and one entry of ``bench.report.BENCHMARKS``:
its JSON read and checked, its section, its goals, its load and its plot in ``REPORT.md``, beside
the real benchmarks' and with nothing else changed (no JVM, no broker)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench import report as bench_report
from bench.report_kit import NOT_RUN, Goal, Node, Plot, Section, fmt, load_average, table

# The report's own tests' JSON of the quick run's benchmarks (views, bronze, ops).
from tests.bench.ops.test_report import goal, section, synthetic

# -- the toy benchmark's module: its result, reader, section, plot and entry -----------------------

TOY_FILE = "toy.json"


@dataclass(frozen=True)
class Toy:
    """``toy.json``: widgets polished a second, and the load around the measurement."""

    widgets_per_s: float
    load: tuple[float, float]


def read_toy(node: Node) -> tuple[Toy, list[Goal]]:
    toy = Toy(node.num("widgets_per_s"), load_average(node))
    return toy, [Goal.read("toy", g) for g in node.items("goals")]


def toy_section(toy: Toy | None) -> str:
    out = ["## Toy widgets (`toy.json`)", ""]
    if toy is None:
        return "\n".join(out + [NOT_RUN.format(file=TOY_FILE)])
    return "\n".join(out + [table(["widgets polished"], [[fmt(toy.widgets_per_s, "/s", 0)]])])


def draw_toy(toy: Toy, path: Path) -> None:
    path.write_bytes(b"\x89PNG toy")  # a stand-in: this environment has no matplotlib


TOY = Section(
    "toy",
    {TOY_FILE: read_toy},
    toy_section,
    plots=(Plot("toy", "toy-widgets.png", "Toy widgets polished", TOY_FILE, draw_toy),),
    loads=lambda toy: [("toy widgets", toy.load)] if toy else [],
)

# -- the tests ---------------------------------------------------------------------------------------


@pytest.fixture()
def with_toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark list with the toy appended; the real benchmarks' plots are left out, as the
    lake environment has no matplotlib to draw them (tests/bench/ops/test_report.py does)."""
    real = tuple(dataclasses.replace(b, plots=()) for b in bench_report.BENCHMARKS)
    monkeypatch.setattr(bench_report, "BENCHMARKS", (*real, TOY))


def write_inputs(directory: Path, toy: dict | None) -> Path:
    directory.mkdir(parents=True)
    files = synthetic() | ({TOY_FILE: toy} if toy is not None else {})
    for name, value in files.items():
        (directory / name).write_text(json.dumps(value))
    return directory


TOY_JSON = {
    "widgets_per_s": 1234.4,
    "load_average": [0.5, 0.75],
    "goals": [goal("toy widgets ≥ 1,000/s", True)],
}


def test_an_added_benchmark_has_its_section_goals_load_and_plot(tmp_path, with_toy):
    report = bench_report.build(write_inputs(tmp_path / "in", TOY_JSON), tmp_path / "out")
    text = report.read_text()

    toy = section(text, "Toy widgets")
    assert "| widgets polished |\n|---|\n| 1,234/s |" in toy
    goals = section(text, "Goals")
    assert "| toy | toy widgets ≥ 1,000/s | ≤ 1.5 s | 1.2 s | yes | Delta's MERGE commit |" in goals
    assert "| views | 1-row refresh |" in goals  # the real benchmarks' goals still there
    assert "| toy widgets | 0.5 → 0.8 |" in section(text, "Machine and run")
    assert "[toy.json](toy.json)" in text
    assert json.loads((tmp_path / "out" / TOY_FILE).read_text()) == TOY_JSON
    assert "### Toy widgets polished\n\n![Toy widgets polished](toy-widgets.png)" in text
    assert (tmp_path / "out" / "toy-widgets.png").read_bytes() == b"\x89PNG toy"
    # its section after the real ones, which keep their order
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[2:4] == [
        "## View refresh (`views.json`)",
        "## Bronze and silver (`bronze.json`)",
    ]
    assert headings[-2:] == ["## Toy widgets (`toy.json`)", "## Plots"]


def test_an_added_benchmark_absent_is_not_run_and_malformed_names_its_field(tmp_path, with_toy):
    text = bench_report.build(write_inputs(tmp_path / "in", None), tmp_path / "out").read_text()

    assert "Not run: no `toy.json`" in section(text, "Toy widgets")
    assert "Not drawn: no toy.json." in text
    assert "| toy |" not in section(text, "Goals")

    (tmp_path / "in" / TOY_FILE).write_text(json.dumps({**TOY_JSON, "widgets_per_s": "many"}))
    with pytest.raises(bench_report.MalformedReport, match="^toy.json: widgets_per_s: expected"):
        bench_report.build(tmp_path / "in", tmp_path / "out")
