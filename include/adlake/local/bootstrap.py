"""``make setup``: build the two Python environments, the three JVM jar sets and the ops
runtime's own jar (the JVM attribution processor), idempotently, vendor the scripts, styles and
fonts of GX's Data Docs pages from npm, and install Debian's ``chromium`` for the UI tests when it
is missing (as root; otherwise it says how).

Everything is derived from :mod:`adlake.local.versions`; each Python environment is installed
from its lock file (``include/adlake/local/locks/<env>.txt``, every package pinned with its hashes,
generated from versions.py by :mod:`adlake.local.locks`, ``make lock``), and a lock that no longer
matches versions.py is refused. Each environment and each jar set carries a
stamp, the hash of its inputs; when the stamp matches, that part is skipped without touching the
network, so a second setup on a warm machine downloads nothing. A part whose inputs changed (or
whose previous build was interrupted: the stamp is written last) is rebuilt.

Standard library only: it runs with the system Python before any virtual environment exists.

    python3 include/adlake/local/bootstrap.py            # everything
    python3 include/adlake/local/bootstrap.py --jars-only
    python3 include/adlake/local/bootstrap.py --data-docs-assets-only
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adlake.config import DATA_DOCS_ASSETS_DIR, OPS_APP_JAR
from adlake.local import locks, versions

REPO_ROOT = Path(__file__).resolve().parents[3]
VENV_ROOT = REPO_ROOT / ".venv"
JARS_ROOT = REPO_ROOT / ".cache" / "jars"
STAMP = ".adlake-stamp"


def log(message: str) -> None:
    print(f"[setup] {message}", flush=True)


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _stamp_matches(directory: Path, digest: str) -> bool:
    stamp = directory / STAMP
    return stamp.is_file() and stamp.read_text().strip() == digest


def venv_python(env: str) -> Path:
    return VENV_ROOT / env / "bin" / "python"


def _project_digest() -> str:
    # The editable install depends on the package layout declared in pyproject.toml: its build
    # system, project and setuptools tables. Test-runner options there reinstall nothing.
    import tomllib

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    layout = {key: pyproject.get(key) for key in ("build-system", "project")}
    layout["setuptools"] = pyproject.get("tool", {}).get("setuptools")
    return _digest(layout)


def _run_pip(pip: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*pip, *args], capture_output=True, text=True, check=False)


def _not_locked(pip: list[str], lock: Path) -> list[str]:
    """What the environment holds that its lock does not list (pip and the project aside): left
    by an earlier lock, or installed by hand."""
    done = _run_pip(pip, "list", "--format=json", "--exclude-editable")
    if done.returncode != 0:
        raise SystemExit(f"[setup] pip list failed:\n{done.stderr[-2000:]}")
    wanted = {*locks.pinned(lock.read_text()), "pip", locks.PROJECT}
    return sorted(
        p["name"] for p in json.loads(done.stdout) if locks.canonical(p["name"]) not in wanted
    )


def setup_env(env: str) -> None:
    """Create ``.venv/<env>`` (or bring an existing one to its lock): install the lock
    (``pip install --require-hashes``), uninstall what the lock does not list, install this
    project editable without dependencies, then ``pip check``, which must pass. Stamped by the
    lock's content, so a changed lock is installed again and an unchanged one downloads nothing."""
    problem = locks.stale(env)
    if problem:
        raise SystemExit(f"[setup] {problem}")
    target = VENV_ROOT / env
    lock = locks.lock_path(env)
    digest = _digest(
        {
            "python": versions.PYTHON,
            "lock": hashlib.sha256(lock.read_bytes()).hexdigest(),
            "project": _project_digest(),
        }
    )
    if _stamp_matches(target, digest):
        log(f"python env '{env}' is up to date ({target})")
        return
    started = time.monotonic()
    if not venv_python(env).exists():
        log(f"creating python env '{env}' at {target}")
        subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    pip = [str(venv_python(env)), "-m", "pip", "--disable-pip-version-check"]
    log(
        f"installing '{env}' from {locks.shown(lock)}, "
        f"{len(locks.pinned(lock.read_text()))} packages with their hashes "
        "(first time takes minutes)"
    )
    subprocess.run([*pip, "install", "--quiet", "--require-hashes", "-r", str(lock)], check=True)
    extra = _not_locked(pip, lock)
    if extra:
        log(f"removing from '{env}' what its lock does not list: {', '.join(extra)}")
        subprocess.run([*pip, "uninstall", "--quiet", "--yes", *extra], check=True)
    subprocess.run(
        [
            *pip,
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--editable",
            str(REPO_ROOT),
        ],
        check=True,
    )
    done = _run_pip(pip, "check")
    if done.returncode != 0:
        raise SystemExit(
            f"[setup] pip check failed in '{env}' ({target}):\n{done.stdout}{done.stderr}"
        )
    (target / STAMP).write_text(digest + "\n")
    log(f"python env '{env}' ready in {time.monotonic() - started:.0f}s")


