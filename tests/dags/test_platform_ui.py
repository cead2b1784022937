"""The platform as a new user meets it: ``make up``'s code (``adlake.local.platform.up``) starts the
broker and Airflow's four processes on a runtime of this test's own, then a real browser
(headless Chromium) signs in through Airflow's login form and opens the plugin's pages from the
navigation; at the end ``down`` stops everything and leaves no process behind. Both commands are
idempotent: a second ``up`` finds everything running and starts nothing, a second ``down`` has
nothing to do.

Who sees what: an admin, a viewer and a user refused one app's DAG by the deny list (users of
``ADLAKE_AIRFLOW_USERS``) open the Streaming apps page, each seeing only what Airflow lets them.

On call, in the browser: click-surge started (running, its last progress fresh), restarted (a new
pid, running again) and stopped with the page's buttons, each a DAG run the real scheduler
executes; then (``make test-e2e``) a view's DAG triggered from Airflow's trigger form with a
changed ``mode``, its run followed to success. Screenshots of every step go to the runtime's ``reports/ui/``. Then a
backfill of one hour of ``lake_hourly`` created as the docs say (``make airflow ARGS="backfill
create ..."``) and run by the same scheduler. No scheduled run is made (``USE_JOB_SCHEDULE``
off): only what a person triggers runs; attribution is not started (a JVM each; the lifecycle
through Airflow is ``test_app_lifecycle_dags.py``, the exhaustive backfills ``test_backfill.py``,
both in ``make test-e2e``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request

import pytest

from adlake import apps, registry
from adlake.airflow import factory
from adlake.airflow.auth import denied_dags_path
from adlake.config import REPO_ROOT
from adlake.local import credentials, platform
from adlake.local.kafka import free_port
from adlake.maintenance import SHOWN, write_latest
from adlake.ui.apps import buttons
from tests.conftest import private_settings
from tests.dags.conftest import task_env
from tests.support.airflow_daemons import wait_for
from tests.support.browser import browser, sign_in
from tests.support.data_docs import write_site

pytestmark = pytest.mark.integration

# A running app's last progress is at most this old (batches of 5 s here, the page polls).
FRESH_S = 15
# Users besides the admin (ADLAKE_AIRFLOW_USERS); the deny list refuses the analyst attribution's
# DAG and a view's DAG.
USERS = (("viewer", "VIEWER"), ("analyst", "USER"))
DENIED = {"analyst": ["app_attribution", "view_page_clicks_hourly"]}


def quietly(call, *args, **kwargs) -> str:
    """What ``call`` printed (the platform's progress lines)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call(*args, **kwargs)
    return out.getvalue()


def platform_pids(settings) -> dict[str, int | None]:
    return {c: platform.running_pid(settings, c) for c in platform.AIRFLOW_COMPONENTS}


@pytest.fixture(scope="module")
def running(tmp_path_factory, lake_engine):
    """The platform up (no apps) on free ports; down at the end, checked to leave nothing. Its
    lake tasks are sessions of the test run's shared engine (started first: ``up`` would
    otherwise start one of its own on the run's engine port)."""
    settings = private_settings(tmp_path_factory.mktemp("platform") / "rt").with_overrides(
        airflow_users=USERS
    )
    env = {
        **task_env(settings),
        "AIRFLOW__API__PORT": str(free_port()),
        "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "false",
        # Real-Time Mode batches of 5 s: a restart or stop drains within seconds.
        "ADLAKE_APP_RTM_INTERVAL_S": "5",
    }
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
    # Shown once, when generated: later starts say where it is kept, not what it is.
    assert password not in second and str(credentials.passwords_path(settings)) in second
    assert platform_pids(settings) == pids
    # Every DAG unpaused by up (one CLI call for them all).
    dags = api(settings, "/dags?limit=100")["dags"]
    assert {d["dag_id"] for d in dags} == factory.expected_dag_ids()
    assert not [d["dag_id"] for d in dags if d["is_paused"]]


def test_plugin_routes_refuse_a_request_without_a_session(running):
    for path in (
        "/adlake/apps/",
        "/adlake/apps/api/status",
        "/adlake/quality/",
        "/api/v2/dags",
        "/api/v2/dags/app_click_surge/dagRuns",
    ):
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

        # A table maintenance run as lake_maintenance records it, for its section of the page.
        run = {"dag_id": "lake_maintenance", "run_id": "manual__ui", "finished_at": "2026-11-26"}
        figures = dict.fromkeys(SHOWN, 1) | {"table": "page_traffic", "bytes_removed": 2_500_000}
        write_latest(settings, {**run, "retention_hours": 168}, [figures])
        write_site(settings)  # GX's Data Docs: its index and one validation's page
        page.get_by_role("link", name="Data quality").first.click()
        quality = page.frame_locator("iframe")
        for table in (t.name for t in registry.TABLES.values() if t.layer == "gold"):
            quality.get_by_text(table, exact=True).first.wait_for(timeout=60_000)
        maintained = quality.locator("#maintenance tbody tr")
        maintained.first.wait_for(timeout=60_000)
        assert maintained.first.locator("td").nth(3).inner_text() == "2.5 MB"
        page.screenshot(path=str(tmp_path / "data-quality.png"))
        maintained.first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "data-quality-maintenance.png"))

        # Data Docs from the page, in the same frame: its index, then a validation's page by
        # the index's row link (GX's script navigates). Sandboxed in an opaque origin, styled by
        # the vendored copies, nothing requested from elsewhere (the network here is closed: a
        # CDN's stylesheet would leave the page plain).
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        quality.locator("#docs").click()
        docs = page.frame_locator("iframe")

        def docs_frame():
            frame = next(f for f in page.frames if "/adlake/data-docs" in f.url)
            frame.wait_for_load_state("networkidle")
            return frame

        docs.locator(".ge-index-page-site-name-title").wait_for(timeout=60_000)
        frame = docs_frame()
        page.screenshot(path=str(tmp_path / "data-docs-index.png"))
        assert frame.evaluate("origin") == "null"  # not Airflow's: no session, no parent
        alert = "getComputedStyle(document.querySelector('.alert-secondary')).backgroundColor"
        assert frame.evaluate(alert) == "rgb(226, 227, 229)"  # Bootstrap's .alert-secondary
        docs.locator("tr.clickable-row").first.click()  # bootstrap-table's row, jQuery's click
        docs.get_by_text("values must never be null").first.wait_for(timeout=60_000)
        frame = docs_frame()
        page.screenshot(path=str(tmp_path / "data-docs-validation.png"))
        assert frame.url.endswith("adlake_spark-page_traffic.html")
        icons = "[...document.fonts].filter(f => f.status === 'loaded').map(f => f.family)"
        assert any("Font Awesome" in family for family in frame.evaluate(icons))
        assert [url for url in requested if not url.startswith(base)] == []
    print(f"\nscreenshots: {tmp_path}")


