"""The committed GX project is exactly what the generator writes, and GX reads it."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys

from adlake.quality import project, rules
from adlake.quality.project import PROJECT_DIR, drift, project_files, write_project


def _generated(root) -> set[str]:
    return {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != "README.md"
    }


def test_the_committed_project_is_what_the_generator_writes(tmp_path):
    write_project(tmp_path)
    assert _generated(PROJECT_DIR) == _generated(tmp_path)
    match, mismatch, errors = filecmp.cmpfiles(
        PROJECT_DIR, tmp_path, sorted(_generated(tmp_path)), shallow=False
    )
    assert (mismatch, errors) == ([], []), (
        "expectations/ drifted: run python -m adlake.quality.generate"
    )
    assert drift(PROJECT_DIR) == []


def test_generation_does_not_depend_on_the_process(tmp_path):
    # Another interpreter, another hash seed: the same bytes.
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "adlake.quality.generate", "--dir", str(tmp_path)],
        check=True,
        env=env,
        capture_output=True,
    )
    assert all(
        (tmp_path / rel).read_text(encoding="utf-8") == text
        for rel, text in project_files().items()
    )


def test_drift_names_changed_missing_and_stale_files(tmp_path):
    write_project(tmp_path)
    (tmp_path / "expectations" / "page_traffic.json").write_text("{}\n")
    (tmp_path / "checkpoints" / "surge_history.json").unlink()
    (tmp_path / "checkpoints" / "dropped_table.json").write_text("{}\n")
    assert drift(tmp_path) == [
        "missing checkpoints/surge_history.json",
        "stale checkpoints/dropped_table.json",
        "changed expectations/page_traffic.json",
    ]
    from adlake.quality import generate

    assert generate.main(["--check", "--dir", str(tmp_path)]) == 1
    write_project(tmp_path)
    assert drift(tmp_path) == [] and generate.main(["--check", "--dir", str(tmp_path)]) == 0


def test_great_expectations_reads_every_suite_with_our_severities(tmp_path):
    import great_expectations as gx

    root = tmp_path / "project"
    shutil.copytree(PROJECT_DIR, root)
    context = gx.get_context(
        mode="file",
        context_root_dir=root,
        runtime_environment={project.RUNTIME_VARIABLE: str(tmp_path / "rt")},
    )
    assert context.variables.analytics_enabled is False
    site = context.variables.data_docs_sites[project.DATA_DOCS_SITE]
    assert site["site_index_builder"]["validation_results_limit"] == project.DATA_DOCS_INDEX_LIMIT
    for name in rules.SUITES:
        suite = context.suites.get(name)
        expected = rules.suite_rules(name)
        assert [e.expectation_type for e in suite.expectations] == [r.type for r in expected]
        assert [(e.meta["severity"], e.severity.value) for e in suite.expectations] == [
            (r.severity, project.GX_SEVERITY[r.severity]) for r in expected
        ]
    # GX's uncommitted/ goes under the runtime directory, never into the project.
    base = context.stores["validation_results_store"].store_backend.full_base_directory
    assert str(base).startswith(str(tmp_path / "rt"))
    assert _generated(root) == _generated(PROJECT_DIR)


def test_checkpoints_validate_their_own_suite_and_update_data_docs():
    for name in rules.SUITES:
        checkpoint = json.loads((PROJECT_DIR / "checkpoints" / f"{name}.json").read_text())
        assert [v["name"] for v in checkpoint["validation_definitions"]] == [name]
        assert [a["type"] for a in checkpoint["actions"]] == ["update_data_docs"]
        definition = json.loads(
            (PROJECT_DIR / "validation_definitions" / f"{name}.json").read_text()
        )
        assert definition["suite"]["name"] == name
        assert definition["data"]["asset"]["name"] == name
