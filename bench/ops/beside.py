"""Benchmark (not a test): a streaming app's Real-Time Mode latency with the lake idle, and while
the hourly lake chain runs on the same cores, as it does on a one-machine deployment.

Both runs are :func:`bench.ops.latency.run_scenario` of the same scenario (default: click-surge
in Real-Time Mode at 200 events/s, the platform's checkpoint interval), on one private broker,
each on a fresh checkpoint:

1. **idle**: nothing else runs;
2. **beside the chain**: a thread runs the hourly chain's jobs (``registry.JOBS`` that run
   ``hourly``, in the registry's order: bronze, silver, gold's hour tables, their gate), one
   after another as the lake pool's single slot lets Airflow run them, each a process of its own
   in the lake environment over the current hour, over and over until the measured run ends.
   Bronze reads the same broker, so the chain ingests the app's own traffic and gold and the
   gate have rows. The scheduler itself is not running: its own share of the cores is not
   in the figure.

Figures: each run's whole-run p50/p99/max, the p99 ratio (beside / idle), each chain job's wall
time, the share of the measured run during which a chain job ran, and the load average.
Written as ``beside.json`` (``--out-dir``; the report's section "The lake beside the apps").

    .venv/ops/bin/python -m bench.ops.beside --out-dir .runtime/reports/bench
    .venv/ops/bin/python -m bench.ops.beside --rate 1000 --duration 300
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.bootstrap import venv_python
from bench import harness
from bench.harness import cores, load_average, say
from bench.ops.latency import Scenario, default_engine, run_scenario
from spark_apps.common.streaming.triggers import DEFAULT_RTM_INTERVAL

# The bar for the platform's one-machine shape: click-surge's p99 beside the chain.
P99_GOAL_MS = 250.0
CHAIN_JOBS = tuple(j for j in registry.JOBS.values() if j.runs("hourly"))


def busy_share(jobs: list[dict], start: float, end: float) -> float:
    """The share of ``[start, end]`` (epoch seconds) covered by the jobs' ``[started, ended]``
    spans (they run one at a time, so the spans do not overlap).

    >>> busy_share([{"started": 0, "ended": 5}, {"started": 6, "ended": 20}], 2, 12)
    0.9
    """
    covered = sum(
        max(0.0, min(j["ended"], end) - max(j["started"], start)) for j in jobs if "ended" in j
    )
    return round(covered / (end - start), 3) if end > start else 0.0


class Chain(threading.Thread):
    """The hourly chain's jobs in a loop, each a lake-environment process over the current
    hour, until :attr:`stopping` is set (the running job is then terminated: its partial
    write is what a killed task leaves, and the work directory is thrown away)."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        super().__init__(daemon=True, name="chain")
        self.settings, self.workdir = settings, workdir
        self.stopping = threading.Event()
        self.jobs: list[dict] = []
        self._proc: subprocess.Popen | None = None

    def run(self) -> None:
        log = self.workdir / "chain.log"
        while not self.stopping.is_set():
            for job in CHAIN_JOBS:
                if self.stopping.is_set():
                    return
                hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
                interval = ["--start", hour.isoformat(), "--end", (hour + timedelta(hours=1))]
                gate = ["--outcome-dir", str(self.workdir / "outcomes")] if job.gate else []
                entry = {"job": job.name, "started": time.time()}
                with open(log, "ab") as out:
                    self._proc = subprocess.Popen(
                        [
                            str(venv_python("lake")),
                            "-m",
                            job.module,
                            *job.args,
                            *map(str, interval),
                            *gate,
                        ],
                        env=harness.process_env(harness.own_session(self.settings)),
                        cwd=REPO_ROOT,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                    entry["exit"] = self._proc.wait()
                entry["ended"] = time.time()
                entry["seconds"] = round(entry["ended"] - entry["started"], 1)
                entry["stopped"] = self.stopping.is_set()
                self.jobs.append(entry)
                say(f"chain: {job.name} {entry['seconds']} s (exit {entry['exit']})", "beside")

    def stop(self) -> None:
        self.stopping.set()
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
        self.join(120)


def measure(args: argparse.Namespace) -> dict:
    app = registry.app(args.app)
    scenario = Scenario(
        app,
        "realtime",
        args.rate,
        args.warmup,
        args.duration,
        default_engine(app),
        args.rtm_interval,
    )
    runs: dict[str, dict] = {}
    errors: list[str] = []
    with harness.private_broker("beside", load_settings()) as (settings, workdir):
        say(f"idle: {scenario.name}, {args.warmup:.0f} s warm-up, {args.duration:.0f} s", "beside")
        (workdir / "idle").mkdir()
        runs["idle"] = asdict(run_scenario(settings, scenario, workdir / "idle"))
        (workdir / "chain").mkdir()
        chain = Chain(settings, workdir / "chain")
        say(f"beside: the chain {[j.name for j in CHAIN_JOBS]} in a loop", "beside")
        chain.start()
        started = time.time()
        try:
            runs["beside"] = asdict(run_scenario(settings, scenario, workdir / "chain"))
        finally:
            ended = time.time()
            chain.stop()
        failed = [j for j in chain.jobs if j["exit"] and not j["stopped"]]
        errors += [f"chain job {j['job']} exited {j['exit']}; see {workdir}/chain" for j in failed]
    idle, beside = (runs[k]["whole"].get("p99") for k in ("idle", "beside"))
    return {
        "app": app.name,
        "mode": "realtime",
        "rate": args.rate,
        "warmup_s": args.warmup,
        "duration_s": args.duration,
        "rtm_interval": args.rtm_interval,
        "cores": cores(),
        "runs": runs,
        "chain": {
            "jobs": chain.jobs,
            "busy_share": busy_share(chain.jobs, started, ended),
            "loops": sum(1 for j in chain.jobs if j["job"] == CHAIN_JOBS[-1].name),
        },
        "p99_ratio": round(beside / idle, 2) if idle and beside else None,
        "goals": [
            {
                "goal": f"{app.name} whole-run p99 in Real-Time Mode at {args.rate:,.0f} "
                "events/s while the hourly chain runs on the same cores",
                "target": f"<= {P99_GOAL_MS:.0f} ms",
                "measured": f"{beside:,.0f} ms (lake idle: {idle:,.0f} ms)"
                if beside and idle
                else "not measured",
                "met": beside is not None and beside <= P99_GOAL_MS,
                "bound": "the cores the chain's Spark drivers take from the app's tasks",
            }
        ],
        "errors": errors,
        "load_average_end": load_average(),
        "workdir": str(workdir),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.ops.beside", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--app",
        default="click_surge",
        choices=[a.name for a in registry.APPS.values() if a.default_trigger == "realtime"],
        help="the app measured",
    )
    parser.add_argument("--rate", type=float, default=200.0, help="events/s")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds before measuring")
    parser.add_argument("--duration", type=float, default=240.0, help="measured seconds per run")
    parser.add_argument(
        "--rtm-interval", default=DEFAULT_RTM_INTERVAL, help="Real-Time Mode checkpoint interval"
    )
    parser.add_argument("--out-dir", default=None, help="where beside.json goes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir = Path(args.out_dir) if args.out_dir else harness.report_dir(load_settings())
    summary = measure(args)
    path = harness.write_json(out_dir / "beside.json", summary, indent=1)
    runs = summary["runs"]
    say(
        f"p99 idle {runs['idle']['whole'].get('p99')} ms, beside the chain "
        f"{runs['beside']['whole'].get('p99')} ms (x{summary['p99_ratio']}); chain busy "
        f"{summary['chain']['busy_share']:.0%} of the run; written to {path}",
        "beside",
    )
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
