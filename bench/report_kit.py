"""The benchmark report's shared parts: reading a benchmark's JSON field by field (:class:`Node`,
:class:`MalformedReport`), its goals (:class:`Goal`), the figures' formats, the plots' axes, and
what a benchmark gives the report (:class:`Section`, :class:`Plot`).

Each benchmark's part of the report is a module of its own holding its result types, its reader,
its Markdown section and its plots (``bench/lake/*_report.py``, ``bench/ops/*_report.py``);
:mod:`bench.report` assembles them into one ``REPORT.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class MalformedReport(ValueError):
    """A benchmark's JSON that is not what the contract says: which file, which field, why.

    >>> str(MalformedReport("ops.json", "runs[0].whole.p99", "missing"))
    'ops.json: runs[0].whole.p99: missing'
    """

    def __init__(self, file: str, where: str, problem: str):
        self.file, self.where, self.problem = file, where, problem
        super().__init__(f"{file}: {where}: {problem}" if where else f"{file}: {problem}")


# -- reading: the contract's fields, checked as they are read --------------------------------------


@dataclass(frozen=True)
class Node:
    """A JSON value and where it sits (file and path), so that a missing or mistyped field says
    exactly which one.

    >>> Node("bronze.json", "", {"records": 10}).num("records")
    10.0
    >>> Node("bronze.json", "", {"records": "ten"}).num("records")
    Traceback (most recent call last):
    ...
    bench.report_kit.MalformedReport: bronze.json: records: expected a number, got 'ten'
    """

    file: str
    where: str
    value: Any
    # the keys from the file's root to here, and the set every read adds its path to (None: not
    # recorded): what the report read of the file (:func:`summary`)
    path: tuple = ()
    trail: set | None = field(default=None, compare=False, repr=False)

    def _at(self, key: str | int, where: str, value: Any) -> Node:
        path = (*self.path, key)
        if self.trail is not None:
            self.trail.add(path)
        return Node(self.file, where, value, path, self.trail)

    def _child(self, key: str | int) -> Node:
        where = (
            f"{self.where}[{key}]"
            if isinstance(key, int)
            else (f"{self.where}.{key}" if self.where else key)
        )
        if isinstance(key, int):
            return self._at(key, where, self.value[key])
        if not isinstance(self.value, Mapping):
            raise MalformedReport(
                self.file, self.where, f"expected an object, got {self.value!r:.60}"
            )
        if key not in self.value:
            raise MalformedReport(self.file, where, "missing")
        return self._at(key, where, self.value[key])

    def _fail(self, expected: str) -> MalformedReport:
        return MalformedReport(
            self.file, self.where, f"expected {expected}, got {self.value!r:.60}"
        )

    def get(self, key: str) -> Node:
        return self._child(key)

    def has(self, key: str) -> bool:
        present = isinstance(self.value, Mapping) and self.value.get(key) is not None
        if present and self.trail is not None:
            self.trail.add((*self.path, key))
        return present

    def num(self, key: str | None = None, optional: bool = False) -> float | None:
        node = self._child(key) if key is not None else self
        if node.value is None and optional:
            return None
        if (
            isinstance(node.value, bool)
            or not isinstance(node.value, (int, float))
            or math.isnan(node.value)
        ):
            raise node._fail("a number" + (" or null" if optional else ""))
        return float(node.value)

    def text(self, key: str) -> str:
        return self._child(key).text_value()

    def text_value(self) -> str:
        if not isinstance(self.value, str):
            raise self._fail("a string")
        return self.value

    def flag(self, key: str) -> bool:
        return self._child(key).flag_value()

    def flag_value(self) -> bool:
        if not isinstance(self.value, bool):
            raise self._fail("true or false")
        return self.value

    def items(self, key: str | None = None) -> list[Node]:
        node = self._child(key) if key is not None else self
        if not isinstance(node.value, list):
            raise node._fail("a list")
        return [node._child(i) for i in range(len(node.value))]

    def numbers(self, key: str, length: int | None = None) -> list[float]:
        values = [n.num() for n in self.items(key)]
        if length is not None and len(values) != length:
            raise self._child(key)._fail(f"{length} numbers")
        return values

    def mapping(self, key: str | None = None) -> dict[str, float]:
        """An object of numbers (phases, durations), in its order; null values left out."""
        node = self._child(key) if key is not None else self
        if not isinstance(node.value, Mapping):
            raise node._fail("an object")
        numbers = {k: node.num(k, optional=True) for k in node.value}
        return {k: v for k, v in numbers.items() if v is not None}

    def unshown(self, key: str, read: Callable[[Node], Any]) -> Any:
        """``read`` of the field ``key``, a field that a benchmark writes and its result type
        holds but the report does not show: checked as any other, but left out of the summary
        (:func:`summary`, none of its reads recorded). None where it is absent or null, as in a
        summary or a file from before the field.

        >>> node = Node("x.json", "", {"a": {"b": 1}}, trail=set())
        >>> node.unshown("a", lambda a: a.num("b")), node.unshown("c", Node.text_value)
        (1.0, None)
        >>> node.trail
        set()
        """
        unrecorded = Node(self.file, self.where, self.value, self.path)
        return read(unrecorded.get(key)) if unrecorded.has(key) else None


def summary(value: Any, trail: set[tuple]) -> Any:
    """A benchmark's JSON cut to what the report read of it (``trail``: the paths a :class:`Node`
    recorded): the fields read, whole where nothing under them was read field by field, every
    item of a list read, and the top level's plain values (cores, quick, the command) and
    ``errors``, which the report reads as they are; not the fields read by
    :meth:`Node.unshown`. Building the report from the summary gives the same report, so a
    committed report keeps this instead of the whole run output.

    >>> raw = {"cores": 2, "runs": [{"p99": 5, "batches": [1, 2]}], "workdir": {"a": 1}}
    >>> summary(raw, {("runs",), ("runs", 0), ("runs", 0, "p99")})
    {'cores': 2, 'runs': [{'p99': 5}]}
    """
    trie: dict = {}
    for path in trail:
        node = trie
        for key in path:
            node = node.setdefault(key, {})

    def cut(value: Any, read: dict, top: bool = False) -> Any:
        if not read:
            return value
        if isinstance(value, Mapping):
            return {
                k: cut(v, read.get(k, {}))
                for k, v in value.items()
                if k in read or (top and (k == "errors" or not isinstance(v, (Mapping, list))))
            }
        if isinstance(value, list):
            return [cut(v, read.get(i, {})) for i, v in enumerate(value)]
        return value

    return cut(value, trie, top=True)


@dataclass(frozen=True)
class StatedGoal:
    """A goal as a benchmark's file states it (an item of its ``goals``): what it measures, the
    target, the figure measured, whether it was met, and what bounds it."""

    goal: str
    target: str
    measured: str
    met: bool
    bound: str

    @classmethod
    def read(cls, node: Node) -> StatedGoal:
        return cls(
            node.text("goal"),
            node.text("target"),
            node.text("measured"),
            node.flag("met"),
            node.text("bound"),
        )


@dataclass(frozen=True, kw_only=True)
class Goal(StatedGoal):
    """A goal in the report's table: a stated goal and the benchmark that states it."""

    benchmark: str

    @classmethod
    def read(cls, benchmark: str, node: Node) -> Goal:
        return cls.of(benchmark, StatedGoal.read(node))

    @classmethod
    def of(cls, benchmark: str, stated: StatedGoal) -> Goal:
        return cls(**asdict(stated), benchmark=benchmark)


