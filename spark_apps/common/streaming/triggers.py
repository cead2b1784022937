"""Triggers and the task slots Real-Time Mode needs.

Every app takes its trigger as configuration, so moving an app between Real-Time Mode and
micro-batches is a flag (``--trigger``), not a rewrite.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from adlake import registry
from adlake.config import Settings

TRIGGER_MODES = ("realtime", "processing_time", "available_now")
# Real-Time Mode's default checkpoint interval. The long-running batch commits (offsets, state)
# and the watermark advances only at these boundaries, so event-time timers (attribution's
# window closes, orphans, tombstones) fire at them; each boundary also pauses the stream for a
# few seconds on 2 cores (README). 30 s bounds both the timer delay and the replay after a crash.
DEFAULT_RTM_INTERVAL = "30 seconds"


@dataclass(frozen=True)
class TriggerConfig:
    """``realtime`` takes a checkpoint interval ("5 minutes": how often the long-running batch
    commits, not a latency target); ``processing_time`` a micro-batch interval ("0 seconds": start
    the next batch as soon as the previous ends); ``available_now`` none."""

    mode: str
    interval: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in TRIGGER_MODES:
            raise ValueError(
                f"trigger mode {self.mode!r} is not valid: allowed values are "
                f"{', '.join(TRIGGER_MODES)}"
            )

    def kwargs(self) -> dict:
        if self.mode == "realtime":
            return {"realTime": self.interval or DEFAULT_RTM_INTERVAL}
        if self.mode == "processing_time":
            return {"processingTime": self.interval or "0 seconds"}
        return {"availableNow": True}

    @property
    def output_mode_note(self) -> str:
        return "update" if self.mode == "realtime" else "append/update"


class TaskSlotsError(RuntimeError):
    """The master cannot run every Real-Time Mode task at once."""


def required_slots(settings: Settings, app: registry.App) -> int:
    """Real-Time Mode runs one long-lived task per source partition plus one per shuffle
    partition, all at once, for the whole checkpoint interval. Source partitions are the
    configured ones (:func:`adlake.registry.partitions`, ADLAKE_TOPIC_PARTITIONS)."""
    return registry.input_partitions(app, settings) + settings.shuffle_partitions


def check_task_slots(settings: Settings, app: registry.App) -> None:
    """Fail fast when a ``local[N]`` master has fewer than source + shuffle partitions slots
    (Spark would reject the query or stall)."""
    match = re.fullmatch(r"local(?:\[(\d+|\*)\])?", settings.spark_master_ops)
    if not match:
        return  # a cluster: its size is the cluster's configuration
    # local[*] has as many slots as the machine has cores
    slots = (os.cpu_count() or 1) if match.group(1) == "*" else int(match.group(1) or 1)
    needed = required_slots(settings, app)
    if slots < needed:
        raise TaskSlotsError(
            f"Real-Time Mode needs {needed} task slots for {app.name} "
            f"({registry.input_partitions(app, settings)} source partitions + "
            f"{settings.shuffle_partitions} shuffle partitions) but "
            f"ADLAKE_SPARK_MASTER_OPS={settings.spark_master_ops} has {slots}; raise N in "
            "local[N] or lower ADLAKE_TOPIC_PARTITIONS or ADLAKE_SHUFFLE_PARTITIONS"
        )
