"""The browse pages as a cohort changes under them: new arms arriving by server-sent events while the index is open,
a judgement made again after the cohort, and a board cohort's arms (tests/web/browse_cohort.py's cohort; the board
cohort of tests/support/board_cohort.py)."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from browse_cohort import CASES, FAILED, FORMATS, MODELS, WHOLE_CASE, build_browse_cohort
from support.board_cohort import WEIGHTED, nsclc_agents_trace
from support.browser import Browser
from support.cohorts import copy_cohort
from support.isolation import isolated
from support.served import served
from test_browse import CSP_WATCH, ROWS, arm_scores, arms_csv, visit

from consilium.cli import main
from consilium.runfolder import RunFolder
from consilium.web.browse_rows import arms_of

pytestmark = pytest.mark.localhost  # the studio and the browser's DevTools socket, on 127.0.0.1


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browse-live")
    with isolated(tmp):
        return build_browse_cohort(tmp)


def test_a_running_cohort_s_index_gains_its_new_arms_and_progress_without_a_reload(
        cohort: Path, tmp_path: Path) -> None:
    running = tmp_path / cohort.name
    shutil.copytree(cohort, running, ignore=shutil.ignore_patterns("*.log"))
    folder = RunFolder(running)
    every = folder.arms(named=False)
    late = [r for r in every if r.case_id == "mac-10"]
    folder.write_arms([r for r in every if r.case_id != "mac-10"])
    with served(running) as live, Browser(tmp_path) as browser:
        browser.open(live.admin_link)
        browser.fill("select[data-filter=model]", "panel-b")
        assert browser.text("#progress") == "8 of 12 planned arms finished (status: completed)"
        browser.eval("window.notReloaded = true")
        for count in (10, 12):  # two arms finish, then two more
            folder.write_arms([r for r in every if r.case_id != "mac-10"] + late[:count - 8])
            browser.wait(f"document.querySelectorAll('#arms tbody tr').length === {count}", timeout=20)
            browser.wait(f"document.getElementById('progress').textContent === "
                         f"'{count} of 12 planned arms finished (status: completed)'", timeout=20)
        assert browser.eval("window.notReloaded") is True
        # The new rows sit in natural order (mac-10 after mac-2), and the filter chosen before holds for them.
        assert browser.eval("Array.from(document.querySelectorAll('#arms tbody tr')).map(r => r.dataset.case)") == [
            case for case in CASES for _ in MODELS for _ in FORMATS]
        assert browser.eval(f"{ROWS}.map(r => r.dataset.model)") == ["panel-b"] * 6
        assert browser.text("#shown") == "6" and browser.text("#total") == "12"
        failed = browser.eval("document.querySelector('#arms tr.failed').dataset.case")
        assert failed == FAILED[1]
    assert "Traceback" not in live.log.read_text()


def interrupted(cohort: Path, into: Path) -> Path:
    """A copy of the cohort as if killed before its last case: mac-10's arms gone (rows, log lines, traces and
    judgements), no judgements.csv, the manifest aborted."""
    copy = into / cohort.name
    shutil.copytree(cohort, copy, ignore=shutil.ignore_patterns("*.log", ".lock"))
    folder = RunFolder(copy)
    rows = folder.arms(named=False)
    folder.write_arms([r for r in rows if r.case_id != "mac-10"])
    lines = folder.arms_jsonl.read_text().splitlines(keepends=True)
    folder.arms_jsonl.write_text("".join(line for line in lines if json.loads(line)["case_id"] != "mac-10"))
    for row in rows:
        if row.case_id == "mac-10" and row.trace:
            trace = folder.trace_location(row.trace)
            for file in [trace, *(f for f, _ in folder.judgements_of(trace))]:
                file.unlink()
    folder.judgements_csv.unlink()
    manifest = json.loads(folder.manifest_path.read_text())
    folder.manifest_path.write_text(json.dumps({**manifest, "status": "aborted"}))
    return copy


def test_a_resumed_cohort_s_arms_and_scores_arrive_in_the_open_index(cohort: Path, tmp_path: Path) -> None:
    running = interrupted(cohort, tmp_path)
    with served(running) as live, Browser(tmp_path) as browser:
        browser.open(live.admin_link)
        assert browser.text("#progress") == "8 of 12 planned arms finished (status: aborted)"
        assert browser.eval("document.querySelectorAll('#arms tbody tr').length") == 8
        browser.eval("window.notReloaded = true")
        assert main(["cohort", "--resume", str(running), "--concurrency", "1"]) == 1  # its failed arm again
        browser.wait("document.getElementById('progress').textContent === "
                     "'12 of 12 planned arms finished (status: completed)'", timeout=30)
        browser.wait("document.querySelectorAll('#arms tbody tr').length === 12", timeout=30)
        expected = {(m, f): statistics.fmean(arm_scores(m, f, "mac-10")) for m in MODELS for f in FORMATS
                    if (m, "mac-10", f) != FAILED}
        browser.wait("Array.from(document.querySelectorAll(\"#arms tr[data-case='mac-10']\")).filter(r => "
                     "r.getAttribute('data-score-0')).length === 3", timeout=30)  # judged at the cohort's end
        shown = browser.eval("Array.from(document.querySelectorAll(\"#arms tr[data-case='mac-10']\")).map(r => "
                             "[r.dataset.model, r.dataset.format, r.getAttribute('data-score-0')])")
        assert {(m, f): round(float(s), 4) for m, f, s in shown if s} == {k: round(v, 4) for k, v in expected.items()}
        assert browser.eval("window.notReloaded") is True
    assert "Traceback" not in live.log.read_text()


def test_a_judgement_made_again_after_the_cohort_shows_its_new_score(cohort: Path, tmp_path: Path) -> None:
    copy = tmp_path / cohort.name
    shutil.copytree(cohort, copy)
    folder = RunFolder(copy)
    model, fmt, case = "panel-b", "free-form", "mac-1"
    [row] = [r for r in arms_csv(copy) if (r["model"], r["format"], r["case_id"]) == (model, fmt, case)]
    trace = folder.trace_location(row["trace"])
    [(_, judgement)] = folder.judgements_of(trace)
    # Every per-output item scored 3 now: a judging after the cohort, newer than judgements.csv.
    items = [i.model_copy(update={"score": 3.0}) if i.criterion not in WHOLE_CASE else i for i in judgement.items]
    folder.write_judgement(trace, judgement.model_copy(update={"items": items}))
    scores = {(a.model, a.row.format, a.row.case_id): a.scores for a in arms_of(folder)}
    assert scores[(model, fmt, case)]["ai-consilium"].mean == 3.0
    other = scores[("panel-a", fmt, case)]["ai-consilium"]
    assert other.mean == pytest.approx(statistics.fmean(arm_scores("panel-a", fmt, case)))
    assert other.not_evaluable == 1 and other.scored == len(arm_scores("panel-a", fmt, case))


def test_a_board_arm_shows_its_transcript_and_its_weighted_score(four_decision_board: Path, tmp_path: Path) -> None:
    board = copy_cohort(four_decision_board, tmp_path)
    transcript = json.loads(nsclc_agents_trace(board).read_text())["transcript"]
    with served(board) as live, Browser(tmp_path) as browser:
        browser._run(browser._send("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_WATCH}))
        browser.open(live.admin_link)
        selector = "#arms tr[data-case='tumor-board-nsclc'][data-format='board-agents']"
        assert browser.eval(f"document.querySelector(\"{selector}\").dataset.protocol") == "board"
        assert browser.eval(f"document.querySelector(\"{selector}\").cells[11].textContent") == (
            f"{WEIGHTED:.2f} weighted mean (3 scored, 1 out of scope, 0 not evaluable)")
        visit(browser, live.url + "runs/0/arm/" + browser.eval(f"document.querySelector(\"{selector}\").dataset.id"))
        assert "Transcript" in browser.eval("Array.from(document.querySelectorAll('h3')).map(h => h.textContent)")
        assert transcript.strip().splitlines()[0] in browser.text("section.protocol")
        assert f"{WEIGHTED:.2f} weighted mean" in browser.text("body")
