import io
import json
import shutil
import subprocess
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from adlake.local import bootstrap, versions

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_requirements_pin_each_runtime_to_its_spark():
    assert f"pyspark=={versions.SPARK_LAKE}" in versions.requirements("lake")
    assert f"pyspark-client=={versions.SPARK_LAKE}" in versions.requirements("lake")
    assert f"delta-spark=={versions.DELTA}" in versions.requirements("lake")
    ops = versions.requirements("ops")
    assert f"pyspark=={versions.SPARK_OPS}" in ops
    assert not any(r.startswith(("apache-airflow", "delta-spark")) for r in ops)


def test_pom_lists_the_jar_set():
    pom = ET.fromstring(bootstrap._pom("lake", versions.jvm_artifacts("lake")))
    deps = {
        d.findtext("m:artifactId", namespaces=NS): d.findtext("m:version", namespaces=NS)
        for d in pom.iterfind(".//m:dependency", NS)
    }
    assert deps == {
        f"delta-spark_4.2_{versions.SCALA}": versions.DELTA,
        f"spark-sql-kafka-0-10_{versions.SCALA}": versions.KAFKA_CONNECTOR,
    }


def test_the_kafka_connector_brings_its_own_token_provider():
    # spark-token-provider-kafka-0-10 of the connector's own release comes in as its dependency;
    # no jar set pins another one beside it.
    for jar_set in versions.JAR_SETS:
        assert not any("token-provider" in a for a in versions.jvm_artifacts(jar_set)), jar_set


def test_unknown_environment_is_named():
    with pytest.raises(ValueError, match="unknown environment 'dev'; allowed: lake, ops"):
        versions.requirements("dev")


def test_a_stamped_jar_set_is_not_resolved_again(tmp_path, monkeypatch):
    monkeypatch.setattr(bootstrap, "JARS_ROOT", tmp_path)
    calls = []
    monkeypatch.setattr(bootstrap.subprocess, "run", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(bootstrap.shutil, "which", lambda _: "/usr/bin/mvn")
    bootstrap.setup_jars("ops")  # first time: Maven runs, stamp written last
    assert len(calls) == 1 and (tmp_path / "ops" / bootstrap.STAMP).is_file()
    bootstrap.setup_jars("ops")  # second time: nothing to do, no network
    assert len(calls) == 1


def test_an_interrupted_resolution_is_redone(tmp_path, monkeypatch):
    monkeypatch.setattr(bootstrap, "JARS_ROOT", tmp_path)
    monkeypatch.setattr(bootstrap.shutil, "which", lambda _: "/usr/bin/mvn")

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bootstrap.subprocess, "run", crash)
    with pytest.raises(KeyboardInterrupt):
        bootstrap.setup_jars("kafka")
    assert not (tmp_path / "kafka").exists()  # no half-resolved set that looks complete


@pytest.mark.integration
def test_the_ops_app_jar_is_compiled_once_and_again_when_a_source_changes(tmp_path, monkeypatch):
    import shutil
    import zipfile

    sources = tmp_path / "jvm"
    shutil.copytree(bootstrap.APP_JAR_SOURCES, sources)
    monkeypatch.setattr(bootstrap, "APP_JAR_SOURCES", sources)
    monkeypatch.setattr(bootstrap, "JARS_ROOT", tmp_path / "jars")
    bootstrap.build_app_jar()  # the real javac, against the ops environment's Spark jars
    with zipfile.ZipFile(tmp_path / "jars" / "ops-app" / "adlake-ops.jar") as jar:
        assert "io/adlake/ops/AttributionProcessor.class" in jar.namelist()

    calls: list = []
    monkeypatch.setattr(bootstrap.subprocess, "run", lambda *a, **k: calls.append(a))
    bootstrap.build_app_jar()
    assert calls == []  # stamped: nothing to compile
    source = next(sources.rglob("Attribution.java"))
    source.write_text(source.read_text() + "\n// changed\n")
    bootstrap.build_app_jar()
    assert [c[0][0] for c in calls] == ["javac", "jar"]


def test_the_ops_app_jar_needs_spark_jars_to_compile_against(tmp_path, monkeypatch):
    monkeypatch.setattr(bootstrap, "JARS_ROOT", tmp_path / "jars")
    monkeypatch.setattr(bootstrap.shutil, "which", lambda _: "/usr/bin/javac")
    with pytest.raises(SystemExit, match="no Spark jars to compile the ops app jar against"):
        bootstrap.build_app_jar(tmp_path / "empty")


def npm_tarball(files: dict[str, bytes]) -> bytes:
    """An npm package's tarball holding ``files`` (their names as written in it)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture()
def npm(tmp_path, monkeypatch):
    """``npm pack`` faked: it writes one package's tarball where asked; the pins name that
    package with the tarball's integrity. Yields the list of packs run."""
    tarball = npm_tarball(
        {
            "package/dist/widget.min.js": b"widget()",
            "package/dist/widget.min.js.map": b"{}",
            "package/src/widget.ts": b"source",
            "package/LICENSE": b"MIT",
            "package/package.json": b"{}",
            "package/../../escaped.js": b"outside",
        }
    )
    (tmp_path / "t.tgz").write_bytes(tarball)
    pins = {"@scope/widget": ("1.2.3", bootstrap._npm_integrity(tmp_path / "t.tgz"), ("dist",))}
    monkeypatch.setattr(versions, "DATA_DOCS_NPM", pins)
    monkeypatch.setattr(bootstrap, "DATA_DOCS_ASSETS_DIR", tmp_path / "cache" / "assets")
    monkeypatch.setattr(bootstrap.shutil, "which", lambda _: "/usr/bin/npm")
    packs = []

    def pack(command, **kwargs):
        packs.append(command[2])
        destination = Path(command[command.index("--pack-destination") + 1])
        (destination / "scope-widget-1.2.3.tgz").write_bytes(tarball)
        return subprocess.CompletedProcess(
            command, 0, json.dumps([{"filename": "scope-widget-1.2.3.tgz"}]), ""
        )

    monkeypatch.setattr(bootstrap.subprocess, "run", pack)
    return packs


