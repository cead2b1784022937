"""Static checks of docker-compose.yaml against the code it deploys.

No Docker engine is needed: the file is parsed and compared with adlake.local.versions (its generated
block of image tags and build arguments, which nothing else may bypass), adlake.config's ``compose`` profile (hosts, data path, accepted variables) and
adlake.registry (task slots for Real-Time Mode), so a change on either side that the other does not
follow fails here instead of at ``docker compose up``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from adlake import config, registry
from adlake.local import compose_versions, versions

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPOSE_TEXT = (REPO_ROOT / "docker-compose.yaml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
DOCKERFILES = sorted((REPO_ROOT / "include" / "docker").glob("*.Dockerfile"))
SERVICES: dict[str, dict] = COMPOSE["services"]

# Services that run to completion once; the others depend on them finishing successfully.
ONE_SHOT = {"airflow-init"}
SPARK_SERVICES = sorted(s for s in SERVICES if s.startswith("spark-"))
AIRFLOW_SERVICES = sorted(s for s in SERVICES if s.startswith("airflow-"))
# The streaming apps' service: their reconcile loop, on the Airflow image (Adlake and both
# runtimes), without Airflow.
APPS_SERVICE = "streaming-apps"
ENGINE_SERVICE = "lake-engine"
ADLAKE_IMAGE_SERVICES = sorted([*AIRFLOW_SERVICES, APPS_SERVICE, ENGINE_SERVICE])
LONG_RUNNING = sorted(set(SERVICES) - ONE_SHOT)
BUILT = sorted(s for s in SERVICES if "build" in SERVICES[s])
CONDITIONS = {"service_healthy", "service_started", "service_completed_successfully"}
DATA_VOLUME = "adlake-data"


@pytest.fixture(scope="module")
def settings() -> config.Settings:
    return config.load_settings({"ADLAKE_PROFILE": "compose"})


def env_of(service: str) -> dict[str, str]:
    """A service's environment as a mapping, whichever of the two compose syntaxes it uses."""
    env = SERVICES[service].get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def mounts_of(service: str) -> list[tuple[str, str]]:
    """(source, target) of each volume entry, short or long syntax."""
    mounts = []
    for entry in SERVICES[service].get("volumes", []):
        if isinstance(entry, dict):
            mounts.append((entry.get("source", ""), entry["target"]))
        else:
            source, target = entry.split(":")[:2]
            mounts.append((source, target))
    return mounts


def test_the_platform_services_are_declared():
    expected = {
        "kafka",
        "postgres",
        "spark-ops-master",
        "spark-ops-worker",
        "spark-lake-master",
        "spark-lake-worker",
        "airflow-init",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
        "lake-engine",
    }
    assert expected <= set(SERVICES), f"missing services: {sorted(expected - set(SERVICES))}"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_service_has_an_image_or_a_build(service):
    spec = SERVICES[service]
    assert spec.get("image") or spec.get("build"), f"{service} has neither image nor build"


@pytest.mark.parametrize("service", BUILT)
def test_builds_point_at_existing_dockerfiles(service):
    build = SERVICES[service]["build"]
    context = REPO_ROOT / build["context"]
    assert (context / build.get("dockerfile", "Dockerfile")).is_file()


@pytest.mark.parametrize("service", LONG_RUNNING)
def test_long_running_services_have_a_healthcheck(service):
    check = SERVICES[service].get("healthcheck") or {}
    assert check.get("test"), f"{service} has no healthcheck test"
    assert not check.get("disable"), f"{service} disables its healthcheck"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_depends_on_uses_the_long_form_with_a_condition_that_can_be_met(service):
    depends_on = SERVICES[service].get("depends_on", {})
    assert isinstance(depends_on, dict), f"{service}: depends_on must map names to conditions"
    for name, spec in depends_on.items():
        assert name in SERVICES and name != service, f"{service} depends on unknown {name!r}"
        condition = (spec or {}).get("condition")
        assert condition in CONDITIONS, f"{service} -> {name}: condition {condition!r}"
        # service_healthy waits forever on a service without a healthcheck; a one-shot service
        # is never "healthy", only finished.
        if condition == "service_healthy":
            assert name not in ONE_SHOT and SERVICES[name].get("healthcheck"), (service, name)
        if name in ONE_SHOT:
            assert condition == "service_completed_successfully", (service, name)


