"""The streaming apps: each one's inputs, outputs, knobs and the rules between them, modes and
what waits in its state. An app is this entry and its module (``spark_apps/ops/<app>.py``)."""

from __future__ import annotations

from adlake.catalog.types import (
    SURGE_THRESHOLD,
    SURGE_WINDOW_S,
    App,
    Benchmark,
    Knob,
    KnobRule,
    StateClose,
    TimerBurst,
    lookup,
)


def ttl_refusal(window: float, lateness: float, ttl: float, unit: str = "s") -> str | None:
    """Attribution's key lifetime against its close: a key's state must outlive its close (the
    watermark passing its time + window, ``lateness`` behind the newest input) and its
    tombstone's one more window, or TTL would drop keys still open. One rule for every place
    that checks it, in any unit (the registry's seconds, the processor's milliseconds).

    >>> ttl_refusal(300, 30, 3600) is None
    True
    >>> ttl_refusal(300, 30, 0)
    'ttl_s=0 must exceed 2 * window_s + lateness_s (630): it is a safety net, not the close'
    """
    if ttl > 2 * window + lateness:
        return None
    return (
        f"ttl_{unit}={ttl:.15g} must exceed 2 * window_{unit} + lateness_{unit} "
        f"({2 * window + lateness:.15g}): it is a safety net, not the close"
    )


_ATTRIBUTION_RULES = (
    KnobRule(
        "ttl_s > 2 * window_s + lateness_s",
        lambda trigger, k: ttl_refusal(k["window_s"], k["lateness_s"], k["ttl_s"]),  # type: ignore[arg-type]
    ),
    KnobRule(
        "engine python runs in micro-batches only",
        lambda trigger, k: (
            "engine python runs in micro-batches only (Spark rejects Python transformWithState "
            "in Real-Time Mode): use engine jvm or trigger processing_time"
            if k["engine"] == "python" and trigger == "realtime"
            else None
        ),
    ),
)


APPS: dict[str, App] = {
    a.name: a
    for a in [
        App(
            "attribution",
            "ops",
            "spark_apps.ops.attribution",
            inputs=("ad_requests", "ad_impressions", "ad_callbacks"),
            outputs=("attributed_events",),
            dlq="ad_events_dlq",
            description="Correlates ad requests, impressions and callbacks by request_id "
            "(transformWithState, event-time timers) and writes attributed_events.",
            default_trigger="processing_time",
            knobs=(
                Knob(
                    "window_s",
                    "number",
                    300.0,
                    "attribution window: partners match within it, a request closes at its end",
                    minimum=0.001,
                    # a day: a request's partners arrive within seconds to minutes of it
                    maximum=86_400,
                ),
                Knob(
                    "skew_s",
                    "number",
                    10.0,
                    "how far an item may precede its partner and still match",
                    minimum=0,
                    # an hour of clock skew between the services that log the events
                    maximum=3_600,
                ),
                Knob(
                    "lateness_s",
                    "number",
                    30.0,
                    "watermark delay on the Kafka timestamp",
                    minimum=0,
                    # a day: everything arriving later than that is an orphan anyway
                    maximum=86_400,
                ),
                Knob(
                    "ttl_s",
                    "number",
                    3600.0,
                    "lifetime bound of a key's state (safety net; more than 2 windows + lateness)",
                    minimum=0,
                    # a week: more than 2 windows + lateness at their maximums (3 days)
                    maximum=7 * 86_400,
                ),
                Knob(
                    "engine",
                    "string",
                    "jvm",
                    "jvm: the Java port of the rules (micro-batch or "
                    "Real-Time Mode); python: the Python processor (micro-batch only); their "
                    "checkpoints are not interchangeable",
                    choices=("jvm", "python"),
                ),
            ),
            # transformWithState: update output mode in Real-Time Mode, append in micro-batch;
            # Spark resumes neither as the other, nor one engine's operator as the other's.
            same_checkpoint_switches=(),
            checkpoint_knobs=("engine",),
            # a request's window closing, and what was still waiting then
            timer_driven=("request_closed", "orphan_impression", "orphan_callback"),
            rules=_ATTRIBUTION_RULES,
            state=StateClose(
                window="window_s",
                delay="lateness_s",
                holds="requests and items waiting for their partners, and tombstones of closed "
                "keys (kept one more window, {window:g} s, for stragglers). A request closes "
                "(request_closed, orphans) when the watermark (the newest Kafka timestamp read "
                "- {delay:g} s) passes its event time + {window:g} s. Requests still open have "
                "event times after {open_after}",
                closes_with="input with later timestamps (in Real-Time Mode, closes come at the "
                "first checkpoint boundary after that)",
            ),
            bench=Benchmark(
                # the whole run's p99 is bound by the interval boundary (where the query pauses
                # and, once they fall due, the closes fire): see docs/bench/attribution-boundary.md
                suite_p99_ms=250.0,
                boundary_p99_ms=500.0,
                # a 20 s window (and 5 s of skew and lateness): every boundary fires the closes,
                # orphans and tombstone expiries of the last interval (with the default 300 s
                # window none is due within a 3-minute run)
                burst=TimerBurst(
                    "window-20",
                    "a 20 s attribution window: every boundary fires timers",
                    (("window_s", 20), ("skew_s", 5), ("lateness_s", 5)),
                ),
            ),
        ),
        App(
            "click_surge",
            "ops",
            "spark_apps.ops.click_surge",
            inputs=("page_clicks",),
            outputs=("page_surges",),
            dlq="page_clicks_dlq",
            description="Pages with more clicks than a threshold in a 5-second event-time window, "
            "in Real-Time Mode; writes page_surges.",
            default_trigger="realtime",
            knobs=(
                Knob(
                    "threshold",
                    "integer",
                    SURGE_THRESHOLD,
                    "a window surges when its click count is greater than this",
                    minimum=0,
                    # ten million clicks on one page in one 5-second window: far above what
                    # the platform ingests, and well inside the long count it is compared with
                    maximum=10_000_000,
                ),
            ),
            # update output mode and one aggregation in both modes: open windows keep their
            # counts across a switch
            same_checkpoint_switches=(
                ("realtime", "processing_time"),
                ("processing_time", "realtime"),
            ),
            state=StateClose(
                window=SURGE_WINDOW_S,
                # the query's watermark: 5 s behind the newest click's event time
                delay=5,
                holds="open {window:g}-second windows (page, window start); a window closes "
                "when the watermark (the newest click's event time - {delay:g} s) passes its "
                "end. Open windows started at or after {open_after}",
                closes_with="clicks with later event times",
            ),
            # A 5-minute checkpoint interval (Spark's own default): at 1,000 clicks/s on 2 cores
            # its whole-run p99 was 65 ms against 812-1,088 ms at 30 s, whose boundary pauses
            # (about a second, every 30 s) held over 1% of the outputs (docs/benchmarks.md, the
            # checkpoint interval). A crash replays up to 5 minutes of clicks.
            rtm_interval_s=300,
            bench=Benchmark(
                # every click updates its window's count, an output whose latency is measured
                knobs=(("threshold", 0),),
                boundary_p99_ms=120.0,
                beside_p99_ratio=1.5,
            ),
        ),
    ]
}


def app(name: str) -> App:
    return lookup("app", APPS, name)


def ops_apps() -> tuple[App, ...]:
    """The operational (streaming) apps, in the catalog's order, as the catalog is now (a test's
    added entry included)."""
    return tuple(a for a in APPS.values() if a.runtime == "ops")