def test_each_user_sees_and_does_what_their_role_and_dags_allow(running):
    """The admin sees both apps with their buttons; a viewer sees both, every button disabled,
    and Airflow refuses the button's request; the analyst, a user refused ``app_attribution``
    and a view's DAG by the deny list, sees click_surge only, its buttons enabled, while
    attribution's status and trigger routes, the view's Data Docs and its quality row are
    refused or left out. Apps stopped, so a start button is enabled for whoever may act."""
    settings, first = running
    denied_dags_path(settings).write_text(json.dumps(DENIED))
    shots = screenshots_dir(settings)
    base = platform.airflow_url()
    # attribution's start button's request (never run: refused to both)
    start = buttons("attribution", apps.app_status(settings, "attribution"))[0]["body"]

    def status(page, method: str, path: str, body: dict | None = None) -> int:
        """What the page's own session gets for ``method path`` (fetch, as the page's JS)."""
        return page.evaluate(
            """async ([method, url, body]) => (await fetch(url, {method,
                 credentials: "same-origin", headers: {"Content-Type": "application/json"},
                 body: body && JSON.stringify(body)})).status""",
            [method, base + path, body],
        )

    with browser() as chromium:

        def apps_page(user: str, password: str):
            page = chromium.new_page(viewport={"width": 1400, "height": 1000})
            sign_in(page, base, user, password)
            page.get_by_role("link", name="Streaming apps").first.click()
            frame = page.frame_locator("iframe")
            frame.locator("#app-click_surge button[data-action=start]").wait_for(timeout=60_000)
            return page, frame

        page, frame = apps_page(platform.ADMIN, platform.admin_password(settings))
        for app in ("attribution", "click_surge"):
            assert frame.locator(f"#app-{app} button[data-action=start]").is_enabled()
        page.screenshot(path=str(shots / "access-admin-apps.png"), full_page=True)

        name, _ = USERS[0]
        password = credentials.user_password(settings, name)
        assert f"password of Airflow user {name}: {password}" in first  # shown once, by up
        page, frame = apps_page(name, password)
        for app in ("attribution", "click_surge"):
            card = frame.locator(f"#app-{app}")
            assert card.locator("[data-view-only]").count() == 1
            assert card.locator("button[data-action]").count() == 4
            assert card.locator("button[data-action]:enabled").count() == 0
        page.screenshot(path=str(shots / "access-viewer-apps.png"), full_page=True)
        refused = status(page, "POST", "/api/v2/dags/app_attribution/dagRuns", start)
        assert refused == 403

        name, _ = USERS[1]
        page, frame = apps_page(name, credentials.user_password(settings, name))
        assert frame.locator("#app-click_surge button[data-action=start]").is_enabled()
        assert frame.locator("section.card").count() == 1
        assert "attribution" not in frame.locator("#apps").inner_text()
        page.screenshot(path=str(shots / "access-analyst-apps.png"), full_page=True)
        assert status(page, "GET", "/adlake/apps/api/status/attribution") == 403
        assert status(page, "GET", "/adlake/apps/api/status/click_surge") == 200
        refused = status(page, "POST", "/api/v2/dags/app_attribution/dagRuns", start)
        assert refused == 403
        assert status(page, "GET", "/api/v2/dags/app_attribution") == 403
        docs = "/adlake/data-docs/expectations/page_clicks_hourly.html"
        assert status(page, "GET", docs) == 403
        page.get_by_role("link", name="Data quality").first.click()
        quality = page.frame_locator("iframe")
        quality.get_by_text("campaign_delivery", exact=True).first.wait_for(timeout=60_000)
        assert quality.get_by_text("page_clicks_hourly", exact=True).count() == 0
        page.screenshot(path=str(shots / "access-analyst-quality.png"), full_page=True)
    print(f"\nscreenshots: {shots}")


