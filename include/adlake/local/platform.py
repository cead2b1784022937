"""``make up`` / ``make down``: the whole platform on embedded defaults, on one machine.

``up`` starts, in order, each step idempotent (a part already running is left alone and said so):

1. the local Kafka broker (``adlake.local.kafka``) with the registry's topics;
2. Airflow 3 — api-server, scheduler, dag-processor, triggerer — as detached processes with
   their home under ``<runtime>/airflow``: metadata on SQLite (``airflow db migrate`` first; the
   LocalExecutor runs on SQLite, as ``airflow standalone`` does), the DAGs of ``dags/``, the
   Spark connections from the configuration, one admin login whose password is generated once
   and kept in ``<runtime>/airflow/passwords.json``, and the users of ``ADLAKE_AIRFLOW_USERS``
   with theirs in the same file; Adlake's auth manager (:mod:`adlake.airflow.auth`: Airflow's
   simple one, and the DAGs refused per user in ``<runtime>/airflow/denied_dags.json``);
3. every DAG unpaused, and each streaming app started **through Airflow**: a run of its
   ``app_<name>`` DAG with ``action=start`` (so the start is in the DAG's audit trail).

``down`` reverses it: each app is stopped gracefully and waited for (``adlake.apps.stop``:
stop marker, SIGTERM, the running batch commits, SIGKILL only after the drain timeout), then
Airflow's processes (each in its own process group, so their workers go with them), then the
broker. No process is left behind; a second ``down`` finds nothing to do. A part that fails to
stop (an app's stop raising) does not keep the others running: each is tried, each failure is
named when it happens, and ``down`` exits non-zero at the end listing them.

    python -m adlake.local.platform up      # make up
    python -m adlake.local.platform status
    python -m adlake.local.platform down    # make down
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from adlake import registry
from adlake.config import REPO_ROOT, Settings, load_settings
from adlake.helpformat import HelpFormatter
from adlake.local import credentials
from adlake.processes import alive, group_alive, parent

AIRFLOW_COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
ADMIN = credentials.ADMIN
DEFAULT_AIRFLOW_PORT = 8080
# Seconds without a heartbeat before the scheduler fails a task (see airflow_env).
TASK_HEARTBEAT_TIMEOUT_S = 90
# The standard port of each protocol of Airflow's metrics (airflow_metrics_port 0): OTLP over
# HTTP, StatsD over UDP.
METRICS_PORTS = {"otel": 4318, "statsd": 8125}


def log(message: str) -> None:
    print(f"[platform] {message}", flush=True)


def airflow_home(settings: Settings) -> Path:
    return settings.runtime_dir / "airflow"


def airflow_port() -> int:
    return int(os.environ.get("AIRFLOW__API__PORT", DEFAULT_AIRFLOW_PORT))


def airflow_url() -> str:
    return f"http://127.0.0.1:{airflow_port()}"


def _jwt_secret(home: Path) -> str:
    """One secret for every component (they sign and check each other's task tokens)."""
    path = home / "jwt_secret"
    credentials.create_private(path, secrets.token_urlsafe(32))
    return path.read_text().strip()


def admin_password(settings: Settings) -> str:
    """The admin's password (see :mod:`adlake.local.credentials`; SimpleAuthManager reads its file)."""
    return credentials.ensure_admin_password(settings)[0]


def airflow_env(settings: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every Airflow process (and of the tasks it runs): its home, DAGs and
    plugins, SQLite metadata, the LocalExecutor, the Spark connections, and the lake
    environment's ``bin`` first on PATH (``spark-submit``, ``airflow``)."""
    from adlake.airflow.factory import connection_env

    home = airflow_home(settings)
    env = dict(os.environ if base is None else base)
    bin_dir = str(Path(sys.executable).parent)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO_ROOT / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            # Two cores: a few tasks at a time (each lake task is a Spark driver).
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            # Airflow's SimpleAuthManager with the DAGs refused per user (adlake.airflow.auth);
            # its users: the admin and ADLAKE_AIRFLOW_USERS
            "AIRFLOW__CORE__AUTH_MANAGER": "adlake.airflow.auth.AdlakeAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                f"{name}:{role.lower()}"
                for name, role in [(ADMIN, "ADMIN"), *settings.airflow_users]
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(
                credentials.passwords_path(settings)
            ),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(airflow_port()),
            "AIRFLOW__API__BASE_URL": airflow_url(),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{airflow_url()}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": _jwt_secret(home),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "true",
            # A task whose supervisor died with the scheduler (kill -9, OOM) stays "running"
            # until this timeout fails it, and apps_supervisor's next run (one at a time) waits
            # for it: 90 s instead of Airflow's 300. Live tasks heartbeat every few seconds.
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(TASK_HEARTBEAT_TIMEOUT_S),
            "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
            **connection_env(settings),
            **metrics_env(settings),
        }
    )
    return env


