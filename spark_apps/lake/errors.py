"""Typed failures of the lake jobs for the states a crash, a person or a full disk leave behind:
each names the file and the README runbook step to follow.

Spark and Delta already refuse most damaged state, but in their own words, some misleading: a
deleted ``offsets/N`` of a streaming checkpoint fails as ``CONCURRENT_STREAM_LOG_UPDATE``
("Multiple streaming jobs detected"), a deleted ``commits/N`` (its hidden ``.N.crc`` left
behind) as "Multiple streaming queries are concurrently using …", a truncated one as a bare JSON
parse error without a path. So when a job fails, :func:`diagnosed` inspects the checkpoints and
Delta logs the job uses and, if one of them is damaged, raises :class:`CheckpointCorrupted` or
:class:`DeltaLogCorrupted` naming the file (the original failure chained as the cause). A
failure that says the device is full becomes :class:`DiskFull`.

What is *not* an error: the newest ``offsets/N`` without its ``commits/N`` is what a crash
during batch ``N`` leaves, and a rerun replays that batch (the Delta sink skips it if its commit
already happened; silver's MERGEs are idempotent). Deleting ``commits/N`` together with its
``.N.crc`` is the same state, so Spark replays the batch and the table stays as it was: that is
documented and tested (``tests/faults/test_corruption.py``), not refused.

>>> inspect_checkpoint(Path("/nonexistent"))
[]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

RUNBOOK = "README.md, On-call runbook"
CHECKPOINT_STEP = f"{RUNBOOK}, 'A lake job fails with CheckpointCorrupted'"
DELTA_LOG_STEP = f"{RUNBOOK}, 'A lake job fails with DeltaLogCorrupted'"
DISK_FULL_STEP = f"{RUNBOOK}, 'A lake job fails with DiskFull'"
CONFLICT_STEP = f"{RUNBOOK}, 'A lake job fails with ConcurrentWriteConflict'"
# How many times a job whose write is idempotent tries a write that lost to a concurrent one.
CONFLICT_ATTEMPTS = 3
# The words of the operating system's ENOSPC, as the JVM and Python report it.
_NO_SPACE = "No space left on device"


class LakeStateError(RuntimeError):
    """A lake job cannot go on from the state on disk; ``path`` is the file or directory at
    fault and the message says which runbook step to follow."""

    def __init__(self, message: str, path: Path | str) -> None:
        super().__init__(message)
        self.path = str(path)


class CheckpointCorrupted(LakeStateError):
    """A streaming checkpoint file is missing, empty or not what Spark wrote."""


class DeltaLogCorrupted(LakeStateError):
    """A Delta table's ``_delta_log`` has a missing, empty or truncated commit."""


class DiskFull(LakeStateError):
    """The device holding the runtime directory is full; nothing past the table's last commit
    was made visible."""


class ConcurrentWriteConflict(LakeStateError):
    """A write lost to concurrent writers of the same table on every attempt."""


def retry_on_conflict(
    job: str, path: Path | str, action: Callable[[], T], attempts: int = CONFLICT_ATTEMPTS
) -> T:
    """``action()``, tried again (up to ``attempts`` in all, with a log line each time) when
    Delta's optimistic concurrency rejects its commit because another writer committed to the
    table first; :class:`ConcurrentWriteConflict` if it never wins.

    Only for writes that are idempotent and recomputed in full by ``action``: the retry reads
    the table again and makes the same decision against the winner's commit (a gold interval is
    recomputed from silver and replaces the same dates; a view refresh finds the winner's
    ``txnVersion`` and has nothing left to do).
    """
    from delta.exceptions import DeltaConcurrentModificationException

    for attempt in range(1, attempts + 1):
        try:
            return action()
        except DeltaConcurrentModificationException as error:
            if attempt == attempts:
                raise ConcurrentWriteConflict(
                    f"{job}: {path} was written concurrently by another job on each of "
                    f"{attempts} attempts ({type(error).__name__}); let the other run finish, "
                    f"then rerun: follow {CONFLICT_STEP}",
                    path,
                ) from error
            print(
                f"[{job}] {path}: a concurrent commit won ({type(error).__name__}); "
                f"retrying ({attempt}/{attempts - 1})",
                flush=True,
            )
    raise AssertionError("unreachable")


# -- inspection: what is wrong with a checkpoint or a Delta log ------------------------------------


