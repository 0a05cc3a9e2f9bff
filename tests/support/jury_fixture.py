"""The jury tests' shared inputs: three cases, two scripted panel models and three scripted judges that
disagree by design (tests/judges/test_jury.py, tests/judges/test_jury_cohort.py). The tests read these constants to work
out the expected verdicts and agreement by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.scripts import STRUCTURED_REPORT, Scripted, sections

ROOT = Path(__file__).resolve().parents[2]
BASE_CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
CASES = {"A": "Short plan.", "B": "A plan of middling length with more words.",
         "C": "A long plan: admit, monitor the rhythm, cardiac MRI within days, no sport for six months, review."}
PANELS = {"gpt": "openai:gpt-4o", "claude": "anthropic:claude-3-5-sonnet"}
EXTRA = {"gpt": "", "claude": " Also repeat troponin and echo."}  # another length for the other panel
ORDINAL, BINARY = "otb-conclusion-alignment", "nmb-diagnosis-match"
#: Judge spec file stem -> its model id; j1 shares gpt-4o's family.
JUDGES = {"j1": "openai:gpt-4o-mini", "j2": "meta:llama-3-8b", "j3": "mistral:mistral-large"}
#: By design, per (case, panel): j1 favours its own family, j2 is harsh, j3 follows the case and cannot
#: judge case C's claude answer (its answer is never valid JSON).
SCORES: dict[str, dict[tuple[str, str], int | None]] = {
          "j1": {(c, p): 5 if p == "gpt" else 4 for c in CASES for p in PANELS},
          "j2": {(c, p): 3 if c == "C" else 2 for c in CASES for p in PANELS},
          "j3": {(c, p): None if (c, p) == ("C", "claude") else {"A": 1, "B": 3, "C": 5}[c]
                 for c in CASES for p in PANELS}}
MATCHES: dict[str, dict[tuple[str, str], bool | None]] = {
           "j1": {(c, p): (c, p) != ("A", "claude") for c in CASES for p in PANELS},
           "j2": {(c, p): (c, p) == ("C", "gpt") for c in CASES for p in PANELS},
           "j3": {(c, p): None if (c, p) == ("C", "claude") else c != "C" for c in CASES for p in PANELS}}


def panel_script(key: str) -> dict[str, Any]:
    """The scripted panel model ``key``: its synthesis answers each case with that case's plan, marked
    ``<key>-answer`` so the judges can tell the panels apart."""
    script = (Scripted(PANELS[key])
              .roles("Cardiologist", "Radiologist", "Internist", justification=("x", "y", "z"))
              .structured_opinion("myocarditis", clinical_data="c", differential_diagnosis="d",
                                  diagnostic_strategy="d")
              .opinion("Myocarditis."))
    for case, plan in CASES.items():
        text = f"{plan}{EXTRA[key]} ({key}-answer)"
        script.synthesis(sections(text, final_differential="1. Myocarditis", diagnostic_plan="MRI"),
                         where={"contains_all": [STRUCTURED_REPORT, f"CASE-{case}"]})
        script.synthesis(text, where={"contains": f"CASE-{case}"})
    return script.accept().build()


def judge_script(name: str, binary: bool) -> dict[str, Any]:
    """The scripted judge ``name``: per (case, panel), its ``MATCHES`` (``binary``) or ``SCORES`` answer, and
    text that is not JSON where the value is None."""
    table: dict[tuple[str, str], Any] = (MATCHES if binary else SCORES)[name]
    script = Scripted(JUDGES[name])
    for (case, panel), value in table.items():
        answer: Any = ("this is not JSON" if value is None else
                       {"rationale": "r", "match": value} if binary else {"rationale": "r", "score": value})
        script.judge(answer, where={"contains_all": [f"CASE-{case}", f"{panel}-answer"]})
    return script.build()