def test_data_docs_assets_are_vendored_from_pinned_tarballs_once(tmp_path, npm):
    bootstrap.setup_data_docs_assets()
    assert npm == ["@scope/widget@1.2.3"]
    vendored = tmp_path / "cache" / "assets"
    assert sorted(str(p.relative_to(vendored)) for p in vendored.rglob("*") if p.is_file()) == [
        bootstrap.STAMP,
        "@scope/widget@1.2.3/LICENSE",
        "@scope/widget@1.2.3/dist/widget.min.js",
    ]
    assert not list(tmp_path.rglob("escaped.js"))
    bootstrap.setup_data_docs_assets()  # stamped: no npm, no network
    assert npm == ["@scope/widget@1.2.3"]


def test_a_tarball_without_the_pinned_integrity_is_refused(tmp_path, npm, monkeypatch):
    pins = {"@scope/widget": ("1.2.3", "sha512-other", ("dist",))}
    monkeypatch.setattr(versions, "DATA_DOCS_NPM", pins)
    with pytest.raises(SystemExit, match="integrity is sha512-.*, not the pinned sha512-other"):
        bootstrap.setup_data_docs_assets()
    assert not (tmp_path / "cache" / "assets").exists()


def test_without_npm_setup_says_data_docs_go_without_scripts_and_styles(
    tmp_path, npm, monkeypatch, capsys
):
    monkeypatch.setattr(bootstrap.shutil, "which", lambda _: None)
    bootstrap.setup_data_docs_assets()
    assert "npm missing" in capsys.readouterr().out and npm == []


@pytest.fixture()
def pip(tmp_path, monkeypatch):
    """Every command of setup_env faked and recorded (``.venv`` under tmp_path, the real locks):
    ``pip list`` answers ``installed``, ``pip check`` answers ``check``."""
    monkeypatch.setattr(bootstrap, "VENV_ROOT", tmp_path / "venv")
    fake = {"commands": [], "installed": [{"name": "pip", "version": "23"}], "check": (0, "")}

    def run(command, **kwargs):
        fake["commands"].append(command)
        if command[1:3] == ["-m", "venv"]:
            bootstrap.venv_python("ops").parent.mkdir(parents=True)
            bootstrap.venv_python("ops").touch()
        rc, out = (0, json.dumps(fake["installed"])) if "list" in command else (0, "")
        if command[-1] == "check":
            rc, out = fake["check"]
        return subprocess.CompletedProcess(command, rc, out, "")

    monkeypatch.setattr(bootstrap.subprocess, "run", run)
    return fake


def pip_commands(fake) -> list[list[str]]:
    """The pip subcommand and its arguments of each recorded pip call."""
    return [c[c.index("--disable-pip-version-check") + 1 :] for c in fake["commands"] if "pip" in c]


def test_an_env_is_installed_from_its_lock_with_hashes_then_the_project_without_deps(pip):
    bootstrap.setup_env("ops")
    lock = str(bootstrap.locks.lock_path("ops"))
    assert pip_commands(pip) == [
        ["install", "--quiet", "--require-hashes", "-r", lock],
        ["list", "--format=json", "--exclude-editable"],
        ["install", "--quiet", "--no-deps", "--no-build-isolation", "--editable"]
        + [str(bootstrap.REPO_ROOT)],
        ["check"],
    ]
    pip["commands"].clear()
    bootstrap.setup_env("ops")  # stamped: nothing installed, no network
    assert pip["commands"] == []


def test_a_changed_lock_brings_the_existing_env_to_it(pip, tmp_path, monkeypatch, capsys):
    bootstrap.setup_env("ops")
    locks_dir = tmp_path / "locks"
    shutil.copytree(bootstrap.locks.LOCKS_DIR, locks_dir)
    monkeypatch.setattr(bootstrap.locks, "LOCKS_DIR", locks_dir)
    lock = locks_dir / "ops.txt"
    lock.write_text(lock.read_text().replace("ruff==", "ruff==0.0.1", 1))
    pip["commands"].clear()
    pip["installed"].append({"name": "Left_Over", "version": "1.0"})
    bootstrap.setup_env("ops")
    assert not any(c[1:3] == ["-m", "venv"] for c in pip["commands"])  # upgraded in place
    assert ["install", "--quiet", "--require-hashes", "-r", str(lock)] in pip_commands(pip)
    assert ["uninstall", "--quiet", "--yes", "Left_Over"] in pip_commands(pip)
    assert "what its lock does not list: Left_Over" in capsys.readouterr().out


def test_a_failing_pip_check_stops_setup_with_its_output(pip):
    pip["check"] = (1, "pyspark 4.3.0 has requirement py4j==0.10.9.9, but you have py4j 0.1.\n")
    with pytest.raises(SystemExit, match="(?s)pip check failed in 'ops'.*has requirement py4j"):
        bootstrap.setup_env("ops")
    assert not (bootstrap.VENV_ROOT / "ops" / bootstrap.STAMP).exists()  # retried next run


def test_a_lock_stale_against_versions_py_is_refused(pip, monkeypatch):
    changed = [*versions.requirements("ops"), "six==1.17.0"]
    monkeypatch.setattr(versions, "requirements", lambda env: changed)
    with pytest.raises(SystemExit, match=r"ops.txt is stale.*run `make lock`"):
        bootstrap.setup_env("ops")
    assert pip["commands"] == []
