"""`consilium report` reproduces the OpenTumorBoard, NPCBench and Neural-MedBench summaries exactly.

Real cohorts, run through the CLI with the scripted backend: two models, both board modes or both
consilium formats, judges whose answers vary by arm (rules per stage, role `<component>:<criterion>`
and a tag each arm's conclusion carries), out-of-scope (−1) decisions, items not evaluable and a
failed arm. Every expected number is worked out here from the fixture's inputs, never by the code
under test.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.scripts import Scripted
from support.signed_criteria_cohort import judged_text, marker, panel_rules, signed_rubric, synthesis_report, write_case

from consilium.cli import main
from consilium.judges.record import JudgementItem, read_judgement
from consilium.reports.compare import load_cohort_data
from consilium.reports.papers.otb import specialist_turn
from consilium.reports.papers.responses import Response, judged_responses
from consilium.reports.summary import judged_tables

ROOT = Path(__file__).resolve().parents[2]
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
W = {"therapy": 1.00, "surgery": 1.25, "next_action": 1.15, "clinical_trial": 2.00}  # opentumorboard.txt E.2
DIMS = tuple(W)


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def num(value: str) -> float | None:
    return None if value == "" else float(value)


def close(value: str, expected: float | None, digits: int = 4) -> bool:
    if expected is None:
        return value == ""
    return value != "" and math.isclose(float(value), round(expected, digits), abs_tol=10 ** -(digits + 1))


def rouge_f1(reference: str, candidate: str) -> float:
    """ROUGE-L F1 = 2·LCS / (|ref| + |cand|) over lower-cased alphanumeric tokens. The fixture's texts
    share only identical words, so Porter stemming (which the package applies) changes nothing."""
    ref, cand = (re.findall(r"[a-z0-9]+", t.lower()) for t in (reference, candidate))
    table = [[0] * (len(cand) + 1) for _ in range(len(ref) + 1)]
    for i, a in enumerate(ref):
        for j, b in enumerate(cand):
            table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1], table[i + 1][j])
    return 2 * table[-1][-1] / (len(ref) + len(cand))


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """neural-medbench.txt, Confidence Intervals (``successes`` = n·p̂, a sum of case means with replicates)."""
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def only_run(out: Path) -> Path:
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


# --------------------------------------------------------------------------------------------------
# The board cohort: cases t1, t2 (with a reference conclusion) and t3 (none), models a and b, both modes.

REFERENCES = {"t1": "Surgery then chemotherapy is the plan. Brain imaging comes first.",
              "t2": "No surgery is advised. Radiotherapy and a trial screen follow."}
# (model, mode, case) -> the conclusion the board writes; each carries its tag (qaa1 = model a, agents, t1).
CONCLUSIONS = {
    ("a", "agents", "t1"): "Surgery then chemotherapy qaa1. Brain imaging next.",
    ("a", "single", "t1"): "Surgery is the plan qas1. Brain imaging first.",
    ("a", "agents", "t2"): "Radiotherapy and a trial qaa2. No surgery.",
    ("a", "single", "t2"): "No surgery qas2. Radiotherapy and a trial screen follow.",
    ("a", "agents", "t3"): "Watch qaa3. Scan later.",
    ("a", "single", "t3"): "Watch qas3. Scan later.",
    ("b", "agents", "t1"): "Chemotherapy alone qba1. No imaging.",
    ("b", "single", "t1"): "One sentence only qbs1",  # breaks the two-to-four-sentence check
    ("b", "single", "t2"): "Surgery is advised qbs2. Radiotherapy later.",
    ("b", "agents", "t3"): "Watch qba3. Scan later.",
    ("b", "single", "t3"): "Watch qbs3. Scan later.",
}  # (b, agents, t2) fails: its conclusion call fails
ALIGN = {"qaa1": 4, "qaa2": 2, "qas1": 5, "qas2": 3, "qba1": 1, "qbs1": 2, "qbs2": 4}
DECIDE: dict[str, tuple[int | None, ...]] = {  # therapy, surgery, next_action, clinical_trial; None: invalid answer
    "qaa1": (5, 4, -1, -1), "qaa2": (3, -1, 2, 5), "qas1": (-1, -1, -1, -1), "qas2": (4, None, 3, 1),
    "qba1": (1, 2, 3, 4), "qbs1": (2, 5, -1, 3), "qbs2": (-1, 1, 4, -1)}


def tag(model: str, mode: str, case: str) -> str:
    return f"q{model}{mode[0]}{case[1]}"


def board_cases(tmp_path: Path) -> Path:
    folder = tmp_path / "board-cases"
    folder.mkdir()
    base = yaml.safe_load(NSCLC.read_text())
    for case_id in ("t1", "t2", "t3"):
        case = {**base, "id": case_id, "presentation": f"{base['presentation']} Marker casemark-{case_id}."}
        if case_id in REFERENCES:
            case["reference"] = {"conclusion": REFERENCES[case_id]}
        else:
            case.pop("reference")
        (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(case))
    return folder


def transcript(conclusion: str) -> str:
    return ("<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>\n"
            f"<conclusion>{conclusion}</conclusion>")


def board_script(model: str) -> dict[str, Any]:
    script = (Scripted(f"model-{model}")
              .roles("Medical oncologist", "Radiologist", justification=("x", "y"))
              .rule("board_turn", where={"role": "moderator", "round": 1},
                    json={"action": "ask", "speaker": "Radiologist", "message": "Radiology?"})
              .rule("board_turn", where={"role": "moderator", "round": 3},
                    json={"action": "ask", "speaker": "Medical oncologist", "message": "Oncology?"})
              .rule("board_turn", where={"role": "moderator"},
                    json={"action": "close", "speaker": "Radiologist", "message": "Thank you."}))
    for case in ("t1", "t2", "t3"):
        agents = CONCLUSIONS.get((model, "agents", case))
        if agents:
            script.rule("conclusion", where={"contains": f"casemark-{case}"}, json={"conclusion": agents})
        else:
            script.fail("conclusion", where={"contains": f"casemark-{case}"})
        script.rule("board_turn", where={"role": "board", "contains": f"casemark-{case}"},
                    response=transcript(CONCLUSIONS[(model, "single", case)]))
    # A repair request names no case: the invalid meeting (b, single, t1) is written again as it was.
    script.rule("board_turn", where={"role": "board"}, response=transcript(CONCLUSIONS[(model, "single", "t1")]))
    return script.rule("board_turn", response="I agree with the plan.").build()


def board_judge() -> dict[str, Any]:
    script = Scripted("judge")
    for key, aligned in ALIGN.items():
        script.score(aligned, item="conclusion:conclusion_alignment", where={"contains": key})
    # The four scores come in one answer (opentumorboard.txt App. C.3 L186); None: an invalid value there.
    answers = {key: {**{d: s if s is not None else "high" for d, s in zip(DIMS, scores, strict=True)},
                     "rationale": "r"} for key, scores in DECIDE.items()}
    for key, answer in answers.items():
        script.judge(answer, item="conclusion:decisions", where={"contains": key})
    # The invalid answer is also the answer to the repair request and to the schema-constrained retry.
    [invalid] = [a for a in answers.values() if "high" in a.values()]
    return script.judge(invalid, item="conclusion:decisions", where={"contains": "could not be used"}).build()


@pytest.fixture(scope="module")
def board_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("board")
    out = tmp_path / "runs"
    code = main(["cohort", "--protocol", "board", "--cases", str(board_cases(tmp_path)),
                 "--model", write(tmp_path, "a.json", board_script("a")),
                 "--extra-model", write(tmp_path, "b.json", board_script("b")),
                 "--judge", "otb-conclusion-alignment", "--judge", "otb-four-decision",
                 "--judge", "otb-clinical-equivalence", "--judge-model", write(tmp_path, "j.json", board_judge()),
                 "--out", str(out), "--allow-missing-reference"])  # t3 has no reference conclusion, on purpose
    assert code == 1  # one arm failed
    run_dir = only_run(out)
    assert main(["report", str(run_dir)]) == 0
    return run_dir


def groups() -> list[tuple[str, str]]:
    return [(m, mode) for m in ("a", "b") for mode in ("agents", "single")]


def arms_of(model: str, mode: str) -> list[str]:
    """The cases whose arm completed."""
    return [c for c in ("t1", "t2", "t3") if (model, mode, c) in CONCLUSIONS]


def weighted(scores: tuple[int | None, ...]) -> float | None:
    """App. E.2 by hand: Σ w·(s/5) / Σ w over the judged dimensions with s ≠ −1; a dimension not
    evaluable (None) enters neither sum and does not void the others."""
    in_scope = {d: s for d, s in zip(DIMS, scores, strict=True) if s is not None and s != -1}
    if not in_scope:
        return None
    return sum(W[d] * s / 5 for d, s in in_scope.items()) / sum(W[d] for d in in_scope)


def judged(scores: tuple[int | None, ...]) -> bool:
    """Evaluable: some dimension judged, and one in scope unless every dimension was judged."""
    known = [s for s in scores if s is not None]
    return bool(known) and (None not in scores or any(s != -1 for s in known))


def partly(scores: tuple[int | None, ...]) -> bool:
    return judged(scores) and None in scores


def test_board_summary_per_model_and_mode(board_run: Path) -> None:
    arms = read_csv(board_run / "arms.csv")
    rows = {(r["model"], r["mode"]): r for r in read_csv(board_run / "report" / "board_summary.csv")}
    assert set(rows) == {(f"model-{m}", mode) for m, mode in groups()}
    for model, mode in groups():
        row = rows[(f"model-{model}", mode)]
        done = arms_of(model, mode)
        mine = [a for a in arms if a["model"] == f"model-{model}" and a["format"] == f"board-{mode}"
                and a["status"] == "completed"]
        assert (row["arms"], row["completed"], row["failed"]) == ("3", str(len(done)), str(3 - len(done)))
        # format checks over completed arms: only (b, single, t1) breaks one of the seven checks
        broken = 1 if (model, mode) == ("b", "single") else 0
        assert row["format_checked"] == str(len(done)) and row["format_exact_n"] == str(len(done) - broken)
        assert close(row["format_exact_rate"], (len(done) - broken) / len(done))
        # the official dense score (format rules "3"): "One sentence only qbs1" has no sentence end, so it loses
        # the conclusion-sentences check's whole weight, .125
        assert close(row["format_dense_mean"], (len(done) - broken + broken * (1 - 0.125)) / len(done))
        assert close(row["turns_mean"], sum(float(a["turns"]) for a in mine) / len(mine))
        tokens = [int(a["input_tokens"]) + int(a["output_tokens"]) for a in mine]
        assert close(row["tokens_per_case"], sum(tokens) / len(tokens))
        # ROUGE-L F1 against the reference conclusion: t3 has none
        rouge = [rouge_f1(REFERENCES[c], CONCLUSIONS[(model, mode, c)]) for c in done if c in REFERENCES]
        assert row["rouge_l_n"] == str(len(rouge)) and close(row["rouge_l_mean"], sum(rouge) / len(rouge))
        # conclusion alignment (1–5): t3 is not evaluable (no reference conclusion)
        aligned = [ALIGN[tag(model, mode, c)] for c in done if c in REFERENCES]
        assert row["conclusion_alignment_n"] == str(len(aligned))
        assert row["conclusion_alignment_not_evaluable"] == str(len(done) - len(aligned))
        assert close(row["conclusion_alignment_mean"], sum(aligned) / len(aligned))
        decided = [DECIDE[tag(model, mode, c)] for c in done if c in REFERENCES]
        means = [weighted(s) for s in decided if judged(s)]
        scored = [m for m in means if m is not None]
        assert row["four_decision_n"] == str(len(scored))
        assert row["four_decision_not_evaluable"] == str(len(done) - sum(judged(s) for s in decided))
        assert row["four_decision_partly_judged"] == str(sum(partly(s) for s in decided))
        assert close(row["four_decision_mean"], sum(scored) / len(scored) if scored else None)
    # spot checks worked out on paper
    assert close(rows[("model-a", "agents")]["rouge_l_mean"], (10 / 17 + 8 / 17) / 2)
    assert close(rows[("model-a", "agents")]["four_decision_mean"], (2 / 2.25 + 3.06 / 4.15) / 2)
    # t1 nothing in scope; t2's surgery is not evaluable, the other three still count: (0.8 + 0.69 + 0.4) / 4.15
    assert close(rows[("model-a", "single")]["four_decision_mean"], 1.89 / 4.15)
    assert rows[("model-a", "single")]["four_decision_partly_judged"] == "1"


def test_four_decision_and_its_dimensions(board_run: Path) -> None:
    report = board_run / "report"
    rows = {(r["model"], r["variant"]): r for r in read_csv(report / "otb_four_decision.csv")}
    dims = {(r["model"], r["variant"], r["dimension"]): r for r in read_csv(report / "otb_decision_dimensions.csv")}
    for model, mode in groups():
        key = (f"model-{model}", f"board-{mode}")
        done = arms_of(model, mode)
        decided = [DECIDE[tag(model, mode, c)] for c in done if c in REFERENCES]
        valid = [s for s in decided if judged(s)]
        means = [m for m in (weighted(s) for s in valid) if m is not None]
        row = rows[key]
        assert (row["responses"], row["scored"]) == (str(len(done)), str(len(means)))
        assert row["not_evaluable"] == str(len(done) - len(valid))
        # a failed arm has no conclusion: not evaluable, counted in every four-decision row of its format
        assert row["failed"] == str(3 - len(done))
        assert {dims[(*key, d)]["failed"] for d in DIMS} == {str(3 - len(done))}
        assert row["partly_judged"] == str(sum(partly(s) for s in decided))
        assert row["no_decision_in_scope"] == str(len(valid) - len(means))
        assert close(row["weighted_mean"], sum(means) / len(means) if means else None)
        for i, dim in enumerate(DIMS):
            scores = [v for s in decided if (v := s[i]) is not None]
            in_scope = [s for s in scores if s != -1]
            d = dims[(*key, dim)]
            assert d["weight"] == str(W[dim]) and d["in_scope"] == str(len(in_scope))
            assert d["out_of_scope"] == str(len(scores) - len(in_scope))
            assert d["not_evaluable"] == str(len(done) - len(scores))
            assert close(d["mean"], sum(in_scope) / len(in_scope) if in_scope else None)
    assert rows[("model-a", "board-single")]["no_decision_in_scope"] == "1"
    assert rows[("model-a", "board-single")]["partly_judged"] == "1"
    assert dims[("model-a", "board-single", "surgery")]["not_evaluable"] == "2"  # t3 and the invalid answer
    assert close(dims[("model-b", "board-single", "surgery")]["mean"], 3.0)  # (5 + 1) / 2


def test_board_stops_failed_arms_and_not_evaluable_are_shown(board_run: Path) -> None:
    report = board_run / "report"
    stops = {(r["model"], r["mode"], r["stop_reason"]): r for r in read_csv(report / "board_stops.csv")}
    assert stops[("model-b", "agents", "moderator_closed")]["arms"] == "2"
    assert stops[("model-a", "single", "single_call")]["pct"] == "100.0"
    [failed] = read_csv(report / "failed_arms.csv")
    assert (failed["model"], failed["format"], failed["case_id"], failed["failed_stage"]) == \
        ("model-b", "board-agents", "t2", "conclusion")
    # clinical equivalence scores a Specialist Turn's answer: a board trace has none, and that is shown
    turn = {(r["model"], r["variant"]): r for r in read_csv(report / "otb_specialist_turn.csv")}
    assert turn[("model-b", "board-single")]["not_evaluable"] == "3"
    assert turn[("model-b", "board-single")]["clinical_equivalence_mean"] == ""
    md = (report / "report.md").read_text()
    for title in ("Board Simulation by model and mode", "Four-decision dimensions", "Specialist Turn", "Failed arms"):
        assert f"## {title}" in md
    assert "| model-b | board-single | surgery | 1.25 | 2 | 0 | 1 | 0 | 2 | 3.0 |" in md
    assert (report / "board_format.png").stat().st_size > 2000


# Specialist Turn answers (`consilium turn`), judged by `consilium judge`: (model, case) -> score, critical, unsupported
TURNS: dict[tuple[str, str], tuple[int, bool, bool] | None] = {
    ("a", "t1"): (5, False, False), ("a", "t2"): (3, True, True), ("a", "t3"): (4, False, True),
    ("b", "t1"): (1, True, False), ("b", "t2"): None, ("b", "t3"): (2, False, True)}  # None: invalid answers


def test_specialist_turn_clinical_equivalence_and_error_rates(tmp_path: Path) -> None:
    cases = board_cases(tmp_path)
    judge: list[dict[str, Any]] = []
    for (model, case), verdict in TURNS.items():
        answer = {"rationale": "r", "score": verdict[0], "critical_error": verdict[1],
                  "unsupported_claim": verdict[2]} if verdict else {"rationale": "r", "score": "high"}
        judge.append({"stage": "judge", "contains": f"ans{model}{case}", "json": answer})
    judge.append({"stage": "judge", "contains": "could not be used", "json": {"rationale": "r", "score": "high"}})
    judge_spec = write(tmp_path, "judge.json", {"model": "judge", "rules": judge})
    responses = []
    for model in ("a", "b"):
        spec = write(tmp_path, f"turn-{model}.json", {"model": f"model-{model}", "rules": [
            {"stage": "specialist_turn", "contains": f"casemark-{c}",
             "json": {"answer": f"I would operate ans{model}{c}."}} for c in ("t1", "t2", "t3")]})
        for case in ("t1", "t2", "t3"):
            out = tmp_path / "turns" / model / case
            assert main(["turn", "--case", str(cases / f"{case}.yaml"), "--model", spec, "--role", "Surgeon",
                         "--question", "Would you operate?", "--out", str(out)]) == 0
            [trace] = out.rglob("*.trace.json")
            code = main(["judge", str(trace), "--rubric", "otb-clinical-equivalence", "--judge-model", judge_spec,
                         "--reference-answer", "I would operate."])
            assert code == (1 if TURNS[(model, case)] is None else 0)  # nothing judged: exit 1
            [record] = out.rglob("*.judge.otb-clinical-equivalence.json")
            judgement = read_judgement(record)
            responses.append(Response(f"model-{model}", "turn", case, judgement.rubric, tuple(judgement.items),
                                      judgement.aggregates))
    rows = {r["model"]: r for r in specialist_turn(responses)}
    for model in ("a", "b"):
        verdicts = [v for (m, _), v in TURNS.items() if m == model]
        scored = [v for v in verdicts if v is not None]
        row = rows[f"model-{model}"]
        assert (row["responses"], row["scored"], row["not_evaluable"]) == (3, len(scored), 3 - len(scored))
        assert row["clinical_equivalence_mean"] == round(sum(v[0] for v in scored) / len(scored), 4)
        assert row["critical_error_n"] == sum(v[1] for v in scored)
        assert row["critical_error_pct"] == round(100 * sum(v[1] for v in scored) / len(scored), 2)
        assert row["unsupported_claim_n"] == sum(v[2] for v in scored)
        assert row["unsupported_claim_pct"] == round(100 * sum(v[2] for v in scored) / len(scored), 2)
    assert rows["model-b"]["critical_error_pct"] == 50.0 and rows["model-a"]["unsupported_claim_pct"] == 66.67


# --------------------------------------------------------------------------------------------------
# The consilium cohort: cases k1, k2 (signed criteria) and k3 (none), all with a reference diagnosis;
# models a and b, both formats; model b's synthesis fails on k3 (both its k3 arms fail).

CRITERIA = {"r1": ("requirement", 6), "r2": ("requirement", 4), "m1": ("major_error", -2),
            "m2": ("major_error", -2), "n1": ("minor_error", -1)}
FORMATS = ("free-form", "structured")
# (model, format, case) -> the criteria the judge finds met; None: r2 gets an invalid answer
MET: dict[tuple[str, str, str], set[str] | None] = {
    ("a", "free-form", "k1"): {"r1", "r2"}, ("a", "free-form", "k2"): {"r1", "m1"},
    ("a", "structured", "k1"): {"r2", "m1", "m2", "n1"}, ("a", "structured", "k2"): {"r1", "r2", "n1"},
    ("b", "free-form", "k1"): {"r1", "m1", "n1"}, ("b", "free-form", "k2"): set(),
    ("b", "structured", "k1"): {"r1", "r2", "m2"}, ("b", "structured", "k2"): None}
# the final conclusion matches the reference diagnosis (pass@1 of the conclusion component)
MATCH = {("a", "free-form", "k1"): True, ("a", "free-form", "k2"): False, ("a", "free-form", "k3"): True,
         ("a", "structured", "k1"): True, ("a", "structured", "k2"): True, ("a", "structured", "k3"): False,
         ("b", "free-form", "k1"): False, ("b", "free-form", "k2"): False,
         ("b", "structured", "k1"): True, ("b", "structured", "k2"): False}
# the structured report's ranked differential, rank by rank; None: an invalid answer (not evaluable)
DIFFERENTIAL: dict[tuple[str, str], tuple[bool | None, ...]] = {
    ("a", "k1"): (True, False, False), ("a", "k2"): (False, False, True), ("a", "k3"): (False, False, False),
    ("b", "k1"): (False, True, False), ("b", "k2"): (None, True, False)}
# the structured report's leading diagnosis (its final opinion), judged as rank 1 before the differential:
# pass@1 is the single best guess, pass@5 the best guess and the differential (neural-medbench.txt L249,
# L282; task prompt L403 "most likely diagnosis, differential diagnoses"). None: an invalid answer.
LEADING: dict[tuple[str, str], bool | None] = {
    ("a", "k1"): False, ("a", "k2"): True, ("a", "k3"): False, ("b", "k1"): False, ("b", "k2"): None}
CASES = ("k1", "k2", "k3")


def verdict(model: str, case: str) -> str:
    return f"Verdict {model}{case}"


def in_text(model: str, fmt: str, case: str) -> str:
    """How the final opinion reads in the judged conclusion."""
    return judged_text(fmt, verdict(model, case))


def consilium_cases(tmp_path: Path) -> Path:
    folder = tmp_path / "consult-cases"
    folder.mkdir()
    for case_id in CASES:
        reference: dict[str, Any] = {"diagnosis": "Atrial fibrillation needing anticoagulation"}
        if case_id != "k3":
            reference["rubric"] = signed_rubric(CRITERIA)
        write_case(folder, case_id, reference)
    return folder


def panel_script(model: str) -> dict[str, Any]:
    script = Scripted(f"model-{model}").extend(panel_rules())
    for case in CASES:
        if model == "b" and case == "k3":
            script.fail("synthesis", where={"contains": marker(case)})
            continue
        differential = "\n".join(f"{r}. Dx {model}{case} r{r}" for r in (1, 2, 3))
        # one answer for both formats: the structured report's JSON, which a free-form report keeps as text
        script.synthesis(synthesis_report(verdict(model, case), differential), where={"contains": marker(case)})
    return script.build()


def consilium_judge() -> dict[str, Any]:
    script = Scripted("judge")
    invalid = {"explanation": "x"}  # no criteria_met: not the schema
    for (model, fmt, case), met in MET.items():
        for cid in CRITERIA:
            answer = invalid if met is None and cid == "r2" else \
                {"explanation": "x", "criteria_met": cid in (met or set())}
            script.judge(answer, item=f"conclusion:{cid}", where={"contains": in_text(model, fmt, case)})
    script.judge(invalid, item="conclusion:r2", where={"contains": "could not be used"})
    for (model, fmt, case), matched in MATCH.items():
        script.judge({"rationale": "r", "match": matched}, item="conclusion:final_conclusion",
                     where={"contains": in_text(model, fmt, case)})
    for (model, case), lead in LEADING.items():
        script.judge({"rationale": "r", "match": lead} if lead is not None else {"rationale": "r"},
                     item="differential:rank_1", where={"contains": verdict(model, case)})
    for (model, case), ranks in DIFFERENTIAL.items():
        for rank, match in enumerate(ranks, 1):
            # rank 1 is the leading diagnosis, so the differential's items are ranks 2, 3, 4
            script.judge({"rationale": "r", "match": match} if match is not None else {"rationale": "r"},
                         item=f"differential:rank_{rank + 1}", where={"contains": f"Dx {model}{case} r{rank}"})
    for rank in (1, 2):  # the repairs of model b's invalid k2 answers (leading diagnosis, differential r1)
        script.judge({"rationale": "r"}, item=f"differential:rank_{rank}", where={"contains": "could not be used"})
    return script.build()


@pytest.fixture(scope="module")
def consilium_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("consilium")
    out = tmp_path / "runs"
    code = main(["cohort", "--cases", str(consilium_cases(tmp_path)),
                 "--model", write(tmp_path, "a.json", panel_script("a")),
                 "--extra-model", write(tmp_path, "b.json", panel_script("b")),
                 "--judge", "npc-signed-criteria", "--judge", "nmb-diagnosis-match",
                 "--judge-model", write(tmp_path, "j.json", consilium_judge()), "--out", str(out),
                 "--allow-missing-reference"])  # k3 has no signed criteria: not evaluable, on purpose
    assert code == 1  # model b's two k3 arms failed
    run_dir = only_run(out)
    assert main(["report", str(run_dir), "--bootstrap", "2000", "--seed", "7"]) == 0
    return run_dir


def signed(met: set[str]) -> float:
    """npcbench.txt Eq. A7 by hand: 100 · max(0, Σ met requirement weights − 2·majors − minors) / 10."""
    raw = sum(CRITERIA[c][1] for c in met if CRITERIA[c][0] == "requirement") \
        - 2 * sum(CRITERIA[c][0] == "major_error" for c in met) - sum(CRITERIA[c][0] == "minor_error" for c in met)
    return 100 * max(0, raw) / 10


def test_npcbench_score_and_error_rates_over_evaluable_responses(consilium_run: Path) -> None:
    rows = {(r["model"], r["variant"]): r for r in read_csv(consilium_run / "report" / "npcbench_scores.csv")}
    assert set(rows) == {(f"model-{m}", f) for m in ("a", "b") for f in FORMATS}
    for model in ("a", "b"):
        for fmt in FORMATS:
            row = rows[(f"model-{model}", fmt)]
            completed = [c for c in CASES if not (model == "b" and c == "k3")]
            valid = [MET[(model, fmt, c)] for c in completed if c != "k3" and MET[(model, fmt, c)] is not None]
            scores = [signed(m) for m in valid if m is not None]
            assert row["component"] == "conclusion" and row["responses"] == str(len(completed))
            assert (row["evaluable"], row["not_evaluable"]) == (str(len(valid)), str(len(completed) - len(valid)))
            assert close(row["score_mean"], sum(scores) / len(scores))
            majors = sum(any(CRITERIA[c][0] == "major_error" for c in m) for m in valid if m is not None)
            minors = sum(any(CRITERIA[c][0] == "minor_error" for c in m) for m in valid if m is not None)
            assert row["major_error_n"] == str(majors) and close(row["major_error_pct"], 100 * majors / len(valid), 2)
            assert row["minor_error_n"] == str(minors) and close(row["minor_error_pct"], 100 * minors / len(valid), 2)
            # a case-clustered resample of two cases averages the first, both, or the second: the 2.5th and
            # 97.5th percentiles are the two case scores themselves (one case: the interval is that score)
            assert close(row["ci_low"], min(scores)) and close(row["ci_high"], max(scores))
    # by hand: (a, structured) k1 = max(0, 4 − 4 − 1) = 0 (floored), k2 = 9 points -> 90
    assert rows[("model-a", "structured")]["score_mean"] == "45.0"
    assert rows[("model-a", "structured")]["minor_error_pct"] == "100.0"
    assert rows[("model-b", "structured")]["not_evaluable"] == "1"


def test_medbench_pass_at_1_and_pass_at_k_with_wilson_intervals(consilium_run: Path) -> None:
    rows = {(r["model"], r["variant"], r["component"], r["metric"]): r
            for r in read_csv(consilium_run / "report" / "medbench_pass_at_k.csv")}
    expected: dict[tuple[str, str, str, str], list[bool | None]] = {}
    for (model, fmt, _case), match in MATCH.items():
        expected.setdefault((f"model-{model}", fmt, "conclusion", "pass@1"), []).append(match)
    for (model, case), differential in DIFFERENTIAL.items():
        # pass@1: the leading diagnosis, not the differential's first item (neural-medbench.txt L249, L282)
        first, ranks = LEADING[(model, case)], (LEADING[(model, case)], *differential)
        within = True if any(r is True for r in ranks) else (False if None not in ranks else None)
        expected.setdefault((f"model-{model}", "structured", "differential", "pass@1"), []).append(first)
        # the judge ranks up to k = 5 candidates, the reports give a leading diagnosis and 3 more: pass@4
        expected.setdefault((f"model-{model}", "structured", "differential", "pass@4"), []).append(within)
    for key in expected:  # model b's k3 arms failed: no answer, incorrect (k3 has a reference diagnosis)
        if key[0] == "model-b":
            expected[key].append(False)
    assert set(rows) == set(expected)
    for key, outcomes in expected.items():
        known = [o for o in outcomes if o is not None]
        row = rows[key]
        assert (row["cases"], row["correct"]) == (str(len(known)), str(sum(known)))
        assert row["not_evaluable"] == str(len(outcomes) - len(known))
        assert row["failed"] == ("1" if key[0] == "model-b" else "0")
        assert close(row["accuracy"], sum(known) / len(known))
        low, high = wilson(sum(known), len(known))
        assert close(row["ci_low"], low) and close(row["ci_high"], high)
    b4 = rows[("model-b", "structured", "differential", "pass@4")]
    # rank 1 not evaluable, rank 2 a match: pass@4 is known; k3's failed arm a miss
    assert (b4["cases"], b4["correct"]) == ("3", "2")
    assert "pass@5 n/a: the responses rank at most 4 candidates" in b4["note"]
    assert rows[("model-b", "structured", "differential", "pass@1")]["not_evaluable"] == "1"


def test_a_seed_reproduces_the_bootstrap_and_another_seed_runs(consilium_run: Path, tmp_path: Path) -> None:
    first = (consilium_run / "report" / "npcbench_scores.csv").read_text()
    assert main(["report", str(consilium_run), "--bootstrap", "2000", "--seed", "7", "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "npcbench_scores.csv").read_text() == first
    assert main(["report", str(consilium_run), "--bootstrap", "50", "--seed", "8", "--out", str(tmp_path / "s")]) == 0
    for row in read_csv(tmp_path / "s" / "npcbench_scores.csv"):
        assert float(row["ci_low"]) <= float(row["score_mean"]) <= float(row["ci_high"])


def test_a_consilium_report_has_the_consilium_outcomes_and_the_judged_papers(consilium_run: Path) -> None:
    report = consilium_run / "report"
    md = (report / "report.md").read_text()
    assert "## Outcomes (ai-consilium.txt, Table 3)" in md and "NPCBench" in md and "Neural-MedBench" in md
    assert "Board Simulation" not in md
    failed = read_csv(report / "failed_arms.csv")
    assert sorted((r["model"], r["format"], r["case_id"]) for r in failed) == \
        [("model-b", "free-form", "k3"), ("model-b", "structured", "k3")]
    assert all("model" in read_csv(p)[0] for p in report.glob("*.csv") if p.name != "judging_coverage.csv")


def test_a_not_evaluable_response_has_no_error_flag_and_no_undecided_pass(consilium_run: Path) -> None:
    """aggregate.py as the papers define it: Eq. A8 runs over V (npcbench.txt), so a response with an
    invalid judgement has no has_major_error; a ranked candidate not evaluable is not a miss."""
    [record] = [p for p in consilium_run.rglob("k2.structured.judge.npc-signed-criteria.json")
                if any(i.not_evaluable for i in read_judgement(p).items)]  # model b's (r2 is invalid)
    folder = record.parent
    npc = read_judgement(folder / "k2.structured.judge.npc-signed-criteria.json").aggregates["conclusion"]
    assert npc["score"] is None and npc["has_major_error"] is None and npc["has_minor_error"] is None
    nmb = read_judgement(folder / "k2.structured.judge.nmb-diagnosis-match.json").aggregates["differential"]
    assert nmb["pass@1"] is None and nmb["pass@4"] is True  # four candidates ranked: labelled pass@4, not pass@5
    assert (nmb["k"], nmb["ranked"]) == (5, 4) and "pass@5" not in nmb


# --------------------------------------------------------------------------------------------------
# Mixed folders: several cohorts in one folder, and one arms.csv holding arms of both protocols.

def strip(rows: list[dict[str, str]], *columns: str) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if k not in columns} for r in rows]


def test_a_folder_of_cohorts_reports_each_with_a_cohort_column(board_run: Path, consilium_run: Path,
                                                               tmp_path: Path) -> None:
    parent = tmp_path / "runs"
    shutil.copytree(board_run, parent / "board", ignore=shutil.ignore_patterns("report"))
    shutil.copytree(consilium_run, parent / "consult", ignore=shutil.ignore_patterns("report"))
    assert main(["report", str(parent), "--bootstrap", "2000", "--seed", "7"]) == 0
    report = parent / "report"
    board = read_csv(report / "board_summary.csv")
    assert {r["cohort"] for r in board} == {"board"} and {r["protocol"] for r in board} == {"board"}
    assert strip(board, "cohort", "protocol") == read_csv(board_run / "report" / "board_summary.csv")
    npc = read_csv(report / "npcbench_scores.csv")
    assert strip(npc, "cohort", "protocol") == read_csv(consilium_run / "report" / "npcbench_scores.csv")
    outcomes = read_csv(report / "outcomes.csv")
    assert {r["cohort"] for r in outcomes} == {"consult"}
    failed = read_csv(report / "failed_arms.csv")
    assert sorted(r["cohort"] for r in failed) == ["board", "consult", "consult"]
    md = (report / "report.md").read_text()
    assert "# board (board arms)" in md and "# consult (consilium arms)" in md
    assert (report / "board-board" / "board_format.png").is_file()
    assert (report / "consult-consilium" / "fig4_stop_reasons.png").is_file()


def test_one_arms_csv_with_both_protocols_reports_both(board_run: Path, consilium_run: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    rows: list[dict[str, str]] = []
    for run in (consilium_run, board_run):
        shutil.copytree(run / "arms", mixed / "arms", dirs_exist_ok=True)
        rows += read_csv(run / "arms.csv")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with (mixed / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    assert main(["report", str(mixed), "--bootstrap", "2000", "--seed", "7"]) == 0
    report = mixed / "report"
    board = read_csv(report / "board_summary.csv")
    assert strip(board, "cohort", "protocol") == read_csv(board_run / "report" / "board_summary.csv")
    npc = read_csv(report / "npcbench_scores.csv")
    assert {r["protocol"] for r in npc} == {"consilium"}
    assert strip(npc, "cohort", "protocol") == read_csv(consilium_run / "report" / "npcbench_scores.csv")
    assert read_csv(report / "outcomes.csv") and read_csv(report / "otb_four_decision.csv")
    # a completed consilium arm without its rounds is one line naming the real file and line, nothing written
    rows[0]["rounds"] = ""
    with (mixed / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    shutil.rmtree(report)
    capsys.readouterr()
    assert rows[0]["status"] == "completed" and main(["report", str(mixed)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{mixed / 'arms.csv'}: line 2: rounds" in err and "Traceback" not in err
    assert not report.exists()


def test_four_decision_outcomes_of_partly_judged_conclusions() -> None:
    """By hand: a conclusion whose only judged dimensions are out of scope while another could not be
    judged is not evaluable (that one may have been in scope), not "no decision in scope"."""
    from consilium.judges.record import JudgementItem
    from consilium.reports.papers.otb import four_decision
    from consilium.reports.papers.responses import Response

    conclusions = {"c1": (None, -1, -1, -1), "c2": (-1, -1, -1, -1), "c3": (4, None, -1, 2),
                   "c4": (None, None, None, None), "c5": (5, 5, 5, 5)}
    responses = [Response("m", "board-agents", case, "otb-four-decision", tuple(
        JudgementItem(component="conclusion", criterion=d, score=None if v is None else float(v),
                      not_evaluable=v is None) for d, v in zip(DIMS, values, strict=True)))
        for case, values in conclusions.items()]
    [row] = four_decision(responses)
    c3 = (1.00 * 4 / 5 + 2.00 * 2 / 5) / (1.00 + 2.00)
    assert (row["responses"], row["scored"], row["not_evaluable"], row["partly_judged"],
            row["no_decision_in_scope"]) == (5, 2, 2, 1, 1)
    assert row["weighted_mean"] == pytest.approx((c3 + 1.0) / 2, abs=1e-4)


# --------------------------------------------------------------------------------------------------
# A cohort in replicates: models a and b, both formats, cases q1 and q2 (signed criteria and a reference
# diagnosis) and q3 (no reference at all), two replicates (seeds 11 and 12) whose answers differ. Model
# a's replicate 0 of q1 fails and model b's replicate 1 of q3 fails, in both formats. The paper tables
# average a case's replicates first, count intervals over cases, count a failed arm as a failure
# (Strict, pass@k) or outside V (O1), and leave q3 not evaluable for both models.

R_CASES = ("q1", "q2", "q3")
SEEDS = (11, 12)
R_FAILED = {("a", "q1", 0), ("b", "q3", 1)}  # (model, case, replicate): both formats fail
SIGNED_PATTERNS: tuple[set[str] | None, ...] = (
    {"r1", "r2"}, {"r1"}, {"r1", "r2", "n1"}, None, {"r1", "r2", "m1"}, {"r2"}, {"r1", "r2"})
DIFF_PATTERNS: tuple[tuple[bool | None, bool, bool], ...] = (  # leading diagnosis, differential d1, d2
    (True, False, False), (False, False, True), (False, False, False), (None, True, False), (False, True, False))


def r_arms() -> list[tuple[str, str, str, int]]:
    return [(m, f, c, r) for m in ("a", "b") for f in FORMATS for c in R_CASES for r in range(len(SEEDS))]


def r_failed(model: str, case: str, replicate: int) -> bool:
    return (model, case, replicate) in R_FAILED


def r_index(model: str, fmt: str, case: str, replicate: int) -> int:
    return "ab".index(model) + 2 * R_CASES.index(case) + 3 * FORMATS.index(fmt) + 5 * replicate


def r_met(model: str, fmt: str, case: str, replicate: int) -> set[str] | None:
    """The signed criteria the judge finds met; None: r2's answer is invalid (not evaluable)."""
    return SIGNED_PATTERNS[r_index(model, fmt, case, replicate) % len(SIGNED_PATTERNS)]


