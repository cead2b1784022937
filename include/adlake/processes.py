"""Is a process, or a process group, still alive, and what runs below it? For the tooling that
starts and stops Adlake's own processes (the broker, Airflow's components, the apps' drivers).
Standard library, Linux ``/proc``.

>>> import os
>>> alive(os.getpid())
True
"""

from __future__ import annotations

import os
from pathlib import Path


def _state(stat: str) -> str:
    """The state letter of a ``/proc/<pid>/stat`` line (after the command name's ``)``, which
    may itself hold spaces or parentheses)."""
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie (exited, not yet reaped by its parent) still answers
    ``kill(pid, 0)`` but counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return _state(Path(f"/proc/{pid}/stat").read_text()) != "Z"
    except OSError:
        return True


def group_alive(pgid: int) -> bool:
    """True while any live (non-zombie) process remains in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren ...), from ``/proc``."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    out, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, pp in parent.items() if pp == current]
        out += children
        frontier += children
    return out


def driver_jvm(app_pid: int) -> int | None:
    """The pid of a Spark app's driver JVM: the ``java`` process PySpark started below it."""
    for pid in descendants(app_pid):
        try:
            argv0 = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"java":
            return pid
    return None
