"""One report of every benchmark: Markdown tables, the goals met or not, and PNG plots.

``make bench`` (and ``make bench-quick``) run each benchmark with ``--out-dir DIR``; each writes
one JSON file there. This module reads whichever of them are present and writes
``OUT/REPORT.md`` and its plots::

    .venv/ops/bin/python -m bench.report DIR --to OUT

It is an assembler: each benchmark's JSON contract, result types, reader, section and plots are
a module of its own (:data:`BENCHMARKS`, in the report's order of sections, each a
:class:`~bench.report_kit.Section`); this module reads their files, gathers their goals into one
table and the load average of their measurements into the machine's, and lays out the sections
and the plots.

Every file carries ``load_average`` ([start, end], ``os.getloadavg()``'s 1-minute figure) and
its goals (``goals``, or bronze's one ``goal``: goal, target, measured, met, bound), and may list
what it could not measure (``errors``), shown under its section. A file that is absent makes its
section say "not run" (a long benchmark's names its target instead); a file that is present but
malformed stops the build with :class:`MalformedReport`, naming the file and the field. The
tables build in either environment; the plots need the ops environment's matplotlib.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adlake.helpformat import HelpFormatter
from bench.lake import bronze_report, maintenance_report, scale_report, views_report
from bench.ops import (
    beside_report,
    boundary_report,
    latency_report,
    recovery_report,
    supervisor_report,
)
from bench.report_kit import (
    Goal,
    Load,
    MalformedReport as MalformedReport,
    Node,
    Section,
    load_text,
    summary,
    table,
)

# Each benchmark's part, in the report's order of sections.
BENCHMARKS: tuple[Section, ...] = (
    views_report.SECTION,
    bronze_report.SECTION,
    scale_report.SECTION,
    latency_report.SECTION,
    beside_report.SECTION,
    maintenance_report.SECTION,
    supervisor_report.SECTION,
    boundary_report.SECTION,
    recovery_report.SECTION,
)
# The report's other orders, by benchmark name; those not named follow in BENCHMARKS' order.
# The files (the list of them and the goals table) put the apps' latency before gold at scale;
# the machine table lists the measurements in the order make bench runs them; the apps' plots
# come first.
FILE_ORDER = ("views", "bronze", "ops")
LOAD_ORDER = ("ops", "bronze", "views")
PLOT_ORDER = ("ops",)
# Every plot's key and PNG file.
ALL_PLOTS = {plot.key: plot.file for b in BENCHMARKS for plot in b.plots}


def in_order(names: Sequence[str]) -> list[Section]:
    """:data:`BENCHMARKS` with those named first, in that order, and the others after them."""
    return sorted(BENCHMARKS, key=lambda b: names.index(b.name) if b.name in names else len(names))


def input_files() -> list[str]:
    """Every benchmark's JSON file, in :data:`FILE_ORDER`."""
    return [file for b in in_order(FILE_ORDER) for file in b.files]


@dataclass
class Inputs:
    """What DIR holds: each benchmark JSON's result, and its goals."""

    directory: Path
    results: dict[str, Any] = field(default_factory=dict)  # each file's result; absent: no file
    goals: list[Goal] = field(default_factory=list)
    extras: dict[str, dict] = field(default_factory=dict)  # each file's raw JSON (machine, command)
    modified: dict[str, float] = field(default_factory=dict)  # each file's mtime
    read: dict[str, set] = field(default_factory=dict)  # each file's paths the readers read

    def of(self, benchmark: Section) -> list[Any]:
        """A benchmark's results, one per file of it, None where the file is absent."""
        return [self.results.get(file) for file in benchmark.files]


