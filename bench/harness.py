"""What the benchmark tools share: where their JSON goes and how it is written, the machine's
load, timing, a broker and runtime of their own, the jobs and apps they run as processes, and
the latency figures and Kafka reader of the operational benchmarks.

Every tool measures on state of its own: :func:`private_broker` gives it a work directory (the
runtime: tables, checkpoints, logs) and a broker on free loopback ports with the registry's
topics, stopped when the tool is done. Processes it starts (a lake job as Airflow runs it, an
app as spark-submit would) get those settings through their environment (:func:`process_env`).

Nothing here imports PySpark, so both environments import it; the Kafka client is imported when
a reader starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from adlake import registry
from adlake.apps import settings_env
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.local.kafka import scratch_broker
from adlake.status import read_status

T = TypeVar("T")

# Bronze's goal: steady-state ingest of at least this many records/s on 2 cores (the bronze
# benchmark measures it, the report draws it).
BRONZE_GOAL_RECORDS_PER_S = 100_000

# -- where results go ------------------------------------------------------------------------------


def report_dir(settings: Settings, quick: bool = False) -> Path:
    """Where a suite writes its JSON for the report unless told (``--out-dir``): the reports
    directory's ``bench``, or ``bench-quick`` for a quick run.

    >>> from adlake.config import load_settings
    >>> s = load_settings({"ADLAKE_PROFILE": "local", "ADLAKE_RUNTIME_DIR": "/r"})
    >>> str(report_dir(s)), str(report_dir(s, quick=True))
    ('/r/reports/bench', '/r/reports/bench-quick')
    """
    return settings.reports_dir / ("bench-quick" if quick else "bench")


def stamped(directory: Path, name: str) -> Path:
    """``directory/<name>-<local time>.json``: where a single run's JSON goes unless told."""
    return directory / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}.json"


