"""The one runner of the streaming apps: every app's flags mean the same (unit: no JVM)."""

from __future__ import annotations

import importlib

import pytest

from adlake import registry
from adlake.status import stop_marker
from spark_apps.common.streaming.runner import StreamingApp, parse_args, resolve_checkpoint
from tests.support.help import assert_help_runs, assert_help_shows_defaults

OPS_APPS = [app for app in registry.APPS.values() if app.runtime == "ops"]


def spec_of(app: registry.App) -> StreamingApp:
    return importlib.import_module(app.module).SPEC


@pytest.mark.parametrize("app", OPS_APPS, ids=lambda a: a.name)
def test_every_ops_app_runs_on_the_shared_runner(app):
    spec = spec_of(app)
    assert isinstance(spec, StreamingApp) and spec.app is app


@pytest.mark.parametrize("app", OPS_APPS, ids=lambda a: a.name)
@pytest.mark.parametrize(
    "flag, expected",
    [
        (None, "checkpoints/{name}"),
        ("trial", "checkpoints/trial"),
        ("nested/trial", "checkpoints/nested/trial"),
    ],
)
def test_checkpoint_flag_means_the_same_for_every_app(settings, app, flag, expected):
    argv = [] if flag is None else ["--checkpoint", flag]
    args = parse_args(spec_of(app), argv)
    path = resolve_checkpoint(settings, args.checkpoint, args.query_name)
    assert path == settings.runtime_dir / expected.format(name=app.name)


@pytest.mark.parametrize("app", OPS_APPS, ids=lambda a: a.name)
def test_an_absolute_checkpoint_is_used_as_given(settings, app, tmp_path):
    args = parse_args(spec_of(app), ["--checkpoint", str(tmp_path / "cp")])
    assert resolve_checkpoint(settings, args.checkpoint, args.query_name) == tmp_path / "cp"


@pytest.mark.parametrize("app", OPS_APPS, ids=lambda a: a.name)
def test_query_name_names_status_stop_marker_and_checkpoint(settings, app):
    args = parse_args(spec_of(app), ["--query-name", "canary"])
    assert (
        resolve_checkpoint(settings, args.checkpoint, args.query_name)
        == settings.checkpoints_dir / "canary"
    )
    assert stop_marker(settings, args.query_name) == settings.status_dir / "canary.stop"


def test_python_engine_in_real_time_mode_is_refused_before_anything_starts(capsys):
    spec = spec_of(registry.app("attribution"))
    with pytest.raises(SystemExit) as exit_:
        parse_args(spec, ["--engine", "python", "--trigger", "realtime"])
    assert exit_.value.code == 2
    assert "engine python runs in micro-batches only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--window-s", "0"],
            "--window-s: 0.0 is out of range: allowed numbers from 0.001 to 86400",
        ),
        (["--window-s", "nan"], "--window-s: nan is not a valid number: allowed numbers from"),
        (["--lateness-s", "inf"], "--lateness-s: inf is not a valid number: allowed numbers from"),
        (["--skew-s", "3601"], "--skew-s: 3601.0 is out of range: allowed numbers from 0 to 3600"),
        (["--ttl-s", "60"], "ttl_s=60 must exceed 2 * window_s + lateness_s (630)"),
    ],
)
def test_attribution_knobs_are_checked_before_anything_starts(capsys, argv, message):
    with pytest.raises(SystemExit):
        parse_args(spec_of(registry.app("attribution")), argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("module", [a.module for a in OPS_APPS])
def test_help_shows_every_flags_default(module, capsys, monkeypatch):
    assert_help_shows_defaults(module, capsys, monkeypatch)


@pytest.mark.parametrize("app", OPS_APPS, ids=lambda a: a.name)
def test_help_runs_as_a_command(app):
    assert_help_runs(app.module)


def test_attribution_help_tells_the_truth_about_engines_and_modes(capsys, monkeypatch):
    from tests.support.help import captured_parser

    _, text = captured_parser("spark_apps.ops.attribution", capsys, monkeypatch)
    text = " ".join(text.split())
    assert "rejects the query at start" not in text
    assert "--engine python runs" not in text  # that is an error message, not help
    assert "Real-Time Mode" in text and "micro-batch" in text
    assert "spark_apps/common/attribution" in text


@pytest.mark.parametrize(
    "value, ok",
    [
        ("earliest", True),
        ("latest", True),
        ('{"page_clicks": {"0": 42, "1": 40}}', True),
        ("newest", False),
        ('{"page_clicks": 42}', False),
        ("[1, 2]", False),
    ],
)
def test_starting_offsets_are_a_position_or_offsets_per_partition(value, ok, capsys):
    spec = spec_of(registry.app("click_surge"))
    if ok:
        assert parse_args(spec, ["--starting-offsets", value]).starting_offsets == value
    else:
        with pytest.raises(SystemExit):
            parse_args(spec, ["--starting-offsets", value])
        assert "is not earliest, latest or a JSON object" in capsys.readouterr().err