def r_match(model: str, fmt: str, case: str, replicate: int) -> bool:
    """The final conclusion matches the reference diagnosis."""
    return r_index(model, fmt, case, replicate) % 3 != 1


def r_ranks(model: str, case: str, replicate: int) -> tuple[bool | None, bool, bool]:
    return DIFF_PATTERNS[r_index(model, "structured", case, replicate) % len(DIFF_PATTERNS)]


def r_verdict(model: str, case: str, replicate: int) -> str:
    return f"Verdict {model}{case}R{replicate}"


def r_in_text(model: str, fmt: str, case: str, replicate: int) -> str:
    return judged_text(fmt, r_verdict(model, case, replicate))


def r_panel(model: str) -> dict[str, Any]:
    script = Scripted(f"model-{model}").extend([r for r in panel_script(model)["rules"] if r["stage"] != "synthesis"])
    for replicate, seed in enumerate(SEEDS):
        for case in R_CASES:
            where = {"seed": seed, "contains": marker(case)}
            if r_failed(model, case, replicate):
                script.fail("synthesis", where=where)
                continue
            differential = "\n".join(f"{d}. Dx {model}{case}R{replicate} d{d}" for d in (1, 2))
            script.synthesis(synthesis_report(r_verdict(model, case, replicate), differential), where=where)
    return script.build()


