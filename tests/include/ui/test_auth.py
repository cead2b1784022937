"""Every kind of route (pages, static files, JSON, Data Docs) is behind Airflow's
authentication: refused without a token or with a bad one, served with the UI's cookie or a
Bearer header."""

from __future__ import annotations

import pytest

from adlake.quality.project import data_docs_index

ROUTES = [
    "/adlake/",
    "/adlake/apps/",
    "/adlake/quality/",
    "/adlake/static/adlake.js",
    "/adlake/apps/api/status",
    "/adlake/quality/api/summary",
    "/adlake/data-docs/",
    "/adlake/data-docs/index.html",
]


@pytest.fixture()
def site(runtime):
    index = data_docs_index(runtime)
    index.parent.mkdir(parents=True)
    index.write_text("<html>runs</html>")


@pytest.mark.parametrize("route", ROUTES)
def test_an_anonymous_request_is_refused(client, site, route):
    response = client.get(route, follow_redirects=False)
    assert response.status_code == 401
    assert "runs" not in response.text


@pytest.mark.parametrize("route", ROUTES)
def test_a_forged_token_is_refused(client, site, route):
    client.cookies.set("_token", "eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiJhZG1pbiJ9.forged")
    assert client.get(route, follow_redirects=False).status_code == 403
    client.cookies.clear()
    response = client.get(
        route, headers={"Authorization": "Bearer not-a-jwt"}, follow_redirects=False
    )
    assert response.status_code == 403


@pytest.mark.parametrize("route", ROUTES)
def test_the_ui_cookie_or_a_bearer_token_is_accepted(client, token, site, route):
    response = client.get(
        route, headers={"Authorization": f"Bearer {token}"}, follow_redirects=False
    )
    assert response.status_code in (200, 307), response.text
    client.cookies.set("_token", token)
    assert client.get(route, follow_redirects=False).status_code == response.status_code
