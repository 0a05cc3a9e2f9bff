"""OpenTumorBoard's summaries (opentumorboard.txt): Board Simulation per model and mode (Table A3:
conclusion alignment, ROUGE-L; App. E.2 format checks), the four-decision rubric (App. C.3, E.2;
Table A4's dimensions) and the Specialist Turn (Table A2: clinical equivalence, critical-error and
unsupported-claim rates).

Counted as every paper table here counts (:mod:`consilium.reports.papers.per_case`): each mean is over the
cases the judge scored, a case's replicates averaged first (``cases``; without replicates, the mean over the
responses scored); ``responses``, ``scored`` and the other counts are of arms. A failed arm has no conclusion to
judge, so it is not evaluable and counted in ``failed``."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from consilium.cases import Case
from consilium.graphs.board.protocol import BOARD
from consilium.graphs.registry import read_trace
from consilium.judges.components import component_texts
from consilium.judges.rubric import load_rubric
from consilium.judges.scoring import weighted_decisions
from consilium.reports.compare import CohortData
from consilium.reports.papers.per_case import CaseValues, FailedArm, case_values, rubric_groups
from consilium.reports.papers.responses import Response, by_component, group
from consilium.reports.papers.stats import count, mean, pct, rate, sd
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.rows import ArmRow

__all__ = ["DIMENSIONS", "board_stops", "board_summary", "conclusion_alignment", "decision_dimensions",
           "four_decision", "rouge_l", "specialist_turn", "weights"]

ALIGNMENT, DECISIONS, EQUIVALENCE = "otb-conclusion-alignment", "otb-four-decision", "otb-clinical-equivalence"
DIMENSIONS = ("therapy", "surgery", "next_action", "clinical_trial")
Failed = Mapping[tuple[str, str], list[FailedArm]]  # (model, variant) → its failed arms


@lru_cache(maxsize=1)
def weights() -> dict[str, float]:
    """App. E.2: therapy 1.00, surgery 1.25, next action 1.15, clinical trial 2.00 (from the rubric file)."""
    return {c.id: c.weight for c in load_rubric(DECISIONS).criteria}


def _model(arm: ArmRow) -> str:
    return arm.model or arm.model_spec


def _alignment(response: Response) -> float | None:
    """The 1–5 conclusion-alignment score, or None when not evaluable."""
    scores = [i.score for i in response.items if i.criterion == "conclusion_alignment" and i.score is not None]
    return scores[0] if scores else None


def _decision_scores(response: Response) -> dict[str, int] | None:
    """The judged dimension scores (−1 or 1–5) of one conclusion; None when it is not evaluable: no
    dimension judged, or none judged in scope while some could not be judged (one of those may have
    been in scope). A dimension not evaluable is left out, as the judgement's own aggregate leaves it
    out: it enters neither sum of App. E.2's weighted mean and never voids the dimensions that were
    judged; :func:`_partly_judged` counts the conclusions it happened to."""
    items = [i for i in response.items if i.criterion in DIMENSIONS]
    scores = {i.criterion: int(i.score) for i in items if i.score is not None}
    undecided = len(scores) < len(items)
    if not scores or (undecided and all(s == -1 for s in scores.values())):
        return None
    return scores


def _case_mean(values: CaseValues) -> float | None:
    """The mean over the cases of each case's mean over its replicates (rounded as every table's means)."""
    return mean(list(values.means.values()))


def _alignment_values(group: list[Response]) -> CaseValues:
    """Each case's conclusion alignment (1–5), its replicates averaged."""
    return case_values((r.case_id, _alignment(r)) for r in group)


def _decision_values(group: list[Response]) -> CaseValues:
    """Each case's four-decision score (App. E.2), its replicates averaged; a conclusion not evaluable or
    with no decision in scope has none."""
    return case_values((r.case_id, None if (s := _decision_scores(r)) is None else weighted_decisions(s, weights()))
                       for r in group)


def _partly_judged(response: Response) -> bool:
    """Scored on some dimensions while others were not evaluable."""
    items = [i for i in response.items if i.criterion in DIMENSIONS]
    return _decision_scores(response) is not None and any(i.score is None for i in items)