def r_judge() -> dict[str, Any]:
    invalid_signed, invalid_match = {"explanation": "x"}, {"rationale": "r"}
    script = Scripted("judge")
    for model, fmt, case, replicate in r_arms():
        if case == "q3" or r_failed(model, case, replicate):
            continue
        text, met = r_in_text(model, fmt, case, replicate), r_met(model, fmt, case, replicate)
        for cid in CRITERIA:
            answer = invalid_signed if met is None and cid == "r2" else \
                {"explanation": "x", "criteria_met": cid in (met or set())}
            script.judge(answer, item=f"conclusion:{cid}", where={"contains": text})
        script.judge({"rationale": "r", "match": r_match(model, fmt, case, replicate)},
                     item="conclusion:final_conclusion", where={"contains": text})
        if fmt == "structured":
            leading, *items = r_ranks(model, case, replicate)
            script.judge(invalid_match if leading is None else {"rationale": "r", "match": leading},
                         item="differential:rank_1", where={"contains": r_verdict(model, case, replicate)})
            for d, match in enumerate(items, 1):
                script.judge({"rationale": "r", "match": match}, item=f"differential:rank_{d + 1}",
                             where={"contains": f"Dx {model}{case}R{replicate} d{d}"})
    return (script.judge(invalid_signed, item="conclusion:r2", where={"contains": "could not be used"})
                  .judge(invalid_match, item="differential:rank_1", where={"contains": "could not be used"})
                  .build())


