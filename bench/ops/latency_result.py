"""One measured run of an app's latency: the type :func:`bench.ops.latency.run_scenario` fills
and the benchmarks of the apps' latency write (an item of ``ops.json``'s ``runs``, of
``beside.json``'s, of a boundary or burst-profile run file's ``results``), and its reader, which
the report's parts of those benchmarks share (:mod:`bench.ops.latency_report`,
:mod:`bench.ops.beside_report`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.report_kit import QUANTILES, Node, load_average

MODE_NAMES = {"realtime": "Real-Time Mode", "processing_time": "micro-batch"}
# The figures of a run's latency over the whole measured span, between the boundaries, and of
# its timer-driven records (latency_stats's, the last without p95, the third with the bound).
WHOLE = ("p50", "p95", "p99", "max", "n")
BETWEEN = ("p50", "p99", "max", "n")
TIMER_FIGURES = ("p50", "p99", "max", "n", "bound_ms", "within_bound")


@dataclass(frozen=True, kw_only=True)
class Slice:
    """5 s of source time since the measured start (an item of ``timeline``): its outputs and
    their latency in ms (None: no output in it)."""

    t_s: float
    n: int | None
    p50: float | None
    p99: float | None
    max: float | None


@dataclass(frozen=True, kw_only=True)
class Boundary:
    """A Real-Time Mode checkpoint-interval boundary as ``bench.ops.boundaries.boundaries``
    finds it (an item of ``boundaries``; seconds since the measured start). Only ``t_s``,
    ``stall_ms``, ``durations_ms`` and ``timers_fired`` are shown; the rest is None in a file
    that lacks it (the report's summary, a test's file)."""

    t_s: float
    batch_id: int | None = None  # the ending batch's
    stall_ms: float | None  # None: no output around it to measure the stall by
    stall_start_s: float | None = None
    stall_end_s: float | None = None
    held_from_s: float | None = None  # source time of the first input the stall held
    peak_ms: float | None = None
    durations_ms: dict[str, float]  # the progress phases that fall in the boundary
    ending_batch_ms: dict[str, float] | None = None  # the ending batch's whole durationMs
    next_durations_ms: dict[str, float] | None = None  # the next batch's
    state_operator_metrics: list[dict] | None = None  # the ending batch's, as Spark gave them
    timers_fired: int | None  # None: Spark did not report it


@dataclass(frozen=True, kw_only=True)
class Result:
    """One run, as written. The fields other than the report's (the whole run, between the
    boundaries, the quantiles, the timeline, the boundaries, the timer-driven records, the load
    average, the notes, the interval) are None in a file that lacks them."""

    app: str
    mode: str  # a key of MODE_NAMES
    rate: float  # inputs/s sent
    duration_s: float  # measured, after the warm-up
    sent: int | None = None
    measured_outputs: int | None = None
    latency_p50_ms: float | None = None  # whole["p50"], and so on
    latency_p95_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_max_ms: float | None = None
    input_rows_per_s: float | None = None
    output_rows_per_s: float | None = None
    lag_at_end_ms: float | None = None  # the traffic's end to the newest source seen
    # latency per 5 s slice of source time: whether a tail is steady or comes in bursts
    timeline: list[Slice]
    notes: list[str]
    engine: str | None = None  # the processor engine, for an app with an `engine` knob
    whole: dict[str, float | None]  # WHOLE
    # BETWEEN (see bench.ops.boundaries.between_boundaries); None: a file without it
    between_boundaries: dict[str, float | None] | None
    quantiles_ms: list[float]  # 1001 (QUANTILES); none without an output measured
    boundaries: list[Boundary]  # Real-Time Mode's
    batches: list[dict] | None = None  # Real-Time Mode's progress, a dict per batch
    load_average: tuple[float, float]  # start, end
    # the timer-driven records' latency (TIMER_FIGURES and p95), apart; {}: none
    timer_driven: dict[str, float | None]
    # epoch ms the measured window starts at (the boundaries' seconds count from it)
    measure_from_ms: float | None = None
    # Real-Time Mode's checkpoint interval the run had (None: micro-batch, or an older file)
    rtm_interval: str | None = None

    @property
    def label(self) -> str:
        return f"{self.app} {MODE_NAMES.get(self.mode, self.mode)}"

    @property
    def mode_text(self) -> str:
        """The mode, with the checkpoint interval when the run recorded one."""
        interval = f" ({self.rtm_interval})" if self.rtm_interval else ""
        return MODE_NAMES[self.mode] + interval


# -- reading ---------------------------------------------------------------------------------------


def read_percentiles(node: Node, key: str, names: Sequence[str]) -> dict[str, float | None]:
    """The figures ``names`` of the object ``key`` (null ones None; a count an int)."""
    inner = node.get(key)
    figures = {name: inner.num(name, optional=True) for name in names}
    if figures.get("n") is not None:
        figures["n"] = int(figures["n"])
    return figures


def read_quantiles(node: Node, whole: dict[str, float | None]) -> list[float]:
    """The run's 1001 quantiles; none for a run that measured no output (``whole.n`` 0)."""
    if not whole["n"] and node.get("quantiles_ms").value in ([], None):
        return []
    return node.numbers("quantiles_ms", length=QUANTILES)