def _pom(jar_set: str, artifacts: list[str]) -> str:
    deps = []
    for coordinate in artifacts:
        group, artifact, version = coordinate.split(":")
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version></dependency>"
        )
    body = "\n".join(deps)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by adlake.local.bootstrap from adlake.local.versions; do not edit. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.adlake.jars</groupId>
  <artifactId>{jar_set}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def setup_jars(jar_set: str) -> None:
    """Resolve one jar set with Maven into ``.cache/jars/<set>`` (runtime scope, transitive)."""
    target = JARS_ROOT / jar_set
    artifacts = versions.jvm_artifacts(jar_set)
    digest = _digest({"artifacts": artifacts})
    if _stamp_matches(target, digest):
        log(f"jar set '{jar_set}' is up to date ({len(list(target.glob('*.jar')))} jars)")
        return
    if shutil.which("mvn") is None:
        raise SystemExit("[setup] Maven (mvn) is required to resolve the JVM jars; install it")
    started = time.monotonic()
    log(f"resolving jar set '{jar_set}': {', '.join(artifacts)}")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "pom.xml").write_text(_pom(jar_set, artifacts))
    # Maven keeps its own repository (~/.m2) warm, so a rebuild of a jar set re-downloads nothing
    # that was fetched before. runtime scope leaves out what Spark provides (provided scope).
    subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(staging / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ],
        check=True,
    )
    (staging / STAMP).write_text(digest + "\n")
    # Swap in atomically-ish: a half-resolved set never looks complete.
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log(
        f"jar set '{jar_set}' ready: {len(list(target.glob('*.jar')))} jars in "
        f"{time.monotonic() - started:.0f}s"
    )


APP_JAR_SOURCES = REPO_ROOT / "spark_apps" / "ops" / "jvm"


def app_jar_dir() -> Path:
    """Where the ops runtime's own classes are built: next to the jar sets, never inside one
    (a jar set directory is replaced whole when Maven re-resolves it)."""
    return JARS_ROOT / OPS_APP_JAR.parent


