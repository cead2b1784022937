"""The soak's samples (:mod:`bench.ops.soak`, its step 2) and what is made of them: each app's
health read every ``--sample-s`` seconds (:func:`sample_app`: rows in state, the state store's
memory, the checkpoint's size and files, the driver JVM's heap and resident memory, the measured
end-to-end latency, the input rate), the verdict on each metric over the run (:func:`trend`:
flat after the warm-up, or growing) and the plot of the samples (:func:`plot`).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from adlake.config import Settings
from adlake.processes import driver_jvm
from adlake.status import read_status
from bench import harness
from bench.ops.latency import ops_apps

# What each sample holds per app, in the plot's order: (field, label).
METRICS = (
    ("state_rows", "rows in state"),
    ("state_memory_mb", "state store memory (MB)"),
    ("checkpoint_mb", "checkpoint size (MB)"),
    ("checkpoint_files", "checkpoint files"),
    ("heap_used_mb", "driver heap used (MB)"),
    ("e2e_p99_ms", "end-to-end latency p99 (ms)"),
)
# A metric is flat when its mean over the last third of the samples after the warm-up is within
# this share of its mean over the middle third (and not over the cap, for the latency).
FLAT_TOLERANCE = 0.2
_HEAP = re.compile(r"heap\s+total (?:reserved \d+K, committed )?(\d+)K, used (\d+)K")


# -- what is sampled -------------------------------------------------------------------------------


def dir_usage(path: Path) -> tuple[int, int]:
    """``(bytes, files)`` under ``path`` (0, 0 if it does not exist); files that vanish while
    they are counted (the checkpoint's maintenance deletes old ones) are skipped."""
    size = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                size += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
            files += 1
    return size, files


def parse_heap_info(text: str) -> dict[str, float] | None:
    """Heap used and committed (MB) from ``jcmd <pid> GC.heap_info``.

    >>> parse_heap_info(" garbage-first heap   total 262144K, used 104857K [0x0000000080000000")
    {'heap_used_mb': 102.4, 'heap_committed_mb': 256.0}
    >>> parse_heap_info(" garbage-first heap   total reserved 2097152K, committed 524288K, "
    ...                 "used 51200K [0x0000000080000000")
    {'heap_used_mb': 50.0, 'heap_committed_mb': 512.0}
    >>> parse_heap_info("Could not attach") is None
    True
    """
    match = _HEAP.search(text)
    if not match:
        return None
    return {
        "heap_used_mb": round(int(match.group(2)) / 1024, 1),
        "heap_committed_mb": round(int(match.group(1)) / 1024, 1),
    }


def heap(jvm_pid: int | None) -> dict[str, float | None]:
    """The driver JVM's heap (``jcmd``) and resident memory (``/proc``), None where unreadable."""
    out: dict[str, float | None] = {"heap_used_mb": None, "heap_committed_mb": None, "rss_mb": None}
    if jvm_pid is None:
        return out
    try:
        result = subprocess.run(
            ["jcmd", str(jvm_pid), "GC.heap_info"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        out.update(parse_heap_info(result.stdout) or {})
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        for line in (Path("/proc") / str(jvm_pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return out


def sample_app(settings: Settings, app: str, pid: int, checkpoint: Path) -> dict:
    """One sample of ``app`` (see :mod:`bench.ops.soak`'s docstring, step 2)."""
    status = read_status(settings, app) or {}
    e2e = status.get("e2e_latency") or {}
    size, files = dir_usage(checkpoint)
    return {
        "state": status.get("state"),
        "batch_id": status.get("batch_id"),
        "state_rows": status.get("state_rows"),
        "state_memory_mb": status.get("state_memory_mb"),
        "checkpoint_mb": round(size / 1e6, 2),
        "checkpoint_files": files,
        **heap(driver_jvm(pid)),
        "e2e_p50_ms": e2e.get("p50_ms"),
        "e2e_p99_ms": e2e.get("p99_ms"),
        "e2e_samples": e2e.get("samples"),
        "input_rows_per_s": status.get("input_rows_per_s"),
        "late_rows": status.get("late_rows"),
    }


# -- the verdict -----------------------------------------------------------------------------------


def trend(points: list[tuple[float, float | None]], warmup_s: float) -> dict:
    """Whether a metric stays bounded: over the samples after ``warmup_s``, the mean of the last
    third against the mean of the middle third (``growth``: 0.1 = 10% higher), and ``flat`` when
    that growth is within :data:`FLAT_TOLERANCE`. Too few samples give ``flat`` None.

    >>> trend([(60 * i, 100.0 + i % 2) for i in range(12)], warmup_s=120)["flat"]
    True
    >>> trend([(60 * i, 100.0 * i) for i in range(12)], warmup_s=120)["flat"]
    False
    >>> trend([(0, 1.0), (60, 2.0)], warmup_s=0)["flat"] is None
    True
    """
    values = [v for t, v in points if t >= warmup_s and v is not None]
    third = len(values) // 3
    if third < 1:
        return {"samples": len(values), "growth": None, "flat": None}
    middle = sum(values[third : 2 * third]) / third
    last = sum(values[-third:]) / third
    growth = (last - middle) / middle if middle else (0.0 if not last else None)
    return {
        "samples": len(values),
        "middle_mean": round(middle, 2),
        "last_mean": round(last, 2),
        "max": max(values),
        "growth": None if growth is None else round(growth, 3),
        "flat": None if growth is None else growth <= FLAT_TOLERANCE,
    }


# -- the plot ----------------------------------------------------------------------------------


def plot(samples: list[dict], warmup_s: float, path: Path, title: str) -> Path:
    """One panel per metric (:data:`METRICS`), a line per app, minutes on the x axis; the
    warm-up shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(12, 10), sharex=True)
    for ax, (name, label) in zip(axes.flat, METRICS):
        for app in ops_apps():
            points = [
                (s["t_s"] / 60, s[app.name][name])
                for s in samples
                if s[app.name].get(name) is not None
            ]
            if points:
                ax.plot(*zip(*points), marker="o", markersize=3, label=app.name)
        ax.axvspan(0, warmup_s / 60, color="0.9", label="warm-up")
        if name == "e2e_p99_ms":  # milliseconds beside the warm-up's seconds
            ax.set_yscale("log")
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("minutes since the traffic started")
    axes.flat[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    harness.save_plot(fig, path, dpi=90)
    return path
