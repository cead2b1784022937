"""The lake engine (``adlake.local.engine``): a real Spark Connect server of the lake runtime,
started once for this module. Its clients need the token; a try's session is released with
whatever it left running; it stops leaving no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from adlake.config import settings_env
from adlake.local.engine import LakeEngine, client_token, ensure_token, remote_url
from adlake.local.engine_report import engine_view, report_path
from adlake.local.kafka import free_port
from adlake.processes import alive
from adlake.spark_session import engine_session
from tests.conftest import private_settings

pytestmark = pytest.mark.integration

CONNECTS = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print(spark.sql("SELECT 40 + 2").first()[0])
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    settings = private_settings(tmp_path_factory.mktemp("engine")).with_overrides(
        lake_engine="connect", lake_engine_port=free_port(), lake_nice=5
    )
    engine = LakeEngine(settings)
    assert engine.start() is True
    try:
        yield engine
    finally:
        engine.stop()


def test_the_engine_answers_its_token_only_and_keeps_it_off_its_command_line(engine, monkeypatch):
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)  # the test run's engine's
    settings = engine.settings
    token = ensure_token(settings)
    assert (ensure_token(settings), client_token(settings)) == (token, token)  # made once
    assert oct(engine_token_mode(settings)) == "0o600"
    assert run_client(engine, CONNECTS, remote_url(settings, token)).stdout.strip() == "42"
    refused = run_client(engine, CONNECTS, remote_url(settings, "not-the-token"))
    assert refused.returncode != 0 and "Invalid authentication token" in refused.stderr
    pid = engine.record()["pid"]
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        assert token.encode() not in cmdline.read()
    assert "spark.connect.grpc.binding.address=127.0.0.1" in " ".join(engine.argv())
    status = engine.status()
    assert status["running"] and status["current_code"] and status["rss_mb"] > 100
    assert engine.start() is False  # running already: nothing started
    # below the streaming apps: the JVM at lake_nice (5 here) above the process that started it
    assert os.getpriority(os.PRIO_PROCESS, pid) == os.nice(0) + settings.lake_nice > 0


def engine_token_mode(settings) -> int:
    from adlake.local.engine_client import token_path

    return token_path(settings).stat().st_mode & 0o777


# Connect clients run in processes of their own: a Spark Connect session in this process would
# switch PySpark here to Connect mode, under the classic session the other tests share.
LEAVES_A_STREAM = """
import os, sys
from adlake.config import load_settings
from adlake.spark_session import engine_session
settings = load_settings()
spark = engine_session(settings, session_id=sys.argv[1])
query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
         .writeStream.foreachBatch(lambda df, n: None).queryName("left_behind").start())
