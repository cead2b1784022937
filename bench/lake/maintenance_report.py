"""Table maintenance's part of the benchmark report: ``maintenance.json``
(``bench.lake.maintenance``), the lake's files, bytes and read times after 200 hourly runs'
writes, without and with one ``lake_maintenance`` run, and gold clustered on its key. It holds
the file's type (:class:`Maintenance`, which the benchmark fills and writes as
``maintenance.json``), its reader, its tables and its plot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.report_kit import Goal, Node, Plot, Section, StatedGoal, fmt, pyplot, table

FILE = "maintenance.json"

# The fields the report does not show are read with Node.unshown: optional, as the report's
# summary of the file (and a test's file) lacks them.


@dataclass(frozen=True, kw_only=True)
class GoldFiles:
    """Files per day-partition of the gold table, its latest version."""

    partitions: int | None = None
    mean: float
    max: int


@dataclass(frozen=True, kw_only=True)
class Disk:
    """Bytes of the written tables together: live (their latest versions) and on disk (every
    data file)."""

    live_bytes: int
    disk_bytes: int
    disk_files: int | None = None
    ratio: float | None  # on disk over live; None: nothing live


@dataclass(frozen=True)
class MaintenanceState:
    """The lake after some hourly runs (``maintenance.json``'s ``first``, ``without``,
    ``after``); the read and the refresh are medians."""

    gold_files: GoldFiles
    disk: Disk
    gold_read_s: float
    view_refresh_s: float
    load_average: float  # the 1-minute load average when measured


@dataclass(frozen=True)
class TableMaintenance:
    """What the maintenance run did to one table (an item of ``maintenance``)."""

    table: str
    detail: str
    seconds: float


@dataclass(frozen=True)
class PointRead:
    """One key's read over every day on one layout of gold: its files, those whose statistics
    admit the key (the files the read opens), the read's median time."""

    files: int
    files_opened: int
    read_s: float


@dataclass(frozen=True)
class Zordered(PointRead):
    """The point read after ``OPTIMIZE … ZORDER BY``, and that command's time."""

    optimize_s: float


@dataclass(frozen=True, kw_only=True)
class Clustering:
    """Gold clustered on its key: the key, the page read, and the point read on each layout."""

    key: str
    page: str | None = None
    files_per_day: int  # the spread layout's files a day
    max_file_bytes: int  # ZORDER's file size
    one_file_a_day: PointRead  # as maintenance leaves gold
    spread: PointRead  # each day in files_per_day files, unclustered
    zordered: Zordered


@dataclass(frozen=True, kw_only=True)
class Maintenance:
    """``maintenance.json``, as ``bench.lake.maintenance`` writes it."""

    hours: int
    rows_per_day: int | None = None
    clicks_per_day: int
    tables: list[str] | None = None
    first: MaintenanceState  # after the first hour
    without: MaintenanceState  # after every hour, no maintenance
    after: MaintenanceState  # then after one maintenance run
    maintenance_s: float
    maintenance: list[TableMaintenance] | None = None
    goals: list[StatedGoal]
    clustering: Clustering | None = None  # absent in older runs
    cores: int | None = None
    seconds: float | None = None  # the whole benchmark's


def whole(node: Node) -> int:
    return int(node.num())


def read_state(node: Node) -> MaintenanceState:
    files, disk = node.get("gold_files"), node.get("disk")
    return MaintenanceState(
        GoldFiles(
            partitions=files.unshown("partitions", whole),
            mean=files.num("mean"),
            max=int(files.num("max")),
        ),
        Disk(
            live_bytes=int(disk.num("live_bytes")),
            disk_bytes=int(disk.num("disk_bytes")),
            disk_files=disk.unshown("disk_files", whole),
            ratio=disk.num("ratio", optional=True),
        ),
        node.num("gold_read_s"),
        node.num("view_refresh_s"),
        node.num("load_average"),
    )


def read_table(node: Node) -> TableMaintenance:
    return TableMaintenance(node.text("table"), node.text("detail"), node.num("seconds"))


def read_point(node: Node) -> PointRead:
    return PointRead(int(node.num("files")), int(node.num("files_opened")), node.num("read_s"))


def read_clustering(node: Node) -> Clustering:
    z = node.get("zordered")
    return Clustering(
        key=node.text("key"),
        page=node.unshown("page", Node.text_value),
        files_per_day=int(node.num("files_per_day")),
        max_file_bytes=int(node.num("max_file_bytes")),
        one_file_a_day=read_point(node.get("one_file_a_day")),
        spread=read_point(node.get("spread")),
        zordered=Zordered(
            int(z.num("files")), int(z.num("files_opened")), z.num("read_s"), z.num("optimize_s")
        ),
    )


