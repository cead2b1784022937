"""Benchmark the operational apps against a local broker: end-to-end latency and throughput.

Not a test: it measures and reports, it asserts nothing. Each run starts its own Kafka broker on
free loopback ports under a temporary directory (:func:`bench.harness.private_broker`), then for
every scenario:

1. starts the app as its own process (as spark-submit would) on a fresh checkpoint;
2. once the query has started, produces generated traffic at a fixed rate for a fixed time: only
   the topics the app reads, no anomaly (:func:`traffic`), and the knob values of its entry's
   ``bench.knobs``, so that every input makes an output;
3. reads the app's output topic while it runs; for every output record,
   ``latency = output Kafka timestamp - source_kafka_ts`` (the Kafka timestamp of the newest
   input that produced it), skipping records whose inputs were sent during the warm-up. The
   app's timer-driven records (the registry's ``App.timer_driven``: a key closing when the
   watermark passes its window's end) are measured apart (``Result.timer_driven``, against
   :func:`timer_bound_ms`): they are late by design, by the window plus the allowed lateness,
   which measures the configuration, not the engine;
4. stops the app (SIGTERM, graceful) and reports p50/p95/p99 latency, input rows/s sent, and
   output rows/s, plus whether the app kept up (the newest source timestamp seen at the end).

    .venv/ops/bin/python -m bench.ops.latency click_surge --rates 1000 --duration 60
    .venv/ops/bin/python -m bench.ops.latency attribution --modes realtime,processing_time \
        --rates 1000,2000,4000 --warmup 120

Any app of the registry (runtime ``ops``) can be measured. Unless ``--modes`` says otherwise, an
app whose default trigger is Real-Time Mode runs in it and in micro-batch in one invocation, so
their ratio is measured on the same machine state; another app runs in its default trigger. An
app with an ``engine`` knob runs each of ``--engines``. Each rate of ``--rates`` is a run; per
engine and mode, the highest rate whose p99 stays within ``--p99-budget-ms`` is reported. In
Real-Time Mode the app gets one task slot per source and shuffle partition (:func:`rtm_master`),
and latency is measured within a checkpoint interval unless ``--rtm-interval`` is shorter than
the run: event-time timers fire at the interval's boundary, where the query pauses (see
docs/bench/attribution-boundary.md).

The report's scenarios run as :mod:`bench.ops.suite` (``python -m bench.ops.suite``), which
writes ``ops.json``. A run's figures are a :class:`~bench.ops.latency_result.Result`, the type the
report reads back.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from adlake import generator, registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import (
    cores,
    latency_stats,
    load_average,
    quantiles,
    say,
    start_app,
    stop_app,
    wait_started,
)

# The Real-Time Mode boundary analysis lives in bench.ops.boundaries; all of it is still importable
# from here (other benchmarks and long-running processes import it from this module).
from bench.ops.boundaries import (  # noqa: F401 - re-exported
    BOUNDARY_AFTER_MS,
    BOUNDARY_SEARCH_MS,
    between_boundaries,
    boundaries,
    boundary_phases,
    interval_ms,
    timeline,
)
from bench.ops.latency_result import (  # noqa: F401 - MODE_NAMES re-exported
    MODE_NAMES,
    Boundary,
    Result,
    Slice,
)
from bench.ops.watchers import OutputReader, StatusWatcher, ticker

NO_ANOMALIES = dict(out_of_order=0, duplicates=0, late=0, malformed=0, orphans=0, surge_pages=0)


def ops_apps() -> tuple[registry.App, ...]:
    """The apps measured: every operational app of the registry, in its order, as it is now.

    >>> [a.name for a in ops_apps()]
    ['attribution', 'click_surge']
    """
    return registry.ops_apps()


def knob_flags(app: registry.App, values: registry.KnobValues) -> list[str]:
    """The app's flags setting knob ``values`` (name, value).

    >>> knob_flags(registry.app("attribution"), (("window_s", 20), ("skew_s", 5)))
    ['--window-s', '20', '--skew-s', '5']
    """
    return [part for name, value in values for part in (app.knob(name).flag, str(value))]


def knob_value(app: registry.App, knob: float | str, args: list[str]) -> float:
    """A number of the app's state declaration (``App.state``'s ``window``/``delay``): as it is,
    or the knob it names as the arguments set it (the last flag wins), else its default.

    >>> a = registry.app("attribution")
    >>> knob_value(a, "window_s", ["--window-s", "20"]), knob_value(a, "lateness_s", [])
    (20.0, 30.0)
    """
    if not isinstance(knob, str):
        return float(knob)
    flag, value = app.knob(knob).flag, app.knob(knob).default
    for given, following in zip(args, args[1:]):
        if given == flag:
            value = following
    return float(value)


def timer_bound_ms(app: registry.App, args: list[str], mode: str, interval: str) -> float | None:
    """How late a timer-driven record may come after its key's newest input: the window plus
    the watermark's delay (the timer falls due), in Real-Time Mode plus an interval (timers fire
    at a boundary), plus 1 s. None for an app without timer-driven records.

    >>> a = registry.app("attribution")
    >>> timer_bound_ms(a, ["--window-s", "20", "--lateness-s", "5"], "realtime", "30 seconds")
    56000.0
    """
    if app.state is None or not app.timer_driven:
        return None
    wait_s = knob_value(app, app.state.window, args) + knob_value(app, app.state.delay, args)
    interval_part = interval_ms(interval) if mode == "realtime" else 0.0
    return wait_s * 1000 + interval_part + 1000.0


def knob_args(app: registry.App) -> list[str]:
    """The app's flags for the knob values of its measured runs (``App.bench.knobs``).

    >>> knob_args(registry.app("click_surge")), knob_args(registry.app("attribution"))
    (['--threshold', '0'], [])
    """
    return knob_flags(app, app.bench.knobs)


def traffic(app: registry.App) -> dict:
    """The generator's settings for a run of ``app``: its inputs only (page clicks, ad events or
    both, from its registry entry) and no anomaly.

    >>> traffic(registry.app("click_surge"))["click_share"]
    1.0
    >>> traffic(registry.app("attribution"))["click_share"]
    0.0
    """
    clicks = generator.PAGE_CLICKS.name in app.inputs
    ads = any(t != generator.PAGE_CLICKS.name for t in app.inputs)
    return dict(click_share=0.5 if clicks and ads else 1.0 if clicks else 0.0, **NO_ANOMALIES)


def rtm_slots(app: registry.App, settings: Settings) -> int:
    """Task slots the app needs in Real-Time Mode: one long-lived task per source partition plus
    one per shuffle partition, all at once (the topics' partitions as configured,
    ADLAKE_TOPIC_PARTITIONS).

    >>> local = load_settings({"ADLAKE_PROFILE": "local"})
    >>> rtm_slots(registry.app("attribution"), local), rtm_slots(registry.app("click_surge"), local)
    (8, 4)
    """
    return registry.input_partitions(app, settings) + settings.shuffle_partitions


def rtm_master(app: registry.App, settings: Settings) -> str:
    """The ops Spark master for ``app`` in Real-Time Mode: the configured one when it is not a
    local one or has the slots (:func:`rtm_slots`), else ``local[<slots>]``.

    >>> s = load_settings({"ADLAKE_PROFILE": "local", "ADLAKE_TOPIC_PARTITIONS": "4",
    ...                    "ADLAKE_SHUFFLE_PARTITIONS": "4", "ADLAKE_SPARK_MASTER_OPS": "local[8]"})
    >>> rtm_master(registry.app("attribution"), s), rtm_master(registry.app("click_surge"), s)
    ('local[16]', 'local[8]')
    """
    needed = rtm_slots(app, settings)
    local = re.fullmatch(r"local\[(\d+)\]", settings.spark_master_ops)
    if local is None or int(local.group(1)) >= needed:
        return settings.spark_master_ops
    return f"local[{needed}]"


def default_modes(app: registry.App) -> list[str]:
    """An app whose default trigger is Real-Time Mode: it and micro-batch (its comparison);
    another: its default trigger.

    >>> default_modes(registry.app("click_surge")), default_modes(registry.app("attribution"))
    (['realtime', 'processing_time'], ['processing_time'])
    """
    if app.default_trigger == "realtime":
        return ["realtime", "processing_time"]
    return [app.default_trigger]


@dataclass(frozen=True)
class Scenario:
    """One measured run: ``app`` in trigger ``mode`` at ``rate`` inputs/s, ``warmup_s`` of
    traffic then ``duration_s`` measured; ``engine`` for an app with an ``engine`` knob;
    ``app_args`` after the measured knobs (so they win); ``conf``: Spark settings for the app's
    session (``KEY=VALUE``, through ``PYSPARK_SUBMIT_ARGS``)."""

    app: registry.App
    mode: str
    rate: float
    warmup_s: float
    duration_s: float
    engine: str | None = None
    rtm_interval: str | None = None  # None: the app's own (own_interval)
    app_args: tuple[str, ...] = ()
    conf: tuple[str, ...] = ()
    # options for the app's JVM (JAVA_TOOL_OPTIONS: a flight recording, say)
    java_options: tuple[str, ...] = ()

    @property
    def interval(self) -> str:
        """The Real-Time Mode checkpoint interval the run starts the app with."""
        return self.rtm_interval or own_interval(self.app)

    @property
    def name(self) -> str:
        """The query's name (its status file, checkpoint and log)."""
        engine = f"-{self.engine}" if self.engine else ""
        return f"{self.app.name}-{self.mode}-{int(self.rate)}{engine}"


