"""Which runs of bronze and silver start no query: the checks on their checkpoints and on the
broker's offsets or bronze's Delta version (unit: files and values only, no JVM, no broker).

A topic is skipped only when its newest batch is committed and ends where its source ends; a
planned batch not yet committed, a damaged file, a partition the checkpoint does not know or a
checkpoint past the broker's end always leave the decision to the query."""

from __future__ import annotations

import json
from pathlib import Path

from spark_apps.lake import bronze, silver

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1795524731011, "conf": {}})


def checkpoint(root: Path, offsets: dict[int, object], commits: list[int]) -> Path:
    """A streaming checkpoint holding ``offsets`` (batch id -> source offset) and ``commits``."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, offset in offsets.items():
        (root / "offsets" / str(batch)).write_text(f"v1\n{META}\n{json.dumps(offset)}")
    for batch in commits:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_bronze_reads_the_newest_committed_batchs_end_offsets(tmp_path):
    root = checkpoint(
        tmp_path,
        {0: {"page_clicks": {"0": 3, "1": 4}}, 1: {"page_clicks": {"0": 9, "1": 4}}},
        [0, 1],
    )
    assert bronze.committed_offsets(root, "page_clicks") == {0: 9, 1: 4}


def test_bronze_planned_but_uncommitted_batch_is_never_skipped(tmp_path):
    root = checkpoint(tmp_path, {0: {"page_clicks": {"0": 3}}, 1: {"page_clicks": {"0": 9}}}, [0])
    assert bronze.committed_offsets(root, "page_clicks") is None
    assert not bronze.nothing_new(None, {0: (0, 9)})


def test_bronze_without_checkpoint_has_read_nothing(tmp_path):
    assert bronze.committed_offsets(tmp_path / "absent", "page_clicks") == {}


def test_bronze_unreadable_offsets_leave_it_to_the_query(tmp_path):
    root = checkpoint(tmp_path, {0: {"page_clicks": {"0": 3}}}, [0])
    (root / "offsets" / "0").write_text("v1\n{")
    assert bronze.committed_offsets(root, "page_clicks") is None


def test_bronze_skips_only_when_every_partition_is_read_to_its_end():
    assert bronze.nothing_new({0: 9, 1: 4}, {0: (0, 9), 1: (2, 4)})
    assert not bronze.nothing_new({0: 9, 1: 4}, {0: (0, 10), 1: (2, 4)})  # one new record
    assert not bronze.nothing_new({0: 9}, {0: (0, 9), 1: (0, 1)})  # new partition, data
    assert bronze.nothing_new({0: 9}, {0: (0, 9), 1: (0, 0)})  # new partition, empty
    assert not bronze.nothing_new({0: 9, 5: 1}, {0: (0, 9)})  # partition gone
    assert not bronze.nothing_new({0: 12}, {0: (0, 9)})  # topic recreated
    assert not bronze.nothing_new({0: 9}, None)  # broker silent


def test_silver_skips_only_at_the_start_of_the_version_after_bronzes_latest(tmp_path):
    read_all = {
        "sourceVersion": 1,
        "reservoirId": "b",
        "reservoirVersion": 12,
        "index": -1,
        "isStartingVersion": False,
    }
    root = checkpoint(tmp_path, {0: read_all}, [0])
    offset = bronze.committed_source_offset(root)
    assert silver.bronze_read_to_end(offset, "b", 11)
    assert not silver.bronze_read_to_end(offset, "b", 12)  # bronze committed since
    assert not silver.bronze_read_to_end(offset, "other", 11)  # another table at that path
    assert not silver.bronze_read_to_end({**read_all, "index": 3}, "b", 11)
    assert not silver.bronze_read_to_end({**read_all, "isStartingVersion": True}, "b", 11)


def test_silver_planned_but_uncommitted_batch_is_never_skipped(tmp_path):
    offset = {"reservoirId": "b", "reservoirVersion": 12, "index": -1, "isStartingVersion": False}
    assert bronze.committed_source_offset(checkpoint(tmp_path, {0: offset, 1: offset}, [0])) is None
    assert not silver.bronze_read_to_end(None, "b", 11)


def delta_commit(table: Path, version: int, *actions: dict) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_the_sinks_newest_commit_records_the_checkpoints_batch(tmp_path):
    delta_commit(tmp_path, 0, {"commitInfo": {}}, {"txn": {"appId": "q", "version": 6}})
    delta_commit(
        tmp_path,
        1,
        {"commitInfo": {}},
        {"txn": {"appId": "q", "version": 7}},
        {"add": {"path": "a.parquet"}},
    )
    assert bronze.sink_recorded_in_newest_commit(tmp_path, "q", 7)
    assert not bronze.sink_recorded_in_newest_commit(tmp_path, "q", 8)  # commit 8 lost
    assert not bronze.sink_recorded_in_newest_commit(tmp_path, "other", 7)
    delta_commit(tmp_path, 2, {"commitInfo": {"operation": "OPTIMIZE"}})
    assert not bronze.sink_recorded_in_newest_commit(tmp_path, "q", 7)  # ask the snapshot


def test_bronzes_latest_version_and_id_come_from_its_newest_commit_and_checksum(tmp_path):
    delta_commit(tmp_path, 0, {"commitInfo": {}})
    delta_commit(tmp_path, 1, {"commitInfo": {}})
    assert silver.latest_from_files(tmp_path) is None  # no checksum
    (tmp_path / "_delta_log" / f"{1:020d}.crc").write_text(
        json.dumps({"tableSizeBytes": 1, "metadata": {"id": "b"}})
    )
    assert silver.latest_from_files(tmp_path) == ("b", 1)
    assert silver.latest_from_files(tmp_path / "absent") is None