def test_kafka_is_the_pinned_broker_in_kraft_combined_mode(settings):
    kafka = SERVICES["kafka"]
    assert kafka["image"] == f"apache/kafka:{versions.KAFKA_BROKER}"
    env = env_of("kafka")
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    # One broker: an internal topic asking for more replicas than that never becomes available.
    factors = {k: v for k, v in env.items() if k.endswith("REPLICATION_FACTOR")}
    assert factors and set(factors.values()) == {"1"}, factors
    assert any(target == "/var/lib/kafka/data" for _, target in mounts_of("kafka"))


def test_kafka_bootstrap_of_the_compose_profile_is_the_kafka_service(settings):
    assert settings.kafka_host == "kafka" and "kafka" in SERVICES
    advertised = env_of("kafka")["KAFKA_ADVERTISED_LISTENERS"].split(",")
    assert f"PLAINTEXT://{settings.kafka_bootstrap}" in advertised


def test_the_versions_block_is_generated_from_versions_py():
    assert compose_versions.rewrite(COMPOSE_TEXT) == COMPOSE_TEXT, (
        "docker-compose.yaml's versions block is stale: run `python -m adlake.local.compose_versions`"
    )


def test_a_stale_versions_block_is_regenerated():
    stale = COMPOSE_TEXT.replace(f'"apache/spark:{versions.SPARK_OPS}"', '"apache/spark:0.0.1"')
    assert stale != COMPOSE_TEXT and compose_versions.rewrite(stale) == COMPOSE_TEXT


# Every dotted version pinned in versions.py (Spark, Delta, Kafka, Airflow, Python, ...).
PINS = {
    name: value
    for name, value in vars(versions).items()
    if name.isupper() and isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)+", value)
}


@pytest.mark.parametrize(
    "path", ["docker-compose.yaml"] + [str(p.relative_to(REPO_ROOT)) for p in DOCKERFILES]
)
def test_no_version_is_written_by_hand(path):
    text = (REPO_ROOT / path).read_text()
    if path == "docker-compose.yaml":
        text = text.replace(compose_versions.render(), "")
        tagged = [
            ref
            for ref in re.findall(r"^\s*image:\s*(\S+)", text, re.M)
            if ":" in ref and not ref.startswith("*")
        ]
        assert not tagged, f"image tags written by hand: {tagged}"
    for name, value in PINS.items():
        assert not re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", text), (
            f"{path} writes versions.{name} ({value}) by hand"
        )


@pytest.mark.parametrize("service", BUILT)
def test_build_args_are_the_ones_the_dockerfile_declares(service):
    # A declared argument left unset builds with an empty version; an undeclared one is ignored.
    build = SERVICES[service]["build"]
    dockerfile = (REPO_ROOT / build["context"] / build.get("dockerfile", "Dockerfile")).read_text()
    declared = set(re.findall(r"^ARG (\w+)$", dockerfile, re.M))
    assert set(build.get("args") or {}) == declared


@pytest.mark.parametrize("service", ["spark-ops-master", "spark-ops-worker"])
def test_spark_ops_runs_the_pinned_official_image(service):
    assert SERVICES[service]["image"] == f"apache/spark:{versions.SPARK_OPS}"


@pytest.mark.parametrize("service", ["spark-lake-master", "spark-lake-worker"])
def test_spark_lake_is_built_with_the_pinned_spark_and_lake_jars(service):
    args = SERVICES[service]["build"]["args"]
    assert args["SPARK_VERSION"] == versions.SPARK_LAKE
    packages = args["JVM_PACKAGES"].split(",")
    assert packages == versions.jvm_artifacts("lake")
    assert any(
        p.startswith("io.delta:delta-spark_") and p.endswith(f":{versions.DELTA}") for p in packages
    )


def test_spark_lake_master_and_worker_share_one_image():
    master, worker = SERVICES["spark-lake-master"], SERVICES["spark-lake-worker"]
    assert master["build"] == worker["build"] and master.get("image") == worker.get("image")


@pytest.mark.parametrize("service", ADLAKE_IMAGE_SERVICES)
def test_airflow_is_built_on_the_pinned_release(service):
    args = SERVICES[service]["build"]["args"]
    assert args["AIRFLOW_VERSION"] == versions.AIRFLOW
    assert args["PYTHON_VERSION"] == versions.PYTHON


