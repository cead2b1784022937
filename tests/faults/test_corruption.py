"""Damaged state: a checkpoint file (offsets, commits, metadata) or a ``_delta_log`` commit
truncated or deleted. The job fails with the typed error naming the file and the runbook step,
never reprocessing or losing silently; the one damage Spark handles by itself (a deleted
``commits/N`` together with its checksum: batch N is replayed) leaves the table equal to the
uninterrupted run, through the Delta sink's idempotence."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from spark_apps.lake import bronze, errors, silver
from tests.faults import harness

pytestmark = pytest.mark.faults

CHECKPOINT = "bronze_page_clicks"


def newest(directory: Path) -> Path:
    return max((p for p in directory.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


def truncate(path: Path) -> Path:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])
    return path


def delete(path: Path) -> Path:
    path.unlink()
    return path


def delete_with_checksum(path: Path) -> Path:
    """Delete a Delta commit and its checksum; the log directory is what the error can name."""
    delete(path.with_name(f".{path.name}.crc"))
    return delete(path).parent


def newest_commit(table: Path) -> Path:
    return max((table / "_delta_log").glob("0*.json"))


# name -> (what to damage, given the checkpoint and the table; the error expected)
DAMAGE: dict[str, tuple[Callable[[Path, Path], Path], type]] = {
    "offsets truncated": (lambda c, t: truncate(newest(c / "offsets")), errors.CheckpointCorrupted),
    "offsets deleted": (lambda c, t: delete(newest(c / "offsets")), errors.CheckpointCorrupted),
    "commits truncated": (lambda c, t: truncate(newest(c / "commits")), errors.CheckpointCorrupted),
    "commits deleted": (lambda c, t: delete(newest(c / "commits")), errors.CheckpointCorrupted),
    "metadata truncated": (lambda c, t: truncate(c / "metadata"), errors.CheckpointCorrupted),
    "metadata deleted": (lambda c, t: delete(c / "metadata"), errors.CheckpointCorrupted),
    "delta log commit truncated": (
        lambda c, t: truncate(newest_commit(t)),
        errors.DeltaLogCorrupted,
    ),
    "delta log commit deleted": (lambda c, t: delete(newest_commit(t)), errors.DeltaLogCorrupted),
    # No checksum left to notice: only the sink's transaction, behind the checkpoint, tells.
    "delta log commit deleted with its checksum": (
        lambda c, t: delete_with_checksum(newest_commit(t)),
        errors.DeltaLogCorrupted,
    ),
}


@pytest.fixture(scope="module")
def ingested(spark, lake, tmp_path_factory):
    """A bronze runtime that has ingested everything (in-process), to damage copies of."""
    settings = lake.fork("empty", tmp_path_factory.mktemp("ingested") / "runtime")
    bronze.run(spark, settings, list(harness.TOPICS), max_offsets=harness.BRONZE_BATCH)
    return settings


def damaged_copy(ingested, tmp_path):
    settings = ingested.with_overrides(runtime_dir=tmp_path / "runtime")
    shutil.copytree(
        ingested.runtime_dir, settings.runtime_dir, ignore=shutil.ignore_patterns("logs")
    )
    return settings


@pytest.mark.parametrize("case", DAMAGE)
def test_damaged_bronze_state_fails_naming_the_file_and_the_runbook_step(
    spark, lake, ingested, tmp_path, case
):
    settings = damaged_copy(ingested, tmp_path)
    damage, expected = DAMAGE[case]
    damaged = damage(settings.checkpoint_path(CHECKPOINT), settings.table_path(CHECKPOINT))

    with pytest.raises(expected) as failure:
        bronze.run(spark, settings, list(harness.TOPICS))
    message = str(failure.value)
    assert str(damaged) in message, message
    assert "README.md, On-call runbook" in message, message


def test_deleted_commit_with_its_checksum_replays_the_batch_idempotently(
    spark, lake, ingested, tmp_path
):
    """What Spark does by itself: without ``commits/N`` (and its ``.N.crc``) batch N is run
    again from ``offsets/N``; the Delta sink finds the batch's transaction in the table and
    skips it, so nothing is written twice."""
    settings = damaged_copy(ingested, tmp_path)
    commits = settings.checkpoint_path(CHECKPOINT) / "commits"
    last = newest(commits)
    delete(last)
    delete(commits / f".{last.name}.crc")
    before = harness.log_versions(settings.table_path(CHECKPOINT))

    bronze.run(spark, settings, list(harness.TOPICS))

    assert last.exists(), "the batch was not replayed"
    assert harness.log_versions(settings.table_path(CHECKPOINT)) == before  # skipped, no write
    for diff in harness.compare_job(spark, lake.settings, settings, "bronze"):
        assert diff.equal and diff.got == diff.expected, diff


def test_damaged_silver_checkpoint_fails_naming_the_file(spark, lake, tmp_path):
    settings = lake.fork("silver", tmp_path / "runtime")
    shutil.copytree(
        lake.settings.checkpoint_path("silver_page_clicks"),
        settings.checkpoint_path("silver_page_clicks"),
    )
    damaged = truncate(newest(settings.checkpoint_path("silver_page_clicks") / "offsets"))

    with pytest.raises(errors.CheckpointCorrupted, match="On-call runbook") as failure:
        silver.run(spark, settings, ["page_clicks"])
    assert str(damaged) in str(failure.value)
