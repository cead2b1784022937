"""Every command's ``--help``: it runs, exits 0 and shows every flag's default.

Shared by the lake and ops runs of the suite (each interpreter checks its own commands).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest


def captured_parser(
    module_name: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> tuple[argparse.ArgumentParser, str]:
    """Call ``module.main(["--help"])`` in-process; the parser that printed its help, and the
    help text."""
    printed: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.print_help

    def record(self, file=None):
        printed.append(self)
        original(self, file)

    monkeypatch.setattr(argparse.ArgumentParser, "print_help", record)
    module = importlib.import_module(module_name)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code in (0, None)
    assert printed, f"{module_name} --help printed no parser's help"
    return printed[-1], capsys.readouterr().out


def assert_help_shows_defaults(module_name: str, capsys, monkeypatch) -> None:
    parser, text = captured_parser(module_name, capsys, monkeypatch)
    assert issubclass(parser.formatter_class, argparse.ArgumentDefaultsHelpFormatter), (
        f"{module_name}: formatter_class {parser.formatter_class.__name__} does not show "
        "defaults (use adlake.helpformat.HelpFormatter)"
    )
    undocumented = [
        a.option_strings[0]
        for a in parser._actions
        if a.option_strings and a.help in (None, "") and a.dest != "help"
    ]
    assert not undocumented, f"{module_name}: flags without help (no default shown): {undocumented}"
    for action in parser._actions:
        if (
            action.option_strings
            and action.dest != "help"
            and action.default is not None
            and action.default is not argparse.SUPPRESS
        ):
            # argparse wraps long defaults anywhere: compare without whitespace
            shown = "".join(f"(default: {action.default})".split())
            assert shown in "".join(text.split()), (
                f"{module_name}: {action.option_strings[0]}'s default {action.default!r} is "
                "not in --help"
            )


def assert_help_runs(module_name: str) -> None:
    """``python -m module --help`` as a user types it."""
    done = subprocess.run(
        [sys.executable, "-m", module_name, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
