"""``--help`` of every command of the lake environment (the ops apps: ``ops/test_help_ops.py``)."""

from __future__ import annotations

import pytest

from tests.support.help import assert_help_runs, assert_help_shows_defaults

COMMANDS = [
    "adlake.generator",
    "adlake.local.kafka",
    "adlake.local.engine",
    "adlake.apps.cli",
    "adlake.local.compose_versions",
    "adlake.local.locks",
    "adlake.local.platform",
    "adlake.latency",
    "spark_apps.lake.bronze",
    "spark_apps.lake.silver",
    "spark_apps.lake.gold",
    "spark_apps.lake.views",
    "adlake.quality.generate",
    "spark_apps.lake.quality",
    "spark_apps.lake.maintenance",
]


@pytest.mark.parametrize("module", COMMANDS)
def test_help_shows_every_flags_default(module, capsys, monkeypatch):
    assert_help_shows_defaults(module, capsys, monkeypatch)


@pytest.mark.parametrize("module", ["adlake.generator", "spark_apps.lake.gold"])
def test_help_runs_as_a_command(module):
    assert_help_runs(module)
