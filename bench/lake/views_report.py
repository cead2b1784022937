"""The view refresh suite's part of the benchmark report: ``views.json``
(``bench.lake.views --suite``), a row per case (delete/update, append, a fixed change per source
size, one row): incremental and full refresh times, phases, Spark jobs, Delta commits. It holds
the file's type (:class:`Views`, which :mod:`bench.lake.views_suite` fills and writes as
``views.json``), its reader, its table and its plot of refresh time against source size."""

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
    StatedGoal,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "views.json"

# The fields the report does not show are read with Node.unshown: optional, as the report's
# summary of the file (and a test's file) lacks them.


@dataclass(frozen=True, kw_only=True)
class Refreshed:
    """A case's fields before its load average (an item of ``cases``, in the order written):
    the case and its source rows, the incremental refresh (its seconds, phases, Spark jobs per
    phase, Delta commits, change, groups, its log line), then the full refresh of the same
    source version."""

    case: str
    rows: int
    incremental_s: float
    phases: dict[str, float]  # phase → seconds
    jobs: dict[str, int]  # phase → Spark jobs
    total_jobs: int | None = None  # the jobs' sum, as written; the report sums ``jobs``
    commits: int
    change_rows: int
    groups_touched: int | None = None
    groups_recomputed: int | None = None
    line: str | None = None
    full_s: float | None  # None: no full refresh (one_row)
    ratio: float | None  # full over incremental
    verify_differences: int | None  # groups differing from a recomputation; None: not verified


@dataclass(frozen=True, kw_only=True)
class ViewCase(Refreshed):
    """A case as written (``append``, and any case but the two below)."""

    load_average: tuple[float, float]  # start, end


@dataclass(frozen=True, kw_only=True)
class OneRow(Refreshed):
    """The ``one_row`` case: its median refresh, and every repeat's seconds."""

    all_s: list[float] | None = None
    load_average: tuple[float, float]


@dataclass(frozen=True)
class Changes:
    """The rows each of the change's three commits changed."""

    inserted: int
    updated: int
    deleted: int


@dataclass(frozen=True, kw_only=True)
class DeleteUpdate(ViewCase):
    """The ``delete_update`` case, and its change."""

    changes: Changes | None = None


Case = ViewCase | OneRow


@dataclass(frozen=True, kw_only=True)
class Views:
    """``views.json``, as ``bench.lake.views_suite`` writes it."""

    cases: list[Case]
    goals: list[StatedGoal]
    quick: bool | None = None
    aggregates: list[str] | None = None  # the view's, as kind(column)
    campaigns: int | None = None
    days: int | None = None
    cores: int | None = None
    master: str | None = None  # Spark's
    started_at: str | None = None
    seconds: float | None = None  # the whole suite's


CASES = ("delete_update", "append", "fixed_change", "one_row")


def whole(node: Node) -> int:
    return int(node.num())


def read_case(c: Node) -> Case:
    name = c.text("case")
    if name not in CASES:
        raise MalformedReport(c.file, f"{c.where}.case", f"expected one of {CASES}, got {name!r}")
    differences = c.num("verify_differences", optional=True)
    fields = dict(
        case=name,
        rows=int(c.num("rows")),
        incremental_s=c.num("incremental_s"),
        phases=c.mapping("phases"),
        jobs={phase: round(n) for phase, n in c.mapping("jobs").items()},
        total_jobs=c.unshown("total_jobs", whole),
        commits=int(c.num("commits")),
        change_rows=int(c.num("change_rows")),
        groups_touched=c.unshown("groups_touched", whole),
        groups_recomputed=c.unshown("groups_recomputed", whole),
        line=c.unshown("line", Node.text_value),
        full_s=c.num("full_s", optional=True),
        ratio=c.num("ratio", optional=True),
        verify_differences=None if differences is None else int(differences),
        load_average=load_average(c),
    )
    if name == "one_row":
        return OneRow(**fields, all_s=c.unshown("all_s", lambda n: [s.num() for s in n.items()]))
    if name == "delete_update":
        return DeleteUpdate(**fields, changes=c.unshown("changes", read_changes))
    return ViewCase(**fields)


def read_changes(node: Node) -> Changes:
    return Changes(*(int(node.num(k)) for k in ("inserted", "updated", "deleted")))


def read_views(node: Node) -> tuple[Views, list[Goal]]:
    views = Views(
        cases=[read_case(c) for c in node.items("cases")],
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        quick=node.unshown("quick", Node.flag_value),
        aggregates=node.unshown("aggregates", lambda n: [a.text_value() for a in n.items()]),
        campaigns=node.unshown("campaigns", whole),
        days=node.unshown("days", whole),
        cores=node.unshown("cores", whole),
        master=node.unshown("master", Node.text_value),
        started_at=node.unshown("started_at", Node.text_value),
        seconds=node.unshown("seconds", Node.num),
    )
    return views, [Goal.of("views", g) for g in views.goals]


def views_section(views: Views | None) -> str:
    out = ["## View refresh (`views.json`)", ""]
    if views is None:
        return "\n".join(out + [NOT_RUN.format(file="views.json")])
    cases = views.cases
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
                    fmt(sum(c.jobs.values()), digits=0),
                    str(c.commits),
                    "–" if c.verify_differences is None else str(c.verify_differences),
                    load_text(c.load_average),
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


def _phase_cell(case: Case, phase: str) -> str:
    seconds = fmt(case.phases.get(phase), digits=2)
    jobs = case.jobs.get(phase)
    return seconds if jobs is None else f"{seconds} ({jobs:.0f})"


CASE_NAMES = {
    "delete_update": "delete/update",
    "append": "append",
    "fixed_change": "fixed change",
    "one_row": "one row",
}


def plot_views(views: Views, path: Path) -> None:
    """Refresh time against source rows, incremental (solid) and full (dashed), per case."""
    cases = views.cases
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


def loads(views: Views | None) -> list[Load]:
    """Each case's load average, for the machine table."""
    return [
        (f"views `{c.case}` {fmt(c.rows, digits=0)} rows", c.load_average)
        for c in (views.cases if views else [])
    ]


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
            missing=lambda views: None if views.cases else "no cases in views.json",
        ),
    ),
    loads=loads,
)
