"""Knowing, without Spark, that a slice would be computed again from exactly what it was last
computed from: a gold rebuild or a quality gate over a slice whose result is already there.

A slice's **inputs** are, per table it reads, the live files that may hold rows of the window it
reads: a file is left out only when its ``event_date`` partition or its statistics (the min and
max of the window's time field, which Delta keeps per file) prove it holds none. Delta's files
are immutable (a changed row is a file removed and one added; a deletion vector is part of a
file's identity here), so the same files are the same rows. Its **output** is the files of the
slice's dates in its own table.

After its commit a job writes the slice's **memo**: the code's digest, the reads (relative to
the slice), the inputs and the output. A later run of the slice with the same code whose inputs
and output still match its memo (read from the Delta logs, :mod:`spark_apps.lake.delta_log`:
milliseconds, no JVM) has nothing to do. Anything else recomputes, which is always safe since
every write is idempotent: a file added or removed in a window (a late event, a compaction, the
next hour's data within a margin), the table recreated, new code, another writer's commit in
between, a memo missing or unreadable. The memo follows the commit, so a crash between the two
costs one recomputation and nothing else.

A slice never computed is skipped too when it would be empty and is: every window its table's
reads (known from any of the table's memos) hold no file, and its dates hold no row. That is
the daily run over a day without data.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from adlake.config import REPO_ROOT, Settings
from spark_apps.lake.delta_log import DeltaLogError, log_state

# The code a slice's rows depend on: the declarations, the gold builds and attribution rules,
# the quality suites and this lake's jobs. Any change to it recomputes every slice once.
CODE = (
    "include/adlake/catalog",
    "include/adlake/frames.py",
    "include/adlake/quality",
    "include/adlake/registry.py",
    "spark_apps/common",
    "spark_apps/lake/gold.py",
    "spark_apps/lake/quality.py",
    "spark_apps/lake/tables.py",
)
VERSION = 1


@dataclass(frozen=True)
class Read:
    """A build reads ``table``'s rows whose ``field`` lies from ``before_ms`` before the slice's
    start to ``after_ms`` after its end (``None``: to the newest). ``field`` None: the whole
    ``event_date`` partitions of the slice's days (a gate's read of its own slice)."""

    table: str
    field: str | None
    before_ms: int
    after_ms: int | None

    def window(self, start: datetime, end: datetime) -> tuple[datetime, datetime | None]:
        lo = start - timedelta(milliseconds=self.before_ms)
        return lo, None if self.after_ms is None else end + timedelta(milliseconds=self.after_ms)


# ... and the libraries that compute them.
PACKAGES = ("pyspark", "delta-spark", "great_expectations")


@functools.cache
def code_digest() -> str:
    """A digest of the source files of :data:`CODE` and the versions of :data:`PACKAGES`."""
    from importlib import metadata

    digest = hashlib.sha256()
    for package in PACKAGES:
        try:
            digest.update(f"{package}=={metadata.version(package)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{package} absent".encode())
    for entry in CODE:
        path = REPO_ROOT / entry
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(source.relative_to(REPO_ROOT)).encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _stat_time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def may_hold(file: dict, field: str | None, lo: datetime, hi: datetime | None) -> bool:
    """Whether the live ``file`` (:func:`~spark_apps.lake.delta_log.log_state`'s) may hold a
    row whose ``field`` lies in ``[lo, hi)``; True unless its partition or statistics exclude
    it.

    >>> f = {"partitionValues": {"event_date": "2026-11-21"}, "stats": json.dumps(
    ...     {"minValues": {"t": "2026-11-21T10:00:00.000Z"}, "maxValues": {"t": "2026-11-21T10:30:00.123Z"}})}
    >>> t = lambda h, m=0: datetime(2026, 11, 21, h, m, tzinfo=UTC)
    >>> may_hold(f, "t", t(10, 30), t(11)), may_hold(f, "t", t(10, 31), t(11)), may_hold(f, "t", t(9), t(10))
    (True, False, False)
    >>> may_hold(f, None, t(23) + timedelta(hours=2), None), may_hold(f, "t", t(9), None)
    (False, True)
    """
    day = (file.get("partitionValues") or {}).get("event_date")
    if day:
        day = date.fromisoformat(day)
        last = None if hi is None else (hi - timedelta(microseconds=1)).date()
        if day < lo.date() or (last is not None and day > last):
            return False
    if field is None or not file.get("stats"):
        return True
    try:
        stats = json.loads(file["stats"])
        low = _stat_time(stats["minValues"][field])
        high = _stat_time(stats["maxValues"][field])
    except (ValueError, KeyError, TypeError):
        return True
    if low is None or high is None:
        return True
    # Statistics are truncated to milliseconds: the true max may be up to 1 ms above.
    return high + timedelta(milliseconds=1) > lo and (hi is None or low < hi)


def files(table: Path | str, field: str | None, lo: datetime, hi: datetime | None) -> dict:
    """The table's identity and the live files that may hold rows of the window, sorted; an
    absent table has none."""
    try:
        state = log_state(table, with_files=True)
    except DeltaLogError:
        return {"table_id": None, "files": []}
    held = sorted(
        f["path"] + (f"#{f['dv']}" if f.get("dv") else "")
        for f in state.files or []
        if may_hold(f, field, lo, hi)
    )
    return {"table_id": state.table_id, "files": held}


def inputs(settings: Settings, reads: list[Read], start: datetime, end: datetime) -> list[dict]:
    return [files(settings.table_path(r.table), r.field, *r.window(start, end)) for r in reads]


def output(settings: Settings, table: str, start: datetime, end: datetime) -> dict:
    """The files of the slice's dates in ``table`` itself."""
    return files(settings.table_path(table), None, start, end)


def _memo_path(settings: Settings, kind: str, table: str, start: datetime, end: datetime) -> Path:
    name = f"{start:%Y%m%dT%H%M}-{end:%Y%m%dT%H%M}.json"
    return settings.slices_dir / kind / table / name


def read_memo(settings: Settings, kind: str, table: str, start: datetime, end: datetime) -> dict:
    try:
        memo = json.loads(_memo_path(settings, kind, table, start, end).read_text())
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) and memo.get("version") == VERSION else {}


