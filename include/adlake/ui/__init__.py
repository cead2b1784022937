"""Adlake's pages in the Airflow UI: one FastAPI app, mounted by the Airflow 3.3 plugin
:mod:`adlake.ui.plugin` (the package's ``airflow.plugins`` entry point) at :data:`URL_PREFIX`,
with two navigation entries
(:data:`EXTERNAL_VIEWS`).

* ``/adlake/apps/``: the streaming apps (``adlake.apps.app_status`` of each ops app); its buttons
  trigger the app's DAG through Airflow's REST API from the browser, so every action is a DAG run.
  JSON: ``/adlake/apps/api/status``.
* ``/adlake/quality/``: the latest validation per gold table and view, and its pass rate over the
  last runs (``adlake.quality.history``). JSON: ``/adlake/quality/api/summary``.
* ``/adlake/data-docs/``: GX's Data Docs site, served from the runtime directory in a CSP
  sandbox (an opaque origin) with GX's CDN files replaced by vendored copies
  (:mod:`adlake.ui.data_docs`).

Every route, static files included, requires an Airflow user: the app depends on Airflow's own
``get_user`` (``airflow.api_fastapi.core_api.security``), which reads the JWT from an
``Authorization: Bearer`` header or, as the Airflow UI sends it, the ``_token`` cookie. What that
user sees of each app and table follows their permissions on its DAG (:mod:`adlake.ui.access`). The
exceptions serve the sandboxed Data Docs pages, whose requests carry no cookie: the site by a
link the login signed (``/adlake/data-docs-signed/``) and the vendored public assets
(``/adlake/data-docs-assets/``). No Spark here: the api-server reads files only.

An external view's ``href`` is relative: the Airflow UI resolves it against its ``<base href>``
(the api-server's base path) and shows it in an iframe at ``/plugin/<url_route>`` (sandbox
``allow-scripts allow-same-origin``: the page's requests carry the user's session cookie).
``nav_top_level``: each is a button of its own in the navigation bar, not an item of its
"Plugins" menu.

>>> [v["href"] for v in EXTERNAL_VIEWS]
['adlake/apps/', 'adlake/quality/']
"""

from __future__ import annotations

URL_PREFIX = "/adlake"

EXTERNAL_VIEWS = [
    {
        "name": "Streaming apps",
        "href": f"{URL_PREFIX.lstrip('/')}/apps/",
        "destination": "nav",
        "url_route": "streaming-apps",
        "nav_top_level": True,
    },
    {
        "name": "Data quality",
        "href": f"{URL_PREFIX.lstrip('/')}/quality/",
        "destination": "nav",
        "url_route": "data-quality",
        "nav_top_level": True,
    },
]


def create_app(settings=None):
    """The plugin's FastAPI app (see :mod:`adlake.ui.app`); imports Airflow when called."""
    from adlake.ui.app import create_app as create

    return create(settings)
