"""The apps' checkpoints across restarts and trigger switches (:mod:`adlake.apps`' docstring:
which switches Spark resumes, and what a new checkpoint starts from): the committed offsets of a
checkpoint, whether one can resume as another, and moving one aside."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from adlake.apps.state import app_spec, checkpoint_record_path, read_json, write_json
from adlake.config import Settings
from adlake.status import read_status

# Which trigger switches Spark resumes on the same checkpoint (measured: package docstring) and
# which knobs bind a checkpoint are the app's own: its registry entry's
# ``same_checkpoint_switches`` and ``checkpoint_knobs``. Any other switch starts a new checkpoint
# from the old one's committed offsets.


# -- checkpoints -----------------------------------------------------------------------------------


def committed_offsets(checkpoint: Path) -> dict[str, dict[str, int]]:
    """``{topic: {partition: offset}}`` the query has read up to as of its last committed batch
    (``offsets/N`` of the latest ``commits/N``: the batch's end offsets, in micro-batch and
    Real-Time Mode alike); empty before the first commit. One topic read by several sources
    gets each partition's minimum."""
    commits = checkpoint / "commits"
    done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    if not done:
        return {}
    try:
        lines = (checkpoint / "offsets" / str(max(done))).read_text().splitlines()
    except OSError:
        return {}
    out: dict[str, dict[str, int]] = {}
    for line in lines[2:]:  # "v1", the batch's metadata, then one line per source
        if line.strip() in ("", "-"):
            return {}
        for topic, parts in json.loads(line).items():
            for partition, offset in parts.items():
                mine = out.setdefault(topic, {})
                mine[str(partition)] = min(int(offset), mine.get(str(partition), int(offset)))
    return out


def _checkpoint_shape(app: str, trigger: str, knobs: Mapping[str, object]) -> dict:
    """What a checkpoint is bound to: the trigger and the knobs that pick the operator."""
    return {"trigger": trigger, **{k: knobs[k] for k in app_spec(app).checkpoint_knobs}}


def same_checkpoint(app: str, old: Mapping, new: Mapping) -> bool:
    """Whether Spark resumes a checkpoint of shape ``old`` as ``new``.

    >>> same_checkpoint("click_surge", {"trigger": "realtime"}, {"trigger": "processing_time"})
    True
    >>> same_checkpoint("attribution", {"trigger": "realtime", "engine": "jvm"},
    ...                 {"trigger": "processing_time", "engine": "jvm"})
    False
    """
    spec = app_spec(app)
    if any(old.get(k) != new.get(k) for k in spec.checkpoint_knobs):
        return False
    return (
        old.get("trigger") == new.get("trigger")
        or (
            old.get("trigger"),
            new.get("trigger"),
        )
        in spec.same_checkpoint_switches
    )


def _has_offsets(checkpoint: Path) -> bool:
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())


def prepare_checkpoint(
    settings: Settings, app: str, trigger: str, knobs: Mapping[str, object]
) -> list[str]:
    """Keep the app's checkpoint, or move it aside and start the next one from its committed
    offsets (package docstring). Returns the extra app arguments (``--starting-offsets``)."""
    path = settings.checkpoint_path(app)
    record = read_json(checkpoint_record_path(settings, app)) or {}
    new = _checkpoint_shape(app, trigger, knobs)
    old = record.get("shape")
    if old is None and _has_offsets(path):
        # A checkpoint older than this record: its last run's mode is in the status file.
        status = read_status(settings, app) or {}
        old = {
            "trigger": status.get("mode", trigger),
            **{k: status.get(k, knobs[k]) for k in app_spec(app).checkpoint_knobs},
        }
    if _has_offsets(path) and not same_checkpoint(app, old, new):
        committed = committed_offsets(path) or record.get("starting_offsets") or {}
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = path.with_name(".".join([app, *(str(v) for v in old.values()), stamp]))
        os.rename(path, aside)
        record = {
            "moved_aside": [
                *record.get("moved_aside", []),
                {
                    "path": str(aside),
                    "shape": old,
                    "moved_at": time.time(),
                    "committed_offsets": committed,
                },
            ],
            "starting_offsets": committed or None,
        }
        print(
            f"[adlake.apps] {app}: a {old} checkpoint cannot run as {new}: moved it to "
            f"{aside}; the new one starts at its committed offsets {committed}",
            flush=True,
        )
    elif (
        _has_offsets(path)
        and (path / "commits").is_dir()
        and any(p.name.isdigit() for p in (path / "commits").iterdir())
    ):
        record.pop("starting_offsets", None)  # the new checkpoint has committed: done with them
    record["shape"] = new
    record["path"] = str(path)
    write_json(checkpoint_record_path(settings, app), record)
    offsets = record.get("starting_offsets")
    return ["--starting-offsets", json.dumps(offsets, sort_keys=True)] if offsets else []
