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
        # The page's sign-out button ends the session: the next page is refused until the link is opened again.
        browser.open(studio.url)
        browser.click("#sign-out")
        browser.wait("location.pathname === '/signed-out'")
        browser.open(studio.url)
        assert browser.text().startswith("403")
        browser.open(studio.admin_link)
        assert browser.eval("document.getElementById('sign-out') !== null")
    log = studio.log.read_text()
    assert "GET /login" in log and token not in log and "wrong" not in log


async def test_the_library_holds_a_running_studio_that_answers_with_its_headers_and_refuses_strangers(
        tmp_path: Path) -> None:
    import aiohttp

    from consilium.api.serving import ServeOptions, running_studio

    run = tmp_path / "run"
    run.mkdir()
    async with running_studio([run], ServeOptions(port=0)) as studio:
        assert studio.url.startswith("http://127.0.0.1:") and studio.admin_link.startswith(studio.url + "login/")
        async with aiohttp.ClientSession() as session:
            async with session.get(studio.url) as response:  # no session: no page
                assert response.status == 403
                assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
                assert response.headers["X-Frame-Options"] == "DENY"
            async with session.get(studio.admin_link, allow_redirects=False) as response:
                assert response.status == 303
                cookie = response.cookies[f"consilium_session_{studio.url.rsplit(':', 1)[1].strip('/')}"]
                assert cookie["httponly"] and cookie["samesite"] == "Strict"
            async with session.post(studio.url + "logout") as response:  # a session, but no CSRF token
                assert response.status == 403
    async with aiohttp.ClientSession() as session:  # stopped on leaving the block
        try:
            async with session.get(studio.url) as response:
                stopped = False
        except aiohttp.ClientConnectionError:
            stopped = True
    assert stopped
