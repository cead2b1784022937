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
from pathlib import Path

from adlake.setting import (
    LOCAL_ONLY,
    Bool,
    Choice,
    Custom,
    Dir,
    Fraction,
    Int,
    Optional,
    Pattern,
    Rule,
    Setting,
)

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


# -- the rows: every setting once -----------------------------------------------------------------
# The profiles differ in hosts, paths and sizes only. The ops master needs enough task slots for
# Real-Time Mode, which runs one long-lived task per source partition plus one per shuffle
# partition, all at once. Locally the apps' topics have 2 partitions and the state store 2
# (shuffle) partitions: at every checkpoint boundary each state-store partition commits and
# reloads one after another on the machine's cores, and on 2 cores (4, 4) stalled a boundary
# 0.1-0.2 s longer than (2, 2), whose Real-Time Mode tasks (attribution: 3 topics x 2 + 2 = 8)
# fit local[8] (docs/bench/attribution-boundary.md).

_MASTER = Pattern(
    r"^(local(\[(\d+|\*)\])?|spark://[\w.-]+:\d+(,[\w.-]+:\d+)*|yarn|k8s://.+)$",
    "expected local, local[N], local[*], spark://host:port, yarn or k8s://...",
)
_PORT = Int(1, 65535)
_ANY_PORT = Int(0, 65535)
_SECONDS = Int(1, 86_400)
# Ten years, the most any retention takes (and the lake_maintenance form's retention_hours).
_RETENTION = Int(0, 10 * 365 * 24)
# Where the apps' processes may live, where the lake's jobs run, where Airflow's metrics go.
APPS_HOSTS = ("scheduler", "service")
LAKE_ENGINES = ("connect", "local")
AIRFLOW_METRICS = ("off", "otel", "statsd")
# Roles of Airflow's SimpleAuthManager, lowest first: VIEWER reads, USER also triggers and
# clears DAG runs, OP also edits connections, pools and variables, ADMIN may do everything.
AIRFLOW_ROLES = ("VIEWER", "USER", "OP", "ADMIN")
MAX_TOPIC_PARTITIONS = 1_000
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def _airflow_users(value: str) -> tuple[tuple[str, str], ...]:
    """``name:role`` pairs, comma-separated (a role in any case).

    >>> _airflow_users("viewer:viewer, ops:Op")
    (('viewer', 'VIEWER'), ('ops', 'OP'))
    """
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
            raise ValueError(pair)
        users.append((name, role))
    return tuple(users)


_USERS = Custom(
    _airflow_users,
    f"expected name:role pairs separated by commas, a role one of "
    f"{', '.join(r.lower() for r in AIRFLOW_ROLES)}, a name of letters, digits and _.@- "
    "(at most 64), each name once and none 'admin' (always there)",
    tuple,
)

