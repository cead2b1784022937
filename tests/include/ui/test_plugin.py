"""Airflow finds the plugin through the installed package's ``airflow.plugins`` entry point: its
FastAPI app and both navigation entries (``airflow plugins``, as the api-server loads it), with
nothing of Adlake's in the plugins folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_airflow_lists_the_plugin_with_its_app_and_both_pages():
    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    env = {**os.environ, "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins")}
    done = subprocess.run(
        [airflow, "plugins", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plugins = {p["name"]: p for p in json.loads(done.stdout)}
    plugin = plugins["adlake_ui"]
    assert plugin["source"].startswith("adlake=="), plugin["source"]  # the entry point, not a file
    assert plugin["fastapi_apps"] == [
        {"app": "fastapi.applications.FastAPI", "url_prefix": "/adlake", "name": "adlake"}
    ]
    # the command prints every value as text
    assert [
        (v["name"], v["href"], v["destination"], v["url_route"], v["nav_top_level"])
        for v in plugin["external_views"]
    ] == [
        ("Streaming apps", "adlake/apps/", "nav", "streaming-apps", "True"),
        ("Data quality", "adlake/quality/", "nav", "data-quality", "True"),
    ]


def test_the_pages_load_nothing_from_elsewhere():
    """No CDN, no build: every script and style the pages use is a file of the package."""
    import re

    from adlake.ui.deps import STATIC_DIR

    files = sorted(p.name for p in STATIC_DIR.iterdir())
    assert files == [
        "adlake.css",
        "adlake.js",
        "apps.html",
        "apps.js",
        "quality.html",
        "quality.js",
    ]
    for name in files:
        text = (STATIC_DIR / name).read_text()
        assert not re.search(
            r"""(src|href)=["'](https?:)?//|url\(["']?(https?:)?//|import\s""", text
        ), name
        for ref in re.findall(r"""(?:src|href)="\.\./static/([^"]+)\"""", text):
            assert ref in files, (name, ref)
