"""``make lock``: the lock file of each Python environment, with every package's hashes.

``versions.py`` pins the top-level packages only; each environment's full set (every transitive
package, at one version, with the sha256 of each of its files on the index) is in
``include/adlake/local/locks/<env>.txt``, generated here from two inputs:

* ``versions.requirements(env)``, the top-level requirements;
* ``locks/<env>.constraints.txt``, the **tested set**: every package (``name==version``) of an
  environment the whole suite passed in. It bounds the resolution, so a lock pins the versions
  the suite is known to pass with instead of whatever is newest the day it is generated.
  Where ``versions.py`` pins a package exactly (``name==X``), that pin wins and the tested set's
  line for it is left out, so changing such a pin needs nothing more than ``make lock``.

Why a tested set of our own rather than Airflow's published constraints for the lake lock: those
live only in Airflow's source repository (a ``constraints-<release>`` tag), which this project's
machines and CI cannot reach, and neither the ``apache-airflow`` sdist nor the
``apache-airflow-core`` wheel on PyPI carries them. The lake set was therefore first recorded from
``.venv/lake`` as the suite passed in it (``pip freeze``, less the project itself), which holds
the pinned Airflow release with the dependencies its own requirements admit; the ops set likewise
from ``.venv/ops``.

Each lock opens with a digest of its inputs (Python version, requirements, tested set); a unit
test fails when they changed and the lock was not regenerated, and ``make setup`` refuses a stale
lock. ``make setup`` installs each environment with ``pip install --require-hashes -r <lock>``,
and so do the Docker images.

    python3 include/adlake/local/locks.py            # regenerate both locks (make lock)
    python3 include/adlake/local/locks.py --check    # exit 1 if a lock is stale (no network)
    python3 include/adlake/local/locks.py --freeze   # re-record the tested sets from .venv, then lock

Changing a pin: edit ``versions.py``, run ``make lock``, then ``make setup`` and ``make test``.
When the resolver says a tested version conflicts with the new pin, delete that package's line
from ``locks/<env>.constraints.txt`` (the resolver then picks a version the new pin admits) and
run ``make lock`` again; once ``make test`` passes, ``--freeze`` records the new tested set.

The resolver is uv (``uv pip compile``, pinned as ``versions.UV``): taken from ``PATH`` when it is
that release, otherwise installed with pip into ``.cache/uv``. Generating needs the package
index; checking does not. Standard library only, like :mod:`adlake.local.versions`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adlake.local import versions

REPO_ROOT = Path(__file__).resolve().parents[3]
LOCKS_DIR = Path(__file__).resolve().parent / "locks"
COMMAND = "make lock"
# Markers hold for the Linux machines and images the environments are built on; the hashes cover
# every file of each pinned release, so the same lock installs on any of them.
PLATFORM = "x86_64-manylinux_2_28"
DIGEST_LINE = "# inputs-sha256: "
# The project itself: installed editable, never locked.
PROJECT = "adlake"


def lock_path(env: str) -> Path:
    return LOCKS_DIR / f"{env}.txt"


def constraints_path(env: str) -> Path:
    return LOCKS_DIR / f"{env}.constraints.txt"


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def canonical(name: str) -> str:
    """A distribution name as the index compares them (PEP 503).

    >>> canonical("ruamel.yaml"), canonical("Great_Expectations")
    ('ruamel-yaml', 'great-expectations')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def exact_pins(requirements: list[str]) -> dict[str, str]:
    """The requirements that pin one release (``name==X``, no wildcard), by canonical name.

    >>> exact_pins(["pyspark==4.2.0", "great-expectations==1.24.*", "pandas<3"])
    {'pyspark': '4.2.0'}
    """
    pins = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^*,;\s]+)", requirement.strip())
        if match:
            pins[canonical(match[1])] = match[2]
    return pins


def pinned(text: str) -> dict[str, str]:
    """The ``name==version`` lines of a requirements text (a lock or a tested set), by
    canonical name; comments, hashes and markers are skipped.

    >>> pinned("# c\\nPyYAML==6.0.4 \\\\\\n    --hash=sha256:ab\\nwheel==0.48.0 ; python_version >= '3'\\n")
    {'pyyaml': '6.0.4', 'wheel': '0.48.0'}
    """
    found = {}
    for line in text.splitlines():
        match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
        if match:
            found[canonical(match[1])] = match[2]
    return found


def constraints(env: str) -> list[str]:
    """The tested set's lines that bound ``env``'s resolution: all but the packages that
    ``versions.py`` pins exactly itself."""
    exact = exact_pins(versions.requirements(env))
    text = constraints_path(env).read_text()
    return [f"{name}=={version}" for name, version in pinned(text).items() if name not in exact]