def own_interval(app: registry.App) -> str:
    """The app's own Real-Time Mode checkpoint interval (``App.rtm_interval_s``, which the
    lifecycle starts it with by default), as ``--trigger-interval`` takes it.

    >>> own_interval(registry.app("click_surge")), own_interval(registry.app("attribution"))
    ('300 seconds', '30 seconds')
    """
    return f"{app.rtm_interval_s} seconds"


def default_engine(app: registry.App) -> str | None:
    """The default of the app's ``engine`` knob; None for an app without one."""
    return next((str(k.default) for k in app.knobs if k.name == "engine"), None)


def launch(
    settings: Settings, s: Scenario, workdir: Path
) -> tuple[Settings, list[str], dict[str, str] | None]:
    """How a scenario's app is started: its settings (in Real-Time Mode, a task slot per
    partition: :func:`rtm_master`), its arguments (its query name and a checkpoint under
    ``workdir``, reading from the latest offsets, the measured knobs, the interval, the engine,
    ``app_args``) and its environment (``conf``, ``java_options``)."""
    args = [
        "--trigger",
        s.mode,
        "--query-name",
        s.name,
        "--checkpoint",
        str(workdir / "checkpoints" / s.name),
        "--starting-offsets",
        "latest",
        *knob_args(s.app),
        *(["--trigger-interval", s.interval] if s.mode == "realtime" else []),
        *(["--engine", s.engine] if s.engine else []),
        *s.app_args,
    ]
    if s.mode == "realtime":
        settings = settings.with_overrides(spark_master_ops=rtm_master(s.app, settings))
    env = {}
    if s.conf:
        env["PYSPARK_SUBMIT_ARGS"] = (
            " ".join(f"--conf {shlex.quote(c)}" for c in s.conf) + " pyspark-shell"
        )
    if s.java_options:
        env["JAVA_TOOL_OPTIONS"] = " ".join(s.java_options)
    return settings, args, env or None