@pytest.fixture(scope="module")
def replicate_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("replicates")
    cases = tmp_path / "cases"
    cases.mkdir()
    for case_id in R_CASES:
        write_case(cases, case_id, None if case_id == "q3" else {
            "diagnosis": "Atrial fibrillation needing anticoagulation", "rubric": signed_rubric(CRITERIA)})
    for model in ("a", "b"):
        (tmp_path / f"{model}.json").write_text(json.dumps(r_panel(model)))
    (tmp_path / "judge.json").write_text(json.dumps(r_judge()))
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(f"""cases: cases
models: [scripted:a.json, scripted:b.json]
protocol: consilium
formats: [free-form, structured]
run: {{seed: {SEEDS[0]}}}
judges: [npc-signed-criteria, nmb-diagnosis-match]
judge_model: scripted:judge.json
replicates: {len(SEEDS)}
""")
    assert main(["cohort", "--experiment", str(experiment), "--out", str(tmp_path / "runs"),
                 "--allow-missing-reference"]) == 1  # the failed arms; q3 has no reference, on purpose
    run_dir = only_run(tmp_path / "runs")
    assert main(["report", str(run_dir), "--bootstrap", "500"]) == 0
    return run_dir


def strict_by_hand(met: set[str] | None) -> bool | None:
    """Eq. 1 for one answer: every requirement met and no error present; r2 not evaluable (``met`` None:
    the judge found nothing else met) leaves it undecided unless another element is already wrong."""
    found = met or set()
    if "r1" not in found or found & {"m1", "m2", "n1"}:
        return False  # wrong whatever r2 is: with met None, r1 is not met
    return None if met is None else "r2" in found