def test_the_airflow_image_compiles_the_ops_app_jar_against_the_pinned_ops_spark():
    # Airflow submits the ops apps; the attribution app needs the JVM processor's jar, built by
    # adlake.local.bootstrap against the jars of the same Spark the ops cluster runs.
    dockerfile = (REPO_ROOT / "include" / "docker" / "airflow.Dockerfile").read_text()
    assert "FROM apache/spark:${SPARK_OPS_VERSION} AS spark-ops" in dockerfile
    assert "COPY --from=spark-ops /opt/spark/jars /opt/spark/jars" in dockerfile
    for service in ADLAKE_IMAGE_SERVICES:
        assert SERVICES[service]["build"]["args"]["SPARK_OPS_VERSION"] == versions.SPARK_OPS
    assert "bootstrap.py --app-jar-only --spark-jars /opt/spark/jars" in dockerfile
    app_dir = config.OPS_APP_JAR.parent
    assert f"/src/.cache/jars/{app_dir} ./.cache/jars/{app_dir}" in dockerfile


def test_the_build_stages_that_run_bootstrap_copy_every_module_it_imports():
    # The jar stages run include/adlake/local/bootstrap.py with only a few files copied in, at
    # their place in the tree: each adlake module bootstrap.py imports must be among them, or the
    # image build fails at that step.
    # The modules it imports, and theirs (module-level imports only: a function's own import
    # runs only when it is called).
    needed, todo = set(), ["include/adlake/local/bootstrap.py"]
    while todo:
        source = (REPO_ROOT / todo.pop()).read_text()
        for package, names in re.findall(
            r"^from (adlake(?:\.\w+)*) import ([\w, ]+)", source, re.M
        ):
            for name in names.replace(" ", "").split(","):
                module = f"{package}.{name}".replace(".", "/")
                is_module = (REPO_ROOT / "include" / f"{module}.py").is_file()
                path = f"include/{module if is_module else package.replace('.', '/')}.py"
                if path not in needed:
                    needed.add(path)
                    todo.append(path)
    assert "include/adlake/local/versions.py" in needed and "include/adlake/config.py" in needed
    lines = (REPO_ROOT / "include" / "docker" / "airflow.Dockerfile").read_text().splitlines()
    runs = [
        i
        for i, line in enumerate(lines)
        if re.match(r"RUN .*include/adlake/local/bootstrap.py", line) and "/src/" in line
    ]
    assert runs, "no build stage runs bootstrap.py"
    for i in runs:
        stage = lines[max(j for j in range(i) if lines[j].startswith("FROM ")) : i]
        copies = [line.split()[1:] for line in stage if line.startswith("COPY include/")]

        def copied(path: str) -> bool:
            # A file copied into its own directory under /src, or a directory copied as itself.
            for *sources, dest in copies:
                for source in sources:
                    if source == path and dest.rstrip("/") == f"/src/{Path(path).parent}":
                        return True
                    if path.startswith(source.rstrip("/") + "/") and dest.rstrip("/") == (
                        f"/src/{source.rstrip('/')}"
                    ):
                        return True
            return False

        assert all(copied(path) for path in needed), (lines[i], copies, needed)


@pytest.mark.parametrize("runtime", versions.RUNTIMES)
def test_spark_masters_of_the_compose_profile_are_services(settings, runtime):
    url = settings.spark_master(runtime)
    assert url.startswith("spark://"), url
    host = url.removeprefix("spark://").rsplit(":", 1)[0]
    assert host == f"spark-{runtime}-master" and host in SERVICES
    # The worker registers with exactly the master URL the apps are submitted to.
    assert url in SERVICES[f"spark-{runtime}-worker"]["command"]


def test_ops_worker_has_task_slots_for_any_ops_app_in_real_time_mode(settings):
    # An RTM query holds a slot per source partition plus one per shuffle partition at once.
    cores = int(env_of("spark-ops-worker")["SPARK_WORKER_CORES"])
    for app in registry.APPS.values():
        if app.runtime != "ops":
            continue
        needed = sum(registry.topic(t).partitions for t in app.inputs) + settings.shuffle_partitions
        assert cores >= needed, f"{app.name} in Real-Time Mode needs {needed} slots, has {cores}"


