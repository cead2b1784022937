"""A Delta table's latest state read from its log's files: version, table id, configuration,
the streaming writers' transactions, the live files. No Spark job and no JVM call, so it is the
same in a session of its own and over Spark Connect (where the client has no JVM to ask), and
costs milliseconds.

Delta writes, beside each commit ``N.json``, a checksum ``N.crc`` that carries the table's state
after it (metadata, protocol, ``setTransactions``, the file count and size, and for small tables
every file). The newest commit's checksum is read when it is there; otherwise the log is
replayed: the newest checkpoint (``_last_checkpoint``; a classic or multi-part Parquet
checkpoint, read with pyarrow) and the JSON commits after it, the last action on each file
winning, as Delta's own replay does.

>>> state = LogState(3, "id", {}, {"q": 7}, 2, 10, None)
>>> state.transactions["q"], state.version
(7, 3)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote


class DeltaLogError(RuntimeError):
    """The log cannot be read as a Delta table's (none, or a shape this reader does not know)."""


@dataclass(frozen=True)
class LogState:
    """A Delta table's state as of ``version``. ``files``: path, partition values, size and
    statistics (JSON text) of each live file, None when only the counts are known (a checksum
    without its file list)."""

    version: int
    table_id: str
    configuration: dict[str, str]
    transactions: dict[str, int]  # a streaming writer's appId -> its last committed batch
    num_files: int
    size_bytes: int
    files: list[dict] | None


def versions(log: Path) -> list[int]:
    """The commit versions present in the log directory ``log``, ascending."""
    if not log.is_dir():
        return []
    return sorted(int(p.stem) for p in log.glob("*.json") if p.stem.isdigit())


def latest_version(table: Path | str) -> int | None:
    """The newest commit version of the table at ``table``, None without a log."""
    found = versions(Path(table) / "_delta_log")
    return found[-1] if found else None


def log_state(table: Path | str, with_files: bool = False) -> LogState:
    """The latest state of the Delta table at ``table``; with ``with_files`` the live files are
    always listed (a replay when the checksum does not hold them)."""
    log = Path(table) / "_delta_log"
    found = versions(log)
    if not found:
        raise DeltaLogError(f"no Delta table at {table}: {log} holds no commit")
    newest = found[-1]
    state = _from_checksum(log, newest)
    if state is None or (with_files and state.files is None):
        state = _replay(log, newest)
    return state


def _from_checksum(log: Path, version: int) -> LogState | None:
    """The state in commit ``version``'s checksum; None when it is missing, unreadable, or says
    nothing of the transactions (then the log is replayed)."""
    try:
        crc = json.loads((log / f"{version:020d}.crc").read_text())
        if not isinstance(crc.get("setTransactions"), list):
            return None
        metadata, files = crc["metadata"], crc.get("allFiles")
        return LogState(
            version=version,
            table_id=metadata["id"],
            configuration=dict(metadata.get("configuration") or {}),
            transactions={t["appId"]: int(t["version"]) for t in crc["setTransactions"]},
            num_files=int(crc["numFiles"]),
            size_bytes=int(crc["tableSizeBytes"]),
            files=[_file(a) for a in files] if isinstance(files, list) else None,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _file(add: dict) -> dict:
    return {
        "path": unquote(add["path"]),
        "partitionValues": dict(add.get("partitionValues") or {}),
        "size": int(add.get("size") or 0),
        "stats": add.get("stats"),  # JSON text: numRecords, minValues, maxValues, nullCount
        # rows of the file deleted since it was written (a deletion vector), or None
        "dv": json.dumps(add["deletionVector"], sort_keys=True)
        if add.get("deletionVector")
        else None,
    }


def _checkpoint(log: Path, newest: int) -> tuple[int, list[Path]]:
    """The newest checkpoint at or before ``newest``: its version and Parquet parts ((-1, [])
    without one)."""
    try:
        pointer = json.loads((log / "_last_checkpoint").read_text())
        version = int(pointer["version"])
    except (OSError, ValueError, KeyError, TypeError):
        candidates = [int(p.name[:20]) for p in log.glob("*.checkpoint*.parquet")]
        version = max((v for v in candidates if v <= newest), default=-1)
    if version < 0 or version > newest:
        return -1, []
    parts = sorted(log.glob(f"{version:020d}.checkpoint*.parquet"))
    if not parts:
        return -1, []
    if any(not _classic(p.name) for p in parts):
        raise DeltaLogError(
            f"{log}: checkpoint {version} is a V2 checkpoint (with sidecars), which this reader "
            "does not replay"
        )
    return version, parts


def _classic(name: str) -> bool:
    # NNN.checkpoint.parquet or NNN.checkpoint.PPPPPPPPPP.TTTTTTTTTT.parquet
    middle = name[21:].split(".")
    return middle == ["checkpoint", "parquet"] or (
        len(middle) == 4 and middle[0] == "checkpoint" and middle[1].isdigit()
    )


def _replay(log: Path, newest: int) -> LogState:
    import pyarrow.parquet as pq

    metadata: dict | None = None
    transactions: dict[str, int] = {}
    files: dict[str, dict] = {}

    def apply(action: dict) -> None:
        nonlocal metadata
        if action.get("metaData"):
            metadata = action["metaData"]
        elif action.get("txn"):
            transactions[action["txn"]["appId"]] = int(action["txn"]["version"])
        elif action.get("add"):
            added = _file(action["add"])
            files[added["path"]] = added
        elif action.get("remove"):
            files.pop(unquote(action["remove"]["path"]), None)

    start, parts = _checkpoint(log, newest)
    for part in parts:
        columns = pq.read_schema(part).names
        wanted = [c for c in ("metaData", "txn", "add", "remove") if c in columns]
        for row in pq.read_table(part, columns=wanted).to_pylist():
            apply(row)
    for version in (v for v in versions(log) if start < v <= newest):
        with open(log / f"{version:020d}.json") as commit:
            for line in commit:
                if line.strip():
                    apply(json.loads(line))
    if metadata is None:
        raise DeltaLogError(f"{log}: no metadata action up to version {newest}")
    configuration = metadata.get("configuration") or {}
    return LogState(
        version=newest,
        table_id=metadata["id"],
        configuration=dict(configuration),
        transactions=transactions,
        num_files=len(files),
        size_bytes=sum(f["size"] for f in files.values()),
        files=list(files.values()),
    )