def by_case(outcomes: list[tuple[str, float | None]]) -> dict[str, float]:
    """Each case's mean over its replicates' known outcomes (a case with none is left out)."""
    cases: dict[str, list[float]] = {}
    for case, value in outcomes:
        if value is not None:
            cases.setdefault(case, []).append(value)
    return {case: sum(v) / len(v) for case, v in cases.items()}


def test_the_replicate_cohort_ran_as_scripted(replicate_run: Path) -> None:
    arms = read_csv(replicate_run / "arms.csv")
    assert len(arms) == len(r_arms())
    failed = {(r["model"], r["format"], r["case_id"], r["replicate"]) for r in arms if r["status"] != "completed"}
    assert failed == {(f"model-{m}", f, c, str(r)) for m, c, r in R_FAILED for f in FORMATS}
    # the replicates of a case differ: the fixture tests averaging, not a constant
    assert any(r_met(m, f, c, 0) != r_met(m, f, c, 1) for m, f, c, _ in r_arms())


def test_npcbench_strict_averages_replicates_per_case_and_counts_failed_arms(replicate_run: Path) -> None:
    rows = {(r["model"], r["variant"]): r for r in read_csv(replicate_run / "report" / "npcbench_scores.csv")}
    assert set(rows) == {(f"model-{m}", f) for m in ("a", "b") for f in FORMATS}
    for model in ("a", "b"):
        for fmt in FORMATS:
            row = rows[(f"model-{model}", fmt)]
            strict: list[tuple[str, float | None]] = []
            scores: list[tuple[str, float | None]] = []
            for case in ("q1", "q2"):  # q3 has no signed criteria: not evaluable, whatever its arms did
                for replicate in range(len(SEEDS)):
                    if r_failed(model, case, replicate):
                        strict.append((case, 0.0))  # a missing answer is incorrect
                        continue
                    met = r_met(model, fmt, case, replicate)
                    outcome = strict_by_hand(met)
                    strict.append((case, None if outcome is None else float(outcome)))
                    scores.append((case, None if met is None else signed(met)))
            cases = by_case(strict)
            n, successes = len(cases), sum(cases.values())
            low, high = wilson(successes, n)
            assert int(row["strict_patients"]) == n == 2  # the same P for both models: q3 is out for each
            assert close(row["strict_n"], successes) and close(row["strict_pct"], 100 * successes / n, 2)
            assert close(row["strict_ci_low"], 100 * low, 2) and close(row["strict_ci_high"], 100 * high, 2)
            assert row["strict_missing"] == str(sum(r_failed(model, c, r) for c in ("q1", "q2") for r in (0, 1)))
            # the undecided arms, and q3's arms (replicates), failed or not
            assert row["strict_not_evaluable"] == str(sum(o is None for _, o in strict) + len(SEEDS))
            o1 = by_case(scores)
            assert row["cases"] == str(len(o1))
            assert close(row["score_mean"], sum(o1.values()) / len(o1))
            assert row["failed"] == str(sum(r_failed(model, c, r) for c in R_CASES for r in (0, 1)))
    # by hand, (a, free-form): q1 has replicate 0 failed (0) and replicate 1 {r2} (0); q2's replicates are
    # {r1, r2, m1} (0) and {r1, r2} (1): Strict = (0 + 0.5) / 2 = 25 %, over 2 patients, not 4 arms
    assert (rows[("model-a", "free-form")]["strict_pct"], rows[("model-a", "free-form")]["strict_n"]) == ("25.0", "0.5")