def _any_reads(settings: Settings, kind: str, table: str) -> list[Read] | None:
    """The reads of the table's newest memo (any slice), None without one."""
    memos = sorted(
        (settings.slices_dir / kind / table).glob("*.json"),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for path in memos:
        try:
            memo = json.loads(path.read_text())
            if memo.get("version") == VERSION and memo.get("code") == code_digest():
                return [Read(**r) for r in memo["reads"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def unchanged(
    settings: Settings,
    kind: str,
    table: str,
    start: datetime,
    end: datetime,
    extra: dict,
    writes: bool = True,
) -> dict | None:
    """The slice's memo when computing it again would give what is there (see the module
    docstring); an empty memo for a never-computed slice of a table that ``writes`` the slice
    (a gold rebuild) that is empty and would stay so; None when it must be computed.
    ``extra``: what else the result depends on (a gate's parameters), equal to the memo's."""
    memo = read_memo(settings, kind, table, start, end)
    now_out = output(settings, table, start, end) if writes else {}
    if memo:
        if memo.get("code") != code_digest() or memo.get("extra") != extra:
            return None
        reads = [Read(**r) for r in memo["reads"]]
        if inputs(settings, reads, start, end) == memo["inputs"] and now_out == memo["output"]:
            return memo
        return None
    reads = _any_reads(settings, kind, table)
    if reads is None or not writes or now_out["files"]:
        return None
    if all(not i["files"] for i in inputs(settings, reads, start, end)):
        return {}
    return None


def write_memo(
    settings: Settings,
    kind: str,
    table: str,
    start: datetime,
    end: datetime,
    reads: list[Read],
    seen: list[dict],
    written: dict,
    extra: dict,
    **more: object,
) -> Path:
    """Record the slice's memo atomically: ``seen`` the inputs taken before the build read
    them, ``written`` the output after its commit."""
    path = _memo_path(settings, kind, table, start, end)
    path.parent.mkdir(parents=True, exist_ok=True)
    memo = {
        "version": VERSION,
        "code": code_digest(),
        "reads": [asdict(r) for r in reads],
        "inputs": seen,
        "output": written,
        "extra": extra,
        "written_at": datetime.now(UTC).isoformat(),
        **more,
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(memo, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def gate_read(name: str) -> Read:
    """What a quality gate over an interval reads: its gold table's partitions of it."""
    return Read(name, None, 0, 0)


def remember_verdict(
    settings: Settings,
    start: datetime,
    end: datetime,
    seen: list[dict],
    parameters: dict,
    record: dict,
) -> None:
    """A gate's memo of its table's slice: ``seen`` the slice's files before it was read, and
    the verdict (the outcome ``record``) they got."""
    name = record["table"]
    write_memo(
        settings, "gate", name, start, end, [gate_read(name)], seen, {}, parameters, outcome=record
    )


def verdicts_that_stand(
    settings: Settings,
    tables: list[str],
    start: datetime,
    end: datetime,
    parameters: dict,
    dag_id: str,
    run_id: str,
) -> dict[str, dict]:
    """The gold tables whose slice of ``[start, end)`` and suite (its code and ``parameters``)
    are as when a gate last validated them, each with that verdict made this run's outcome
    (:mod:`adlake.quality.outcome`): validating again would give it again."""
    stands = {}
    for name in tables:
        memo = unchanged(settings, "gate", name, start, end, parameters, writes=False)
        if not memo:
            continue
        earlier = memo["outcome"]
        stands[name] = {
            **earlier,
            "dag_id": dag_id,
            "run_id": run_id,
            "written_at": datetime.now(UTC).isoformat(),
            "stands_from": f"{earlier['dag_id']} / {earlier['run_id']}",
        }
        print(
            f"[quality] {name}: its slice and suite are as {earlier['dag_id']} / "
            f"{earlier['run_id']} validated them, so that verdict stands "
            f"({earlier['expectations']} expectations, {len(earlier['failed'])} failed, "
            f"error failed: {earlier['error_failed']}); not validated again",
            flush=True,
        )
    return stands
