"""A rating study created from the studio's page, as `consilium study create` makes one: a refused form names its
field in red and writes nothing; a created study shows each private link once, and a rater's link opens their
queue of the size worked out here."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from browse_cohort import build_browse_cohort
from support.browser import Browser
from support.isolation import isolated
from support.served import served

pytestmark = pytest.mark.localhost  # the studio and the browsers' DevTools sockets, on 127.0.0.1
#: Set to write the screenshot into docs/images (``CONSILIUM_DOC_SCREENSHOTS=1 pytest tests/web/test_study_new.py``).
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images"


def _submit(browser: Browser, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        browser.fill(f"#{name}", value)
    browser.click("#new-study button[type=submit]")


def test_a_study_made_in_the_browser_hands_out_links_once_and_a_bad_form_is_refused_naming_its_field(
        tmp_path: Path) -> None:
    with isolated(tmp_path):
        run = build_browse_cohort(tmp_path)
    with served(run) as studio, Browser(tmp_path) as admin, Browser(tmp_path) as rater:
        admin.open(studio.admin_link)
        assert admin.eval("document.querySelector('nav a[href=\\'/runs/0/study/new\\']').textContent") == \
            "new rating study"
        admin.click("nav a[href='/runs/0/study/new']")
        admin.wait("location.pathname === '/runs/0/study/new' && document.readyState === 'complete'")
        _submit(admin, {"raters": "ana,ana"})
        admin.wait("document.getElementById('new-study-status').textContent.startsWith('not created')")
        assert admin.text("#new-study-status") == "not created: --raters: ana named more than once"
        assert admin.eval("getComputedStyle(document.getElementById('new-study-status')).color") == "rgb(176, 0, 32)"
        assert not (run / "study.sqlite3").exists()  # nothing written
        _submit(admin, {"raters": "ana,ben", "per_output": "3"})
        admin.wait("document.getElementById('new-study-status').textContent.includes('per-output')")
        assert admin.text("#new-study-status") == ("not created: --per-output: 3 raters per output, but only 2 "
                                                   "raters are named")
        # Four outputs sampled, each to both raters: 4 outputs, 8 assignments, a queue of 4 each.
        _submit(admin, {"raters": "ana,ben", "per_output": "2", "sample": "4", "seed": "1",
                        "components": "conclusion"})
        admin.wait("document.getElementById('new-study-status').textContent.startsWith('created')")
        assert admin.text("#new-study-status").startswith("created: 4 outputs, 8 assignments")
        links = admin.eval("Object.fromEntries([...document.querySelectorAll('#links tr')].map(r => "
                           "[r.dataset.who, r.querySelector('td').textContent]))")
        assert set(links) == {"ana", "ben", "administrator"}
        if os.environ.get("CONSILIUM_DOC_SCREENSHOTS"):
            admin.eval("document.querySelectorAll('#links td').forEach(c => c.textContent = "
                       "c.textContent.replace(/login\\/.*/, 'login/…'))")  # no token in the docs
            admin.screenshot(SHOTS / "studio-study-new.png")
        with sqlite3.connect(run / "study.sqlite3") as conn:  # the tokens are stored hashed only
            stored = " ".join(str(v) for row in conn.execute("SELECT * FROM raters") for v in row)
        assert all(link.rsplit("/", 1)[1] not in stored for link in links.values())
        rater.open(links["ana"])
        assert rater.eval("location.pathname") == "/rate/ana"
        assert rater.eval("document.querySelectorAll('a[href^=\\'/rate/ana/\\']').length") >= 4
        admin.open(f"{studio.url}runs/0/")  # the index now links the study, and the form gives way to it
        assert admin.eval("document.querySelector('nav a[href=\\'/study/0\\']').textContent") == "rating study"
        admin.open(f"{studio.url}runs/0/study/new")
        assert admin.eval("location.pathname") == "/study/0"
    log = studio.log.read_text()
    assert all(link.rsplit("/", 1)[1] not in log for link in links.values())
