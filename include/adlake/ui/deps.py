"""What the app and its routers share: the settings of the app serving the request, and the
package's static files (a page's HTML, its scripts and styles)."""

from __future__ import annotations

from pathlib import Path

from fastapi import HTTPException, Request
from fastapi.responses import FileResponse

from adlake.config import Settings

STATIC_DIR = Path(__file__).resolve().parent / "static"
MEDIA_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


# The longest name a file-system path segment can be (NAME_MAX, in bytes).
NAME_MAX = 255
# The longest path the file system takes (PATH_MAX, in bytes, its final NUL included).
PATH_MAX = 4096


def plain_path(request: Request) -> None:
    """Refuse with 400 a request whose path parameters (a file's name, a path in a site) no
    file can have: a NUL byte, a segment over :data:`NAME_MAX` bytes, or :data:`PATH_MAX` bytes
    or more in all, which the file system would answer with an error, not a miss. The detail
    names the parameter, not the value. (A shorter path can still be too long under the
    directory it is looked up in: the routes answer that file system error with 404.)"""
    for name, value in request.path_params.items():
        if not isinstance(value, str):
            continue
        if "\0" in value:
            raise HTTPException(400, f"{name}: a path may not contain a NUL byte")
        if any(len(part.encode()) > NAME_MAX for part in value.split("/")):
            raise HTTPException(
                400, f"{name}: a path segment may not be longer than {NAME_MAX} bytes"
            )
        if len(value.encode()) >= PATH_MAX:
            raise HTTPException(400, f"{name}: a path may not be longer than {PATH_MAX - 1} bytes")


def current_settings(request: Request) -> Settings:
    """The settings given to :func:`adlake.ui.app.create_app` (read per request)."""
    return request.app.state.settings()


def page(name: str) -> FileResponse:
    """A page of ``adlake/ui/static`` (its scripts and styles are fetched from ``../static/``)."""
    return static_file(name)


def static_file(name: str) -> FileResponse:
    """One of the package's static files, by bare name (nothing else is reachable)."""
    path = STATIC_DIR / name
    if "/" in name or path.suffix not in MEDIA_TYPES or not path.is_file():
        raise HTTPException(404, f"no static file {name!r}")
    return FileResponse(
        path, media_type=MEDIA_TYPES[path.suffix], headers={"Cache-Control": "no-cache"}
    )
