"""The broker stopped and started again while bronze ingests: bronze either rides it out (the
Kafka source retries) or fails clearly and its rerun (Airflow's retry) finishes; either way its
tables equal the uninterrupted run's, nothing lost and nothing twice.

The bronze of this test reads the reference's own broker (it holds the generated input; its
topics keep every record), so that broker is the one bounced: stopped with a controlled
shutdown once bronze is inside its second batch, kept down until bronze's Kafka client has
noticed (its log says a connection could not be established; at most ``MAX_DOWN_S``), started
again on the same ports and data.
"""

from __future__ import annotations

import time

import pytest

from adlake.local.kafka import LocalKafka
from tests.faults import harness

# make test keeps a broker bounce under the streaming apps (tests/spark_apps/ops/test_faults.py);
# the bounce under bronze is in make test-e2e.
pytestmark = [pytest.mark.faults, pytest.mark.e2e]

MAX_DOWN_S = 30.0
NOTICED = "could not be established"  # Kafka's NetworkClient, when the broker refuses


def test_a_broker_bounce_during_bronze_loses_nothing_and_doubles_nothing(spark, lake, tmp_path):
    settings = lake.fork(harness.STAGE["bronze"], tmp_path / "runtime")
    proc = harness.start_job(settings, harness.job_argv("bronze", lake.report), "bronze-bounce")
    checkpoint = settings.checkpoint_path(harness.bronze_tables()[-1])
    moment = harness.batch_open(checkpoint, min_batch=1)
    broker = LocalKafka(lake.settings)
    deadline = time.monotonic() + 300
    while not moment.holds() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(harness.POLL_S)
    assert proc.poll() is None, (
        "bronze ended before its second batch: "
        + harness.log_text(settings, "bronze-bounce")[-2000:]
    )
    assert broker.stop()
    down_at = time.monotonic()
    try:
        while (
            NOTICED not in harness.log_text(settings, "bronze-bounce")
            and proc.poll() is None
            and time.monotonic() - down_at < MAX_DOWN_S
        ):
            time.sleep(0.2)
    finally:
        assert broker.start()
    down_s = time.monotonic() - down_at

    exit_code = harness.finish(proc)
    log = harness.log_text(settings, "bronze-bounce")
    if exit_code != 0:
        # Failed rather than rode it out: the failure must say what failed, and the rerun
        # (what Airflow's retry does) must finish from the checkpoint.
        assert "Kafka" in log or "kafka" in log or "Timeout" in log, log[-3000:]
        harness.finish_in_process(spark, settings, "bronze", lake.report)
    print(f"\nbronze {'rode out' if exit_code == 0 else 'failed on'} a {down_s:.0f} s outage")

    for diff in harness.compare_job(spark, lake.settings, settings, "bronze"):
        assert diff.equal, f"after a broker bounce: {diff}"
        assert diff.got == diff.expected > 0, diff