def numbered_files(directory: Path) -> dict[int, Path]:
    """The files of a streaming checkpoint's ``offsets/`` or ``commits/`` by batch number."""
    if not directory.is_dir():
        return {}
    return {int(p.name): p for p in directory.iterdir() if p.name.isdigit()}


def _orphan_crc(directory: Path, names: Iterable[str]) -> list[str]:
    """Hadoop's hidden ``.<name>.crc`` files whose file is gone: a deletion by hand."""
    present = set(names)
    # A writer's temporary file (``.N.<uuid>.tmp``) that a crash left is not damage.
    return [
        f"{directory / p.name[1:-4]} is missing (its checksum {p.name} is there)"
        for p in directory.glob(".*.crc")
        if p.name[1:-4] not in present and not p.name.endswith(".tmp.crc")
    ]


def _log_file_problem(path: Path, first_line: str | None) -> str | None:
    """Why a checkpoint log file (``offsets/N``, ``commits/N``) is unreadable, or None: a
    version line (``v1``) then one JSON document per line."""
    lines = path.read_text(errors="replace").splitlines()
    if not lines:
        return f"{path} is empty"
    if first_line is not None and not lines[0].startswith(first_line):
        return f"{path} does not start with a version line ({lines[0][:40]!r})"
    for line in lines[1:]:
        try:
            json.loads(line)
        except ValueError:
            return f"{path} is truncated or not JSON ({line[:60]!r})"
    if len(lines) < 2:
        return f"{path} is truncated (a version line and nothing else)"
    return None


def inspect_checkpoint(checkpoint: Path) -> list[str]:
    """What is damaged in the streaming checkpoint at ``checkpoint`` (empty: nothing found).

    Checked: ``metadata`` (present once any batch was planned, a JSON object with an ``id``),
    every ``offsets/N`` and ``commits/N`` (readable), no file deleted behind Spark's back (its
    checksum left alone), and no batch committed without its offsets. The newest ``offsets/N``
    without ``commits/N`` is a crash's normal state, not damage.
    """
    if not checkpoint.is_dir():
        return []
    problems: list[str] = []
    offsets, commits = (
        numbered_files(checkpoint / "offsets"),
        numbered_files(checkpoint / "commits"),
    )
    metadata = checkpoint / "metadata"
    if metadata.exists():
        try:
            if "id" not in json.loads(metadata.read_text().splitlines()[0]):
                problems.append(f"{metadata} has no query id")
        except (ValueError, IndexError):
            problems.append(f"{metadata} is empty, truncated or not JSON")
    elif offsets or commits:
        problems.append(f"{metadata} is missing while the offsets and commits logs hold batches")
    for sub, files in (("offsets", offsets), ("commits", commits)):
        directory = checkpoint / sub
        problems += _orphan_crc(directory, (p.name for p in files.values()))
        for n in sorted(files):
            problem = _log_file_problem(files[n], "v")
            if problem:
                problems.append(problem)
        if files:
            gaps = sorted(set(range(min(files), max(files) + 1)) - set(files))
            problems += [
                f"{directory / str(n)} is missing (batch {n} between others)" for n in gaps
            ]
    problems += [
        f"{checkpoint / 'offsets' / str(n)} is missing but batch {n} is committed"
        for n in sorted(set(commits) - set(offsets))
    ]
    return problems


def inspect_delta_log(table: Path) -> list[str]:
    """What is damaged in the ``_delta_log`` of the Delta table at ``table`` (empty: nothing).

    Checked: the commits after the newest checkpoint (``_last_checkpoint``) are contiguous,
    each a non-empty file of JSON actions, and no commit was deleted behind Delta's back (its
    checksum left alone).
    """
    log = table / "_delta_log"
    if not log.is_dir():
        return []
    problems: list[str] = []
    commits = {int(p.name.split(".")[0]): p for p in log.glob("*.json") if p.name[0].isdigit()}
    problems += [
        p
        for p in _orphan_crc(log, (c.name for c in commits.values()))
        if p.split(" is missing")[0].endswith(".json")
    ]
    start = 0
    with suppress(OSError, ValueError, KeyError):
        start = int(json.loads((log / "_last_checkpoint").read_text())["version"])
    if commits:
        tail = list(range(start, max(commits) + 1))
        problems += [
            f"{log / f'{v:020d}.json'} is missing (versions are not contiguous)"
            for v in tail
            if v not in commits and v > start
        ]
        for v in tail:
            if v not in commits:
                continue
            text = commits[v].read_text(errors="replace")
            if not text.strip():
                problems.append(f"{commits[v]} is empty")
                continue
            for line in text.splitlines():
                try:
                    json.loads(line)
                except ValueError:
                    problems.append(f"{commits[v]} is truncated or not JSON ({line[:60]!r})")
                    break
    return problems