def test_medbench_pass_at_k_averages_replicates_per_case_and_counts_failed_arms(replicate_run: Path) -> None:
    rows = {(r["model"], r["variant"], r["component"], r["metric"]): r
            for r in read_csv(replicate_run / "report" / "medbench_pass_at_k.csv")}
    expected: dict[tuple[str, str, str, str], list[tuple[str, float | None]]] = {}
    for model, fmt, case, replicate in r_arms():
        if case == "q3":
            continue  # no reference diagnosis: not evaluable for both models, failed arm or not
        failed = r_failed(model, case, replicate)
        group = (f"model-{model}", fmt)
        match = 0.0 if failed else float(r_match(model, fmt, case, replicate))
        expected.setdefault((*group, "conclusion", "pass@1"), []).append((case, match))
        if fmt == "structured":
            ranks = (False, False, False) if failed else r_ranks(model, case, replicate)
            first = None if ranks[0] is None else float(ranks[0])
            within = 1.0 if True in ranks else (None if None in ranks else 0.0)
            expected.setdefault((*group, "differential", "pass@1"), []).append((case, first))
            # three candidates (a leading diagnosis and two more) under the judge's k = 5: pass@3
            expected.setdefault((*group, "differential", "pass@3"), []).append((case, within))
    assert set(rows) == set(expected)
    for key, outcomes in expected.items():
        cases = by_case(outcomes)
        n, correct = len(cases), sum(cases.values())
        row = rows[key]
        assert row["cases"] == str(n) == "2", key
        assert close(row["correct"], correct) and close(row["accuracy"], correct / n)
        low, high = wilson(correct, n)
        assert close(row["ci_low"], low) and close(row["ci_high"], high)
        assert row["failed"] == str(sum(r_failed(key[0][-1], c, r) for c in ("q1", "q2") for r in (0, 1)))
        # an arm whose outcome is undecided, and each of q3's arms (failed or not)
        assert row["not_evaluable"] == str(sum(o is None for _, o in outcomes) + len(SEEDS))
    note = rows[("model-a", "structured", "differential", "pass@3")]["note"]
    assert "pass@5 n/a" in note and "at most 3 candidates" in note


def test_a_case_without_signed_criteria_is_not_evaluable_for_every_model(consilium_run: Path) -> None:
    """k3 has no reference.rubric: model a's k3 responses are not evaluable, and so are model b's failed k3
    arms, so both models' Strict runs over the same patients (k1, k2), never 2 for one and 3 for the other."""
    rows = {(r["model"], r["variant"]): r for r in read_csv(consilium_run / "report" / "npcbench_scores.csv")}
    for fmt in FORMATS:
        a, b = rows[("model-a", fmt)], rows[("model-b", fmt)]
        assert (a["strict_patients"], a["strict_not_evaluable"]) == ("2", "1")
        assert (b["strict_patients"], b["strict_not_evaluable"], b["strict_missing"]) == ("2", "1", "0")
        assert (a["failed"], b["failed"]) == ("0", "1")


def test_a_format_whose_every_arm_failed_is_counted_not_dropped(consilium_run: Path) -> None:
    """Model b's structured arms all fail (its records set aside): its rows stay, every arm counted by the
    paper's rule: an incorrect answer for pass@k and Strict, outside V for O1, not evaluable where the case
    has no signed criteria (k3)."""
    data = load_cohort_data(consilium_run)
    arms = [a.model_copy(update={"status": "failed"}) if (a.model, a.format) == ("model-b", "structured") else a
            for a in data.arms]
    responses = [r for r in judged_responses(consilium_run, data) if (r.model, r.variant) != ("model-b", "structured")]
    tables = {t.name: t.rows for t in judged_tables(responses, set(), bootstrap=50, seed=0, arms=arms,
                                                    cases=data.cases)}
    [npc] = [r for r in tables["npcbench_scores"] if (r["model"], r["variant"]) == ("model-b", "structured")]
    assert (npc["responses"], npc["failed"], npc["cases"], npc["score_mean"]) == (0, 3, 0, None)
    # k1 and k2 have signed criteria: two failures; k3 has none: not evaluable
    assert (npc["strict_patients"], npc["strict_n"], npc["strict_missing"], npc["strict_not_evaluable"]) == (2, 0, 2, 1)
    low, high = wilson(0, 2)
    assert (npc["strict_pct"], npc["strict_ci_low"], npc["strict_ci_high"]) == \
        (0.0, round(100 * low, 2), round(100 * high, 2))
    passes = {(r["component"], r["metric"]): r for r in tables["medbench_pass_at_k"]
              if (r["model"], r["variant"]) == ("model-b", "structured")}
    # every case has a reference diagnosis: three incorrect answers in each row model a's structured arms have
    assert set(passes) == {("conclusion", "pass@1"), ("differential", "pass@1"), ("differential", "pass@4")}
    for row in passes.values():
        assert (row["cases"], row["correct"], row["accuracy"], row["failed"], row["arms"]) == (3, 0, 0.0, 3, 3)
        assert (row["ci_low"], row["ci_high"]) == tuple(round(x, 4) for x in wilson(0, 3))


def test_pass_at_k_is_shown_only_for_a_k_the_candidates_reach(replicate_run: Path) -> None:
    """The judge's k is 5; every structured answer ranks three candidates (a leading diagnosis and two
    more): the row is pass@3, and pass@5 is named n/a with the reason, never shown over three candidates."""
    rows = read_csv(replicate_run / "report" / "medbench_pass_at_k.csv")
    assert not [r for r in rows if r["metric"] == "pass@5"]
    ranked = [r for r in rows if r["component"] == "differential" and r["metric"] != "pass@1"]
    assert {(r["metric"], r["k"]) for r in ranked} == {("pass@3", "3")}
    assert {r["note"] for r in ranked} == {"pass@5 n/a: the responses rank at most 3 candidates"}


