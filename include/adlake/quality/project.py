"""The GX file project in ``expectations/``, generated from :mod:`adlake.quality.rules`.

GX's own layout, one suite, validation definition and checkpoint per gold table and view, all
named after it::

    expectations/great_expectations.yml
    expectations/expectations/<name>.json            the suite
    expectations/validation_definitions/<name>.json  suite + the Spark dataframe asset <name>
    expectations/checkpoints/<name>.json             the validation, then update Data Docs

Deterministic: ids are UUIDs derived from names (:func:`stable_id`), JSON is written with sorted
keys, no timestamp or version stamp is written, so regenerating gives the same bytes and a test
fails when the committed files drift from the registry and the rules.

Nothing at run time writes here. ``great_expectations.yml`` sends GX's ``uncommitted/``
(validation results, Data Docs) to ``${gx_runtime_dir}/uncommitted`` (``<runtime>/gx``, see
:func:`runtime_environment`); a quality job works on a copy of this directory
(:func:`working_copy`), to which it adds the Spark data source, because GX records a data source
in ``great_expectations.yml``.

>>> sorted(project_files())[:3]
['checkpoints/attribution_funnel.json', 'checkpoints/attribution_reconciliation.json', \
'checkpoints/campaign_daily_totals.json']
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from adlake.config import REPO_ROOT, Settings
from adlake.quality.rules import DERIVED_COLUMNS, SUITES, parameters, suite_rules

PROJECT_DIR = REPO_ROOT / "expectations"
DATASOURCE = "adlake_spark"
BATCH_DEFINITION = "whole_dataframe"
DATA_DOCS_SITE = "local_site"
# GX's own severities: ours map onto them too, so GX's result summary agrees with the task.
GX_SEVERITY = {"error": "critical", "warn": "warning"}
# SUMMARY, not COMPLETE: counts, a sample of unexpected values and whole unexpected rows, never
# every unexpected value of a large slice.
RESULT_FORMAT = {
    "result_format": "SUMMARY",
    "partial_unexpected_count": 10,
    "include_unexpected_rows": True,
}
# The Data Docs index lists the newest results only: GX reads every result it lists at each
# rebuild (after every run), so an unbounded index gets slower with every hour of history. Older
# results stay on disk, their pages too; dq_results keeps the whole history.
DATA_DOCS_INDEX_LIMIT = 500
RUNTIME_VARIABLE = "gx_runtime_dir"
MANAGED_DIRS = ("expectations", "validation_definitions", "checkpoints")
_NAMESPACE = uuid.UUID("6f1c3c52-5d6e-4b0a-9a57-8d0b1f4c2a11")  # Adlake's, fixed forever


def stable_id(*parts: str) -> str:
    """A UUID that depends on ``parts`` only.

    >>> stable_id("suite", "page_traffic") == stable_id("suite", "page_traffic")
    True
    """
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def suite_json(name: str) -> dict[str, Any]:
    """Suite ``name`` in GX's JSON form; each expectation's ``meta`` holds our severity and the
    rule's stable name (what ``dq_results`` records)."""
    expectations = []
    for rule in suite_rules(name):
        item: dict[str, Any] = {
            "id": stable_id("expectation", name, rule.name),
            "type": rule.type,
            "kwargs": dict(rule.kwargs),
            "severity": GX_SEVERITY[rule.severity],
            "meta": {"severity": rule.severity, "expectation": rule.name},
        }
        if rule.description:
            item["description"] = rule.description
        expectations.append(item)
    return {
        "id": stable_id("suite", name),
        "name": name,
        "expectations": expectations,
        "meta": {"generated_by": "python -m adlake.quality.generate"},
        "notes": _notes(name),
    }


def _notes(name: str) -> str:
    lines = [
        f"Generated from the registry and adlake/quality/rules.py; `error` expectations "
        f"fail the quality task of `{name}`, `warn` ones are recorded."
    ]
    params = parameters(name)
    if params:
        lines.append("Run-time parameters: " + ", ".join(params) + ".")
    for column, expr in DERIVED_COLUMNS.get(name, ()):
        lines.append(f"Derived before validation: {column} = {expr}.")
    return " ".join(lines)


def validation_definition_json(name: str) -> dict[str, Any]:
    return {
        "id": stable_id("validation_definition", name),
        "name": name,
        "suite": {"id": stable_id("suite", name), "name": name},
        "data": {
            "datasource": {"id": stable_id("datasource", DATASOURCE), "name": DATASOURCE},
            "asset": {"id": stable_id("asset", name), "name": name},
            "batch_definition": {
                "id": stable_id("batch_definition", name),
                "name": BATCH_DEFINITION,
            },
        },
    }