def metrics_env(settings: Settings) -> dict[str, str]:
    """The variables of ``airflow_metrics`` (Airflow's ``[metrics]`` section; nothing when
    off), and with ``spark_metrics`` on and a local lake master, ``SPARK_LOCAL_IP``: the lake
    tasks' drivers, started by spark-submit, then serve their UI on loopback.

    >>> metrics_env(load_settings({}))
    {}
    >>> env = metrics_env(load_settings({"ADLAKE_AIRFLOW_METRICS": "otel"}))
    >>> env["AIRFLOW__METRICS__OTEL_ON"], env["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"]
    ('True', 'http://127.0.0.1:4318/v1/metrics')
    """
    env = (
        {"SPARK_LOCAL_IP": "127.0.0.1"}
        if settings.spark_metrics and settings.spark_master_lake.startswith("local")
        else {}
    )
    kind, host = settings.airflow_metrics, settings.airflow_metrics_host
    if kind == "off":
        return env
    port = str(settings.airflow_metrics_port or METRICS_PORTS[kind])
    section = f"AIRFLOW__METRICS__{kind.upper()}"
    env.update(
        {
            f"{section}_ON": "True",
            f"{section}_HOST": host,
            f"{section}_PORT": port,
            f"{section}_PREFIX": settings.airflow_metrics_prefix,
        }
    )
    if kind == "otel":
        # The standard variable, which Airflow 3 prefers to its own (deprecated) host and port.
        env["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] = f"http://{host}:{port}/v1/metrics"
    return env


def check_metrics_packages(settings: Settings) -> None:
    """Refuse ``airflow_metrics`` statsd without the ``statsd`` package: every Airflow
    component would fail at its first metric. ``make setup`` installs OpenTelemetry's, not it."""
    if settings.airflow_metrics == "statsd" and importlib.util.find_spec("statsd") is None:
        raise SystemExit(
            "[platform] ADLAKE_AIRFLOW_METRICS=statsd needs the statsd package in the lake "
            "environment, which make setup does not install: use otel, or install statsd "
            "into .venv/lake"
        )


# -- processes -------------------------------------------------------------------------------


def _pid_file(settings: Settings, component: str) -> Path:
    return airflow_home(settings) / "pids" / f"{component}.pid"


def running_pid(settings: Settings, component: str) -> int | None:
    """The component's pid if it runs (its pid file names a live process of ours)."""
    path = _pid_file(settings, component)
    try:
        pid = int(path.read_text())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        cmdline = ""
    # the api-server renames its process ("airflow api_server -- host:… port:…")
    if alive(pid) and (component in cmdline or component.replace("-", "_") in cmdline):
        return pid
    path.unlink(missing_ok=True)  # stale: the process is gone, or the pid was reused
    return None


def run_airflow(
    settings: Settings, *args: str, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Airflow's CLI with ``args`` in the platform's environment, its output captured."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), *args],
        env=airflow_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def migrate(settings: Settings) -> None:
    started = time.monotonic()
    log("airflow db migrate (first time: about a minute)")
    done = run_airflow(settings, "db", "migrate", check=False)
    if done.returncode != 0:
        raise SystemExit(f"[platform] airflow db migrate failed:\n{done.stderr[-3000:]}")
    log(f"metadata database ready in {time.monotonic() - started:.0f}s")
    ensure_pool(settings)


def ensure_pool(settings: Settings) -> None:
    """The Airflow pool every lake Spark task runs in, sized by ``lake_pool_slots`` (a task in
    a pool that does not exist is never scheduled)."""
    from adlake.airflow.factory import LAKE_POOL

    done = run_airflow(
        settings,
        "pools",
        "set",
        LAKE_POOL,
        str(settings.lake_pool_slots),
        "Spark drivers of the lake (chains, gates, views, backfills) at once",
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"[platform] airflow pools set failed:\n{done.stderr[-3000:]}")
    log(f"pool {LAKE_POOL}: {settings.lake_pool_slots} slot(s)")


def _port_in_use(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start_component(settings: Settings, component: str) -> int:
    pid = running_pid(settings, component)
    if pid:
        log(f"airflow {component} already running (pid {pid})")
        return pid
    if component == "api-server" and _port_in_use(airflow_port()):
        raise SystemExit(
            f"[platform] port {airflow_port()} is in use by another process (not this "
            "platform's api-server): stop it, or choose another port with "
            "AIRFLOW__API__PORT=<port> make up"
        )
    logs = settings.runtime_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"airflow-{component}.log", "ab") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "airflow"), component],
            env=airflow_env(settings),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    path = _pid_file(settings, component)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(proc.pid))
    log(f"airflow {component} started (pid {proc.pid}, log {logs}/airflow-{component}.log)")
    return proc.pid