@pytest.mark.parametrize("service", SPARK_SERVICES + ADLAKE_IMAGE_SERVICES)
def test_adlake_services_select_the_compose_profile(service):
    assert env_of(service).get("ADLAKE_PROFILE") == "compose"


@pytest.mark.parametrize("service", SPARK_SERVICES + ADLAKE_IMAGE_SERVICES)
def test_data_volume_is_mounted_at_the_compose_runtime_dir(settings, service):
    assert DATA_VOLUME in (COMPOSE.get("volumes") or {})
    sources = {
        source for source, target in mounts_of(service) if target == str(settings.runtime_dir)
    }
    assert sources == {DATA_VOLUME}, f"{service}: {settings.runtime_dir} <- {sources or 'nothing'}"


def test_data_writers_share_one_uid_and_init_hands_the_volume_to_it(settings):
    # Drivers (Airflow side) and executors (Spark workers) write into the same table and
    # checkpoint directories; with two uids one side could not change the other's files.
    writers = [s for s in SPARK_SERVICES + ADLAKE_IMAGE_SERVICES if s not in ONE_SHOT]
    users = {SERVICES[s].get("user") for s in writers}
    assert len(users) == 1 and None not in users, users
    (user,) = users
    init_script = "\n".join(SERVICES["airflow-init"]["command"])
    assert f"chown {user} {settings.runtime_dir}" in init_script


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_adlake_variables_are_accepted_by_the_config(service):
    adlake_env = {k: v for k, v in env_of(service).items() if k.startswith(config.ENV_PREFIX)}
    # load_settings raises on an unknown name or a malformed or disallowed value.
    if adlake_env:
        assert config.load_settings(adlake_env).profile == "compose"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_bind_mounts_name_existing_repository_paths(service):
    for source, _ in mounts_of(service):
        if source.startswith("."):
            assert (REPO_ROOT / source).exists(), f"{service} mounts missing {source}"


# -- secrets ---------------------------------------------------------------------------------

SECRET_WORDS = re.compile(r"PASSWORD|SECRET|FERNET|SQL_ALCHEMY_CONN")


def test_every_variable_the_file_reads_is_a_required_secret_of_the_generated_env_file():
    from adlake.local import credentials

    read = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", COMPOSE_TEXT))
    required = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*):\?", COMPOSE_TEXT))
    assert read == required == set(credentials.COMPOSE_SECRETS)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_no_secret_is_written_in_the_file(service):
    for name, value in env_of(service).items():
        if SECRET_WORDS.search(name):
            assert re.search(r"\$\{[A-Z_]+:\?", value), f"{service}: {name} = {value!r}"


# Who uses each secret of the generated .env file: Airflow's components share one configuration
# (the database, the Fernet key of its connections and variables, the key of the tokens they
# sign and check); Postgres takes its password. The streaming-apps service runs Adlake's
# reconcile loop, never Airflow: it reaches neither the metadata database nor the API server.
SECRET_USERS = {
    "POSTGRES_PASSWORD": {"postgres", *AIRFLOW_SERVICES},
    "AIRFLOW_FERNET_KEY": set(AIRFLOW_SERVICES),
    "AIRFLOW_JWT_SECRET": set(AIRFLOW_SERVICES),
}


def secrets_of(service: str) -> set[str]:
    """The secrets of the .env file the service's definition refers to, wherever (environment,
    command, healthcheck), after YAML's merges."""
    text = yaml.safe_dump(SERVICES[service])
    return {name for name in SECRET_USERS if re.search(rf"\$\{{{name}\b", text)}


def test_each_secret_reaches_only_the_services_that_use_it():
    from adlake.local import credentials

    assert set(SECRET_USERS) == set(credentials.COMPOSE_SECRETS)
    reached = {name: {s for s in SERVICES if name in secrets_of(s)} for name in SECRET_USERS}
    assert reached == SECRET_USERS


def test_the_streaming_apps_service_holds_no_secret():
    env = env_of(APPS_SERVICE)
    assert secrets_of(APPS_SERVICE) == set()
    assert not [name for name in env if SECRET_WORDS.search(name)], env
    # nor Airflow's configuration, which would name the database and the API server's keys
    assert not [name for name in env if name.startswith("AIRFLOW__")], env
    # and the Airflow image's entrypoint does not wait for a database it has no address of
    assert env["CONNECTION_CHECK_MAX_COUNT"] == "0"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_no_service_loads_the_env_file_whole(service):
    # .env holds every secret: `env_file: .env` would hand all of them to the service
    assert "env_file" not in SERVICES[service]