def count(node: Node) -> int:
    return int(node.num())


def raw(node: Node) -> Any:
    """A field read whole, as written (progress events and metrics the report does not show)."""
    return node.value


def read_slice(s: Node) -> Slice:
    figures = {k: s.num(k, optional=k != "t_s") for k in ("t_s", "n", "p50", "p99", "max")}
    n = figures.pop("n")
    return Slice(**figures, n=None if n is None else int(n))


def read_boundaries(run: Node) -> list[Boundary]:
    boundaries = []
    for b in run.items("boundaries"):
        fired = (
            b.num("timers_fired", optional=True)
            if isinstance(b.value, Mapping) and "timers_fired" in b.value
            else None
        )
        boundaries.append(
            Boundary(
                t_s=b.num("t_s"),
                batch_id=b.unshown("batch_id", count),
                stall_ms=b.num("stall_ms", optional=True),
                stall_start_s=b.unshown("stall_start_s", Node.num),
                stall_end_s=b.unshown("stall_end_s", Node.num),
                held_from_s=b.unshown("held_from_s", Node.num),
                peak_ms=b.unshown("peak_ms", Node.num),
                durations_ms=b.mapping("durations_ms"),
                ending_batch_ms=b.unshown("ending_batch_ms", raw),
                next_durations_ms=b.unshown("next_durations_ms", raw),
                state_operator_metrics=b.unshown("state_operator_metrics", raw),
                timers_fired=None if fired is None else int(fired),
            )
        )
    return boundaries


def read_timer_driven(run: Node) -> dict[str, float | None]:
    """The run's timer-driven records' figures; {} when it had none (or did not split them)."""
    if not run.has("timer_driven") or not run.get("timer_driven").value:
        return {}
    node = run.get("timer_driven")
    figures = {k: node.num(k, optional=True) for k in TIMER_FIGURES}
    p95 = {"p95": node.unshown("p95", Node.num)} if "p95" in node.value else {}
    return {"p50": figures.pop("p50"), **p95, **figures}


def read_result(r: Node, unshown: Collection[str] = ()) -> Result:
    """A run as written. ``unshown``: the fields among the report's that the calling report
    does not show either, read as the others with :meth:`Node.unshown`."""

    def shown(key: str, read: Callable[[Node], Any], absent: Any = None) -> Any:
        if key not in unshown:
            return read(r)
        quiet = Node(r.file, r.where, r.value, r.path)  # its reads not recorded
        return read(quiet) if quiet.has(key) else absent

    whole = shown("whole", lambda r: read_percentiles(r, "whole", WHOLE))
    return Result(
        app=shown("app", lambda r: r.text("app")),
        mode=r.text("mode"),
        rate=r.num("rate"),
        duration_s=r.num("duration_s"),
        sent=r.unshown("sent", count),
        measured_outputs=r.unshown("measured_outputs", count),
        latency_p50_ms=r.unshown("latency_p50_ms", Node.num),
        latency_p95_ms=r.unshown("latency_p95_ms", Node.num),
        latency_p99_ms=r.unshown("latency_p99_ms", Node.num),
        latency_max_ms=r.unshown("latency_max_ms", Node.num),
        input_rows_per_s=r.unshown("input_rows_per_s", Node.num),
        output_rows_per_s=r.unshown("output_rows_per_s", Node.num),
        lag_at_end_ms=r.unshown("lag_at_end_ms", Node.num),
        timeline=shown("timeline", lambda r: [read_slice(s) for s in r.items("timeline")], []),
        notes=shown(
            "notes",
            lambda r: [str(n.value) for n in r.items("notes")] if r.has("notes") else [],
            [],
        ),
        engine=r.unshown("engine", Node.text_value),
        whole=whole,
        between_boundaries=shown(
            "between_boundaries",
            lambda r: (
                read_percentiles(r, "between_boundaries", BETWEEN)
                if r.has("between_boundaries")
                else None
            ),
        ),
        quantiles_ms=read_quantiles(r, whole),
        boundaries=read_boundaries(r),
        batches=r.unshown("batches", lambda n: [b.value for b in n.items()]),
        load_average=load_average(r),
        timer_driven=shown("timer_driven", read_timer_driven, {}),
        measure_from_ms=r.unshown("measure_from_ms", Node.num),
        rtm_interval=shown(
            "rtm_interval", lambda r: r.text("rtm_interval") if r.has("rtm_interval") else None
        ),
    )
