"""The plugin's FastAPI app: the quality, apps and Data Docs routers behind Airflow's
authentication, and the pages' static files (plain HTML, JS and CSS in ``adlake/ui/static``: no
build step, no CDN).

Authentication is Airflow's own: the app depends on ``get_user`` from
``airflow.api_fastapi.core_api.security`` for every route, so a request without a valid JWT (an
``Authorization: Bearer`` header, or the ``_token`` cookie the Airflow UI logs in with) is refused
with 401 (none, expired) or 403 (invalid) before any handler runs. Authorization too: every route
needs Airflow's permission to view plugins, and each app's and table's data the permission on
its DAG (:mod:`adlake.ui.access`). Two sub-applications are outside the login
(:func:`adlake.ui.data_docs.mount_public`): the Data Docs site by a link the entry signed for the
user, and the vendored public scripts, styles and fonts its sandboxed pages load.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse, RedirectResponse

from adlake.config import Settings, load_settings
from adlake.ui import access, apps, data_docs, quality
from adlake.ui.deps import plain_path, static_file


def create_app(settings: Settings | Callable[[], Settings] | None = None) -> FastAPI:
    """The app, with ``settings`` (or a function returning them, called per request; default:
    :func:`adlake.config.load_settings`)."""
    app = FastAPI(
        title="Adlake",
        # authentication first: an anonymous request learns nothing of its path's validity;
        # then the right to see plugins' views at all
        dependencies=[
            Depends(access.signed_in_dependency()),
            Depends(access.plugins_view_dependency()),
            Depends(plain_path),
        ],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    if isinstance(settings, Settings):
        app.state.settings = lambda: settings
    else:
        app.state.settings = settings or load_settings
    app.include_router(quality.router)
    app.include_router(apps.router)
    app.include_router(data_docs.router)
    data_docs.mount_public(app)

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("apps/")

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> FileResponse:
        return static_file(name)

    return app
