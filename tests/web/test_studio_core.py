"""The studio's security layer, once for every page: the login link, headers, CSRF, the access log."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.browser import Browser
from support.served import served

pytestmark = pytest.mark.localhost  # the studio and the browser's DevTools socket, on 127.0.0.1


def test_the_admin_link_opens_a_session_and_every_page_carries_a_strict_policy(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with served(run) as studio, Browser(tmp_path) as browser:
        assert studio.url.startswith("http://127.0.0.1:")
        browser.open(studio.url + "login/wrong")
        assert "not valid" in browser.text()
        browser.open(studio.admin_link)
        token = studio.admin_link.rsplit("/", 1)[1]
        # The session cookie is HttpOnly: the page's scripts cannot read it.
        assert token not in str(browser.eval("document.cookie"))
        # A write without the page's CSRF token is refused.
        status = browser.eval("fetch('/logout', {method: 'POST'}).then(r => r.status)")
        assert status == 403
    log = studio.log.read_text()
    assert "GET /login" in log and token not in log and "wrong" not in log
