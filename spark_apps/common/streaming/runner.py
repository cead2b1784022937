"""The one runner of every operational streaming app: arguments, checkpoint, stop marker, status
listener, start, graceful stop.

An app declares what is its own in a :class:`StreamingApp` (its registry entry, default trigger,
knobs and how to build its query frame) and its ``main`` is ``run(SPEC, argv)``; everything else
means the same for every app:

* ``--checkpoint PATH``: a relative path lives under ``<runtime>/checkpoints/``, an absolute one
  is used as it is; the default is ``<runtime>/checkpoints/<query name>``
  (:func:`resolve_checkpoint`).
* the stop marker is ``adlake.status.stop_marker(settings, <query name>)``; SIGTERM, SIGINT,
  the marker or ``--stop-after-s`` stop the query after its running batch commits.
* the status file is ``<runtime>/status/<query name>.json``, with the app's knobs in it, and
  with ``spark_metrics`` on, ``metrics_url``: the driver's Prometheus endpoint (also logged).

    .venv/ops/bin/python -m spark_apps.ops.click_surge --help
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adlake import registry
from adlake.apps.launcher import LOCK_HELD, LockHeld, checkpoint_lock, describe, holding
from adlake.apps.supervisor import interval_s
from adlake.config import Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.status import stop_marker
from spark_apps.common.streaming.triggers import (
    DEFAULT_RTM_INTERVAL,
    TRIGGER_MODES,
    TriggerConfig,
    check_task_slots,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class StreamingApp:
    """What one operational app adds to the runner.

    ``build(raw, args, trigger)`` turns the raw Kafka records of the app's inputs into the
    records it writes (columns topic, key, value); ``output_mode(trigger)`` is the sink's output
    mode. The app's knobs (registry ``App.knobs``) become flags here, are shown at start and kept
    in its status; ``add_arguments`` adds flags that are not knobs, ``check`` validates
    combinations (an error message, or None).
    """

    app: registry.App
    description: str
    build: Callable[[DataFrame, argparse.Namespace, TriggerConfig], DataFrame]
    output_mode: Callable[[TriggerConfig], str]
    add_arguments: Callable[[argparse.ArgumentParser], None] = field(default=lambda parser: None)
    check: Callable[[argparse.Namespace], str | None] = field(default=lambda args: None)


def _starting_offsets(text: str) -> str:
    """``earliest``, ``latest`` or a JSON object ``{"topic": {"partition": offset}}``."""
    if text in ("earliest", "latest"):
        return text
    try:
        offsets = json.loads(text)
    except json.JSONDecodeError:
        offsets = None
    if not isinstance(offsets, dict) or not all(
        isinstance(parts, dict) and all(isinstance(o, int) for o in parts.values())
        for parts in offsets.values()
    ):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not earliest, latest or a JSON object of offsets per topic and "
            'partition, e.g. {"page_clicks": {"0": 42, "1": 40}}'
        )
    return text


def build_parser(spec: StreamingApp) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=spec.app.module, description=spec.description, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--trigger",
        choices=TRIGGER_MODES,
        default=spec.app.default_trigger,
        help="realtime: Real-Time Mode; processing_time: micro-batches",
    )
    parser.add_argument(
        "--trigger-interval",
        default=None,
        help=f"realtime: checkpoint interval (the app's own, {spec.app.rtm_interval_s} seconds, "
        "when unset); processing_time: batch interval (0 seconds when unset)",
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        type=Path,
        help="checkpoint directory; a relative path is under "
        "<runtime>/checkpoints/ (unset: <runtime>/checkpoints/<query name>)",
    )
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        type=_starting_offsets,
        help="where a new checkpoint starts reading: earliest, latest, or "
        "Spark's JSON of offsets per topic and partition (a mode switch "
        "to a new checkpoint starts at the old one's committed offsets)",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        default=None,
        help="cap on records per micro-batch (unset: no cap)",
    )
    parser.add_argument(
        "--stop-after-s",
        type=float,
        default=None,
        help="stop gracefully after this many seconds (tests, benchmarks)",
    )
    parser.add_argument(
        "--query-name",
        default=spec.app.name,
        help="names the query, its status file, stop marker and default checkpoint",
    )
    for knob in spec.app.knobs:
        parser.add_argument(
            knob.flag,
            type=_KNOB_TYPES[knob.type],
            default=knob.default,
            choices=knob.choices or None,
            help=knob.description,
        )
    spec.add_arguments(parser)
    return parser


_KNOB_TYPES = {"integer": int, "number": float, "string": str}


def parse_args(spec: StreamingApp, argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser(spec)
    args = parser.parse_args(argv)
    for knob in spec.app.knobs:
        try:
            setattr(args, knob.name, knob.parse(getattr(args, knob.name)))
        except ValueError as refused:
            parser.error(f"{knob.flag}: {refused}")
    # the app's knob rules (its registry entry), as the lifecycle checks them, then its own
    problem = spec.app.refusal(args.trigger, knob_values(spec, args)) or spec.check(args)
    if problem:
        parser.error(problem)
    return args


def knob_values(spec: StreamingApp, args: argparse.Namespace) -> dict[str, Any]:
    """The app's knobs (registry ``App.knobs``) as parsed."""
    return {knob.name: getattr(args, knob.name) for knob in spec.app.knobs}


