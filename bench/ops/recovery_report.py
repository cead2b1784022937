"""The crash-recovery benchmark's part of the benchmark report: ``recovery.json``
(``bench.ops.recovery``), one run per app and checkpoint interval of ``kill -9`` half an interval
after a boundary and a restart on the same checkpoint. It holds the run's type
(:class:`RecoveryRun`, which the benchmark fills and writes as each run's JSON), the run's goal
(:data:`GOAL_S`), the reader of a run and of ``recovery.json``, and the section's table. The
benchmark is not part of ``make bench`` (``make bench-recovery``); ``make bench-quick`` runs its
smoke form."""

from __future__ import annotations

from dataclasses import dataclass

from bench.ops.latency_result import WHOLE, read_percentiles
from bench.report_kit import Goal, Node, Section, fmt, load_average, load_text, ms, table

FILE = "recovery.json"
# The run's goal: input sent after the restart comes out within the page's latency target
# (the run's target_ms) at most this many seconds after the restart.
GOAL_S = 60.0


@dataclass(frozen=True)
class RecoveryRun:
    """One recovery run, as ``bench.ops.recovery`` writes it (a run file, and an item of
    ``recovery.json``'s ``runs``). Seconds are from the restart unless named otherwise; None: the
    run had nothing to measure it by (no output after the restart, no input within the target
    before the traffic ended)."""

    app: str
    rtm_interval: str
    rate: float  # events/s sent
    warmup_s: float  # traffic before the boundary the kill follows
    after_s: float  # traffic after the restart's allowance
    target_ms: float  # the page's latency target (Real-Time Mode)
    killed_after_boundary_s: float
    cores: int
    load_average: tuple[float, float]  # start, end
    outage_s: float | None  # the kill to the first output after the restart
    replayed_outputs: int  # outputs of input sent before the kill, emitted after the restart
    duplicates: int  # records whose id fields repeat an earlier record's
    distinct_ids: int
    # the first input sent after the restart that came out within the target (the backlog is
    # then behind it)
    back_under_target_s: float | None
    # the last output over the target after the restart: a later boundary's pause counts too
    last_over_target_s: float | None
    caught_up_s: float | None  # as back_under_target_s, within the pre-crash p99
    p99_before_ms: float | None  # from the end of the warm-up to the kill
    after: dict[str, float | None]  # p50, p95, p99, max, n after the last output over the target


# The field that came with back_under_target_s's present meaning: a run file without it is of
# the older field set, whose back_under_target_s was the last output over the target.
NEWER_FIELD = "last_over_target_s"


def optional(node: Node, key: str) -> float | None:
    """A figure that may be null or absent (an older run file): None then."""
    return node.num(key) if node.has(key) else None


def read_run(node: Node) -> tuple[RecoveryRun, bool]:
    """A run, and whether it is of the older field set: then its back under the target was not
    measured and its ``back_under_target_s`` is read as the last output over the target."""
    app = node.text("app")
    older = NEWER_FIELD not in node.value
    run = RecoveryRun(
        app,
        node.text("rtm_interval"),
        node.num("rate"),
        node.num("warmup_s"),
        node.num("after_s"),
        node.num("target_ms"),
        node.num("killed_after_boundary_s"),
        int(node.num("cores")),
        load_average(node),
        node.num("outage_s", optional=True),
        int(node.num("replayed_outputs")),
        int(node.num("duplicates")),
        int(node.num("distinct_ids")),
        None if older else optional(node, "back_under_target_s"),
        optional(node, "back_under_target_s" if older else NEWER_FIELD),
        node.num("caught_up_s", optional=True),
        node.num("p99_before_ms", optional=True),
        read_percentiles(node, "after", WHOLE),
    )
    return run, older


