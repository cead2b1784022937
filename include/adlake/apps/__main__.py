"""``python -m adlake.apps``: the lifecycle's command line (:mod:`adlake.apps.cli`)."""

import sys

from adlake.apps.cli import main

if __name__ == "__main__":
    sys.exit(main())
