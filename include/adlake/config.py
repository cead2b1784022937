"""Adlake's one configuration: typed settings, two profiles, every path derived from them.

One environment variable, ``ADLAKE_PROFILE``, picks the profile:

* ``local`` (default): everything on this machine, no Docker. The broker listens on loopback,
  Spark runs in local mode, and all state lives under ``<repo>/.runtime``.
* ``compose``: the multi-machine shape of ``docker-compose.yaml``. Hosts are the compose service
  names and data lives on the shared volume mounted at ``/opt/adlake/data``.

Any single setting can be overridden with ``ADLAKE_<NAME>`` (for example
``ADLAKE_KAFKA_BOOTSTRAP=127.0.0.1:29092``). A value that does not parse or is not allowed raises
:class:`ConfigError` naming the variable, the value and what is allowed, at start-up, before any
work is done.

>>> s = load_settings({"ADLAKE_RUNTIME_DIR": "/tmp/x"})
>>> str(s.checkpoints_dir)
'/tmp/x/checkpoints'
>>> load_settings({"ADLAKE_PROFILE": "prod"})
Traceback (most recent call last):
...
adlake.config.ConfigError: ADLAKE_PROFILE='prod' is not valid: allowed values are local, compose
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_PREFIX = "ADLAKE_"
PROFILES = ("local", "compose")


class ConfigError(ValueError):
    """A configuration value is missing, malformed or not allowed."""


# Record size. A Kafka value longer than Settings.max_record_bytes is rejected unparsed with the
# reason ``too_large`` (adlake.payload_rules): a hostile 100 MB value must not be parsed, held in state or
# copied whole into a DLQ. The limit may be set from MIN_ to MAX_RECORD_LIMIT. The local broker
# and the producers accept messages up to KAFKA_MAX_MESSAGE_BYTES, so a record over any allowed
# limit still reaches its topic and is rejected there, with the reason, rather than refused by
# its producer; and a rejected value just under the limit fits the DLQ record that carries it
# even when JSON escaping makes it six times longer (a control character becomes ``\u0001``).
DEFAULT_MAX_RECORD_BYTES = 256 * 1024
MIN_RECORD_LIMIT = 1024
MAX_RECORD_LIMIT = 1024 * 1024
KAFKA_MAX_MESSAGE_BYTES = 8 * 1024 * 1024

# The ops runtime's own jar (the JVM attribution processor), relative to the jar root: built
# there by `make setup` (adlake.setup), put on the classpath by the ops session factory.
OPS_APP_JAR = Path("ops-app") / "adlake-ops.jar"

# The scripts, styles and fonts GX's Data Docs pages load, vendored there by `make setup`
# (adlake.local.versions.DATA_DOCS_NPM) and served by the plugin (adlake.ui.data_docs).
DATA_DOCS_ASSETS_DIR = REPO_ROOT / ".cache" / "data-docs-assets"


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Build it with :func:`load_settings`, not directly."""

    profile: str
    runtime_dir: Path
    kafka_bootstrap: str
    # Local broker only (the ``local`` profile starts its own); the controller port is the
    # KRaft quorum listener of the same single process.
    kafka_controller_port: int
    spark_master_lake: str
    spark_master_ops: str
    shuffle_partitions: int
    driver_memory: str
    spark_ui: bool
    log_level: str
    # Streaming-app lifecycle (adlake.apps). The interpreter of the ops runtime runs the apps,
    # whichever interpreter asks (Airflow's is the lake's).
    ops_python: Path
    # A stop waits this long after SIGTERM for the app to commit its batch and exit, then kills
    # it. Real-Time Mode ends its long-running batch at the next checkpoint interval (30 s by
    # default) before it stops, and the JVM then shuts down.
    app_drain_timeout_s: int
    # The supervisor's restart backoff: the first restart at once, then min, doubling up to max
    # between restarts (30 s to 10 minutes by default); reset once the app has been healthy for
    # reset seconds.
    app_backoff_min_s: int
    app_backoff_max_s: int
    app_backoff_reset_s: int
    # Stale status: a micro-batch app reports after every batch and, when idle, a heartbeat
    # (every ~10 s); a Real-Time Mode app once per checkpoint interval, so it is stale after
    # 2 intervals plus this margin (the boundary itself pauses for seconds).
    app_stale_after_s: int
    # Real-Time Mode's checkpoint interval for the apps adlake.apps starts (--trigger-interval):
    # how often the long-running batch commits, the watermark advances and timers fire.
    app_rtm_interval_s: int
    app_stale_margin_s: int
    # How long a started app may take before its first report (JVM start, query planning).
    app_start_grace_s: int
    # Where the apps' processes live (adlake.apps.service): "scheduler", started by whoever acts
    # (the app's DAG task, the apps_supervisor DAG's pass), the embedded `make up` shape; or
    # "service", started only by the reconcile loop (`python -m adlake.apps loop`, the compose
    # service streaming-apps), to which an action is handed as a request: the Airflow
    # containers can then restart without touching the apps.
    apps_host: str = "scheduler"
    # The reconcile loop handles pending action requests and runs the supervise pass this often.
    app_loop_interval_s: int = 10
    # With apps_host "service", how long an action waits for the loop to take its request
    # before it withdraws it and fails, naming the service.
    app_request_timeout_s: int = 120
    # Data quality (adlake.quality): the least share of records batch and real-time attribution
    # must agree on, per date and record type (attribution_reconciliation's matched / (matched +
    # missing_in_realtime + extra_in_realtime)); below it the `warn` expectation fails. A `warn`:
    # the stream may lag, drop late events or restart, so agreement is not guaranteed.
    dq_min_match_rate: float = 0.95
    # The largest Kafka value, in bytes, that is parsed; a longer one is rejected as too_large.
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    # The lake's schedule (adlake.airflow.factory). A day is final this long after its midnight
    # (UTC): late events (the apps' lateness) and the next day's first hour, which a day's rows
    # read within their margin (the attribution key lifetime, 1 h by default), are in silver by
    # then; lake_daily rebuilds the day once, at that time.
    lake_day_final_after_s: int = 7200
    # Spark drivers the lake's tasks (chain, gates, view refreshes, backfills) may run at once
    # (the Airflow pool "adlake_lake"): 1 on a 2-core machine beside the streaming apps.
    lake_pool_slots: int = 1
    # Table maintenance (spark_apps.lake.maintenance): VACUUM keeps every file a Delta table
    # removed within this many hours, so its versions of that window can be read (time travel,
    # and what a streaming checkpoint or a view has not processed yet). Delta's own minimum is a
    # table's delta.deletedFileRetentionDuration, 7 days unless set.
    lake_retention_hours: int = 168
    # A streaming app's log (<runtime>/logs/<app>.log) is rotated by the supervisor once it
    # passes this many bytes, keeping this many older files (<app>.log.1 is the newest).
    log_max_bytes: int = 64 * 1024 * 1024
    log_backups: int = 3
    jars_dir: Path = field(default=REPO_ROOT / ".cache" / "jars")
    # The local profile's Airflow users besides the admin, as (name, role) with a role of
    # Airflow's SimpleAuthManager (VIEWER, USER, OP, ADMIN); their passwords are generated into
    # the admin's password file (adlake.local.credentials). The compose profile's users are
    # FAB's, made with `airflow users create`.
    airflow_users: tuple[tuple[str, str], ...] = ()
    # Alerts (adlake.alerts): repeated alerts of one group (a DAG's task, an app's restarts)
    # within this many seconds of the last one sent are counted, not sent again; the next one
    # sent after the window says how many were held back.
    alerts_window_s: int = 1800
    # The webhook alerts are also POSTed to (the Airflow connection adlake_alerts, defined from
    # this by adlake.airflow.factory.connection_env); empty: only the local file. Alerts wait at
    # most alerts_timeout_s for it.
    alerts_webhook_url: str = ""
    alerts_timeout_s: int = 10
    # The Streaming apps page (adlake.ui.apps): an app's measured end-to-end p99 above its
    # mode's target shows in red. Real-Time Mode's is set by the checkpoint boundary's stall,
    # micro-batch's by the batch duration (docs/benchmarks.md).
    latency_target_realtime_ms: int = 1000
    latency_target_processing_time_ms: int = 5000
    # The Data quality page's freshness (adlake.freshness): a table of hour grain whose newest
    # data is older than freshness_hour_max_s shows in red, one of day grain past
    # freshness_day_max_s. An hour is built by the next hourly run (it is 1 to 2 h old then), a
    # day once final (2 h after its midnight; its start is then 26 h old, 50 h before the next).
    freshness_hour_max_s: int = 3 * 3600
    freshness_day_max_s: int = 3 * 86400
    # Metrics (docs/runbook.md#metrics). spark_metrics: every Spark session reports its
    # streaming queries as metrics (spark.sql.streaming.metricsEnabled) and serves all its
    # metrics in Prometheus' text format on its UI, which it then turns on whatever spark_ui
    # says, at /metrics/prometheus (adlake.spark_session.metrics_conf). The UI listens on
    # spark_ui_port, or the next free port above it (Spark's retries), 0 for any free port; on
    # loopback with a local master. An app records its endpoint in its status (metrics_url).
    spark_metrics: bool = False
    spark_ui_port: int = 4040
    # Airflow's metrics (adlake.local.platform.metrics_env): "off", "otel" (OTLP over HTTP to
    # http://host:port, 4318 when the port is 0) or "statsd" (UDP to host:port, 8125 when 0;
    # needs the statsd package, which `make setup` does not install). Names start with prefix.
    airflow_metrics: str = "off"
    airflow_metrics_host: str = "127.0.0.1"
    airflow_metrics_port: int = 0
    airflow_metrics_prefix: str = "airflow"
    # The partitions of the apps' input and output topics (registry.partitions: topic creation,
    # the generator's partitioner, Real-Time Mode's task slots); None: the registry's own count.
    # The DLQ topics keep theirs.
    topic_partitions: int | None = None
    # Checksum files beside each checkpoint file of the apps' state (Spark's
    # spark.sql.streaming.checkpoint.fileChecksum.enabled: written and verified to detect a
    # corrupted file). Each is one more file written and synced at every Real-Time Mode
    # boundary, while no input is read: off locally, where it cost 0.1-0.15 s a boundary
    # (docs/bench/attribution-boundary.md); Spark's default, on, in compose.
    checkpoint_checksums: bool = True
    # Where the lake's jobs run (adlake.local.engine): "connect", as sessions of the lake engine,
    # one long-lived Spark Connect server on loopback at lake_engine_port (its JVM, Delta's plans
    # and Python workers stay warm between jobs); "local", each job in a Spark session of its
    # own (a new JVM per job: what spark-submit does). A job started in a process that runs a
    # classic lake session already (a notebook, a test) runs in that session either way.
    lake_engine: str = "connect"
    lake_engine_port: int = 15002
    # The lake engine's niceness (0-19; its Spark tasks and Python workers inherit it): above 0,
    # on a machine it shares with the streaming apps, the lake's work yields the cores to theirs.
    # Off by default: at load 18 with it at 10, a Python worker of silver's foreachBatch missed
    # Spark's connect-back timeout and the job failed.
    lake_nice: int = 0

    # Every path below derives from runtime_dir, so one setting moves all state.
    @property
    def ops_app_jar(self) -> Path:
        return self.jars_dir / OPS_APP_JAR

    @property
    def tables_dir(self) -> Path:
        return self.runtime_dir / "tables"

    @property
    def checkpoints_dir(self) -> Path:
        return self.runtime_dir / "checkpoints"

    @property
    def status_dir(self) -> Path:
        return self.runtime_dir / "status"

    @property
    def reports_dir(self) -> Path:
        return self.runtime_dir / "reports"

    @property
    def kafka_dir(self) -> Path:
        return self.runtime_dir / "kafka"

    @property
    def warehouse_dir(self) -> Path:
        return self.runtime_dir / "warehouse"

    @property
    def apps_dir(self) -> Path:
        """Streaming apps' desired state, restarts and exits (adlake.apps)."""
        return self.runtime_dir / "apps"

    @property
    def locks_dir(self) -> Path:
        """One lock file per streaming app, held by the running app for its whole life."""
        return self.runtime_dir / "locks"

    @property
    def slices_dir(self) -> Path:
        """What each gold slice and gate was last computed from (spark_apps.lake.unchanged)."""
        return self.runtime_dir / "slices"

    @property
    def logs_dir(self) -> Path:
        return self.runtime_dir / "logs"

    @property
    def gx_dir(self) -> Path:
        """Great Expectations' runtime output: ``uncommitted/`` (validation results, Data Docs
        under ``uncommitted/data_docs/local_site``) and the quality jobs' working copies of the
        committed project (``expectations/``)."""
        return self.runtime_dir / "gx"

    @property
    def alerts_dir(self) -> Path:
        """Alerts: ``alerts.jsonl`` (every alert sent, one JSON object a line) and the grouping
        state ``groups.json`` (adlake.alerts)."""
        return self.reports_dir / "alerts"

    @property
    def kafka_host(self) -> str:
        return self.kafka_bootstrap.split(",")[0].rsplit(":", 1)[0]

    @property
    def kafka_port(self) -> int:
        return int(self.kafka_bootstrap.split(",")[0].rsplit(":", 1)[1])

    def spark_master(self, runtime: str) -> str:
        return {"lake": self.spark_master_lake, "ops": self.spark_master_ops}[runtime]

    def table_path(self, name: str) -> Path:
        return self.tables_dir / name

    def checkpoint_path(self, name: str) -> Path:
        return self.checkpoints_dir / name

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some settings replaced (tests point runtime_dir at ``tmp_path``)."""
        return dataclasses.replace(self, **changes)


# The same in every profile (see Settings for what they mean).
_APP_DEFAULTS = {
    "ops_python": str(REPO_ROOT / ".venv" / "ops" / "bin" / "python"),
    "app_drain_timeout_s": "120",
    "app_backoff_min_s": "30",
    "app_backoff_max_s": "600",
    "app_backoff_reset_s": "600",
    "app_stale_after_s": "120",
    "app_rtm_interval_s": "30",
    "app_stale_margin_s": "60",
    "app_start_grace_s": "300",
    "apps_host": "scheduler",
    "app_loop_interval_s": "10",
    "app_request_timeout_s": "120",
}
# Where the apps' processes may live (Settings.apps_host).
APPS_HOSTS = ("scheduler", "service")
# The app_ settings' ranges, where narrower than a day: the loop's interval bounds how late a
# request or a restart is handled; an action waits for its request's answer at most that long.
_APP_RANGES = {"app_loop_interval_s": (1, 300), "app_request_timeout_s": (10, 3_600)}
_QUALITY_DEFAULTS = {"dq_min_match_rate": "0.95"}
_RECORD_DEFAULTS = {"max_record_bytes": str(DEFAULT_MAX_RECORD_BYTES)}
# Roles of Airflow's SimpleAuthManager, lowest first: VIEWER reads, USER also triggers and
# clears DAG runs, OP also edits connections, pools and variables, ADMIN may do everything.
AIRFLOW_ROLES = ("VIEWER", "USER", "OP", "ADMIN")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_ALERT_DEFAULTS = {"alerts_window_s": "1800", "alerts_webhook_url": "", "alerts_timeout_s": "10"}
_PAGE_DEFAULTS = {
    "latency_target_realtime_ms": "1000",
    "latency_target_processing_time_ms": "5000",
    "freshness_hour_max_s": str(3 * 3600),
    "freshness_day_max_s": str(3 * 86400),
}
_WEBHOOK = re.compile(r"^https?://[^\s/]+(/\S*)?$")
_METRICS_DEFAULTS = {
    "spark_metrics": "false",
    "spark_ui_port": "4040",
    "airflow_metrics": "off",
    "airflow_metrics_host": "127.0.0.1",
    "airflow_metrics_port": "0",
    "airflow_metrics_prefix": "airflow",
}
# Where Airflow's metrics may go (Settings.airflow_metrics).
AIRFLOW_METRICS = ("off", "otel", "statsd")
# The text metrics settings: each one's pattern and what it allows.
_METRICS_TEXT = {
    "airflow_metrics": (
        re.compile("^(" + "|".join(AIRFLOW_METRICS) + ")$"),
        f"allowed values are {', '.join(AIRFLOW_METRICS)}",
    ),
    "airflow_metrics_host": (re.compile(r"^[\w.-]+$"), "expected a host name"),
    "airflow_metrics_prefix": (
        re.compile(r"^[A-Za-z][\w.]{0,63}$"),
        "expected a letter, then up to 63 letters, digits, _ or .",
    ),
}
# Where the lake's jobs run (Settings.lake_engine).
LAKE_ENGINES = ("connect", "local")
_ENGINE_DEFAULTS = {"lake_engine": "connect", "lake_engine_port": "15002", "lake_nice": "0"}
# Empty: the registry's partition counts (Settings.topic_partitions).
_TOPIC_DEFAULTS = {"topic_partitions": ""}
MAX_TOPIC_PARTITIONS = 1_000
_LAKE_DEFAULTS = {
    "lake_day_final_after_s": "7200",
    "lake_retention_hours": "168",
    "log_max_bytes": str(64 * 1024 * 1024),
    "log_backups": "3",
}

# Profile defaults. The ops master needs enough task slots for Real-Time Mode, which runs one
# long-lived task per source partition plus one per shuffle partition, all at once. Locally the
# apps' topics have 2 partitions and the state store 2 (shuffle) partitions: at every checkpoint
# boundary each state-store partition commits and reloads one after another on the machine's
# cores, and on 2 cores (4, 4) stalled a boundary 0.1-0.2 s longer than (2, 2), whose Real-Time
# Mode tasks (attribution: 3 topics x 2 + 2 = 8) fit local[8] (docs/bench/attribution-boundary.md).
_DEFAULTS: dict[str, dict[str, str]] = {
    "local": {
        "runtime_dir": str(REPO_ROOT / ".runtime"),
        "kafka_bootstrap": "127.0.0.1:9092",
        "kafka_controller_port": "9093",
        "spark_master_lake": "local[2]",
        "spark_master_ops": "local[8]",
        "shuffle_partitions": "2",
        "driver_memory": "2g",
        "spark_ui": "false",
        "checkpoint_checksums": "false",
        "log_level": "WARN",
        "lake_pool_slots": "1",
        "airflow_users": "",
        **_APP_DEFAULTS,
        **_QUALITY_DEFAULTS,
        **_RECORD_DEFAULTS,
        **_LAKE_DEFAULTS,
        **_ALERT_DEFAULTS,
        **_PAGE_DEFAULTS,
        **_METRICS_DEFAULTS,
        **_TOPIC_DEFAULTS,
        "topic_partitions": "2",
        **_ENGINE_DEFAULTS,
    },
    "compose": {
        "runtime_dir": "/opt/adlake/data",
        "kafka_bootstrap": "kafka:9092",
        "kafka_controller_port": "9093",
        "spark_master_lake": "spark://spark-lake-master:7077",
        "spark_master_ops": "spark://spark-ops-master:7077",
        "shuffle_partitions": "8",
        "driver_memory": "2g",
        "spark_ui": "true",
        "checkpoint_checksums": "true",
        "log_level": "WARN",
        # The lake's Spark cluster runs two drivers' work at once.
        "lake_pool_slots": "2",
        **_APP_DEFAULTS,
        **_QUALITY_DEFAULTS,
        **_RECORD_DEFAULTS,
        **_LAKE_DEFAULTS,
        **_ALERT_DEFAULTS,
        **_PAGE_DEFAULTS,
        **_METRICS_DEFAULTS,
        **_TOPIC_DEFAULTS,
        **_ENGINE_DEFAULTS,
    },
}

_LOG_LEVELS = ("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")
_MASTER = re.compile(r"^(local(\[(\d+|\*)\])?|spark://[\w.-]+:\d+(,[\w.-]+:\d+)*|yarn|k8s://.+)$")
_BOOTSTRAP = re.compile(r"^[\w.-]+:\d{1,5}(,[\w.-]+:\d{1,5})*$")
_MEMORY = re.compile(r"^\d+[kmgt]$", re.IGNORECASE)


def _var(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _bad(name: str, value: str, allowed: str) -> ConfigError:
    return ConfigError(f"{_var(name)}={value!r} is not valid: {allowed}")


def _int(name: str, value: str, lo: int, hi: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise _bad(name, value, f"expected an integer from {lo} to {hi}") from None
    if not lo <= number <= hi:
        raise _bad(name, value, f"expected an integer from {lo} to {hi}")
    return number


def _optional_int(name: str, value: str, lo: int, hi: int) -> int | None:
    """Empty (or blank): None, the setting's default lies elsewhere; else :func:`_int`."""
    return _int(name, value, lo, hi) if value.strip() else None