QUANTILES = 1001  # latency at quantile 0.000, 0.001, ..., 1.000


def load_average(node: Node) -> tuple[float, float]:
    start, end = node.numbers("load_average", length=2)
    return start, end


# -- writing: Markdown -----------------------------------------------------------------------------


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    """A figure as the report prints it: thousands separated, '–' for a missing one.

    >>> fmt(52073.4, "/s", 0), fmt(3.94, " s"), fmt(None, " ms"), fmt(0.123, " s", 2)
    ('52,073/s', '3.9 s', '–', '0.12 s')
    """
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{unit}"


def ms(value: float | None) -> str:
    """A latency: whole milliseconds from 10 ms up, one decimal below.

    >>> ms(1413.2), ms(3.25), ms(None)
    ('1,413 ms', '3.2 ms', '–')
    """
    return fmt(value, " ms", 0 if value is None or value >= 10 else 1)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table.

    >>> print(table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def load_text(load: tuple[float, float]) -> str:
    return f"{load[0]:.1f} → {load[1]:.1f}"


NOT_RUN = "Not run: no `{file}` in the benchmark directory."


# -- plots -----------------------------------------------------------------------------------------


def pyplot():
    """matplotlib's pyplot on its Agg backend (no display), imported only when a plot is drawn:
    the tables build in either environment, the plots need the ops environment's matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cdf_axes(ax) -> None:
    """A latency CDF's axes: latency on a log x axis, the fraction at or below on a logit y axis,
    which spreads the tail (0.5, 0.9, 0.99 and 0.999 stand equally apart; quantiles 0 and 1, the
    min and max, lie at infinity on it: the legends give the max)."""
    ax.set_yscale("logit")
    ax.set_ylim(0.005, 0.9995)
    ax.set_yticks([0.01, 0.1, 0.5, 0.9, 0.99, 0.999])
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_minor_formatter(lambda v, _: "")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:,g}")
    ax.set_xlabel("end-to-end latency (ms, log scale)")
    ax.set_ylabel("fraction of records at or below (logit scale)")


# -- what a benchmark gives the report -------------------------------------------------------------

# A measurement's load average at its start and end, named for the machine table.
Load = tuple[str, tuple[float, float]]
# A JSON file's reader: the benchmark's result and the goals the file states.
Reader = Callable[[Node], tuple[Any, list[Goal]]]


def no_loads(*results: Any) -> list[Load]:
    """The loads of a benchmark whose measurements the machine table leaves out: none."""
    return []


@dataclass(frozen=True)
class Plot:
    """One plot of a benchmark: its key, PNG file and title in the report, the JSON file whose
    result it draws, and how.

    ``draw(result, path)`` writes the PNG; ``missing(result)`` says why a result allows no plot
    (None: it does). ``target``: the make target of a long benchmark that not every run has; its
    plot, absent, names it instead of saying "not drawn".
    """

    key: str
    file: str
    title: str
    source: str
    draw: Callable[[Any, Path], None]
    missing: Callable[[Any], str | None] = lambda result: None
    target: str | None = None


@dataclass(frozen=True)
class Section:
    """One benchmark's part of the report: the JSON it reads, its Markdown section, its plots and
    the load average of its measurements.

    ``read`` maps each JSON file of the benchmark (most have one) to its reader, in the order
    ``markdown`` and ``loads`` take their results: one argument per file, None where the file is
    absent. ``note``: a Markdown file a benchmark may leave beside the report and what it tells,
    linked after the section when it is there.
    """

    name: str
    read: Mapping[str, Reader]
    markdown: Callable[..., str]
    plots: tuple[Plot, ...] = ()
    loads: Callable[..., list[Load]] = no_loads
    note: tuple[str, str] | None = None

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.read)
