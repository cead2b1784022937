"""Table maintenance's part of the benchmark report: ``maintenance.json``
(``bench.lake.maintenance``), the lake's files, bytes and read times after 200 hourly runs'
writes, without and with one ``lake_maintenance`` run, and gold clustered on its key; its tables
and its plot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import save_plot
from bench.report_kit import Goal, Node, Plot, Section, fmt, pyplot, table

FILE = "maintenance.json"


@dataclass(frozen=True)
class MaintenanceState:
    """The lake's files after some hourly runs (``maintenance.json``'s ``first``, ``without``,
    ``after``)."""

    files_mean: float
    files_max: float
    live_bytes: float
    disk_bytes: float
    ratio: float | None
    read_s: float
    refresh_s: float
    load: float


@dataclass(frozen=True)
class Maintenance:
    hours: int
    clicks_per_day: int
    states: dict[str, MaintenanceState]  # "first", "without", "after"
    maintenance_s: float
    # gold's key point read: label → (files, files opened, read s); absent in older runs
    clustering: dict[str, tuple[float, float, float]] | None = None
    clustering_key: str | None = None
    zorder_s: float | None = None


def read_maintenance(node: Node) -> tuple[Maintenance, list[Goal]]:
    states = {}
    for key in ("first", "without", "after"):
        state = node.get(key)
        files, disk = state.get("gold_files"), state.get("disk")
        states[key] = MaintenanceState(
            files.num("mean"),
            files.num("max"),
            disk.num("live_bytes"),
            disk.num("disk_bytes"),
            disk.num("ratio", optional=True),
            state.num("gold_read_s"),
            state.num("view_refresh_s"),
            state.num("load_average"),
        )
    clustering, key, zorder_s = None, None, None
    if node.has("clustering"):
        c = node.get("clustering")
        clustering = {
            label: (c.get(k).num("files"), c.get(k).num("files_opened"), c.get(k).num("read_s"))
            for label, k in (
                ("one file a day (after maintenance)", "one_file_a_day"),
                (f"each day in about {int(c.num('files_per_day'))} files, unclustered", "spread"),
                (
                    f"ZORDER BY key, files up to {fmt(c.num('max_file_bytes') / 1024, ' KiB')}",
                    "zordered",
                ),
            )
        }
        key, zorder_s = c.text("key"), c.get("zordered").num("optimize_s")
    maintenance = Maintenance(
        int(node.num("hours")),
        int(node.num("clicks_per_day")),
        states,
        node.num("maintenance_s"),
        clustering,
        key,
        zorder_s,
    )
    return maintenance, [Goal.read("maintenance", g) for g in node.items("goals")]


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
                    f"{fmt(st.files_mean, digits=1)}, {fmt(st.files_max, digits=0)}",
                    fmt(st.live_bytes / 1e6, " MB"),
                    fmt(st.disk_bytes / 1e6, " MB"),
                    fmt(st.ratio, "×", 2),
                    fmt(st.read_s, " s", 2),
                    fmt(st.refresh_s, " s", 2),
                    fmt(st.load),
                ]
                for label, st in (
                    ("the first hour", m.states["first"]),
                    (f"{m.hours} hours, no maintenance", m.states["without"]),
                    (f"{m.hours} hours and maintenance", m.states["after"]),
                )
            ],
        ),
    ]
    if m.clustering:
        out += [
            "",
            f"Clustering gold on its key (`{m.clustering_key}`): one key's read over every day, "
            "the files whose min/max statistics admit the key (what Delta's data skipping "
            "opens) and its median time; then each day spread over several files as a day too "
            "big for one is, and `OPTIMIZE … ZORDER BY` at that file size "
            f"({fmt(m.zorder_s, ' s')}).",
            "",
            table(
                ["gold's layout", "files", "files opened", "read"],
                [
                    [label, fmt(files, digits=0), fmt(opened, digits=0), fmt(read, " s", 2)]
                    for label, (files, opened, read) in m.clustering.items()
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
    states = [m.states[k] for k in ("first", "without", "after")]
    colours = ["tab:grey", "tab:red", "tab:green"]
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.6))
    panels = (
        ("files per gold day-partition (max)", [s.files_max for s in states], 4, "goal ≤ 4"),
        ("bytes on disk / live bytes", [s.ratio or 0 for s in states], 1.5, "goal ≤ 1.5×"),
        ("gold read (s, median)", [s.read_s for s in states], None, None),
        ("view refresh of one hour (s, median)", [s.refresh_s for s in states], None, None),
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
