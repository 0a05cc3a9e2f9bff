"""The browse pages in a real headless Chromium, over a scripted cohort (tests/web/browse_cohort.py) served by
``python -m consilium serve``: every expected value is worked out here from the cohort's constants."""

from __future__ import annotations

import csv
import json
import os
import shutil
import statistics
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browse_cohort import (
    APPLIES,
    CASES,
    COMPONENTS,
    DISSENT_REASON,
    FAILED,
    FORMATS,
    HOSTILE,
    HOSTILE_CASE,
    HOSTILE_MODEL,
    MODELS,
    NOT_EVALUABLE,
    PRICES,
    REFERENCE,
    VOTES,
    WHOLE_CASE,
    build_browse_cohort,
    rationale,
    score,
    stop_reason,
)
from support.browser import Browser
from support.isolation import isolated
from support.served import Served, served

pytestmark = pytest.mark.localhost  # the studio and the browser's DevTools socket, on 127.0.0.1

#: Collects every Content Security Policy violation of a page from its first line (set before any page script).
CSP_WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
             "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
#: Set to write the screenshots into docs/images (``CONSILIUM_DOC_SCREENSHOTS=1 pytest tests/web/test_browse.py``).
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "images"
ROWS = "Array.from(document.querySelectorAll('#arms tbody tr')).filter(r => !r.classList.contains('hidden'))"


def arm_scores(model: str, fmt: str, case: str) -> list[int]:
    """The arm's per-output scores (whole-case criteria and the not-evaluable item left out)."""
    return [s for component in COMPONENTS[fmt] for criterion in APPLIES[component] if criterion not in WHOLE_CASE
            if (s := score(model, fmt, case, component, criterion)) is not None]


def not_evaluable(model: str, fmt: str, case: str) -> int:
    return int((model, fmt, case) == NOT_EVALUABLE[:3])


def arms_csv(cohort: Path) -> list[dict[str, Any]]:
    """The cohort's arms.csv as plain text cells (the test reads the file itself)."""
    with (cohort / "arms.csv").open() as handle:
        return list(csv.DictReader(handle))


def dollars(row: dict[str, str]) -> float | None:
    """An arm's panel cost from its tokens at the priced panel's prices; None for the unpriced one."""
    if row["model"] != MODELS[0]:
        return None
    return (int(row["input_tokens"]) * PRICES["input"] + int(row["output_tokens"]) * PRICES["output"]) / 1e6


def usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}" if value >= 0.01 else f"${value:.6f}"


def completed(model: str, fmt: str) -> list[str]:
    return [case for case in CASES if (model, case, fmt) != FAILED]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browse")
    with isolated(tmp):
        return build_browse_cohort(tmp)


