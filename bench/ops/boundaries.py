"""Real-Time Mode's checkpoint-interval boundaries in a latency run (:mod:`bench.ops.latency`):
where the query's progress (one long-running batch per interval) and its outputs place each
boundary, its stall and peak, the progress phases that fall in it, and the latency "between
boundaries" that leaves out the inputs a boundary held; and a run's latency timeline. Pure
functions of the samples (no broker, no Spark); see docs/bench/attribution-boundary.md.
"""

from __future__ import annotations

from bench.harness import percentile


def timeline(
    samples: list[tuple[float, float]], measure_from: float, slice_s: int = 5
) -> list[dict]:
    """Per ``slice_s`` seconds of source time since ``measure_from`` (ms): outputs and their
    latency p50/p99/max. ``samples`` are (source ms, latency ms)."""
    slices: dict[int, list[float]] = {}
    for src, lat in samples:
        slices.setdefault(int((src - measure_from) // (slice_s * 1000)) * slice_s, []).append(lat)
    return [
        {
            "t_s": start,
            "n": len(values),
            "p50": percentile(values, 0.5),
            "p99": percentile(values, 0.99),
            "max": round(max(values), 1),
        }
        for start, values in sorted(slices.items())
    ]


# How far around an interval boundary (ms) the stall is looked for, and how long after a stall
# ends its backlog may still be late: outputs of inputs sent up to 1 s after it are not counted
# as "between boundaries".
BOUNDARY_SEARCH_MS = 10_000
BOUNDARY_AFTER_MS = 1_000
# progress phases that run before a batch's work starts (the next batch's part of a boundary)
_PRE_PHASES = (
    "latestOffset",
    "getBatch",
    "queryPlanning",
    "walCommit",
    "setOffsetRange",
    "getOffset",
    "getEndOffset",
)


def boundary_phases(ending: dict, following: dict, interval_ms: float | None) -> dict:
    """The progress phases that fall in one boundary: the ending batch's ``addBatch`` (the
    interval plus its end: the timers the new watermark fires, the state commit) and
    ``commitOffsets``, then the starting batch's ``latestOffset``, ``walCommit``, ``getBatch``
    and ``queryPlanning``; ``addBatchOverInterval`` is ``addBatch`` minus the interval."""
    phases = {k: v for k, v in ending.items() if k in ("addBatch", "commitOffsets")}
    phases.update({k: v for k, v in following.items() if k in _PRE_PHASES})
    if interval_ms and "addBatch" in phases:
        phases["addBatchOverInterval"] = phases["addBatch"] - interval_ms
    return phases


def interval_ms(text: str) -> float:
    """A trigger interval ("30 seconds", "5 minutes") in milliseconds."""
    amount, unit = text.split()
    scale = {"ms": 1, "millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000}
    return float(amount) * scale[unit.lower().rstrip("s") if unit.lower() != "ms" else "ms"]


def boundaries(
    batches: list[dict],
    outputs: list[tuple[float, float]],
    measure_from: float,
    measure_to: float,
    interval_ms: float | None = None,
) -> list[dict]:
    """Real-Time Mode's checkpoint-interval boundaries in the measured window, from the query's
    progress (``batches``: one dict per batch as the app's status file gave it: ``batch_id``,
    ``started_ms`` (the progress ``timestamp``), ``duration_ms``, ``phases_ms`` (its
    ``durationMs``), ``state_operator_metrics``) and the outputs (``(output Kafka ms, source
    ms)``).

    A boundary is the end of one long-running batch and the start of the next: it is placed at
    ``end = started_ms + duration_ms`` of the ending batch. Its **stall** is the longest gap
    between consecutive output timestamps within ``BOUNDARY_SEARCH_MS`` before ``end`` and
    ``BOUNDARY_SEARCH_MS`` plus the next batch's pre-work phases (``_PRE_PHASES``) after it: at
    1,000 inputs/s outputs are milliseconds apart, so that gap is the time the query emitted
    nothing. ``stall_start_s``/``stall_end_s`` are its edges (seconds since ``measure_from``);
    ``held_from_s`` is the source time of the oldest input written after the gap (the first
    input the stall held, a few ms before the gap opened); the boundary's **span**, in source
    time, is ``[held_from, stall end + BOUNDARY_AFTER_MS]``, and ``peak_ms`` is the highest
    latency of an output whose source time falls in it. ``durations_ms`` are the phases that
    fall in the boundary (:func:`boundary_phases`: the ending batch's ``addBatch``, which spans
    the interval plus the end-of-batch work, and ``commitOffsets``; the starting batch's
    ``latestOffset``/``walCommit``/``queryPlanning``); ``ending_batch_ms`` and
    ``next_durations_ms`` are both batches' whole ``durationMs``; ``timers_fired`` is the ending
    batch's ``numExpiredTimers`` (the timers its end fired) if Spark reports it."""
    import bisect

    result = []
    ordered = sorted(batches, key=lambda b: b["batch_id"])
    by_out = sorted(outputs)
    out_times = [out for out, _ in by_out]
    for ending, starting in zip(ordered, ordered[1:] + [None]):
        end = ending["started_ms"] + (ending["duration_ms"] or 0)
        if not measure_from <= end <= measure_to:
            continue
        following = (starting or {}).get("phases_ms") or {}
        pre = sum(v for k, v in following.items() if k in _PRE_PHASES)
        lo = bisect.bisect_left(out_times, end - BOUNDARY_SEARCH_MS)
        hi = bisect.bisect_right(out_times, end + BOUNDARY_SEARCH_MS + pre)
        window = out_times[lo:hi]
        gap, gap_start, gap_end = None, end, end + pre
        for a, b in zip(window, window[1:]):
            if gap is None or b - a > gap:
                gap, gap_start, gap_end = b - a, a, b
        # the first input the stall held: the oldest source among the outputs written after it
        after = bisect.bisect_left(out_times, gap_end)
        held = [
            src
            for _, src in by_out[
                after : bisect.bisect_right(out_times, gap_end + BOUNDARY_SEARCH_MS)
            ]
        ]
        held_from = min(min(held), gap_start) if held else gap_start
        # (their outputs come within a minute unless the app fell behind, which the run's
        # lag at end and timeline show)
        until = bisect.bisect_right(out_times, gap_end + 60_000)
        peak = [
            out - src
            for out, src in by_out[lo:until]
            if held_from <= src <= gap_end + BOUNDARY_AFTER_MS
        ]
        timers = None
        for op in ending.get("state_operator_metrics") or []:
            fired = (op.get("customMetrics") or {}).get("numExpiredTimers")
            if fired is not None:
                timers = (timers or 0) + int(fired)
        result.append(
            {
                "t_s": round((end - measure_from) / 1000, 3),
                "batch_id": ending["batch_id"],
                "stall_ms": round(gap, 1) if gap is not None else None,
                "stall_start_s": round((gap_start - measure_from) / 1000, 3),
                "stall_end_s": round((gap_end - measure_from) / 1000, 3),
                "held_from_s": round((held_from - measure_from) / 1000, 3),
                "peak_ms": round(max(peak), 1) if peak else None,
                "durations_ms": boundary_phases(
                    ending.get("phases_ms") or {}, following, interval_ms
                ),
                "ending_batch_ms": ending.get("phases_ms") or {},
                "next_durations_ms": following,
                "state_operator_metrics": ending.get("state_operator_metrics") or [],
                "timers_fired": timers,
            }
        )
    return result


def between_boundaries(
    samples: list[tuple[float, float]], spans: list[dict], measure_from: float
) -> list[float]:
    """**Between boundaries**: the latencies of outputs whose source time (the Kafka timestamp
    of the input) is outside every boundary's span ``[held_from, stall end +
    BOUNDARY_AFTER_MS]`` (see :func:`boundaries`): inputs that arrived while the query was not
    reading, and in the second after it resumed, while it worked off the backlog, are left out;
    every other output counts. ``samples``: (source ms, latency ms). With no boundary, every
    output."""
    cuts = [
        (
            measure_from + b["held_from_s"] * 1000,
            measure_from + b["stall_end_s"] * 1000 + BOUNDARY_AFTER_MS,
        )
        for b in spans
    ]
    return [lat for src, lat in samples if not any(lo <= src <= hi for lo, hi in cuts)]
