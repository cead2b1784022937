"""``--help`` of every bench command of the lake environment (the ops ones: ``ops/test_help_ops.py``)."""

from __future__ import annotations

import pytest

from tests.support.help import assert_help_runs, assert_help_shows_defaults

COMMANDS = [
    "bench.report",
    "bench.lake.__main__",
    "bench.lake.bronze",
    "bench.lake.views",
    "bench.lake.quality",
    "bench.lake.backfill",
    "bench.lake.maintenance",
]


@pytest.mark.parametrize("module", COMMANDS)
def test_help_shows_every_flags_default(module, capsys, monkeypatch):
    assert_help_shows_defaults(module, capsys, monkeypatch)


def test_help_runs_as_a_command():
    assert_help_runs("bench.report")
