"""The platform as a new user meets it: ``make up``'s code (``adlake.platform.up``) starts the
broker and Airflow's four processes on a runtime of this test's own, then a real browser
(headless Chromium) signs in through Airflow's login form and opens the plugin's pages from the
navigation; at the end ``down`` stops everything and leaves no process behind. Both commands are
idempotent: a second ``up`` finds everything running and starts nothing, a second ``down`` has
nothing to do.

The streaming apps are not started here (a JVM each; their lifecycle through Airflow is
``test_app_lifecycle_dags.py``), and no scheduled run is made (``USE_JOB_SCHEDULE`` off): only what
a person triggers runs.
"""

from __future__ import annotations

import contextlib
import io
import urllib.error
import urllib.request

import pytest

from adlake import platform, registry
from adlake.kafka_local import free_port
from tests.conftest import private_settings
from tests.dags.conftest import task_env
from tests.support.browser import browser, sign_in

pytestmark = pytest.mark.integration


def quietly(call, *args, **kwargs) -> str:
    """What ``call`` printed (the platform's progress lines)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call(*args, **kwargs)
    return out.getvalue()


def platform_pids(settings) -> dict[str, int | None]:
    return {c: platform.running_pid(settings, c) for c in platform.AIRFLOW_COMPONENTS}


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    """The platform up (no apps) on free ports; down at the end, checked to leave nothing."""
    settings = private_settings(tmp_path_factory.mktemp("platform") / "rt")
    env = {**task_env(settings), "AIRFLOW__API__PORT": str(free_port()),
           "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "false"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        first = quietly(platform.up, settings, start_apps=False)
        try:
            yield settings, first
        finally:
            quietly(platform.down, settings)
        assert platform_pids(settings) == dict.fromkeys(platform.AIRFLOW_COMPONENTS)


def test_up_says_where_to_sign_in_and_a_second_up_starts_nothing(running):
    settings, first = running
    password = platform.admin_password(settings)
    assert f"login: {platform.ADMIN} / {password}" in first
    assert platform.airflow_url() in first
    pids = platform_pids(settings)
    assert all(pids.values()), pids
    second = quietly(platform.up, settings, start_apps=False)
    assert "Airflow is already running" in second
    assert platform_pids(settings) == pids


def test_plugin_routes_refuse_a_request_without_a_session(running):
    for path in ("/adlake/apps/", "/adlake/apps/api/status", "/adlake/quality/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{platform.airflow_url()}{path}", timeout=30)
        assert refused.value.code in (401, 403), path


def test_a_person_signs_in_and_opens_both_pages_from_the_navigation(running, tmp_path):
    settings, _ = running
    base = platform.airflow_url()
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        sign_in(page, base, platform.ADMIN, platform.admin_password(settings))

        page.get_by_role("link", name="Streaming apps").first.click()
        apps = page.frame_locator("iframe")
        for app in (a.name for a in registry.APPS.values()):
            apps.get_by_text(app, exact=True).first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "streaming-apps.png"))

        page.get_by_role("link", name="Data quality").first.click()
        quality = page.frame_locator("iframe")
        for table in (t.name for t in registry.TABLES.values() if t.layer == "gold"):
            quality.get_by_text(table, exact=True).first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "data-quality.png"))
    print(f"\nscreenshots: {tmp_path}")


def test_down_twice_leaves_nothing(tmp_path):
    """``down`` on a runtime where nothing runs says so and does nothing else."""
    settings = private_settings(tmp_path / "rt")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__API__PORT", str(free_port()))
        out = quietly(platform.down, settings)
    assert out.strip().splitlines() == ["[platform] platform stopped"], out
    assert platform_pids(settings) == dict.fromkeys(platform.AIRFLOW_COMPONENTS)