def stop_component(settings: Settings, component: str, timeout_s: float = 30) -> bool:
    """SIGTERM the component's process group, SIGKILL after ``timeout_s``; True if it ran."""
    pid = running_pid(settings, component)
    if pid is None:
        return False
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and group_alive(pid):
            time.sleep(0.2)
        if not group_alive(pid):
            break
        log(f"airflow {component} did not exit on SIGTERM within {timeout_s:.0f}s: SIGKILL")
    _pid_file(settings, component).unlink(missing_ok=True)
    log(f"airflow {component} stopped")
    return True


def wait_ready(timeout_s: float = 300) -> None:
    """Until the api-server answers its health check and reports a healthy scheduler."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(
                f"{airflow_url()}/api/v2/monitor/health", timeout=5
            ) as response:
                health = json.loads(response.read())
            if health.get("scheduler", {}).get("status") == "healthy":
                return
            last = json.dumps(health)
        except OSError as error:
            last = str(error)
        time.sleep(2)
    raise SystemExit(
        f"[platform] Airflow was not ready within {timeout_s:.0f}s ({last}); "
        f"see {airflow_home(load_settings())}/../logs/airflow-*.log"
    )


def wait_dags_parsed(settings: Settings, timeout_s: float = 300) -> list[str]:
    """Until the dag-processor has stored every DAG the factory builds."""
    from adlake.airflow.factory import expected_dag_ids

    expected = expected_dag_ids()
    deadline = time.monotonic() + timeout_s
    seen: set[str] = set()
    while time.monotonic() < deadline:
        done = run_airflow(settings, "dags", "list", "-o", "json", check=False)
        if done.returncode == 0:
            seen = {d["dag_id"] for d in _json_output(done.stdout)}
            if expected <= seen:
                return sorted(expected)
        time.sleep(3)
    raise SystemExit(
        f"[platform] DAGs not parsed within {timeout_s:.0f}s: missing "
        f"{sorted(expected - seen)}; see the dag-processor log"
    )


def unpause_pattern(dag_ids: list[str]) -> str:
    """The regular expression of exactly ``dag_ids``, for ``dags unpause
    --treat-dag-id-as-regex``.

    >>> unpause_pattern(["lake_hourly", "app_click_surge"])
    '^(lake_hourly|app_click_surge)$'
    >>> import re; bool(re.match(unpause_pattern(["lake_hourly"]), "lake_hourly_x"))
    False
    """
    return "^(" + "|".join(re.escape(d) for d in dag_ids) + ")$"


def unpause(settings: Settings, dag_ids: list[str]) -> None:
    """Unpause ``dag_ids`` (those already unpaused stay so) in one CLI call: each call is
    seconds of Airflow's start-up, and ``up`` unpauses every DAG."""
    if not dag_ids:
        return
    done = run_airflow(
        settings,
        "dags",
        "unpause",
        "--treat-dag-id-as-regex",
        "--yes",
        unpause_pattern(dag_ids),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"[platform] airflow dags unpause failed:\n{done.stderr[-3000:]}")


