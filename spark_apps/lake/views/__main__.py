"""``python -m spark_apps.lake.views``: see :mod:`spark_apps.lake.views.cli`."""

import sys

from spark_apps.lake.views.cli import main

if __name__ == "__main__":
    sys.exit(main())