def run_scenario(
    settings: Settings,
    scenario: Scenario,
    workdir: Path,
    settle_s: float = 5.0,
    drain_s: float = 5.0,
    catch_up_s: float = 0.0,
) -> Result:
    """Measure one :class:`Scenario` (the module docstring's steps) on the broker of
    ``settings``: ``settle_s`` between the query's start and the traffic (its tasks are
    scheduled), ``drain_s`` after the traffic for the outputs of the last inputs, then up to
    ``catch_up_s`` more until an output of the traffic's last second is read (a smoke run on a
    busy machine, whose batches lag)."""
    s, app, name = scenario, scenario.app, scenario.name
    load_start = load_average()
    settings, args, env = launch(settings, s, workdir)
    log = workdir / f"{name}.log"
    say(f"{name}: starting the app")
    proc = start_app(app, settings, args, log, env)
    watcher = StatusWatcher(settings, name)
    ticking = threading.Event()
    try:
        wait_started(settings, name, proc, log)
        reader = OutputReader(settings.kafka_bootstrap, app.outputs[0], app.timer_driven)
        reader.start()
        watcher.start()
        # The query is planned; give its tasks a moment to be scheduled before traffic starts.
        time.sleep(settle_s)
        total_s = s.warmup_s + s.duration_s
        config = generator.GeneratorConfig(
            rate=s.rate,
            duration_s=total_s,
            seed=int(s.rate),
            topic_partitions=settings.topic_partitions,
            **traffic(app),
        )
        started_ms = time.time() * 1000
        say(f"{name}: producing {s.rate:.0f}/s for {total_s:.0f}s ({s.warmup_s:.0f}s warm-up)")
        threading.Thread(
            target=ticker,
            daemon=True,
            args=(name, time.monotonic(), total_s, reader, watcher, ticking),
        ).start()
        report = generator.run(config, settings.kafka_bootstrap, progress=False)
        sent_until_ms = time.time() * 1000
        sent = sum(report["sent"].values())
        time.sleep(drain_s)  # outputs of the last inputs
        harness.wait_until(
            lambda: any(src >= sent_until_ms - 1000 for _, src in reader.samples),
            catch_up_s,
            poll_s=0.2,
        )
        reader.stopping.set()
        reader.join(10)
    finally:
        ticking.set()
        stop_app(proc)
        watcher.stopping.set()
    measure_from = started_ms + s.warmup_s * 1000
    outputs = [(out, src) for out, src in reader.samples if src >= measure_from]
    samples = [(src, out - src) for out, src in outputs]
    latencies = [lat for _, lat in samples]
    whole = latency_stats(latencies)
    span_s = (sent_until_ms - started_ms) / 1000
    batches: list[dict] = []
    spans: list[dict] = []
    if s.mode == "realtime":  # micro-batches are many and short: only RTM's are kept
        batches = sorted(watcher.batches.values(), key=lambda b: b["batch_id"])
        spans = boundaries(batches, outputs, measure_from, sent_until_ms, interval_ms(s.interval))
    # the timer-driven records (closes, orphans) of inputs sent in the measured window: their own
    # figure, against how late they may come
    closes = [out - src for out, src in reader.timer_samples if src >= measure_from]
    timer_driven: dict = {}
    if closes:
        bound = timer_bound_ms(app, args, s.mode, s.interval)
        timer_driven = {
            **latency_stats(closes),
            "bound_ms": bound,
            "within_bound": sum(1 for c in closes if bound is None or c <= bound),
        }
    between = between_boundaries(samples, spans, measure_from)
    result = Result(
        app=app.name,
        mode=s.mode,
        rate=s.rate,
        duration_s=s.duration_s,
        sent=sent,
        measured_outputs=len(latencies),
        latency_p50_ms=whole["p50"],
        latency_p95_ms=whole["p95"],
        latency_p99_ms=whole["p99"],
        latency_max_ms=whole["max"],
        input_rows_per_s=round(sent / span_s, 1),
        output_rows_per_s=round(len(outputs) / max(s.duration_s, 1e-9), 1),
        lag_at_end_ms=(
            round(sent_until_ms - max(src for _, src in reader.samples), 1)
            if reader.samples
            else None
        ),
        timeline=[Slice(**entry) for entry in timeline(samples, measure_from)],
        notes=[] if latencies else [f"no output measured; see {log}"],
        engine=s.engine,
        whole=whole,
        between_boundaries={k: v for k, v in latency_stats(between).items() if k != "p95"},
        quantiles_ms=quantiles(latencies),
        boundaries=[Boundary(**span) for span in spans],
        batches=batches,
        load_average=(load_start, load_average()),
        timer_driven=timer_driven,
        measure_from_ms=measure_from,
        rtm_interval=s.interval if s.mode == "realtime" else None,
    )
    say(
        f"{name}: whole {result.whole}, between boundaries "
        f"{result.between_boundaries}, {len(result.boundaries)} boundaries "
        f"(stalls ms: {[b.stall_ms for b in result.boundaries]}), sent "
        f"{result.input_rows_per_s}/s, lag at end {result.lag_at_end_ms} ms, load "
        f"{list(result.load_average)}"
    )
    return result