@pytest.fixture(scope="module")
def traces_only(cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder that is no cohort: one trace (the hostile case's, by the hostile model) and its judgement."""
    folder = tmp_path_factory.mktemp("single") / "single-run"
    folder.mkdir()
    [row] = [r for r in arms_csv(cohort) if (r["case_id"], r["model"], r["format"]) ==
             (HOSTILE_CASE, HOSTILE_MODEL, "free-form")]
    trace = cohort / row["trace"]
    for file in trace.parent.glob(f"{HOSTILE_CASE}.free-form.*"):
        shutil.copy(file, folder / file.name)
    return folder


@pytest.fixture(scope="module")
def studio(cohort: Path, traces_only: Path) -> Iterator[Served]:
    # The cohort, a folder of traces only, and the folder the cohort is in (browsed as the cohorts it holds).
    with served(cohort, traces_only, cohort.parent, log=cohort.parent.parent / "serve.log") as running:
        yield running


@pytest.fixture(scope="module")
def browser(studio: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with Browser(tmp_path_factory.mktemp("chromium")) as opened:
        opened._run(opened._send("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_WATCH}))
        opened.open(studio.admin_link)
        yield opened


def visit(browser: Browser, url: str) -> None:
    browser.open(url)
    assert browser.eval("window.__csp") == [], f"{url}: a Content Security Policy violation"


def shot(browser: Browser, name: str) -> None:
    if os.environ.get("CONSILIUM_DOC_SCREENSHOTS"):
        browser.screenshot(SHOTS / f"studio-browse-{name}.png")


def arm_ids(browser: Browser, studio: Served) -> dict[tuple[str, str, str], str]:
    """(model, format, case) → the arm's page id, as the index links them."""
    visit(browser, studio.url + "runs/0/")
    rows = browser.eval("Array.from(document.querySelectorAll('#arms tbody tr')).map(r => [r.dataset.model, "
                        "r.dataset.format, r.dataset.case, r.dataset.id])")
    return {(m, f, c): i for m, f, c, i in rows}


def test_every_browse_page_refuses_a_request_without_the_admin_session(studio: Served) -> None:
    for path in ("", "runs/0/", "runs/0/summary", "runs/0/events", "runs/0/case/mac-1", "runs/0/arm/0", "runs/1/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(studio.url + path, timeout=10)
        assert refused.value.code == 403, path


def test_the_home_page_lists_the_served_folders_and_the_cohorts_of_a_folder_of_them(
        browser: Browser, studio: Served, cohort: Path) -> None:
    visit(browser, studio.url)
    assert browser.eval("Array.from(document.querySelectorAll('li a')).map(a => [a.textContent, "
                        "a.getAttribute('href')])") == [[cohort.name, "/runs/0/"], ["single-run", "/runs/1/"],
                                                        [cohort.name, "/runs/2/"]]
    visit(browser, studio.url + "runs/2/")
    assert browser.eval("document.querySelectorAll('#arms tbody tr').length") == len(MODELS) * len(FORMATS) * len(CASES)


def test_the_index_lists_every_arm_in_natural_order(browser: Browser, studio: Served) -> None:
    visit(browser, studio.url + "runs/0/")
    shown = browser.eval(f"{ROWS}.map(r => [r.dataset.case, r.dataset.model, r.dataset.format])")
    assert shown == [[case, model, fmt] for case in CASES for model in MODELS for fmt in FORMATS]
    assert browser.text("#progress") == "12 of 12 planned arms finished (status: completed)"
    shot(browser, "index")


def test_the_index_shows_each_arm_s_cost_and_sorts_by_it(browser: Browser, studio: Served, cohort: Path) -> None:
    table = {(r["case_id"], r["model"], r["format"]): r for r in arms_csv(cohort)}
    visit(browser, studio.url + "runs/0/?sort=cost&order=desc")
    shown = browser.eval(f"{ROWS}.map(r => [r.dataset.case, r.dataset.model, r.dataset.format, "
                         "r.cells[8].textContent])")
    priced = sorted((dollars(r), key) for key, r in table.items() if dollars(r) is not None)[::-1]
    assert [tuple(s[:3]) for s in shown[:len(priced)]] == [key for _, key in priced]
    assert all(s[3] == usd(dollars(table[tuple(s[:3])])) for s in shown)
    assert {s[1] for s in shown[len(priced):]} == {MODELS[1]}  # unpriced: "—", last


def test_the_index_filters_by_model_status_and_score_in_the_page_and_by_the_url(browser: Browser,
                                                                                studio: Served) -> None:
    visit(browser, studio.url + "runs/0/")
    browser.fill("select[data-filter=model]", "panel-b")
    assert browser.eval(f"{ROWS}.map(r => r.dataset.model)") == ["panel-b"] * 6
    browser.fill("select[data-filter=status]", "failed")
    assert browser.eval(f"{ROWS}.map(r => [r.dataset.case, r.dataset.format])") == [[FAILED[1], FAILED[2]]]
    assert browser.text("#shown") == "1"
    assert "model=panel-b" in browser.eval("location.search") and "status=failed" in browser.eval("location.search")
    # The same filters as a link, rendered by the server (its rows only, before any script).
    visit(browser, studio.url + "runs/0/?model=panel-a&stop=round_limit")
    expected = [[c, f] for (m, c, f), votes in VOTES.items() if m == "panel-a" and stop_reason(votes) == "round_limit"]
    assert browser.eval("Array.from(document.querySelectorAll('#arms tbody tr')).map(r => [r.dataset.case, "
                        "r.dataset.format])") == expected
    # A score range: the arms whose mean is at least 1.5.
    visit(browser, studio.url + "runs/0/")
    browser.fill("input[data-filter=min]", "1.5")
    high = sorted((c, m, f) for m in MODELS for f in FORMATS for c in completed(m, f)
                  if statistics.fmean(arm_scores(m, f, c)) >= 1.5)
    assert sorted(tuple(r) for r in browser.eval(f"{ROWS}.map(r => [r.dataset.case, r.dataset.model, "
                                                 "r.dataset.format])")) == high


def test_the_index_sorts_by_score_with_the_unscored_failed_arm_last(browser: Browser, studio: Served) -> None:
    means = {(m, f, c): statistics.fmean(arm_scores(m, f, c)) for m in MODELS for f in FORMATS for c in completed(m, f)}
    for url, click in ((studio.url + "runs/0/", True), (studio.url + "runs/0/?sort=score-0", False)):
        visit(browser, url)
        if click:
            browser.click("th[data-sort=score-0]")
        values = browser.eval(f"{ROWS}.map(r => [r.dataset.model, r.dataset.format, r.dataset.case, "
                              "r.getAttribute('data-score-0')])")
        assert [round(float(v[3]), 4) for v in values[:-1]] == sorted(round(v, 4) for v in means.values())
        assert tuple(values[-1]) == (FAILED[0], FAILED[2], FAILED[1], "")


def test_the_summary_holds_the_report_figures_worked_out_by_hand(browser: Browser, studio: Served,
                                                                 cohort: Path) -> None:
    table = arms_csv(cohort)
    visit(browser, studio.url + "runs/0/summary")
    shot(browser, "summary")
    rows = browser.eval("Array.from(document.querySelectorAll('table.summary tbody tr')).map(r => "
                        "Array.from(r.cells).map(c => c.textContent))")
    by = {(r[0], r[1]): r for r in rows}
    for model in (*MODELS, "pooled"):
        for fmt in FORMATS:
            mine = [(m, c) for m in MODELS for c in CASES if model in (m, "pooled") and (m, c, fmt) in VOTES]
            arms = sum(model in (m, "pooled") for m in MODELS) * len(CASES)
            stops = [stop_reason(VOTES[(m, c, fmt)]) for m, c in mine]
            scores = [s for m, c in mine for s in arm_scores(m, fmt, c)]
            missing = sum(not_evaluable(m, fmt, c) for m, c in mine)
            row = by[(model, fmt)]
            assert row[2:5] == [str(arms), str(len(mine)), str(arms - len(mine))]
            assert row[5] == f"{100 * stops.count('consensus') / len(mine):.1f}"
            assert row[6] == f"{statistics.fmean(len(VOTES[(m, c, fmt)]) for m, c in mine):.2f}"
            assert row[9] == f"{statistics.fmean(scores):.2f} ({len(scores)} scored, {missing} not evaluable)"
            costs = [dollars(r) for r in table if model in (r["model"], "pooled") and r["format"] == fmt
                     and r["status"] == "completed"]
            assert row[10] == usd(None if None in costs else sum(c for c in costs if c is not None))
            assert ("failed" in browser.eval(f"document.querySelectorAll('table.summary tbody tr')[{rows.index(row)}]"
                                             ".cells[4].className")) == (arms != len(mine))


def test_an_arm_page_shows_votes_report_diffs_conclusion_by_reference_scores_and_cost(
        browser: Browser, studio: Served, cohort: Path) -> None:
    key = ("panel-a", "free-form", "mac-2")  # three rounds, dissent in each: the round limit, three report versions
    visit(browser, studio.url + f"runs/0/arm/{arm_ids(browser, studio)[key]}")
    shot(browser, "arm")
    dissents = browser.eval("Array.from(document.querySelectorAll('td.dissent')).map(td => "
                            "td.parentElement.cells[2].textContent)")
    assert dissents == [DISSENT_REASON] * sum(len(r) for r in VOTES[("panel-a", "mac-2", "free-form")])
    diffs = browser.eval("Array.from(document.querySelectorAll('details.report-diff')).map(d => "
                         "[d.querySelectorAll('ins').length, d.querySelectorAll('del').length])")
    assert len(diffs) == 2 and all(ins and dels for ins, dels in diffs)  # v1 → v2 → v3
    first = browser.eval("[...document.querySelectorAll('details.report-diff')[0].querySelectorAll('del, ins')]"
                         ".map(e => e.tagName + ' ' + e.textContent)")
    assert "DEL amoxicillin" in first and "INS doxycycline" in first
    side = browser.text(".side")
    assert REFERENCE in side and "revised in round 2" in side
    scores = browser.eval("Array.from(document.querySelectorAll('table.scores tbody tr')).map(r => "
                          "Array.from(r.cells).map(c => c.textContent))")
    assert ["conclusion", "c1", str(score(*key[:2], "mac-2", "conclusion", "c1")),
            rationale(*key[:2], "mac-2", "conclusion", "c1")] in scores
    row = next(r for r in arms_csv(cohort) if (r["model"], r["format"], r["case_id"]) == key)
    assert browser.eval("Array.from(document.querySelectorAll('table.cost tbody tr')[0].cells).map(c => "
                        "c.textContent)") == ["panel", row["input_tokens"], row["output_tokens"], row["calls"],
                                              usd(dollars(row))]
    assert browser.eval("document.querySelectorAll('table.cost tbody tr').length") == 4  # panel, judge, both


def test_the_failed_arm_is_red_with_its_error_on_the_index_its_page_and_its_case(browser: Browser,
                                                                              studio: Served) -> None:
    model, case, fmt = FAILED
    visit(browser, studio.url + "runs/0/")
    selector = f"#arms tr[data-case='{case}'][data-model='{model}'][data-format='{fmt}']"
    assert browser.eval(f"document.querySelector(\"{selector}\").className") == "arm failed"
    assert "ModelError" in browser.text(selector)
    assert browser.eval(f"getComputedStyle(document.querySelector(\"{selector} td\")).color") == "rgb(176, 0, 32)"
    visit(browser, studio.url + f"runs/0/arm/{arm_ids(browser, studio)[(model, fmt, case)]}")
    assert "ModelError" in browser.text(".error.failed")
    visit(browser, studio.url + f"runs/0/case/{case}")
    assert "ModelError" in browser.text("td.variant.failed")


def test_the_case_page_shows_each_model_s_variants_side_by_side(browser: Browser, studio: Served) -> None:
    visit(browser, studio.url + "runs/0/case/mac-10")
    shot(browser, "case")
    assert browser.eval("Array.from(document.querySelectorAll('table.variants thead th')).map(t => "
                        "t.textContent)") == ["model", *FORMATS]
    cells = browser.eval("Array.from(document.querySelectorAll('table.variants tbody tr')).map(r => "
                         "[r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent])")
    assert [c[0] for c in cells] == list(MODELS)
    assert "ARM-A-FF" in cells[0][1] and "ARM-A-ST" in cells[0][2] and "ARM-B-FF" in cells[1][1]
    mean = statistics.fmean(arm_scores("panel-a", "free-form", "mac-10"))
    assert f"ai-consilium: {mean:.2f}" in cells[0][1]
    assert REFERENCE in browser.text(".side")


def test_hostile_case_and_model_text_renders_as_text(browser: Browser, studio: Served) -> None:
    ids = arm_ids(browser, studio)
    pages = [f"runs/0/case/{HOSTILE_CASE}", f"runs/0/arm/{ids[(HOSTILE_MODEL, 'free-form', HOSTILE_CASE)]}",
             "runs/1/", f"runs/1/case/{HOSTILE_CASE}"]
    for path in pages:
        visit(browser, studio.url + path)
        assert browser.eval("window.PWNED === undefined && document.getElementById('pwned') === null && "
                            "document.querySelectorAll('img, body script').length === 0"), path
        if "arm" in path or "case" in path:
            assert HOSTILE in browser.text("body"), path


def test_a_folder_of_traces_only_is_browsable(browser: Browser, studio: Served) -> None:
    visit(browser, studio.url + "runs/1/")
    rows = browser.eval(f"{ROWS}.map(r => [r.dataset.case, r.dataset.model, r.dataset.format, r.dataset.id])")
    assert [r[:3] for r in rows] == [[HOSTILE_CASE, HOSTILE_MODEL, "free-form"]]
    visit(browser, studio.url + f"runs/1/arm/{rows[0][3]}")
    assert DISSENT_REASON in browser.text("body") and json.dumps(REFERENCE)[1:-1] in browser.text(".side")