def test_the_admin_password_is_generated_never_on_a_command_line_nor_in_the_log():
    script = "\n".join(SERVICES["airflow-init"]["command"])
    # the command that generates it creates the user, reading it from its private file
    assert "python -m adlake.local.credentials airflow-admin" in script
    # not handed over as an argument, not printed (admin-password prints it), not traced
    assert "--password" not in script and "admin-password" not in script
    assert not re.search(r"\becho\b|\bprintf\b|set -\w*x|\bpassword=", script)


# -- the apps' lock files --------------------------------------------------------------------

LOCKS_VOLUME = "adlake-locks"
# Where a process opens a lock file for writing or creates one (adlake.apps): the launcher, the
# apps and the reconcile loop hold their locks, and the loop takes the apps' control locks
# (streaming-apps); an app DAG's task takes its app's control lock (tasks run in the scheduler);
# airflow-init hands the volume to the data user. Everywhere else (the api-server's Streaming
# apps page, the dag-processor, the triggerer) a lock is at most probed, which a read-only
# descriptor does: flock(2) takes a lock whatever the descriptor's access mode.
LOCK_WRITERS = {APPS_SERVICE, "airflow-scheduler", "airflow-init"}


def lock_mounts(settings, service: str) -> list[tuple[str, bool]]:
    """(source, read only) of each of the service's mounts at the lock directory."""
    out = []
    for entry in SERVICES[service].get("volumes", []):
        if isinstance(entry, dict):
            source, target = entry.get("source", ""), entry["target"]
            read_only = bool(entry.get("read_only"))
        else:
            source, target, *options = entry.split(":")
            read_only = "ro" in (options[0].split(",") if options else [])
        if target == str(settings.locks_dir):
            out.append((source, read_only))
    return out


def test_the_lock_files_are_writable_only_where_a_lock_is_taken(settings):
    # a volume of their own, mounted over the data volume's lock directory
    assert LOCKS_VOLUME in (COMPOSE.get("volumes") or {})
    assert settings.locks_dir.parent == settings.runtime_dir
    mounts = {s: lock_mounts(settings, s) for s in ADLAKE_IMAGE_SERVICES}
    assert all(len(m) == 1 and m[0][0] == LOCKS_VOLUME for m in mounts.values()), mounts
    writable = {s for s, [(_, read_only)] in mounts.items() if not read_only}
    assert writable == LOCK_WRITERS
    assert {"airflow-apiserver", "airflow-dag-processor", "airflow-triggerer"} <= (
        set(mounts) - writable
    )
    # Spark's masters and executors never touch a lock file: they do not mount them
    assert not any(lock_mounts(settings, s) for s in SPARK_SERVICES)
    assert not any(
        LOCKS_VOLUME in str(SERVICES[s].get("volumes", []))
        for s in set(SERVICES) - set(ADLAKE_IMAGE_SERVICES)
    )


def test_init_hands_the_lock_volume_to_the_data_user(settings):
    # a new volume belongs to root; the lock writers run as the data user
    script = "\n".join(SERVICES["airflow-init"]["command"])
    assert f"chown {SERVICES['airflow-scheduler']['user']} {settings.locks_dir}" in script


def test_a_service_with_the_locks_read_only_still_sees_who_holds_one(tmp_path, monkeypatch):
    """The Streaming apps page (the api-server) asks who holds each app's lock: on a read-only
    mount, where opening a file for writing or creating one fails with EROFS."""
    import errno
    import fcntl
    import os

    from adlake.apps import process

    locks = tmp_path / "locks"
    locks.mkdir()
    held, free = locks / "held.lock", locks / "free.lock"
    holding = os.open(held, os.O_RDWR | os.O_CREAT, 0o644)  # a launcher, in streaming-apps
    free.touch()
    real_open = os.open

    def read_only_open(path, flags, *args, **kwargs):
        writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        if str(path).startswith(str(locks)) and flags & writes:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    try:
        fcntl.flock(holding, fcntl.LOCK_EX | fcntl.LOCK_NB)
        monkeypatch.setattr(os, "open", read_only_open)
        assert process.lock_holder(held, timeout_s=0) is not None
        assert process.lock_holder(free, timeout_s=0) is None
        assert process.lock_holder(locks / "never-started.lock", timeout_s=0) is None
    finally:
        os.close(holding)