def _load_json(path: Path, trail: set | None = None) -> Node:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise MalformedReport(
            path.name, "", f"not JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        ) from None
    if not isinstance(value, dict):
        raise MalformedReport(path.name, "", f"expected a JSON object, got {type(value).__name__}")
    return Node(path.name, "", value, trail=trail)


def read_inputs(directory: Path) -> Inputs:
    """Every benchmark JSON present in ``directory``, checked against the contract."""
    inputs = Inputs(directory)
    for benchmark in in_order(FILE_ORDER):
        for name, reader in benchmark.read.items():
            path = directory / name
            if not path.is_file():
                continue
            inputs.read[name] = set()
            node = _load_json(path, inputs.read[name])
            inputs.extras[name] = node.value
            inputs.modified[name] = path.stat().st_mtime
            inputs.results[name], goals = reader(node)
            inputs.goals.extend(goals)
    return inputs


def goals_section(goals: list[Goal]) -> str:
    out = ["## Goals", ""]
    if not goals:
        return "\n".join(out + ["No goals: no benchmark JSON with goals in the directory."])
    return "\n".join(
        out
        + [
            table(
                ["benchmark", "goal", "target", "measured", "met", "what bounds it"],
                [
                    [
                        g.benchmark,
                        g.goal,
                        g.target,
                        g.measured,
                        "yes" if g.met else "**no**",
                        g.bound or "not stated",
                    ]
                    for g in goals
                ],
            )
        ]
    )


def machine_section(inputs: Inputs, command: str | None) -> str:
    cores = {str(extra.get("cores")) for extra in inputs.extras.values() if "cores" in extra}
    loads: list[Load] = [load for b in in_order(LOAD_ORDER) for load in b.loads(*inputs.of(b))]
    when = [datetime.fromtimestamp(t, UTC) for t in inputs.modified.values()]
    lines = [
        "## Machine and run",
        "",
        f"* Cores: {', '.join(sorted(cores)) if cores else os.cpu_count()} "
        f"({platform.machine()}, {platform.system()} {platform.release()}).",
        "* Benchmarks written: "
        + (f"{min(when):%Y-%m-%d %H:%M} to {max(when):%Y-%m-%d %H:%M} UTC" if when else "none")
        + f"; report built {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        f"* Command: `{command}`." if command else "* Command: not recorded.",
    ]
    if loads:
        lines += [
            "",
            "Load average (1 minute) at each measurement's start and end; the machine "
            "has other work on it when these exceed the core count:",
            "",
            table(
                ["measurement", "load average"], [[name, load_text(load)] for name, load in loads]
            ),
        ]
    return "\n".join(lines)


def failures(inputs: Inputs, name: str) -> str:
    """What a benchmark says failed (its JSON's ``errors``: the parts it could not measure)."""
    errors = inputs.extras.get(name, {}).get("errors") or []
    if not isinstance(errors, list):
        raise MalformedReport(name, "errors", f"expected a list, got {errors!r:.60}")
    return (
        "".join(["\n\n**Failed** (not measured):\n"] + [f"\n* {e}" for e in errors])
        if errors
        else ""
    )


def render(inputs: Inputs, plots: Mapping[str, str], out: Path, command: str | None) -> str:
    """The whole REPORT.md; ``plots`` maps a plot's key (:data:`ALL_PLOTS`) to its file name, or to
    why it was not drawn."""
    parts = [
        "# Benchmark report",
        "",
        "The benchmarks of one run: view refresh, bronze ingest, the operational apps' "
        "latency, gold at scale. Built by `python -m bench.report` from the JSON each benchmark "
        "wrote: "
        + (", ".join(f"[{name}]({name})" for name in inputs.extras) or "none")
        + ", beside this report.",
        *(
            [
                "",
                "**A quick run** (`--quick`, a smoke test of the report: short and small, "
                "on whatever else the machine was doing); its figures are not ones to quote.",
            ]
            if any(extra.get("quick") for extra in inputs.extras.values())
            else []
        ),
        "",
        machine_section(inputs, command),
        "",
        goals_section(inputs.goals),
    ]
    for benchmark in BENCHMARKS:
        section = benchmark.markdown(*inputs.of(benchmark))
        parts += ["", section + "".join(failures(inputs, name) for name in benchmark.files)]
        if benchmark.note and (out / benchmark.note[0]).is_file():
            note, what = benchmark.note
            parts += ["", f"{what}: [{note}]({note})."]
    parts += ["", "## Plots", ""]
    for plot in (plot for b in in_order(PLOT_ORDER) for plot in b.plots):
        drawn, title = plots.get(plot.key, "not drawn"), plot.title
        if drawn.endswith(".png"):
            parts += [f"### {title}", "", f"![{title}]({drawn})", ""]
        elif plot.target:  # a long benchmark, not in every run
            parts += [f"### {title}", "", f"Not in this run ({drawn}): `{plot.target}`.", ""]
        else:
            parts += [f"### {title}", "", f"Not drawn: {drawn}.", ""]
    return "\n".join(parts).rstrip() + "\n"


def draw_plots(inputs: Inputs, out: Path) -> dict[str, str]:
    """Each plot the inputs allow, into ``out``: its key -> file name, or why it was not drawn."""
    drawn = {}
    for plot in (plot for b in in_order(PLOT_ORDER) for plot in b.plots):
        result = inputs.results.get(plot.source)
        missing = f"no {plot.source}" if result is None else plot.missing(result)
        if missing:
            (out / plot.file).unlink(missing_ok=True)  # an earlier run's plot is not this one's
            drawn[plot.key] = missing
        else:
            plot.draw(result, out / plot.file)
            drawn[plot.key] = plot.file
    return drawn


def build(directory: Path, out: Path, command: str | None = None) -> Path:
    """Read ``directory``'s benchmark JSONs, write ``out/REPORT.md`` and the plots, with each
    JSON's summary (:func:`~bench.report_kit.summary`: what the report read of it, from which it
    builds the same report again); the report's path. Raises :class:`MalformedReport` before
    writing anything if a JSON is malformed."""
    inputs = read_inputs(directory)
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != directory.resolve():  # the figures travel with the report (docs/bench/)
        for name, raw in inputs.extras.items():
            (out / name).write_text(json.dumps(summary(raw, inputs.read[name]), indent=1) + "\n")
            os.utime(out / name, (inputs.modified[name], inputs.modified[name]))
    plots = draw_plots(inputs, out)
    report = out / "REPORT.md"
    report.write_text(render(inputs, plots, out, command))
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.report",
        formatter_class=HelpFormatter,
        description="Build the benchmark report (REPORT.md and PNG plots) from the JSON files "
        "the benchmarks wrote with --out-dir: " + ", ".join(input_files()) + ".",
    )
    parser.add_argument("directory", type=Path, help="where the benchmarks wrote their JSON")
    parser.add_argument(
        "--to",
        type=Path,
        default=None,
        help="where REPORT.md and the plots go (default: the same directory)",
    )
    parser.add_argument(
        "--command",
        default=None,
        help="the command that ran the benchmarks, as the report should name it",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.directory.is_dir():
        print(f"bench.report: {args.directory} is not a directory", file=sys.stderr)
        return 2
    try:
        report = build(args.directory, args.to or args.directory, args.command)
    except MalformedReport as e:
        print(f"bench.report: malformed benchmark JSON in {args.directory}: {e}", file=sys.stderr)
        return 1
    print(f"bench.report: wrote {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
