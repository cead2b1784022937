"""A Data Docs site as Great Expectations renders it, without Spark or a data context: the site
index and one failed validation's page, rendered by GX's own renderers and Jinja views (so its
pages name every script, stylesheet and font GX's templates load), and GX's static files, in a
runtime's site directory."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from adlake.quality.project import DATA_DOCS_SITE, data_docs_index

RUN_NAME = "lake_hourly__scheduled__2026-11-21T13:00:00+00:00"
# Where GX writes a validation's page: validations/<suite>/<run name>/<run time>/<batch>.html.
PAGE = f"validations/page_traffic/{RUN_NAME}/20261121T140500.000000Z/adlake_spark-page_traffic.html"


def write_site(settings) -> str:
    """The site index and :data:`PAGE` under ``settings``' Data Docs site; returns ``PAGE``."""
    import great_expectations
    from great_expectations.core import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )
    from great_expectations.render.renderer import ValidationResultsPageRenderer
    from great_expectations.render.renderer.site_index_page_renderer import (
        SiteIndexPageRenderer,
    )
    from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView

    site = data_docs_index(settings).parent
    static = Path(great_expectations.__file__).parent / "render" / "view" / "static"
    shutil.copytree(static, site / "static", dirs_exist_ok=True)

    run_time = datetime(2026, 11, 21, 14, 5, tzinfo=UTC)
    expectation = ExpectationConfiguration(
        type="expect_column_values_to_not_be_null",
        kwargs={"column": "page_id"},
        meta={"severity": "error"},
    )
    result = ExpectationValidationResult(
        success=False,
        expectation_config=expectation,
        result={
            "element_count": 10,
            "unexpected_count": 2,
            "unexpected_percent": 20.0,
            "partial_unexpected_list": [None, None],
        },
    )
    validation = ExpectationSuiteValidationResult(
        success=False,
        results=[result],
        suite_name="page_traffic",
        meta={
            "run_id": {"run_name": RUN_NAME, "run_time": run_time.isoformat()},
            "active_batch_definition": {
                "datasource_name": "adlake_spark",
                "data_connector_name": "fluent",
                "data_asset_name": "page_traffic",
                "batch_identifiers": {},
            },
        },
        statistics={
            "evaluated_expectations": 1,
            "successful_expectations": 0,
            "unsuccessful_expectations": 1,
            "success_percent": 0.0,
        },
    )
    page = site / PAGE
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(
        DefaultJinjaPageView().render(ValidationResultsPageRenderer().render(validation))
    )
    index = SiteIndexPageRenderer.render(
        {
            "site_name": DATA_DOCS_SITE,
            "validations_links": [
                {
                    "filepath": PAGE,
                    "run_name": RUN_NAME,
                    "run_time": run_time,
                    "validation_success": False,
                    "expectation_suite_name": "page_traffic",
                    "expectation_suite_filepath": "expectations/page_traffic.html",
                    "batch_identifier": "page_traffic",
                    "asset_name": "page_traffic",
                }
            ],
        }
    )
    data_docs_index(settings).write_text(DefaultJinjaIndexPageView().render(index))
    return PAGE