# -- what is exposed -------------------------------------------------------------------------

SPARK_MASTERS = [s for s in SPARK_SERVICES if s.endswith("-master")]


def published(service: str) -> list[tuple[str, str]]:
    """(host address, host port) of each published port, short or long syntax ("" address:
    every interface)."""
    out = []
    for entry in SERVICES[service].get("ports", []):
        if isinstance(entry, dict):
            out.append((entry.get("host_ip", ""), str(entry.get("published", ""))))
        else:
            parts = str(entry).split(":")
            out.append((parts[0], parts[1]) if len(parts) == 3 else ("", parts[0]))
    return out


def test_spark_masters_publish_their_ui_on_the_hosts_loopback_only():
    assert {s: published(s) for s in SPARK_MASTERS} == {
        "spark-lake-master": [("127.0.0.1", "8090")],
        "spark-ops-master": [("127.0.0.1", "8091")],
    }
    for service in SPARK_SERVICES:  # workers publish nothing
        assert all(address == "127.0.0.1" for address, _ in published(service)), service


@pytest.mark.parametrize("service", SPARK_MASTERS)
def test_spark_master_uis_cannot_kill_applications(service):
    # spark.ui.killEnabled is true unless set: the master's UI, which has no login, would
    # offer a kill link for every application and driver
    options = env_of(service)["SPARK_MASTER_OPTS"].split()
    assert "-Dspark.ui.killEnabled=false" in options
    assert "spark.ui.killEnabled=true" not in COMPOSE_TEXT


def test_the_expectations_project_is_mounted_read_only_wherever_it_is_mounted():
    # nothing writes the committed project at run time: quality jobs copy it under the runtime
    mounted = {}
    for service in SERVICES:
        for entry in SERVICES[service].get("volumes", []):
            if isinstance(entry, dict) and entry.get("source") == "./expectations":
                mounted[service] = bool(entry.get("read_only"))
            elif isinstance(entry, str) and entry.split(":")[0] == "./expectations":
                options = entry.split(":")[2] if entry.count(":") == 2 else ""
                mounted[service] = "ro" in options.split(",")
    assert mounted and all(mounted.values()), mounted


def test_the_broker_accepts_the_largest_message_the_producers_send():
    env = env_of("kafka")
    for name in ("KAFKA_MESSAGE_MAX_BYTES", "KAFKA_REPLICA_FETCH_MAX_BYTES"):
        assert int(env[name]) == config.KAFKA_MAX_MESSAGE_BYTES, name


def test_airflow_fails_an_orphaned_task_as_soon_as_the_local_platform_does():
    """A task whose supervisor died with the scheduler blocks ``apps_supervisor``'s next run
    until the heartbeat timeout fails it: compose and ``make up`` use one value."""
    from adlake.local import platform

    env = COMPOSE["x-airflow-common"]["environment"]
    timeout = env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"]
    assert int(timeout) == platform.TASK_HEARTBEAT_TIMEOUT_S < 300


# -- the streaming apps' service -----------------------------------------------------------------


def test_the_streaming_apps_service_runs_the_reconcile_loop_and_restarts_with_the_host():
    service = SERVICES[APPS_SERVICE]
    assert service["restart"] == "unless-stopped"
    assert service["image"] == SERVICES["airflow-scheduler"]["image"]
    script = "\n".join(service["command"])
    # the loop runs again in the same container when it ends, so the apps it started keep
    # running and the next loop adopts them
    assert re.search(r"while true; do\s+python -m adlake\.apps loop\b", script), script
    assert "python -m adlake.apps loop --check" in " ".join(service["healthcheck"]["test"])
    # a loop asked to stop may first be draining an app (ADLAKE_APP_DRAIN_TIMEOUT_S)
    grace = re.fullmatch(r"(\d+)([sm])", service["stop_grace_period"])
    assert grace and int(grace[1]) * {"s": 1, "m": 60}[grace[2]] >= 120