def committed_batch(checkpoint: Path) -> tuple[str | None, int | None]:
    """``(query id, newest committed batch id)`` of the streaming checkpoint at ``checkpoint``;
    ``None`` for what it does not hold yet."""
    try:
        query_id = json.loads((checkpoint / "metadata").read_text().splitlines()[0]).get("id")
    except (OSError, ValueError, IndexError):
        query_id = None
    commits = numbered_files(checkpoint / "commits")
    return query_id, (max(commits) if commits else None)


def sink_behind(table: Path, query_id: str, committed: int, recorded: int | None) -> str | None:
    """Why a Delta sink's table lost batches its checkpoint committed, or None.

    The Delta sink commits batch ``N`` with the transaction ``(query id, N)`` before the
    checkpoint writes ``commits/N``. So a checkpoint that committed ``N`` while the table's log
    records an older transaction (``recorded``), or none, lost the Delta commits of the batches
    between: deleted with their checksums, which leaves nothing else to notice. Spark would go on
    from ``N + 1`` and those rows would be gone without a word.
    """
    if recorded is not None and recorded >= committed:
        return None
    have = f"batch {recorded}" if recorded is not None else "no batch"
    first = 0 if recorded is None else recorded + 1
    return (
        f"{table / '_delta_log'} records {have} of query {query_id} while its checkpoint "
        f"committed batch {committed}: the Delta commits of batches {first}..{committed} "
        "are missing"
    )


def check_state(checkpoints: Iterable[Path] = (), tables: Iterable[Path] = ()) -> None:
    """Raise :class:`CheckpointCorrupted` or :class:`DeltaLogCorrupted` for the first damaged
    checkpoint or Delta log among those given; return if none is."""
    found = [
        (
            CheckpointCorrupted,
            Path(c),
            "checkpoint",
            inspect_checkpoint(Path(c)),
            "Do not delete the checkpoint (that re-reads everything)",
            CHECKPOINT_STEP,
        )
        for c in checkpoints
    ]
    found += [
        (
            DeltaLogCorrupted,
            Path(t),
            "Delta table",
            inspect_delta_log(Path(t)),
            "Do not write to it",
            DELTA_LOG_STEP,
        )
        for t in tables
    ]
    for error, path, what, problems, advice, step in found:
        if problems:
            raise error(
                f"{what} {path} is damaged: {'; '.join(problems)}. {advice}; follow {step}", path
            )


def _chain_text(error: BaseException) -> str:
    """The messages of ``error`` and its causes, Java's included (a Py4J error carries the
    JVM's stack trace, whose ``Caused by`` lines hold the I/O error)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        java = getattr(current, "java_exception", None)
        if java is not None:
            try:
                parts.append(str(java.toString()))
                cause = java.getCause()
                while cause is not None:
                    parts.append(str(cause.toString()))
                    cause = cause.getCause()
            except Exception:  # noqa: BLE001 - the JVM may be gone; the Python text remains
                pass
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


@contextmanager
def diagnosed(
    job: str, runtime_dir: Path, checkpoints: Iterable[Path] = (), tables: Iterable[Path] = ()
) -> Iterator[None]:
    """Run a job's body after checking its checkpoints and Delta logs; if it fails, raise the
    typed error its state explains (a full device, a damaged checkpoint or Delta log among
    those given) from the original failure, else let the failure through unchanged.

    The check before the run matters: Spark replays a batch whose ``commits/N`` was deleted
    and only then fails on the checksum the deletion left (or, with the checksum deleted too,
    succeeds), and Delta reads an emptied commit as no change at all.
    """
    checkpoints, tables = list(checkpoints), list(tables)
    check_state(checkpoints, tables)
    try:
        yield
    except LakeStateError:
        raise
    except Exception as error:
        if _NO_SPACE in _chain_text(error):
            raise DiskFull(
                f"{job}: the device holding {runtime_dir} is full ({_NO_SPACE}). Every table "
                f"reads as its last commit; free space and rerun: follow {DISK_FULL_STEP}",
                runtime_dir,
            ) from error
        check_state(checkpoints, tables)
        raise