def _json_output(stdout: str) -> list:
    """The JSON document of an ``airflow … -o json`` command (warnings may precede it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("["):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    return []


def trigger_app(settings: Settings, app: str, action: str, knobs: dict | None = None) -> None:
    """A run of the app's DAG, as the UI's trigger form makes one."""
    conf = json.dumps({"action": action, **(knobs or {})})
    run_airflow(settings, "dags", "trigger", f"app_{app}", "--conf", conf)
    log(f"triggered app_{app} with {conf}")


def parse_knobs(pairs: list[str]) -> dict[str, dict]:
    """``["click_surge.threshold=50"]`` → ``{"click_surge": {"threshold": 50}}``, typed and
    checked by the registry's knob declaration: ValueError naming the pair, before anything
    starts, for a value the app's form would refuse (NaN, out of its range, not a choice)."""
    out: dict[str, dict] = {}
    for pair in pairs:
        target, _, text = pair.partition("=")
        app_name, _, knob_name = target.partition(".")
        knob = registry.app(app_name).knob(knob_name)
        try:
            out.setdefault(app_name, {})[knob_name] = knob.parse(text)
        except ValueError as refused:
            raise ValueError(f"--set {pair}: knob {knob_name} of {app_name}: {refused}") from None
    return out


def ops_apps() -> list[str]:
    return [a.name for a in registry.ops_apps()]


def up(
    settings: Settings,
    start_apps: bool = True,
    knobs: dict[str, dict] | None = None,
    app_timeout_s: float = 300,
) -> None:
    from adlake import apps
    from adlake.airflow.factory import SUPERVISOR_DAG_ID
    from adlake.local.kafka import LocalKafka

    started = time.monotonic()
    check_metrics_packages(settings)
    broker = LocalKafka(settings)
    broker.start()
    broker.create_topics()
    if settings.lake_engine == "connect":
        start_engine(settings)
    _, new_password = credentials.ensure_admin_password(settings)
    # Before Airflow starts: SimpleAuthManager would generate a missing one and log it.
    new_users = credentials.ensure_user_passwords(settings, [n for n, _ in settings.airflow_users])
    if all(running_pid(settings, c) for c in AIRFLOW_COMPONENTS):
        log("Airflow is already running")
    else:
        migrate(settings)
        clean_db(settings)
        for component in AIRFLOW_COMPONENTS:
            start_component(settings, component)
    wait_ready()
    dag_ids = wait_dags_parsed(settings)
    # The apps' DAGs first: the apps start (and take their share of the machine) before the
    # first scheduled lake run starts its Spark drivers beside them.
    ops_dags = {SUPERVISOR_DAG_ID, *(f"app_{a}" for a in ops_apps())}
    unpause(settings, [d for d in dag_ids if d in ops_dags or not start_apps])
    if start_apps:
        for app in ops_apps():
            if apps.holder(settings, app):
                log(f"{app} already running ({apps.holder(settings, app)})")
            else:
                trigger_app(settings, app, "start", (knobs or {}).get(app))
        deadline = time.monotonic() + app_timeout_s
        while time.monotonic() < deadline and not all(apps.holder(settings, a) for a in ops_apps()):
            time.sleep(2)
        missing = [a for a in ops_apps() if not apps.holder(settings, a)]
        if missing:
            raise SystemExit(
                f"[platform] not running after {app_timeout_s:.0f}s: {missing}; "
                "see the app_<name> DAG runs in the UI and <runtime>/logs/"
            )
        log("streaming apps running: " + ", ".join(ops_apps()))
        unpause(settings, [d for d in dag_ids if d not in ops_dags])
    log("every DAG unpaused")
    log(f"ready in {time.monotonic() - started:.0f}s")
    # The password is shown once, when it is generated; after that, where it is kept.
    login = (
        admin_password(settings)
        if new_password
        else f"<password in {credentials.passwords_path(settings)}>"
    )
    for name, password in new_users.items():
        log(f"generated the password of Airflow user {name}: {password} (shown this once)")
    print(
        f"\n  Airflow UI      {airflow_url()}   login: {ADMIN} / {login}"
        f"\n  Streaming apps  {airflow_url()}/plugin/streaming-apps"
        f"\n  Data quality    {airflow_url()}/plugin/data-quality\n",
        flush=True,
    )


