"""The help format of every Adlake command: each flag's help shows its default, and the
description (usually the module docstring) keeps its paragraphs and examples.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="demo", formatter_class=HelpFormatter)
>>> _ = parser.add_argument("--rate", type=int, default=200, help="events per second")
>>> "events per second (default: 200)" in parser.format_help()
True
"""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``formatter_class`` for every command's ``ArgumentParser``. A flag without a default
    (``None``) says in its own help what unset means."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)