def resolve_checkpoint(settings: Settings, checkpoint: Path | str | None, query_name: str) -> Path:
    """The checkpoint directory ``--checkpoint`` means, the same for every app.

    >>> from adlake.config import load_settings
    >>> s = load_settings({"ADLAKE_RUNTIME_DIR": "/rt"})
    >>> str(resolve_checkpoint(s, None, "click_surge"))
    '/rt/checkpoints/click_surge'
    >>> str(resolve_checkpoint(s, "trial", "click_surge"))
    '/rt/checkpoints/trial'
    >>> str(resolve_checkpoint(s, "/data/cp", "click_surge"))
    '/data/cp'
    """
    if checkpoint is None:
        return settings.checkpoint_path(query_name)
    path = Path(checkpoint)
    return path if path.is_absolute() else settings.checkpoints_dir / path


def run(spec: StreamingApp, argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """Parse ``argv``, start the app's query and block until it stops; returns the exit status
    (0 after a graceful stop; a failed query raises).

    The query runs holding its lock, ``<runtime>/locks/<query name>.lock``: the one the
    lifecycle's launcher holds for the app (then left to it), taken here when the app is started
    by hand; and its checkpoint's (``<checkpoint>.lock``, beside it), whatever its name. While
    another process holds either (the managed app, or another copy, under any name on the same
    checkpoint) nothing starts: the refusal names that process and the status is
    :data:`LOCK_HELD`."""
    args = parse_args(spec, argv)
    settings = settings or load_settings()
    interval = args.trigger_interval
    if args.trigger == "realtime" and interval is None:
        # the app's own checkpoint interval (its registry entry), as the lifecycle starts it
        interval = f"{spec.app.rtm_interval_s} seconds"
    trigger = TriggerConfig(args.trigger, interval)
    name = args.query_name
    checkpoint = resolve_checkpoint(settings, args.checkpoint, name)
    command = [sys.executable, "-m", spec.app.module, *(sys.argv[1:] if argv is None else argv)]
    try:
        with (
            holding(settings.locks_dir / f"{name}.lock", trigger.mode, command),
            holding(checkpoint_lock(checkpoint), trigger.mode, command),
        ):
            return _run_query(spec, args, settings, trigger, checkpoint)
    except LockHeld as held:
        what = (
            f"its checkpoint {checkpoint} is in use by {describe(held.record)}"
            if held.lock == checkpoint_lock(checkpoint)
            else f"{name} is running already, {describe(held.record)}"
        )
        print(
            f"[{name}] not starting: {what} (it holds {held.lock}); stop it first, or run this "
            "copy with another --query-name and --checkpoint",
            file=sys.stderr,
            flush=True,
        )
        return LOCK_HELD


def _run_query(
    spec: StreamingApp,
    args: argparse.Namespace,
    settings: Settings,
    trigger: TriggerConfig,
    checkpoint: Path,
) -> int:
    """:func:`run`'s query, once its lock is held."""
    from adlake.spark_session import get_session, metrics_url
    from spark_apps.common.streaming.kafka_io import read_kafka, write_kafka
    from spark_apps.common.streaming.lifecycle import GracefulStop
    from spark_apps.common.streaming.listener import (
        ALIVE_EVERY_S,
        StatusReporter,
        attach_listener,
        query_alive,
    )

    if trigger.mode == "realtime":
        check_task_slots(settings, spec.app)
    name = args.query_name
    stop = GracefulStop(marker=stop_marker(settings, name), deadline_s=args.stop_after_s)
    stop.install()

    knobs = knob_values(spec, args)
    spark = get_session(spec.app.runtime, name, settings)
    reporter = StatusReporter(settings, name, trigger.mode, spec=spec.app)
    reporter.extra.update(knobs)
    url = metrics_url(spark, settings)
    if url:
        reporter.extra["metrics_url"] = url
        print(f"[{name}] metrics: {url}", flush=True)
    attach_listener(spark, reporter)
    raw = read_kafka(
        spark, settings, list(spec.app.inputs), args.starting_offsets, args.max_offsets_per_trigger
    )
    query = write_kafka(
        spec.build(raw, args, trigger),
        settings,
        checkpoint,
        trigger,
        spec.output_mode(trigger),
        name,
    )
    shown = " ".join(f"{k}={v}" for k, v in knobs.items())
    print(
        f"[{name}] running: trigger={trigger.kwargs()} {shown} checkpoint={checkpoint}", flush=True
    )
    if trigger.mode == "realtime":
        # a batch reports only at its boundary: between them, say the query is alive (at least
        # once per interval)
        every_s = min(ALIVE_EVERY_S, interval_s(trigger.interval or DEFAULT_RTM_INTERVAL) / 2)
        stop.run(query, every=(every_s, lambda: query_alive(query) and reporter.alive()))
    else:
        stop.run(query)
    print(f"[{name}] stopped ({stop.reason or 'query ended'})", flush=True)
    spark.stop()
    return 0
