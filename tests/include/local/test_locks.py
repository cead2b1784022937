"""The lock files match versions.py: generated from its current requirements and tested sets
(their inputs digest), every top-level requirement locked at a version it admits, every package
with hashes, and at its tested version unless versions.py pins it otherwise. No network."""

from __future__ import annotations

import re

import pytest
from packaging.requirements import Requirement

from adlake.local import locks, versions


@pytest.mark.parametrize("env", versions.RUNTIMES)
def test_each_lock_is_generated_from_the_current_versions_py(env):
    problem = locks.stale(env)
    assert problem is None, problem


def test_a_pin_changed_without_regenerating_names_the_command(monkeypatch):
    changed = [r.replace("pyspark==", "pyspark==9.") for r in versions.requirements("ops")]
    monkeypatch.setattr(versions, "requirements", lambda env: changed)
    assert locks.stale("ops") == (
        "include/adlake/local/locks/ops.txt is stale: versions.requirements('ops') or "
        "include/adlake/local/locks/ops.constraints.txt changed since it was generated; "
        "run `make lock`"
    )


@pytest.mark.parametrize("env", versions.RUNTIMES)
def test_every_top_level_requirement_is_locked_at_a_version_it_admits(env):
    locked = locks.pinned(locks.lock_path(env).read_text())
    for line in versions.requirements(env):
        requirement = Requirement(line)
        name = locks.canonical(requirement.name)
        assert name in locked, f"{line} is not in {env}.txt: run `make lock`"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{env}.txt locks {name}=={locked[name]}, which {line} excludes: run `make lock`"
        )


@pytest.mark.parametrize("env", versions.RUNTIMES)
def test_every_locked_package_carries_its_hashes(env):
    # pip's --require-hashes refuses a lock with one package without them.
    text = locks.lock_path(env).read_text()
    entries = re.findall(r"^([A-Za-z0-9][\w.-]*)==\S+((?: \\\n +--hash=sha256:\w+)*)", text, re.M)
    assert len(entries) == len(locks.pinned(text))
    unhashed = [name for name, hashes in entries if not hashes]
    assert not unhashed, f"{env}.txt: no hashes for {unhashed}"


@pytest.mark.parametrize("env", versions.RUNTIMES)
def test_the_lock_keeps_the_tested_versions_unless_versions_py_pins_another(env):
    locked = locks.pinned(locks.lock_path(env).read_text())
    tested = locks.pinned(locks.constraints_path(env).read_text())
    exact = locks.exact_pins(versions.requirements(env))
    moved = {
        name: (tested[name], version)
        for name, version in locked.items()
        if name in tested and name not in exact and tested[name] != version
    }
    assert not moved, f"{env}.txt moved packages off their tested versions: {moved}"
    assert locks.PROJECT not in locked and "pip" not in locked


def test_an_exact_pin_of_versions_py_wins_over_the_tested_set():
    bounds = locks.constraints("lake")
    assert not any(c.startswith(("pyspark==", "apache-airflow==")) for c in bounds)
    # A range in versions.py keeps the tested version: the lock moves only when told to.
    tested = locks.pinned(locks.constraints_path("lake").read_text())
    assert f"pandas=={tested['pandas']}" in bounds


def test_the_lake_lock_keeps_the_airflow_of_the_image_base():
    # include/docker/airflow.Dockerfile installs this lock over apache/airflow:<AIRFLOW>.
    assert locks.pinned(locks.lock_path("lake").read_text())["apache-airflow"] == versions.AIRFLOW