def read_maintenance(node: Node) -> tuple[Maintenance, list[Goal]]:
    maintenance = Maintenance(
        hours=int(node.num("hours")),
        rows_per_day=node.unshown("rows_per_day", whole),
        clicks_per_day=int(node.num("clicks_per_day")),
        tables=node.unshown("tables", lambda n: [t.text_value() for t in n.items()]),
        first=read_state(node.get("first")),
        without=read_state(node.get("without")),
        after=read_state(node.get("after")),
        maintenance_s=node.num("maintenance_s"),
        maintenance=node.unshown("maintenance", lambda n: [read_table(t) for t in n.items()]),
        goals=[StatedGoal.read(g) for g in node.items("goals")],
        clustering=read_clustering(node.get("clustering")) if node.has("clustering") else None,
        cores=node.unshown("cores", whole),
        seconds=node.unshown("seconds", Node.num),
    )
    return maintenance, [Goal.of("maintenance", g) for g in maintenance.goals]


def layouts(c: Clustering) -> list[tuple[str, PointRead]]:
    """Gold's layouts as the report names them, each with its point read."""
    return [
        ("one file a day (after maintenance)", c.one_file_a_day),
        (f"each day in about {c.files_per_day} files, unclustered", c.spread),
        (f"ZORDER BY key, files up to {fmt(c.max_file_bytes / 1024, ' KiB')}", c.zordered),
    ]


def maintenance_section(m: Maintenance | None) -> str:
    out = ["## Table maintenance (`maintenance.json`)", ""]
    if m is None:
        return "\n".join(out + [f"Not in this run: `make bench-maintenance` writes `{FILE}`."])
    out += [
        f"{m.hours} hourly runs' writes on page clicks ({fmt(m.clicks_per_day, digits=0)} a day): "
        "the hour appended to silver, gold's `page_traffic` hour rebuilt, the view "
        "`page_clicks_hourly` refreshed; then one `lake_maintenance` run "
        f"({fmt(m.maintenance_s, ' s')}, retention 0: the simulated days pass in minutes). "
        "Reads are medians; bytes are the three tables together.",
        "",
        table(
            [
                "after",
                "files per gold day (mean, max)",
                "live data",
                "on disk",
                "disk / live",
                "gold read",
                "view refresh",
                "load average",
            ],
            [
                [
                    label,
                    f"{fmt(st.gold_files.mean, digits=1)}, {fmt(st.gold_files.max, digits=0)}",
                    fmt(st.disk.live_bytes / 1e6, " MB"),
                    fmt(st.disk.disk_bytes / 1e6, " MB"),
                    fmt(st.disk.ratio, "×", 2),
                    fmt(st.gold_read_s, " s", 2),
                    fmt(st.view_refresh_s, " s", 2),
                    fmt(st.load_average),
                ]
                for label, st in (
                    ("the first hour", m.first),
                    (f"{m.hours} hours, no maintenance", m.without),
                    (f"{m.hours} hours and maintenance", m.after),
                )
            ],
        ),
    ]
    if c := m.clustering:
        out += [
            "",
            f"Clustering gold on its key (`{c.key}`): one key's read over every day, "
            "the files whose min/max statistics admit the key (what Delta's data skipping "
            "opens) and its median time; then each day spread over several files as a day too "
            "big for one is, and `OPTIMIZE … ZORDER BY` at that file size "
            f"({fmt(c.zordered.optimize_s, ' s')}).",
            "",
            table(
                ["gold's layout", "files", "files opened", "read"],
                [
                    [
                        label,
                        fmt(read.files, digits=0),
                        fmt(read.files_opened, digits=0),
                        fmt(read.read_s, " s", 2),
                    ]
                    for label, read in layouts(c)
                ],
            ),
        ]
    return "\n".join(out)


def plot_maintenance(m: Maintenance, path: Path) -> None:
    """A panel per figure, a bar per state (after the first hour, after all of them without and
    with maintenance): files per gold day-partition, bytes on disk over live bytes, the gold
    read's and the view refresh's time."""
    plt = pyplot()
    labels = ["first hour", f"{m.hours} h, none", f"{m.hours} h, maintained"]
    states = [m.first, m.without, m.after]
    colours = ["tab:grey", "tab:red", "tab:green"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.6))
    panels = (
        ("files per gold day-partition (max)", [s.gold_files.max for s in states], 4, "goal ≤ 4"),
        ("bytes on disk / live bytes", [s.disk.ratio or 0 for s in states], 1.5, "goal ≤ 1.5×"),
        ("gold read (s, median)", [s.gold_read_s for s in states], None, None),
        ("view refresh of one hour (s, median)", [s.view_refresh_s for s in states], None, None),
    )
    for ax, (title, values, goal, goal_label) in zip(axes, panels):
        bars = ax.bar(labels, values, color=colours)
        ax.bar_label(bars, labels=[f"{v:,.2f}".rstrip("0").rstrip(".") for v in values])
        if goal is not None:
            ax.axhline(goal, color="black", linestyle=":", label=goal_label)
            ax.legend(fontsize=8, loc="upper left")
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, max([*values, goal or 0]) * 1.25 or 1)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(
        f"Table maintenance after {m.hours} hourly runs ({m.clicks_per_day:,} clicks a day)"
    )
    fig.tight_layout()
    save_plot(fig, path)


SECTION = Section(
    "maintenance",
    {FILE: read_maintenance},
    maintenance_section,
    plots=(
        Plot(
            "maintenance",
            "table-maintenance.png",
            "Files and bytes before and after maintenance",
            FILE,
            plot_maintenance,
            target="make bench-maintenance",
        ),
    ),
)
