"""`calibrate agreement` keys every rating by the output it rates (case, variant, panel model, run,
component, criterion): with several models and formats per case, Krippendorff's α, the physician
baseline and the case-clustered bootstrap see one unit per rated output, and a case drawn twice in a
bootstrap resample brings its units twice, as distinct units (npcbench.txt Eq. A9 for the binary path).

Expected values are computed here, apart from the code under test: Krippendorff's α from its
coincidence matrix (:func:`alpha_by_hand`), the bootstrap from the documented draws.
"""

from __future__ import annotations

import csv
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.corpus_evolve import CASES, HEADER, MODELS, build_judged, mark
from test_report_papers import (
    board_cases,
    board_judge,
    board_script,
    consilium_cases,
    consilium_judge,
    only_run,
    panel_script,
    write,
)

from consilium.calibration.agreement import agreement
from consilium.calibration.pairs import Pair
from consilium.cli import main

FORMATS = ("free-form", "structured")
OUTPUTS = [(model, fmt) for model in MODELS for fmt in FORMATS]  # four outputs per case
CRITERIA = ("c1", "c2")
RATERS = ("dr-a", "dr-b")
NOT_EVALUABLE = ("e3", ("panel-b", "structured"), "c2")  # the judge declined this item


def alpha_by_hand(units: Iterable[Sequence[float]], level: str) -> float | None:
    """Krippendorff's α from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability"): each unit's m ≥ 2 values add 1/(m − 1) per ordered pair of values; δ² is
    [c ≠ k] (nominal) or (Σ_{g=c..k} n_g − (n_c + n_k)/2)² (ordinal); α = 1 − (n − 1)·Σ o·δ² / Σ n_c·n_k·δ²."""
    o: dict[tuple[float, float], Fraction] = defaultdict(Fraction)
    for values in units:
        if len(values) >= 2:
            for i, c in enumerate(values):
                for j, k in enumerate(values):
                    if i != j:
                        o[(c, k)] += Fraction(1, len(values) - 1)
    labels = sorted({c for c, _ in o})
    n_c = {c: sum((o[(c, k)] for k in labels), Fraction(0)) for c in labels}
    n = sum(n_c.values(), Fraction(0))

    def delta(c: float, k: float) -> Fraction:
        if level == "nominal":
            return Fraction(int(c != k))
        low, high = sorted((c, k))
        return (sum((n_c[g] for g in labels if low <= g <= high), Fraction(0)) - (n_c[c] + n_c[k]) / 2) ** 2

    disagreement = sum((n_c[c] * n_c[k] * delta(c, k) for c in labels for k in labels), Fraction(0))
    if not disagreement:
        return None
    return float(1 - (n - 1) * sum((o[(c, k)] * delta(c, k) for c in labels for k in labels), Fraction(0))
                 / disagreement)