def goal_met(run: RecoveryRun, older: bool) -> bool | None:
    """Whether the run met :data:`GOAL_S`; None: not measured (a run of the older field set).

    >>> run = RecoveryRun("a", "5 seconds", 200, 5, 10, 1000, 2.5, 2, (1, 1), 9.0, 5, 5, 90,
    ...                   None, 0.0, None, 40.0, {})
    >>> goal_met(run, older=False), goal_met(run, older=True)
    (False, None)
    """
    if older:
        return None
    return run.back_under_target_s is not None and run.back_under_target_s <= GOAL_S


@dataclass(frozen=True)
class Recovery:
    """``recovery.json``: its runs, each with whether it is of the older field set."""

    runs: list[tuple[RecoveryRun, bool]]


def read_recovery(node: Node) -> tuple[Recovery, list[Goal]]:
    runs = [read_run(r) for r in node.items("runs")]
    goals = [Goal.read("recovery", g) for g in node.items("goals")] if node.has("goals") else []
    return Recovery(runs), goals


def back_under(run: RecoveryRun, older: bool) -> str:
    if older:
        return "–"
    return (
        "not within the run"
        if run.back_under_target_s is None
        else fmt(run.back_under_target_s, " s")
    )


def recovery_section(rec: Recovery | None) -> str:
    out = ["## Recovery from a crash (`recovery.json`)", ""]
    if rec is None:
        return "\n".join(out + [f"Not in this run: `make bench-recovery` writes `{FILE}`."])
    runs = [run for run, _ in rec.runs]
    traffic = sorted(
        {f"{fmt(r.rate, ' events/s', 0)} with {fmt(r.warmup_s, ' s', 0)} of warm-up" for r in runs}
    )
    targets = sorted({f"{r.target_ms / 1000:g} s" for r in runs})
    out += [
        "Each run sends "
        + ("; ".join(traffic) or "its traffic")
        + ", kills the app (`kill -9` of its driver and JVM) half an interval after the next "
        "checkpoint boundary and starts it again at once on the same checkpoint "
        "(`python -m bench.ops.recovery`). From the outputs: the **outage** (the kill to the first "
        "output after the restart), the outputs **replayed** (of input sent before the kill, "
        "emitted after the restart), the **duplicates** (records whose id fields repeat an "
        "earlier one's), the seconds from the restart until input sent after it comes out "
        f"within the page's target ({', '.join(targets) or 'none'}: **back under target**) and "
        "within the pre-crash p99, the **last output over the target** (a later boundary's "
        "pause counts too), the p99 before the kill and after that last output. The goal: back "
        f"under the target within {GOAL_S:.0f} s of the restart.",
        "",
        table(
            [
                "app",
                "interval",
                "killed after boundary",
                "outage",
                "outputs replayed",
                "duplicates",
                "back under target",
                "back under pre-crash p99",
                "last over target",
                "p99 before / after",
                f"goal: ≤ {GOAL_S:.0f} s",
                "load avg",
            ],
            [
                [
                    r.app,
                    r.rtm_interval,
                    fmt(r.killed_after_boundary_s, " s"),
                    fmt(r.outage_s, " s"),
                    fmt(r.replayed_outputs, digits=0),
                    fmt(r.duplicates, digits=0),
                    back_under(r, older),
                    fmt(r.caught_up_s, " s"),
                    fmt(r.last_over_target_s, " s"),
                    f"{ms(r.p99_before_ms)} / {ms(r.after.get('p99'))}",
                    {True: "yes", False: "**no**", None: "–"}[goal_met(r, older)],
                    load_text(r.load_average),
                ]
                for r, older in rec.runs
            ],
        ),
    ]
    if any(older for _, older in rec.runs):
        out += [
            "",
            "–: not measured. A run file without `last_over_target_s` is of the older field "
            "set, whose `back_under_target_s` was the last output over the target: shown as "
            "that, and back under the target as not measured.",
        ]
    return "\n".join(out)


SECTION = Section("recovery", {FILE: read_recovery}, recovery_section)