@lru_cache(maxsize=1)
def _rouge() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(run_dir: Path, arm: ArmRow) -> float | None:
    """ROUGE-L F1 of a completed board arm's conclusion against its case's ``reference.conclusion``
    (the ``rouge-score`` package, Porter stemmer, as the judgement records' overlap); None when the
    trace has no conclusion or the case no reference conclusion."""
    trace = read_trace(RunFolder(run_dir).trace_location(arm.trace))
    candidate = component_texts(trace).get("conclusion")
    case = Case.model_validate(trace.case)
    reference = case.reference.conclusion if case.reference else None
    if not candidate or not reference:
        return None
    return float(_rouge().score(reference, candidate)["rougeL"].fmeasure)


def board_summary(run_dir: Path, data: CohortData, responses: list[Response]) -> list[dict[str, Any]]:
    """Per model and board mode: arms, completed and failed; mean turns and tokens per case; the App. E.2
    format checks over completed arms (exact: every check holds, as a count and share; dense: the mean
    share of checks passed); ROUGE-L F1 against the reference conclusion; the mean conclusion alignment
    (1–5, C.2) and the mean four-decision score (0–1, E.2), each with its count and not-evaluable count."""
    arms: dict[tuple[str, str], list[ArmRow]] = defaultdict(list)
    for arm in data.arms:
        if arm.protocol == BOARD.name:
            arms[(_model(arm), arm.format)].append(arm)
    alignment, decisions = group(responses, ALIGNMENT), group(responses, DECISIONS)
    rows = []
    for (model, variant), group_arms in sorted(arms.items()):
        done = [a for a in group_arms if a.completed]
        checked = [a for a in done if a.get("format_exact") is not None]
        exact = sum(a.get("format_exact") == 1 for a in checked)
        dense = [float(a.get("format_dense")) for a in done if a.get("format_dense") is not None]
        rouge = [r for r in (rouge_l(run_dir, a) for a in done if a.trace) if r is not None]
        aligned = [_alignment(r) for r in alignment.get((model, variant), [])]
        decided = [_decision_scores(r) for r in decisions.get((model, variant), [])]
        means = [weighted_decisions(s, weights()) for s in decided if s is not None]
        aligned_cases = _alignment_values(alignment.get((model, variant), []))
        decided_cases = _decision_values(decisions.get((model, variant), []))
        rows.append({
            "model": model, "mode": variant.removeprefix("board-"), "arms": len(group_arms), "completed": len(done),
            "failed": len(group_arms) - len(done),
            "turns_mean": mean([float(a.get("turns")) for a in done]),
            "tokens_per_case": mean([float((a.input_tokens or 0) + (a.output_tokens or 0)) for a in done]),
            "format_exact_n": exact, "format_checked": len(checked), "format_exact_rate": rate(exact, len(checked)),
            "format_dense_mean": mean(dense),
            "rouge_l_n": len(rouge), "rouge_l_mean": mean(rouge),
            "conclusion_alignment_n": sum(s is not None for s in aligned),
            "conclusion_alignment_not_evaluable": sum(s is None for s in aligned),
            "conclusion_alignment_mean": _case_mean(aligned_cases),
            "four_decision_n": sum(m is not None for m in means),
            "four_decision_not_evaluable": sum(s is None for s in decided),
            "four_decision_partly_judged": sum(_partly_judged(r) for r in decisions.get((model, variant), [])),
            "four_decision_mean": _case_mean(decided_cases),
        })
    return rows


def board_stops(data: CohortData) -> list[dict[str, Any]]:
    """Stop reasons of completed board arms per model and mode, as a count and % of completed arms."""
    done: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for arm in data.arms:
        if arm.protocol == BOARD.name and arm.completed:
            done[(_model(arm), arm.format)][arm.stop_reason or "-"] += 1
    return [{"model": model, "mode": variant.removeprefix("board-"), "stop_reason": stop, "arms": n,
             "pct": pct(n, sum(stops.values()))}
            for (model, variant), stops in sorted(done.items()) for stop, n in sorted(stops.items())]


def conclusion_alignment(responses: list[Response], failed: Failed | None = None) -> list[dict[str, Any]]:
    """Per model and variant, the mean conclusion-alignment score (1–5, App. C.2) over the ``cases`` the judge
    scored (a case's replicates averaged first), with its population SD over them; conclusions not evaluable
    and failed arms are counted apart."""
    rows = []
    for (model, variant), group_responses in rubric_groups(responses, ALIGNMENT, failed or {}).items():
        values = _alignment_values(group_responses)
        rows.append({"model": model, "variant": variant, "responses": len(group_responses), "scored": values.arms,
                     "not_evaluable": values.unknown, "failed": len((failed or {}).get((model, variant), [])),
                     "cases": values.cases, "mean": _case_mean(values), "sd": sd(list(values.means.values()))})
    return rows


