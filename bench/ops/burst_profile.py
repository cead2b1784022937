"""Where a timer burst spends its time: one Real-Time Mode latency run of an app with its
timer-burst rules (``App.bench.burst``: attribution's 20 s window, so that every checkpoint
boundary fires the closes of the interval before it) under a flight recording of the app's JVM
(JFR, built into the JDK: ``JAVA_TOOL_OPTIONS=-XX:StartFlightRecording``), then its samples
inside each boundary's stall split by what they were running.

Not a test: it measures and reports. The stall of a boundary is the gap in the input-driven
outputs around the batch's end (``bench.ops.latency.boundaries``): the timers fire there, before
the state store commits. A sample is a task thread's stack (``Executor task launch worker``;
``jdk.ExecutionSample`` every 10 ms for Java code, ``jdk.NativeMethodSample`` every 20 ms for
threads in native code, RocksDB's JNI calls among them, so a native sample weighs two). Its
category is that of the frame nearest the top of the stack that names one (:data:`CATEGORIES`):
RocksDB, the state store around it, the Kafka producer and consumer, the rows' serialization
(JSON, projections), the app's rules (its Java port), waiting (I/O, locks, parking). The same
split over as much time between boundaries is the comparison::

    .venv/ops/bin/python -m bench.ops.burst_profile --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.burst_profile --out-dir .runtime/reports/bench --analyse-only

Writes ``<out-dir>/burst-profile/run.json`` (the latency run), ``app.jfr`` (the recording) and
``<out-dir>/burst-profile.json`` (the split, per boundary: stall, timers fired, µs of stall per
timer).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import load_settings
from adlake.helpformat import HelpFormatter
from bench import harness
from bench.harness import say
from bench.ops.latency import Scenario, default_engine, knob_flags, run_scenario

RATE, WARMUP_S, MEASURED_S, INTERVAL = 1000.0, 60.0, 120.0, "30 seconds"
RUN_DIR, SUMMARY_FILE = "burst-profile", "burst-profile.json"
TASK_THREAD = "Executor task launch worker"
# sampling periods of JFR's "profile" settings, ms: a sample stands for this much thread time
PERIOD_MS = {"jdk.ExecutionSample": 10.0, "jdk.NativeMethodSample": 20.0}
# (category, frame prefixes): a sample's category is that of its topmost frame that matches
CATEGORIES = (
    ("rocksdb", ("org.rocksdb.",)),
    (
        "waiting",
        (
            "sun.nio.ch.",
            "java.net.",
            "jdk.internal.misc.Unsafe.park",
            "java.lang.Thread.sleep",
            "java.lang.Object.wait",
        ),
    ),
    ("kafka", ("org.apache.kafka.", "org.apache.spark.sql.kafka010.")),
    ("rules", ("io.adlake.ops.",)),
    (
        "serialization",
        (
            "org.apache.spark.sql.catalyst.json.",
            "com.fasterxml.jackson.",
            "org.apache.spark.sql.catalyst.expressions.GeneratedClass",
            "org.apache.spark.sql.catalyst.expressions.UnsafeProjection",
            "org.apache.spark.sql.catalyst.encoders.",
            "org.apache.spark.sql.catalyst.expressions.codegen.",
        ),
    ),
    ("state store", ("org.apache.spark.sql.execution.streaming.",)),
)
OTHER = "other"


def category(frames: list[str]) -> str:
    """The category of a stack, frames from the top.

    >>> category(["org.rocksdb.RocksDB.get(long, byte[])", "io.adlake.ops.Attribution.close()"])
    'rocksdb'
    >>> category(["java.util.HashMap.get(Object)", "io.adlake.ops.Attribution.close()"])
    'rules'
    >>> category(["java.util.HashMap.get(Object)"])
    'other'
    """
    for frame in frames:
        for name, prefixes in CATEGORIES:
            if frame.startswith(prefixes):
                return name
    return OTHER


_EVENT = re.compile(r"^(jdk\.\w+) \{$")
_TIME = re.compile(r"^\s+startTime = (\d\d):(\d\d):(\d\d)\.(\d{3})")
_THREAD = re.compile(r'^\s+sampledThread = "([^"]*)"')


def samples(text: str, day: datetime) -> list[tuple[float, str, float]]:
    """``(epoch ms, category, weight ms)`` of each task thread's sample in ``jfr print``'s text
    (run in UTC), its time of day placed on the day of ``day`` (UTC).

    >>> text = '''jdk.ExecutionSample {
    ...   startTime = 10:00:01.500
    ...   sampledThread = "Executor task launch worker for task 3.0" (javaThreadId = 90)
    ...   stackTrace = [
    ...     org.rocksdb.RocksDB.put(long, byte[]) line: 1
    ...   ]
    ... }
    ... '''
    >>> samples(text, datetime(2026, 11, 28, 9, 59, tzinfo=UTC))
    [(1795860001500.0, 'rocksdb', 10.0)]
    """
    out, event, when, thread, frames = [], None, None, "", []
    midnight = day.replace(hour=0, minute=0, second=0, microsecond=0)
    for line in text.splitlines():
        if m := _EVENT.match(line):
            event, when, thread, frames = m.group(1), None, "", []
        elif m := _TIME.match(line):
            h, mi, s, ms = (int(g) for g in m.groups())
            at = midnight + timedelta(hours=h, minutes=mi, seconds=s, milliseconds=ms)
            if at < day - timedelta(hours=12):  # the recording went past midnight
                at += timedelta(days=1)
            when = at.timestamp() * 1000
        elif m := _THREAD.match(line):
            thread = m.group(1)
        elif line.startswith("    ") and event and not line.strip().startswith("..."):
            frames.append(line.strip())
        elif line == "}" and event in PERIOD_MS and when is not None:
            if thread.startswith(TASK_THREAD):
                out.append((when, category(frames), PERIOD_MS[event]))
            event = None
    return out


def split(
    weighted: list[tuple[float, str, float]], spans: list[tuple[float, float]]
) -> dict[str, float]:
    """Thread time (ms) per category of the samples inside ``spans`` (epoch ms pairs).

    >>> split([(5, "rocksdb", 10.0), (7, "rules", 10.0), (50, "rocksdb", 10.0)], [(0, 10)])
    {'rocksdb': 10.0, 'rules': 10.0}
    """
    total: Counter = Counter()
    for at, name, weight in weighted:
        if any(lo <= at <= hi for lo, hi in spans):
            total[name] += weight
    return dict(total)


def analyse(run: dict, recording: Path) -> dict:
    """The profile's summary: per boundary its stall, timers fired and µs of stall per timer;
    the task threads' time per category inside the stalls and inside as long a time between
    boundaries (starting 5 s after each stall)."""
    result = run["results"][0]
    start = result["measure_from_ms"]
    bounds = [b for b in result["boundaries"] if b.get("stall_ms")]
    stalls = [(start + b["stall_start_s"] * 1000, start + b["stall_end_s"] * 1000) for b in bounds]
    quiet = [(hi + 5000, hi + 5000 + (hi - lo)) for lo, hi in stalls]
    text = subprocess.run(
        [
            "jfr",
            "-J-Duser.timezone=UTC",
            "print",
            "--stack-depth",
            "64",
            "--events",
            ",".join(PERIOD_MS),
            str(recording),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    weighted = samples(text, datetime.fromtimestamp(start / 1000, UTC))
    return {
        "app": run["app"],
        "app_args": run["app_args"],
        "rate": RATE,
        "rtm_interval": INTERVAL,
        "boundaries": [
            {
                "t_s": b["t_s"],
                "stall_ms": b["stall_ms"],
                "timers_fired": b.get("timers_fired"),
                "stall_us_per_timer": round(b["stall_ms"] * 1000 / b["timers_fired"], 1)
                if b.get("timers_fired")
                else None,
            }
            for b in bounds
        ],
        "in_stalls_ms": split(weighted, stalls),
        "between_ms": split(weighted, quiet),
        "task_samples": len(weighted),
        "categories": [name for name, _ in CATEGORIES] + [OTHER],
        "load_average": result.get("load_average"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.ops.burst_profile", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="where the profile goes")
    parser.add_argument("--app", default="attribution", help="an app with timer-burst rules")
    parser.add_argument(
        "--analyse-only", action="store_true", help="summarise the run and recording present"
    )
    args = parser.parse_args(argv)
    app = registry.app(args.app)
    if app.bench.burst is None:
        print(f"bench.ops.burst_profile: {app.name} has no timer-burst rules", file=sys.stderr)
        return 2
    work = args.out_dir / RUN_DIR
    work.mkdir(parents=True, exist_ok=True)
    run_file, recording = work / "run.json", (work / "app.jfr").resolve()
    if not args.analyse_only:
        recording.unlink(missing_ok=True)
        scenario = Scenario(
            app,
            "realtime",
            RATE,
            WARMUP_S,
            MEASURED_S,
            default_engine(app),
            INTERVAL,
            tuple(knob_flags(app, app.bench.burst.knobs)),
            java_options=(
                f"-XX:StartFlightRecording=filename={recording},settings=profile,dumponexit=true",
            ),
        )
        with harness.private_broker(f"burst-{app.name}", load_settings()) as (settings, wd):
            result = run_scenario(settings, scenario, wd)
        harness.write_json(
            run_file,
            {"app": app.name, "app_args": list(scenario.app_args), "results": [asdict(result)]},
        )
    summary = analyse(json.loads(run_file.read_text()), recording)
    harness.write_json(args.out_dir / SUMMARY_FILE, summary, indent=1)
    say(f"burst profile: {json.dumps({k: summary[k] for k in ('in_stalls_ms', 'between_ms')})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
