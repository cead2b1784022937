"""Soak the operational apps: hours-long health at a steady rate, sampled every minute.

Not a test: it measures and reports. Like the latency benchmark (:mod:`bench.ops.latency`, whose
measured knobs and Real-Time Mode sizing it uses), it starts a broker of its own on free loopback
ports under a temporary directory (:mod:`bench.harness`) and runs every operational app of the
registry as its own process on a fresh checkpoint, in its default trigger: attribution in
micro-batches (JVM engine), click-surge in Real-Time Mode with threshold 0 (every click updates
its window, so every click is an output whose latency is measured). Then:

1. the generator sends ``--rate`` events/s to *each* app (ad chains and page clicks, in the share
   of the apps that read them: half each of twice the rate; malformed records, duplicates,
   out-of-order events and orphans at the generator's defaults, no late events: see "no loss")
   for ``--duration-min`` minutes;
2. every ``--sample-s`` seconds, per app (:mod:`bench.ops.soak_samples`): rows in state and the
   state store's memory (RocksDB's, from the query's progress), the checkpoint directory's size
   and file count, the driver JVM's heap (``jcmd <pid> GC.heap_info``: used and committed) and
   resident memory, the measured end-to-end latency p50/p99 (the status file's ``e2e_latency``,
   from the app's own probe of its output topic) and the input rate;
3. when the traffic ends: every app must read every input offset, then one closing request
   (:func:`adlake.generator.closing_request`) moves the watermark of every app with state that
   reads ad requests (attribution) past every key's close (:func:`closed_by_request`), and the
   counts in and out are compared (:func:`bench.ops.soak_accounting.account`);
4. the samples, the verdict (each metric flat after the warm-up,
   :func:`bench.ops.soak_samples.trend`) and the counts go to
   ``<reports>/soak/soak-<time>.json``, the plot to the ``.png`` beside it.

**No loss** (:mod:`bench.ops.soak_accounting`), from the generator's own report (what was sent
and what of it is malformed or a duplicate, by the rules the DLQs apply) against the outputs read
back and deduplicated by ids:

* each DLQ holds exactly the malformed records of its app's topics;
* each app's outputs, by their meaning (:data:`bench.ops.soak_accounting.OUTPUT_CHECKS`; an
  app without an entry: each of its output topics holds records,
  :func:`bench.ops.soak_accounting.generic_checks`):
* attribution: every distinct valid request is closed once (``request_closed``), every distinct
  valid impression is emitted once as ``attributed_impression`` or ``orphan_impression``, every
  distinct valid callback once as ``attributed_callback`` or ``orphan_callback``;
* click-surge: the final counts of all windows (the highest ``click_count`` per
  ``page_id|window_start``) add up to the valid clicks (click-surge counts duplicates: each is a
  click record), less the clicks the watermark dropped as late (the status's ``late_rows``; the
  generator sends no late events here, so normally none).

    .venv/ops/bin/python -m bench.ops.soak                       # 30 minutes (make soak)
    .venv/ops/bin/python -m bench.ops.soak --duration-min 3 --sample-s 15 --warmup-min 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from adlake import generator, registry
from adlake.apps import committed_offsets
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.status import read_status
from bench import harness
from bench.harness import start_app, stop_app, wait_started, wait_until
from bench.ops.latency import knob_args, ops_apps, rtm_master
from bench.ops.soak_accounting import account
from bench.ops.soak_samples import METRICS, plot, sample_app, trend

# -- the broker and the checkpoints, read when the traffic ends ------------------------------------


def read_values(settings: Settings, topic: str, timeout_s: float = 600) -> list[dict]:
    """Every record of ``topic`` (its partitions as configured) up to its end offsets now, as
    JSON objects."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "group.id": f"soak-{uuid.uuid4()}",
            "enable.auto.commit": False,
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(registry.partitions(topic, settings))
        }
        left = {p: end for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in left])
        out: list[dict] = []
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=5000, timeout=1.0):
                if msg.error() or msg.partition() not in left:
                    continue
                if msg.offset() < ends[msg.partition()]:
                    out.append(json.loads(msg.value()))
                if msg.offset() >= ends[msg.partition()] - 1:
                    del left[msg.partition()]
        if left:
            raise RuntimeError(f"reading {topic} timed out with partitions {sorted(left)} unread")
        return out
    finally:
        consumer.close()