ROWS: tuple[Setting, ...] = (
    Setting(
        "runtime_dir",
        Dir(),
        str(REPO_ROOT / ".runtime"),
        "all state: tables, checkpoints, status, locks, logs, reports, broker data, Airflow home, GX results",
        compose="/opt/adlake/data",
    ),
    Setting(
        "jars_dir",
        Dir(),
        str(REPO_ROOT / ".cache" / "jars"),
        "the jar sets `make setup` resolves, and the ops app jar",
    ),
    Setting(
        "kafka_bootstrap",
        Pattern(r"^[\w.-]+:\d{1,5}(,[\w.-]+:\d{1,5})*$", "expected host:port[,host:port...]"),
        "127.0.0.1:9092",
        "broker address",
        compose="kafka:9092",
    ),
    # Local broker only (the local profile starts its own): the KRaft quorum listener of the
    # same single process.
    Setting("kafka_controller_port", _PORT, "9093", "KRaft controller port of the local broker"),
    Setting(
        "spark_master_lake",
        _MASTER,
        "local[2]",
        "the lake runtime's Spark master",
        compose="spark://spark-lake-master:7077",
    ),
    Setting(
        "spark_master_ops",
        _MASTER,
        "local[8]",
        "the streaming apps' Spark master (Real-Time Mode needs a slot per source and shuffle partition: [sizing](streaming-apps.md#sizing-real-time-mode))",
        compose="spark://spark-ops-master:7077",
    ),
    Setting(
        "shuffle_partitions",
        Int(1, 10_000),
        "2",
        "`spark.sql.shuffle.partitions` of both runtimes; in the streaming apps it is also the number of state-store partitions, which a stateful query's checkpoint keeps from its creation (a change takes effect on a new checkpoint), and each one is a long-running task in Real-Time Mode ([sizing](streaming-apps.md#sizing-real-time-mode))",
        compose="8",
    ),
    # Empty in compose: the registry's own counts (registry.partitions).
    Setting(
        "topic_partitions",
        Optional(Int(1, MAX_TOPIC_PARTITIONS)),
        "2",
        "the partitions of the apps' input and output topics (the DLQ topics keep 1; empty: the registry's `4`): topics are created with it, the generator hashes keys over it, and a Real-Time Mode app counts a task slot per partition from it. Topics that already exist are not changed: the broker's start (`make up`) prints a warning naming each topic whose partition count differs ([sizing](streaming-apps.md#sizing-real-time-mode))",
        compose="",
    ),
    Setting(
        "driver_memory",
        Pattern(r"(?i)^\d+[kmgt]$", "expected a size such as 512m or 2g"),
        "2g",
        "Spark driver memory",
    ),
    Setting("spark_ui", Bool(), "false", "Spark's UI on or off", compose="true"),
    Setting(
        "log_level",
        Choice(("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"), upper=True),
        "WARN",
        "Spark's log level",
    ),
    # Not resolved: a venv's bin/python is a symlink to the base interpreter, and only the link's
    # path runs it with the venv's packages. The ops runtime's interpreter runs the apps,
    # whichever interpreter asks (Airflow's is the lake's).
    Setting(
        "ops_python",
        Dir(resolve=False),
        str(REPO_ROOT / ".venv" / "ops" / "bin" / "python"),
        "the interpreter the lifecycle starts the streaming apps with",
    ),
    # Real-Time Mode ends its long-running batch at the next checkpoint interval before it stops,
    # and the JVM then shuts down.
    Setting(
        "app_drain_timeout_s",
        _SECONDS,
        "120",
        "how long a stop waits for the running batch to commit before SIGKILL",
    ),
    Setting(
        "app_backoff_min_s",
        _SECONDS,
        "30",
        "the supervisor's restart backoff: the first restart is at once, then this long, doubling up to `ADLAKE_APP_BACKOFF_MAX_S`",
    ),
    Setting("app_backoff_max_s", _SECONDS, "600", "the restart backoff's cap"),
    Setting(
        "app_backoff_reset_s",
        _SECONDS,
        "600",
        "how long an app must stay healthy for its backoff to start again from the first wait",
    ),
    # A micro-batch app reports after every batch and, when idle, a heartbeat (every ~10 s); a
    # Real-Time Mode app at each checkpoint boundary and, between them, that its query is alive
    # (every 20 s).
    Setting(
        "app_stale_after_s",
        _SECONDS,
        "120",
        "an app is stale after this long without a report (a batch, an idle heartbeat, or in Real-Time Mode a liveness check between boundaries), whatever the checkpoint interval",
    ),
    Setting(
        "app_rtm_interval_s",
        Optional(_SECONDS),
        "",
        "the Real-Time Mode checkpoint interval the lifecycle starts every app with (empty: each app's own, from its registry entry, as the Streaming apps docs list them): how often the long-running batch commits (a crash replays up to one interval of input), the watermark advances and timers fire; each boundary pauses the query for one to a few seconds on 2 cores ([choosing it](streaming-apps.md#the-checkpoint-interval))",
    ),
    Setting(
        "app_start_grace_s",
        _SECONDS,
        "300",
        "the time a started app has to report at all (JVM start, query planning)",
    ),
    Setting(
        "apps_host",
        Choice(APPS_HOSTS),
        "scheduler",
        "where the apps' processes live: `scheduler`, started and supervised by whoever acts (the apps' DAG tasks, `apps_supervisor`); `service` (set on compose's containers), only by the reconcile loop `python -m adlake.apps loop` (compose's `streaming-apps`), to which the DAGs hand their actions, so the Airflow containers can restart without touching the apps ([runbook](runbook.md#where-the-apps-run-make-up-and-compose))",
    ),
    Setting(
        "app_loop_interval_s",
        Int(1, 300),
        "10",
        "how often the reconcile loop carries out pending actions and runs the supervise pass: it bounds how late a request or a restart is handled",
    ),
    Setting(
        "app_request_timeout_s",
        Int(10, 3_600),
        "120",
        "with `service`, how long an action waits for the loop to take it before it fails naming the service; once taken, it waits for the outcome as long as the action may take",
    ),
    # A warn expectation: the stream may lag, drop late events or restart, so agreement is not
    # guaranteed.
    Setting(
        "dq_min_match_rate",
        Fraction(),
        "0.95",
        "the lowest acceptable share of records batch and real-time attribution agree on, per date and record type (`attribution_reconciliation`'s matched / (matched + missing_in_realtime + extra_in_realtime), a `warn` expectation)",
    ),
    Setting(
        "max_record_bytes",
        Int(MIN_RECORD_LIMIT, MAX_RECORD_LIMIT),
        str(DEFAULT_MAX_RECORD_BYTES),
        "the longest Kafka value parsed, in bytes (256 KiB by default); a longer one goes to the DLQ or the quarantine as `too_large`, unparsed and not copied whole",
    ),
    # Late events (the apps' lateness) and the next day's first hour, which a day's rows read
    # within their margin (the attribution key lifetime, 1 h by default), are in silver by then.
    Setting(
        "lake_day_final_after_s",
        Int(0, 7 * 86_400),
        "7200",
        "how long after a day's end (UTC) `lake_daily` waits before it rebuilds the day, once: the apps' lateness and the next day's first hour (the reconciliation's margin) must be in silver by then",
    ),
    Setting(
        "lake_pool_slots",
        Int(1, 1_000),
        "1",
        "Spark drivers the lake's tasks run at once, all DAGs and backfills together (the Airflow pool `adlake_lake`; `python -m adlake.local.platform pool` applies a change; [how it is sized](runbook.md#backfill))",
        compose="2",
    ),
    # Delta's own minimum is a table's delta.deletedFileRetentionDuration, 7 days unless set.
    Setting(
        "lake_retention_hours",
        _RETENTION,
        "168",
        "how long `lake_maintenance`'s VACUUM keeps the files a Delta table removed (7 days by default): the window of versions you can time-travel to; a run with less than a reader needs is refused ([runbook](runbook.md#table-maintenance)); also the range of the `lake_maintenance` form's `retention_hours` and `--retention-hours`",
    ),
    Setting(
        "gx_results_retention_hours",
        Optional(_RETENTION),
        "",
        "how long `lake_maintenance` keeps the quality gates' validation results and their Data Docs pages (each table's latest is kept); empty: `ADLAKE_LAKE_RETENTION_HOURS`",
        fallback="lake_retention_hours",
    ),
    Setting(
        "airflow_metadata_retention_hours",
        Optional(_RETENTION),
        "",
        "how long `make up` (and the runbook's daily `clean-db`) keeps Airflow's metadata: DAG runs, task instances, asset events, XComs; empty: `ADLAKE_LAKE_RETENTION_HOURS`",
        fallback="lake_retention_hours",
    ),
    Setting(
        "airflow_log_retention_hours",
        Optional(_RETENTION),
        "",
        "how long the same purge keeps Airflow's log files (tasks', the dag-processor's); empty: `ADLAKE_LAKE_RETENTION_HOURS`",
        fallback="lake_retention_hours",
    ),
    Setting(
        "log_max_bytes",
        Int(1024 * 1024, 1 << 40),
        str(64 * 1024 * 1024),
        "a streaming app's log is rotated by the supervisor past this size (64 MiB by default; copied to `<app>.log.1`, emptied in place)",
    ),
    Setting(
        "log_backups",
        Int(0, 100),
        "3",
        "how many rotated logs of an app are kept (`<app>.log.1` is the newest)",
    ),
    # The compose profile's users are FAB's, made with `airflow users create`.
    Setting(
        "airflow_users",
        _USERS,
        "",
        "Airflow users besides `admin`, `name:role` pairs separated by commas, a role one of `viewer`, `user`, `op`, `admin` (e.g. `viewer:viewer,analyst:user`); `make up` generates their passwords into `airflow/passwords.json` ([runbook](runbook.md#add-a-user-with-a-role), [security](security.md#who-may-see-and-do-what))",
        compose=LOCAL_ONLY,
    ),
    Setting(
        "alerts_webhook_url",
        Pattern(
            r"^https?://[^\s/]+(/\S*)?$",
            "expected an http:// or https:// URL, or nothing (alerts to the local file only)",
            empty=True,
        ),
        "",
        "an `http(s)://` URL alerts are also POSTed to as JSON (a Slack-compatible `text` and every field): the platform defines the Airflow connection `adlake_alerts` from it; none: alerts go to `reports/alerts/alerts.jsonl` only ([runbook](runbook.md#alerts))",
    ),
    Setting(
        "alerts_window_s",
        Int(0, 7 * 86_400),
        "1800",
        "alerts of one group (a DAG's task, an app's restarts or give-ups) within this many seconds of the last one sent are counted, not sent; the next one says how many (0 sends every one)",
    ),
    Setting(
        "alerts_timeout_s",
        Int(1, 300),
        "10",
        "how long an alert waits for the webhook; a webhook that does not answer is logged and the task's state is unchanged",
    ),
    # Real-Time Mode's target is set by the checkpoint boundary's stall, micro-batch's by the
    # batch duration (docs/benchmarks.md).
    Setting(
        "latency_target_realtime_ms",
        Int(1, 60_000),
        "1000",
        "the end-to-end p99 the Streaming apps page holds a Real-Time Mode app to: within it the latency figure is green, within twice it amber, beyond red",
    ),
    Setting(
        "latency_target_processing_time_ms",
        Int(1, 60_000),
        "5000",
        "the same for a micro-batch app",
    ),
    # An hour is built by the next hourly run (it is 1 to 2 h old then), a day once final (2 h
    # after its midnight; its start is then 26 h old, 50 h before the next).
    Setting(
        "freshness_hour_max_s",
        Int(1, 30 * 86_400),
        str(3 * 3600),
        "how far behind now the newest data of a gold table or view of hour grain may be before the Data quality page shows it in red (3 h by default; [lake](lake.md#freshness))",
    ),
    Setting(
        "freshness_day_max_s",
        Int(1, 30 * 86_400),
        str(3 * 86400),
        "the same for day grain (3 days by default)",
    ),
    Setting(
        "spark_metrics",
        Bool(),
        "false",
        "every Spark session (the streaming apps, the lake's jobs) reports its streaming queries as metrics and serves all its metrics in Prometheus' text format on its driver's UI, at `/metrics/prometheus`; the UI is then on whatever `ADLAKE_SPARK_UI` says, on loopback with a local master. An app's endpoint is `metrics_url` in its status file and a `metrics:` line of its log ([runbook](runbook.md#metrics))",
    ),
    Setting(
        "spark_ui_port",
        _ANY_PORT,
        "4040",
        "the first port a driver's UI tries (Spark takes the next free one, up to 16 above it); `0`: any free port",
    ),
    Setting(
        "airflow_metrics",
        Choice(AIRFLOW_METRICS),
        "off",
        "Airflow's metrics on `make up`: `off`, `otel` (OpenTelemetry, OTLP over HTTP: its packages are installed) or `statsd` (UDP; needs the `statsd` package, which `make setup` does not install: `make up` refuses it without) ([runbook](runbook.md#metrics))",
    ),
    Setting(
        "airflow_metrics_host",
        Pattern(r"^[\w.-]+$", "expected a host name"),
        "127.0.0.1",
        "the metrics collector's host",
    ),
    Setting(
        "airflow_metrics_port",
        _ANY_PORT,
        "0",
        "the collector's port (`0`: the protocol's own, 4318 for OTLP over HTTP, 8125 for StatsD)",
    ),
    Setting(
        "airflow_metrics_prefix",
        Pattern(
            r"^[A-Za-z][\w.]{0,63}$", "expected a letter, then up to 63 letters, digits, _ or ."
        ),
        "airflow",
        "the prefix of every Airflow metric's name",
    ),
    Setting(
        "checkpoint_checksums",
        Bool(),
        "false",
        "the streaming apps' checkpoint files get a checksum file each, written and verified to detect a corrupted file (Spark's `spark.sql.streaming.checkpoint.fileChecksum.enabled`). Each is one more file written and synced at every Real-Time Mode checkpoint boundary, while the app reads no input: on 2 cores it cost 0.1-0.15 s a boundary, so it is off locally ([the boundary's measurements](bench/attribution-boundary.md))",
        compose="true",
    ),
    Setting(
        "lake_engine",
        Choice(LAKE_ENGINES),
        "connect",
        "where the lake's jobs run: `connect`, as sessions of the lake engine, a long-lived Spark Connect server on loopback that `make up` starts and keeps running (its JVM, Delta's plans and Python workers stay warm between jobs: [architecture](architecture.md#the-lake-engine)); `local`, each in a Spark session of its own (a JVM per task, as spark-submit). A job started in a process that already runs a classic lake session (a notebook, a test) runs in that session either way",
    ),
    Setting("lake_engine_port", _PORT, "15002", "the lake engine's port, on loopback"),
    # Off by default: at load 18 with it at 10, a Python worker of silver's foreachBatch missed
    # Spark's connect-back timeout and the job failed.
    Setting(
        "lake_nice",
        Int(0, 19),
        "0",
        "the lake engine's niceness (its Spark tasks and Python workers inherit it): above 0, on a machine shared with the streaming apps, the lake's work yields the cores to theirs ([benchmarks](benchmarks.md#the-apps-beside-the-chain))",
    ),
)


