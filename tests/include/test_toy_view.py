"""Adding a view is one catalog entry: a toy view (page clicks per page and day, with a rule of
its own) added to the catalog's views gets, with no other edit, its refresh and gate jobs
(``catalog.jobs``), its DAG ``view_<name>`` from ``dags/lake.py`` (asset-triggered on its
source, a ``mode`` form field, the gate publishing the view) and its quality suite: the keys and
counts the catalog implies, then the rule it carries, in GX's JSON as the project writes it.

No Spark: the refresh itself is the view engine's, the same for every entry
(``tests/spark_apps/lake/test_views.py``)."""

from __future__ import annotations

import pytest

from adlake import registry
from adlake.catalog import jobs
from adlake.catalog.expectations import ERROR, at_least
from adlake.quality import project, rules
from tests.dags.conftest import DAGS_DIR, airflow_db  # noqa: F401  (a fixture)

TOY = registry.View(
    "toy_page_days",
    "silver_page_clicks",
    ("page_id", "event_date"),
    (
        registry.Aggregate("clicks", "count"),
        registry.Aggregate("first_click", "min", "event_time"),
        registry.Aggregate("last_click", "max", "event_time"),
    ),
    rules=(
        at_least("last_click", "first_click", ERROR, "A day's last click is not before its first."),
    ),
    description="Clicks per page and day (a test's toy view).",
)


@pytest.fixture()
def toy_catalog(monkeypatch):
    """The catalog with the toy view, and the jobs the catalog derives for it, added."""
    monkeypatch.setitem(registry.VIEWS, TOY.name, TOY)
    for job in (jobs.view_refresh(TOY), jobs.view_gate(TOY)):
        monkeypatch.setitem(registry.JOBS, job.name, job)


def test_the_toy_view_gets_its_dag_from_the_entry(toy_catalog, airflow_db):
    from airflow.models import DagBag

    bag = DagBag(str(DAGS_DIR / "lake.py"))
    assert not bag.import_errors, bag.import_errors
    dag = bag.dags[f"view_{TOY.name}"]
    refresh, gate = dag.get_task(f"view_{TOY.name}"), dag.get_task(f"quality_{TOY.name}")
    assert refresh.downstream_task_ids == {gate.task_id}
    assert {a.name for a in gate.outlets} == {TOY.name, "dq_results"}
    assert [a.name for a in dag.timetable.asset_condition.objects] == ["silver_page_clicks"]
    assert dag.params.get_param("mode").value == "incremental"


def test_the_toy_view_gets_its_suite_with_its_own_rule(toy_catalog):
    names = [r.name for r in rules.suite_rules(TOY.name)]
    assert names[:2] == [
        "expect_column_values_to_not_be_null(column=page_id)",
        "expect_column_values_to_not_be_null(column=event_date)",
    ]
    assert "expect_compound_columns_to_be_unique(column_list=[page_id, event_date])" in names
    assert (
        "expect_column_sum_to_be_between(column=clicks, min_value=$source_rows, max_value=$source_rows)"
        in names
    )
    own = (
        "expect_column_pair_values_a_to_be_greater_than_b(column_A=last_click, "
        "column_B=first_click, or_equal=true)"
    )
    assert names[-1] == own
    suite = project.suite_json(TOY.name)
    assert suite["expectations"][-1]["meta"] == {"severity": ERROR, "expectation": own}
    assert suite["expectations"][-1]["description"] == TOY.rules[0].description
