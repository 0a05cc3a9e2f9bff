"""The studio refuses what it cannot honour, in one line and at once: a ``--database`` that names no database
at start, a revoked link on its next request (saying so, not blaming the page), a folder number that is not one
of the served folders, a form's number that is not a whole number. Each against a real server, in process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from consilium.errors import UserError
from consilium.study import Study, create_study

pytestmark = pytest.mark.localhost  # the studio, on 127.0.0.1


@pytest.mark.parametrize("database", ["bogus://host/db", "{tmp}/no-such-folder/study.sqlite3", "{tmp}"])
async def test_serve_refuses_a_database_that_names_none_before_it_listens(tmp_path: Path, database: str) -> None:
    from consilium.api.serving import ServeOptions, running_studio

    run = tmp_path / "run"
    run.mkdir()
    chosen = database.format(tmp=tmp_path)
    with pytest.raises(UserError, match=r"^--database: "):
        async with running_studio([run], ServeOptions(port=0, database=chosen)):
            pass
    # As users run it: one line naming the flag, exit 2, and no server left listening.
    done = subprocess.run([sys.executable, "-m", "consilium", "serve", str(run), "--port", "0", "--database", chosen],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("consilium: error: --database: ") and "Traceback" not in done.stderr


@dataclass
class Client:
    """Requests as one browser sends them: its session cookie, and the CSRF token of the page it last opened."""

    http: aiohttp.ClientSession
    url: str
    admin: str  # the server's administrator token
    cookie: str = ""
    csrf: str = ""

    @property
    def name(self) -> str:
        """The session cookie's name: the studio's port in it."""
        return f"consilium_session_{self.url.rsplit(':', 1)[1].strip('/')}"

    async def login(self, token: str) -> None:
        async with self.http.get(f"{self.url}login/{token}", allow_redirects=False) as response:
            assert response.status == 303
            self.cookie = response.cookies[self.name].value

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, str]:
        headers = {"Cookie": f"{self.name}={self.cookie}", "X-CSRF-Token": self.csrf}
        async with self.http.request(method, self.url + path, json=body, headers=headers,
                                     allow_redirects=False) as response:
            text = await response.text()
        found = re.search(r'<meta name="csrf-token" content="([0-9a-f]*)">', text)
        self.csrf = found[1] if found else self.csrf
        return response.status, text


@pytest.fixture
def study(fixture_cohort: Path, tmp_path: Path) -> Study:
    db = tmp_path / "study.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=["ana", "ben"], per_output=1, sample=4, seed=5,
                 database=str(db))
    return Study.open(fixture_cohort, str(db))


@asynccontextmanager
async def studio(study: Study) -> AsyncIterator[Client]:
    from consilium.api.serving import ServeOptions, running_studio

    async with running_studio([study.run_dir], ServeOptions(port=0, database=study.db.target)) as running, \
            aiohttp.ClientSession() as http:
        yield Client(http, running.url, running.admin_link.rsplit("/", 1)[1])


async def test_a_revoked_link_is_told_so_on_its_next_page_and_write_not_sent_to_the_csrf_check(study: Study) -> None:
    token = study.new_link("ana")
    async with studio(study) as ana:
        await ana.login(token)
        item = study.queue("ana")[0].item
        status, _ = await ana.call("GET", f"rate/ana/{item}")
        assert status == 200 and ana.csrf
        assert (await ana.call("PUT", f"api/rate/ana/{item}", {"criterion": "c1", "score": 2}))[0] == 200
        study.revoke("ana")  # as `consilium study revoke` does, while the page is open
        for method, path, body in (("PUT", f"api/rate/ana/{item}", {"criterion": "c1", "score": 3}),
                                   ("GET", f"rate/ana/{item}", None), ("GET", "api/rate/ana/queue", None),
                                   ("GET", "", None)):
            status, text = await ana.call(method, path, body)
            assert status == 403 and "revoked" in text and "CSRF" not in text, (method, path, text)
        assert (await ana.call("GET", "static/rate.js"))[0] == 200  # the page's own files still load
    assert [a.score for a in study.item("ana", item).answers.values()] == [2.0]  # the answer before stays


def _writes(run: Path) -> list[tuple[str, str]]:
    """Every route of the studio that writes (any method but GET and HEAD), from the application's own router,
    with its parameters filled in."""
    from consilium.web.app import make_app

    filled = {"rater": "ana", "item": "x", "n": "0", "run": "~", "token": "x"}
    found = []
    for route in make_app([run], admin_token="unused").router.routes():
        if route.method in ("GET", "HEAD") or route.resource is None:
            continue
        path = re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: filled[m[1]], route.resource.canonical)
        found.append((route.method, path.lstrip("/")))
    return found


async def test_every_write_without_the_csrf_token_or_from_another_origin_is_refused_with_the_strict_headers(
        study: Study) -> None:
    from consilium.web.security import CSP

    writes = _writes(study.run_dir)
    assert {m for m, _ in writes} == {"POST", "PUT"} and len(writes) >= 7
    async with studio(study) as ana:
        await ana.login(study.new_link("ana"))
        await ana.call("GET", "rate/ana")  # the page's CSRF token, kept for the foreign-origin writes
        for method, path in writes:
            for headers in ({}, {"X-CSRF-Token": "0" * 64}, {"X-CSRF-Token": ana.csrf, "Origin": "http://evil.test"}):
                sent = {"Cookie": f"{ana.name}={ana.cookie}", **headers}
                async with ana.http.request(method, ana.url + path, json={}, headers=sent) as response:
                    assert response.status == 403, (method, path, headers)
                    assert response.headers.get("Content-Security-Policy") == CSP, (method, path, headers)
                    assert response.headers.get("X-Content-Type-Options") == "nosniff"
                    assert response.headers.get("X-Frame-Options") == "DENY"
                    assert response.headers.get("Cache-Control") == "no-store"


async def test_a_folder_number_is_one_of_the_served_folders_counted_from_zero(study: Study) -> None:
    async with studio(study) as admin:
        await admin.login(admin.admin)
        assert (await admin.call("GET", "study/0"))[0] == 200
        for n in ("-1", "-0", "1", "+0", " 0", "x"):
            for path in (f"study/{n}", f"api/study/{n}/agreement", f"runs/{n}/", f"runs/{n}/study/new"):
                status, text = await admin.call("GET", path)
                assert status == 404 and text.startswith("404: no served"), (path, status, text)


@pytest.mark.parametrize(("field", "value"), [("per_output", 1.9), ("per_output", True), ("sample", 2.5),
                                              ("sample", "3.0"), ("seed", False), ("seed", [1])])
async def test_the_new_study_form_refuses_a_number_that_is_not_whole_as_the_command_refuses_its_flag(
        study: Study, field: str, value: Any) -> None:
    async with studio(study) as admin:
        await admin.login(admin.admin)
        await admin.call("GET", "runs/0/")
        status, text = await admin.call("POST", "runs/0/study", {"rubric": "ai-consilium", "raters": "ana,ben",
                                                                  field: value})
        assert status == 400 and json.loads(text)["error"].startswith(f"--{field.replace('_', '-')}: "), text


async def test_the_administrator_sees_a_raters_item_but_cannot_answer_in_their_name(study: Study) -> None:
    item = study.queue("ana")[0].item
    async with studio(study) as admin:
        await admin.login(admin.admin)
        status, page = await admin.call("GET", f"rate/ana/{item}")  # what ana sees, and the page's CSRF token
        assert f"data-item=\"{item}\"" in page
        assert status == 200 and admin.csrf
        for method in ("PUT", "POST"):
            status, text = await admin.call(method, f"api/rate/ana/{item}", {"criterion": "c1", "score": 2})
            assert status == 403 and "rater" in json.loads(text)["error"], text
    assert study.item("ana", item).answers == {}


async def test_a_study_database_that_cannot_be_opened_is_said_on_the_study_page_not_passed_off_as_no_study(
        fixture_cohort: Path, tmp_path: Path) -> None:
    from consilium.api.serving import ServeOptions, running_studio

    broken = tmp_path / "study.sqlite3"
    broken.write_bytes(b"not a database, " * 512)
    async with running_studio([fixture_cohort], ServeOptions(port=0, database=str(broken))) as running, \
            aiohttp.ClientSession() as http:
        admin = Client(http, running.url, running.admin_link.rsplit("/", 1)[1])
        await admin.login(admin.admin)
        for path in ("study/0", "api/study/0/agreement", "runs/0/study/new"):
            status, text = await admin.call("GET", path)
            assert status == 503 and text.startswith(f"503: {broken}: ") and "no rating study" not in text, (path, text)


async def test_a_study_database_that_stops_answering_is_a_503_for_its_raters_and_they_go_on_once_it_is_back(
        study: Study, tmp_path: Path) -> None:
    """The database read on every request of a rater (who they are) fails: a 503 saying to try again, naming
    no file (a rater's browser gets no path: it could hold the run's id), instead of a 500; then back."""
    token = study.new_link("ana")
    file = Path(study.db.target)
    async with studio(study) as ana:
        await ana.login(token)
        assert (await ana.call("GET", "rate/ana"))[0] == 200
        kept, item = file.read_bytes(), study.queue("ana")[0].item
        file.write_bytes(b"not a database, " * 512)
        try:
            for method, path in (("GET", "rate/ana"), ("PUT", f"api/rate/ana/{item}")):
                status, text = await ana.call(method, path, {"criterion": "c1", "score": 1})
                assert status == 503 and "try again" in text and str(tmp_path) not in text and "revoked" not in text
        finally:
            file.write_bytes(kept)
        assert (await ana.call("GET", "rate/ana"))[0] == 200


@pytest.mark.parametrize("host", ["", "  "])
async def test_an_empty_host_is_refused_rather_than_listening_on_every_interface(tmp_path: Path, host: str) -> None:
    """``--host "$HOST"`` with HOST unset: refused, where it would have listened on every address (IPv4 and IPv6,
    each on a port of its own) of a studio that holds unblinded results."""
    from consilium.api.serving import ServeOptions, running_studio

    with pytest.raises(UserError, match=r"^--host: "):
        async with running_studio([tmp_path], ServeOptions(host=host, port=0)):
            pass
    done = subprocess.run([sys.executable, "-m", "consilium", "serve", str(tmp_path), "--port", "0", "--host", host],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("consilium: error: --host: ")



async def test_a_database_named_but_not_made_yet_is_no_study_and_the_form_makes_it(
        fixture_cohort: Path, tmp_path: Path) -> None:
    """``serve --database NEW.sqlite3`` (no such file yet): the folder has no study, not a broken one; the
    new-study form opens and creates the study in that file."""
    from consilium.api.serving import ServeOptions, running_studio

    new = tmp_path / "new.sqlite3"
    async with running_studio([fixture_cohort], ServeOptions(port=0, database=str(new))) as running, \
            aiohttp.ClientSession() as http:
        admin = Client(http, running.url, running.admin_link.rsplit("/", 1)[1])
        await admin.login(admin.admin)
        status, page = await admin.call("GET", "runs/0/")
        assert status == 200 and 'href="/runs/0/study/new"' in page and 'class="error">rating study' not in page
        assert (await admin.call("GET", "runs/0/study/new"))[0] == 200
        status, text = await admin.call("POST", "runs/0/study", {"rubric": "ai-consilium", "raters": "ana,ben"})
        assert status == 200 and json.loads(text)["study"] == "/study/0", text
    assert [e.position for e in Study.open(fixture_cohort, str(new)).queue("ana")][:1] == [1]


async def test_the_new_study_form_offers_only_rubrics_a_study_can_rate(fixture_cohort: Path, tmp_path: Path) -> None:
    """A diagnosis match and a case's signed criteria are no criteria a physician rates (the study refuses them):
    the form does not offer them."""
    from consilium.api.serving import ServeOptions, running_studio

    options = ServeOptions(port=0, database=str(tmp_path / "none-yet.sqlite3"))
    async with running_studio([fixture_cohort], options) as running, aiohttp.ClientSession() as http:
        admin = Client(http, running.url, running.admin_link.rsplit("/", 1)[1])
        await admin.login(admin.admin)
        status, page = await admin.call("GET", "runs/0/study/new")
    assert status == 200
    assert re.findall(r'<option value="([^"]+)"', page) == [
        "ai-consilium", "otb-clinical-equivalence", "otb-conclusion-alignment", "otb-consistency", "otb-four-decision"]