def _backoff(values: Mapping[str, object]) -> str | None:
    low, high = values["app_backoff_min_s"], values["app_backoff_max_s"]
    if low > high:  # type: ignore[operator]
        return (
            f"{_var('app_backoff_min_s')}={low} is not valid: it must not exceed "
            f"{_var('app_backoff_max_s')}={high}"
        )
    return None


RULES: tuple[Rule, ...] = (
    Rule("`ADLAKE_APP_BACKOFF_MIN_S` ≤ `ADLAKE_APP_BACKOFF_MAX_S`", _backoff),
)


class _Derived:
    """What every setting derives: paths under ``runtime_dir`` (one setting moves all state),
    the broker's host and port, per-runtime lookups."""

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
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


# Resolved configuration, a field per row (and the profile): build it with load_settings.
Settings = dataclasses.make_dataclass(
    "Settings",
    [("profile", str), *((row.name, row.kind.type) for row in ROWS)],
    bases=(_Derived,),
    frozen=True,
    namespace={
        "__module__": __name__,
        "__doc__": "Resolved configuration, a field per row of ``ROWS``. Build it with "
        ":func:`load_settings`, not directly.",
    },
)


def _var(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _bad(name: str, value: str, allowed: str) -> ConfigError:
    return ConfigError(f"{_var(name)}={value!r} is not valid: {allowed}")


# Settings that were removed, with what replaces them: a deployment that still sets one is told
# why rather than only that the name is unknown.
REMOVED = {
    "ADLAKE_APP_STALE_MARGIN_S": "a Real-Time Mode app now says it is alive between checkpoint "
    "boundaries, so ADLAKE_APP_STALE_AFTER_S bounds both modes; unset it",
}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve settings from the environment (``os.environ`` by default): each row's variable,
    or its default in the profile, parsed by its kind; then a row left empty takes its
    fallback's value, and the rules are checked.

    Unknown ``ADLAKE_*`` variables are rejected too, so a typo cannot silently fall back to a
    default.
    """
    env = os.environ if environ is None else environ
    profile = env.get(_var("profile"), "local")
    if profile not in PROFILES:
        raise _bad("profile", profile, f"allowed values are {', '.join(PROFILES)}")

    rows = {row.name: row for row in ROWS if row.default(profile) is not None}
    known = {_var(name) for name in rows} | {_var("profile")}
    # ADLAKE_HOME etc. may be set by tooling; only names that look like settings are checked.
    unknown = sorted(
        k for k in env if k.startswith(ENV_PREFIX) and k not in known and k not in _NON_SETTINGS
    )
    if unknown:
        removed = next((k for k in unknown if k in REMOVED), None)
        if removed:
            raise ConfigError(f"{removed} is no longer a setting: {REMOVED[removed]}")
        allowed = ", ".join(sorted(known))
        raise ConfigError(f"unknown setting {unknown[0]}: allowed settings are {allowed}")

    values: dict[str, object] = {}
    for row in ROWS:
        default = row.default(profile)
        text = env.get(row.variable, default) if default is not None else row.local
        try:
            values[row.name] = row.kind.parse(text)
        except ValueError:
            raise _bad(row.name, text, row.kind.allowed) from None
    for row in ROWS:
        if row.fallback and values[row.name] is None:
            values[row.name] = values[row.fallback]
    for rule in RULES:
        wrong = rule.check(values)
        if wrong:
            raise ConfigError(wrong)
    return Settings(profile=profile, **values)


def docs_table() -> str:
    """The settings table of ``docs/configuration.md``, from the rows (a test holds the page to
    it; ``python -m adlake.config docs`` prints it)."""
    from adlake.setting import docs_table as table

    return table(ROWS, RULES, REPO_ROOT)


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


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["docs"]:
        raise SystemExit("usage: python -m adlake.config docs  (prints the settings table)")
    print(docs_table(), end="")
