"""kill -9 of each lake job, run as its own process, at the moment where a write that is not
idempotent would show; then a clean finish. The tables must equal the uninterrupted run's
(bronze: every column but the ingest wall clock, by Kafka coordinates)."""

from __future__ import annotations

import pytest

from tests.faults import harness

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("job", harness.JOBS)
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