def bootstrap_by_hand(units_by_case: dict[str, list[list[float]]], draws: int, seed: int,
                      level: str, *, keep_repeats: bool = True) -> tuple[float, float]:
    """The 95% percentile interval of α over the documented draws (docs/calibration.md): sorted case
    ids, ``numpy.random.default_rng([seed, crc32("calibration agreement")]).integers(0, cases, (draws,
    cases))`` (the seed and the table's name: the one seeding rule of every bootstrap); a case drawn twice
    brings its units twice (``keep_repeats=False``: once, as a collapsing key would)."""
    cases = sorted(units_by_case)
    values = []
    rng = np.random.default_rng([seed, zlib.crc32(b"calibration agreement")])
    for draw in rng.integers(0, len(cases), size=(draws, len(cases))):
        picked = [cases[i] for i in draw] if keep_repeats else sorted({cases[i] for i in draw})
        value = alpha_by_hand([u for case in picked for u in units_by_case[case]], level)
        if value is not None:
            values.append(value)
    assert len(values) >= max(10, draws // 2)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


# ---- the binary path (npcbench.txt Eq. A9): two outputs per case, pairs as pair_ratings makes them

#: (case, model) → (dr-a, dr-b, judge)
BINARY_UNITS = {("k1", "m1"): (1, 1, 1), ("k1", "m2"): (0, 0, 1), ("k2", "m1"): (1, 0, 1),
                ("k2", "m2"): (0, 0, 0), ("k3", "m1"): (1, 1, 0), ("k3", "m2"): (0, 1, 1)}


def binary_pairs() -> list[Pair]:
    return [Pair(case, "answer", "k", rater, float(values[r]), float(values[2]), variant="structured", model=model,
                 run=f"run-{model}", trace=f"{case}.{model}.trace.json")
            for (case, model), values in BINARY_UNITS.items() for r, rater in enumerate(RATERS)]


def test_binary_alpha_and_baseline_count_each_output_of_a_case() -> None:
    rows = {r.criterion: r for r in agreement(binary_pairs(), binary=True, labels=[0, 1], bootstrap=0)}
    pooled, baseline = rows["pooled"], rows["physician baseline (pooled)"]
    # Judge and two physicians on six units (3 values each, weight 1/2 per ordered pair):
    # o00 = 1 (k1/m2) + 3 (k2/m2) = 4; o11 = 3 + 1 + 1 + 1 = 6; o01 = o10 = 1+1+1+1 = 4;
    # n0 = 8, n1 = 10, n = 18: α = 1 − 17·8 / (2·8·10) = 24/160 = 0.15.
    # (Keyed by case alone, m2 overwrites m1: three units, α = 1 − 8·4/(2·6·3) = 1/9.)
    assert pooled.point["alpha"] == pytest.approx(0.15)
    assert pooled.point["alpha"] == pytest.approx(alpha_by_hand(BINARY_UNITS.values(), "nominal"))
    assert pooled.n == 12 and pooled.point["accuracy"] == pytest.approx(6 / 12)
    # The baseline: each of the 12 ratings against the other physician's rating of the same output.
    # Physicians alone (weight 1): o00 = 4, o11 = 4, o01 = o10 = 2; n0 = n1 = 6, n = 12:
    # α = 1 − 11·4 / (2·6·6) = 7/18. Agreement: 8 of 12 (k2/m1 and k3/m2 disagree).
    assert baseline.n == 12
    assert baseline.point["alpha"] == pytest.approx(7 / 18)
    assert baseline.point["accuracy"] == pytest.approx(8 / 12)


def test_binary_bootstrap_keeps_a_case_drawn_twice_as_distinct_units() -> None:
    draws, seed = 40, 5
    rows = {r.criterion: r for r in agreement(binary_pairs(), binary=True, labels=[0, 1], bootstrap=draws,
                                              seed=seed)}
    by_case: dict[str, list[list[float]]] = defaultdict(list)
    physicians: dict[str, list[list[float]]] = defaultdict(list)
    for (case, _), values in BINARY_UNITS.items():
        by_case[case].append(list(values))
        physicians[case].append(list(values[:2]))
    expected = bootstrap_by_hand(by_case, draws, seed, "nominal")
    assert rows["pooled"].ci["alpha"] == pytest.approx(expected)
    assert expected != pytest.approx(bootstrap_by_hand(by_case, draws, seed, "nominal", keep_repeats=False))
    assert rows["physician baseline (pooled)"].ci["alpha"] == pytest.approx(
        bootstrap_by_hand(physicians, draws, seed, "nominal"))


# ---- the ordinal path, end to end: two models × two formats × four cases, judged by a scripted judge


def dr_a(case: str, output: tuple[str, str], criterion: str) -> int:
    return (CASES.index(case) + 2 * OUTPUTS.index(output) + CRITERIA.index(criterion)) % 4


def rating(rater: str, case: str, output: tuple[str, str], criterion: str) -> int:
    """dr-a's score; dr-b gives one more (capped at 3) on every third (case, output)."""
    score = dr_a(case, output, criterion)
    if rater == "dr-b" and (CASES.index(case) + OUTPUTS.index(output)) % 3 == 0:
        score = min(3, score + 1)
    return score


def judge_score(case: str, output: tuple[str, str], criterion: str) -> int:
    """dr-a's score, or one less (floored at 0) on about half of the items."""
    score = dr_a(case, output, criterion)
    return score if (CASES.index(case) * OUTPUTS.index(output) + CRITERIA.index(criterion)) % 2 == 0 \
        else max(0, score - 1)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rules: list[dict[str, Any]] = [
        {"stage": "judge", "role": f"conclusion:{criterion}", "contains_all": [mark(*output), f"casemark-{case}."],
         "json": {"rationale": "r", "score": "not_evaluable" if (case, output, criterion) == NOT_EVALUABLE
                  else judge_score(case, output, criterion)}}
        for case in CASES for output in OUTPUTS for criterion in CRITERIA]
    return build_judged(tmp_path_factory.mktemp("agreement"), rules)


def write_ratings(path: Path) -> Path:
    path.write_text(HEADER + "".join(
        f"{case},conclusion,{criterion},{rater},{rating(rater, case, output, criterion)},{output[0]},{output[1]}\n"
        for case in CASES for output in OUTPUTS for criterion in CRITERIA for rater in RATERS))
    return path


def units(criteria: Sequence[str], *, judge: bool) -> dict[str, list[list[float]]]:
    """Per case, each rated output's values (the physicians', then the judge's); the not-evaluable item
    has no judge score, so its ratings are not paired and it is no unit."""
    by_case: dict[str, list[list[float]]] = defaultdict(list)
    for case in CASES:
        for output in OUTPUTS:
            for criterion in criteria:
                if (case, output, criterion) != NOT_EVALUABLE:
                    by_case[case].append([*(rating(r, case, output, criterion) for r in RATERS),
                                          *([judge_score(case, output, criterion)] if judge else [])])
    return by_case


def test_agreement_keys_ratings_by_the_output_they_rate(judged: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ratings = write_ratings(tmp_path / "ratings.csv")
    out = tmp_path / "report"
    draws, seed = 30, 3
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(judged), "--rubric",
                 "ai-consilium", "--bootstrap", str(draws), "--seed", str(seed), "--out", str(out)]) == 0
    rows = {r["criterion"]: r for r in csv.DictReader((out / "agreement.csv").read_text().splitlines())}
    # 64 ratings, 2 of the not-evaluable item unpaired: 62 pairs, 31 rated outputs × criteria
    assert capsys.readouterr().out.splitlines()[0].endswith(
        "62 paired with judge scores, 2 without; 16 rated outputs of 4 cases")
    assert rows["pooled"]["n"] == "62" and rows["pooled"]["cases"] == "4"
    for name, criteria in (("c1", ["c1"]), ("c2", ["c2"]), ("pooled", list(CRITERIA))):
        by_case = units(criteria, judge=True)
        assert float(rows[name]["alpha"]) == pytest.approx(
            alpha_by_hand([u for us in by_case.values() for u in us], "ordinal")), name
        low, high = bootstrap_by_hand(by_case, draws, seed, "ordinal")
        assert (float(rows[name]["alpha_ci_low"]), float(rows[name]["alpha_ci_high"])) == pytest.approx(
            (low, high)), name
    # The physician baseline uses every paired rating (62), each against the other physician's rating of
    # the same output; its α is among the physicians alone.
    baseline = rows["physician baseline (pooled)"]
    physicians = units(CRITERIA, judge=False)
    assert baseline["n"] == "62"
    assert float(baseline["alpha"]) == pytest.approx(
        alpha_by_hand([u for us in physicians.values() for u in us], "ordinal"))
    differences = [abs(a - b) for us in physicians.values() for a, b in us]
    assert float(baseline["mae"]) == pytest.approx(sum(differences) / len(differences))
    assert (float(baseline["alpha_ci_low"]), float(baseline["alpha_ci_high"])) == pytest.approx(
        bootstrap_by_hand(physicians, draws, seed, "ordinal"))


