"""What the routers share: the settings of the app serving the request, and a page's HTML."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import FileResponse

from adlake.config import Settings


def current_settings(request: Request) -> Settings:
    """The settings given to :func:`adlake.ui.app.create_app` (read per request)."""
    return request.app.state.settings()


def page(name: str) -> FileResponse:
    """A page of ``adlake/ui/static`` (its scripts and styles are fetched from ``../static/``)."""
    from adlake.ui.app import static_file

    return static_file(name)
