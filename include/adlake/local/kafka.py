"""A real Apache Kafka broker on loopback, for the embedded profile and the tests.

One JVM process in KRaft combined mode (broker and controller), run from the cached ``kafka`` jar
set (``make setup``). Its storage is formatted on first start under ``<runtime_dir>/kafka``; a pid
file there makes ``up`` idempotent (a running broker is reported and left alone) and lets ``down``
stop it, waiting until the process is gone.

    python -m adlake.local.kafka up        # start, wait until it accepts connections, create topics
    python -m adlake.local.kafka status
    python -m adlake.local.kafka down

Topics come from the registry; creating them is idempotent too.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from adlake import registry
from adlake.config import KAFKA_MAX_MESSAGE_BYTES, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.processes import alive

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class KafkaError(RuntimeError):
    """The local broker could not be started, reached or stopped."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on loopback that nothing listens on right now.

    All sockets stay bound until every port is chosen: asking the kernel one port at a time can
    hand back the same port twice (a broker then refuses its listener and controller on one
    port).

    >>> a, b, c = free_ports(3)
    >>> len({a, b, c})
    3
    """
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    return free_ports(1)[0]


@contextmanager
def scratch_broker(base: Settings, runtime_dir: Path) -> Iterator[Settings]:
    """A broker of its own for a benchmark: ``base`` settings with the runtime under
    ``runtime_dir`` and the broker on free loopback ports, started with the registry's topics;
    stopped on exit. Yields those settings."""
    port, controller_port = free_ports(2)
    settings = base.with_overrides(
        runtime_dir=runtime_dir,
        kafka_bootstrap=f"127.0.0.1:{port}",
        kafka_controller_port=controller_port,
    )
    broker = LocalKafka(settings)
    broker.start()
    try:
        broker.create_topics()
        yield settings
    finally:
        broker.stop()


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class LocalKafka:
    """The broker of one runtime directory. ``bootstrap`` is ``host:port`` on loopback."""

    settings: Settings

    @property
    def bootstrap(self) -> str:
        return self.settings.kafka_bootstrap

    @property
    def home(self) -> Path:
        return self.settings.kafka_dir

    @property
    def pid_file(self) -> Path:
        return self.home / "broker.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "broker.log"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if alive(pid) else None

    def is_running(self) -> bool:
        return self.pid() is not None

    # -- configuration -------------------------------------------------------------------------

    def _server_properties(self) -> Path:
        host, port = self.settings.kafka_host, self.settings.kafka_port
        cport = self.settings.kafka_controller_port
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{host}:{cport}",
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{cport}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            # A single broker: internal topics cannot have more than one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # Consumers in tests join at once; the default 3 s delay only slows them down.
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "log.retention.hours": "168",
            # Above Kafka's default (~1 MiB): a record over the record limit must reach its
            # topic, to be rejected as too_large with its coordinates, not be refused here.
            "message.max.bytes": str(KAFKA_MAX_MESSAGE_BYTES),
            "replica.fetch.max.bytes": str(KAFKA_MAX_MESSAGE_BYTES),
        }
        path = self.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.home / "log4j2.properties").write_text(
            "rootLogger.level = WARN\n"
            "rootLogger.appenderRef.stdout.ref = STDOUT\n"
            "appender.stdout.type = Console\n"
            "appender.stdout.name = STDOUT\n"
            "appender.stdout.layout.type = PatternLayout\n"
            "appender.stdout.layout.pattern = [%d] %p %m (%c)%n\n"
            "logger.kafka.name = kafka\nlogger.kafka.level = INFO\n"
        )
        return path

    def _java(self, main_class: str, *args: str) -> list[str]:
        jars = self.settings.jars_dir / "kafka"
        if not any(jars.glob("kafka_*.jar")):
            raise KafkaError(f"no Kafka broker jars in {jars}; run `make setup`")
        return [
            "java",
            "-Xms256m",
            "-Xmx512m",
            "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            "-cp",
            f"{jars}/*",
            main_class,
            *args,
        ]

    def _format_storage(self, properties: Path) -> None:
        if (self.data_dir / "meta.properties").exists():
            return
        cluster_id = "-"
        while cluster_id.startswith("-"):  # the format tool would read a leading "-" as a flag
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        result = subprocess.run(
            self._java(
                "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties)
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise KafkaError(f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}")

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT_S) -> bool:
        """Start the broker and wait until it accepts connections.

        Returns False (and changes nothing) when this runtime directory's broker already runs.
        """
        if self.is_running():
            return False
        host, port = self.settings.kafka_host, self.settings.kafka_port
        if port_open(host, port):
            raise KafkaError(
                f"{host}:{port} is already in use by another process; stop it or set "
                "ADLAKE_KAFKA_BOOTSTRAP to a free port"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        properties = self._server_properties()
        self._format_storage(properties)
        with open(self.log_file, "ab") as log:
            process = subprocess.Popen(
                self._java("kafka.Kafka", str(properties)),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the caller's terminal doesn't reach it
            )
        self.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise KafkaError(
                    f"the broker exited with code {process.returncode}; "
                    f"last lines of {self.log_file}:\n{self._tail()}"
                )
            if port_open(host, port) and self._ready():
                return True
            time.sleep(0.2)
        self.stop()
        raise KafkaError(
            f"the broker did not accept connections within {timeout:.0f}s; "
            f"see {self.log_file}:\n{self._tail()}"
        )

    def _ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        try:
            AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
            return True
        except Exception:  # noqa: BLE001 - any client error means "not yet"
            return False

    def _tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """Stop the broker (SIGTERM: a controlled shutdown that flushes logs), waiting until the
        process is gone; SIGKILL after ``timeout``. Returns False if it was not running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
            while alive(pid):
                _reap(pid)
                time.sleep(0.05)
        _reap(pid)
        self.pid_file.unlink(missing_ok=True)
        return True

    # -- topics --------------------------------------------------------------------------------

    def create_topics(self, topics: list[registry.Topic] | None = None) -> list[str]:
        """Create the registry's topics that do not exist yet, with the partitions the settings
        give them (:func:`adlake.registry.partitions`); returns the names created."""
        return create_topics(self.bootstrap, topics, settings=self.settings)


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def create_topics(
    bootstrap: str,
    topics: list[registry.Topic] | None = None,
    timeout: float = 30.0,
    *,
    settings: registry.PartitionSettings | None = None,
) -> list[str]:
    """Create each registry topic (partitions as ``settings`` give them, retention) that is
    missing on ``bootstrap``. An existing topic is left alone; one whose partition count differs
    from the configured one is reported on stderr (:func:`partition_mismatches`)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=timeout).topics
    candidates = topics or list(registry.TOPICS.values())
    for line in partition_mismatches(
        {name: len(meta.partitions) for name, meta in metadata.items()}, candidates, settings
    ):
        print(f"warning: {line}", file=sys.stderr)
    wanted = [t for t in candidates if t.name not in metadata]
    if not wanted:
        return []
    futures = admin.create_topics(
        [
            NewTopic(
                t.name,
                num_partitions=registry.partitions(t, settings),
                replication_factor=1,
                config={"retention.ms": str(t.retention_ms)},
            )
            for t in wanted
        ],
        operation_timeout=timeout,
    )
    for future in futures.values():
        future.result(timeout=timeout)
    _wait_for_leaders(admin, wanted, timeout, settings)
    return [t.name for t in wanted]


def partition_mismatches(
    existing: dict[str, int],
    topics: list[registry.Topic],
    settings: registry.PartitionSettings | None = None,
) -> list[str]:
    """One line per topic of ``topics`` that exists (``existing``: name to partition count, as
    the broker says) with another partition count than the configured one: the generator
    partitions by the configured count, so its records would miss partitions or fail.

    >>> from types import SimpleNamespace
    >>> clicks, two = [registry.topic("page_clicks")], SimpleNamespace(topic_partitions=2)
    >>> partition_mismatches({"page_clicks": 4, "page_clicks_dlq": 1}, clicks)
    []
    >>> print(partition_mismatches({"page_clicks": 4}, clicks, two)[0][:74])
    topic page_clicks has 4 partitions on the broker but 2 are configured (ADL
    """
    configured = settings.topic_partitions if settings is not None else None
    setting = (
        f"ADLAKE_TOPIC_PARTITIONS={configured}"
        if configured is not None
        else "ADLAKE_TOPIC_PARTITIONS unset: the registry's count"
    )
    return [
        f"topic {t.name} has {existing[t.name]} partitions on the broker but "
        f"{registry.partitions(t, settings)} are configured ({setting}); delete the topic (or "
        "the broker's data) to have it created with the configured count, or set "
        "ADLAKE_TOPIC_PARTITIONS to match"
        for t in topics
        if t.name in existing and existing[t.name] != registry.partitions(t, settings)
    ]


def _wait_for_leaders(
    admin,
    topics: list[registry.Topic],
    timeout: float,
    settings: registry.PartitionSettings | None = None,
) -> None:
    """Topic creation returns before every partition has a leader; producers cope, but an offset
    lookup right after creation fails, so creation is only done when all leaders are elected."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = admin.list_topics(timeout=timeout).topics
        missing = [
            t.name
            for t in topics
            if t.name not in metadata
            or len(metadata[t.name].partitions) < registry.partitions(t, settings)
            or any(p.leader < 0 or p.error for p in metadata[t.name].partitions.values())
        ]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise KafkaError(f"no partition leaders for {', '.join(missing)} after {timeout:.0f}s")
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.local.kafka",
        description="Run Adlake's local Kafka broker.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "command",
        choices=["up", "down", "status"],
        help="up: start (idempotent) and create the topics; down: stop; status: show",
    )
    args = parser.parse_args(argv)
    settings = load_settings()
    if settings.profile != "local":
        print(f"the {settings.profile!r} profile runs Kafka itself; nothing to do", file=sys.stderr)
        return 2
    kafka = LocalKafka(settings)
    if args.command == "up":
        if kafka.start():
            print(
                f"Kafka broker started on {kafka.bootstrap} (pid {kafka.pid()}, "
                f"log {kafka.log_file})"
            )
        else:
            print(
                f"Kafka broker already running on {kafka.bootstrap} (pid {kafka.pid()}); left alone"
            )
        created = kafka.create_topics()
        print(
            f"topics: {len(registry.TOPICS)} registered, created now: "
            f"{', '.join(created) if created else 'none'}"
        )
    elif args.command == "down":
        pid = kafka.pid()
        print(f"Kafka broker (pid {pid}) stopped" if kafka.stop() else "Kafka broker not running")
    else:
        pid = kafka.pid()
        print(f"running on {kafka.bootstrap} (pid {pid})" if pid else "not running")
        return 0 if pid else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