def refused(judged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: str) -> str:
    """``calibrate agreement`` on ratings ``rows``: exit 2, one line on stderr (returned), nothing written."""
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + rows)
    out = tmp_path / "report"
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(judged), "--rubric",
                 "ai-consilium", "--bootstrap", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and not out.exists()
    return err


def test_a_rating_that_leaves_its_output_open_is_refused(judged: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A blank model on a case run by two models could rate either output: refused in one line, nothing
    written, never merged."""
    err = refused(judged, tmp_path, capsys, "e2,conclusion,c1,dr-a,2,,structured\n")
    assert "matches 2 judged traces" in err and "model panel-a" in err


def test_a_rater_rating_one_output_twice_is_refused(judged: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Two ratings by one rater of the same output's criterion cannot both be that rater's rating."""
    err = refused(judged, tmp_path, capsys, "e2,conclusion,c1,dr-a,2,panel-a,structured\n"
                                             "e2,conclusion,c1,dr-a,3,panel-a,structured\n")
    assert "dr-a rated e2/conclusion/c1" in err and "twice" in err


# ---- every shipped rubric: a rating names the judgement item it rates as the judge writes it (its component
# and criterion, docs/calibration.md), so each rubric's judgements pair with ratings written by the docs.
# Board and consilium cohorts of model a (the scripts and score tables of tests/reports/test_report_papers.py),
# Specialist Turn answers of model a, and this module's ai-consilium folder.

TURN = {"t1": (5, False, False), "t2": (3, True, True), "t3": (4, False, True)}  # score, critical, unsupported


def _turns(tmp: Path) -> Path:
    """Model a's Specialist Turn answers on t1-t3, judged for clinical equivalence (scores in TURN)."""
    answers = [{"stage": "specialist_turn", "contains": f"casemark-{c}", "json": {"answer": f"Operate ansa{c}."}}
               for c in TURN]
    spec = write(tmp, "turn-a.json", {"model": "model-a", "rules": answers})
    judge = write(tmp, "turn-judge.json", {"model": "judge", "rules": [
        {"stage": "judge", "contains": f"ansa{c}", "json": {"rationale": "r", "score": s, "critical_error": ce,
                                                             "unsupported_claim": uc}}
        for c, (s, ce, uc) in TURN.items()]})
    cases, out = board_cases(tmp), tmp / "turns"
    for case in TURN:
        assert main(["turn", "--case", str(cases / f"{case}.yaml"), "--model", spec, "--role", "Surgeon",
                     "--question", "Would you operate?", "--out", str(out)]) == 0
    assert main(["judge", str(out), "--rubric", "otb-clinical-equivalence", "--judge-model", judge,
                 "--reference-answer", "I would operate."]) == 0
    return out


@pytest.fixture(scope="module")
def shipped_runs(tmp_path_factory: pytest.TempPathFactory, judged: Path) -> dict[str, Path]:
    """Each shipped rubric's judged folder: model a's board cohort (conclusion alignment, four decisions; t3
    has no reference, so it is not evaluable), its consilium cohort (signed criteria, diagnosis match; k3
    has no signed criteria), its Specialist Turn answers and the ai-consilium folder above."""
    tmp = tmp_path_factory.mktemp("shipped")
    runs = {}
    for name, protocol, cases, panel, judge, rubrics in (
            ("board", ["--protocol", "board"], board_cases, board_script, board_judge,
             ("otb-conclusion-alignment", "otb-four-decision")),
            ("consult", [], consilium_cases, panel_script, consilium_judge,
             ("npc-signed-criteria", "nmb-diagnosis-match"))):
        folder = tmp / name
        folder.mkdir()
        out = folder / "runs"
        assert main(["cohort", *protocol, "--cases", str(cases(folder)), "--model",
                     write(folder, "a.json", panel("a")), *(a for r in rubrics for a in ("--judge", r)),
                     "--judge-model", write(folder, "j.json", judge()), "--out", str(out),
                     "--allow-missing-reference"]) == 0
        runs.update(dict.fromkeys(rubrics, only_run(out)))
    return {**runs, "otb-clinical-equivalence": _turns(tmp), "ai-consilium": judged}


def _ai(case: str, model: str, fmt: str, criterion: str) -> float | None:
    return None if (case, (model, fmt), criterion) == NOT_EVALUABLE else judge_score(case, (model, fmt), criterion)


#: Per shipped rubric, ratings written as docs/calibration.md says (case_id, component, criterion, rater, score,
#: model, format), each with the judge's score of the item it names, read off the fixture's scripts by hand
#: (test_report_papers.py's ALIGN, DECIDE, MET, MATCH, LEADING, DIFFERENTIAL; TURN; judge_score above); None:
#: the item has no judge score (not evaluable, or never judged), so the rating pairs with nothing.
SHIPPED: dict[str, list[tuple[str, float | None]]] = {
    "ai-consilium": [
        ("e1,conclusion,c1,dr-a,1,panel-a,free-form", _ai("e1", "panel-a", "free-form", "c1")),
        ("e2,conclusion,c2,dr-b,3,panel-b,structured", _ai("e2", "panel-b", "structured", "c2")),
        ("e4,conclusion,c1,dr-a,0,panel-b,free-form", _ai("e4", "panel-b", "free-form", "c1")),
        ("e3,conclusion,c2,dr-a,2,panel-b,structured", None),  # the judge declined it
        ("e1,role_opinion,c1,dr-a,2,panel-a,structured", None)],  # the folder judged the conclusion only
    "otb-conclusion-alignment": [  # ALIGN: qaa1 4, qas2 3
        ("t1,conclusion,conclusion_alignment,dr-a,4,model-a,agents", 4),
        ("t1,conclusion,conclusion_alignment,dr-b,2,model-a,agents", 4),
        ("t2,conclusion,conclusion_alignment,dr-a,5,model-a,single", 3),
        ("t3,conclusion,conclusion_alignment,dr-a,2,model-a,agents", None)],  # no reference: not evaluable
    "otb-four-decision": [  # DECIDE: qaa1 (5, 4, -1, -1), qaa2 (3, -1, 2, 5), qas2 (4, invalid, 3, 1)
        ("t1,conclusion,therapy,dr-a,3,model-a,agents", 5),
        ("t1,conclusion,next_action,dr-a,-1,model-a,agents", -1),  # both out of scope: in no MAE
        ("t2,conclusion,clinical_trial,dr-b,4,model-a,agents", 5),
        ("t2,conclusion,surgery,dr-a,2,model-a,single", None),  # the judge's invalid dimension
        ("t2,conclusion,next_action,dr-a,3,model-a,single", 3)],
    "otb-clinical-equivalence": [
        ("t1,answer,clinical_equivalence,dr-a,4,model-a,", 5),
        ("t2,answer,clinical_equivalence,dr-a,3,model-a,", 3),
        ("t3,answer,clinical_equivalence,dr-b,1,model-a,", 4)],
    # MET: (ff, k1) {r1, r2}, (st, k1) {r2, m1, m2, n1}, (ff, k2) {r1, m1}, (st, k2) {r1, r2, n1}
    "npc-signed-criteria": [
        ("k1,conclusion,r1,dr-a,1,model-a,free-form", 1),
        ("k1,conclusion,m1,dr-a,1,model-a,structured", 1),
        ("k2,conclusion,m1,dr-a,0,model-a,free-form", 1),
        ("k2,conclusion,n1,dr-b,1,model-a,structured", 1),
        ("k3,conclusion,r1,dr-a,1,model-a,free-form", None)],  # k3 has no signed criteria: not evaluable
    "nmb-diagnosis-match": [  # MATCH (conclusion); structured differential: LEADING (rank 1), DIFFERENTIAL (2-4)
        ("k1,conclusion,final_conclusion,dr-a,1,model-a,structured", 1),
        ("k2,conclusion,final_conclusion,dr-a,1,model-a,free-form", 0),
        ("k3,conclusion,final_conclusion,dr-b,0,model-a,structured", 0),
        ("k1,differential,rank_1,dr-a,0,model-a,structured", 0),
        ("k1,differential,rank_2,dr-a,1,model-a,structured", 1),
        ("k2,differential,rank_4,dr-a,0,model-a,structured", 1),
        ("k3,differential,rank_5,dr-a,1,model-a,structured", None)],  # three candidates and the leading one
}


@pytest.mark.parametrize("rubric", sorted(SHIPPED))
def test_every_shipped_rubrics_judgements_pair_with_ratings_written_by_the_docs(
        rubric: str, shipped_runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rating names the item as the judge writes it; on the diagnosis-match rubric those are
    final_conclusion and rank_<n>, not the rubric's one criterion id, and every such rating paired with
    nothing. The figure: accuracy on a 0/1 scale, else the MAE over the pairs both scored in scope."""
    rows = SHIPPED[rubric]
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + "".join(row + "\n" for row, _ in rows))
    out = tmp_path / "report"
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(shipped_runs[rubric]),
                 "--rubric", rubric, "--bootstrap", "10", "--out", str(out)]) == 0
    paired = [(float(row.split(",")[4]), judge) for row, judge in rows if judge is not None]
    assert f"{len(paired)} paired with judge scores, {len(rows) - len(paired)} without" in capsys.readouterr().out
    pooled = next(r for r in csv.DictReader((out / "agreement.csv").read_text().splitlines())
                  if r["criterion"] == "pooled")
    if rubric in ("npc-signed-criteria", "nmb-diagnosis-match"):
        assert float(pooled["accuracy"]) == pytest.approx(sum(h == j for h, j in paired) / len(paired))
    else:
        in_scope = [(h, j) for h, j in paired if -1 not in (h, j)]
        assert float(pooled["mae"]) == pytest.approx(sum(abs(h - j) for h, j in in_scope) / len(in_scope))


@pytest.mark.parametrize("rubric, row, expected", [
    ("nmb-diagnosis-match", "k1,conclusion,diagnosis_match,dr-a,1,model-a,structured",
     "line 2: criterion: 'diagnosis_match' is not a criterion of nmb-diagnosis-match's conclusion items "
     "(final_conclusion)"),
    ("nmb-diagnosis-match", "k1,differential,rank_0,dr-a,1,model-a,structured",
     "line 2: criterion: 'rank_0' is not a criterion of nmb-diagnosis-match's differential items"),
    ("ai-consilium", "e1,role_opinion,c3,dr-a,1,panel-a,structured",
     "line 2: criterion: 'c3' is not a criterion of ai-consilium's role_opinion items"),
    ("otb-four-decision", "t1,answer,therapy,dr-a,1,model-a,agents",
     "line 2: component: otb-four-decision judges no 'answer' (its components: conclusion)"),
])
def test_a_rating_of_no_item_of_the_rubric_names_the_file_row_and_criterion(
        rubric: str, row: str, expected: str, shipped_runs: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(HEADER + row + "\n")
    out = tmp_path / "report"
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(shipped_runs[rubric]),
                 "--rubric", rubric, "--bootstrap", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(ratings) in err and expected in err and not out.exists()
