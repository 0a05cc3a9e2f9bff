"""Strict patient-level success, npcbench.txt Eq. 1 (§4.1 "Patient-level Metrics"; App. C.2.1 Eqs. A2–A3):
a patient counts only when every scored element is correct. Here a patient is a
case and its elements are the signed criteria of ``reference.rubric``: a requirement is correct when
met, an error criterion when absent (App. D.3). A not-evaluable element leaves the patient undecided
(not evaluable, counted and shown), unless another element is already wrong.

Every expected number is worked out here from the fixture's inputs.
"""

from __future__ import annotations

import csv
import json
import math
from typing import Any

import pytest
from scipy.stats import binomtest
from support.scripts import Scripted
from support.signed_criteria_cohort import judged_text, marker, panel_rules, signed_rubric, synthesis_report, write_case

from consilium.cli import main
from consilium.judges.record import JudgementItem
from consilium.reports.papers.npcbench import npc_scores, strict_success
from consilium.reports.papers.responses import Response

CRITERIA = {"r1": ("requirement", 6), "r2": ("requirement", 4), "m1": ("major_error", -2),
            "n1": ("minor_error", -1)}
INVALID = "r2!"  # in a MET set: the judge's answer on r2 is invalid (not evaluable)


def item(cid: str, met: bool | None, *, kind: bool = True) -> JudgementItem:
    detail = {"kind": CRITERIA[cid][0], "weight": CRITERIA[cid][1]} if kind else {}
    return JudgementItem(component="conclusion", criterion=cid, score=None if met is None else float(met),
                         not_evaluable=met is None, detail=detail)


def elements(met: set[str]) -> list[JudgementItem]:
    return [item(cid, None if cid == "r2" and INVALID in met else cid in met) for cid in CRITERIA]


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def by_hand(met: set[str]) -> bool | None:
    """Eq. 1's product c_pj over the criteria, three-valued: any wrong element fails the patient."""
    wrong = any(cid not in met for cid in ("r1", "r2") if not (cid == "r2" and INVALID in met)) \
        or bool(met & {"m1", "n1"})
    return False if wrong else (None if INVALID in met else True)


@pytest.mark.parametrize(("met", "expected"), [
    ({"r1", "r2"}, True),                 # every requirement met, no error: a success
    ({"r1"}, False),                      # a requirement missed
    ({"r1", "r2", "m1"}, False),          # a major error present
    ({"r1", "r2", "n1"}, False),          # a minor error present
    ({"r1", INVALID}, None),              # r2 not evaluable, the rest correct: undecided
    ({"r1", INVALID, "m1"}, False),       # r2 not evaluable, but a major error: a failure either way
    (set(), False),
])
def test_strict_success_of_one_patient(met: set[str], expected: bool | None) -> None:
    assert by_hand(met) is expected
    assert strict_success(elements(met)) is expected


def test_no_elements_or_an_unknown_kind_is_not_evaluable() -> None:
    assert strict_success([]) is None
    # rows rebuilt from judgements.csv carry no kind: an error criterion's 1 cannot be read as right or wrong
    assert strict_success([item("r1", True, kind=False)]) is None


# --------------------------------------------------------------------------------------------------
# A real cohort through the CLI: one panel model, both formats, four cases with signed criteria.

CASES = ("s1", "s2", "s3", "s4")
FAILED = "s5"  # a case whose arm fails in both formats: Eq. 1 scores its missing answer as incorrect
FORMATS = ("free-form", "structured")
MET: dict[tuple[str, str], set[str]] = {
    ("free-form", "s1"): {"r1", "r2"}, ("free-form", "s2"): {"r1", "r2", "n1"},
    ("free-form", "s3"): {"r1"}, ("free-form", "s4"): {"r1", INVALID},
    ("structured", "s1"): {"r1", "r2"}, ("structured", "s2"): {"r1", "r2"},
    ("structured", "s3"): {"r1", INVALID, "m1"}, ("structured", "s4"): set()}


def verdict(case: str) -> str:
    return f"Verdict {case}"


def in_text(fmt: str, case: str) -> str:
    """The final opinion as the judge reads it."""
    return judged_text(fmt, verdict(case))


def panel_script() -> dict[str, Any]:
    script = Scripted("model-a").extend(panel_rules())
    # the failed arm: its synthesis fails in both formats, so the patient has no answer at all
    script.fail("synthesis", where={"contains": marker(FAILED)})
    for case in CASES:
        script.synthesis(synthesis_report(verdict(case), "1. AF"), where={"contains": marker(case)})
    return script.build()


