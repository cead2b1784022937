"""The one SparkSession factory, for both runtimes.

No other file builds a session: Spark apps call :func:`get_session`, the test fixtures too.
Settings are added to a builder in one place, per runtime:

* both: the runtime's jar set (``.cache/jars/<runtime>``, resolved by ``make setup``), the master,
  shuffle partitions, UI, and the RocksDB state store with changelog checkpointing (each batch
  commits a small changelog of state changes instead of a full snapshot, which keeps commit
  latency flat as state grows);
* ``ops`` (Spark 4.3): state checkpoint format v2 and no adaptive query execution, both required
  by Real-Time Mode;
* ``lake`` (Spark 4.2): the Delta SQL extension and catalog;
* with ``spark_metrics`` on, both: streaming queries' metrics and the Prometheus endpoint on the
  driver's UI (:func:`metrics_conf`, :func:`metrics_url`).

>>> from adlake.spark_session import get_session          # doctest: +SKIP
>>> spark = get_session("lake", "bronze_ingest")           # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import re
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from adlake.config import Settings, load_settings
from adlake.local import versions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The driver's metrics in Prometheus' text format, served by Spark's PrometheusServlet sink on
# the driver's UI; the executors' (spark.ui.prometheus.enabled) under /metrics/executors/.
PROMETHEUS_PATH = "/metrics/prometheus"


class RuntimeMismatchError(RuntimeError):
    """The installed PySpark is not the one the requested runtime is pinned to."""


class MissingJarsError(RuntimeError):
    """The runtime's jar set was not resolved."""


def installed_spark_version() -> str:
    import pyspark

    return pyspark.__version__


def check_runtime(runtime: str) -> None:
    if runtime not in versions.RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; allowed: {', '.join(versions.RUNTIMES)}")
    wanted, found = versions.spark_version(runtime), installed_spark_version()
    if found != wanted:
        raise RuntimeMismatchError(
            f"runtime {runtime!r} needs pyspark {wanted} but this interpreter has {found}; "
            f"run it with .venv/{runtime}/bin/python (make setup creates it)"
        )


_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def _artifact(jar: Path) -> str:
    match = _VERSIONED_JAR.match(jar.name)
    return match.group("artifact") if match else jar.stem


