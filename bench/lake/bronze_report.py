"""Bronze ingest's part of the benchmark report: ``bronze.json`` (``bench.lake.bronze``),
records/s steady and wall, per batch, the start-up, each job's fixed cost. It holds the file's
type (:class:`Bronze`, which the benchmark fills and writes as ``bronze.json``), its reader, its
table and its plot of records/s per batch."""

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
    StatedGoal,
    fmt,
    load_average,
    load_text,
    pyplot,
    table,
)

FILE = "bronze.json"

# The fields the report does not show are read with Node.unshown: optional, as the report's
# summary of the file (and a test's file) lacks them.


@dataclass(frozen=True)
class Batch:
    """One batch of a streaming query that read records: its records, the query's own duration
    of it (``triggerExecution``) and its phases as the query's progress gives them."""

    records: int
    seconds: float
    durations_ms: dict[str, int] | None = None  # phase → milliseconds


@dataclass(frozen=True)
class TailBatch:
    """A last batch of under half the others' records (the split's remainder), left out of the
    steady state: its time is a batch's fixed cost."""

    records: int
    seconds: float


@dataclass(frozen=True)
class Throughput:
    """One query's run over the records sent (``bronze.json``'s ``silver``; the bronze ingest's
    figures are the file's own fields)."""

    records: int
    wall_s: float  # the job's whole call
    query_start_s: float | None  # the call to the first batch's trigger; None: no batch
    first_batch_s: float | None
    steady_records_per_s: int | None  # over the batches after the first, without a tail
    wall_records_per_s: int | None
    tail_batch: TailBatch | None
    batches: list[Batch]


@dataclass(frozen=True, kw_only=True)
class Bronze:
    """``bronze.json``, as ``bench.lake.bronze`` writes it."""

    records: int
    partitions: int  # the topic's
    topic: str | None = None
    max_offsets_per_trigger: int | None = None
    cores: int | None = None
    quick: bool | None = None
    session_s: float | None = None  # the benchmark's Spark session's start
    startup_s: float  # the session's start and the ingest's query start
    query_start_s: float | None = None
    first_batch_s: float | None = None
    tail_batch: TailBatch | None = None
    # None from the benchmark when no batch came after the first; the report needs the figure
    steady_records_per_s: int | None
    wall_records_per_s: int | None
    ingest_wall_s: float | None = None
    batches: list[Batch]
    silver: Throughput | None = None  # None: not measured
    fixed_cost_s: dict[str, float]  # job → seconds, in a Spark session of its own
    fixed_cost_engine_s: dict[str, float] = field(default_factory=dict)  # on the lake engine
    fixed_cost_logs: dict[str, list[str]] | None = None  # "mode:job" → its progress lines
    goal: StatedGoal
    load_average: tuple[float, float]  # start, end


def whole(node: Node) -> int:
    return int(node.num())


def read_batch(node: Node) -> Batch:
    return Batch(
        int(node.num("records")),
        node.num("seconds"),
        node.unshown("durations_ms", lambda n: {k: int(v) for k, v in n.mapping().items()}),
    )


def read_tail(node: Node) -> TailBatch:
    return TailBatch(int(node.num("records")), node.num("seconds"))


def rate(node: Node, key: str) -> int | None:
    """Records/s as written: rounded to whole."""
    value = node.num(key, optional=True)
    return None if value is None else round(value)


def read_throughput(node: Node) -> Throughput:
    return Throughput(
        records=int(node.num("records")),
        wall_s=node.num("wall_s"),
        query_start_s=node.num("query_start_s", optional=True),
        first_batch_s=node.num("first_batch_s", optional=True),
        steady_records_per_s=rate(node, "steady_records_per_s"),
        wall_records_per_s=rate(node, "wall_records_per_s"),
        tail_batch=read_tail(node.get("tail_batch")) if node.has("tail_batch") else None,
        batches=[read_batch(b) for b in node.items("batches")],
    )


def read_bronze(node: Node) -> tuple[Bronze, list[Goal]]:
    bronze = Bronze(
        records=int(node.num("records")),
        partitions=int(node.num("partitions")),
        topic=node.unshown("topic", Node.text_value),
        max_offsets_per_trigger=node.unshown("max_offsets_per_trigger", whole),
        cores=node.unshown("cores", whole),
        quick=node.unshown("quick", Node.flag_value),
        session_s=node.unshown("session_s", Node.num),
        startup_s=node.num("startup_s"),
        query_start_s=node.unshown("query_start_s", Node.num),
        first_batch_s=node.unshown("first_batch_s", Node.num),
        tail_batch=node.unshown("tail_batch", read_tail),
        steady_records_per_s=round(node.num("steady_records_per_s")),
        wall_records_per_s=round(node.num("wall_records_per_s")),
        ingest_wall_s=node.unshown("ingest_wall_s", Node.num),
        batches=[read_batch(b) for b in node.items("batches")],
        silver=node.unshown("silver", read_throughput),
        fixed_cost_s=node.mapping("fixed_cost_s"),
        fixed_cost_engine_s=node.mapping("fixed_cost_engine_s")
        if node.has("fixed_cost_engine_s")
        else {},
        fixed_cost_logs=node.unshown(
            "fixed_cost_logs",
            lambda n: {k: [line.text_value() for line in n.items(k)] for k in n.value},
        ),
        goal=StatedGoal.read(node.get("goal")),
        load_average=load_average(node),
    )
    return bronze, [Goal.of("bronze", bronze.goal)]


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
                    load_text(bronze.load_average),
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
                    [
                        str(i),
                        fmt(b.records, digits=0),
                        fmt(b.seconds, " s", 2),
                        fmt(b.records / b.seconds if b.seconds else None, digits=0),
                    ]
                    for i, b in enumerate(bronze.batches, 1)
                ],
            ),
        ]
    return "\n".join(out)


def plot_bronze(bronze: Bronze, path: Path) -> None:
    """Records/s of each batch, with the steady-state figure and the 100k goal."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.4))
    rates = [b.records / b.seconds if b.seconds else 0.0 for b in bronze.batches]
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
    return [("bronze", bronze.load_average)] if bronze else []


SECTION = Section(
    "bronze",
    {FILE: read_bronze},
    bronze_section,
    plots=(Plot("bronze", "bronze-throughput.png", "Bronze ingest records/s", FILE, plot_bronze),),
    loads=loads,
)
