"""The platform as a new user meets it: ``make up``'s code (``adlake.platform.up``) starts the
broker and Airflow's four processes on a runtime of this test's own, then a real browser
(headless Chromium) signs in through Airflow's login form and opens the plugin's pages from the
navigation; at the end ``down`` stops everything and leaves no process behind. Both commands are
idempotent: a second ``up`` finds everything running and starts nothing, a second ``down`` has
nothing to do.

On call, in the browser: click-surge started, restarted (a new pid, running again) and stopped
with the page's buttons, each a DAG run the real scheduler executes; screenshots of every step go
to the runtime's ``reports/ui/``. No scheduled run is made (``USE_JOB_SCHEDULE`` off): only what a
person triggers runs; attribution is not started (a JVM each; the lifecycle through Airflow is
``test_app_lifecycle_dags.py``).
"""

from __future__ import annotations

import contextlib
import io
import json
import urllib.error
import urllib.request

import pytest

from adlake import apps, platform, registry
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
           "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "false",
           # Real-Time Mode batches of 5 s: a restart or stop drains within seconds.
           "ADLAKE_APP_RTM_INTERVAL_S": "5"}
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
    for page in ("", "/plugin/streaming-apps", "/plugin/data-quality"):
        assert f"{platform.airflow_url()}{page}" in first
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


def test_on_call_starts_restarts_and_stops_an_app_from_the_page(running):
    """Each button is a run of ``app_click_surge`` through Airflow's REST API with the signed-in
    session; the card shows the run until it ends, then the app's new state."""
    settings, _ = running
    app = "click_surge"
    shots = settings.runtime_dir / "reports" / "ui"
    shots.mkdir(parents=True, exist_ok=True)
    base = platform.airflow_url()
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1400, "height": 1400})
        sign_in(page, base, platform.ADMIN, platform.admin_password(settings))
        page.get_by_role("link", name="Streaming apps").first.click()
        frame = page.frame_locator("iframe")
        card = frame.locator(f"#app-{app}")

        def press(action: str, then_state: str, step: str) -> None:
            card.locator(f'button[data-action="{action}"]').click()
            # the run's line appears, then ends in success; the card then shows the new state
            card.locator('span.run[data-run-state="success"]').wait_for(timeout=300_000)
            frame.locator(f'#app-{app}[data-state="{then_state}"]').wait_for(timeout=300_000)
            page.screenshot(path=str(shots / f"{step}.png"), full_page=True)

        frame.locator(f'#app-{app}[data-state="stopped"]').wait_for(timeout=60_000)
        page.screenshot(path=str(shots / "1-stopped.png"), full_page=True)
        press("start", "running", "2-started")
        first = apps.holder(settings, app)
        assert first is not None and str(first.pid) in card.inner_text()
        press("restart", "running", "3-restarted")
        second = apps.holder(settings, app)
        assert second is not None and second.pid != first.pid
        assert str(second.pid) in card.inner_text()
        press("stop", "stopped", "4-stopped")
        assert apps.holder(settings, app) is None
    runs = [r for r in dag_runs(settings, f"app_{app}")
            if "Streaming apps page" in (r.get("note") or "")]
    assert [(r["conf"]["action"], r["state"]) for r in runs] == [
        ("start", "success"), ("restart", "success"), ("stop", "success")]
    print(f"\nscreenshots: {shots}")


def dag_runs(settings, dag_id: str) -> list[dict]:
    """The DAG's runs, oldest first, from Airflow's REST API (a token for the admin user)."""
    base = platform.airflow_url()
    login = urllib.request.Request(
        f"{base}/auth/token", method="POST", headers={"Content-Type": "application/json"},
        data=json.dumps({"username": platform.ADMIN,
                         "password": platform.admin_password(settings)}).encode())
    with urllib.request.urlopen(login, timeout=30) as response:
        token = json.loads(response.read())["access_token"]
    listing = urllib.request.Request(
        f"{base}/api/v2/dags/{dag_id}/dagRuns?order_by=run_after&limit=100",
        headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(listing, timeout=30) as response:
        return json.loads(response.read())["dag_runs"]


def test_down_twice_leaves_nothing(tmp_path):
    """``down`` on a runtime where nothing runs says so and does nothing else."""
    settings = private_settings(tmp_path / "rt")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__API__PORT", str(free_port()))
        out = quietly(platform.down, settings)
    assert out.strip().splitlines() == ["[platform] platform stopped"], out
    assert platform_pids(settings) == dict.fromkeys(platform.AIRFLOW_COMPONENTS)
