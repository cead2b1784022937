"""Write the GX project (``expectations/``) from the registry and the rules; ``--check`` only
says whether the committed files drifted (exit status 1 if they did).

    .venv/lake/bin/python -m adlake.quality.generate
    .venv/lake/bin/python -m adlake.quality.generate --check
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from adlake.helpformat import HelpFormatter
from adlake.quality.project import PROJECT_DIR, drift, write_project


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adlake.quality.generate", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--dir", type=Path, default=PROJECT_DIR, help="the project directory to write or check"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the differences and exit 1 if there are any",
    )
    args = parser.parse_args(argv)
    if args.check:
        differences = drift(args.dir)
        for line in differences:
            print(line)
        if differences:
            print(
                f"{args.dir} drifted from the registry and rules: run "
                "python -m adlake.quality.generate",
                file=sys.stderr,
            )
        return 1 if differences else 0
    changes = write_project(args.dir)
    print(f"{args.dir}: " + (", ".join(changes) if changes else "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
