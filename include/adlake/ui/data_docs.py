"""GX's Data Docs site (``<runtime>/gx/uncommitted/data_docs/local_site``) in the Airflow UI,
kept away from Airflow's origin.

What a Data Docs page runs is decided by GX's templates and by whoever writes the site's files
(the validations, the shared data volume), and GX's pages load jQuery, Bootstrap, Vega and Font
Awesome from public CDNs without integrity hashes. Served as they are from the api-server's
origin, any of those could act with the signed-in user's Airflow session. So:

* Every response of the site carries ``Content-Security-Policy: sandbox allow-scripts`` (no
  ``allow-same-origin``): the page runs in an opaque origin however it is framed or opened, so
  its script reaches neither the session cookie, nor the Airflow UI's window, nor any
  same-origin request with the session. The rest of the policy (:data:`PAGE_POLICY`) lets it
  load scripts, styles, images and fonts from the api-server only, connect nowhere and submit
  no form; ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer`` go with it.
* ``make setup`` vendors the CDNs' files from npm at pinned versions
  (:data:`adlake.local.versions.DATA_DOCS_NPM`, into :data:`ASSETS_DIR`) and :func:`rewrite`
  points each page's CDN URLs at them, under ``/adlake/data-docs-assets/<name>@<version>/``.
  They are public files of public packages, served without login: an opaque origin's requests
  carry no session cookie, and its font requests need ``Access-Control-Allow-Origin``.
* An opaque origin's requests carry no ``SameSite=Lax`` cookie, Airflow's session included, so
  a link from one Data Docs page to another could not be signed in by it. The entry,
  ``/adlake/data-docs/<path>``, is behind Airflow's login and redirects to
  ``/adlake/data-docs-signed/<token>/<path>``: the site under a prefix signed by the api-server
  for :data:`LINK_LIFETIME_S` (10 minutes; :func:`sign`), which the pages' relative links keep.
  The token is a bearer credential in the URL's path, and the api-server's access log writes
  URLs out, so it lasts minutes, not an Airflow sign-in's day: the Data quality page links to
  the entry, which signs a fresh token at every view, and an expired link's page links back
  to the entry.
  The token opens the Data Docs site and nothing else, and of it what the user it was signed for
  may see: it names them, and each page is authorized as them, as the entry is
  (:func:`adlake.ui.access.may_open_data_docs`: a table's pages for a user who may read a DAG
  validating it; 403 otherwise).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import logging
import mimetypes
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from adlake.config import DATA_DOCS_ASSETS_DIR, Settings
from adlake.local.versions import DATA_DOCS_NPM
from adlake.quality.project import data_docs_index
from adlake.ui.access import (
    DagAccess,
    TableAccess,
    dag_access,
    may_open_data_docs,
    subject_user,
    user_subject,
)
from adlake.ui.deps import current_settings, plain_path

log = logging.getLogger(__name__)

ASSETS_DIR = DATA_DOCS_ASSETS_DIR
# The routes, under the plugin's prefix (/adlake): the entry behind the login, the site by a
# signed link, the vendored assets.
ENTRY_ROUTE = "/data-docs"
# How long a signed link opens the site, from the entry's view that signed it (seconds).
LINK_LIFETIME_S = 10 * 60
# The time signing and checking links (Unix seconds): a test sets another.
clock: Callable[[], float] = time.time
SIGNED_ROUTE = "/data-docs-signed"
ASSETS_ROUTE = "/data-docs-assets"

PAGE_POLICY = "; ".join(
    [
        "sandbox allow-scripts",
        "default-src 'none'",
        # GX's pages run inline scripts and handlers; Vega compiles its expressions with
        # Function(). The sandbox, not this list, is what keeps them from Airflow's session.
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'none'",
        "form-action 'none'",
        "base-uri 'none'",
        "frame-ancestors 'self'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

# Each file a GX 1.24 template loads from a CDN, by the end of its URL (whatever the CDN's
# host), and the vendored file standing for it: (npm package, path in the package).
_FILTER = "dist/extensions/filter-control/bootstrap-table-filter-control"
CDN_FILES = {
    "/jquery-3.7.1.min.js": ("jquery", "dist/jquery.min.js"),
    "/popper.js/1.12.9/umd/popper.min.js": ("popper.js", "dist/umd/popper.min.js"),
    "/bootstrap/4.3.1/js/bootstrap.min.js": ("bootstrap", "dist/js/bootstrap.min.js"),
    "/bootstrap/4.3.1/css/bootstrap.min.css": ("bootstrap", "dist/css/bootstrap.min.css"),
    "/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": (
        "bootstrap-table",
        "dist/bootstrap-table.min.js",
    ),
    "/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": (
        "bootstrap-table",
        "dist/bootstrap-table.min.css",
    ),
    f"/bootstrap-table@1.19.1/{_FILTER}.min.js": ("bootstrap-table", f"{_FILTER}.min.js"),
    # 1.19.0's filter-control stylesheets are 1.19.1's but for their banner.
    f"/bootstrap-table@1.19.0/{_FILTER}.css": ("bootstrap-table", f"{_FILTER}.css"),
    f"/bootstrap-table@1.19.0/{_FILTER}.min.css": ("bootstrap-table", f"{_FILTER}.min.css"),
    "/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": (
        "bootstrap-datepicker",
        "dist/js/bootstrap-datepicker.min.js",
    ),
    "/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": (
        "bootstrap-datepicker",
        "dist/css/bootstrap-datepicker.min.css",
    ),
    "/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": (
        "@forevolve/bootstrap-dark",
        "dist/css/bootstrap-prefers-dark.css",
    ),
    "/font-awesome/6.6.0/css/all.min.css": ("@fortawesome/fontawesome-free", "css/all.min.css"),
    "/npm/vega@5": ("vega", "build/vega.min.js"),
    "/npm/vega-lite@5": ("vega-lite", "build/vega-lite.min.js"),
    "/npm/vega-embed@6": ("vega-embed", "build/vega-embed.min.js"),
}
# GX's own images its pages name on GX's web host; the site holds a copy of each under static/.
GX_IMAGES = ("logo-long.png",)

# What the vendored packages hold that a page loads, and its type (nosniff: it must be right).
ASSET_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ttf": "font/ttf",
    ".eot": "application/vnd.ms-fontobject",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".gif": "image/gif",
}

# A URL in a src or href attribute: absolute (http, https, protocol-relative) or the site's own
# static/ tree however deep GX wrote its ../ (GX writes some too shallow).
_ATTRIBUTE = re.compile(
    r"""(?P<head>\b(?:src|href)\s*=\s*(?P<q>["']))"""
    r"""(?:(?P<url>(?:https?:)?//[^"'\s]+)|(?:\./|(?:\.\./)+)?(?P<static>static/[^"'\s]+))"""
    r"""(?P=q)"""
)
_warned: set[str] = set()


def _warn_once(key: str, message: str, *args: object) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message, *args)


def asset_url(package: str, file: str, to_assets: str) -> str:
    """The vendored ``file`` of ``package`` at its pinned version, relative to a page.

    >>> asset_url("jquery", "dist/jquery.min.js", "../../data-docs-assets/")
    '../../data-docs-assets/jquery@3.7.1/dist/jquery.min.js'
    """
    return f"{to_assets}{package}@{DATA_DOCS_NPM[package][0]}/{file}"


def _local(url: str, to_site: str, to_assets: str) -> str | None:
    path = re.sub(r"^(?:https?:)?//[^/]+", "", url).split("?")[0]
    for tail, (package, file) in CDN_FILES.items():
        if path.endswith(tail):
            return asset_url(package, file, to_assets)
    name = path.rsplit("/", 1)[-1]
    return f"{to_site}static/images/{name}" if name in GX_IMAGES else None


def rewrite(page: str, to_site: str, to_assets: str) -> str:
    """``page`` with each CDN URL GX's templates load from pointed at the vendored copy (the
    assets' route is ``to_assets`` from the page), GX's web-hosted images and the site's own
    ``static/`` files at the site's copy (``to_site``: the site's root from the page). A
    link to another site (an ``<a href>``) is left alone; an unknown script or style URL too,
    and logged: the page's policy blocks it.

    >>> rewrite('<script src="https://cdn.example/npm/vega@5"></script>', "../", "../../a/")
    '<script src="../../a/vega@5.33.1/build/vega.min.js"></script>'
    >>> rewrite('<link rel="icon" href="../../../static/images/favicon.ico">', "../../", "")
    '<link rel="icon" href="../../static/images/favicon.ico">'
    """

    def local(match: re.Match) -> str:
        quote_ = match["q"]
        if match["static"]:
            return f"{match['head']}{to_site}{match['static']}{quote_}"
        url = match["url"]
        found = _local(url, to_site, to_assets)
        if found is not None:
            return f"{match['head']}{found}{quote_}"
        tag = page[page.rfind("<", 0, match.start()) : match.start()]
        if not re.match(r"<a\s", tag, re.IGNORECASE):
            _warn_once(url, "a Data Docs page loads %s, which is not vendored: blocked", url)
        return match[0]

    return _ATTRIBUTE.sub(local, page)


def missing_assets(root: Path | None = None) -> list[str]:
    """The pinned packages not vendored under ``root`` (default :data:`ASSETS_DIR`)."""
    root = root or ASSETS_DIR
    return [
        f"{n}@{v}" for n, (v, _, _) in DATA_DOCS_NPM.items() if not (root / f"{n}@{v}").is_dir()
    ]


def site_file(settings: Settings, path: str) -> Path:
    """The file of the Data Docs site at ``path`` (a directory: its ``index.html``). Anything
    outside the site is refused, however the path is spelled.

    >>> from adlake.config import load_settings
    >>> site_file(load_settings({"ADLAKE_RUNTIME_DIR": "/tmp/x"}), "../../../etc/passwd")
    Traceback (most recent call last):
    ...
    fastapi.exceptions.HTTPException: 404: ../../../etc/passwd is not in the Data Docs site
    """
    site = data_docs_index(settings).parent.resolve()
    target = (site / path).resolve()
    if target != site and not target.is_relative_to(site):
        raise HTTPException(404, f"{path} is not in the Data Docs site")
    if _is(Path.is_dir, target):
        target = target / "index.html"
    if not _is(Path.is_file, target):
        if not data_docs_index(settings).is_file():
            raise HTTPException(
                404,
                "no Data Docs yet: no quality check has run. They appear "
                "after the first quality task of lake_hourly or a view's DAG",
            )
        raise HTTPException(404, f"{path or 'index.html'} is not in the Data Docs site")
    return target


def _is(test, path: Path) -> bool:
    """``test(path)`` (``Path.is_file``, ``Path.is_dir``), False where the file system refuses
    to look the path up (too long in all under its directory: ``ENAMETOOLONG``), as for a path
    it does not hold: a miss (404), not a server error."""
    try:
        return test(path)
    except OSError:
        return False


def _key() -> bytes:
    # Derived from the secret Airflow signs its own session tokens with (generated per process
    # when unset, then a signed link works on the api-server process that signed it only).
    from airflow.api_fastapi.auth.tokens import get_signing_key

    secret = get_signing_key("api_auth", "jwt_secret").encode()
    return hmac.new(secret, b"adlake data docs links", hashlib.sha256).digest()


def _signature(expires: int, subject: str) -> str:
    message = f"data-docs:{expires}:{subject}".encode()
    digest = hmac.new(_key(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign(expires: int, subject: str) -> str:
    """A token opening the Data Docs site until ``expires`` (Unix seconds) as the user
    ``subject`` (:func:`adlake.ui.access.user_subject`, no ``.`` in it)."""
    return f"{expires}.{subject}.{_signature(expires, subject)}"


def signed_for(token: str, now: float | None = None) -> str | None:
    """The user (``subject``) ``token`` opens the site for, or None if it is not one the
    api-server signed or has expired by ``now`` (default: :data:`clock`)."""
    now = clock() if now is None else now
    expires, _, rest = token.partition(".")
    subject, _, signature = rest.partition(".")
    if not expires.isdigit() or int(expires) < now:
        return None
    valid = hmac.compare_digest(signature, _signature(int(expires), subject))
    return subject if valid else None


def _refuse_unless(allowed: bool) -> None:
    if not allowed:
        raise HTTPException(
            403,
            "you may not see this Data Docs page: its table is validated by DAGs you may not "
            "read (the index, which lists every table, needs all of them)",
        )


def _up(path: str) -> str:
    """From the directory of a page at ``path`` (relative to a route's root) back to that root."""
    return "../" * path.count("/")


router = APIRouter()


@router.get(ENTRY_ROUTE + "/{path:path}", include_in_schema=False)
def entry(
    settings: Annotated[Settings, Depends(current_settings)],
    access: Annotated[DagAccess, Depends(dag_access)],
    path: str = "",
) -> RedirectResponse:
    """Behind Airflow's login (the app's own dependency): the page at ``path``, if the user may
    see it, by a link signed now for them, relative to this request's URL (it holds under any
    base path)."""
    _refuse_unless(TableAccess(access).may_open(path))
    site_file(settings, path)
    missing = missing_assets()
    if missing:
        _warn_once(
            f"missing {ASSETS_DIR} {missing}",
            "Data Docs are served without %s (not vendored: run make setup, which needs npm)",
            ", ".join(missing),
        )
    token = sign(int(clock()) + LINK_LIFETIME_S, user_subject(access.user))
    target = f"{_up(path)}..{SIGNED_ROUTE}/{token}/{quote(path)}"
    return RedirectResponse(target, status_code=307, headers={"Cache-Control": "no-store"})


def signed_page(token: str, path: str, settings: Settings) -> Response:
    subject = signed_for(token)
    if subject is None:
        entry_url = f"{_up(path)}../..{ENTRY_ROUTE}/{quote(path)}"
        return HTMLResponse(
            "<!doctype html><title>Data Docs</title><p>This Data Docs link has expired or is "
            f'not valid. <a href="{html.escape(entry_url)}">Open {html.escape(path or "the site")}'
            " again</a> (you may have to sign in to Airflow).</p>",
            status_code=403,
            headers={
                "Content-Security-Policy": "default-src 'none'; frame-ancestors 'self'; "
                "form-action 'none'; base-uri 'none'",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )
    user = subject_user(subject)
    _refuse_unless(user is not None and may_open_data_docs(user, path))
    target = site_file(settings, path)
    if target.suffix in (".html", ".htm"):
        to_site = _up(path)
        page = rewrite(
            target.read_text(errors="replace"), to_site, f"{to_site}../..{ASSETS_ROUTE}/"
        )
        return HTMLResponse(page, headers=PAGE_HEADERS)
    kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return FileResponse(target, media_type=kind, headers=PAGE_HEADERS)


def asset(path: str) -> FileResponse:
    """A vendored file, by ``<name>@<version>/<path>``: only the pinned packages' files of the
    types a page loads, nothing outside them."""
    root = ASSETS_DIR.resolve()
    target = (root / path).resolve()
    package = next(
        (f"{n}@{v}" for n, (v, _, _) in DATA_DOCS_NPM.items() if path.startswith(f"{n}@{v}/")),
        None,
    )
    if package is None or not target.is_relative_to(root / package):
        raise HTTPException(404, f"{path} is not a vendored Data Docs asset")
    if target.suffix not in ASSET_TYPES:
        raise HTTPException(404, f"{path} is not a vendored Data Docs asset")
    if not _is(Path.is_file, target):
        raise HTTPException(
            404, f"{path} is not vendored: run make setup (it needs npm) to vendor {package}"
        )
    return FileResponse(
        target,
        media_type=ASSET_TYPES[target.suffix],
        headers={
            "X-Content-Type-Options": "nosniff",
            "Access-Control-Allow-Origin": "*",
            # The version is in the URL: a new pin is a new URL.
            "Cache-Control": "public, max-age=86400",
        },
    )


def mount_public(app: FastAPI) -> None:
    """The signed site and the vendored assets on ``app``, outside its login dependency: as
    sub-applications, which the parent's dependencies do not reach (each has its own path
    check, :func:`adlake.ui.deps.plain_path`)."""
    public = {
        "dependencies": [Depends(plain_path)],
        "docs_url": None,
        "redoc_url": None,
        "openapi_url": None,
    }
    signed = FastAPI(**public)

    @signed.get("/{token}/{path:path}", include_in_schema=False)
    def site(token: str, path: str) -> Response:
        return signed_page(token, path, app.state.settings())

    assets = FastAPI(**public)
    assets.add_api_route("/{path:path}", asset, include_in_schema=False)
    app.mount(SIGNED_ROUTE, signed)
    app.mount(ASSETS_ROUTE, assets)
