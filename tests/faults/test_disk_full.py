"""Disk full on the runtime directory: a size-limited tmpfs (needs root; without it the test is
skipped, and says so). Bronze fails with ``DiskFull``; the table reads as its last commit (only
whole batches, no record twice); after space is freed a rerun equals the uninterrupted run."""

from __future__ import annotations

import os
import subprocess

import pytest

from spark_apps.lake import bronze, errors
from tests.faults import harness

pytestmark = pytest.mark.faults

TMPFS_SIZE = "64m"


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount, leave: int):
    """Take all the space of ``mount`` but ``leave`` bytes."""
    stat = os.statvfs(mount)
    filler = mount / "filler"
    with open(filler, "wb") as out:
        out.truncate(0)
        chunk = b"\0" * (1 << 20)
        remaining = stat.f_bavail * stat.f_frsize - leave
        while remaining > 0:
            remaining -= out.write(chunk[:remaining])
    return filler


def test_disk_full_fails_clearly_commits_nothing_partial_and_a_rerun_catches_up(
    spark, lake, small_disk
):
    settings = lake.fork("empty", small_disk / "runtime")
    settings.tables_dir.mkdir(parents=True)
    filler = fill(small_disk, leave=48 * 1024)

    with pytest.raises(errors.DiskFull, match="On-call runbook") as failure:
        bronze.run(spark, settings, list(harness.TOPICS), max_offsets=harness.BRONZE_BATCH)
    assert str(settings.runtime_dir) in str(failure.value)

    # Nothing half-committed: the log and the checkpoints are intact, and the table holds
    # whole batches of the reference's records, none twice.
    for topic in harness.TOPICS:
        name = f"bronze_{topic}"
        assert errors.inspect_delta_log(settings.table_path(name)) == []
        assert errors.inspect_checkpoint(settings.checkpoint_path(name)) == []
    for diff in harness.compare_job(spark, lake.settings, settings, "bronze"):
        assert diff.extra == diff.duplicated == 0, diff

    filler.unlink()
    bronze.run(spark, settings, list(harness.TOPICS), max_offsets=harness.BRONZE_BATCH)
    for diff in harness.compare_job(spark, lake.settings, settings, "bronze"):
        assert diff.equal and diff.got == diff.expected, diff
