"""GX's Data Docs in the plugin: a page runs in an opaque origin (a CSP sandbox without
``allow-same-origin``) and loads its scripts, styles and fonts from the vendored copies only;
links between its pages work without Airflow's session cookie, which an opaque origin's requests
never carry; the vendored assets are public files of the pinned packages and nothing else.

The pages are GX's own rendering (``tests.support.data_docs``), so every URL GX's templates
load is in them."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from adlake.local import versions
from tests.support.data_docs import write_site

# What each tag loads by itself (an <a> is a navigation, not a load).
LOADS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src"}


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        url = dict(attrs).get(LOADS.get(tag, ""))
        if url:
            self.urls.append(url)


def loads(html: str) -> list[str]:
    """Every URL ``html`` loads a resource from, as written."""
    parser = _Loads()
    parser.feed(html)
    return parser.urls


def off_origin(url: str) -> bool:
    return bool(urlsplit(url).scheme in ("http", "https") or url.startswith("//"))


def directives(policy: str) -> dict[str, list[str]]:
    return {
        name: values
        for name, *values in (part.split() for part in policy.split(";") if part.strip())
    }


@pytest.fixture()
def site(runtime) -> str:
    """GX's site index and one validation's page; the page's path in the site."""
    return write_site(runtime)


def test_a_data_docs_page_runs_sandboxed_away_from_airflows_origin(user, site):
    for path in ("", site, "static/images/logo-long.png"):
        response = user.get(f"/adlake/data-docs/{path}")
        assert response.status_code == 200, path
        policy = directives(response.headers["content-security-policy"])
        # allow-scripts only: an opaque origin, whatever frames or opens the page, so its script
        # reaches neither the session cookie nor the Airflow UI nor same-origin storage.
        assert policy["sandbox"] == ["allow-scripts"], path
        assert policy["default-src"] == ["'none'"] and policy["connect-src"] == ["'none'"]
        for name in ("script-src", "style-src", "img-src", "font-src"):
            assert set(policy[name]) <= {"'self'", "'unsafe-inline'", "'unsafe-eval'", "data:"}
        assert policy["frame-ancestors"] == ["'self'"] and policy["form-action"] == ["'none'"]
        assert response.headers["x-content-type-options"] == "nosniff"
        # the signed prefix of its URL never leaves in a Referer
        assert response.headers["referrer-policy"] == "no-referrer"
    assert user.get(f"/adlake/data-docs/{site}").headers["content-type"].startswith("text/html")


def test_a_page_loads_its_scripts_styles_and_fonts_from_the_vendored_copies_only(
    client, token, site
):
    from adlake.ui.data_docs import missing_assets

    assert missing_assets() == [], "not vendored: run make setup (it needs npm)"
    for path in ("", site):
        client.cookies.set("_token", token)
        page = client.get(f"/adlake/data-docs/{path}")
        urls = loads(page.text)
        assert len(urls) >= 14, urls  # GX's scripts and stylesheets, its logo and favicon
        assert [u for u in urls if off_origin(u)] == []
        # The sandboxed page's own requests carry no session cookie.
        client.cookies.clear()
        for url in urls:
            response = client.get(urljoin(str(page.url), url))
            assert response.status_code == 200, url
            assert response.headers["x-content-type-options"] == "nosniff"
            kind = response.headers["content-type"]
            if url.endswith(".js") or "/vega" in url:
                assert kind.startswith("text/javascript"), (url, kind)
            elif url.endswith(".css"):
                assert kind.startswith("text/css"), (url, kind)
    # Font Awesome's stylesheet loads its webfonts; an opaque origin fetches fonts with CORS.
    awesome = next(u for u in urls if "fontawesome" in u)
    stylesheet = urljoin(str(page.url), awesome)
    fonts = re.findall(r"url\(([^)]+\.woff2)\)", client.get(stylesheet).text)
    assert fonts
    for font in fonts:
        response = client.get(urljoin(stylesheet, font), headers={"Origin": "null"})
        assert response.status_code == 200, font
        assert response.headers["content-type"] == "font/woff2"
        assert response.headers["access-control-allow-origin"] == "*"


def test_links_between_pages_work_without_the_session_cookie_only_while_signed(client, token, site):
    client.cookies.set("_token", token)
    index = client.get("/adlake/data-docs/")
    assert index.status_code == 200 and "/adlake/data-docs-signed/" in str(index.url)
    client.cookies.clear()  # what a link followed inside the sandbox sends
    page = client.get(urljoin(str(index.url), site))
    assert page.status_code == 200 and "values must never be null" in page.text
    back = next(u for u in re.findall(r'href="([^"]+)"', page.text) if u.endswith("index.html"))
    assert client.get(urljoin(str(page.url), back)).text == index.text
    # The entry itself stays behind the login.
    assert client.get("/adlake/data-docs/", follow_redirects=False).status_code == 401

    from adlake.ui.data_docs import sign

    signed = str(index.url).split("/data-docs-signed/")[1].split("/")[0]
    expires, subject, signature = signed.split(".")
    for token_ in (
        f"{expires}.{subject}.{signature[::-1]}",  # forged
        f"{int(expires) + 1}.{subject}.{signature}",  # a later expiry under the same signature
        sign(int(time.time()) - 1, subject),  # expired
        f"{expires}.{signature}",  # the signature without its user
        "nonsense",
    ):
        refused = client.get(f"/adlake/data-docs-signed/{token_}/{site}")
        assert refused.status_code == 403, token_
        assert "never be null" not in refused.text and "expired" in refused.text
        # Its one link goes back through the login, to a fresh signature.
        assert 'href="../../../../../../data-docs/validations/' in refused.text
        assert "sandbox" not in refused.headers["content-security-policy"]
    for sneaky in (
        f"/adlake/data-docs-signed/{signed}/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        f"/adlake/data-docs-signed/{signed}/..%2F..%2F..%2Fsecret.txt",
    ):
        assert client.get(sneaky).status_code == 404, sneaky
    for impossible in (f"{signed}/index%00.html", f"{signed}/{'a' * 256}"):
        assert client.get(f"/adlake/data-docs-signed/{impossible}").status_code == 400