def inputs_digest(env: str) -> str:
    """The digest of what ``env``'s lock is generated from: the Python version, the requirements
    of ``versions.py`` and the tested set."""
    payload = {
        "python": versions.PYTHON,
        "requirements": versions.requirements(env),
        "tested-set": hashlib.sha256(constraints_path(env).read_bytes()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def recorded_digest(env: str) -> str | None:
    """The inputs digest written in ``env``'s lock, or None without a lock (or a digest)."""
    path = lock_path(env)
    if not path.is_file():
        return None
    for line in path.read_text().splitlines():
        if line.startswith(DIGEST_LINE):
            return line[len(DIGEST_LINE) :].strip()
    return None


def stale(env: str) -> str | None:
    """Why ``env``'s lock does not match its inputs (naming the command to run), or None."""
    path = shown(lock_path(env))
    recorded = recorded_digest(env)
    if recorded is None:
        return f"{path} is missing or has no inputs digest: run `{COMMAND}`"
    if recorded != inputs_digest(env):
        return (
            f"{path} is stale: versions.requirements({env!r}) or "
            f"{shown(constraints_path(env))} changed since it was generated; "
            f"run `{COMMAND}`"
        )
    return None


def header(env: str) -> str:
    return (
        f"# The {env} environment's lock: every package, pinned, with its files' hashes.\n"
        f"# Generated by `{COMMAND}` (include/adlake/local/locks.py) from\n"
        f"# versions.requirements({env!r}) and the tested set {env}.constraints.txt, with\n"
        f"# uv {versions.UV} for Python {versions.PYTHON}; do not edit. Installed with\n"
        f"# `pip install --require-hashes -r` by make setup and the Docker images.\n"
        f"{DIGEST_LINE}{inputs_digest(env)}\n"
    )


def uv() -> str:
    """The pinned uv: on PATH if it is that release, else pip-installed into ``.cache/uv``."""
    found = shutil.which("uv")
    if found:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
        if done.stdout.split()[1:2] == [versions.UV]:
            return found
    target = REPO_ROOT / ".cache" / "uv"
    binary = target / "bin" / "uv"
    if (
        not binary.exists()
        or versions.UV
        not in subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, check=False
        ).stdout.split()
    ):
        print(f"[lock] installing uv {versions.UV} into {target}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(target)], check=True)
        subprocess.run(
            [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            + ["--disable-pip-version-check", f"uv=={versions.UV}"],
            check=True,
        )
    return str(binary)


def compile_lock(env: str, resolver: str) -> None:
    """Resolve ``env``'s requirements within its tested set and write its lock."""
    with tempfile.TemporaryDirectory() as scratch:
        # Short, stable names: the lock's `# via` comments name these files.
        work = Path(scratch)
        (work / f"{env}.in").write_text("\n".join(versions.requirements(env)) + "\n")
        (work / f"{env}.constraints.txt").write_text("\n".join(constraints(env)) + "\n")
        command = [
            resolver,
            "pip",
            "compile",
            "--quiet",
            "--no-header",
            "--generate-hashes",
            "--python-version",
            versions.PYTHON,
            "--python-platform",
            PLATFORM,
            "--constraint",
            f"{env}.constraints.txt",
            f"{env}.in",
            "--output-file",
            "lock.txt",
        ]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(
                f"[lock] resolving '{env}' failed:\n{done.stderr[-4000:]}\n"
                f"A version of the tested set ({shown(constraints_path(env))}) "
                "that the new pins exclude: delete its line there and run this again."
            )
        body = (work / "lock.txt").read_text()
    lock_path(env).write_text(header(env) + body)
    print(f"[lock] {shown(lock_path(env))}: {len(pinned(body))} packages")


def freeze(env: str) -> None:
    """Record ``.venv/<env>``'s packages (the project itself and pip left out) as its tested
    set."""
    python = REPO_ROOT / ".venv" / env / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    )
    found = {n: v for n, v in pinned(done.stdout).items() if n not in ("pip", PROJECT)}
    LOCKS_DIR.mkdir(exist_ok=True)
    constraints_path(env).write_text(
        f"# The {env} environment's tested set: .venv/{env} as the suite passed in it,\n"
        f"# recorded by `python3 include/adlake/local/locks.py --freeze`. It bounds the lock's\n"
        f"# resolution ({env}.txt; see locks.py); after editing it, run `{COMMAND}`.\n"
        + "".join(f"{name}=={version}\n" for name, version in sorted(found.items()))
    )
    print(f"[lock] {shown(constraints_path(env))}: {len(found)} packages")


def main(argv: list[str] | None = None) -> int:
    # Imported here: bootstrap imports this module in image build stages that copy only
    # adlake/__init__.py, adlake/config.py and adlake/local/.
    from adlake.helpformat import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="python3 include/adlake/local/locks.py",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    for flag, text in (
        ("--check", "change nothing; exit 1 if a lock is stale (no network)"),
        ("--freeze", "first re-record each tested set from its environment under .venv"),
    ):
        parser.add_argument(flag, action="store_true", help=text)
    parser.add_argument(
        "--env",
        choices=versions.RUNTIMES,
        action="append",
        help="only this environment (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    envs = args.env or list(versions.RUNTIMES)
    if args.check:
        problems = [p for p in map(stale, envs) if p]
        print("\n".join(problems) or "[lock] every lock is up to date", file=sys.stderr)
        return 1 if problems else 0
    resolver = uv()
    for env in envs:
        if args.freeze:
            freeze(env)
        compile_lock(env, resolver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