# -- one app -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.ops.latency", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "app",
        choices=[a.name for a in ops_apps()],
        help="the app to measure (the report's suite: bench.ops.suite)",
    )
    parser.add_argument(
        "--rates",
        "--rate",
        default="1000",
        help="input rates (events/s), comma-separated: a run each",
    )
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds per run")
    parser.add_argument(
        "--warmup",
        type=float,
        default=60.0,
        help="seconds of traffic before measuring: the JVM compiles the hot "
        "path during the first ~30-40 s of traffic, and Real-Time Mode's "
        "tail latency is several times higher until it has",
    )
    parser.add_argument(
        "--modes",
        default=None,
        help="trigger modes, compared in one run (unset: realtime,processing_time "
        "for an app whose default trigger is realtime, else the app's default)",
    )
    parser.add_argument(
        "--rtm-interval",
        default=None,
        help="Real-Time Mode checkpoint interval (timers fire at its boundaries; unset: the app's "
        "own, App.rtm_interval_s)",
    )
    parser.add_argument(
        "--engines",
        default="jvm",
        help="engines of an app with an `engine` knob (attribution: jvm, python), comma-separated",
    )
    parser.add_argument(
        "--p99-budget-ms",
        type=float,
        default=2000.0,
        help="a run whose p99 latency exceeds this did not keep up",
    )
    parser.add_argument(
        "--out", default=None, help="JSON output (unset: <reports>/bench-<app>-<time>.json)"
    )
    parser.add_argument(
        "--app-args",
        default="",
        help='more flags for the app, one string (e.g. "--window-s 30" or "--threshold 5")',
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the app's session (repeatable), passed as "
        "spark-submit's --conf through PYSPARK_SUBMIT_ARGS: for "
        "experiments with state store or scheduler settings",
    )
    return parser.parse_args(argv)


