"""Is a process, or a process group, still alive, and what runs below it? For the tooling that
starts and stops Adlake's own processes (the broker, Airflow's components, the apps' drivers).
Standard library, Linux ``/proc``.

>>> import os
>>> alive(os.getpid())
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
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


def boot_time() -> float:
    """When this machine booted (epoch seconds, ``/proc/stat``'s ``btime``); 0.0 if unknown."""
    try:
        with open("/proc/stat") as handle:
            for line in handle:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


def started_at(pid: int, boot: float | None = None) -> float | None:
    """When process ``pid`` started (epoch seconds: field 22 of ``/proc/<pid>/stat``, in clock
    ticks since boot), or None when no such live process is visible here (gone, a zombie, or in
    another PID namespace). With a pid and this, a process is identified: a pid reused by a new
    process comes with a later start.

    >>> abs(started_at(os.getpid()) - started_at(os.getpid())) < 0.01
    True
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    boot = boot_time() if boot is None else boot
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def identity() -> dict:
    """What names this process beyond its pid: its start (:func:`started_at`), the kernel it runs
    on (``boot_id``) and its PID namespace (``pid_ns``). A pid means this process only on the same
    kernel and in the same namespace; elsewhere (another container, another host sharing the
    directory) the same number is another process or none."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = None
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    return {"proc_started_at": started_at(os.getpid()), "boot_id": boot_id, "pid_ns": pid_ns}


def seen_here(record: dict) -> bool:
    """Whether the process a record names (its :func:`identity`) runs on this kernel and in this
    PID namespace, so that its pid means the same here. A record without them (written before
    they were recorded) is taken as from here."""
    here = identity()
    return all(record.get(key) in (None, here[key]) for key in ("boot_id", "pid_ns"))


# How far apart two readings of one process's start may be: btime moves with the wall clock.
START_TOLERANCE_S = 5.0


def is_process(pid: int, record: Mapping) -> bool:
    """Whether live process ``pid`` here is the one that wrote ``record``: its start as recorded
    (``proc_started_at``, from :func:`identity`, within :data:`START_TOLERANCE_S`) or, in a record
    with only the wall-clock ``started_at`` it wrote once running, a start no later than that. A
    reused pid names a process started after the record was written: not the one."""
    start = started_at(pid)
    if start is None:
        return False
    exact, written = record.get("proc_started_at"), record.get("started_at")
    if isinstance(exact, (int, float)) and not isinstance(exact, bool):
        return abs(start - exact) <= START_TOLERANCE_S
    if isinstance(written, (int, float)) and not isinstance(written, bool):
        return start <= written + START_TOLERANCE_S
    return False


def holds_flock(pid: int, path: Path) -> bool:
    """Whether live process ``pid`` here holds a ``flock`` on the file ``path``, as the kernel
    says: one of its open descriptors is that file (same device and inode) and that descriptor's
    ``/proc/<pid>/fdinfo`` lists a FLOCK lock. What a lock file's record says can be written by
    anyone who can write the file; this cannot, so it is what a pid must pass before it is
    signalled. False when it cannot be told (the process is gone, in another PID namespace, or
    another user's, whose descriptors are not readable here).

    >>> import fcntl, tempfile
    >>> with tempfile.NamedTemporaryFile() as lock:
    ...     before = holds_flock(os.getpid(), Path(lock.name))
    ...     fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    ...     (before, holds_flock(os.getpid(), Path(lock.name)), holds_flock(1, Path(lock.name)))
    (False, True, False)
    """
    try:
        target = os.stat(path)
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            seen = os.stat(f"/proc/{pid}/fd/{fd}")
            if (seen.st_dev, seen.st_ino) != (target.st_dev, target.st_ino):
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        # "lock:\t1: FLOCK  ADVISORY  WRITE <pid> <dev>:<inode> 0 EOF": the locks this
        # descriptor's open file holds (a flock belongs to the open file, not to a pid)
        # ("lock:\t1: -> FLOCK ...": a lock this descriptor waits for, not one it holds)
        if any(
            line.startswith("lock:") and " FLOCK " in line and "->" not in line
            for line in info.splitlines()
        ):
            return True
    return False


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


def parent(pid: int) -> int | None:
    """The parent pid of process ``pid`` (field 4 of ``/proc/<pid>/stat``, after the command
    name, which may itself hold spaces or parentheses), or None when ``pid`` is not visible here
    (gone, or in another PID namespace). 0 for a process with no parent here (pid 1, or one whose
    parent is outside its namespace).

    >>> parent(os.getpid()) == os.getppid()
    True
    >>> parent(-1) is None
    True
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren ...), from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (ppid := parent(int(entry.name))) is not None:
            parents[int(entry.name)] = ppid
    out, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, pp in parents.items() if pp == current]
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
