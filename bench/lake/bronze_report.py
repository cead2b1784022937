"""Bronze ingest's part of the benchmark report: ``bronze.json`` (``bench.lake.bronze``),
records/s steady and wall, per batch, the start-up, each job's fixed cost; its table and its plot
of records/s per batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import BRONZE_GOAL_RECORDS_PER_S, save_plot
from bench.report_kit import (
    NOT_RUN,
    Goal,
    Load,
    Node,
    Plot,
    Section,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "bronze.json"


@dataclass(frozen=True)
class Bronze:
    records: int
    partitions: int
    startup_s: float
    steady_records_per_s: float
    wall_records_per_s: float
    batches: list[tuple[int, float]]  # (records, seconds)
    fixed_cost_s: dict[str, float]
    load: tuple[float, float]
    fixed_cost_engine_s: dict[str, float] = field(default_factory=dict)


def read_bronze(node: Node) -> tuple[Bronze, list[Goal]]:
    bronze = Bronze(
        int(node.num("records")),
        int(node.num("partitions")),
        node.num("startup_s"),
        node.num("steady_records_per_s"),
        node.num("wall_records_per_s"),
        [(int(b.num("records")), b.num("seconds")) for b in node.items("batches")],
        node.mapping("fixed_cost_s"),
        load_average(node),
        node.mapping("fixed_cost_engine_s") if node.has("fixed_cost_engine_s") else {},
    )
    return bronze, [Goal.read("bronze", node.get("goal"))]


def bronze_section(bronze: Bronze | None) -> str:
    out = ["## Bronze and silver (`bronze.json`)", ""]
    if bronze is None:
        return "\n".join(out + [NOT_RUN.format(file="bronze.json")])
    out.append(
        table(
            [
                "records",
                "source partitions",
                "start-up",
                "steady state",
                "wall (start-up included)",
                "batches",
                "goal",
                "load average",
            ],
            [
                [
                    fmt(bronze.records, digits=0),
                    str(bronze.partitions),
                    fmt(bronze.startup_s, " s", 2),
                    fmt(bronze.steady_records_per_s, " records/s", 0),
                    fmt(bronze.wall_records_per_s, " records/s", 0),
                    str(len(bronze.batches)),
                    fmt(BRONZE_GOAL_RECORDS_PER_S, " records/s", 0),
                    load_text(bronze.load),
                ]
            ],
        )
    )
    if bronze.fixed_cost_s:
        out += [
            "",
            "Each job's fixed cost (a run over an empty interval, as a process of its own): in a "
            "Spark session of its own (what spark-submit pays) and as a client of the lake engine:",
            "",
            table(
                ["job", "own session", "on the engine"],
                [
                    [f"`{job}`", fmt(s, " s", 2), fmt(bronze.fixed_cost_engine_s.get(job), " s", 2)]
                    for job, s in bronze.fixed_cost_s.items()
                ],
            ),
        ]
    if bronze.batches:
        out += [
            "",
            "Per batch:",
            "",
            table(
                ["batch", "records", "seconds", "records/s"],
                [
                    [str(i), fmt(n, digits=0), fmt(s, " s", 2), fmt(n / s if s else None, digits=0)]
                    for i, (n, s) in enumerate(bronze.batches, 1)
                ],
            ),
        ]
    return "\n".join(out)


def plot_bronze(bronze: Bronze, path: Path) -> None:
    """Records/s of each batch, with the steady-state figure and the 100k goal."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.4))
    rates = [n / s if s else 0.0 for n, s in bronze.batches]
    ax.bar(range(1, len(rates) + 1), rates, color="tab:blue", alpha=0.7, label="per batch")
    ax.axhline(
        bronze.steady_records_per_s,
        color="tab:green",
        label=f"steady state {bronze.steady_records_per_s:,.0f}/s",
    )
    ax.axhline(
        bronze.wall_records_per_s,
        color="tab:grey",
        linestyle=":",
        label=f"wall, start-up included {bronze.wall_records_per_s:,.0f}/s",
    )
    ax.axhline(
        BRONZE_GOAL_RECORDS_PER_S,
        color="tab:red",
        linestyle="--",
        label=f"goal {BRONZE_GOAL_RECORDS_PER_S:,}/s",
    )
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("batch")
    highest = max([*rates, BRONZE_GOAL_RECORDS_PER_S, bronze.steady_records_per_s])
    lowest = min([r for r in rates if r > 0] or [highest])
    if highest / lowest > 5:  # bars far under the goal line (a quick run) stay readable
        ax.set_yscale("log")
        ax.set_ylim(lowest / 2, highest * 2)
        ax.set_ylabel("records/s (log scale)")
    else:
        ax.set_ylim(0, highest * 1.15)
        ax.set_ylabel("records/s")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")
    ax.set_title(f"Bronze ingest: {bronze.records:,} records, {bronze.partitions} partitions")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    fig.tight_layout()
    save_plot(fig, path)


def loads(bronze: Bronze | None) -> list[Load]:
    """The run's load average, for the machine table."""
    return [("bronze", bronze.load)] if bronze else []


SECTION = Section(
    "bronze",
    {FILE: read_bronze},
    bronze_section,
    plots=(Plot("bronze", "bronze-throughput.png", "Bronze ingest records/s", FILE, plot_bronze),),
    loads=loads,
)
