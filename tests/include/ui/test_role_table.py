"""Every route the plugin mounts × every kind of user, against an explicit table of the status
each gets: no session, a session without a role, each of ``SimpleAuthManager``'s roles, and a
``USER`` the deny list refuses the DAGs of the app and of the Data Docs page asked for. The rows
are checked against the routes of the app itself, so a route added without a row fails here.

One app, one site and one deny list for the module: the whole table is a few seconds."""

from __future__ import annotations

import time

import pytest
from starlette.routing import Mount

from adlake.local.versions import DATA_DOCS_NPM
from tests.include.quality.test_history import at, store
from tests.include.ui.conftest import jwt_for
from tests.support.data_docs import PAGE, write_site

# Who asks: (user name, role); anonymous has no session at all, "no role" a valid one.
USERS = {
    "anonymous": None,
    "no role": ("nobody", None),
    "viewer": ("viewer", "VIEWER"),
    "user": ("user", "USER"),
    "op": ("op", "OP"),
    "admin": ("admin", "ADMIN"),
    "denied": ("analyst", "USER"),
}
# The deny list: the analyst may not touch click_surge's DAG, nor lake_hourly, whose run PAGE is.
DENIED = {"analyst": ["app_click_surge", "lake_hourly"]}

JQUERY = f"jquery@{DATA_DOCS_NPM['jquery'][0]}/dist/jquery.min.js"
# Each route (as the app declares it) and the URL asked of it ({token}: a Data Docs link signed
# for the user of the column; anonymous has none, so a made-up one).
URLS = {
    "GET /": "/adlake/",
    "GET /static/{name}": "/adlake/static/apps.js",
    "GET /apps/": "/adlake/apps/",
    "GET /apps/api/status": "/adlake/apps/api/status",
    "GET /apps/api/status/{app}": "/adlake/apps/api/status/click_surge",
    "GET /quality/": "/adlake/quality/",
    "GET /quality/api/summary": "/adlake/quality/api/summary",
    "GET /data-docs/{path:path}": f"/adlake/data-docs/{PAGE}",
    "GET /data-docs-signed/{token}/{path:path}": f"/adlake/data-docs-signed/{{token}}/{PAGE}",
    "GET /data-docs-assets/{path:path}": f"/adlake/data-docs-assets/{JQUERY}",
}

# fmt: off
EXPECTED = {
    # route                                      anonymous  no role  viewer  user  op   admin  denied
    "GET /":                                     (401,      403,     307,    307,  307, 307,   307),
    "GET /static/{name}":                        (401,      403,     200,    200,  200, 200,   200),
    "GET /apps/":                                (401,      403,     200,    200,  200, 200,   200),
    "GET /apps/api/status":                      (401,      403,     200,    200,  200, 200,   200),
    "GET /apps/api/status/{app}":                (401,      403,     200,    200,  200, 200,   403),
    "GET /quality/":                             (401,      403,     200,    200,  200, 200,   200),
    "GET /quality/api/summary":                  (401,      403,     200,    200,  200, 200,   200),
    "GET /data-docs/{path:path}":                (401,      403,     307,    307,  307, 307,   403),
    "GET /data-docs-signed/{token}/{path:path}": (403,      403,     200,    200,  200, 200,   403),
    "GET /data-docs-assets/{path:path}":         (200,      200,     200,    200,  200, 200,   200),
}
# fmt: on
# What each role may do with an app it sees (the JSON's can_act; the buttons' requests go to
# Airflow's trigger route, which asks the same question: test_actions).
CAN_ACT = {"viewer": False, "user": True, "op": True, "admin": True, "denied": True}


def mounted_routes(app) -> set[str]:
    """``"<method> <path>"`` of every route of ``app``, those of its mounted sub-apps too."""
    found = set()
    for route in app.routes:
        if isinstance(route, Mount):
            for inner in mounted_routes(route.app):
                method, path = inner.split(" ", 1)
                found.add(f"{method} {route.path}{path}")
        else:
            found |= {f"{m} {route.path}" for m in sorted(route.methods - {"HEAD"})}
    return found


