"""The package installs what it runs: pyproject's extras are versions.py's pins, every console
script resolves to a callable, and Airflow's plugin entry point names the plugin class."""

from __future__ import annotations

import importlib
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from adlake.local import versions

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def test_the_extras_are_the_pins_of_versions_py():
    extras = versions.extras()
    expected = "\n".join(
        f"{name} = [{', '.join(repr(r) for r in reqs)}]" for name, reqs in extras.items()
    )
    assert PROJECT["optional-dependencies"] == extras, (
        f"pyproject.toml's [project.optional-dependencies] differ from versions.extras():\n"
        f"{expected}"
    )


def test_each_environment_is_its_extra_plus_the_tools():
    """An environment holds its run-time extra, the test runner and linter, and of the other
    tools (the UI tests' browser driver, the report's plots) only what it runs; the run-time
    extras hold none of them."""
    extras = versions.extras()
    tools = set(extras["dev"]) | set(extras["bench"]) | {"setuptools>=70", "wheel"}
    for env in versions.RUNTIMES:
        reqs = set(versions.requirements(env))
        assert set(extras[env]) <= reqs and not set(extras[env]) & tools, env
        assert reqs - set(extras[env]) <= tools, env
        assert {r for r in extras["dev"] if r.startswith(("pytest", "ruff"))} <= reqs, env


@pytest.mark.parametrize("name", sorted(PROJECT["scripts"]))
def test_every_console_script_is_a_main_function(name):
    module, _, attribute = PROJECT["scripts"][name].partition(":")
    if module.startswith("spark_apps.lake") or module == "adlake.ui.plugin":
        pytest.importorskip("delta")  # the lake environment's modules
    assert callable(getattr(importlib.import_module(module), attribute)), name


def test_the_installed_package_registers_the_airflow_plugin():
    pytest.importorskip("airflow")
    declared = PROJECT["entry-points"]["airflow.plugins"]
    installed = {e.name: e.value for e in metadata.entry_points(group="airflow.plugins")}
    # make setup installs the package (editable): its metadata carries the entry point
    assert installed.get("adlake_ui") == declared["adlake_ui"], installed
    module, _, cls = declared["adlake_ui"].partition(":")
    assert getattr(importlib.import_module(module), cls).name == "adlake_ui"
