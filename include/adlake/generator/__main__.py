"""``python -m adlake.generator``."""

import sys

from adlake.generator.cli import main

sys.exit(main())
