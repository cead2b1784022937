"""Streaming-app lifecycle: the module moved to :mod:`adlake.apps.process` (a first step, a pure
rename, before the module is split along its seams)."""

from adlake.apps.process import *  # noqa: F401,F403
from adlake.apps.process import (AlreadyRunning, AppError, AppStartError, AppStopError, Busy,
                                 InvalidRequest)
from adlake.apps.process import __doc__  # noqa: F401
from adlake.apps.process import _app_env, _write_restarts, json  # noqa: F401  (used by tests)

# Their names as before the move (tracebacks, doctests): adlake.apps.<Error>.
for _error in (AppError, AlreadyRunning, AppStartError, AppStopError, InvalidRequest, Busy):
    _error.__module__ = __name__