def four_decision(responses: list[Response], failed: Failed | None = None) -> list[dict[str, Any]]:
    """Per model and variant, the four-decision score of App. E.2 averaged over conclusions:
    Σ w·(s/5) / Σ w over the judged dimensions in scope (s ≠ −1). A conclusion with no dimension judged
    is not evaluable; one with some dimensions not evaluable is scored on the others and counted in
    ``partly_judged``; one whose judged dimensions are all out of scope is counted apart; a failed arm
    (no conclusion) is not evaluable, counted in ``failed``. ``weighted_mean`` is over the ``cases`` scored,
    a case's replicates averaged first."""
    rows = []
    for (model, variant), group_responses in rubric_groups(responses, DECISIONS, failed or {}).items():
        decided = [_decision_scores(r) for r in group_responses]
        values = _decision_values(group_responses)
        rows.append({"model": model, "variant": variant, "responses": len(group_responses), "scored": values.arms,
                     "not_evaluable": sum(s is None for s in decided),
                     "failed": len((failed or {}).get((model, variant), [])),
                     "partly_judged": sum(_partly_judged(r) for r in group_responses),
                     "no_decision_in_scope": values.unknown - sum(s is None for s in decided),
                     "cases": values.cases, "weighted_mean": _case_mean(values)})
    return rows


def decision_dimensions(responses: list[Response], failed: Failed | None = None) -> list[dict[str, Any]]:
    """Per model, variant and dimension (App. C.3): the mean 1–5 score over the conclusions whose
    reference decides the dimension (score ≠ −1), with how many were in scope, out of scope (−1) and
    not evaluable, and the failed arms (no conclusion); the dimension's weight in the four-decision
    score (E.2). The mean is over the ``cases`` in scope, a case's replicates averaged first."""
    rows = []
    for (model, variant), group_responses in rubric_groups(responses, DECISIONS, failed or {}).items():
        for dimension in DIMENSIONS:
            items = [(r.case_id, i.score) for r in group_responses for i in r.items if i.criterion == dimension]
            judged = [s for _, s in items if s is not None]
            in_scope = case_values((case, s if s != -1 else None) for case, s in items if s is not None)
            rows.append({"model": model, "variant": variant, "dimension": dimension,
                         "weight": weights()[dimension], "in_scope": in_scope.arms,
                         "out_of_scope": len(judged) - in_scope.arms,
                         "not_evaluable": len(group_responses) - len(judged),
                         "failed": len((failed or {}).get((model, variant), [])), "cases": in_scope.cases,
                         "mean": _case_mean(in_scope)})
    return rows


def specialist_turn(responses: list[Response], failed: Failed | None = None) -> list[dict[str, Any]]:
    """Per model and variant (Table A2): the mean clinical-equivalence score (1–5, App. C.1) and the
    critical-error and unsupported-claim rates, the share of scored answers with that flag set (§2.4),
    over the answers the judge scored; answers not evaluable and failed arms are counted apart. Each is
    over the ``cases``, a case's replicates averaged first (``critical_error_n`` is then a sum of case
    shares)."""
    rows = []
    for (model, variant), group_responses in rubric_groups(responses, EQUIVALENCE, failed or {}).items():
        scored = []
        for response in group_responses:
            items = by_component(response).get("answer", [])
            scored += [(response.case_id, i) for i in items
                       if i.criterion == "clinical_equivalence" and i.score is not None]
        flagged = [(case, i) for case, i in scored if {"critical_error", "unsupported_claim"} <= set(i.flags)]
        equivalence = case_values((case, i.score) for case, i in scored)
        critical = case_values((case, float(i.flags["critical_error"])) for case, i in flagged)
        unsupported = case_values((case, float(i.flags["unsupported_claim"])) for case, i in flagged)
        rows.append({"model": model, "variant": variant, "responses": len(group_responses), "scored": len(scored),
                     "not_evaluable": len(group_responses) - len(scored),
                     "failed": len((failed or {}).get((model, variant), [])), "cases": equivalence.cases,
                     "clinical_equivalence_mean": _case_mean(equivalence),
                     "flagged": len(flagged), "critical_error_n": count(critical.total),
                     "critical_error_pct": pct(critical.total, critical.cases),
                     "unsupported_claim_n": count(unsupported.total),
                     "unsupported_claim_pct": pct(unsupported.total, unsupported.cases)})
    return rows
