"""kill -9 of each lake job, run as its own process, at the moment where a write that is not
idempotent would show; then a clean finish. The tables must equal the uninterrupted run's
(bronze: every column but the ingest wall clock, by Kafka coordinates).

``make test`` kills silver (a stream whose batches write several tables) and gold (rebuilds by
``replaceWhere``); the engine-kill cases add a view refresh. Bronze, the views and table
maintenance are the e2e tier's (the same harness, each its own moment)."""

from __future__ import annotations

import pytest

from tests.faults import harness
from tests.tiers import variants

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("job", variants(harness.JOBS, {"silver", "gold"}))
def test_kill_at_the_dangerous_moment_then_rerun_equals_the_uninterrupted_run(
    spark, lake, tmp_path, job
):
    settings = lake.fork(harness.STAGE[job], tmp_path / "runtime")
    moment = harness.dangerous_moment(settings, job)
    proc = harness.start_job(settings, harness.job_argv(job, lake.report), f"{job}-killed")
    kill = harness.kill_when(job, proc, moment)
    assert kill.hit, (
        f"{job} ended (exit {kill.exit_code}) before {moment.name}: "
        f"{kill.observed}\n{harness.log_text(settings, f'{job}-killed')[-3000:]}"
    )

    harness.finish_in_process(spark, settings, job, lake.report)

    for diff in harness.compare_job(spark, lake.settings, settings, job):
        assert diff.equal, f"{job} killed at {kill.observed}: {diff}"
        assert diff.got == diff.expected > 0, diff