def checkpoint_json(name: str) -> dict[str, Any]:
    return {
        "id": stable_id("checkpoint", name),
        "name": name,
        "validation_definitions": [{"id": stable_id("validation_definition", name), "name": name}],
        "actions": [
            {"name": "update_data_docs", "type": "update_data_docs", "site_names": [DATA_DOCS_SITE]}
        ],
        "result_format": RESULT_FORMAT,
    }


_STORE = """\
    class_name: {cls}
    store_backend:
      class_name: TupleFilesystemStoreBackend
      suppress_store_backend_id: true
      base_directory: {base}
"""

GX_CONFIG = f"""\
# Generated by `python -m adlake.quality.generate` (adlake/quality/project.py); do not edit.
# The suites, validation definitions and checkpoints below this directory are committed. GX's
# uncommitted/ (validation results, Data Docs) goes under ${{{RUNTIME_VARIABLE}}}, the quality
# jobs' <ADLAKE_RUNTIME_DIR>/gx, given to GX as a runtime variable: never into the repository.
config_version: 4
analytics_enabled: false
progress_bars:
  globally: false
stores:
  expectations_store:
{_STORE.format(cls="ExpectationsStore", base="expectations/")}\
  validation_results_store:
{
    _STORE.format(
        cls="ValidationResultsStore", base=f"${{{RUNTIME_VARIABLE}}}/uncommitted/validations/"
    )
}\
  checkpoint_store:
{_STORE.format(cls="CheckpointStore", base="checkpoints/")}\
  validation_definition_store:
{_STORE.format(cls="ValidationDefinitionStore", base="validation_definitions/")}\
expectations_store_name: expectations_store
validation_results_store_name: validation_results_store
checkpoint_store_name: checkpoint_store
data_docs_sites:
  {DATA_DOCS_SITE}:
    class_name: SiteBuilder
    show_how_to_buttons: false
    store_backend:
      class_name: TupleFilesystemStoreBackend
      base_directory: ${{{RUNTIME_VARIABLE}}}/uncommitted/data_docs/{DATA_DOCS_SITE}/
    site_index_builder:
      class_name: DefaultSiteIndexBuilder
      validation_results_limit: {DATA_DOCS_INDEX_LIMIT}
"""


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def project_files() -> dict[str, str]:
    """Every generated file of the project: relative path → text."""
    files = {"great_expectations.yml": GX_CONFIG}
    for name in SUITES:
        files[f"expectations/{name}.json"] = _dump(suite_json(name))
        files[f"validation_definitions/{name}.json"] = _dump(validation_definition_json(name))
        files[f"checkpoints/{name}.json"] = _dump(checkpoint_json(name))
    return files


def _existing(root: Path) -> set[str]:
    """The generated-kind files under ``root`` now: the config and the managed JSON files."""
    found = {
        str(p.relative_to(root))
        for d in MANAGED_DIRS
        if (root / d).is_dir()
        for p in (root / d).glob("*.json")
    }
    if (root / "great_expectations.yml").exists():
        found.add("great_expectations.yml")
    return found


def drift(root: Path = PROJECT_DIR) -> list[str]:
    """What differs between ``root`` and a fresh generation: ``changed``, ``missing`` and
    ``stale`` (a managed file the generator no longer writes), one line per file."""
    files = project_files()
    out = [f"missing {p}" for p in sorted(set(files) - _existing(root))]
    out += [f"stale {p}" for p in sorted(_existing(root) - set(files))]
    out += [
        f"changed {p}"
        for p, text in sorted(files.items())
        if (root / p).exists() and (root / p).read_text(encoding="utf-8") != text
    ]
    return out


def write_project(root: Path = PROJECT_DIR) -> list[str]:
    """(Re)write the project under ``root``: every generated file, and stale managed files
    removed. Returns what changed (as :func:`drift` named it before)."""
    changes = drift(root)
    files = project_files()
    for stale in _existing(root) - set(files):
        (root / stale).unlink()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return changes


def runtime_environment(settings: Settings) -> dict[str, str]:
    """The variables ``great_expectations.yml`` refers to, for ``gx.get_context``."""
    return {RUNTIME_VARIABLE: str(settings.gx_dir)}


def data_docs_index(settings: Settings) -> Path:
    """The Data Docs site's front page (what the Airflow plugin serves)."""
    return settings.gx_dir / "uncommitted" / "data_docs" / DATA_DOCS_SITE / "index.html"


def working_copy(settings: Settings, source: Path = PROJECT_DIR) -> Path:
    """A private copy of the committed project under ``<runtime>/gx/work`` (the caller removes
    it): GX writes the run's data source into its ``great_expectations.yml``, and quality jobs
    of several tables run at once."""
    work = settings.gx_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix="project-", dir=work))
    shutil.copytree(
        source, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("uncommitted", "README.md")
    )
    return copy
