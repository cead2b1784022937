"""Adlake's pages in the Airflow UI ("Streaming apps", "Data quality") as an Airflow plugin:
wiring only, see :mod:`adlake.ui`.

Airflow finds it through the package's ``airflow.plugins`` entry point (pyproject.toml), so an
install of the package (``make setup``, ``pip install -e '.[lake]'``, the Airflow image) is all
a deployment needs; the ``plugins/`` folder holds nothing of Adlake's.
"""

from airflow.plugins_manager import AirflowPlugin

from adlake.ui import EXTERNAL_VIEWS, URL_PREFIX, create_app


class AdlakeUiPlugin(AirflowPlugin):
    name = "adlake_ui"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "adlake"}]
    external_views = EXTERNAL_VIEWS
