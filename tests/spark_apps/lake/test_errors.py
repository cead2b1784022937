"""The pure inspection behind the lake jobs' typed errors (no JVM)."""

from __future__ import annotations

import json

from spark_apps.lake import errors


def checkpoint(tmp_path, commits: list[int], query_id: str = "q-1"):
    path = tmp_path / "checkpoint"
    for sub in ("offsets", "commits"):
        (path / sub).mkdir(parents=True)
    (path / "metadata").write_text(json.dumps({"id": query_id}) + "\n")
    for n in commits:
        (path / "offsets" / str(n)).write_text('v1\n{"batchWatermarkMs":0}\n{"t":{"0":1}}\n')
        (path / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    return path


def test_the_committed_batch_is_the_newest_commit_of_the_query(tmp_path):
    assert errors.committed_batch(checkpoint(tmp_path, [0, 1, 2])) == ("q-1", 2)
    assert errors.committed_batch(tmp_path / "none") == (None, None)


def test_a_sink_at_or_past_its_checkpoint_lost_nothing(tmp_path):
    assert errors.sink_behind(tmp_path, "q-1", committed=2, recorded=2) is None
    assert errors.sink_behind(tmp_path, "q-1", committed=2, recorded=3) is None


def test_a_sink_behind_its_checkpoint_names_the_log_and_the_missing_batches(tmp_path):
    problem = errors.sink_behind(tmp_path, "q-1", committed=4, recorded=2)
    assert str(tmp_path / "_delta_log") in problem and "batches 3..4" in problem
    assert "batches 0..4" in errors.sink_behind(tmp_path, "q-1", committed=4, recorded=None)


def test_a_healthy_checkpoint_has_nothing_to_report(tmp_path):
    assert errors.inspect_checkpoint(checkpoint(tmp_path, [0, 1])) == []
