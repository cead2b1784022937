"""A Spark standalone cluster on loopback for the tests: a master and N workers, started from the
running interpreter's own PySpark distribution (its ``spark-class``: the lake runtime's under the
lake venv, the ops runtime's under the ops venv), each in a process group of its own.

A worker starts each executor as a child process (``CoarseGrainedExecutorBackend``) in the
worker's process group, so :meth:`Worker.kill` (``kill -9`` of the group) takes a worker and its
executors down together, as the loss of a machine does. Everything runs under the directory given to
:func:`standalone_cluster`: workers' work and local (shuffle) directories, logs.

    with standalone_cluster(tmp_path, workers=2, cores=1, memory="1g") as cluster:
        ...  # a driver with spark.master=cluster.url

A driver's side of it is read off the driver's UI REST API (:func:`app_api`): its executors,
the tasks running on each now, the task attempts an executor's loss failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from adlake.local.kafka import free_ports
from adlake.processes import alive

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_class() -> str:
    """This interpreter's ``spark-class`` (the venv's PySpark)."""
    return os.path.join(os.path.dirname(sys.executable), "spark-class")


def spark_env() -> dict[str, str]:
    """The environment of the cluster's processes: this one's, on loopback, with ``SPARK_HOME``
    this interpreter's PySpark (``spark-class`` finds it by itself only with a ``python3`` on
    the ``PATH`` that has PySpark, or once a session of this process has set it)."""
    from adlake.spark_session import pyspark_dir

    return {**os.environ, "SPARK_HOME": str(pyspark_dir()), "SPARK_LOCAL_IP": "127.0.0.1"}


def get_json(url: str, timeout_s: float = 5) -> dict | list:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read())


def wait_for(
    condition: Callable[[], object],
    timeout_s: float,
    what: str,
    log: Path,
    proc: subprocess.Popen,
) -> None:
    """Poll ``condition`` every 0.2 s until it is truthy; fail naming ``what`` with the tail of
    ``log`` after ``timeout_s``, or at once if ``proc`` exits."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline or proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
            why = f"exited ({proc.returncode})" if proc.returncode is not None else "not up"
            raise AssertionError(f"{what} {why} within {timeout_s:.0f}s:\n{tail}")
        time.sleep(0.2)


def _children(ppid: int) -> dict[int, list[str]]:
    """``{pid: argv}`` of the live processes whose parent is ``ppid`` (``/proc``)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] not in ("Z", "X") and int(fields[1]) == ppid:
            out[int(entry.name)] = [a.decode(errors="replace") for a in cmdline.split(b"\0") if a]
    return out


@dataclass
class Worker:
    """One worker process (the leader of its process group) and its web UI."""

    name: str
    proc: subprocess.Popen
    ui_port: int
    log: Path

    def state(self) -> dict:
        """The worker's JSON API: its id, cores, executors (``appid``, ``id``)."""
        return get_json(f"http://127.0.0.1:{self.ui_port}/json/")  # type: ignore[return-value]

    def executors(self) -> dict[str, int]:
        """``{executor id: pid}`` of the executor JVMs this worker runs now (its children)."""
        out = {}
        for pid, argv in _children(self.proc.pid).items():
            if EXECUTOR_CLASS in argv and "--executor-id" in argv:
                out[argv[argv.index("--executor-id") + 1]] = pid
        return out

    def kill(
        self, executors: list[int] | None = None, timeout_s: float = STOP_TIMEOUT_S
    ) -> list[int]:
        """``kill -9`` of the worker's process group: the worker and its executors (and their
        Python workers) at once, as a machine lost. Returns once the worker and ``executors``
        (pids; by default those :meth:`executors` finds, a scan of ``/proc`` a caller timing
        the kill does beforehand) are gone; the pids killed, the worker's first."""
        if executors is None:
            executors = list(self.executors().values())
        pids = [self.proc.pid, *executors]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout_s)
        deadline = time.monotonic() + timeout_s
        while any(alive(pid) for pid in pids[1:]):
            assert time.monotonic() < deadline, f"executors {pids[1:]} outlived SIGKILL"
            time.sleep(0.05)
        return pids


@dataclass
class Cluster:
    """The master (``url``, its JSON API at ``ui_port``) and the workers started so far (the
    killed ones included)."""

    url: str
    ui_port: int
    master: subprocess.Popen
    work: Path
    env: dict[str, str]
    workers: list[Worker] = field(default_factory=list)

    def state(self) -> dict:
        """The master's JSON API: ``workers`` (``id``, ``state``: ALIVE, DEAD...),
        ``aliveworkers``, ``activeapps``, ``completedapps``."""
        return get_json(f"http://127.0.0.1:{self.ui_port}/json/")  # type: ignore[return-value]

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))
        except OSError:
            return 0

    def running(self) -> list[Worker]:
        """The workers whose process still runs."""
        return [w for w in self.workers if w.proc.poll() is None]

    def add_worker(self, cores: int, memory: str, timeout_s: float = START_TIMEOUT_S) -> Worker:
        """Start one more worker of ``cores`` cores and ``memory``; returns once the master
        counts it alive."""
        name = f"worker-{len(self.workers)}"
        (ui_port,) = free_ports(1)
        directory = self.work / name
        (directory / "local").mkdir(parents=True, exist_ok=True)
        log = self.work / f"{name}.log"
        expected = self.alive_workers() + 1
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    spark_class(),
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--webui-port",
                    str(ui_port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={
                    **self.env,
                    "SPARK_WORKER_DIR": str(directory),
                    # the executors' block manager and shuffle files
                    "SPARK_LOCAL_DIRS": str(directory / "local"),
                },
                start_new_session=True,
            )
        worker = Worker(name, proc, ui_port, log)
        self.workers.append(worker)
        wait_for(lambda: self.alive_workers() >= expected, timeout_s, name, log, proc)
        return worker

    def stop(self) -> None:
        """SIGTERM to the workers and the master, SIGKILL to whatever of their process groups
        (executors) remains after :data:`STOP_TIMEOUT_S`."""
        procs = [*(w.proc for w in self.workers), self.master]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # executors left behind


