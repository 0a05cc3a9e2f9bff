"""A physician at the table, in the browser (docs/studio-web.md): a run paused for a person (``simulate --human``
with an answers file short of an answer) is listed by the studio, answered in a real headless Chromium, and
resumed to its end; the trace keeps the person's answers as typed, and replays as identical."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.browser import Browser
from support.scripts import Scripted
from support.served import served

from consilium.cli import main
from consilium.cohort.lock import RunLock

pytestmark = pytest.mark.localhost  # the studio and the browser's DevTools socket, on 127.0.0.1

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
#: What the moderator writes: markup and an ampersand, which the page must show as text.
REPORT_1 = "Report v1: acute <b>myocarditis</b> is likely & needs confirming."
REPORT_2 = "Report v2: acute myocarditis; confirm with cardiac MRI (late gadolinium enhancement)."
OPINION = "Troponin rise after a viral illness with normal coronaries: acute myocarditis."
#: What the person types in the browser.
DISSENT = {"vote": "dissent", "reason": "The report names no confirming test.",
           "requested_change": "Add cardiac MRI with late gadolinium enhancement."}
ACCEPT = {"vote": "accept", "reason": "Now it names the confirming test."}
#: Set to write the screenshots into docs/images (``CONSILIUM_DOC_SCREENSHOTS=1 pytest tests/web/test_seat.py``).
SHOTS = ROOT / "docs" / "images"


def _shot(browser: Browser, name: str) -> None:
    if os.environ.get("CONSILIUM_DOC_SCREENSHOTS"):
        browser.screenshot(SHOTS / f"studio-seat-{name}.png")


def _paused(tmp_path: Path) -> Path:
    """A free-form run with the Cardiologist's seat taken by a person whose answers file holds the opinion and
    no vote: it pauses at the round-1 vote (exit 2). Its folder."""
    panel = (Scripted("seat-panel")
             .roles("Internist", "Neurologist", "Radiologist", justification="j")
             .opinion("opinion of {role}")
             .synthesis(REPORT_1)
             .revision(REPORT_2, summary="adds cardiac MRI")
             .accept(reason="models agree"))
    spec = panel.write(tmp_path / "panel.json")
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"free-form": {"opinion": OPINION}}), encoding="utf-8")
    assert main(["simulate", "--case", str(CASE), "--model", spec, "--format", "free-form", "--out",
                 str(tmp_path / "runs"), "--human", "Cardiologist", "--answers", str(answers)]) == 2
    [folder] = (tmp_path / "runs").iterdir()
    assert not list(folder.glob("*.trace.json"))
    return folder


def _vote(browser: Browser, vote: str, reason: str, change: str = "") -> None:
    browser.click(f"#seat-{vote}")
    browser.fill("#seat-reason", reason)
    browser.fill("#seat-change", change)
    browser.click("#seat-submit")


def _refused(browser: Browser) -> str:
    """The refusal the page shows in red, once it is shown."""
    return str(browser.wait("(() => { const e = document.getElementById('seat-error');"
                            " return e && !e.classList.contains('hidden') && e.textContent; })()"))


def _turn(browser: Browser, showing: str = "") -> str:
    """The turn line of the page, once it says ``showing`` (the run has moved on to that prompt)."""
    return str(browser.wait(f"(() => {{ const e = document.getElementById('seat-turn');"
                            f" return e && e.innerText.includes({json.dumps(showing)}) && e.innerText; }})()",
                            timeout=30))


def test_a_paused_run_is_answered_in_the_browser_and_finishes_as_simulate_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _paused(tmp_path)
    case_question = yaml.safe_load(CASE.read_text(encoding="utf-8"))["question"]
    with served(tmp_path / "runs") as studio, Browser(tmp_path) as browser:
        browser.open(studio.admin_link)
        browser.open(studio.url + "seats")
        listed = browser.text("#seats")
        assert folder.name in listed and "Cardiologist" in listed
        assert "waits for free-form · vote, review round 1 (report version 1)" in listed
        _shot(browser, "list")
        browser.click("#seats a")
        browser.wait("location.pathname.startsWith('/seats/0/')")
        assert _turn(browser) == "Your turn: Cardiologist (supporting) · free-form · vote, review round 1 " \
                                 "(report version 1)"
        assert case_question in browser.text("#seat-case")
        assert browser.text("#seat-report") == REPORT_1  # as text: the markup is escaped, not rendered
        assert "<b>" not in browser.eval("document.getElementById('seat-report').innerHTML").replace("&lt;b&gt;", "")

        # No reason: refused on the page, in red, as the terminal would refuse it; the run keeps waiting.
        _vote(browser, "dissent", "", DISSENT["requested_change"])
        assert "reason: give a reason" in _refused(browser)
        _shot(browser, "vote")
        assert browser.eval("getComputedStyle(document.getElementById('seat-error')).color") == "rgb(176, 0, 32)"
        browser.open(browser.eval("location.href"))
        assert "review round 1" in _turn(browser)

        # A terminal resume holds the run (its lock): the page's answer starts no second one, and says why in red.
        with RunLock(folder, holder="a terminal"):
            _vote(browser, "dissent", DISSENT["reason"], DISSENT["requested_change"])
            failed = str(browser.wait("(() => { const e = document.getElementById('seat-failed');"
                                      " return e && e.innerText; })()"))
            assert "in use by this run or a resume of it" in failed
        assert "review round 1" in _turn(browser)
        _vote(browser, "dissent", DISSENT["reason"], DISSENT["requested_change"])
        assert "review round 2 (report version 2)" in _turn(browser, "round 2")
        assert browser.text("#seat-report") == REPORT_2
        # The run holds its folder's lock while it waits in the browser: a terminal resume is refused.
        capsys.readouterr()
        assert main(["simulate", "--resume", str(folder)]) == 2
        assert "in use by this run or a resume of it" in capsys.readouterr().err

        # A reason over the vote's 400 characters: refused while the run waits, live.
        _vote(browser, "accept", "x" * 401)
        assert "reason" in _refused(browser) and "400" in _refused(browser)
        _vote(browser, "accept", ACCEPT["reason"])
        browser.wait("!!document.getElementById('seat-finished')", timeout=30)
        assert "consensus" in browser.text("#seat")
        browser.open(studio.url + "seats")
        assert "finished" in browser.text("#seats")

    [path] = folder.glob("*.free-form.trace.json")
    trace: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert trace["status"] == "completed" and trace["stop_reason"] == "consensus"
    assert trace["human"]["inputs"] == [
        {"stage": "opinion", "round": None, "answer": OPINION, "source": "file"},
        {"stage": "vote", "round": 1, "answer": DISSENT, "source": "web"},
        {"stage": "vote", "round": 2, "answer": {**ACCEPT, "requested_change": None}, "source": "web"}]
    # The person's dissent is the only one of round 1 (three models accept): 1 of 4; round 2 is unanimous.
    assert [r["dissent_fraction"] for r in trace["rounds"]] == [0.25, 0.0]
    assert [r["text"] for r in trace["reports"]] == [REPORT_1, REPORT_2]
    assert json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["traces"] == [path.name]
    capsys.readouterr()
    assert main(["replay", str(folder)]) == 0
    assert "identical" in capsys.readouterr().out


#: The person's structured opinion, section by section, as typed in the page.
SECTIONS = {"clinical_data": "24-year-old man; troponin 410 -> 690 ng/L; LVEF 45%.",
            "syndromes": "Acute myocardial injury after a viral prodrome.",
            "differential_diagnosis": "1. Acute viral myocarditis 2. Myopericarditis",
            "diagnostic_strategy": "Cardiac MRI with late gadolinium enhancement.",
            "management_strategy": "Telemetry; no competitive sport for 3-6 months.",
            "final_conclusion": "Acute viral myocarditis."}


def test_a_structured_opinion_is_written_section_by_section_and_an_over_long_one_is_refused(
        tmp_path: Path) -> None:
    # The example panel: the radiologist dissents in round 1, so the person votes in two rounds.
    answers = tmp_path / "answers.yaml"
    answers.write_text("{}\n", encoding="utf-8")
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{ROOT / 'examples/models/scripted-panel.yaml'}",
                 "--format", "structured", "--out", str(tmp_path / "runs"), "--human", "Cardiologist",
                 "--answers", str(answers)]) == 2
    [folder] = (tmp_path / "runs").iterdir()
    with served(tmp_path / "runs") as studio, Browser(tmp_path) as browser:
        browser.open(studio.url + "seats")  # no session: refused
        assert "403" in browser.text()
        browser.open(studio.admin_link)
        browser.open(studio.url + f"seats/0/{folder.name}")
        assert "structured · opinion" in _turn(browser)
        label = browser.text("form.seat label.seat-text")  # the first section's label and cap
        assert label.startswith("clinical data (at most ")
        cap = int(label.split("at most ")[1].split(" ")[0])
        for name, text in SECTIONS.items():
            browser.fill(f"#seat-{name}", text)
        _shot(browser, "opinion")
        browser.fill("#seat-clinical_data", "x" * (cap + 1))
        browser.click("#seat-submit")
        assert "clinical_data" in _refused(browser)
        browser.fill("#seat-clinical_data", SECTIONS["clinical_data"])
        browser.click("#seat-submit")
        assert "review round 1" in _turn(browser, "round 1")
        _vote(browser, "accept", "The plan is sound.")
        assert "review round 2" in _turn(browser, "round 2")
        _vote(browser, "accept", "Still sound.")
        browser.wait("!!document.getElementById('seat-finished')", timeout=30)
    [path] = folder.glob("*.structured.trace.json")
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace["human"]["inputs"][0] == {"stage": "opinion", "round": None, "answer": SECTIONS, "source": "web"}
    [opinion] = [o for o in trace["opinions"] if o["role"] == "cardiologist"]
    assert opinion["sections"] == SECTIONS
    assert [(i["round"], i["answer"]["vote"], i["source"]) for i in trace["human"]["inputs"][1:]] == [
        (1, "accept", "web"), (2, "accept", "web")]


def test_a_run_stopped_before_its_first_checkpoint_is_continued_and_takes_the_files_answers_first(
        tmp_path: Path) -> None:
    # A run killed during its first step has its session and an empty checkpoint: nothing to resume but the start.
    folder = _paused(tmp_path)
    (folder / "human" / "checkpoints.sqlite").write_bytes(b"")
    (folder / "human" / "free-form.calls.json").unlink()
    with served(tmp_path / "runs") as studio, Browser(tmp_path) as browser:
        browser.open(studio.admin_link)
        browser.open(studio.url + "seats")
        assert "stopped between steps" in browser.text("#seats")
        browser.open(studio.url + f"seats/0/{folder.name}")
        browser.click("#seat-start")
        # The opinion comes from the run's answers file, as simulate --resume would take it; the vote is asked.
        assert "review round 1" in _turn(browser, "round 1")
        _vote(browser, "accept", "Agreed.")
        browser.wait("!!document.getElementById('seat-finished')", timeout=30)
    [path] = folder.glob("*.free-form.trace.json")
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert [(i["stage"], i["source"]) for i in trace["human"]["inputs"]] == [("opinion", "file"), ("vote", "web")]
    assert trace["stop_reason"] == "consensus" and len(trace["rounds"]) == 1
