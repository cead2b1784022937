"""Adlake's pages in the Airflow UI ("Streaming apps", "Data quality"): wiring only, see
:mod:`adlake.ui`."""

from airflow.plugins_manager import AirflowPlugin

from adlake.ui import EXTERNAL_VIEWS, URL_PREFIX, create_app


class AdlakeUiPlugin(AirflowPlugin):
    name = "adlake_ui"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "adlake"}]
    external_views = EXTERNAL_VIEWS
