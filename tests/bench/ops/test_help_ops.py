"""``--help`` of every bench command of the ops environment (the soak's: ``test_soak.py``)."""

from __future__ import annotations

import pytest

from tests.support.help import assert_help_shows_defaults


@pytest.mark.parametrize(
    "module",
    [
        "bench.ops.latency",
        "bench.ops.kafka_hop",
        "bench.ops.beside",
        "bench.ops.boundary",
        "bench.ops.recovery",
        "bench.ops.burst_profile",
        "bench.ops.suite",
    ],
)
def test_help_shows_every_flags_default(module, capsys, monkeypatch):
    assert_help_shows_defaults(module, capsys, monkeypatch)
