"""Incremental materialized views: the engine moved to :mod:`spark_apps.lake.views.engine`
(a first step, a pure rename, before the module is split along its seams)."""

from spark_apps.lake.views.engine import *  # noqa: F401,F403
from spark_apps.lake.views.engine import __doc__  # noqa: F401