def _fraction(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise _bad(name, value, "expected a number from 0 to 1") from None
    if not 0 <= number <= 1:
        raise _bad(name, value, "expected a number from 0 to 1")
    return number


def _bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise _bad(name, value, "expected true or false")


def _match(name: str, value: str, pattern: re.Pattern[str], allowed: str) -> str:
    if not pattern.match(value):
        raise _bad(name, value, allowed)
    return value


def _airflow_users(value: str) -> tuple[tuple[str, str], ...]:
    """``name:role`` pairs, comma-separated (a role in any case).

    >>> _airflow_users("viewer:viewer, ops:Op")
    (('viewer', 'VIEWER'), ('ops', 'OP'))
    """
    allowed = (
        f"expected name:role pairs separated by commas, a role one of "
        f"{', '.join(r.lower() for r in AIRFLOW_ROLES)}, a name of letters, digits and _.@- "
        "(at most 64), each name once and none 'admin' (always there)"
    )
    users: list[tuple[str, str]] = []
    for pair in filter(None, (p.strip() for p in value.split(","))):
        name, _, role = pair.partition(":")
        name, role = name.strip(), role.strip().upper()
        if (
            not _USER_NAME.match(name)
            or role not in AIRFLOW_ROLES
            or name == "admin"
            or name in dict(users)
        ):
            raise _bad("airflow_users", value, allowed)
        users.append((name, role))
    return tuple(users)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve settings from the environment (``os.environ`` by default).

    Unknown ``ADLAKE_*`` variables are rejected too, so a typo cannot silently fall back to a
    default.
    """
    env = os.environ if environ is None else environ
    profile = env.get(_var("profile"), "local")
    if profile not in PROFILES:
        raise _bad("profile", profile, f"allowed values are {', '.join(PROFILES)}")

    known = {_var(k) for k in _DEFAULTS[profile]} | {_var("profile"), _var("jars_dir")}
    # ADLAKE_HOME etc. may be set by tooling; only names that look like settings are checked.
    unknown = sorted(
        k for k in env if k.startswith(ENV_PREFIX) and k not in known and k not in _NON_SETTINGS
    )
    if unknown:
        allowed = ", ".join(sorted(known))
        raise ConfigError(f"unknown setting {unknown[0]}: allowed settings are {allowed}")

    raw = {k: env.get(_var(k), default) for k, default in _DEFAULTS[profile].items()}
    jars_dir = env.get(_var("jars_dir"))
    settings = Settings(
        profile=profile,
        runtime_dir=Path(raw["runtime_dir"]).expanduser().resolve(),
        kafka_bootstrap=_match(
            "kafka_bootstrap",
            raw["kafka_bootstrap"],
            _BOOTSTRAP,
            "expected host:port[,host:port...]",
        ),
        kafka_controller_port=_int("kafka_controller_port", raw["kafka_controller_port"], 1, 65535),
        spark_master_lake=_match(
            "spark_master_lake",
            raw["spark_master_lake"],
            _MASTER,
            "expected local, local[N], local[*], spark://host:port, yarn or k8s://...",
        ),
        spark_master_ops=_match(
            "spark_master_ops",
            raw["spark_master_ops"],
            _MASTER,
            "expected local, local[N], local[*], spark://host:port, yarn or k8s://...",
        ),
        shuffle_partitions=_int("shuffle_partitions", raw["shuffle_partitions"], 1, 10_000),
        driver_memory=_match(
            "driver_memory", raw["driver_memory"], _MEMORY, "expected a size such as 512m or 2g"
        ),
        spark_ui=_bool("spark_ui", raw["spark_ui"]),
        checkpoint_checksums=_bool("checkpoint_checksums", raw["checkpoint_checksums"]),
        log_level=_match(
            "log_level",
            raw["log_level"].upper(),
            re.compile("^(" + "|".join(_LOG_LEVELS) + ")$"),
            f"allowed values are {', '.join(_LOG_LEVELS)}",
        ),
        **({"jars_dir": Path(jars_dir).expanduser().resolve()} if jars_dir else {}),
        # Not resolved: a venv's bin/python is a symlink to the base interpreter, and only the
        # link's path runs it with the venv's packages.
        ops_python=Path(raw["ops_python"]).expanduser().absolute(),
        **{
            name: _int(name, raw[name], *_APP_RANGES.get(name, (1, 86_400)))
            for name in _APP_DEFAULTS
            if name.startswith("app_")
        },
        apps_host=_match(
            "apps_host",
            raw["apps_host"],
            re.compile("^(" + "|".join(APPS_HOSTS) + ")$"),
            f"allowed values are {', '.join(APPS_HOSTS)}",
        ),
        dq_min_match_rate=_fraction("dq_min_match_rate", raw["dq_min_match_rate"]),
        max_record_bytes=_int(
            "max_record_bytes", raw["max_record_bytes"], MIN_RECORD_LIMIT, MAX_RECORD_LIMIT
        ),
        lake_day_final_after_s=_int(
            "lake_day_final_after_s", raw["lake_day_final_after_s"], 0, 7 * 86_400
        ),
        lake_pool_slots=_int("lake_pool_slots", raw["lake_pool_slots"], 1, 1_000),
        lake_retention_hours=_int(
            "lake_retention_hours", raw["lake_retention_hours"], 0, 10 * 365 * 24
        ),
        log_max_bytes=_int("log_max_bytes", raw["log_max_bytes"], 1024 * 1024, 1 << 40),
        log_backups=_int("log_backups", raw["log_backups"], 0, 100),
        airflow_users=_airflow_users(raw.get("airflow_users", "")),
        alerts_window_s=_int("alerts_window_s", raw["alerts_window_s"], 0, 7 * 86_400),
        alerts_webhook_url=raw["alerts_webhook_url"]
        and _match(
            "alerts_webhook_url",
            raw["alerts_webhook_url"],
            _WEBHOOK,
            "expected an http:// or https:// URL, or nothing (alerts to the local file only)",
        ),
        alerts_timeout_s=_int("alerts_timeout_s", raw["alerts_timeout_s"], 1, 300),
        # a minute at most for a latency target, 30 days for a freshness bound
        **{
            name: _int(name, raw[name], 1, 60_000 if name.endswith("_ms") else 30 * 86_400)
            for name in _PAGE_DEFAULTS
        },
        spark_metrics=_bool("spark_metrics", raw["spark_metrics"]),
        spark_ui_port=_int("spark_ui_port", raw["spark_ui_port"], 0, 65535),
        **{name: _match(name, raw[name], *_METRICS_TEXT[name]) for name in _METRICS_TEXT},
        airflow_metrics_port=_int("airflow_metrics_port", raw["airflow_metrics_port"], 0, 65535),
        topic_partitions=_optional_int(
            "topic_partitions", raw["topic_partitions"], 1, MAX_TOPIC_PARTITIONS
        ),
        lake_engine=_match(
            "lake_engine",
            raw["lake_engine"],
            re.compile("^(" + "|".join(LAKE_ENGINES) + ")$"),
            f"allowed values are {', '.join(LAKE_ENGINES)}",
        ),
        lake_engine_port=_int("lake_engine_port", raw["lake_engine_port"], 1, 65535),
        lake_nice=_int("lake_nice", raw["lake_nice"], 0, 19),
    )
    if settings.app_backoff_min_s > settings.app_backoff_max_s:
        raise ConfigError(
            f"{_var('app_backoff_min_s')}={settings.app_backoff_min_s} is not valid: it must not "
            f"exceed {_var('app_backoff_max_s')}={settings.app_backoff_max_s}"
        )
    return settings


# Variables with the prefix that are not settings of this module (read by other tools).
# ADLAKE_APP_LOCK: the lock an app's processes were started for (adlake.apps.process.APP_LOCK_VAR);
# ADLAKE_LAKE_SESSION_ID: a task try's engine session (adlake.airflow.engine_task.SESSION_VAR).
_NON_SETTINGS = frozenset({"ADLAKE_APP_LOCK", "ADLAKE_LAKE_SESSION_ID"})


def settings_env(settings: Settings) -> dict[str, str]:
    """``settings`` as the ``ADLAKE_*`` variables that make ``load_settings()`` return them."""
    env = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, bool):
            text = str(value).lower()
        elif isinstance(
            value, tuple
        ):  # name:role pairs (airflow_users), as the variable lists them
            text = ",".join(":".join(pair) for pair in value)
        elif value is None:  # an optional setting left to its default (topic_partitions)
            text = ""
        else:
            text = str(value)
        env["ADLAKE_" + f.name.upper()] = text
    return env