def highest_rates(results: list[Result], budget_ms: float) -> dict[str, float | None]:
    """Per ``engine/mode`` (or ``mode``), the highest rate whose p99 is within ``budget_ms`` and
    that kept up (less than 5 s behind at the end); None when none did."""
    out: dict[str, float | None] = {}
    for key in dict.fromkeys((r.engine, r.mode) for r in results):
        ok = [
            r.rate
            for r in results
            if (r.engine, r.mode) == key
            and r.latency_p99_ms is not None
            and r.latency_p99_ms <= budget_ms
            and (r.lag_at_end_ms or 0) < 5000
        ]
        out["/".join(k for k in key if k)] = max(ok) if ok else None
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_settings()
    rates = [float(r) for r in args.rates.split(",")]
    app = registry.app(args.app)
    engines = args.engines.split(",") if default_engine(app) else [None]
    scenarios = [
        Scenario(
            app,
            mode,
            rate,
            args.warmup,
            args.duration,
            engine,
            args.rtm_interval,
            tuple(shlex.split(args.app_args)),
            tuple(args.conf),
        )
        for engine in engines
        for mode in (args.modes.split(",") if args.modes else default_modes(app))
        for rate in rates
    ]
    with harness.private_broker(app.name, base) as (settings, workdir):
        results = [run_scenario(settings, s, workdir) for s in scenarios]
    summary: dict = {
        "app": args.app,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "app_args": args.app_args,
        "conf": args.conf,
        "cores": cores(),
        "results": [asdict(r) for r in results],
        "p99_budget_ms": args.p99_budget_ms,
        "highest_rate_within_p99_budget": highest_rates(results, args.p99_budget_ms),
    }
    by_mode = {r.mode: r for r in results}
    if {"realtime", "processing_time"} <= set(by_mode):
        rtm, mb = by_mode["realtime"].latency_p99_ms, by_mode["processing_time"].latency_p99_ms
        summary["p99_ratio_microbatch_over_rtm"] = round(mb / rtm, 2) if rtm and mb else None
    out = harness.write_json(
        Path(args.out) if args.out else harness.stamped(base.reports_dir, f"bench-{app.name}"),
        summary,
    )
    print(json.dumps(summary, indent=2))
    say(f"written to {out}; app logs in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