def test_on_call_starts_restarts_and_stops_an_app_from_the_page(running):
    """Each button is a run of ``app_click_surge`` through Airflow's REST API with the signed-in
    session; the card shows the run until it ends, then the app's new state."""
    settings, _ = running
    app = "click_surge"
    shots = screenshots_dir(settings)
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

        # Running and making progress: the card's last progress is younger than two Real-Time
        # Mode batches (5 s here), as the page refreshes.
        def progress_is_fresh() -> bool:
            age = card.get_attribute("data-progress-age")
            return bool(age) and 0 <= int(age) <= FRESH_S

        wait_for(progress_is_fresh, 120, "a fresh progress age", card.inner_text)
        # At a glance: the Kafka lag of the last boundary's progress (offsets, no traffic here:
        # 0), the rates, and the latency against Real-Time Mode's target.
        lag = card.locator('[data-vital="lag"] .vital-value')
        wait_for(lambda: lag.inner_text().isdigit(), 60, "the lag vital", card.inner_text)
        status = apps.app_status(settings, app)["status"]
        assert int(lag.inner_text()) == status["input_lag"]["max_offsets"] == 0, status
        assert "target 1 s" in card.locator('[data-vital="latency"]').inner_text()
        page.screenshot(path=str(shots / "2b-progress.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})  # a laptop's screen
        page.screenshot(path=str(shots / "2c-laptop.png"))
        card.locator("details summary").click()
        card.get_by_text("per-batch bound", exact=True).wait_for()
        page.screenshot(path=str(shots / "2d-details.png"), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 1400})
        press("restart", "running", "3-restarted")
        second = apps.holder(settings, app)
        assert second is not None and second.pid != first.pid
        assert str(second.pid) in card.inner_text()
        press("stop", "stopped", "4-stopped")
        assert apps.holder(settings, app) is None
    runs = [
        r
        for r in dag_runs(settings, f"app_{app}")
        if "Streaming apps page" in (r.get("note") or "")
    ]
    assert [(r["conf"]["action"], r["state"]) for r in runs] == [
        ("start", "success"),
        ("restart", "success"),
        ("stop", "success"),
    ]
    print(f"\nscreenshots: {shots}")


@pytest.mark.e2e  # a view's DAG through Airflow: test_lake_dag_run.py, in make test
def test_a_lake_dag_triggered_from_its_form_with_a_changed_param_succeeds(running, spark):
    """A view's DAG triggered by hand from Airflow's trigger form, its ``mode`` changed from
    ``incremental`` to ``full-refresh``: the run (the refresh's spark-submit, then the view's
    quality gate, both real) succeeds, the task ran with ``--mode full-refresh``, and the view
    holds its source's clicks. The source is a few silver rows written here (the lake chain
    through Airflow is ``test_lake_dag_run.py``)."""
    from pyspark.sql import functions as F

    from spark_apps.lake.tables import ensure_table

    settings, _ = running
    view = registry.view("page_clicks_hourly")
    dag_id = f"view_{view.name}"
    source = registry.table(view.source)
    t = dt.datetime(2026, 11, 21, 10, 5)
    clicks = [
        {
            "click_id": f"k{i}",
            "page_id": f"p{i % 3}",
            "user_id": f"u{i % 4}",
            "event_time": t + dt.timedelta(minutes=7 * i),
            "event_date": t.date(),
        }
        for i in range(12)
    ]
    schema = source.schema.spark()
    (
        spark.createDataFrame([tuple(c.get(n) for n in schema.names) for c in clicks], schema)
        .write.format("delta")
        .mode("append")
        .save(ensure_table(spark, settings, source))
    )
    shots = screenshots_dir(settings)
    base = platform.airflow_url()
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        sign_in(page, base, platform.ADMIN, platform.admin_password(settings))
        page.goto(f"{base}/dags/{dag_id}", wait_until="networkidle")
        page.get_by_role("button", name="Trigger").first.click()
        form = page.get_by_role("dialog")
        form.get_by_label("mode").click()
        page.get_by_role("option", name="full-refresh", exact=True).click()
        page.screenshot(path=str(shots / "5-trigger-form.png"))
        form.get_by_role("button", name="Trigger").click()
        page.wait_for_url(f"{base}/dags/{dag_id}/runs/**", timeout=60_000)
        run_id = urllib.parse.unquote(page.url.rsplit("/runs/", 1)[1])
        badge = page.locator('[data-testid="state-badge"]').first

        def settled() -> str | None:
            state = badge.inner_text(timeout=30_000).strip().lower()
            if state in ("success", "failed"):
                return state
            page.reload(wait_until="networkidle")  # whether or not the page refreshes itself
            return None

        state = wait_for(
            settled,
            600,
            f"{dag_id} run {run_id} ends",
            lambda: json.dumps(dag_runs(settings, dag_id), indent=1),
        )
        page.screenshot(path=str(shots / "6-lake-run.png"), full_page=True)
        assert state == "success"

        # The view's freshness on the Data quality page: its newest hour (11:00 on the 21st,
        # days ago), red past the hour grain's bound; a gold table never built is red too.
        page.goto(f"{base}/plugin/data-quality", wait_until="networkidle")
        quality = page.frame_locator("iframe")
        fresh = quality.locator("tr", has_text=view.name).locator("td[data-fresh]")
        fresh.wait_for(timeout=60_000)
        assert fresh.get_attribute("data-fresh") == "late"
        assert "2026-11-21 11:00:00Z" in fresh.inner_text() and "behind" in fresh.inner_text()
        never = quality.locator("tr", has_text="attribution_reconciliation").locator(
            "td[data-fresh]"
        )
        assert "never built" in never.inner_text()
        page.screenshot(path=str(shots / "7-freshness.png"), full_page=True)
    (run,) = [r for r in dag_runs(settings, dag_id) if r["dag_run_id"] == run_id]
    assert (run["state"], run["conf"]["mode"], run["run_type"]) == (
        "success",
        "full-refresh",
        "manual",
    )
    args = api(
        settings, f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{dag_id}"
    )["rendered_fields"]["application_args"]
    assert args[args.index("--mode") + 1] == "full-refresh"
    shown = spark.read.format("delta").load(str(settings.table_path(view.name)))
    assert shown.agg(F.sum("clicks")).first()[0] == len(clicks)
    assert shown.count() == len({(c["page_id"], c["event_time"].replace(minute=0)) for c in clicks})


def test_a_backfill_of_a_day_runs_the_daily_chain_once_through_the_scheduler(running, spark):
    """``make airflow ARGS="backfill create --dag-id lake_daily ..."`` over one day, as the runbook
    says, run by the platform's scheduler: one run of type ``backfill`` whose interval is that
    day, every task a real spark-submit or verdict that succeeded (the day is past, so it is
    final at once), each gold table written by at most one commit (the day computed once, not
    once per hour), and the day of ``page_traffic`` rebuilt from the silver clicks written here
    (the broker's topics are empty: bronze and silver find nothing new)."""
    from pyspark.sql import functions as F

    from spark_apps.lake.tables import ensure_table, read_table, table_path

    settings, _ = running
    day = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    source = registry.table("silver_page_clicks")
    clicks = [
        (f"b{i}", f"p{i % 2}", day + dt.timedelta(hours=5 * i, minutes=9), f"u{i}")
        for i in range(5)
    ]
    schema = source.schema.spark()
    rows = [
        tuple(
            {
                "click_id": c[0],
                "page_id": c[1],
                "event_time": c[2],
                "user_id": c[3],
                "event_date": day.date(),
                "offset": n,
            }.get(name)
            for name in schema.names
        )
        for n, c in enumerate(clicks)
    ]
    (
        spark.createDataFrame(rows, schema)
        .write.format("delta")
        .mode("append")
        .save(ensure_table(spark, settings, source))
    )
    gold_tables = [t.name for t in registry.TABLES.values() if t.layer == "gold"]

    def commits() -> dict[str, int]:
        for name in gold_tables:
            ensure_table(spark, settings, registry.table(name))
        return {
            name: spark.sql(f"DESCRIBE HISTORY delta.`{table_path(settings, name)}`").count()
            for name in gold_tables
        }

    before = commits()
    # The logical dates of the runs, both included: one day, one run.
    args = (
        f"backfill create --dag-id {factory.DAILY_DAG_ID} --from-date {day.date()} "
        f"--to-date {day.date()} --max-active-runs 1"
    )
    done = subprocess.run(
        ["make", "--no-print-directory", "airflow", f"ARGS={args}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    def finished() -> list[dict] | None:
        runs = [r for r in dag_runs(settings, factory.DAILY_DAG_ID) if r["run_type"] == "backfill"]
        return runs if runs and all(r["state"] in ("success", "failed") for r in runs) else None

    runs = wait_for(
        finished,
        900,
        "the backfill's run ends",
        lambda: json.dumps(dag_runs(settings, factory.DAILY_DAG_ID), indent=1),
    )
    (run,) = runs
    run_id = urllib.parse.quote(run["dag_run_id"])
    instances = api(settings, f"/dags/{factory.DAILY_DAG_ID}/dagRuns/{run_id}/taskInstances")
    states = {ti["task_id"]: ti["state"] for ti in instances["task_instances"]}
    assert run["state"] == "success", states
    assert states == dict.fromkeys(
        [
            "day_final",
            "bronze",
            "silver",
            "gold_daily",
            "quality_gold_daily",
            *(f"quality_{t}" for t in gold_tables),
        ],
        "success",
    )
    interval = (run["data_interval_start"], run["data_interval_end"])
    assert tuple(dt.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in interval) == (
        day,
        day + dt.timedelta(days=1),
    )
    after = commits()
    written = {t: after[t] - before[t] for t in gold_tables}
    # The day computed once, not once per hour: no table written twice, and the table with
    # rows that day written once (Delta commits nothing where a slice was and stays empty).
    assert written["page_traffic"] == 1 and max(written.values()) == 1, written
    traffic = read_table(spark, settings, "page_traffic").where(F.col("event_date") == day.date())
    assert traffic.agg(F.sum("clicks")).first()[0] == len(clicks)


def screenshots_dir(settings):
    """Where the browser tests' screenshots go: the runtime's ``reports/ui/``."""
    shots = settings.runtime_dir / "reports" / "ui"
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def api(settings, path: str) -> dict:
    """GET ``/api/v2{path}`` of Airflow's REST API with a token for the admin user."""
    base = platform.airflow_url()
    login = urllib.request.Request(
        f"{base}/auth/token",
        method="POST",
        headers={"Content-Type": "application/json"},
        data=json.dumps(
            {"username": platform.ADMIN, "password": platform.admin_password(settings)}
        ).encode(),
    )
    with urllib.request.urlopen(login, timeout=30) as response:
        token = json.loads(response.read())["access_token"]
    request = urllib.request.Request(
        f"{base}/api/v2{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def dag_runs(settings, dag_id: str) -> list[dict]:
    """The DAG's runs, oldest first, from Airflow's REST API."""
    return api(settings, f"/dags/{dag_id}/dagRuns?order_by=run_after&limit=100")["dag_runs"]


def pool_tasks(settings, state: str | None = None) -> list[dict]:
    """Every task instance of the lake pool (all DAGs, all runs), ``state`` only if given."""
    query = f"pool={factory.LAKE_POOL}&limit=100" + (f"&state={state}" if state else "")
    return api(settings, f"/dags/~/dagRuns/~/taskInstances?{query}")["task_instances"]


@pytest.mark.e2e  # the order itself: test_dag_integrity.py's weights, in make test
def test_a_view_refresh_waiting_beside_lake_daily_gets_the_free_slot_first(running):
    """The lake pool closed (0 slots) while a ``lake_daily`` run of a past day and a view's
    refresh are both waiting for it, then opened to one slot: the scheduler gives it to the view
    refresh (the daily run's first Spark task outranked it under Airflow's default weights)."""
    settings, _ = running
    view = factory.view_jobs()[0].name
    platform.run_airflow(settings, "pools", "set", factory.LAKE_POOL, "0", "closed by a test")
    try:
        day = "2026-11-19T00:00:00+00:00"
        for dag_id, more in ((factory.DAILY_DAG_ID, ["--logical-date", day]), (view, [])):
            platform.run_airflow(settings, "dags", "trigger", dag_id, *more)

        def both_waiting() -> set[str] | None:
            waiting = {ti["dag_id"] for ti in pool_tasks(settings, "scheduled")}
            return waiting if {factory.DAILY_DAG_ID, view} <= waiting else None

        wait_for(both_waiting, 300, "both waiting for the pool", lambda: str(pool_tasks(settings)))
    finally:
        opened = dt.datetime.now(dt.UTC)
        platform.ensure_pool(settings)  # its configured size (1 slot)

    def since_opened(ti: dict) -> dt.datetime | None:
        start = ti["start_date"] and dt.datetime.fromisoformat(
            ti["start_date"].replace("Z", "+00:00")
        )
        return start if start and start >= opened else None

    def first_started() -> dict | None:
        started = [ti for ti in pool_tasks(settings) if since_opened(ti)]
        return min(started, key=since_opened) if started else None

    first = wait_for(first_started, 300, "a pool task starts", lambda: str(pool_tasks(settings)))
    assert (first["dag_id"], first["task_id"]) == (view, view), first

    def daily_ended() -> bool:
        runs = [r for r in dag_runs(settings, factory.DAILY_DAG_ID) if r["run_type"] == "manual"]
        return bool(runs) and all(r["state"] in ("success", "failed") for r in runs)

    wait_for(daily_ended, 900, "the daily run ends", lambda: str(pool_tasks(settings)))


def test_down_while_a_lake_task_runs_leaves_no_process_of_the_runtime(running):
    """``down`` while a lake task runs (``lake_maintenance``'s dry run, triggered as a person
    would; its job a client process of the lake engine): Airflow starts each task in a session
    of its own, which stopping the components' process groups does not reach; ``down`` stops the
    task's processes too, and nothing whose environment names this runtime's Airflow is left.
    The last test of the module: the platform is down after it."""
    from adlake.airflow.factory import MAINTENANCE_DAG_ID

    settings, _ = running
    done = platform.run_airflow(
        settings, "dags", "trigger", MAINTENANCE_DAG_ID, "--conf", '{"dry_run": true}', check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]

    def submitting() -> list[int]:
        return [
            pid
            for pid in platform.runtime_processes(settings)
            if b"submit.py" in cmdline(pid) and b"spark_apps.lake.maintenance" in cmdline(pid)
        ]

    wait_for(
        submitting,
        300,
        "the maintenance task's job process runs",
        lambda: json.dumps(dag_runs(settings, MAINTENANCE_DAG_ID), indent=1),
    )
    quietly(platform.down, settings)
    left = {
        pid: cmdline(pid).decode(errors="replace") for pid in platform.runtime_processes(settings)
    }
    assert left == {}
    assert platform_pids(settings) == dict.fromkeys(platform.AIRFLOW_COMPONENTS)


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ")
    except OSError:
        return b""


def test_down_twice_leaves_nothing(tmp_path):
    """``down`` on a runtime where nothing runs says so and does nothing else."""
    settings = private_settings(tmp_path / "rt")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRFLOW__API__PORT", str(free_port()))
        out = quietly(platform.down, settings)
    assert out.strip().splitlines() == ["[platform] platform stopped"], out
    assert platform_pids(settings) == dict.fromkeys(platform.AIRFLOW_COMPONENTS)
