"""The lake engine: one long-lived Spark Connect server that runs the lake's jobs as sessions, so
a job pays for its rows, not for a JVM, a Spark context and cold Delta plans.

One JVM (``SparkConnectServer``, shipped with PySpark) on the lake's jar set with the settings
every lake session needs (:func:`adlake.spark_session.session_conf`: Delta's extension and
catalog, UTC, shuffle partitions), listening on loopback at ``settings.lake_engine_port``.
Clients authenticate with a pre-shared token (Spark Connect's
``SPARK_CONNECT_AUTHENTICATE_TOKEN``), generated once under ``<runtime>/engine/token`` (mode 600)
and given to the server in its environment, never on its command line. PySpark sends a token
without TLS only to ``localhost``, so clients connect to that name.

The Python code a job hands the engine (``foreachBatch`` functions, ``transformWithState``
processors) runs in the engine's own Python workers: the lake interpreter with the project on
its path. Those workers import the project as it was when they started: after a code change the
engine is restarted (:func:`source_stamp` tells whether it must be).

    python -m adlake.local.engine up        # start, wait until it answers a query
    python -m adlake.local.engine status
    python -m adlake.local.engine down

>>> from adlake.config import load_settings
>>> remote_url(load_settings({"ADLAKE_LAKE_ENGINE_PORT": "15010"}), "t0k3n")
'sc://localhost:15010/;token=t0k3n'
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from adlake.atomic import write_json
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local.engine_client import (
    TOKEN_VAR,
    EngineError,
    client_token,
    engine_dir,
    ensure_token,
    remote_url,
)
from adlake.local.engine_report import running_work
from adlake.local.kafka import free_port
from adlake.processes import alive, started_at

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
# The engine's own loggers: Spark's INFO lines of every client's operation would fill its log.
# The Python state server of transformWithState warns once per key whose state is empty (gold's
# reconciliation reads a million keys a day): nothing in it is to act on.
LOG4J2 = """\
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = %d{yyyy-MM-dd'T'HH:mm:ss.SSSX}{UTC} %p %c{1}: %m%n
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = INFO
logger.tws.name = org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer
logger.tws.level = ERROR
"""


def release_sessions(settings: Settings, session_ids: list[str]) -> list[str]:
    """Stop what the engine sessions ``session_ids`` still run (their streaming queries, which
    outlive a dead client; their running operations), then release each session. A session the
    engine does not know is created and released at once: nothing to stop. Returns a line per
    session that still ran something."""
    if not session_ids:
        return []
    from pyspark.sql import SparkSession

    token, said = client_token(settings), []
    for sid in session_ids:
        spark = SparkSession.builder.remote(remote_url(settings, token, sid)).create()
        try:
            queries = [q.name or q.id for q in spark.streams.active]
            for query in spark.streams.active:
                query.stop()
            interrupted = spark.interruptAll()
            spark.stop()  # releases the session in the engine
        except Exception as error:
            if "SESSION_CLOSED" not in str(error):
                raise
            continue  # released already: the engine keeps a closed id closed
        if queries or interrupted:
            said.append(
                f"session {sid}: stopped {len(queries)} streaming queries {queries} and "
                f"interrupted {len(interrupted)} operations"
            )
    return said


def source_stamp() -> str:
    """A hash of the project's Python sources (``include/`` and ``spark_apps/``): what the
    engine's Python workers import. An engine started under another stamp runs older code."""
    digest = hashlib.sha256()
    for root in ("include", "spark_apps"):
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            digest.update(str(path.relative_to(REPO_ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _pyspark_home() -> Path:
    from adlake.spark_session import pyspark_dir

    return pyspark_dir()


@dataclass
class LakeEngine:
    """The lake engine of one runtime directory (its record: ``<runtime>/engine/engine.json``,
    its log: ``<runtime>/logs/lake-engine.log``)."""

    settings: Settings

    @property
    def record_path(self) -> Path:
        return engine_dir(self.settings) / "engine.json"

    @property
    def log_path(self) -> Path:
        return self.settings.logs_dir / "lake-engine.log"

    # -- the process -----------------------------------------------------------------------------

    def argv(self, ui_port: int = 0) -> list[str]:
        """The engine's command line: spark-submit of the Connect server with the lake's
        settings, its UI at ``ui_port`` (unless ``spark_metrics`` sets the UI's port). No secret
        in it (``ps`` shows it to everyone)."""
        from adlake.spark_session import session_conf

        conf = session_conf("lake", self.settings)
        jars = conf.pop("spark.jars")
        conf.update(
            {
                "spark.app.name": "adlake-lake-engine",
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(self.settings.lake_engine_port),
                # Its UI's REST API says what it runs (adlake.local.engine_report). It keeps
                # fewer finished jobs than Spark's default: its memory must stay flat for months.
                # A session whose client died without releasing it (jobs release theirs at
                # exit) is closed after this long idle: its streams stopped, its memory freed.
                # Spark's default is an hour, which a session per job an hour keeps full.
                "spark.connect.session.manager.defaultSessionTimeout": "15m",
                "spark.ui.enabled": "true",
                "spark.ui.port": conf.get("spark.ui.port", str(ui_port)),
                "spark.ui.killEnabled": "false",
                "spark.ui.retainedJobs": "200",
                "spark.ui.retainedStages": "200",
                "spark.sql.ui.retainedExecutions": "200",
                "spark.driver.extraJavaOptions": conf.get("spark.driver.extraJavaOptions", "")
                + f" -Dlog4j2.configurationFile={engine_dir(self.settings) / 'log4j2.properties'}",
            }
        )
        argv = [str(_pyspark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS]
        argv += ["--jars", jars]
        for key, value in sorted(conf.items()):
            argv += ["--conf", f"{key}={value}"]
        return argv

    def env(self, token: str) -> dict[str, str]:
        """The engine's environment: the token, and for its Python workers the lake interpreter
        with the project on its path."""
        path = os.pathsep.join([str(REPO_ROOT / "include"), str(REPO_ROOT)])
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))},
            TOKEN_VAR: token,
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": path,
            "PYTHONUNBUFFERED": "1",
        }
        if self.settings.spark_master("lake").startswith("local"):
            env["SPARK_LOCAL_IP"] = "127.0.0.1"  # its UI and block manager on loopback too
        elif os.environ.get("SPARK_LOCAL_HOSTNAME"):
            # on a cluster: the name its executors reach its driver by (compose: the
            # scheduler's, whose network the engine shares)
            env["SPARK_LOCAL_HOSTNAME"] = os.environ["SPARK_LOCAL_HOSTNAME"]
        return env

    def record(self) -> dict | None:
        """The running engine's record (pid, start, port, source stamp), None when it does not
        run (no record, or its process is gone or another)."""
        try:
            record = json.loads(self.record_path.read_text())
        except (OSError, ValueError):
            return None
        pid = record.get("pid") if isinstance(record, dict) else None
        if not isinstance(pid, int) or not alive(pid):
            return None
        start = started_at(pid)
        if start is None or abs(start - float(record.get("proc_started_at", 0))) > 5:
            return None  # the pid was reused
        return record

    def is_running(self) -> bool:
        return self.record() is not None

    def spawn(self, token: str) -> subprocess.Popen:
        """Start the engine's JVM (in a process group of its own) and write its record; what
        the keeper (:mod:`adlake.local.engine_keeper`) runs, and starts again. Its output goes
        to the log through :func:`copy_redacted`: PySpark's streaming workers print the URL
        they connect with, token included."""
        directory = engine_dir(self.settings)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "log4j2.properties").write_text(LOG4J2)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the copying thread closes it
        with suppress(OSError):
            self.log_path.chmod(0o600)
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} start\n".encode())
        log.flush()
        ui_port = self.settings.spark_ui_port if self.settings.spark_metrics else free_port()
        niceness = self.settings.lake_nice
        process = subprocess.Popen(
            self.argv(ui_port),
            # below the streaming apps: the JVM and every process it starts inherit it
            preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env(token),
            cwd=self.settings.runtime_dir,
            start_new_session=True,
        )
        record = {
            "pid": process.pid,
            "proc_started_at": started_at(process.pid),
            "started_at": time.time(),
            "port": self.settings.lake_engine_port,
            "source_stamp": source_stamp(),
            "keeper_pid": os.getpid(),
            # its UI's REST API, on loopback whatever the master (a cluster's driver binds every
            # interface; the keeper runs beside it)
            "ui_url": f"http://127.0.0.1:{ui_port}",
        }
        write_json(self.record_path, record)
        threading.Thread(target=copy_redacted, args=(process.stdout, log), daemon=True).start()
        return process

    def start(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        """Start the engine under its keeper and wait until it answers a query; False (nothing
        changed) when this runtime's engine runs already. :class:`EngineError` if the keeper
        exits or the engine does not answer in time (its log's last lines in the message)."""
        if self.is_running():
            return False
        from adlake.config import settings_env
        from adlake.local.kafka import port_open

        port = self.settings.lake_engine_port
        if port_open("127.0.0.1", port):
            # an engine of another runtime directory, whose token this process was given (a
            # test run's shared engine): its clients are this runtime's too
            if os.environ.get(TOKEN_VAR) and self.answers(os.environ[TOKEN_VAR]):
                return False
            raise EngineError(
                f"localhost:{port} is taken by another process: stop it, or give the lake "
                "engine another port (ADLAKE_LAKE_ENGINE_PORT)"
            )
        token = ensure_token(self.settings)
        self.settings.logs_dir.mkdir(parents=True, exist_ok=True)
        with open(self.settings.logs_dir / "lake-engine-keeper.log", "ab") as log:
            keeper = subprocess.Popen(
                [sys.executable, "-m", "adlake.local.engine_keeper"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **settings_env(self.settings)},
                cwd=self.settings.runtime_dir,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if keeper.poll() is not None:
                raise EngineError(
                    f"the lake engine's keeper exited with code {keeper.returncode}; last lines "
                    f"of {self.log_path}:\n{self._tail()}"
                )
            if self.is_running() and self.answers(token):
                return True
            time.sleep(0.5)
        self.stop()
        raise EngineError(
            f"the lake engine did not answer within {timeout_s:.0f}s; see {self.log_path}:\n"
            f"{self._tail()}"
        )

    def answers(self, token: str | None = None, timeout_s: float = 5.0) -> bool:
        """Whether the engine answers ``SELECT 1`` from a client with ``token`` (the runtime's,
        when None)."""
        code = (
            "import sys\nfrom pyspark.sql import SparkSession\n"
            "s = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
            "assert s.sql('SELECT 1').collect()[0][0] == 1\n"
        )
        url = remote_url(self.settings, token or ensure_token(self.settings))
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, url],
                capture_output=True,
                timeout=timeout_s + 30,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> bool:
        """Stop the engine: SIGTERM to its keeper, which stops the JVM (Spark's shutdown hooks
        end its sessions) and exits; the JVM's process group is killed after ``timeout_s`` if
        it is still there (a keeper killed with -9 leaves its JVM). False if it did not run."""
        record = self.record()
        keeper = self._keeper_pid(record)
        if record is None and keeper is None:
            self.record_path.unlink(missing_ok=True)
            return False
        deadline = time.monotonic() + timeout_s + 5
        if keeper is not None:
            os.kill(keeper, signal.SIGTERM)
            while alive(keeper) and time.monotonic() < deadline:
                _reap(keeper)
                time.sleep(0.1)
        if record is not None:
            pid = record["pid"]
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            while alive(pid) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # its Python workers too
            while alive(pid):
                _reap(pid)
                time.sleep(0.05)
        self.record_path.unlink(missing_ok=True)
        return True

    def _keeper_pid(self, record: dict | None) -> int | None:
        """The keeper's pid, believed only if the kernel says it holds the keeper's lock."""
        from adlake.processes import holds_flock

        pid = (record or {}).get("keeper_pid")
        if pid is None:  # the JVM is gone; its record may still name the keeper
            with suppress(OSError, ValueError):
                pid = json.loads(self.record_path.read_text()).get("keeper_pid")
        lock = engine_dir(self.settings) / "keeper.lock"
        return pid if isinstance(pid, int) and holds_flock(pid, lock) else None

    def status(self) -> dict:
        """JSON-able: running, pid, up since, port, resident memory, whether it runs the
        project's current code, and the operations it runs now
        (:func:`adlake.local.engine_report.running_work`)."""
        record = self.record()
        if record is None:
            return {"running": False, "port": self.settings.lake_engine_port}
        return {
            "running": True,
            "pid": record["pid"],
            "up_since": record.get("started_at"),
            "port": record.get("port"),
            "rss_mb": _rss_mb(record["pid"]),
            "keeper_pid": self._keeper_pid(record),
            "current_code": record.get("source_stamp") == source_stamp(),
            "ui_url": record.get("ui_url"),
            **running_work(record.get("ui_url")),
        }

    def _tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


TOKEN_IN_URL = re.compile(rb"token=[^;\s]+")


def copy_redacted(source, log) -> None:
    r"""Copy the engine's output to its log, line by line, with every ``token=...`` of a Connect
    URL replaced; closes both at the end of the output.

    >>> import io
    >>> out = io.BytesIO()
    >>> out.close = lambda: None
    >>> copy_redacted(io.BytesIO(b"url sc://localhost:1/;user_id=;token=s3cret and x\n"), out)
    >>> out.getvalue()
    b'url sc://localhost:1/;user_id=;token=<redacted> and x\n'
    """
    with source, log:
        for line in source:
            log.write(TOKEN_IN_URL.sub(b"token=<redacted>", line))
            log.flush()


def _reap(pid: int) -> None:
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` and everything below it would be the JVM's; the JVM is the
    process spark-submit execs, so its own ``VmRSS`` (MB)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.local.engine",
        formatter_class=HelpFormatter,
        description="Start, stop or show the lake engine (a Spark Connect server on loopback).",
    )
    parser.add_argument(
        "action",
        choices=("up", "status", "down", "check"),
        help="check: exit 0 when the engine runs and listens (a container's health check)",
    )
    args = parser.parse_args(argv)
    engine = LakeEngine(load_settings())
    if args.action == "up":
        started = engine.start()
        print(f"[engine] {'started' if started else 'already running'}: {engine.status()}")
    elif args.action == "down":
        print(f"[engine] {'stopped' if engine.stop() else 'was not running'}")
    elif args.action == "check":
        from adlake.local.kafka import port_open

        listening = port_open("127.0.0.1", engine.settings.lake_engine_port)
        return 0 if engine.is_running() and listening else 1
    else:
        print(json.dumps(engine.status(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
