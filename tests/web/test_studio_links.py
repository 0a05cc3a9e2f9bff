"""A private link as physicians follow it: clicked on a page of another site (a webmail, the study's own page),
in a real headless Chromium against ``consilium serve`` in its own process. The session cookie is
SameSite=Strict, which a browser does not send on a redirect of a navigation another site started."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.browser import Browser
from support.served import served

from consilium.study import create_study

pytestmark = pytest.mark.localhost  # the studio, the other site and the browser's DevTools socket, on loopback


@contextmanager
def another_site(link: str) -> Iterator[str]:
    """A page on ``localhost`` (another site than the studio's 127.0.0.1) holding ``link``; its URL."""
    body = f'<!doctype html><title>mail</title><a id="go" href="{link}">your rating link</a>'.encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_link_clicked_on_another_site_opens_the_raters_queue(fixture_cohort: Path, tmp_path: Path) -> None:
    db = tmp_path / "study.sqlite3"
    made = create_study(fixture_cohort, rubric="ai-consilium", raters=["ana", "ben"], per_output=1, sample=4,
                        seed=1, database=str(db))
    with served(fixture_cohort, database=str(db), log=tmp_path / "serve.log") as studio, Browser(tmp_path) as ana, \
            another_site(f"{studio.url}login/{made.links['ana']}") as mail:
        ana.open(mail)
        ana.click("#go")
        # The queue, with no reload by the rater: the studio's own page goes on once the cookie is set.
        ana.wait("location.host.startsWith('127.0.0.1:') && document.querySelector('h1') !== null && "
                 "document.querySelector('h1').textContent === 'Rating queue of ana'")
        assert ana.eval("location.pathname") == "/rate/ana"
    assert made.links["ana"] not in (tmp_path / "serve.log").read_text()


def test_a_page_left_open_across_a_restart_of_the_server_still_saves_its_answers(
        fixture_cohort: Path, tmp_path: Path) -> None:
    """The studio stopped and started again on its port while a rater's page stays open: the next answer given in
    that page is saved (its CSRF token still holds), not refused until a reload."""
    from consilium.study import Study

    db = tmp_path / "study.sqlite3"
    made = create_study(fixture_cohort, rubric="ai-consilium", raters=["ana"], per_output=1, sample=2, seed=4,
                        database=str(db))
    item = Study.open(fixture_cohort, str(db)).queue("ana")[0].item
    status = "document.querySelector('fieldset[data-criterion=c2] .status').textContent"
    with Browser(tmp_path) as ana:
        with served(fixture_cohort, database=str(db), log=tmp_path / "first.log") as first:
            ana.open(f"{first.url}login/{made.links['ana']}")
            ana.open(f"{first.url}rate/ana/{item}")
            ana.click("fieldset[data-criterion=c1] input[value='1']")
            ana.wait("document.querySelector('fieldset[data-criterion=c1] .status').textContent === 'saved'")
        port = first.url.rsplit(":", 1)[1].strip("/")
        with served(fixture_cohort, database=str(db), log=tmp_path / "second.log", extra=("--port", port)) as second:
            assert second.url == first.url
            ana.click("fieldset[data-criterion=c2] input[value='3']")
            assert ana.wait(f"{status} !== 'saving…' && {status}") == "saved"
    answers = Study.open(fixture_cohort, str(db)).item("ana", item).answers
    assert {c: a.score for c, a in answers.items()} == {"c1": 1.0, "c2": 3.0}


def test_two_studios_on_one_machine_keep_their_own_sessions_in_one_browser(tmp_path: Path) -> None:
    """A browser keeps one cookie per host whatever the port: each studio's session cookie is named for its port,
    so signing in to a second studio does not sign the browser out of the first."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with served(tmp_path / "a", log=tmp_path / "a.log") as first, \
            served(tmp_path / "b", log=tmp_path / "b.log") as second, Browser(tmp_path) as admin:
        admin.open(first.admin_link)
        admin.open(second.admin_link)
        assert admin.fetch_status(f"{second.url}runs/0/") == 200
        admin.open(f"{first.url}runs/0/")
        assert admin.eval("document.querySelector('h1') && document.querySelector('h1').textContent") == "a"
