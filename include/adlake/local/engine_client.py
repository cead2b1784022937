"""What a client of the lake engine needs (:mod:`adlake.local.engine` runs the server): its
token and URL, and the error a job gets when the engine is not there. No Spark import, so the
session factory (:mod:`adlake.spark_session`) can use it without importing the server's module.

>>> from adlake.config import load_settings
>>> remote_url(load_settings({"ADLAKE_LAKE_ENGINE_PORT": "15010"}), "t0k3n")
'sc://localhost:15010/;token=t0k3n'
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from adlake.config import Settings
from adlake.local.credentials import PRIVATE, create_private

TOKEN_VAR = "SPARK_CONNECT_AUTHENTICATE_TOKEN"


class EngineError(RuntimeError):
    """The lake engine could not be started, reached or stopped."""


def engine_dir(settings: Settings) -> Path:
    return settings.runtime_dir / "engine"


def token_path(settings: Settings) -> Path:
    return engine_dir(settings) / "token"


def ensure_token(settings: Settings) -> str:
    """The engine's client token, generated at the first call (mode 600, never rewritten)."""
    path = token_path(settings)
    create_private(path, secrets.token_urlsafe(32))
    if path.stat().st_mode & 0o077:
        path.chmod(PRIVATE)
    return path.read_text().strip()


def client_token(settings: Settings) -> str:
    """The token a client sends: ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` when set (a test's shared
    engine), else this runtime's; :class:`EngineError` when neither exists (no engine was ever
    started here)."""
    if os.environ.get(TOKEN_VAR):
        return os.environ[TOKEN_VAR]
    try:
        return token_path(settings).read_text().strip()
    except OSError:
        raise EngineError(
            f"no lake engine token at {token_path(settings)}: the engine was never started in "
            "this runtime (`python -m adlake.local.engine up`)"
        ) from None


def remote_url(settings: Settings, token: str, session_id: str | None = None) -> str:
    """The Spark Connect URL of this runtime's engine, with ``token`` (and ``session_id``: a
    client naming its session, so that a later client can find and release it)."""
    url = f"sc://localhost:{settings.lake_engine_port}/;token={token}"
    return f"{url};session_id={session_id}" if session_id else url
