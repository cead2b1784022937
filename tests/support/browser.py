"""A real browser for UI tests: Debian's Chromium, driven headless by Playwright (its own browser
download cannot be fetched here; ``make setup`` installs the ``chromium`` package when missing)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# Headless, and nothing that reaches out to the network on its own: this machine's network is
# closed, and Chromium's background connections would fail by the dozen.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if path is None:
        raise AssertionError(
            "the browser tests need Debian's chromium: apt-get install chromium "
            "(make setup installs it when run as root)"
        )
    return path


@contextmanager
def browser() -> Iterator[object]:
    """A headless Chromium (Playwright gives it a new, empty profile); yields a Playwright
    ``Browser``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


def sign_in(page, base_url: str, user: str, password: str) -> None:
    """Sign in through Airflow's own login form, as a person does."""
    page.goto(f"{base_url}/", wait_until="networkidle")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/", timeout=60_000)
