"""Benchmark the operational apps against a local broker: end-to-end latency and throughput.

Not a test: it measures and reports, it asserts nothing. Each run starts its own Kafka broker on
free loopback ports under a temporary directory, then for every scenario:

1. starts the app as its own process (as spark-submit would) on a fresh checkpoint;
2. once the query has started, produces generated traffic at a fixed rate for a fixed time;
3. reads the app's output topic while it runs; for every output record,
   ``latency = output Kafka timestamp - source_kafka_ts`` (the Kafka timestamp of the newest
   input that produced it), skipping records whose inputs were sent during the warm-up and
   attribution's timer-driven records (see ``TIMER_DRIVEN``);
4. stops the app (SIGTERM, graceful) and reports p50/p95/p99 latency, input rows/s sent, and
   output rows/s, plus whether the app kept up (the newest source timestamp seen at the end).

    .venv/ops/bin/python -m spark_apps.ops.benchmark click_surge --rate 1000 --duration 60
    ADLAKE_SPARK_MASTER_OPS='local[16]' .venv/ops/bin/python -m spark_apps.ops.benchmark \
        attribution --modes realtime,processing_time --rates 1000,2000,4000 --warmup 120

Click-surge runs Real-Time Mode and micro-batch in one invocation so their ratio is measured on
the same machine state; attribution runs each engine (``--engines``, default the JVM one) in each
mode at each rate and reports, per engine and mode, the highest rate whose p99 stays within
``--p99-budget-ms``. In Real-Time Mode, latency is measured within a checkpoint interval unless
``--rtm-interval`` is shorter than the run: attribution's event-time timers fire at the interval's
boundary, where the query pauses (see README, "Benchmarks").
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from adlake import generator, registry
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.kafka_local import scratch_broker
from adlake.status import read_status
from spark_apps.common.attribution.contract import TIMER_DRIVEN

# Attribution records emitted by a timer (TIMER_DRIVEN: a key closing when the watermark passes
# its window's end) are late by design, by the window plus the allowed lateness: they measure
# the configuration, not the engine, and are not counted.
APP_MODULES = {name: app.module for name, app in registry.APPS.items() if app.runtime == "ops"}


@dataclass
class Result:
    app: str
    mode: str
    rate: float
    duration_s: float
    sent: int = 0
    measured_outputs: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_max_ms: float | None = None
    input_rows_per_s: float | None = None
    output_rows_per_s: float | None = None
    lag_at_end_ms: float | None = None
    # Latency over the run, per 5-second slice of source time: (seconds from the measured
    # start, outputs, p50 ms, max ms). Shows whether a tail is steady or comes in bursts.
    timeline: list[tuple[int, int, float | None, float | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    engine: str | None = None  # attribution's processor engine


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _ts_ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


class OutputReader(threading.Thread):
    """Reads an output topic from its current end; keeps (output ts, source ts) per record."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "adlake-bench",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        partitions = [TopicPartition(topic, p) for p in range(registry.topic(topic).partitions)]
        for tp in partitions:
            tp.offset = self.consumer.get_watermark_offsets(tp, timeout=10)[1]
        self.consumer.assign(partitions)
        self.samples: list[tuple[float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            msg = self.consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            value = json.loads(msg.value())
            source = value.get("source_kafka_ts")
            if source and value.get("record_type") not in TIMER_DRIVEN:
                self.samples.append((float(msg.timestamp()[1]), _ts_ms(source)))
        self.consumer.close()


def start_app(app: str, settings: Settings, args: list[str], log: Path) -> subprocess.Popen:
    """Start ``app`` (a registry name) as its own process, as spark-submit would, configured by
    ``settings`` (runtime, broker, shuffle partitions), its output appended to ``log``."""
    env = {**os.environ, "ADLAKE_PROFILE": "local", "ADLAKE_RUNTIME_DIR": str(settings.runtime_dir),
           "ADLAKE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
           "ADLAKE_KAFKA_CONTROLLER_PORT": str(settings.kafka_controller_port),
           "ADLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", APP_MODULES[app], *args], env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def wait_started(settings: Settings, name: str, proc: subprocess.Popen, log: Path,
                 timeout_s: float = 120) -> None:
    """Wait until the app's status says its query started; raise if it exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}; see {log}")
        status = read_status(settings, name)
        if status and status.get("state") in ("starting", "running"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not start within {timeout_s:.0f}s; see {log}")


def stop_app(proc: subprocess.Popen, timeout_s: float = 90) -> None:
    """SIGTERM (the app stops after its running batch commits); SIGKILL after ``timeout_s``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_scenario(settings: Settings, app: str, mode: str, rate: float, duration_s: float,
                 warmup_s: float, app_args: list[str], traffic: dict, workdir: Path,
                 engine: str | None = None) -> Result:
    name = f"{app}-{mode}-{int(rate)}" + (f"-{engine}" if engine else "")
    result = Result(app, mode, rate, duration_s, engine=engine)
    if engine:
        app_args = [*app_args, "--engine", engine]
    log = workdir / f"{name}.log"
    args = ["--trigger", mode, "--query-name", name, "--checkpoint",
            str(workdir / "checkpoints" / name), "--starting-offsets", "latest", *app_args]
    print(f"[bench] {name}: starting the app", flush=True)
    proc = start_app(app, settings, args, log)
    try:
        wait_started(settings, name, proc, log)
        reader = OutputReader(settings.kafka_bootstrap, registry.app(app).outputs[0])
        reader.start()
        # The query is planned; give its tasks a moment to be scheduled before traffic starts.
        time.sleep(5)
        config = generator.GeneratorConfig(rate=rate, duration_s=warmup_s + duration_s,
                                           seed=int(rate), **traffic)
        started_ms = time.time() * 1000
        print(f"[bench] {name}: producing {rate:.0f}/s for {warmup_s + duration_s:.0f}s "
              f"({warmup_s:.0f}s warm-up)", flush=True)
        report = generator.run(config, settings.kafka_bootstrap, progress=False)
        sent_until_ms = time.time() * 1000
        result.sent = sum(report["sent"].values())
        time.sleep(5)  # outputs of the last inputs
        reader.stopping.set()
        reader.join(10)
    finally:
        stop_app(proc)
    measure_from = started_ms + warmup_s * 1000
    latencies = [out - src for out, src in reader.samples if src >= measure_from]
    result.measured_outputs = len(latencies)
    result.latency_p50_ms = _percentile(latencies, 0.50)
    result.latency_p95_ms = _percentile(latencies, 0.95)
    result.latency_p99_ms = _percentile(latencies, 0.99)
    result.latency_max_ms = round(max(latencies), 1) if latencies else None
    span_s = (sent_until_ms - started_ms) / 1000
    result.input_rows_per_s = round(result.sent / span_s, 1)
    measured = [out for out, src in reader.samples if src >= measure_from]
    result.output_rows_per_s = round(len(measured) / max(duration_s, 1e-9), 1)
    slices: dict[int, list[float]] = {}
    for out, src in reader.samples:
        if src >= measure_from:
            slices.setdefault(int((src - measure_from) // 5000) * 5, []).append(out - src)
    result.timeline = [(start, len(values), _percentile(values, 0.5), round(max(values), 1))
                       for start, values in sorted(slices.items())]
    if reader.samples:
        result.lag_at_end_ms = round(sent_until_ms - max(src for _, src in reader.samples), 1)
    if not latencies:
        result.notes.append(f"no output measured; see {log}")
    print(f"[bench] {name}: " + json.dumps({k: v for k, v in asdict(result).items()
                                            if k not in ("app", "notes", "timeline")}),
          flush=True)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_apps.ops.benchmark", description=__doc__,
                                     formatter_class=HelpFormatter)
    parser.add_argument("app", choices=sorted(APP_MODULES), help="the app to measure")
    parser.add_argument("--rate", type=float, default=1000.0, help="click_surge input rate")
    parser.add_argument("--rates", default="500,1000,2000,4000",
                        help="attribution input rates, comma-separated")
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=60.0,
                        help="seconds of traffic before measuring: the JVM compiles the hot "
                             "path during the first ~30-40 s of traffic, and Real-Time Mode's "
                             "tail latency is several times higher until it has")
    parser.add_argument("--modes", default=None,
                        help="trigger modes, compared in one run (unset: realtime,"
                             "processing_time for click_surge; the app's default for "
                             "attribution)")
    parser.add_argument("--rtm-interval", default="5 minutes",
                        help="Real-Time Mode checkpoint interval (timers fire at its boundaries)")
    parser.add_argument("--threshold", type=int, default=0,
                        help="click_surge threshold; 0 reports every window, so every click "
                             "produces a measurable update")
    parser.add_argument("--engines", default="jvm",
                        help="attribution processor engines (jvm, python), comma-separated")
    parser.add_argument("--p99-budget-ms", type=float, default=2000.0,
                        help="a run whose p99 latency exceeds this did not keep up")
    parser.add_argument("--out", default=None, help="JSON output (unset: <reports>/bench-...)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_settings()
    workdir = Path(tempfile.mkdtemp(prefix=f"adlake-bench-{args.app}-"))
    results: list[Result] = []
    with scratch_broker(base, workdir) as settings:
        if args.app == "click_surge":
            traffic = dict(click_share=1.0, out_of_order=0, duplicates=0, late=0, malformed=0,
                           orphans=0, surge_pages=0)
            for mode in (args.modes or "realtime,processing_time").split(","):
                extra = ["--threshold", str(args.threshold)]
                if mode == "realtime":
                    extra += ["--trigger-interval", args.rtm_interval]
                results.append(run_scenario(settings, "click_surge", mode, args.rate,
                                            args.duration, args.warmup, extra, traffic, workdir))
        else:
            traffic = dict(click_share=0.0, out_of_order=0, duplicates=0, late=0, malformed=0,
                           orphans=0, surge_pages=0)
            for engine in args.engines.split(","):
                for mode in (args.modes or "processing_time").split(","):
                    extra = ["--trigger-interval", args.rtm_interval] if mode == "realtime" else []
                    for rate in [float(r) for r in args.rates.split(",")]:
                        results.append(run_scenario(settings, "attribution", mode, rate,
                                                    args.duration, args.warmup, extra, traffic,
                                                    workdir, engine))
    summary: dict = {"app": args.app, "duration_s": args.duration, "warmup_s": args.warmup,
                     "cores": os.cpu_count(), "results": [asdict(r) for r in results]}
    by_mode = {r.mode: r for r in results}
    if args.app == "click_surge" and {"realtime", "processing_time"} <= set(by_mode):
        rtm, mb = by_mode["realtime"].latency_p99_ms, by_mode["processing_time"].latency_p99_ms
        summary["p99_ratio_microbatch_over_rtm"] = round(mb / rtm, 2) if rtm and mb else None
    if args.app == "attribution":
        summary["p99_budget_ms"] = args.p99_budget_ms
        summary["highest_rate_within_p99_budget"] = {}
        for engine in args.engines.split(","):
            for mode in {r.mode for r in results}:
                ok = [r.rate for r in results if r.engine == engine and r.mode == mode
                      and r.latency_p99_ms is not None and r.latency_p99_ms <= args.p99_budget_ms
                      and (r.lag_at_end_ms or 0) < 5000]
                summary["highest_rate_within_p99_budget"][f"{engine}/{mode}"] = \
                    max(ok) if ok else None
    out = Path(args.out) if args.out else base.reports_dir / \
        f"bench-{args.app}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"[bench] written to {out}; app logs in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