query.processAllAvailable()  # its Python worker in the engine runs (and prints its URL)
print("running", query.isActive, flush=True)
os._exit(9)  # the client dies; its stream is the engine's
"""
RELEASES = """
import sys
from adlake.config import load_settings
from adlake.local.engine import release_sessions
from adlake.spark_session import engine_session
settings = load_settings()
print(release_sessions(settings, [sys.argv[1]]))
print(engine_session(settings, session_id=sys.argv[2]).streams.active)
print(release_sessions(settings, [sys.argv[1]]))
"""


def run_client(engine, code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **settings_env(engine.settings)}
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def test_a_later_try_releases_what_an_earlier_one_left_running(engine):
    # A client that dies leaves its streaming query running in the engine, under its session;
    # the next try releases that session first: the query stops, the session is gone.
    sid = "0b6f1f1e-7c1d-4f3e-9d55-3b7f2a9c0001"
    died = run_client(engine, LEAVES_A_STREAM, sid)
    assert died.returncode == 9 and "running True" in died.stdout, died.stderr[-2000:]
    released = run_client(engine, RELEASES, sid, "0b6f1f1e-7c1d-4f3e-9d55-3b7f2a9c0002")
    assert released.returncode == 0, released.stderr[-2000:]
    said, active, again = released.stdout.splitlines()
    assert "stopped 1 streaming queries ['left_behind']" in said
    assert (active, again) == ("[]", "[]")  # nothing left under it
    # the streaming worker's URL reached the engine's log without its token
    log = engine.log_path.read_text()
    assert "ForeachBatch worker" in log and ensure_token(engine.settings) not in log


RUNS_LONG = """
import sys
from adlake.config import load_settings
from adlake.spark_session import engine_session
spark = engine_session(load_settings(), session_id=sys.argv[1])
print("started", flush=True)
spark.range(0, 10**13, numPartitions=2).selectExpr("sum(id % 7)").collect()  # until interrupted
"""


def test_the_engine_reports_the_operations_its_sessions_run(engine):
    # What `make status` and the page show: the running operation and its session, from the
    # engine's UI; the client's death does not end it, releasing its session does.
    sid = "0b6f1f1e-7c1d-4f3e-9d55-3b7f2a9c0003"
    env = {**os.environ, **settings_env(engine.settings)}
    env.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
    client = subprocess.Popen(
        [sys.executable, "-c", RUNS_LONG, sid], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert client.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 60
        while sid not in (status := engine.status()).get("sessions", []):
            assert time.monotonic() < deadline, f"the operation never showed: {status}"
            time.sleep(0.5)
        assert status["operations"] == 1 and status["running_jobs"] >= 1
        assert status["ui_url"].startswith("http://")
    finally:
        client.kill()
        client.wait()
    released = run_client(engine, RELEASES_ONLY, sid)
    assert "interrupted 1 operations" in released.stdout, released.stderr[-2000:]
    deadline = time.monotonic() + 30
    while engine.status().get("operations"):
        assert time.monotonic() < deadline, "the released session's operation still runs"
        time.sleep(0.5)


ENDS = """
import sys
from adlake.config import load_settings
from adlake.spark_session import engine_session
print(engine_session(load_settings(), session_id=sys.argv[1]).sql("SELECT 1").first()[0])
"""
REUSES = """
import sys
from pyspark.sql import SparkSession
from adlake.config import load_settings
from adlake.local.engine import client_token, remote_url
url = remote_url(load_settings(), client_token(load_settings()), sys.argv[1])
try:
    SparkSession.builder.remote(url).create().sql("SELECT 1").collect()
    print("open")
except Exception as error:
    print("closed" if "SESSION_CLOSED" in str(error) else error)
"""


def test_a_job_that_ends_releases_its_session(engine):
    # The engine frees a job's session when its process ends, not an idle hour later.
    sid = "0b6f1f1e-7c1d-4f3e-9d55-3b7f2a9c0004"
    assert run_client(engine, ENDS, sid).stdout.strip() == "1"
    assert run_client(engine, REUSES, sid).stdout.strip() == "closed"


RELEASES_ONLY = """
import sys
from adlake.config import load_settings
from adlake.local.engine import release_sessions
print(release_sessions(load_settings(), [sys.argv[1]]))
"""


def test_a_job_without_the_engine_is_told_how_to_start_it(tmp_path):
    from adlake.local.engine import EngineError

    settings = private_settings(tmp_path / "rt").with_overrides(
        lake_engine="connect", lake_engine_port=free_port()
    )
    ensure_token(settings)
    with pytest.raises(
        EngineError, match="does not answer: start it .*python -m adlake.local.engine up"
    ):
        engine_session(settings)


def test_the_engine_killed_with_9_answers_again_within_a_minute_with_an_alert(engine):
    # Its keeper starts the JVM again and says so; the token and the port stay the same.
    from adlake.alerts import alerts_file

    before = engine.record()
    os.kill(before["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not ((now := engine.record()) and now["pid"] != before["pid"] and engine.answers()):
        assert time.monotonic() < deadline, f"not answering 60 s after kill -9: {engine._tail()}"
        time.sleep(1)
    assert now["keeper_pid"] == before["keeper_pid"] and not alive(before["pid"])
    sent = [json.loads(line) for line in alerts_file(engine.settings).read_text().splitlines()]
    assert [a["kind"] for a in sent] == ["engine_restarted"]
    assert "killed by signal 9" in sent[0]["error"] and "lake engine" in sent[0]["text"]
    # the keeper's report (what the page shows) counts it
    report = json.loads(report_path(engine.settings).read_text())
    assert report["restarts"]["count"] == 1
    assert report["restarts"]["last_reason"] == "was killed by signal 9"


def test_the_engine_stops_leaving_no_process(engine):
    # (last in this module: it stops the module's engine, and its keeper)
    record = engine.record()
    begun = time.monotonic()
    assert engine.stop() is True
    assert time.monotonic() - begun < 60 and not engine.is_running()
    assert not alive(record["pid"]) and not alive(record["keeper_pid"])
    assert engine.stop() is False
    assert engine_view(engine.settings)["state"] == "stopped"