def test_the_apps_drivers_have_a_hostname_the_executors_resolve(settings):
    # the apps' Spark drivers run in client mode where the loop runs
    assert SERVICES[APPS_SERVICE]["hostname"] == APPS_SERVICE
    assert settings.spark_master_ops.startswith("spark://")


def test_the_streaming_apps_service_waits_for_what_its_apps_need():
    depends_on = SERVICES[APPS_SERVICE]["depends_on"]
    assert {"kafka", "spark-ops-master", "airflow-init"} <= set(depends_on)


@pytest.mark.parametrize("service", ADLAKE_IMAGE_SERVICES)
def test_every_container_of_the_adlake_image_has_the_apps_live_in_their_service(service):
    """Airflow's tasks hand the apps' actions to the loop, and apps_supervisor starts nothing:
    the apps' processes are the streaming-apps service's (and so survive a scheduler
    restart)."""
    env = {**env_of(service), "ADLAKE_PROFILE": "compose"}
    adlake_env = {k: v for k, v in env.items() if k.startswith(config.ENV_PREFIX)}
    assert config.load_settings(adlake_env).apps_host == "service"


def pip_installs(dockerfile: Path) -> list[str]:
    """Each ``pip install`` command of a Dockerfile, its continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", dockerfile.read_text())
    return re.findall(r"pip install\b[^&\n]*", text)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_the_images_install_python_packages_only_from_the_locks_with_hashes(dockerfile):
    # Each pip install is a lock with --require-hashes, or the project itself without its
    # dependencies; the spark-lake image installs no Python package at all.
    for command in pip_installs(dockerfile):
        lock = re.search(r"--require-hashes -r include/adlake/local/locks/(\w+)\.txt\b", command)
        project = "--no-deps" in command and command.rstrip().endswith("--editable .")
        assert project or (lock and lock[1] in versions.RUNTIMES), command


def test_the_airflow_image_installs_the_lake_lock_keeping_its_base_images_airflow():
    dockerfile = REPO_ROOT / "include" / "docker" / "airflow.Dockerfile"
    installs = pip_installs(dockerfile)
    assert any("--require-hashes -r include/adlake/local/locks/lake.txt" in c for c in installs)
    assert any("--no-deps --no-build-isolation --editable ." in c for c in installs)
    # The lock pins the base image's release, and the build checks it is still the one installed.
    lake = (REPO_ROOT / "include" / "adlake" / "local" / "locks" / "lake.txt").read_text()
    assert f"\napache-airflow=={versions.AIRFLOW} \\" in lake
    assert 'print(version("apache-airflow"))\')" = "${AIRFLOW_VERSION}"' in re.sub(
        r"\\\n\s*", "", dockerfile.read_text()
    )


def test_the_airflow_images_ops_environment_is_built_from_its_lock_by_bootstrap():
    # bootstrap.setup_env installs the ops lock with --require-hashes and runs pip check
    # (tests/include/local/test_bootstrap.py); the image runs it after copying the locks in.
    lines = (REPO_ROOT / "include" / "docker" / "airflow.Dockerfile").read_text().splitlines()
    run = next(i for i, line in enumerate(lines) if "bootstrap.py --envs-only --env ops" in line)
    assert any(line.startswith("COPY") and " include/adlake " in line for line in lines[:run])


def test_the_lake_engine_runs_under_its_keeper_beside_the_tasks(settings):
    # The tasks run in the scheduler and reach the engine at localhost (PySpark sends the
    # token without TLS to localhost only), so the engine shares the scheduler's network.
    engine = SERVICES[ENGINE_SERVICE]
    assert settings.lake_engine == "connect"
    assert engine["network_mode"] == "service:airflow-scheduler"
    assert (
        env_of(ENGINE_SERVICE)["SPARK_LOCAL_HOSTNAME"] == SERVICES["airflow-scheduler"]["hostname"]
    )
    assert engine["command"] == ["python", "-m", "adlake.local.engine_keeper"]
    assert engine["depends_on"]["spark-lake-master"]["condition"] == "service_healthy"
    assert engine["healthcheck"]["test"] == ["CMD", "python", "-m", "adlake.local.engine", "check"]
    assert settings.spark_master("lake") == "spark://spark-lake-master:7077"
    assert not secrets_of(ENGINE_SERVICE)
