"""The view refresh suite's part of the benchmark report: ``views.json``
(``bench.lake.views --suite``), a row per case (delete/update, append, a fixed change per source
size, one row): incremental and full refresh times, phases, Spark jobs, Delta commits; its table
and its plot of refresh time against source size."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.report_kit import (
    NOT_RUN,
    Goal,
    Load,
    MalformedReport,
    Node,
    Plot,
    Section,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "views.json"


@dataclass(frozen=True)
class ViewCase:
    case: str
    rows: int
    change_rows: int
    incremental_s: float
    full_s: float | None
    ratio: float | None
    phases: dict[str, float]
    jobs: dict[str, float]
    commits: int
    verify_differences: int | None
    load: tuple[float, float]

    @property
    def total_jobs(self) -> float:
        return sum(self.jobs.values())


CASES = ("delete_update", "append", "fixed_change", "one_row")


def read_views(node: Node) -> tuple[list[ViewCase], list[Goal]]:
    cases = []
    for c in node.items("cases"):
        name = c.text("case")
        if name not in CASES:
            raise MalformedReport(
                c.file, f"{c.where}.case", f"expected one of {CASES}, got {name!r}"
            )
        differences = c.num("verify_differences", optional=True)
        cases.append(
            ViewCase(
                name,
                int(c.num("rows")),
                int(c.num("change_rows")),
                c.num("incremental_s"),
                c.num("full_s", optional=True),
                c.num("ratio", optional=True),
                c.mapping("phases"),
                c.mapping("jobs"),
                int(c.num("commits")),
                None if differences is None else int(differences),
                load_average(c),
            )
        )
    return cases, [Goal.read("views", g) for g in node.items("goals")]


def views_section(cases: list[ViewCase] | None) -> str:
    out = ["## View refresh (`views.json`)", ""]
    if cases is None:
        return "\n".join(out + [NOT_RUN.format(file="views.json")])
    out.append(
        table(
            [
                "case",
                "source rows",
                "change rows",
                "incremental",
                "full",
                "full / incremental",
                "Spark jobs",
                "commits",
                "verify: differing groups",
                "load average",
            ],
            [
                [
                    f"`{c.case}`",
                    fmt(c.rows, digits=0),
                    fmt(c.change_rows, digits=0),
                    fmt(c.incremental_s, " s", 2),
                    fmt(c.full_s, " s", 2),
                    fmt(c.ratio, "×"),
                    fmt(c.total_jobs, digits=0),
                    str(c.commits),
                    "–" if c.verify_differences is None else str(c.verify_differences),
                    load_text(c.load),
                ]
                for c in cases
            ],
        )
    )
    phases = list(dict.fromkeys(p for c in cases for p in c.phases))
    if phases:
        out += [
            "",
            "Where each incremental refresh's time goes (seconds; Spark jobs in brackets):",
            "",
            table(
                ["case", "source rows", *phases],
                [
                    [f"`{c.case}`", fmt(c.rows, digits=0)] + [_phase_cell(c, p) for p in phases]
                    for c in cases
                ],
            ),
        ]
    return "\n".join(out)


def _phase_cell(case: ViewCase, phase: str) -> str:
    seconds = fmt(case.phases.get(phase), digits=2)
    jobs = case.jobs.get(phase)
    return seconds if jobs is None else f"{seconds} ({jobs:.0f})"


CASE_NAMES = {
    "delete_update": "delete/update",
    "append": "append",
    "fixed_change": "fixed change",
    "one_row": "one row",
}


def plot_views(cases: list[ViewCase], path: Path) -> None:
    """Refresh time against source rows, incremental (solid) and full (dashed), per case."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    markers = {"delete_update": "o", "append": "s", "fixed_change": "D", "one_row": "^"}
    colours = {
        "delete_update": "tab:purple",
        "append": "tab:green",
        "fixed_change": "tab:blue",
        "one_row": "tab:red",
    }
    for case in CASES:
        points = sorted((c for c in cases if c.case == case), key=lambda c: c.rows)
        if not points:
            continue
        rows = [c.rows for c in points]
        ax.plot(
            rows,
            [c.incremental_s for c in points],
            marker=markers[case],
            color=colours[case],
            label=f"{CASE_NAMES[case]}: incremental",
        )
        full = [(c.rows, c.full_s) for c in points if c.full_s is not None]
        if full:
            ax.plot(
                *zip(*full),
                marker=markers[case],
                color=colours[case],
                linestyle="--",
                markerfacecolor="none",
                label=f"{CASE_NAMES[case]}: full",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    sizes = sorted({c.rows for c in cases})
    ax.set_xticks(sizes, [f"{n / 1e6:,g}M" if n >= 1e6 else f"{n:,}" for n in sizes])
    ax.xaxis.set_minor_formatter(lambda v, _: "")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g} s")
    ax.yaxis.set_minor_formatter(lambda v, _: f"{v:g} s" if str(v)[0] in "235" else "")
    ax.set_xlabel("source rows (log scale)")
    ax.set_ylabel("refresh time (s, log scale)")
    ax.set_title("View refresh time vs source size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_plot(fig, path)


def loads(cases: list[ViewCase] | None) -> list[Load]:
    """Each case's load average, for the machine table."""
    return [(f"views `{c.case}` {fmt(c.rows, digits=0)} rows", c.load) for c in cases or []]


SECTION = Section(
    "views",
    {FILE: read_views},
    views_section,
    plots=(
        Plot(
            "views",
            "view-refresh.png",
            "View refresh time vs source size",
            FILE,
            plot_views,
            missing=lambda cases: None if cases else "no cases in views.json",
        ),
    ),
    loads=loads,
)