def test_vendored_assets_are_public_files_of_the_pinned_packages_and_nothing_else(client):
    jquery = f"/adlake/data-docs-assets/jquery@{versions.DATA_DOCS_NPM['jquery'][0]}"
    response = client.get(f"{jquery}/dist/jquery.min.js")
    assert response.status_code == 200 and "jQuery" in response.text[:200]
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["access-control-allow-origin"] == "*"
    for refused in (
        f"{jquery}/package.json",  # not a file type a page loads
        "/adlake/data-docs-assets/%2e%2e/%2e%2e/pyproject.toml",
        "/adlake/data-docs-assets/..%2F..%2Fpyproject.toml",
        "/adlake/data-docs-assets/jquery@0.0.1/dist/jquery.min.js",
    ):
        assert client.get(refused).status_code == 404, refused
    for impossible in (f"{jquery}/dist/jquery%00.js", f"{jquery}/{'a' * 256}.js"):
        assert client.get(impossible).status_code == 400, impossible


def test_without_the_vendored_copies_pages_are_served_and_say_what_is_missing(
    user, site, tmp_path, monkeypatch, caplog
):
    from adlake.ui import data_docs

    monkeypatch.setattr(data_docs, "ASSETS_DIR", tmp_path / "none")
    page = user.get(f"/adlake/data-docs/{site}")
    assert page.status_code == 200
    assert [u for u in loads(page.text) if off_origin(u)] == []
    missing = user.get(urljoin(str(page.url), loads(page.text)[0]))
    assert missing.status_code == 404 and "make setup" in missing.text
    assert "make setup" in caplog.text


def test_every_script_and_stylesheet_gx_templates_name_is_vendored():
    import great_expectations

    from adlake.ui.data_docs import rewrite

    templates = Path(great_expectations.__file__).parent / "render" / "view" / "templates"
    named = {
        url
        for template in templates.glob("*.j2")
        for url in loads(template.read_text())
        if off_origin(url)
    }
    assert len(named) >= 14, named
    for url in sorted(named):
        tag = f'<script src="{url}"></script><link rel="stylesheet" href="{url}">'
        assert [u for u in loads(rewrite(tag, "", "assets/")) if off_origin(u)] == [], url


def test_a_signed_link_lasts_minutes_and_is_refused_once_older(user, token, site, monkeypatch):
    """The link's token is a bearer credential in the URL (the api-server's access log writes
    it out): it opens the site for :data:`LINK_LIFETIME_S` (minutes, not a sign-in's day), then
    is refused; the entry, behind the login, signs a fresh one at every view."""
    from adlake.ui import data_docs

    before = time.time()
    first = user.get(f"/adlake/data-docs/{site}", follow_redirects=False)
    assert first.status_code == 307
    expires = int(first.headers["location"].split("/data-docs-signed/")[1].split(".")[0])
    assert expires <= before + 15 * 60, f"a link lasts {expires - before:.0f}s"

    assert data_docs.LINK_LIFETIME_S == 10 * 60
    signed_at = 1795680000.0
    monkeypatch.setattr(data_docs, "clock", lambda: signed_at)
    location = user.get(f"/adlake/data-docs/{site}", follow_redirects=False).headers["location"]
    link = location.split("/data-docs-signed/")[1].split("/")[0]
    assert int(link.split(".")[0]) == signed_at + data_docs.LINK_LIFETIME_S
    user.cookies.clear()  # the sandboxed page's requests carry no session
    for age, code in (
        (0, 200),
        (data_docs.LINK_LIFETIME_S - 1, 200),
        (data_docs.LINK_LIFETIME_S, 200),
        (data_docs.LINK_LIFETIME_S + 1, 403),
        (24 * 3600 - 1, 403),  # what a link lasted before
    ):
        monkeypatch.setattr(data_docs, "clock", lambda age=age: signed_at + age)
        response = user.get(f"/adlake/data-docs-signed/{link}/{site}")
        assert response.status_code == code, age
        assert ("never be null" in response.text) == (code == 200)
    # each view of the entry signs anew: a link from a later view lasts from then on
    monkeypatch.setattr(data_docs, "clock", lambda: signed_at + 3600)
    user.cookies.set("_token", token)
    again = user.get(f"/adlake/data-docs/{site}")
    assert again.status_code == 200 and "never be null" in again.text
    assert f"/data-docs-signed/{int(signed_at) + 3600 + data_docs.LINK_LIFETIME_S}." in str(
        again.url
    )


def test_signed_for_takes_the_clock_it_is_given(auth_manager):
    from adlake.ui.data_docs import LINK_LIFETIME_S, sign, signed_for

    token = sign(1795680000 + LINK_LIFETIME_S, "subject")
    assert signed_for(token, now=1795680000) == "subject"
    assert signed_for(token, now=1795680000 + LINK_LIFETIME_S) == "subject"
    assert signed_for(token, now=1795680000 + LINK_LIFETIME_S + 1) is None