def build_app_jar(spark_jars: Path | None = None) -> None:
    """Compile ``spark_apps/ops/jvm`` (Java, no build tool needed) against the ops environment's
    own Spark jars (or ``spark_jars``, a Spark distribution's ``jars/`` of the same version) into
    ``.cache/jars/`` + ``OPS_APP_JAR``. Stamped by the sources and the Spark version, so an
    unchanged tree is not recompiled."""
    sources = sorted(APP_JAR_SOURCES.rglob("*.java"))
    digest = _digest(
        {
            "spark": versions.SPARK_OPS,
            "sources": {
                str(p.relative_to(APP_JAR_SOURCES)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sources
            },
        }
    )
    target = app_jar_dir()
    if _stamp_matches(target, digest):
        log(f"ops app jar is up to date ({target})")
        return
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise SystemExit(f"[setup] the JDK's {tool} is required to build the ops app jar")
    found = (
        [spark_jars]
        if spark_jars
        else sorted((VENV_ROOT / "ops").glob("lib/python*/site-packages/pyspark/jars"))
    )
    if not found or not any(found[0].glob("spark-sql_*.jar")):
        raise SystemExit(
            "[setup] no Spark jars to compile the ops app jar against; build the "
            "ops environment first (or pass --spark-jars)"
        )
    started = time.monotonic()
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "classes").mkdir(parents=True)
    subprocess.run(
        [
            "javac",
            "-nowarn",
            "--release",
            "17",
            "-d",
            str(staging / "classes"),
            "-cp",
            f"{found[0]}/*",
            *map(str, sources),
        ],
        check=True,
    )
    subprocess.run(
        [
            "jar",
            "--create",
            "--file",
            str(staging / OPS_APP_JAR.name),
            "-C",
            str(staging / "classes"),
            ".",
        ],
        check=True,
    )
    shutil.rmtree(staging / "classes")
    (staging / STAMP).write_text(digest + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log(f"ops app jar ready: {len(sources)} sources in {time.monotonic() - started:.0f}s")


def _npm_integrity(tarball: Path) -> str:
    """npm's integrity string of a tarball: ``sha512-`` and the base64 of its SHA-512."""
    return "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()


def _unpack(tarball: Path, target: Path, keep: tuple[str, ...]) -> int:
    """The regular files of an npm tarball (all under ``package/``) whose top directory is in
    ``keep``, and its licence files, into ``target``; source maps are left out. Nothing is
    written outside ``target`` whatever the member names say. Returns the number of files."""
    count = 0
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if not member.isfile() or len(parts) < 2 or parts[0] != "package":
                continue
            inner = parts[1:]
            licence = len(inner) == 1 and inner[0].upper().startswith(("LICENSE", "LICENCE"))
            if not (inner[0] in keep and len(inner) > 1 or licence):
                continue
            if ".." in inner or member.name.endswith(".map"):
                continue
            path = target.joinpath(*inner)
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.extractfile(member) as source:
                path.write_bytes(source.read())
            count += 1
    return count


def setup_data_docs_assets() -> None:
    """GX's Data Docs pages load jQuery, Bootstrap, Vega, Font Awesome... from public CDNs; the
    plugin serves its own copies instead (:mod:`adlake.ui.data_docs`). Each pinned package of
    :data:`versions.DATA_DOCS_NPM` is fetched with ``npm pack``, refused unless its tarball has
    the pinned integrity, and unpacked into ``.cache/data-docs-assets/<name>@<version>/``.
    Without npm, a line saying so: the pages are then served without their scripts and styles."""
    target = DATA_DOCS_ASSETS_DIR
    digest = _digest({"npm": versions.DATA_DOCS_NPM})
    if _stamp_matches(target, digest):
        log(f"Data Docs assets are up to date ({len(versions.DATA_DOCS_NPM)} packages)")
        return
    if shutil.which("npm") is None:
        log(
            "npm missing: GX's Data Docs pages will be served without their scripts and styles; "
            "install Node.js's npm and run make setup again"
        )
        return
    started = time.monotonic()
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    log(f"vendoring {len(versions.DATA_DOCS_NPM)} npm packages for GX's Data Docs pages")
    for name, (version, integrity, keep) in versions.DATA_DOCS_NPM.items():
        spec = f"{name}@{version}"
        command = ["npm", "pack", spec, "--json", "--pack-destination", str(staging)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"[setup] npm pack {spec} failed:\n{done.stderr[-2000:]}")
        tarball = staging / json.loads(done.stdout)[0]["filename"]
        found = _npm_integrity(tarball)
        if found != integrity:
            raise SystemExit(
                f"[setup] {spec}: its tarball's integrity is {found}, not the pinned {integrity} "
                "(include/adlake/local/versions.py); not vendored"
            )
        if not _unpack(tarball, staging / spec, keep):
            raise SystemExit(f"[setup] {spec}: nothing under {', '.join(keep)} in its tarball")
        tarball.unlink()
    (staging / STAMP).write_text(digest + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log(f"Data Docs assets ready in {time.monotonic() - started:.0f}s ({target})")


CHROMIUM_PACKAGE = "chromium"


def setup_browser() -> None:
    """Debian's Chromium, which the UI tests drive headless with Playwright (a browser that
    Playwright downloads cannot be fetched here). Installed with apt when missing and this is
    root; otherwise a line saying how (``make up`` does not need it)."""
    if shutil.which("chromium"):
        log("chromium is installed")
        return
    if not shutil.which("apt-get"):
        log(
            "chromium missing and no apt-get: install a Chromium as /usr/bin/chromium for the UI "
            "tests"
        )
        return
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        log(f"chromium missing: run `sudo apt-get install {CHROMIUM_PACKAGE}` for the UI tests")
        return
    started = time.monotonic()
    log(f"installing {CHROMIUM_PACKAGE} with apt-get (the UI tests' browser)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", CHROMIUM_PACKAGE],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"[setup] {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    log(f"chromium installed in {time.monotonic() - started:.0f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jars-only", action="store_true")
    parser.add_argument("--envs-only", action="store_true")
    parser.add_argument(
        "--env",
        choices=versions.RUNTIMES,
        action="append",
        help="only this Python environment (repeatable)",
    )
    parser.add_argument(
        "--app-jar-only",
        action="store_true",
        help="only the ops app jar (e.g. in a container build)",
    )
    parser.add_argument(
        "--data-docs-assets-only",
        action="store_true",
        help="only the vendored scripts, styles and fonts of GX's Data Docs pages",
    )
    parser.add_argument(
        "--spark-jars",
        type=Path,
        default=None,
        help="compile the ops app jar against this Spark jars/ directory "
        "instead of the ops environment's",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.app_jar_only:
        build_app_jar(args.spark_jars)
        log(f"done in {time.monotonic() - started:.1f}s")
        return 0
    if args.data_docs_assets_only:
        setup_data_docs_assets()
        log(f"done in {time.monotonic() - started:.1f}s")
        return 0
    if not args.envs_only:
        for jar_set in versions.JAR_SETS:
            setup_jars(jar_set)
    if not args.jars_only:
        for env in args.env or versions.RUNTIMES:
            setup_env(env)
    if not args.jars_only and not args.envs_only and (args.env is None or "ops" in args.env):
        build_app_jar(args.spark_jars)
    if not args.jars_only and not args.envs_only and args.env is None:
        setup_data_docs_assets()
        setup_browser()
    log(f"done in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