def write_json(path: Path, value: Any, indent: int = 2) -> Path:
    """``value`` as JSON at ``path`` (its directory created; values JSON has no type for, such
    as dates, as their text); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent, default=str) + "\n")
    return path


# -- the machine and the clock -------------------------------------------------------------------


def load_average() -> float:
    """The 1-minute load average now, as every benchmark's ``load_average`` [start, end] holds
    it (the machine may be shared: the report shows it beside each figure)."""
    return round(os.getloadavg()[0], 2)


def cores() -> int | None:
    """The machine's cores, as every benchmark's JSON names them (``cores``)."""
    return os.cpu_count()


def say(message: str, tag: str = "bench") -> None:
    """One progress line, ``[tag] message``, flushed (a tool's output is read as it runs)."""
    print(f"[{tag}] {message}", flush=True)


def progress(tag: str) -> Callable[[str], None]:
    """A :func:`say` whose tag carries the seconds since this call: ``[tag   12 s] message``,
    for a benchmark's progress lines."""
    began = time.monotonic()

    def say_elapsed(message: str) -> None:
        say(message, tag=f"{tag} {time.monotonic() - began:5.0f} s")

    return say_elapsed


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """``fn(*args, **kwargs)`` and the seconds it took.

    >>> timed(sum, [1, 2])[0]
    3
    """
    start = time.monotonic()
    result = fn(*args, **kwargs)
    return result, time.monotonic() - start


def wait_until(condition: Callable[[], bool], timeout_s: float, poll_s: float = 2.0) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` passes (False).

    >>> wait_until(lambda: True, timeout_s=0)
    True
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


# -- a runtime and a broker of the tool's own ---------------------------------------------------


def work_dir(name: str) -> Path:
    """A new temporary directory for one run of the ``name`` tool (its runtime and logs); kept
    after the run, so its logs can be read."""
    return Path(tempfile.mkdtemp(prefix=f"adlake-bench-{name}-"))


@contextmanager
def private_broker(
    name: str, base: Settings | None = None, workdir: Path | None = None
) -> Iterator[tuple[Settings, Path]]:
    """A work directory (``workdir``, default a new :func:`work_dir`) and a broker on free
    loopback ports with the registry's topics; yields ``(settings, work directory)``: ``base``
    (default: the configured settings) with the runtime there and that broker. The broker stops
    on exit."""
    workdir = workdir or work_dir(name)
    with scratch_broker(base or load_settings(), workdir) as settings:
        yield settings, workdir


@contextmanager
def platform_airflow(
    settings: Settings, unpause: tuple[str, ...], say: Callable[[str], None], schedules: bool
) -> Iterator[Path]:
    """The platform's own Airflow (:mod:`adlake.local.platform`: metadata database, api-server,
    scheduler, dag-processor, triggerer) on ``settings``' runtime and a free port, with only the
    DAGs ``unpause`` unpaused and the scheduler's own schedules on or off (``schedules``);
    yields the metadata database's path and stops every component on exit. Its processes
    inherit this process's environment, set here."""
    from adlake.local import platform
    from adlake.local.kafka import free_port

    os.environ.update(settings_env(settings))
    os.environ["AIRFLOW__API__PORT"] = str(free_port())
    os.environ["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] = str(schedules).lower()
    try:
        platform.migrate(settings)
        for component in platform.AIRFLOW_COMPONENTS:
            platform.start_component(settings, component)
        platform.wait_ready()
        platform.wait_dags_parsed(settings)
        for dag_id in unpause:
            done = platform.run_airflow(settings, "dags", "unpause", dag_id, check=False)
            if done.returncode:
                raise RuntimeError(f"unpause {dag_id}: {done.stderr[-2000:]}")
        say(f"Airflow up at {platform.airflow_url()}, {', '.join(unpause)} unpaused")
        yield platform.airflow_home(settings) / "airflow.db"
    finally:
        for component in reversed(platform.AIRFLOW_COMPONENTS):
            platform.stop_component(settings, component)


def airflow_utc(text: str | None) -> datetime | None:
    """A timestamp of Airflow's SQLite metadata (UTC, with or without an offset).

    >>> airflow_utc("2026-11-26 02:00:01.5")
    datetime.datetime(2026, 11, 26, 2, 0, 1, 500000, tzinfo=datetime.timezone.utc)
    >>> airflow_utc(None) is None
    True
    """
    if text is None:
        return None
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def process_env(settings: Settings, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``settings`` as the ``ADLAKE_*`` variables (the child's
    ``load_settings()`` returns them), then ``extra``."""
    return {**os.environ, **settings_env(settings), **(extra or {})}


def own_session(settings: Settings) -> Settings:
    """``settings`` with the lake's jobs each in a Spark session of its own (a JVM per process,
    as spark-submit): what the benchmarks that start no lake engine measure. The engine's
    figures are :mod:`bench.lake.bronze`'s and :mod:`bench.lake.engine_soak`'s, which start one."""
    return settings.with_overrides(lake_engine="local")


def run_module(settings: Settings, module: str, *args: str, python: str | None = None) -> dict:
    """``python -m module args`` as Airflow runs a lake job: a process of its own, against
    ``settings``, from the repository (``python``: another environment's interpreter). Its wall
    time (``seconds``) and its ``[...]`` progress lines (``log``); raises with its output if it
    fails."""
    started = time.monotonic()
    done = subprocess.run(
        [python or sys.executable, "-m", module, *args],
        env=process_env(settings),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    if done.returncode:
        raise RuntimeError(
            f"{module} {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    return {"seconds": round(seconds, 2), "log": lines}


# -- the streaming apps as processes -----------------------------------------------------------


def start_app(
    app: registry.App,
    settings: Settings,
    args: list[str],
    log: Path,
    extra_env: dict[str, str] | None = None,
    own_group: bool = False,
) -> subprocess.Popen:
    """Start ``app`` as its own process, as spark-submit would (its registry module), configured
    by ``settings`` (runtime, broker, shuffle partitions, Spark master) and ``extra_env``, its
    output appended to ``log``; ``own_group``: in a process group of its own (its JVM with it),
    which ``os.killpg`` ends at once, as a crash would."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", app.module, *args],
            env=process_env(settings, extra_env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=own_group,
        )


def wait_started(
    settings: Settings, name: str, proc: subprocess.Popen, log: Path, timeout_s: float = 120
) -> None:
    """Wait until the status of the query ``name`` says it started; raise if it exits first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}; see {log}")
        status = read_status(settings, name)
        if status and status.get("state") in ("starting", "running"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not start within {timeout_s:.0f}s; see {log}")


def stop_app(proc: subprocess.Popen, timeout_s: float = 90) -> None:
    """SIGTERM (the app stops after its running batch commits); SIGKILL after ``timeout_s``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- latency figures ---------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank ``q`` quantile of ``values``, to 0.1 (None if empty).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([], 0.5)
    (3.0, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def latency_stats(values: list[float]) -> dict:
    """``{"p50", "p95", "p99", "max", "n"}`` of latencies in ms (nearest rank; None if empty)."""
    return {
        "p50": percentile(values, 0.50),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "max": round(max(values), 1) if values else None,
        "n": len(values),
    }


def quantiles(values: list[float], steps: int = 1000) -> list[float]:
    """Latency at quantile 0, 1/steps, ..., 1 (``steps + 1`` values; nearest rank, so 0 is the
    minimum and 1 the maximum); empty without values."""
    if not values:
        return []
    ordered = sorted(values)
    last = len(ordered) - 1
    return [round(ordered[round(i * last / steps)], 1) for i in range(steps + 1)]


class TopicReader(threading.Thread):
    """Reads every partition of a topic from its current end (or its start), with no consumer
    group offsets committed, and keeps ``sample(msg)`` of every record for which it is not
    None; ``stopping.set()`` ends it."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int | None = None, from_start: bool = False
    ) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "adlake-bench",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        # as many as the broker says the topic has (ADLAKE_TOPIC_PARTITIONS may differ from
        # the registry's count)
        count = (
            partitions
            if partitions is not None
            else len(self.consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        )
        assigned = [TopicPartition(topic, p) for p in range(count)]
        for tp in assigned:
            # a topic just created may not answer offset queries yet: read it from its start
            tp.offset = (
                OFFSET_BEGINNING
                if from_start
                else self.consumer.get_watermark_offsets(tp, timeout=10)[1]
            )
        self.consumer.assign(assigned)
        self.samples: list = []
        self.stopping = threading.Event()

    def sample(self, msg) -> Any:
        raise NotImplementedError

    def run(self) -> None:
        while not self.stopping.is_set():
            msg = self.consumer.poll(0.1)
            if msg is None or msg.error():
                continue
            kept = self.sample(msg)
            if kept is not None:
                self.samples.append(kept)
        self.consumer.close()


# Plots are committed with the reports: a palette of 64 colours keeps each small (lines and text
# on white use few), where a full-colour PNG of a dense CDF or timeline is 100-170 KB.
PLOT_COLOURS = 64


def save_plot(fig: Any, path: Path, dpi: int = 110) -> None:
    """Write ``fig`` to ``path`` as a palette PNG at ``dpi``, and close it."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=PLOT_COLOURS).save(path, optimize=True)