@contextlib.contextmanager
def standalone_cluster(
    work: Path, workers: int = 1, cores: int = 2, memory: str = "2g"
) -> Iterator[Cluster]:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each on 127.0.0.1,
    under ``work``; stopped on exit, whatever happened."""
    work.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_ports(2)
    env = spark_env()
    log = work / "master.log"
    with open(log, "wb") as out:
        master = subprocess.Popen(
            [
                spark_class(),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    cluster = Cluster(f"spark://127.0.0.1:{port}", ui_port, master, work, env)
    try:
        wait_for(
            lambda: "I have been elected leader" in log.read_text(errors="replace"),
            START_TIMEOUT_S,
            "the master",
            log,
            master,
        )
        for _ in range(workers):
            cluster.add_worker(cores, memory)
        yield cluster
    finally:
        cluster.stop()


def worker_dead(cluster: Cluster, worker_id: str, alive_before: int) -> bool:
    """Whether the master has marked worker ``worker_id`` (its JSON's ``id``) ``DEAD`` or counts
    fewer alive workers than ``alive_before``."""
    state = cluster.state()
    states = {w["id"]: w["state"] for w in state["workers"]}
    return states.get(worker_id) == "DEAD" or state["aliveworkers"] < alive_before


# -- a driver's view: its UI's REST API ------------------------------------------------------------


def app_api(ui_url: str) -> str:
    """The REST API (``<ui>/api/v1/applications/<id>``) of the one application a driver's UI at
    ``ui_url`` serves."""
    [app] = get_json(f"{ui_url.rstrip('/')}/api/v1/applications")
    return f"{ui_url.rstrip('/')}/api/v1/applications/{app['id']}"


def active_executors(api: str) -> set[str]:
    """The ids of the driver's live executors."""
    return {e["id"] for e in get_json(f"{api}/executors") if e["id"] != "driver"}


def running_tasks(api: str) -> Counter:
    """Tasks running now per executor id, from the active stages (the UI's store writes a
    task's start and end as the listener sees them, milliseconds after they happen)."""
    stages = get_json(f"{api}/stages?status=active&details=true&taskStatus=RUNNING")
    return Counter(
        task["executorId"]
        for stage in stages
        for task in (stage.get("tasks") or {}).values()
        if task.get("status") == "RUNNING"
    )


def placement(api: str) -> str:
    """Which executors ran each retained stage's tasks (``stage.attempt: {executor: tasks}``),
    for a failure's message."""
    stages = get_json(f"{api}/stages?details=true&taskStatus=SUCCESS")
    return "; ".join(
        f"{s['stageId']}.{s['attemptId']}: "
        f"{dict(Counter(t['executorId'] for t in (s.get('tasks') or {}).values()))}"
        for s in sorted(stages, key=lambda s: (s["stageId"], s["attemptId"]))
    )


def lost_tasks(api: str, executor: str) -> list[str]:
    """Task attempts that failed on ``executor`` (``stage S.A: error``) and stage attempts past
    the first (resubmitted after fetch failures), over the stages the driver retains."""
    stages = get_json(f"{api}/stages?details=true&taskStatus=FAILED")
    failed = [
        f"stage {s['stageId']}.{s['attemptId']}: {(t.get('errorMessage') or '').splitlines()[0]}"
        for s in stages
        for t in (s.get("tasks") or {}).values()
        if t.get("executorId") == executor
    ]
    retried = [
        f"stage {s['stageId']}.{s['attemptId']} resubmitted" for s in stages if s["attemptId"]
    ]
    return failed + retried


def executors_on_each_worker(cluster: Cluster, api: str, timeout_s: float) -> dict[str, Worker]:
    """Wait until the driver at ``api`` has a live executor on each running worker;
    ``{executor id: its worker}``."""
    deadline = time.monotonic() + timeout_s
    while True:
        workers = cluster.running()
        placed = {e: w for w in workers for e in w.executors()}
        with contextlib.suppress(OSError):
            if {w.name for w in placed.values()} == {w.name for w in workers} and set(
                placed
            ) <= active_executors(api):
                return placed
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"no executor on each worker within {timeout_s:.0f}s: {placed}; master "
                f"{cluster.state()}"
            )
        time.sleep(0.5)