def pyspark_dir() -> Path:
    """PySpark's install directory, found without importing it (the DAG layer renders a job's
    ``--jars`` with :func:`runtime_jars` and must not import PySpark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise MissingJarsError("pyspark is not installed in this interpreter; run `make setup`")
    return Path(next(iter(spec.submodule_search_locations)))


def submitted() -> bool:
    """True when spark-submit launched this driver: the JVM is already running, with the master
    and jars spark-submit was given (by the DAG's Spark connection), which the builder must not
    override (``spark.jars`` set on a builder never reaches a running driver's classpath)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def runtime_jars(runtime: str, settings: Settings) -> list[Path]:
    """The runtime's extra jars, minus any artifact Spark already ships.

    Maven resolves transitive dependencies that Spark itself provides (Scala, Jackson, Hadoop
    client); loading a second, older copy next to Spark's would at best be dead weight and at worst
    shadow a class, so only artifacts absent from PySpark's own ``jars/`` are kept.
    """
    jar_dir = settings.jars_dir / runtime
    jars = sorted(jar_dir.glob("*.jar"))
    if not jars:
        raise MissingJarsError(f"no jars for runtime {runtime!r} in {jar_dir}; run `make setup`")
    shipped = {_artifact(p) for p in pyspark_dir().joinpath("jars").glob("*.jar")}
    jars = [jar for jar in jars if _artifact(jar) not in shipped]
    if runtime == "ops":
        # The ops runtime's own classes (the JVM attribution processor), built by `make setup`.
        app_jar = settings.ops_app_jar
        if not app_jar.is_file():
            raise MissingJarsError(f"no ops app jar at {app_jar}; run `make setup`")
        jars.append(app_jar)
    return jars


def session_conf(
    runtime: str, settings: Settings, submitted_driver: bool = False
) -> dict[str, str]:
    """Adlake's Spark settings for ``runtime``, as ``spark.*`` keys: the one list a session's
    builder (:func:`configure_builder`) and the lake engine's command line
    (:mod:`adlake.local.engine`) are given. Empty values are left to Spark. With
    ``submitted_driver`` (spark-submit started the JVM: :func:`submitted`), without the master
    and jars, which a running driver cannot take."""
    check_runtime(runtime)
    conf = (
        {}
        if submitted_driver
        else {
            "spark.master": settings.spark_master(runtime),
            "spark.jars": ",".join(str(p) for p in runtime_jars(runtime, settings)),
        }
    )
    conf.update(
        {
            "spark.driver.memory": settings.driver_memory,
            "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": str(settings.spark_ui or settings.spark_metrics).lower(),
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.warehouse.dir": str(settings.warehouse_dir),
            # In local mode the driver stays on loopback, whatever the host's interfaces are.
            "spark.driver.host": "127.0.0.1"
            if settings.spark_master(runtime).startswith("local")
            else "",
            "spark.driver.bindAddress": "127.0.0.1"
            if settings.spark_master(runtime).startswith("local")
            else "",
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={settings.runtime_dir / 'derby'}",
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        }
    )
    if runtime == "ops":
        conf.update(
            {
                "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
                # (applies to checkpoint format 2 only: the ops runtime's)
                "spark.sql.streaming.checkpoint.fileChecksum.enabled": str(
                    settings.checkpoint_checksums
                ).lower(),
                "spark.sql.adaptive.enabled": "false",
            }
        )
    else:
        conf.update(
            {
                "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
                # Delta rebuilds a table's state from its log with this many tasks (default 50)
                # whenever it needs a snapshot it does not have: a time-travel read, a read after
                # another writer's commit, and after each of its own commits. Adlake's tables have
                # hundreds of files, not millions: on 2 cores 50 tasks were most of the time of an
                # incremental view refresh. The shuffle parallelism is plenty.
                "spark.databricks.delta.snapshotPartitions": str(settings.shuffle_partitions),
            }
        )
    conf.update(metrics_conf(settings))
    return {key: value for key, value in conf.items() if value}


def configure_builder(
    builder: SparkSession.Builder, runtime: str, settings: Settings
) -> SparkSession.Builder:
    """Add Adlake's settings for ``runtime`` (:func:`session_conf`) to ``builder`` and return
    it."""
    for key, value in session_conf(runtime, settings, submitted()).items():
        builder = builder.config(key, value)
    return builder


def metrics_conf(settings: Settings) -> dict[str, str]:
    """The Spark conf of ``spark_metrics``: nothing when it is off. On: every streaming query
    registers its gauges (``spark.sql.streaming.metricsEnabled``: ``inputRate-total``,
    ``processingRate-total``, ``latency``, ``eventTime-watermark``, ``states-rowsTotal``,
    ``states-usedBytes``) in the source ``spark.streaming.<query name>``; the driver's UI (turned
    on, at ``spark_ui_port``) serves every metric at :data:`PROMETHEUS_PATH`, named
    ``metrics_<app name>_driver_<source>_<gauge>_Value`` (every character but letters and
    digits as ``_``): the app's name, not its run's id, so a series survives a restart.

    >>> from adlake.config import load_settings
    >>> metrics_conf(load_settings({}))
    {}
    >>> conf = metrics_conf(load_settings({"ADLAKE_SPARK_METRICS": "true"}))
    >>> conf["spark.metrics.conf.*.sink.prometheusServlet.path"], conf["spark.ui.port"]
    ('/metrics/prometheus', '4040')
    """
    if not settings.spark_metrics:
        return {}
    return {
        "spark.sql.streaming.metricsEnabled": "true",
        "spark.metrics.namespace": "${spark.app.name}",
        "spark.metrics.conf.*.sink.prometheusServlet.class": (
            "org.apache.spark.metrics.sink.PrometheusServlet"
        ),
        "spark.metrics.conf.*.sink.prometheusServlet.path": PROMETHEUS_PATH,
        "spark.ui.prometheus.enabled": "true",
        "spark.ui.port": str(settings.spark_ui_port),
    }


def metrics_url(spark: SparkSession, settings: Settings) -> str | None:
    """The driver's Prometheus endpoint (its UI's bound address), None with ``spark_metrics``
    off or no UI."""
    ui = spark.sparkContext.uiWebUrl
    return f"{ui.rstrip('/')}{PROMETHEUS_PATH}" if settings.spark_metrics and ui else None


def get_session(
    runtime: str,
    app_name: str,
    settings: Settings | None = None,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """Get (or create) the SparkSession for ``runtime``, named ``app_name``.

    ``extra_conf`` is for per-app tunables; infrastructure settings come from configuration.
    """
    from pyspark.sql import SparkSession

    settings = settings or load_settings()
    settings.runtime_dir.mkdir(parents=True, exist_ok=True)
    if runtime == "lake" and settings.lake_engine == "connect" and not (submitted() or _classic()):
        # a task's try runs under its own session id (adlake.airflow.engine_task)
        return engine_session(settings, extra_conf, os.environ.get("ADLAKE_LAKE_SESSION_ID"))
    if settings.spark_master(runtime).startswith("local"):
        # Python workers (UDFs, transformWithState) must run this interpreter, the one with the
        # runtime's packages (pyarrow); Spark reads the variable when it starts a worker.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if settings.spark_ui or settings.spark_metrics:
            # The UI (and its metrics) on loopback too: Spark binds it to SPARK_LOCAL_IP, else
            # to every interface (spark.driver.bindAddress is not read for it).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = configure_builder(SparkSession.builder.appName(app_name), runtime, settings)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(settings.log_level)
    quiet_loggers(spark)
    return spark


def _classic() -> bool:
    """Whether this process runs a classic Spark session already. A job called in it (a
    notebook, a test) runs there: PySpark cannot hold a Connect session beside a classic one
    (the first Connect session switches the process's DataFrame functions to Connect)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def engine_session(
    settings: Settings, extra_conf: dict[str, str] | None = None, session_id: str | None = None
) -> SparkSession:
    """A session of the lake engine (:mod:`adlake.local.engine`): a Spark Connect client of the
    long-lived server at ``settings.lake_engine_port``, which holds the lake's settings already;
    ``extra_conf`` are set on this session only. The token is ``SPARK_CONNECT_AUTHENTICATE_TOKEN``
    when set, else the runtime's (``<runtime>/engine/token``).
    :class:`adlake.local.engine_client.EngineError` when the engine does not answer."""
    from pyspark.sql import SparkSession

    from adlake.local.engine_client import EngineError, client_token, remote_url
    from adlake.local.kafka import port_open

    url = remote_url(settings, client_token(settings), session_id)
    if not port_open("127.0.0.1", settings.lake_engine_port):
        # (a client would retry an unreachable server for minutes before failing)
        raise EngineError(
            f"the lake engine at localhost:{settings.lake_engine_port} does not answer: start "
            "it (`python -m adlake.local.engine up`, which `make up` does), or run the job in "
            "a session of its own with ADLAKE_LAKE_ENGINE=local"
        )
    builder = SparkSession.builder.remote(url)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    # a named session is that one (getOrCreate would hand back this process's earlier session)
    session = builder.create() if session_id else builder.getOrCreate()
    # Released when the job's process ends: the engine holds a session it was not told about
    # (its caches, its plans) until it has been idle for its timeout (the engine's own setting)
    atexit.register(_release, session)
    return session


def _release(session: SparkSession) -> None:
    with suppress(Exception):  # the engine gone, or the session released already
        session.stop()


# Loggers held at ERROR whatever the log level. The Python state server of transformWithState
# warns once per key whose state is empty, which is every key's first read: gold's batch
# attribution (the reconciliation) reads a million keys a day at 1M rows, so a day's rebuild
# wrote ~500,000 warning lines (230 MB) into its Airflow task log, and nothing in them is to act on.
QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySparkStateServer",
)


def quiet_loggers(spark: SparkSession) -> None:
    """:data:`QUIET_LOGGERS` at ERROR in this session's JVM (the driver's, and a local
    master's executors: the same JVM)."""
    log4j = spark._jvm.org.apache.logging.log4j
    for name in QUIET_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
