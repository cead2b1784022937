"""Running an ops app the way spark-submit does: a separate process, configured by ``ADLAKE_*``
environment variables, against its own broker, stopped with SIGTERM.

* ``fresh_kafka``: a broker of its own (free ports, runtime directory under ``tmp_path``, every
  registry topic created), so an app test starts from empty topics and an empty checkpoint
  directory; ``fresh_kafka.settings`` is what the app is configured with.
* :func:`start_app` / :func:`stop_app`: launch ``python -m <module>`` with those settings, its
  output in ``<runtime_dir>/logs/``; stop it with SIGTERM and require exit code 0. Whatever a
  test leaves running is killed when it ends.
* :func:`read_topic`, :func:`committed_offsets`, :func:`wait_for`: look at what the app did, by
  polling with a deadline (never by sleeping a fixed time); :func:`scrape_prometheus`: what an
  app started with ``spark_metrics`` on serves on its driver's Prometheus endpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from adlake.config import Settings
from tests.conftest import private_settings

T = TypeVar("T")

# Processes started by start_app during the current test; the autouse fixture below kills
# whatever is still alive when the test ends.
_STARTED: list[subprocess.Popen] = []


if TYPE_CHECKING:
    from adlake.local.kafka import LocalKafka


@pytest.fixture
def fresh_kafka(tmp_path: Path) -> Iterator[LocalKafka]:
    """A broker of this test alone, with every registry topic created (and empty)."""
    from adlake.local.kafka import LocalKafka

    broker = LocalKafka(private_settings(tmp_path / "runtime"))
    broker.start()
    try:
        broker.create_topics()
        yield broker
    finally:
        kill_started_apps()  # before the broker goes: an app outliving it only logs errors
        broker.stop()


@pytest.fixture(autouse=True)
def _kill_leftover_apps() -> Iterator[None]:
    yield
    kill_started_apps()


def kill_started_apps() -> None:
    """SIGKILL every app process group started by :func:`start_app` that is still running."""
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            # The app, its JVM and its Python workers share the process group start_app made.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


# -- the app process -------------------------------------------------------------------------------


def app_env(settings: Settings) -> dict[str, str]:
    """The environment of an app process: this one's, minus any ``ADLAKE_*`` of the caller's
    shell, plus ``settings`` as ``ADLAKE_*`` variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADLAKE_")}
    env.update(
        {
            "ADLAKE_PROFILE": "local",
            "ADLAKE_RUNTIME_DIR": str(settings.runtime_dir),
            "ADLAKE_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
            "ADLAKE_KAFKA_CONTROLLER_PORT": str(settings.kafka_controller_port),
            "ADLAKE_SHUFFLE_PARTITIONS": str(settings.shuffle_partitions),
            "ADLAKE_TOPIC_PARTITIONS": str(settings.topic_partitions or ""),
            "ADLAKE_SPARK_MASTER_OPS": settings.spark_master_ops,
            "ADLAKE_DRIVER_MEMORY": settings.driver_memory,
            "ADLAKE_JARS_DIR": str(settings.jars_dir),
            "ADLAKE_SPARK_METRICS": str(settings.spark_metrics).lower(),
            "ADLAKE_SPARK_UI_PORT": str(settings.spark_ui_port),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def start_app(module: str, settings: Settings, *args: str) -> subprocess.Popen:
    """Start ``python -m module *args`` (this interpreter) configured by ``settings``.

    Its stdout and stderr go to ``<runtime_dir>/logs/<module>-<n>.log`` (``proc.log_path``); it
    runs in a session of its own, so a Ctrl-C of pytest does not reach it and teardown can kill
    its whole process group.
    """
    logs = settings.runtime_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    n = len(list(logs.glob(f"{module}-*.log")))
    log_path = logs / f"{module}-{n}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=app_env(settings),
            cwd=Path(__file__).resolve().parents[3],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    proc.log_path = log_path  # type: ignore[attr-defined]
    _STARTED.append(proc)
    return proc


def log_tail(proc: subprocess.Popen, lines: int = 40) -> str:
    path: Path = proc.log_path  # type: ignore[attr-defined]
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"last {min(lines, len(text))} lines of {path}:\n" + "\n".join(text[-lines:])


def assert_running(proc: subprocess.Popen) -> None:
    """Fail at once, with the log, if the app has already exited."""
    code = proc.poll()
    assert code is None, f"the app exited early with code {code}\n{log_tail(proc)}"


def stop_app(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Ask the app to stop gracefully (SIGTERM to the driver process only: the JVM must keep
    running until the query has stopped) and require exit code 0 within ``timeout``."""
    assert_running(proc)
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"the app did not exit within {timeout:.0f}s of SIGTERM\n{log_tail(proc)}"
        ) from None
    assert code == 0, f"the app exited with code {code} after SIGTERM\n{log_tail(proc)}"


# -- polling -------------------------------------------------------------------------------------


def wait_for(
    predicate: Callable[[], T],
    timeout_s: float,
    poll_s: float = 0.5,
    message: str | Callable[[], str] = "",
) -> T:
    """Call ``predicate`` until it returns something truthy and return that; fail after
    ``timeout_s`` with ``message`` (a string or a callable giving one, e.g. a log tail)."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"condition not met within {timeout_s:.0f}s: {text}")
        time.sleep(poll_s)


# -- metrics -------------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(\{[^}]*\})? (?P<value>\S+)$")


def scrape_prometheus(url: str) -> dict[str, float]:
    """``{metric name: value}`` of the Prometheus text an endpoint serves now (an HTTP GET);
    a value that is not a number is left out."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200, f"GET {url}: {response.status}"
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            with contextlib.suppress(ValueError):
                samples[match["name"]] = float(match["value"])
    return samples


def prometheus_name(*parts: str) -> str:
    """The name Spark's PrometheusServlet gives a metric of the registry name ``parts``
    joined by dots: every character but letters and digits as ``_``, ``metrics_`` before."""
    return "metrics_" + re.sub(r"[^A-Za-z0-9]", "_", ".".join(parts))


# -- Kafka ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int

    def json(self) -> dict:
        return json.loads(self.value)


def end_offsets(bootstrap: str, topic: str, timeout_s: float = 30) -> dict[int, int]:
    """``{partition: high watermark}`` of ``topic``; a partition still electing its leader is
    retried until ``timeout_s``."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"end-{uuid.uuid4()}"})
    deadline = time.monotonic() + timeout_s
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        out = {}
        for p in sorted(partitions):
            while p not in out:
                try:
                    out[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                except KafkaException as e:
                    if not e.args[0].retriable() or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        return out
    finally:
        consumer.close()


def read_topic(
    bootstrap: str, topic: str, start_offsets: dict[int, int] | None = None, timeout_s: float = 30
) -> list[Record]:
    """Every record of ``topic`` from ``start_offsets`` (default: the beginning) up to the end
    offsets at the time of the call, each partition in offset order."""
    from confluent_kafka import Consumer, TopicPartition

    end = end_offsets(bootstrap, topic, timeout_s)
    start = {p: (start_offsets or {}).get(p, 0) for p in end}
    wanted = {p: end[p] for p in end if end[p] > start[p]}
    if not wanted:
        return []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, start[p]) for p in wanted])
    position = {p: start[p] for p in wanted}
    out: list[Record] = []
    deadline = time.monotonic() + timeout_s
    try:
        while any(position[p] < wanted[p] for p in wanted):
            assert time.monotonic() < deadline, (
                f"reading {topic} timed out at offsets {position}, wanted {wanted}"
            )
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                p = msg.partition()
                if msg.offset() >= wanted[p]:
                    continue
                position[p] = msg.offset() + 1
                out.append(
                    Record(topic, p, msg.offset(), msg.key(), msg.value(), msg.timestamp()[1])
                )
    finally:
        consumer.close()
    return out


def produce(
    bootstrap: str,
    topic: str,
    value: bytes,
    key: bytes | None = None,
    partition: int | None = None,
    timestamp_ms: int | None = None,
) -> None:
    """Produce one record and wait until the broker has it."""
    from confluent_kafka import Producer

    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    kwargs = {"timestamp": timestamp_ms} if timestamp_ms is not None else {}
    if partition is not None:
        kwargs["partition"] = partition
    producer.produce(
        topic,
        value=value,
        key=key,
        on_delivery=lambda err, msg: err and errors.append(err),
        **kwargs,
    )
    assert producer.flush(30) == 0, f"record to {topic} not delivered"
    assert not errors, errors


# -- the checkpoint ------------------------------------------------------------------------------


def committed_offsets(checkpoint: Path) -> dict[tuple[str, int], int]:
    """``{(topic, partition): next offset}`` every source of the query has read up to, as of the
    last batch it committed (``offsets/<n>`` with a matching ``commits/<n>``); empty before the
    first commit. A plan that reads one topic in several branches (a union of filters of one
    stream) has one source per branch, each with its own offsets: the minimum is taken."""
    commits = (
        [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
        if (checkpoint / "commits").is_dir()
        else []
    )
    if not commits:
        return {}
    lines = (checkpoint / "offsets" / str(max(commits))).read_text().splitlines()
    # v1, the batch metadata, then one line of offsets per source.
    out: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        if line.strip() == "-":  # a source that has no offsets yet
            return {}
        for topic, parts in json.loads(line).items():
            for p, offset in parts.items():
                key = (topic, int(p))
                out[key] = min(offset, out.get(key, offset))
    return out