def wilson_by_hand(successes: float, n: int) -> tuple[float, float]:
    """The Wilson score interval, z = 1.96, written out (neural-medbench.txt, Confidence Intervals)."""
    z, p = 1.96, successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def test_judge_summary_averages_replicates_per_case_and_labels_the_k_the_candidates_reach(
        replicate_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``judge`` over a cohort with two replicates per case: each rate of its summary is the mean over
    cases of each case's replicate mean, Wilson's n the cases (never the traces); a failed arm's trace is
    an incorrect answer; q3 has no reference diagnosis, so it is in no n. Every answer ranks three
    candidates under the judge's k = 5: each record and the summary say pass@3, and pass@5 is named n/a."""
    run_dir = tmp_path / "cohort"
    shutil.copytree(replicate_run, run_dir)
    (tmp_path / "judge.json").write_text(json.dumps(r_judge()))
    capsys.readouterr()
    assert main(["judge", str(run_dir), "--rubric", "nmb-diagnosis-match", "--judge-model",
                 f"scripted:{tmp_path / 'judge.json'}"]) == 0
    out = capsys.readouterr().out
    ranked = [read_judgement(p).aggregates["differential"]
              for p in run_dir.rglob("*.structured.*judge.nmb-diagnosis-match.json")]
    ranked = [found for found in ranked if "k" in found]
    assert len(ranked) == 10  # 12 structured arms, 2 failed
    assert all("pass@5" not in found and (found["k"], found["ranked"]) == (5, 3) and "pass@3" in found
               for found in ranked)

    def decided(values: tuple[bool | None, ...]) -> bool | None:
        return True if True in values else None if None in values else False

    for model in ("a", "b"):
        # case → its replicates' outcomes (a failed arm: incorrect); q3 has no reference: in no n
        pass1 = {c: [False if r_failed(model, c, r) else r_ranks(model, c, r)[0] for r in range(len(SEEDS))]
                 for c in ("q1", "q2")}
        pass3 = {c: [False if r_failed(model, c, r) else decided(r_ranks(model, c, r)) for r in range(len(SEEDS))]
                 for c in ("q1", "q2")}
        line = next(x for x in out.splitlines() if x.split()[:3] == [f"model-{model}", "structured", "differential"])
        assert "cases=3 (6 traces) failed=1 " in line
        for name, by_case in (("pass@1", pass1), ("pass@3", pass3)):
            means = [sum(known) / len(known) for v in by_case.values() if (known := [x for x in v if x is not None])]
            low, high = wilson_by_hand(sum(means), len(means))
            assert f"{name}={sum(means) / len(means):.3f} [{low:.3f}, {high:.3f}] (n={len(means)} cases)" in line
        assert "pass@5=" not in line and line.endswith("; pass@5 n/a: the traces rank at most 3 candidates")
    # the figures by hand: model a's q1 replicates are a failed arm (incorrect) and one whose leading
    # diagnosis is not evaluable but whose second candidate matches; its q2 replicates both match first
    line_a = next(x for x in out.splitlines() if x.split()[:3] == ["model-a", "structured", "differential"])
    assert "pass@1=0.500 [0.095, 0.905] (n=2 cases)" in line_a  # q1: 0/1, q2: 2/2 → (0 + 1) / 2
    assert "pass@3=0.750 [0.198, 0.973] (n=2 cases)" in line_a  # q1: (0 + 1) / 2, q2: 1 → (0.5 + 1) / 2


def ranked_response(model: str, case: str, matches: tuple[bool | None, ...], replicate: str = "") -> Response:
    """A structured answer's differential as the judge ranked it (None: a candidate not evaluable), under
    the cohort judge's k = 5."""
    items = tuple(JudgementItem(component="differential", criterion=f"rank_{rank}",
                                score=None if m is None else float(m), not_evaluable=m is None)
                  for rank, m in enumerate(matches, 1))
    return Response(model, "structured", case, "nmb-diagnosis-match", items,
                    {"differential": {"pass@1": None, "pass@5": None}}, replicate)


def test_pass_at_k_takes_one_k_for_every_model_of_the_table() -> None:
    """Model a's answers rank four candidates, model b's three, under the judge's k = 5: both rows are
    pass@4 (the most any answer ranks), model b's scored on the three it ranks, so the models compare at
    one k; never a pass@3 row for a and a pass@4 row for b, nor a row of a's failed arm alone."""
    from consilium.reports.papers.medbench import pass_at_k_table
    from consilium.reports.papers.per_case import FailedArm

    answers = {("a", "c1"): (False, False, False, True), ("a", "c2"): (False, False, False, False),
               ("b", "c1"): (False, True, False), ("b", "c2"): (None, False, False), ("b", "c3"): (True, False, False)}
    responses = [ranked_response(f"model-{model}", case, matches) for (model, case), matches in answers.items()]
    failed = {("model-a", "structured"): [FailedArm("model-a", "structured", "c3", "")]}
    rows = {(r["model"], r["metric"]): r for r in pass_at_k_table(responses, failed)}
    assert set(rows) == {(f"model-{m}", metric) for m in "ab" for metric in ("pass@1", "pass@4")}
    # by hand: a's pass@4 is c1 (rank 4) of c1, c2 and its failed c3 (incorrect): 1 of 3; b's c2 leads with a
    # candidate not evaluable and no match after it (undecided), so c1 and c3 of 2
    for model, correct, n, failures in (("a", 1, 3, 1), ("b", 2, 2, 0)):
        row = rows[(f"model-{model}", "pass@4")]
        low, high = wilson(correct, n)
        assert (row["k"], row["cases"], row["correct"], row["failed"]) == (4, n, correct, failures)
        assert row["ci_low"] == round(low, 4) and row["ci_high"] == round(high, 4)
        assert row["note"].startswith("pass@5 n/a: the responses rank at most 4 candidates")
    assert "3 response(s) rank fewer than 4, scored on those" in rows[("model-b", "pass@4")]["note"]
    # pass@1: b's c2 leads with a candidate not evaluable: not evaluable, out of the cases
    assert (rows[("model-b", "pass@1")]["cases"], rows[("model-b", "pass@1")]["correct"],
            rows[("model-b", "pass@1")]["not_evaluable"]) == (2, 1, 1)


def decision(case: str, scores: tuple[int | None, ...], replicate: str, model: str = "m") -> Response:
    return Response(model, "board-agents", case, "otb-four-decision", tuple(
        JudgementItem(component="conclusion", criterion=d, score=None if v is None else float(v),
                      not_evaluable=v is None) for d, v in zip(DIMS, scores, strict=True)), replicate=replicate)


def test_the_opentumorboard_means_average_a_cases_replicates_first() -> None:
    """Two replicates per case, some not evaluable: the four-decision score, its dimensions, the conclusion
    alignment and the Specialist Turn's score and rates are each the mean over cases of the case's
    replicate mean (as Strict, O1 and pass@k), never a mean pooled over the arms."""
    from consilium.reports.papers.otb import conclusion_alignment, decision_dimensions, four_decision, specialist_turn

    # case → its replicates' dimension scores (therapy, surgery, next action, clinical trial)
    decisions = {"c1": ((5, -1, 5, -1), (1, -1, 1, -1)), "c2": ((4, 4, -1, -1), (None, None, None, None)),
                 "c3": ((-1, -1, -1, 3), (-1, -1, -1, -1))}
    responses = [decision(case, scores, str(r)) for case, reps in decisions.items() for r, scores in enumerate(reps)]

    def weighted(scores: tuple[int | None, ...]) -> float | None:
        inside = [(W[d], s) for d, s in zip(DIMS, scores, strict=True) if s is not None and s != -1]
        return sum(w * s / 5 for w, s in inside) / sum(w for w, _ in inside) if inside else None

    # c1: (1.0 + 0.2) / 2 = 0.6; c2: 0.8 (its other replicate not evaluable); c3: 0.6 (the other none in scope)
    case_means = [0.6, (1.25 * 4 / 5 + 4 / 5) / 2.25, 0.6]
    assert [weighted(decisions["c1"][0]), weighted(decisions["c1"][1])] == [1.0, 0.2]
    [row] = four_decision(responses)
    assert (row["responses"], row["scored"], row["not_evaluable"], row["no_decision_in_scope"], row["cases"]) == \
        (6, 4, 1, 1, 3)
    assert row["weighted_mean"] == pytest.approx(sum(case_means) / 3, abs=1e-4)
    assert row["weighted_mean"] != pytest.approx((1.0 + 0.2 + 0.8 + 0.6) / 4, abs=1e-4)  # the arms pooled
    dims = {r["dimension"]: r for r in decision_dimensions(responses)}
    # therapy: c1 (5 + 1) / 2 = 3, c2 4 → 3.5 over 2 cases (pooled over arms: 10 / 3)
    assert (dims["therapy"]["in_scope"], dims["therapy"]["cases"], dims["therapy"]["mean"]) == (3, 2, 3.5)
    assert (dims["clinical_trial"]["in_scope"], dims["clinical_trial"]["out_of_scope"],
            dims["clinical_trial"]["not_evaluable"], dims["clinical_trial"]["mean"]) == (1, 4, 1, 3.0)

    alignments = {"c1": (5, 1), "c2": (4, None), "c3": (2, 3)}
    aligned = [Response("m", "board-agents", case, "otb-conclusion-alignment", (JudgementItem(
        component="conclusion", criterion="conclusion_alignment", score=None if s is None else float(s),
        not_evaluable=s is None),), replicate=str(r)) for case, reps in alignments.items() for r, s in enumerate(reps)]
    [row] = conclusion_alignment(aligned)
    means = [3.0, 4.0, 2.5]
    centre = sum(means) / 3
    assert (row["responses"], row["scored"], row["not_evaluable"], row["cases"]) == (6, 5, 1, 3)
    assert row["mean"] == round(centre, 4)
    assert row["sd"] == round((sum((m - centre) ** 2 for m in means) / 3) ** 0.5, 4)  # population SD, over cases

    # Specialist Turn: (score, critical error, unsupported claim) per replicate; None: not evaluable
    turns = {"t1": ((5, False, False), (3, True, True)), "t2": ((2, True, False), None)}
    answered = [Response("m", "turn", case, "otb-clinical-equivalence", () if verdict is None else (JudgementItem(
        component="answer", criterion="clinical_equivalence", score=float(verdict[0]),
        flags={"critical_error": verdict[1], "unsupported_claim": verdict[2]}),), replicate=str(r))
        for case, reps in turns.items() for r, verdict in enumerate(reps)]
    [row] = specialist_turn(answered)
    # t1: score 4, critical 0.5, unsupported 0.5; t2: score 2, critical 1, unsupported 0
    assert (row["responses"], row["scored"], row["cases"], row["clinical_equivalence_mean"]) == (4, 3, 2, 3.0)
    assert (row["critical_error_n"], row["critical_error_pct"]) == (1.5, 75.0)
    assert (row["unsupported_claim_n"], row["unsupported_claim_pct"]) == (0.5, 25.0)


def test_the_score_tables_count_the_failed_arms_they_have_no_score_for(replicate_run: Path) -> None:
    """compare's and report's generic score tables (the between-replicate table, per case and per model, and
    the paired format differences) average the scores there are: a failed arm has none, so each row counts
    its model and format's failed arms in ``failed`` (nmb's final-conclusion mean is an accuracy without
    them; medbench_pass_at_k counts them as incorrect)."""
    from consilium.reports.consilium.paired import paired_differences

    def failures(model: str, fmt: str, case: str | None = None) -> int:  # each failure is in both formats
        assert fmt in FORMATS
        return sum(model in (f"model-{m}", "pooled") and case in (None, c) for m, c, _ in R_FAILED)

    sd = read_csv(replicate_run / "report" / "replicate_sd.csv")
    models = ("model-a", "model-b", "pooled")
    assert {(r["model"], r["format"]) for r in sd} == {(m, f) for m in models for f in FORMATS}
    for row in sd:
        assert row["failed"] == str(failures(row["model"], row["format"])), row
    # model a's free-form final conclusion: q1 scored once (replicate 0 failed), q2 twice; q3 has no reference
    [a_free] = [r for r in sd
                if (r["model"], r["format"], r["criterion"]) == ("model-a", "free-form", "final_conclusion")]
    q1, q2 = float(r_match("a", "free-form", "q1", 1)), sum(r_match("a", "free-form", "q2", r) for r in (0, 1)) / 2
    assert (a_free["replicates"], a_free["failed"], a_free["not_evaluable"]) == ("3", "1", "2")
    assert close(a_free["mean"], (q1 + q2) / 2)
    for row in read_csv(replicate_run / "report" / "replicate_sd_cases.csv"):
        assert row["failed"] == str(failures(row["model"], row["format"], row["case_id"])), row
    paired = paired_differences(load_cohort_data(replicate_run), bootstrap=20)
    assert paired and {r["model"] for r in paired} == {"model-a", "model-b", "pooled"}
    for pair in paired:  # either format's failed arms: one of each for a and b, all four pooled
        expected = sum(failures(pair["model"], f) for f in FORMATS)
        assert pair["failed"] == expected == (4 if pair["model"] == "pooled" else 2)


def test_a_case_whose_every_arm_failed_is_read_from_the_cohort_cases(consilium_run: Path, tmp_path: Path) -> None:
    """Every arm of k3 (no signed criteria, a reference diagnosis) fails: no trace records k3, so the
    report reads it from the cohort's cases (its content hash the manifest's). Strict leaves it out for
    both models (not evaluable, never a failure), and pass@k counts each failed arm as incorrect."""
    copy = tmp_path / consilium_run.name
    shutil.copytree(consilium_run, copy, ignore=shutil.ignore_patterns("report"))
    arms = read_csv(copy / "arms.csv")
    for arm in arms:
        if arm["case_id"] == "k3" and arm["status"] == "completed":
            arm.update(status="failed", failed_stage="synthesis", error="model error", trace="")
    with (copy / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(arms[0]))
        writer.writeheader()
        writer.writerows(arms)
    assert main(["report", str(copy), "--bootstrap", "200"]) == 0
    npc = {(r["model"], r["variant"]): r for r in read_csv(copy / "report" / "npcbench_scores.csv")}
    assert set(npc) == {(f"model-{m}", f) for m in "ab" for f in FORMATS}
    for row in npc.values():  # k1 and k2 decide Strict; k3's failed arm is not evaluable, not a failure
        assert (row["strict_patients"], row["strict_missing"], row["strict_not_evaluable"], row["failed"]) == \
            ("2", "0", "1", "1")
    passes = read_csv(copy / "report" / "medbench_pass_at_k.csv")
    assert passes and {r["failed"] for r in passes} == {"1"}  # k3 has a reference diagnosis: incorrect


def test_a_format_no_arm_of_which_completed_keeps_its_rows_with_one_model() -> None:
    """One model: its free-form answers are judged and both its structured arms failed, so no model has a
    structured response. The structured rows are there all the same (with the rows the rubric has
    elsewhere), each failed arm counted: incorrect for pass@1, not evaluable for the four-decision mean."""
    from consilium.reports.papers.medbench import pass_at_k_table
    from consilium.reports.papers.otb import four_decision
    from consilium.reports.papers.per_case import FailedArm
    from consilium.reports.summary import rubric_summary

    def match(case: str, ok: bool, rubric: str = "nmb-diagnosis-match") -> Response:
        return Response("m", "free-form", case, rubric, (JudgementItem(
            component="conclusion", criterion="final_conclusion", score=float(ok)),))

    failed = {("m", "structured"): [FailedArm("m", "structured", c, "") for c in ("c1", "c2")]}
    rows = {r["variant"]: r for r in pass_at_k_table([match("c1", True), match("c2", False)], failed)}
    assert set(rows) == {"free-form", "structured"}
    low, high = wilson(0, 2)
    assert (rows["structured"]["metric"], rows["structured"]["cases"], rows["structured"]["correct"],
            rows["structured"]["failed"]) == ("pass@1", 2, 0, 2)
    assert (rows["structured"]["ci_low"], rows["structured"]["ci_high"]) == (round(low, 4), round(high, 4))
    assert (rows["free-form"]["cases"], rows["free-form"]["correct"], rows["free-form"]["failed"]) == (2, 1, 0)

    board_failed = {("m", "board-single"): [FailedArm("m", "board-single", "c1", "")]}
    decided = {r["variant"]: r for r in four_decision([decision("c1", (5, 4, -1, -1), "")], board_failed)}
    assert set(decided) == {"board-agents", "board-single"}
    assert (decided["board-single"]["responses"], decided["board-single"]["failed"], decided["board-single"]["cases"],
            decided["board-single"]["weighted_mean"]) == (0, 1, 0, None)

    summary = rubric_summary([match("c1", True, "my-rubric")], {"my-rubric"}, failed)
    assert {(r["variant"], r["items"], r["failed"]) for r in summary} == {("free-form", 1, 0), ("structured", 0, 2)}


def test_a_count_of_case_means_is_whole_when_its_cases_add_up_to_a_whole() -> None:
    """Ten cases each with one replicate of ten correct (0.1 each) are one success: ``correct`` is 1, not
    0.9999999999999999 nor 1.0, and the Wilson interval is that of 1 of 10."""
    from consilium.reports.papers.medbench import pass_at_k_table

    responses = [Response("m", "free-form", f"c{i}", "nmb-diagnosis-match", (JudgementItem(
        component="conclusion", criterion="final_conclusion", score=float(r == 0)),), replicate=str(r))
        for i in range(10) for r in range(10)]
    assert sum([0.1] * 10) != 1  # floating point
    [row] = pass_at_k_table(responses)
    low, high = wilson(1, 10)
    assert (row["cases"], row["arms"], row["correct"], row["accuracy"]) == (10, 100, 1, 0.1)
    assert isinstance(row["correct"], int)
    assert (row["ci_low"], row["ci_high"]) == (round(low, 4), round(high, 4))
