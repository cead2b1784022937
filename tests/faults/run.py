"""The long form of the lake fault tier (``make faults``): each lake job killed (SIGKILL) several
times as its own process, first at its dangerous moment, then at random moments from a seeded
RNG, each kill on the state the previous one left; then a clean finish and a comparison with the
uninterrupted run. Writes a report (Markdown and JSON) under ``<runtime>/reports/faults/``
(the configured runtime, beside the ops fault tests' results) and prints its path.

    .venv/lake/bin/python -m tests.faults.run --seed 7 --kills 4 --count 3000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from tests.faults import harness

# Random kills fall this many seconds after the job's start: from the JVM's start (nothing
# written yet) to past a typical run's end (the job may finish first: recorded, not a kill).
RANDOM_KILL_S = (8.0, 60.0)


def run_job(
    spark, lake: harness.Lake, job: str, kills: int, rng: random.Random, work: Path
) -> dict:
    settings = lake.fork(harness.STAGE[job], work / job)
    injected: list[harness.Kill] = []
    for i in range(kills):
        moment = (
            harness.dangerous_moment(settings, job)
            if i == 0
            else harness.after_seconds(rng.uniform(*RANDOM_KILL_S), settings, job)
        )
        proc = harness.start_job(settings, harness.job_argv(job, lake.report), f"{job}-{i}")
        injected.append(harness.kill_when(job, proc, moment))
    recover_s = harness.finish_in_process(spark, settings, job, lake.report)
    diffs = harness.compare_job(spark, lake.settings, settings, job)
    return {
        "job": job,
        "runs": kills + 1,
        "faults": [asdict(k) for k in injected],
        "kills_hit": sum(k.hit for k in injected),
        "time_to_recover_s": round(recover_s, 1),
        "tables": [asdict(d) | {"equal": d.equal} for d in diffs],
        "records_in": sum(d.expected for d in diffs),
        "records_out": sum(d.got for d in diffs),
        "lost": sum(d.lost for d in diffs),
        "extra": sum(d.extra for d in diffs),
        "duplicated": sum(d.duplicated for d in diffs),
    }


def markdown(result: dict) -> str:
    lines = [
        f"# Lake fault injection (seed {result['seed']}, {result['records_sent']} records sent)",
        "",
        "| job | runs | kills hit | records in | out | lost | extra | "
        "duplicated (ids) | time to recover |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for j in result["jobs"]:
        lines.append(
            f"| {j['job']} | {j['runs']} | {j['kills_hit']} | {j['records_in']} | "
            f"{j['records_out']} | {j['lost']} | {j['extra']} | {j['duplicated']} | "
            f"{j['time_to_recover_s']} s |"
        )
    lines += [
        "",
        "## Faults injected",
        "",
        "| job | moment | hit | what the files said | after |",
        "|---|---|---|---|---|",
    ]
    for j in result["jobs"]:
        for k in j["faults"]:
            hit = "yes" if k["hit"] else f"no (exited {k['exit_code']})"
            lines.append(
                f"| {k['job']} | {k['moment']} | {hit} | {k['observed']} | {k['after_s']:.1f} s |"
            )
    lines += ["", f"All tables equal to the uninterrupted run: **{result['ok']}**", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tests.faults.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=7, help="RNG seed (traffic and moments)")
    parser.add_argument("--kills", type=int, default=4, help="kills per job")
    parser.add_argument("--count", type=int, default=3000, help="generated base events")
    parser.add_argument("--jobs", default=",".join(harness.JOBS))
    args = parser.parse_args(argv)

    from adlake import generator
    from adlake.config import load_settings
    from adlake.local.kafka import LocalKafka
    from adlake.spark_session import get_session
    from tests.conftest import private_settings

    work = Path(tempfile.mkdtemp(prefix="adlake-faults-"))
    settings = private_settings(work / "reference")
    rng = random.Random(args.seed)
    broker = LocalKafka(settings)
    broker.start()
    try:
        broker.create_topics()
        report = generator.run(
            harness.traffic(args.seed, args.count), settings.kafka_bootstrap, progress=False
        )
        spark = get_session("lake", "faults", settings.with_overrides(lake_engine="local"))
        lake = harness.Lake(settings, report)
        started = time.monotonic()
        lake.build(spark)
        print(f"[faults] reference run in {time.monotonic() - started:.0f} s", flush=True)
        jobs = []
        for job in args.jobs.split(","):
            jobs.append(run_job(spark, lake, job, args.kills, rng, work / "faulted"))
            summary = {k: v for k, v in jobs[-1].items() if k not in ("faults", "tables")}
            print(f"[faults] {job}: {json.dumps(summary)}", flush=True)
    finally:
        broker.stop()
    result = {
        "side": "lake",
        "seed": args.seed,
        "records_sent": sum(report["sent"].values()),
        "jobs": jobs,
        "ok": all(t["equal"] for j in jobs for t in j["tables"]),
    }
    # Beside the ops fault tests' results, where tests.faults.report reads both.
    out_dir = load_settings().reports_dir / "faults"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"lake-{time.strftime('%Y%m%dT%H%M%S')}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str))
    stem.with_suffix(".md").write_text(markdown(result))
    print(f"[faults] report: {stem}.md and {stem}.json", flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