def committed_watermark_ms(checkpoint: Path) -> int | None:
    """The watermark the checkpoint's last committed batch ran with (``batchWatermarkMs`` of
    its ``offsets/N``; None before the first commit): its timers up to it have fired."""
    commits = checkpoint / "commits"
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    if not ids:
        return None
    try:
        metadata = (checkpoint / "offsets" / str(max(ids))).read_text().splitlines()[1]
        return int(json.loads(metadata)["batchWatermarkMs"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def committed_all(settings: Settings, app: registry.App, checkpoint: Path) -> bool:
    """The app's last committed batch ends at every input partition's end offset."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": settings.kafka_bootstrap, "group.id": f"soak-{uuid.uuid4()}"}
    )
    try:
        ends = {
            t: {
                str(p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1]
                for p in range(registry.partitions(t, settings))
            }
            for t in app.inputs
        }
    finally:
        consumer.close()
    return committed_offsets(checkpoint) == ends


# -- the run -------------------------------------------------------------------------------------


def app_flags(app: registry.App, checkpoint: Path, rtm_interval: str) -> list[str]:
    """``app``'s flags in the soak: its default trigger on ``checkpoint`` from the earliest
    offsets (the broker is new, its topics empty, and "latest" would be resolved only at the
    query's first batch, after the traffic may have begun), the knob values of its measured runs
    and, in Real-Time Mode, ``rtm_interval``.

    >>> app_flags(registry.app("click_surge"), Path("c"), "30 seconds")[-4:]
    ['--threshold', '0', '--trigger-interval', '30 seconds']
    """
    realtime = app.default_trigger == "realtime"
    return [
        "--trigger",
        app.default_trigger,
        "--checkpoint",
        str(checkpoint),
        "--starting-offsets",
        "earliest",
        *knob_args(app),
        *(["--trigger-interval", rtm_interval] if realtime else []),
    ]


def traffic_flags(
    apps: tuple[registry.App, ...], rate: float, duration_min: float, seed: int
) -> list[str]:
    """The generator's flags for ``rate`` events/s to each of ``apps``: the share of clicks is
    that of the apps reading them; no late events (see "no loss").

    >>> traffic_flags(ops_apps(), 1000.0, 30.0, 7)[:4]
    ['--rate', '2000.0', '--click-share', '0.5']
    """
    click_share = sum(generator.PAGE_CLICKS.name in a.inputs for a in apps) / len(apps)
    return [
        "--rate",
        str(len(apps) * rate),
        "--click-share",
        str(click_share),
        "--late",
        "0",
        "--duration",
        str(duration_min * 60),
        "--seed",
        str(seed),
    ]


def closed_by_request(apps: tuple[registry.App, ...]) -> dict[str, float]:
    """The apps whose keys a closing request (an ad request) closes, those with state that read
    ad requests, each with its watermark's delay (ms): the batch whose watermark is the request's
    time less it closes every key.

    >>> closed_by_request(ops_apps())
    {'attribution': 30000.0}
    """
    return {
        a.name: a.state.seconds(a.state.delay, dict(a.bench.knobs), a) * 1000
        for a in apps
        if a.state is not None and generator.AD_REQUESTS.name in a.inputs
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench.ops.soak", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--duration-min", type=float, default=30.0, help="minutes of traffic")
    parser.add_argument("--rate", type=float, default=1000.0, help="events/s to each app")
    parser.add_argument("--sample-s", type=float, default=60.0, help="seconds between samples")
    parser.add_argument(
        "--warmup-min",
        type=float,
        default=12.0,
        help="minutes left out of the verdict: attribution's state fills for "
        "window + lateness + one more window of tombstones (about 11 "
        "minutes with the default knobs)",
    )
    parser.add_argument(
        "--rtm-interval",
        default="30 seconds",
        help="the Real-Time Mode checkpoint interval of the apps run in it (their default "
        "trigger: click-surge)",
    )
    parser.add_argument("--seed", type=int, default=7, help="the generator's seed")
    parser.add_argument(
        "--drain-timeout-s",
        type=float,
        default=600.0,
        help="how long the apps may take to read the last input after the traffic ends",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report (unset: <reports>/soak/soak-<time>.json); the plot "
        "is written beside it with the suffix .png",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = load_settings()
    out = args.out or harness.stamped(base.reports_dir / "soak", "soak")
    warmup_s = args.warmup_min * 60
    samples: list[dict] = []
    procs: dict[str, subprocess.Popen] = {}
    notes: list[str] = []
    apps = ops_apps()
    with harness.private_broker("soak", base) as (settings, workdir):
        checkpoints = {a.name: workdir / "checkpoints" / a.name for a in apps}
        try:
            for app in apps:
                procs[app.name] = start_app(
                    app,
                    settings.with_overrides(spark_master_ops=rtm_master(app, settings))
                    if app.default_trigger == "realtime"
                    else settings,
                    app_flags(app, checkpoints[app.name], args.rtm_interval),
                    workdir / f"{app.name}.log",
                )
            for app in apps:
                wait_started(
                    settings, app.name, procs[app.name], workdir / f"{app.name}.log", timeout_s=300
                )
            report_path = workdir / "generator.json"
            # The generator in a process of its own: its pacing must not share this one's GIL.
            traffic = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "adlake.generator",
                    *traffic_flags(apps, args.rate, args.duration_min, args.seed),
                    "--bootstrap",
                    settings.kafka_bootstrap,
                    "--report",
                    str(report_path),
                ],
                stdout=subprocess.DEVNULL,
                stderr=open(workdir / "generator.log", "wb"),  # noqa: SIM115 - the child owns it
                env=harness.process_env(settings),
            )
            started = time.monotonic()
            harness.say(
                f"{args.rate:.0f} events/s to each app for {args.duration_min:g} min; "
                f"sampling every {args.sample_s:g} s; work dir {workdir}",
                tag="soak",
            )
            while True:
                due = started + (len(samples) + 1) * args.sample_s
                while time.monotonic() < due and traffic.poll() is None:
                    time.sleep(min(1.0, max(0.0, due - time.monotonic())))
                if traffic.poll() is not None:
                    break
                sample = {
                    "t_s": round(time.monotonic() - started, 1),
                    **{
                        a.name: sample_app(settings, a.name, procs[a.name].pid, checkpoints[a.name])
                        for a in apps
                    },
                }
                samples.append(sample)
                harness.say(
                    f"{sample['t_s'] / 60:.1f} min: "
                    + "; ".join(
                        f"{a.name} state {sample[a.name]['state_rows']} rows, heap "
                        f"{sample[a.name]['heap_used_mb']} MB, checkpoint "
                        f"{sample[a.name]['checkpoint_mb']} MB/{sample[a.name]['checkpoint_files']}"
                        f" files, e2e p99 {sample[a.name]['e2e_p99_ms']} ms"
                        for a in apps
                    ),
                    tag="soak",
                )
            if traffic.returncode != 0:
                raise RuntimeError(
                    f"the generator exited with {traffic.returncode}; see "
                    f"{workdir / 'generator.log'}"
                )
            report = json.loads(report_path.read_text())
            caught_up = {
                a.name: wait_until(
                    lambda a=a: committed_all(settings, a, checkpoints[a.name]),
                    args.drain_timeout_s,
                )
                for a in apps
            }
            closing_id = f"soak-close-{uuid.uuid4()}"
            value, ts = generator.closing_request(closing_id, int(time.time() * 1000))
            _produce(settings, closing_id, value, ts)
            # Read, it moves the watermark; the batch run with that watermark closes every key.
            closed = all(
                wait_until(
                    lambda name=name, delay_ms=delay_ms: (
                        (committed_watermark_ms(checkpoints[name]) or 0) >= ts - delay_ms
                    ),
                    args.drain_timeout_s,
                )
                for name, delay_ms in closed_by_request(apps).items()
            )
            if not closed:
                notes.append(
                    "the closing request did not close the keys in time: the counts "
                    "of requests and orphans are incomplete"
                )
            late = {
                a.name: int((read_status(settings, a.name) or {}).get("late_rows") or 0)
                for a in apps
            }
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    stop_app(proc)
        topics = dict.fromkeys(t for a in apps for t in (*a.outputs, a.dlq) if t)
        outputs = {name: read_values(settings, name) for name in topics}
    counts = account(report, outputs, late, closing_id)
    summary = {
        "rate_per_app": args.rate,
        "duration_min": args.duration_min,
        "sample_s": args.sample_s,
        "warmup_min": args.warmup_min,
        "cores": harness.cores(),
        "seed": args.seed,
        "sent": report["sent"],
        "elapsed_s": report["elapsed_s"],
        "caught_up": caught_up,
        "closed": closed,
        "trends": {
            a.name: {
                m: trend([(s["t_s"], s[a.name].get(m)) for s in samples], warmup_s)
                for m, _ in METRICS
            }
            for a in apps
        },
        "counts": counts,
        "no_loss": all(c["lost"] == 0 for c in counts.values()),
        "notes": notes,
        "samples": samples,
        "work_dir": str(workdir),
    }
    harness.write_json(out, summary)
    title = (
        f"soak: {args.rate:.0f} events/s to each app, {args.duration_min:g} min, "
        f"{harness.cores()} cores (no loss: {summary['no_loss']})"
    )
    png = plot(samples, warmup_s, out.with_suffix(".png"), title)
    print(
        json.dumps(
            {k: summary[k] for k in ("sent", "caught_up", "closed", "counts", "no_loss", "trends")},
            indent=1,
        )
    )
    harness.say(f"report {out}, plot {png}; app logs in {workdir}", tag="soak")
    return 0 if summary["no_loss"] else 1


def _produce(settings: Settings, key: str, value: bytes, timestamp_ms: int) -> None:
    from confluent_kafka import Producer

    topic = generator.AD_REQUESTS
    producer = Producer({"bootstrap.servers": settings.kafka_bootstrap, "enable.idempotence": True})
    producer.produce(
        topic.name,
        value=value,
        key=key.encode(),
        partition=generator.partition_for(topic, key, registry.partitions(topic, settings)),
        timestamp=timestamp_ms,
    )
    if producer.flush(30):
        raise RuntimeError(f"the closing request to {topic.name} was not delivered")


if __name__ == "__main__":
    sys.exit(main())