def runtime_processes(settings: Settings) -> list[int]:
    """Live processes of this platform's Airflow and of whatever its tasks started (a task's
    spark-submit and its JVM): every process whose environment names this runtime's Airflow
    home; and of its streaming apps (driver, JVM, Python workers), whose environment names an
    app lock of this runtime (:data:`adlake.apps.process.APP_LOCK_VAR`): what is left of an app
    whose graceful stop failed. Airflow starts each task in a session of its own, so stopping a
    component's process group does not reach them. This process and its ancestors are left out
    (``make`` and the CLI may carry the same variable)."""
    from adlake.apps.process import APP_LOCK_VAR

    marker = f"AIRFLOW_HOME={airflow_home(settings)}".encode()
    app_marker = f"{APP_LOCK_VAR}={settings.locks_dir}/".encode()
    mine, pid = set(), os.getpid()
    while pid is not None and pid > 1:  # this process and its ancestors
        mine.add(pid)
        pid = parent(pid)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        ours = marker in environ or any(v.startswith(app_marker) for v in environ)
        if ours and alive(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def stop_runtime_processes(settings: Settings, timeout_s: float = 30) -> list[int]:
    """SIGTERM every :func:`runtime_processes` (a task's ``on_kill`` stops its Spark job; the
    lake's jobs are safe to rerun from any point; an app resumes from its checkpoint), SIGKILL
    what is left after ``timeout_s``; returns the pids it found."""
    found = runtime_processes(settings)
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
        left = [p for p in found if alive(p)]
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(alive(p) for p in left):
            time.sleep(0.2)
    if found:
        log(f"stopped {len(found)} process(es) Airflow's tasks had left: {found}")
    return found


def down(settings: Settings) -> None:
    """Stop every part of the platform, each tried even when one before it fails: a part that
    cannot be stopped (an app whose lock is still held after SIGKILL, a component that cannot be
    signalled) is named with its error when it fails, and once every other part has been
    tried, SystemExit lists them (``make down`` exits non-zero)."""
    from adlake import apps
    from adlake.local.engine import LakeEngine
    from adlake.local.kafka import LocalKafka

    failed: list[str] = []

    def attempt(part: str, stop: Callable[[], object]) -> None:
        try:
            stop()
        except (Exception, SystemExit) as error:  # noqa: BLE001 - the next part is tried all the same
            failed.append(f"{part}: {_describe(error)}")
            log(f"could not stop {part}: {_describe(error)}; going on with the rest")

    def stop_app(app: str) -> None:
        if apps.holder(settings, app):
            # act(stop) records the desired state first, so the supervisor (still running
            # until Airflow stops below) does not restart what we stop.
            result = apps.act(settings, app, "stop", reason="make down")
            log(f"{app} stopped: {result.get('result', result)}")

    def stop_engine() -> None:
        if LakeEngine(settings).stop():
            log("lake engine stopped")

    def stop_broker() -> None:
        broker = LocalKafka(settings)
        if broker.is_running():
            broker.stop()
            log(f"Kafka broker stopped ({broker.bootstrap})")

    for app in ops_apps():
        attempt(f"app {app}", lambda app=app: stop_app(app))
    # The scheduler first: no task starts once shutdown has begun. Then the tasks it started,
    # each in a session of its own, while the api-server still takes their last report.
    attempt("airflow scheduler", lambda: stop_component(settings, "scheduler"))
    attempt("the processes of Airflow's tasks", lambda: stop_runtime_processes(settings))
    for component in reversed(AIRFLOW_COMPONENTS):
        attempt(f"airflow {component}", lambda c=component: stop_component(settings, c))
    attempt("the processes of Airflow's tasks", lambda: stop_runtime_processes(settings))
    attempt("the lake engine", stop_engine)
    attempt("the Kafka broker", stop_broker)
    if failed:
        raise SystemExit(
            f"[platform] down tried every part; {len(failed)} could not be stopped and may "
            "still run:\n  " + "\n  ".join(failed)
        )
    log("platform stopped")


def start_engine(settings: Settings) -> None:
    """Start the lake engine (:mod:`adlake.local.engine`), or keep the one running when it runs
    the project's current code; one started before a code change is restarted (its Python
    workers would run the old code)."""
    from adlake.local.engine import LakeEngine

    engine = LakeEngine(settings)
    state = engine.status()
    if state["running"] and state["current_code"]:
        log(f"lake engine already running (pid {state['pid']}, port {state['port']})")
        return
    if state["running"]:
        log("the project's code changed since the lake engine started: restarting it")
        engine.stop()
    begun = time.monotonic()
    engine.start()
    log(
        f"lake engine ready in {time.monotonic() - begun:.0f}s "
        f"(localhost:{settings.lake_engine_port}, log {engine.log_path})"
    )


def _describe(error: BaseException) -> str:
    """``Type: message`` of an error (a SystemExit: its message alone)."""
    if isinstance(error, SystemExit):
        return str(error.code)
    return f"{type(error).__name__}: {error}"


def status(settings: Settings) -> dict:
    from adlake import apps
    from adlake.local.engine import LakeEngine

    return {
        "airflow": {c: running_pid(settings, c) for c in AIRFLOW_COMPONENTS},
        "url": airflow_url(),
        "lake_engine": {"mode": settings.lake_engine, **LakeEngine(settings).status()},
        "apps": {a: apps.app_status(settings, a) for a in ops_apps()},
    }


def backfill_args(first: date, last: date, dag_id: str | None = None) -> list[str]:
    """Airflow's arguments for the runbook's backfill of ``dag_id`` (default ``lake_daily``)
    over the days ``first`` to ``last``, both included (the runs' interval starts).
    ``--max-active-runs 1``: a backfill's own limit, not the DAG's, is 10 by default (the lake
    pool serializes the Spark tasks in any case); ``--reprocess-behavior completed``: by
    default Airflow skips a day that already has a run.

    >>> " ".join(backfill_args(date(2026, 11, 1), date(2026, 11, 7)))  # doctest: +ELLIPSIS
    'backfill create --dag-id lake_daily --from-date 2026-11-01 --to-date 2026-11-07 --max-...'
    """
    from adlake.airflow.factory import DAILY_DAG_ID

    return [
        "backfill",
        "create",
        "--dag-id",
        dag_id or DAILY_DAG_ID,
        "--from-date",
        first.isoformat(),
        "--to-date",
        last.isoformat(),
        "--max-active-runs",
        "1",
        "--reprocess-behavior",
        "completed",
    ]


def clean_db_args(settings: Settings, now: datetime, dry_run: bool = False) -> list[str]:
    """``airflow db clean`` of every record older than Airflow's metadata retention
    (``airflow_metadata_retention_hours``, the lake's unless set): DAG runs, task instances, logs, asset events, XComs. Without
    an archive table (what is purged is gone; the lake's own history is in its tables) and
    with a failure as an exit status.

    >>> from adlake.config import load_settings
    >>> now = datetime(2026, 11, 26, 4, tzinfo=UTC)
    >>> s = load_settings({"ADLAKE_AIRFLOW_METADATA_RETENTION_HOURS": "48"})
    >>> " ".join(clean_db_args(s, now))
    'db clean --clean-before-timestamp 2026-11-24T04:00:00+00:00 --skip-archive --error-on-cleanup-failure --yes'
    """
    before = now - timedelta(hours=settings.airflow_metadata_retention_hours)
    return [
        "db",
        "clean",
        "--clean-before-timestamp",
        before.isoformat(),
        "--skip-archive",
        "--error-on-cleanup-failure",
        *(["--dry-run"] if dry_run else ["--yes"]),
    ]


def prune_task_logs(settings: Settings, before: datetime, dry_run: bool = False) -> tuple[int, int]:
    """Remove Airflow's own log files (tasks', the dag-processor's) last written before
    ``before``, then the directories left empty: ``airflow db clean`` purges the rows, not
    the files (``apps_supervisor`` alone leaves 1,440 a day). Returns (files, bytes) removed
    (or that would be, with ``dry_run``).

    >>> import os, tempfile
    >>> home = Path(tempfile.mkdtemp())
    >>> s = load_settings({"ADLAKE_RUNTIME_DIR": str(home)})
    >>> old = airflow_home(s) / "logs" / "dag_id=d" / "run_id=r" / "attempt=1.log"
    >>> old.parent.mkdir(parents=True); _ = old.write_text("x" * 10); os.utime(old, (0, 0))
    >>> new = airflow_home(s) / "logs" / "dag_id=d" / "run_id=s" / "attempt=1.log"
    >>> new.parent.mkdir(parents=True); _ = new.write_text("y")
    >>> prune_task_logs(s, datetime(2000, 1, 1, tzinfo=UTC))
    (1, 10)
    >>> sorted(p.name for p in (airflow_home(s) / "logs" / "dag_id=d").iterdir())
    ['run_id=s']
    """
    root, cutoff = airflow_home(settings) / "logs", before.timestamp()
    files = size = 0
    for path in sorted(root.rglob("*"), reverse=True) if root.exists() else []:
        if path.is_file() and path.stat().st_mtime < cutoff:
            files, size = files + 1, size + path.stat().st_size
            if not dry_run:
                path.unlink()
        elif path.is_dir() and not dry_run and not any(path.iterdir()):
            path.rmdir()  # children come first in reverse order: emptied ones go too
    return files, size


def clean_db(settings: Settings, dry_run: bool = False) -> None:
    """Purge Airflow's metadata and log files older than the retention (:func:`clean_db_args`,
    :func:`prune_task_logs`). Outside any task: an Airflow 3 task reaches the metadata only
    through the execution API, which has no purge; ``make up`` runs it, and a deployment runs it
    daily (the runbook's cron line)."""
    started, now = time.monotonic(), datetime.now(UTC)
    done = run_airflow(settings, *clean_db_args(settings, now, dry_run), check=False)
    if done.returncode != 0:
        raise SystemExit(f"[platform] airflow db clean failed:\n{done.stderr[-3000:]}")
    files, size = prune_task_logs(
        settings, now - timedelta(hours=settings.airflow_log_retention_hours), dry_run
    )
    log(
        f"Airflow metadata older than {settings.airflow_metadata_retention_hours} h and "
        f"{files} log files ({size / 2**20:.1f} MiB) older than "
        f"{settings.airflow_log_retention_hours} h "
        f"{'listed (dry run)' if dry_run else 'purged'} in {time.monotonic() - started:.0f}s"
    )
    if dry_run:
        print(done.stdout[-5000:], flush=True)


def airflow_cli(settings: Settings, args: list[str]) -> None:
    """Replace this process with Airflow's CLI in the platform's environment (its home, DAGs,
    connections, auth manager), as ``make airflow ARGS="..."`` runs it: the same metadata
    database and configuration as the running platform's."""
    binary = Path(sys.executable).parent / "airflow"
    os.execve(binary, [str(binary), *args], airflow_env(settings))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["airflow"]:  # everything after it is Airflow's own arguments
        airflow_cli(load_settings(), argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m adlake.local.platform", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "command",
        choices=("up", "down", "status", "pool", "clean-db", "airflow"),
        help="start the platform, stop it, show what runs, create or resize the lake's "
        "Airflow pool (lake_pool_slots), purge Airflow's metadata older than the retention "
        "(airflow_metadata_retention_hours, airflow_log_retention_hours), or run Airflow's CLI in the platform's environment "
        "(airflow ARGS...: every argument after it is Airflow's)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="clean-db: list what would be purged"
    )
    parser.add_argument(
        "--no-apps", action="store_true", help="up: do not start the streaming apps"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="APP.KNOB=VALUE",
        help="up: a knob of an app's start (repeatable), e.g. click_surge.threshold=50",
    )
    args = parser.parse_args(argv)
    settings = load_settings()
    try:
        knobs = parse_knobs(args.set)
    except ValueError as refused:
        parser.error(str(refused))
    if args.command == "up":
        up(settings, start_apps=not args.no_apps, knobs=knobs)
    elif args.command == "down":
        down(settings)
    elif args.command == "pool":
        ensure_pool(settings)
    elif args.command == "clean-db":
        clean_db(settings, args.dry_run)
    else:
        print(json.dumps(status(settings), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