def judge_script() -> dict[str, Any]:
    invalid = {"explanation": "x"}  # no criteria_met: not the schema
    script = Scripted("judge")
    for (fmt, case), met in MET.items():
        for cid in CRITERIA:
            answer = invalid if cid == "r2" and INVALID in met else {"explanation": "x", "criteria_met": cid in met}
            script.judge(answer, item=f"conclusion:{cid}", where={"contains": in_text(fmt, case)})
    return script.judge(invalid, where={"contains": "could not be used"}).build()  # the repairs


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("strict")
    cases = tmp / "cases"
    cases.mkdir()
    for case in (*CASES, FAILED):
        write_case(cases, case, {"rubric": signed_rubric(CRITERIA)})
    (tmp / "panel.json").write_text(json.dumps(panel_script()))
    (tmp / "judge.json").write_text(json.dumps(judge_script()))
    out = tmp / "runs"
    assert main(["cohort", "--cases", str(cases), "--model", f"scripted:{tmp / 'panel.json'}",
                 "--judge", "npc-signed-criteria", "--judge-model", f"scripted:{tmp / 'judge.json'}",
                 "--out", str(out)]) == 1  # the failed arms
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    assert main(["report", str(run_dir), "--bootstrap", "50"]) == 0
    rows = csv.DictReader((run_dir / "report" / "npcbench_scores.csv").read_text().splitlines())
    return {r["variant"]: r for r in rows}


def test_the_report_gives_strict_success_with_its_intervals(report: dict[str, dict[str, str]]) -> None:
    assert set(report) == set(FORMATS)
    for fmt in FORMATS:
        outcomes = [by_hand(MET[(fmt, case)]) for case in CASES] + [False]  # s5: no answer, a failure
        known = [o for o in outcomes if o is not None]
        k, n = sum(known), len(known)
        row = report[fmt]
        assert (row["strict_n"], row["strict_patients"], row["strict_not_evaluable"]) == \
            (str(k), str(n), str(len(outcomes) - n))
        assert row["strict_missing"] == "1" and row["responses"] == str(len(CASES))
        assert float(row["strict_pct"]) == pytest.approx(round(100 * k / n, 2))
        low, high = wilson(k, n)
        assert float(row["strict_ci_low"]) == pytest.approx(100 * low, abs=0.006)
        assert float(row["strict_ci_high"]) == pytest.approx(100 * high, abs=0.006)
        exact = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert float(row["strict_exact_low"]) == pytest.approx(100 * exact.low, abs=0.006)
        assert float(row["strict_exact_high"]) == pytest.approx(100 * exact.high, abs=0.006)
    # by hand: free-form s1 succeeds, s2 (minor error) and s3 (r2 missed) fail, s4 is undecided, s5 failed
    assert (report["free-form"]["strict_n"], report["free-form"]["strict_patients"]) == ("1", "4")
    assert report["free-form"]["strict_not_evaluable"] == "1"
    # structured s3 has a not-evaluable r2 and a major error: a failure, not undecided
    assert (report["structured"]["strict_n"], report["structured"]["strict_patients"]) == ("2", "5")
    assert report["structured"]["strict_not_evaluable"] == "0"


def test_strict_averages_a_patients_replicates_and_counts_patients_in_n() -> None:
    """Two replicates of one patient (case) in one group, one succeeding: the patient's success is 0.5,
    Strict the mean over the two patients, and Wilson's n the patients, not the three responses."""
    good, bad = tuple(elements({"r1", "r2"})), tuple(elements({"r1"}))
    responses = [Response("m", "free-form", "p1", "npc-signed-criteria", good, replicate="0"),
                 Response("m", "free-form", "p1", "npc-signed-criteria", bad, replicate="1"),
                 Response("m", "free-form", "p2", "npc-signed-criteria", good, replicate="0")]
    [row] = npc_scores(responses, bootstrap=10, seed=0)
    assert (row["responses"], row["strict_n"], row["strict_patients"], row["strict_not_evaluable"]) == \
        (3, 1.5, 2, 0)
    assert row["strict_pct"] == 75.0
    low, high = wilson(1.5, 2)  # p̂ = 0.75 over n = 2 patients
    assert (row["strict_ci_low"], row["strict_ci_high"]) == (round(100 * low, 2), round(100 * high, 2))


def test_strict_counts_an_undecided_replicate_as_not_evaluable() -> None:
    """p1's replicate 0 succeeds and its replicate 1 leaves r2 undecided; p2's only replicate fails. p1
    is decided by the replicate that is (1.0), and its undecided replicate is counted in
    strict_not_evaluable (arms, as pass@k's not_evaluable), never dropped unseen."""
    responses = [Response("m", "free-form", "p1", "npc-signed-criteria", tuple(elements({"r1", "r2"})), replicate="0"),
                 Response("m", "free-form", "p1", "npc-signed-criteria", tuple(elements({"r1", INVALID})),
                          replicate="1"),
                 Response("m", "free-form", "p2", "npc-signed-criteria", tuple(elements({"r1", "m1"})), replicate="0")]
    assert [by_hand({"r1", "r2"}), by_hand({"r1", INVALID}), by_hand({"r1", "m1"})] == [True, None, False]
    [row] = npc_scores(responses, bootstrap=10, seed=0)
    assert (row["strict_n"], row["strict_patients"], row["strict_not_evaluable"], row["strict_pct"]) == (1, 2, 1, 50.0)
