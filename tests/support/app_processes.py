"""The streaming apps' processes as the kernel sees them, for lifecycle tests: which processes run
an app through the launcher (one instance means exactly one), and a backstop that kills whatever
a failed test leaves holding an app's lock."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from adlake import apps, registry
from adlake.config import Settings
from adlake.processes import _state


def launchers(settings: Settings, app: str) -> list[int]:
    """Pids of every live (not zombie) process running ``app`` of ``settings``' runtime through
    the launcher."""
    lock = str(apps.lock_path(settings, app))
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if _state(stat) == "Z":
            continue
        if apps.LAUNCHER.encode() in cmdline and lock.encode() in cmdline:
            out.append(int(entry.name))
    return out


def kill_lock_holders(settings: Settings) -> None:
    """SIGKILL the process group of every app holding its lock in ``settings``' runtime."""
    for name in registry.APPS:
        current = apps.holder(settings, name)
        if current is not None and current.pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(current.pid, signal.SIGKILL)
