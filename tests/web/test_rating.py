"""Rating studies in the browser: a study created by the command line, two raters rating at once in two real
headless Chromiums, blinded; the administrator's page with progress and live agreement; export into
``calibrate agreement``. Every expected figure is worked out here from the answers the browsers gave and the
fixture's judge scores (tests/web/browse_cohort.py), with the definitions of tests/web/rating_by_hand.py."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from browse_cohort import CRITERIA, FORMATS, MARKERS, MODELS, arm_mark, build_browse_cohort, score
from rating_by_hand import alpha_ordinal, percent, quadratic_kappa
from support.browser import Browser
from support.isolation import isolated
from support.served import Served, served

from consilium.cli import main
from consilium.runfolder import RunFolder

pytestmark = pytest.mark.localhost  # the studio and the browsers' DevTools sockets, on 127.0.0.1

RATERS = ("ana", "ben", "cy")
LABELS = (0.0, 1.0, 2.0, 3.0)
#: ana's one not-evaluable answer (on her first item) and its reason; ben's comment on c2 of every item.
NOT_EVALUABLE, REASON = "c7", "ZQREASON the plan is cut off"
COMMENTED, COMMENT = "c2", "ZQCOMMENT terse but right"
#: ben leaves his first item that ana rates too half rated: these criteria only.
HALF = CRITERIA[:5]
#: Set to write the screenshots into docs/images (``CONSILIUM_DOC_SCREENSHOTS=1 pytest tests/web/test_rating.py``).
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images"

Output = tuple[str, str, str]  # case, model, format


def planned(rater: str, output: Output, criterion: str) -> float:
    """What a rater answers: near the judge's score, each rater off it on their own criteria (so raters and the
    judge agree on some units and not on others)."""
    case, model, fmt = output
    judge = score(model, fmt, case, "conclusion", criterion)
    base = 2 if judge is None else judge
    i = CRITERIA.index(criterion)
    if rater == "ana":
        return float(base if i % 4 else (base + 1) % 4)
    return float(base if i % 3 else 3 - base)


@dataclass
class Setup:
    run: Path
    tokens: dict[str, str]  # rater (and "administrator") → token, as `study create` printed them
    studio: Served
    tmp: Path

    def link(self, who: str) -> str:
        return f"{self.studio.url}login/{self.tokens[who]}"


@dataclass
class Rated:
    browsers: dict[str, Browser]
    queues: dict[str, list[str]]  # rater → item ids in queue order
    outputs: dict[str, Output] = field(default_factory=dict)  # item → what it is (read from its page's text)
    #: (rater, item) → criterion → the score given (None: not evaluable)
    answers: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=dict)

    @property
    def half(self) -> str:
        """ben's half-rated item: his first that ana rates too."""
        return next(item for item in self.queues["ben"] if item in self.queues["ana"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("rating")
    with isolated(tmp):
        run = build_browse_cohort(tmp)
        printed = io.StringIO()
        with redirect_stdout(printed):
            code = main(["study", "create", str(run), "--rubric", "ai-consilium", "--raters", ",".join(RATERS),
                         "--per-output", "2", "--sample", "6", "--seed", "3", "--components", "conclusion"])
        assert code == 0, printed.getvalue()
        tokens = dict(re.findall(r"^\s+(\S+): http://\S+/login/(\S+)$", printed.getvalue(), re.M))
        assert set(tokens) == {*RATERS, "administrator"}
        with served(run) as studio:
            yield Setup(run, tokens, studio, tmp)


def _page_output(browser: Browser) -> Output:
    case_text, output_text = browser.eval("[document.querySelector('section.case pre').textContent, "
                                          "document.querySelector('section.output pre').textContent]")
    [case] = [c for c, mark in MARKERS.items() if mark in case_text]
    [(model, fmt)] = [(m, f) for m in MODELS for f in FORMATS if arm_mark(m, f) in output_text]
    return case, model, fmt


def _give(browser: Browser, plan: list[tuple[str, float | None, str | None, str | None]]) -> None:
    """Answer as a person does: click each criterion's choice, then type the reason or comment (each a change)."""
    browser.eval(f"""(() => {{
      for (const [criterion, value, reason, comment] of {json.dumps(plan)}) {{
        const f = document.querySelector(`fieldset[data-criterion="${{criterion}}"]`);
        f.querySelector(`input[type=radio][value="${{value === null ? 'ne' : value}}"]`).click();
        for (const [selector, text] of [['input[name=reason]', reason], ['textarea[name=comment]', comment]]) {{
          if (!text) continue;
          const box = f.querySelector(selector);
          box.value = text;
          box.dispatchEvent(new Event('change', {{bubbles: true}}));
        }}
      }}
    }})()""")


def _saved(browser: Browser, criteria: list[str]) -> None:
    browser.wait(f"document.getElementById('rating').dataset.saving === '0' && {json.dumps(criteria)}.every(c => "
                 "document.querySelector(`fieldset[data-criterion=\"${c}\"] .status`).textContent === 'saved')")


def _start(rated: Rated, setup: Setup, rater: str, item: str, criteria: tuple[str, ...] = CRITERIA) -> list[str]:
    """Open ``item`` in the rater's browser and give the planned answers (not waiting for them to be saved)."""
    browser = rated.browsers[rater]
    browser.open(f"{setup.studio.url}rate/{rater}/{item}")
    output = rated.outputs.setdefault(item, _page_output(browser))
    assert rated.outputs[item] == output
    first = item == rated.queues[rater][0]
    answers = rated.answers.setdefault((rater, item), {})
    plan = []
    for criterion in criteria:
        value = None if (rater, first, criterion) == ("ana", True, NOT_EVALUABLE) else planned(rater, output, criterion)
        answers[criterion] = value
        plan.append((criterion, value if value is None else int(value), REASON if value is None else None,
                     COMMENT if rater == "ben" and criterion == COMMENTED else None))
    _give(browser, plan)
    return list(criteria)


@pytest.fixture(scope="module")
def rated(setup: Setup) -> Iterator[Rated]:
    """ana and ben rate their queues in two browsers at once, item by item in turn (each one's answers in flight
    while the other's are given); ben leaves one item half rated; cy rates nothing."""
    with ExitStack() as stack:
        browsers = {r: stack.enter_context(Browser(setup.tmp)) for r in ("ana", "ben")}
        queues = {}
        for rater, browser in browsers.items():
            browser.open(setup.link(rater))
            assert browser.eval("location.pathname") == f"/rate/{rater}"
            queue = browser.eval(f"fetch('/api/rate/{rater}/queue').then(r => r.json())")
            assert [e["position"] for e in queue["items"]] == list(range(1, len(queue["items"]) + 1))
            queues[rater] = [e["item"] for e in queue["items"]]
        rated = Rated(browsers, queues)
        for i in range(max(len(q) for q in queues.values())):
            started = {}
            for rater in ("ana", "ben"):
                if i < len(queues[rater]):
                    half = rater == "ben" and queues[rater][i] == rated.half
                    started[rater] = _start(rated, setup, rater, queues[rater][i], HALF if half else CRITERIA)
            for rater, criteria in started.items():
                _saved(browsers[rater], criteria)
        yield rated


# What the browsers gave, and what follows from it by hand.
def _scored(rated: Rated) -> list[tuple[str, Output, str, float]]:
    return [(rater, rated.outputs[item], criterion, value) for (rater, item), answers in rated.answers.items()
            for criterion, value in answers.items() if value is not None]


def _expected(rated: Rated) -> dict[str, Any]:
    units: dict[tuple[Output, str], dict[str, float]] = defaultdict(dict)
    for rater, output, criterion, value in _scored(rated):
        units[(output, criterion)][rater] = value
    shared = [scores for scores in units.values() if len(scores) >= 2]
    first = [scores[min(scores)] for scores in shared]  # the two raters of a unit, in name order
    second = [scores[max(scores)] for scores in shared]
    pairs = [(value, judge) for _, (case, model, fmt), criterion, value in _scored(rated)
             if (judge := score(model, fmt, case, "conclusion", criterion)) is not None]
    physician, judge = [float(p[0]) for p in pairs], [float(p[1]) for p in pairs]
    return {"items": len(shared), "percent": percent([list(s.values()) for s in shared]),
            "kappa": quadratic_kappa(first, second, LABELS),
            "alpha": alpha_ordinal([list(s.values()) for s in shared], LABELS),
            "judge_pairs": len(pairs), "judge_percent": sum(p == j for p, j in pairs) / len(pairs),
            "judge_kappa": quadratic_kappa(physician, judge, LABELS),
            "not_evaluable": sum(v is None for a in rated.answers.values() for v in a.values())}


def _export(setup: Setup, out: Path) -> list[dict[str, str]]:
    assert main(["study", "export", str(setup.run), "--out", str(out)]) == 0
    with out.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _shot(browser: Browser, name: str, *, full_page: bool = True) -> None:
    if os.environ.get("CONSILIUM_DOC_SCREENSHOTS"):
        browser.screenshot(SHOTS / f"studio-rate-{name}.png", full_page=full_page)


def test_two_raters_rating_at_once_lose_no_answer(setup: Setup, rated: Rated, tmp_path: Path) -> None:
    rows = _export(setup, tmp_path / "ratings.csv")
    stored = sorted((r["rater"], (r["case_id"], r["model"], r["variant"]), r["criterion"], float(r["score"]))
                    for r in rows)
    assert stored == sorted(_scored(rated))
    assert len(stored) == 11 * (len(rated.queues["ana"]) + len(rated.queues["ben"]) - 1) + len(HALF) - 1
    # Each queue says what is done: ana every item, ben all but his half-rated last one.
    for rater, browser in rated.browsers.items():
        queue = browser.eval(f"fetch('/api/rate/{rater}/queue').then(r => r.json())")
        done = [e["done"] for e in queue["items"]]
        assert done == [rater == "ana" or item != rated.half for item in rated.queues[rater]]


def test_a_reload_keeps_every_answer_and_the_pages_follow_the_raters_own_order(setup: Setup, rated: Rated) -> None:
    for rater in ("ana", "ben"):
        browser, item = rated.browsers[rater], rated.queues[rater][0]
        browser.open(f"{setup.studio.url}rate/{rater}/{item}")
        checked = browser.eval("Object.fromEntries([...document.querySelectorAll('fieldset.criterion')].map(f => "
                               "[f.dataset.criterion, (f.querySelector('input[type=radio]:checked') || {}).value]))")
        assert checked == {c: "ne" if v is None else str(int(v)) for c, v in rated.answers[(rater, item)].items()}
        texts = browser.eval("[...document.querySelectorAll('fieldset.criterion')].map(f => [f.dataset.criterion, "
                             "f.querySelector('input[name=reason]').value, f.querySelector('textarea').value])")
        for criterion, reason, comment in texts:
            assert reason == (REASON if rater == "ana" and criterion == NOT_EVALUABLE else "")
            assert comment == (COMMENT if rater == "ben" and criterion == COMMENTED else "")
    _shot(rated.browsers["ana"], "item", full_page=False)
    ben = rated.browsers["ben"]
    ben.open(f"{setup.studio.url}rate/ben")
    assert ben.text(".progress").startswith(f"{len(rated.queues['ben']) - 1} of {len(rated.queues['ben'])} done")
    _shot(ben, "queue")
    # The queue page lists the items in the rater's own order; previous and next follow it.
    links = ben.eval("[...document.querySelectorAll('table.queue a')].map(a => a.getAttribute('href'))")
    assert links == [f"/rate/ben/{item}" for item in rated.queues["ben"]]
    ben.open(f"{setup.studio.url}rate/ben/{rated.queues['ben'][1]}")
    assert ben.eval("[document.getElementById('previous').getAttribute('href'), "
                    "document.getElementById('next').getAttribute('href')]") == [
        f"/rate/ben/{rated.queues['ben'][0]}", f"/rate/ben/{rated.queues['ben'][2]}"]


def _forbidden(run: Path) -> set[str]:
    """What would unblind a rater, read from the fixture's own files: the models (panel and judge), the formats,
    the run ids, the traces' and judgements' file names, the judges' rationales."""
    folder = RunFolder.open(run)
    words = {*MODELS, *FORMATS, "browse-judge", str(folder.manifest_data()["run_id"])}
    for path in folder.trace_files():
        words |= {path.name, folder.read_trace(path).run_id}
    for path in folder.judgement_files():
        words.add(path.name)
        stack: list[Any] = [json.loads(path.read_text())]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                words |= {str(v) for k, v in value.items() if k in ("rationale", "model") and v}
                stack += value.values()
            elif isinstance(value, list):
                stack += value
    return words


def test_nothing_a_rater_receives_names_the_model_format_judge_score_run_or_trace(setup: Setup, rated: Rated) -> None:
    forbidden = _forbidden(setup.run)
    assert len([w for w in forbidden if w.startswith("ZQWHY")]) > 50  # the rationales were read
    for rater, browser in rated.browsers.items():
        received = browser.received()
        kinds = {url.rsplit("/", 1)[-1] for url, _ in received}
        assert {"rate.js", "style.css", "queue"} <= kinds, kinds
        assert any(u.startswith(f"{setup.studio.url}api/rate/{rater}/") and '"saved"' in b for u, b in received)
        leaks = sorted({(url, word) for url, body in received for word in forbidden if word in body})
        assert leaks == [], leaks
        # The case and output are text, never markup: the fixture's hostile case ran nothing.
        assert browser.eval("window.PWNED === undefined && document.getElementById('pwned') === null")


def test_a_rater_token_opens_only_that_raters_queue(setup: Setup, rated: Rated) -> None:
    ana, ben_item = rated.browsers["ana"], rated.queues["ben"][0]
    ana.open(f"{setup.studio.url}rate/ana")
    for path in ("/api/rate/ben/queue", "/rate/ben", f"/rate/ben/{ben_item}", "/study/0", "/api/study/0/agreement",
                 "/runs/0/", "/runs/0/summary"):
        assert ana.fetch_status(path) == 403, path
    assert ana.eval("fetch('/').then(r => new URL(r.url).pathname)") == "/rate/ana"  # home is the own queue
    put = ("(url) => fetch(url, {method: 'PUT', headers: {'Content-Type': 'application/json', 'X-CSRF-Token': "
           "document.querySelector('meta[name=csrf-token]').content}, body: JSON.stringify({criterion: 'c1', "
           "score: 1})}).then(r => r.status)")
    assert ana.eval(f"({put})('/api/rate/ben/{ben_item}')") == 403
    only_ben = next(i for i in rated.queues["ben"] if i not in rated.queues["ana"])
    assert ana.eval(f"({put})('/api/rate/ana/{only_ben}')") == 403
    assert ana.fetch_status(f"/rate/ana/{only_ben}") == 404


def test_a_write_without_the_csrf_header_or_off_the_scale_is_refused(setup: Setup, rated: Rated) -> None:
    ana, item = rated.browsers["ana"], rated.queues["ana"][1]
    given = rated.answers[("ana", item)]["c1"]
    ana.open(f"{setup.studio.url}rate/ana/{item}")
    body = json.dumps({"criterion": "c1", "score": 3 - given if given is not None else 0})
    status = ana.eval(f"fetch('/api/rate/ana/{item}', {{method: 'PUT', headers: {{'Content-Type': "
                      f"'application/json'}}, body: {json.dumps(body)}}}).then(r => r.status)")
    assert status == 403
    # With the header, a score off the scale is refused in one line naming the field.
    reply = ana.eval(f"fetch('/api/rate/ana/{item}', {{method: 'PUT', headers: {{'Content-Type': 'application/json', "
                     "'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, body: JSON.stringify("
                     "{criterion: 'c1', score: 7})}).then(async r => [r.status, (await r.json()).error])")
    assert reply[0] == 400 and reply[1].startswith("score: 7 is not on the ai-consilium scale")
    ana.open(f"{setup.studio.url}rate/ana/{item}")
    assert ana.eval("document.querySelector('fieldset[data-criterion=c1] input:checked').value") == str(int(given))



def test_answers_survive_a_restart_and_a_second_server_on_the_same_study(setup: Setup, rated: Rated) -> None:
    """A server started afresh on the study (here beside the first, as after a restart or at a second site on one
    database) shows every answer, and an answer given through it is what the first serves."""
    ana, item = rated.browsers["ana"], rated.queues["ana"][-1]
    with served(setup.run, log=setup.tmp / "second.log") as second:
        assert second.url != setup.studio.url
        ana.open(f"{second.url}login/{setup.tokens['ana']}")
        ana.open(f"{second.url}rate/ana/{item}")
        checked = ana.eval("Object.fromEntries([...document.querySelectorAll('fieldset.criterion')].map(f => "
                           "[f.dataset.criterion, (f.querySelector('input[type=radio]:checked') || {}).value]))")
        assert checked == {c: "ne" if v is None else str(int(v)) for c, v in rated.answers[("ana", item)].items()}
        changed = (int(rated.answers[("ana", item)]["c8"] or 0) + 1) % 4
        rated.answers[("ana", item)]["c8"] = float(changed)
        _give(ana, [("c8", changed, None, None)])
        _saved(ana, ["c8"])
    ana.open(f"{setup.studio.url}rate/ana/{item}")
    assert ana.eval("document.querySelector('fieldset[data-criterion=c8] input:checked').value") == str(changed)

def test_a_folder_of_cohorts_served_whole_finds_each_cohorts_study_and_shows_one_it_cannot_open(
        setup: Setup, rated: Rated, tmp_path: Path) -> None:
    """``serve runs/`` (the folder holding the cohort): the rater's link opens their queue and the index links the
    study; a copy of the cohort whose study database is newer than this code shows why in red on its index,
    instead of passing for a folder without a study."""
    import shutil
    import sqlite3

    copy = tmp_path / "runs" / setup.run.name
    shutil.copytree(setup.run, copy)
    with sqlite3.connect(copy / "study.sqlite3") as conn:
        conn.execute("INSERT INTO schema_version (version, name, applied_at) VALUES (99, '0099_future.sql', 'x')")
    ben = rated.browsers["ben"]
    with served(setup.run.parent, log=tmp_path / "parent.log") as whole, served(
            copy.parent, log=tmp_path / "copy.log") as newer, Browser(tmp_path) as admin:
        ben.open(f"{whole.url}login/{setup.tokens['ben']}")
        assert ben.eval("location.pathname") == "/rate/ben"
        assert len(ben.eval("[...document.querySelectorAll('a[href^=\\'/rate/ben/\\']')].map(a => a.href)")) > 0
        admin.open(f"{whole.url}login/{setup.tokens['administrator']}")
        assert admin.eval("location.pathname") == "/runs/0/"
        assert admin.eval("document.querySelector('nav a[href=\\'/study/0\\']').textContent") == "rating study"
        admin.open(f"{newer.url}login/{setup.tokens['administrator']}")  # the study's token: its study is unread
        assert admin.eval("location.pathname") == "/login/" + setup.tokens["administrator"]
        admin.open(newer.admin_link)
        assert admin.eval("document.querySelector('nav a[href=\\'/study/0\\']')") is None
        problem = admin.text("p.error")
        assert problem.startswith("rating study: ") and "newer" in problem


def test_export_feeds_calibrate_agreement_whose_figures_are_worked_out_by_hand(setup: Setup, rated: Rated,
                                                                              tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.csv"
    _export(setup, ratings)
    out = tmp_path / "calibration"
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(setup.run), "--rubric",
                 "ai-consilium", "--bootstrap", "20", "--out", str(out)]) == 0
    with (out / "agreement.csv").open(newline="") as handle:
        pooled = next(r for r in csv.DictReader(handle) if r["criterion"] == "pooled")
    expected = _expected(rated)
    assert int(pooled["n"]) == expected["judge_pairs"]
    assert float(pooled["exact"]) == pytest.approx(expected["judge_percent"])
    assert float(pooled["qwk"]) == pytest.approx(expected["judge_kappa"])


def _admin(setup: Setup, stack: ExitStack) -> Browser:
    admin = stack.enter_context(Browser(setup.tmp))
    admin.open(setup.link("administrator"))
    admin.open(f"{setup.studio.url}study/0")
    return admin


def test_a_revoked_link_stops_working_even_on_an_open_page_and_a_new_one_is_shown_once(setup: Setup) -> None:
    with ExitStack() as stack:
        cy, admin = stack.enter_context(Browser(setup.tmp)), _admin(setup, stack)
        cy.open(setup.link("cy"))
        first = cy.eval("fetch('/api/rate/cy/queue').then(r => r.json())")["items"][0]["item"]
        cy.open(f"{setup.studio.url}rate/cy/{first}")
        admin.click("button.revoke[data-rater=cy]")
        admin.wait("document.querySelector('tr[data-rater=cy] .link-state').textContent === 'revoked'")
        assert cy.fetch_status("/api/rate/cy/queue") == 403
        # An answer given on the page already open is refused, and the page says so in red.
        _give(cy, [("c1", 2, None, None)])
        status = "document.querySelector('fieldset[data-criterion=c1] .status')"
        assert cy.wait(f"{status}.textContent.startsWith('not saved') && {status}.textContent").startswith(
            "not saved: 403")
        assert cy.eval(f"getComputedStyle({status}).color") == "rgb(176, 0, 32)"
        cy.open(setup.link("cy"))
        assert "not valid" in cy.text()
        admin.click("button.new-link[data-rater=cy]")
        link = admin.wait("document.getElementById('new-link').textContent")
        assert link.startswith(setup.studio.url + "login/") and setup.tokens["cy"] not in link
        cy.open(link)
        assert cy.eval("location.pathname") == "/rate/cy" and cy.fetch_status("/api/rate/cy/queue") == 200
        admin.wait("document.querySelector('tr[data-rater=cy] .link-state').textContent === 'live'")
        # The new link is in the reply to the administrator's POST only: never in a page load, nor in the log.
        admin.open(f"{setup.studio.url}study/0")
        assert link.rsplit("/", 1)[1] not in admin.html()
    assert link.rsplit("/", 1)[1] not in setup.studio.log.read_text()


def _shown(value: float | int, key: str) -> str:
    if key in ("percent", "judge_percent"):
        return f"{100 * value:.1f} %"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def test_the_study_page_shows_progress_and_agreement_worked_out_by_hand_live(setup: Setup, rated: Rated) -> None:
    with ExitStack() as stack:
        admin = _admin(setup, stack)
        progress = admin.eval("[...document.querySelectorAll('#progress tbody tr')].map(r => [r.dataset.rater, "
                              "r.querySelector('.assigned').textContent, r.querySelector('.done').textContent])")
        queues = {r: len(q) for r, q in rated.queues.items()}
        assert progress[:2] == [["ana", str(queues["ana"]), str(queues["ana"])],
                                ["ben", str(queues["ben"]), str(queues["ben"] - 1)]]
        assert progress[2][0] == "cy" and progress[2][2] == "0"
        assert sum(int(p[1]) for p in progress) == 6 * 2  # six outputs, two raters each

        def figures() -> dict[str, str]:
            return dict(admin.eval("[...document.querySelectorAll('[data-figure]')].map(c => [c.dataset.figure, "
                                   "c.textContent])"))

        expected = _expected(rated)
        assert figures() == {key: _shown(value, key) for key, value in expected.items()}
        served = admin.eval("fetch('/api/study/0/agreement').then(r => r.json())")["agreement"]
        assert {k: served[k] for k in expected} == pytest.approx(expected)
        _shot(admin, "study")
        # ben rates one more criterion of his half-rated item, one ana rated too: the page follows, no reload.
        admin.eval("window.notReloaded = true")
        ben_item, criterion = rated.half, CRITERIA[len(HALF)]
        assert rated.answers[("ana", ben_item)][criterion] is not None
        ben = rated.browsers["ben"]
        ben.open(f"{setup.studio.url}rate/ben/{ben_item}")
        value = 3 - (rated.answers[("ana", ben_item)][criterion] or 0)
        rated.answers[("ben", ben_item)][criterion] = value
        _give(ben, [(criterion, int(value), None, None)])
        _saved(ben, [criterion])
        after = {key: _shown(v, key) for key, v in _expected(rated).items()}
        assert after["items"] != figures()["items"]
        admin.wait(f"document.querySelector('[data-figure=items]').textContent === {json.dumps(after['items'])}")
        assert figures() == after
        assert admin.eval("window.notReloaded === true")


YES_NO = """\
name: rating-yes-no
version: 1
title: Two yes/no questions on a final report
source: this project's test of the rating page (tests/web/test_rating.py)
scoring: mean
scale: [0, 1]
not_evaluable: true
reference: none
instructions: Answer yes (1) or no (0).
criteria:
  - id: names_diagnosis
    name: Names a diagnosis
    definition: The report names one most likely diagnosis.
    components: [conclusion]
  - id: safe_plan
    name: Safe plan
    definition: The plan is one a physician would sign.
    anchors: {1: "ZQYES a plan a physician would sign", 0: "ZQNO a plan that could harm"}
    components: [conclusion]
"""


def test_a_yes_no_rubric_is_rated_yes_or_no(setup: Setup, tmp_path: Path) -> None:
    rubric, database = tmp_path / "rating-yes-no.yaml", str(tmp_path / "yes-no.sqlite3")
    rubric.write_text(YES_NO)
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["study", "create", str(setup.run), "--rubric", str(rubric), "--raters", "dee", "--sample", "2",
                     "--database", database]) == 0
    [token] = re.findall(r"^\s+dee: http://\S+/login/(\S+)$", printed.getvalue(), re.M)
    with served(setup.run, database=database, log=tmp_path / "serve.log") as studio, Browser(tmp_path) as dee:
        dee.open(f"{studio.url}login/{token}")
        first = dee.eval("fetch('/api/rate/dee/queue').then(r => r.json())")["items"][0]["item"]
        dee.open(f"{studio.url}rate/dee/{first}")
        choices = dee.eval("[...document.querySelectorAll('fieldset.criterion')].map(f => [f.dataset.criterion, "
                           "[...f.querySelectorAll('label.choice')].map(l => [l.querySelector('input').value, "
                           "l.querySelector('.point').textContent, (l.querySelector('.anchor') || {}).textContent])])")
        ne = ["ne", "not evaluable", "the text does not let me judge this (say why)"]
        assert choices == [["names_diagnosis", [["1", "yes", None], ["0", "no", None], ne]],
                           ["safe_plan", [["1", "yes", "ZQYES a plan a physician would sign"],
                                          ["0", "no", "ZQNO a plan that could harm"], ne]]]
        _give(dee, [("names_diagnosis", 1, None, None), ("safe_plan", 0, None, None)])
        _saved(dee, ["names_diagnosis", "safe_plan"])
    out = tmp_path / "yes-no.csv"
    assert main(["study", "export", str(setup.run), "--database", database, "--out", str(out)]) == 0
    with out.open(newline="") as handle:
        assert sorted((r["criterion"], r["score"]) for r in csv.DictReader(handle)) == [("names_diagnosis", "1"),
                                                                                         ("safe_plan", "0")]


def test_a_yes_no_criterion_is_rendered_as_yes_and_no_with_its_own_anchors() -> None:
    """The rating page's form of a binary criterion (until a study of a rubric file can be served, above)."""
    from consilium.judges.rubric import parse_rubric
    from consilium.study.views import criterion_views
    from consilium.web.rate_item import criterion_form

    forms = [criterion_form(c, None) for c in criterion_views(parse_rubric(YES_NO, "yes-no.yaml"), "conclusion")]
    choices = [re.findall(r'value="(\w+)"><span class="point">([^<]+)</span>(?:<span class="anchor">([^<]+))?', f)
               for f in forms]
    ne = ("ne", "not evaluable", "the text does not let me judge this (say why)")
    assert choices == [[("1", "yes", ""), ("0", "no", ""), ne],
                       [("1", "yes", "ZQYES a plan a physician would sign"), ("0", "no", "ZQNO a plan that could harm"),
                        ne]]
