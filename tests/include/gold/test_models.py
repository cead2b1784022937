"""The gold tables are declared once, each in its own module of ``adlake.catalog.gold``, and every layer
that lists them (the registry and its jobs, the gold job, the quality layer) takes that list."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from adlake import registry
from adlake.catalog import gold
from adlake.quality import rules
from spark_apps.lake import gold as gold_job

INCLUDE = Path(__file__).resolve().parents[3] / "include"
GOLD_DIR = INCLUDE / "adlake" / "catalog" / "gold"
# The package's modules that are not a table: its index and what the tables share.
NOT_TABLES = {"__init__", "shared"}


def gold_table_declarations(path: Path) -> list[int]:
    """Lines of ``path`` that declare a gold table: a ``Table(...)`` call with layer ``gold``
    (its second argument or ``layer=``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name != "Table":
            continue
        layer = node.args[1] if len(node.args) > 1 else None
        layer = next((k.value for k in node.keywords if k.arg == "layer"), layer)
        if isinstance(layer, ast.Constant) and layer.value == "gold":
            found.append(node.lineno)
    return found


def test_every_gold_table_is_declared_in_exactly_one_module_named_after_it():
    declared = {
        str(path.relative_to(INCLUDE)): len(lines)
        for path in sorted(INCLUDE.rglob("*.py"))
        if (lines := gold_table_declarations(path))
    }
    assert declared == {f"adlake/catalog/gold/{name}.py": 1 for name in gold.NAMES}
    modules = {p.stem for p in GOLD_DIR.glob("*.py")} - NOT_TABLES
    assert modules == set(gold.NAMES), "a module of adlake.catalog.gold missing from MODELS"
    for model in gold.MODELS:
        assert model.__name__ == f"adlake.catalog.gold.{model.TABLE.name}"
        assert model.TABLE.layer == "gold"
        assert callable(model.build)
    assert len(set(gold.NAMES)) == len(gold.NAMES)


def test_the_registry_collects_the_gold_tables_in_their_order():
    assert tuple(t for t in registry.TABLES.values() if t.layer == "gold") == gold.TABLES
    for model in gold.MODELS:
        assert registry.table(model.TABLE.name) is model.TABLE
    # The daily chain rebuilds and validates every gold table, in order; the hourly one the
    # hour tables, in the same order.
    hour_tables = tuple(m.TABLE.name for m in gold.MODELS if m.GRAIN == gold.HOUR)
    for job_name, gate_name, tables in [
        ("gold_daily", "quality_gold_daily", gold.NAMES),
        ("gold", "quality_gold", hour_tables),
    ]:
        job, gate = registry.job(job_name), registry.job(gate_name)
        assert job.writes == tables == gate.reads
        assert set(job.reads) == {s for t in tables for s in registry.table(t).sources}
        assert job.args == gate.args == ("--tables", ",".join(tables))


def test_every_gold_model_declares_its_grain_and_an_hour_tables_row_time():
    for model in gold.MODELS:
        assert model.GRAIN in gold.GRAINS, model.TABLE.name
        assert (model.ROW_TIME is not None) is (model.GRAIN == gold.HOUR), model.TABLE.name


def test_the_gold_job_rebuilds_the_gold_tables_by_default():
    args = gold_job.parse_args(["--start", "2026-11-21", "--end", "2026-11-22"])
    assert args.tables.split(",") == list(gold.NAMES)


def test_the_gold_job_refuses_a_table_that_is_not_gold(capsys):
    with pytest.raises(SystemExit):
        gold_job.parse_args(
            ["--start", "2026-11-21", "--end", "2026-11-22", "--tables", "quarantine"]
        )
    assert "gold tables: campaign_delivery, attribution_funnel" in capsys.readouterr().err


def test_the_quality_layer_takes_each_tables_rules_from_its_module():
    assert rules.GOLD_SUITES == gold.NAMES
    assert set(rules.SUITES) == {*gold.NAMES, *registry.VIEWS}
    for model in gold.MODELS:
        name = model.TABLE.name
        assert rules.business_rules(name) is model.BUSINESS_RULES
        assert rules.DERIVED_COLUMNS.get(name, ()) == model.DERIVED_COLUMNS
        assert set(model.BUSINESS_RULES) <= set(rules.suite_rules(name))


def test_model_lookup_names_the_gold_tables():
    assert gold.model("surge_history").TABLE is registry.table("surge_history")
    with pytest.raises(KeyError, match="registered gold tables: campaign_delivery, "):
        gold.model("silver_page_clicks")


def test_the_registry_imports_the_gold_modules_without_pyspark():
    """What Airflow does when it parses a DAG file: import the registry (and the rules)."""
    code = (
        "import sys, adlake.registry, adlake.quality.rules\n"
        "assert 'adlake.catalog.gold.attribution_reconciliation' in sys.modules\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'spark_apps')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
