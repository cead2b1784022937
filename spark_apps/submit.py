"""The one spark-submit entry point of every scheduled job: runs the module named by its first
argument as ``__main__`` with the remaining arguments, so a DAG task's rendered argv reads
``spark_apps/submit.py spark_apps.lake.gold --tables … --start … --end …``.

    spark-submit --master 'local[2]' spark_apps/submit.py spark_apps.lake.gold --help
"""

from __future__ import annotations

import runpy
import sys


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        raise SystemExit("usage: submit.py <module> [args...]  (e.g. spark_apps.lake.gold)")
    module, *args = argv
    if not module.startswith("spark_apps."):
        raise SystemExit(f"submit.py runs Adlake's jobs only (spark_apps.*), not {module!r}")
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