@pytest.fixture(scope="module")
def lake(settings, tmp_path_factory):
    """A runtime with GX's Data Docs site (PAGE: page_traffic's run of lake_hourly), a stored
    result, a vendored asset and the deny list, for the whole table."""
    from adlake.ui import data_docs

    runtime = settings.with_overrides(runtime_dir=tmp_path_factory.mktemp("table") / "runtime")
    write_site(runtime)
    store(runtime, "page_traffic", "lake_hourly__r13", at(13), [])
    assets = tmp_path_factory.mktemp("assets")
    (assets / JQUERY).parent.mkdir(parents=True)
    (assets / JQUERY).write_text("/*! jQuery */")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(data_docs, "ASSETS_DIR", assets)
        yield runtime


@pytest.fixture(scope="module")
def app(lake, auth_manager):
    from adlake.ui import create_app

    return create_app(lake)


@pytest.fixture(scope="module")
def denied(auth_manager):
    import json

    auth_manager.denied_dags_file.write_text(json.dumps(DENIED))
    yield
    auth_manager.denied_dags_file.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def table_client(app, denied):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from adlake.ui import URL_PREFIX

    root = FastAPI()
    root.mount(URL_PREFIX, app)
    with TestClient(root) as client:
        yield client


@pytest.fixture(scope="module")
def sessions(auth_manager) -> dict[str, tuple[str | None, str]]:
    """Per column: its session token (None: anonymous) and a Data Docs link signed for it."""
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from adlake.ui.access import user_subject
    from adlake.ui.data_docs import LINK_LIFETIME_S, sign

    out = {}
    for column, who in USERS.items():
        if who is None:
            out[column] = (None, "1.not-a-user.not-a-signature")
            continue
        name, role = who
        user = SimpleAuthManagerUser(username=name, role=role)
        link = sign(int(time.time()) + LINK_LIFETIME_S, user_subject(user))
        out[column] = (jwt_for(auth_manager, name, role), link)
    return out


def test_every_route_the_plugin_mounts_has_a_row(app, lake):
    assert mounted_routes(app) == set(EXPECTED) == set(URLS)
    # a route added to the app, or to a mounted one, is seen (and would need its row)
    from adlake.ui import create_app

    grown = create_app(lake)
    grown.add_api_route("/new", lambda: None, methods=["POST"])
    (assets,) = (r for r in grown.routes if getattr(r, "path", "") == "/data-docs-assets")
    assets.app.add_api_route("/also-new", lambda: None)
    assert mounted_routes(grown) - mounted_routes(app) == {
        "POST /new",
        "GET /data-docs-assets/also-new",
    }


@pytest.mark.parametrize("column", list(USERS))
@pytest.mark.parametrize("route", list(EXPECTED))
def test_the_status_of_each_route_for_each_kind_of_user(table_client, sessions, route, column):
    jwt, link = sessions[column]
    table_client.cookies.clear()
    if jwt is not None:
        table_client.cookies.set("_token", jwt)
    url = URLS[route].replace("{token}", link)
    response = table_client.get(url, follow_redirects=False)
    expected = EXPECTED[route][list(USERS).index(column)]
    assert response.status_code == expected, (route, column, response.text[:300])
    if response.status_code >= 400:
        # a refusal shows nothing of the page, the app or the table
        for secret in ("never be null", "argv", "lake_hourly__r13", "jQuery"):
            assert secret not in response.text, (route, column, secret)


@pytest.mark.parametrize("column", list(CAN_ACT))
def test_the_apps_each_kind_of_user_sees_and_may_act_on(table_client, sessions, column):
    table_client.cookies.clear()
    table_client.cookies.set("_token", sessions[column][0])
    apps = table_client.get("/adlake/apps/api/status").json()["apps"]
    shown = {a["app"]: a["can_act"] for a in apps}
    if column == "denied":
        assert shown == {"attribution": True}
    else:
        assert shown == {"attribution": CAN_ACT[column], "click_surge": CAN_ACT[column]}
