"""NPCBench's O1 consultation summary (npcbench.txt, App. C.5.1, Eqs. A7–A8; Table A29), per model
and variant: the mean normalised signed score with a case-clustered bootstrap 95 % interval, and the
major- and minor-error rates, over the evaluable responses only (the set V of Eq. A7); and strict
patient-level success (npcbench.txt §4.1 "Patient-level Metrics", Eq. 1; App. C.2.1 Eqs. A2–A3).

Strict (Eq. 1) is 100/P · Σ_p d_p t_p Π_{j∈S_p} c_pj: a patient counts only when every scored element
is correct. Here a patient is a case and its elements are the signed criteria of its
``reference.rubric``: a requirement is correct when met, an error criterion when it is not
triggered (App. D.3: a positive label on an error criterion means the error is present). The
paper's intervals for Strict are exact binomial (Clopper–Pearson, App. C.2.3 "Confidence
intervals"); both that interval and the 95 % Wilson interval of the other rates are given.

Every statistic is over cases, a case's replicates averaged first, and a failed arm is counted: a
failure in Strict, outside V (counted in ``failed``) for O1 (:mod:`consilium.reports.papers.per_case`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from consilium.judges.record import JudgementItem
from consilium.judges.scoring import signed_score
from consilium.reports.papers.per_case import FailedArm, HasReference, case_values, rubric_groups, shared_rows
from consilium.reports.papers.responses import Response, by_component
from consilium.reports.papers.stats import count, mean, pct, rounded
from consilium.stats import clopper_pearson, cluster_bootstrap, wilson

__all__ = ["RUBRIC", "element_correct", "npc_scores", "response_score", "strict_success"]

RUBRIC = "npc-signed-criteria"


def response_score(items: list[JudgementItem]) -> tuple[float, bool, bool] | None:
    """One response's R_i (Eq. A7: 100·max(0, Σ w·z over requirements − 2·Σ z over major errors − Σ z
    over minor errors) / 10) and whether it has at least one major and one minor error (1{H_i > 0},
    Eq. A8); None unless every criterion has a valid judgement and its kind is known (the response is
    not in V)."""
    if not items or any(i.score is None or "kind" not in i.detail for i in items):
        return None
    met = [i for i in items if i.score == 1.0]
    majors = sum(i.detail["kind"] == "major_error" for i in met)
    minors = sum(i.detail["kind"] == "minor_error" for i in met)
    requirements = [float(i.detail["weight"]) for i in met if i.detail["kind"] == "requirement"]
    return signed_score(requirements, majors, minors), majors > 0, minors > 0


def element_correct(item: JudgementItem) -> bool | None:
    """c_pj of Eq. 1 for one signed criterion: a requirement is correct when met, a major or minor
    error criterion when the error is absent; None when not evaluable (no valid judgement, or the
    criterion's kind is unknown, as in rows rebuilt from judgements.csv)."""
    kind = item.detail.get("kind")
    if item.score is None or kind not in ("requirement", "major_error", "minor_error"):
        return None
    return item.score == 1.0 if kind == "requirement" else item.score == 0.0


def strict_success(items: list[JudgementItem]) -> bool | None:
    """Eq. 1's product over one patient's elements, with a not-evaluable element left undecided rather
    than counted as wrong: False when any element is incorrect (whatever the undecided ones would be),
    True when every element is correct, None (not evaluable) otherwise or when there is no element."""
    correct = [element_correct(i) for i in items]
    if False in correct:
        return False
    return True if correct and None not in correct else None


def _percent(bounds: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """An interval as percentages of two decimals, from its bounds at the tables' precision."""
    low, high = rounded(bounds)
    return None if low is None else round(100 * low, 2), None if high is None else round(100 * high, 2)


def _strict_columns(answers: list[tuple[str, list[JudgementItem]]], missing: list[FailedArm],
                    reference: HasReference) -> dict[str, object]:
    """Strict over the patients (cases) of one model, variant and component: each case's success is the
    mean of its replicates' Eq. 1 outcomes (one arm: 0 or 1), Strict the mean over the cases decided,
    its intervals over those cases (n = patients). A failed arm has no answer, which Eq. 1 scores as
    incorrect (§4.1: P counts every patient; App. C: a missing answer has correctness zero): a failure,
    counted in ``strict_missing``, unless its case has no signed criteria (not evaluable for every
    model). ``strict_not_evaluable`` counts the arms whose outcome is undecided, as pass@k's
    ``not_evaluable`` does: a case none of whose arms is decided is not among the patients, and an
    undecided replicate of a decided case is counted too, never dropped unseen."""
    outcomes: list[tuple[str, float | None]] = [
        (case, None if (o := strict_success(items)) is None else float(o)) for case, items in answers]
    counted = [arm for arm in missing if reference(arm.case_id) is not False]
    outcomes += [(arm.case_id, 0.0 if arm in counted else None) for arm in missing]
    values = case_values(outcomes)
    successes, n = values.total, values.cases
    low, high = _percent(wilson(successes, n))
    exact_low, exact_high = _percent(clopper_pearson(successes, n))
    return {"strict_n": count(successes), "strict_patients": n, "strict_missing": len(counted),
            "strict_not_evaluable": values.unknown,
            "strict_pct": pct(successes, n), "strict_ci_low": low, "strict_ci_high": high,
            "strict_exact_low": exact_low, "strict_exact_high": exact_high}


def npc_scores(responses: list[Response], *, bootstrap: int, seed: int,
               failed: Mapping[tuple[str, str], list[FailedArm]] | None = None,
               reference: HasReference | None = None) -> list[dict[str, Any]]:
    """Per model, variant and component, over the cases (a case's replicates averaged first,
    :mod:`~consilium.reports.papers.per_case`): O1 = the mean over the ``cases`` in V of each case's mean
    R_i (Eq. A7; with one response per case, the mean of R_i over V), its percentile 95 % interval from
    ``bootstrap`` case resamples (seeded), and ErrorRate_s = 100/|V| · Σ 1{H_i^s > 0} (Eq. A8) for s =
    major, minor, as a count (a sum of case shares with replicates) and a percentage; ``responses``
    judged, ``evaluable`` and ``not_evaluable`` of them, and ``failed`` arms (no answer: not in V). And
    Strict (Eq. 1, :func:`_strict_columns`) over the patients. ``failed`` comes from
    :func:`~consilium.reports.papers.per_case.failed_arms`; ``reference`` says whether a case has signed
    criteria."""
    failed, known = failed or {}, reference or (lambda case: None)
    groups = rubric_groups(responses, RUBRIC, failed)
    components_of: dict[tuple[str, str], dict[str, list[tuple[str, list[JudgementItem]]]]] = {}
    for (model, variant), group_responses in groups.items():
        components: dict[str, list[tuple[str, list[JudgementItem]]]] = defaultdict(list)
        for response in group_responses:
            for component, items in by_component(response).items():
                components[component].append((response.case_id, items))
        components_of[(model, variant)] = components
    shapes = shared_rows(components_of)  # (model, variant) → its components
    rows = []
    for (model, variant), components in components_of.items():
        missing = failed.get((model, variant), [])
        for component in sorted(shapes[(model, variant)]):
            answers = components.get(component, [])
            scored = [(case, response_score(items)) for case, items in answers]
            value = case_values((case, None if s is None else s[0]) for case, s in scored)
            major = case_values((case, None if s is None else float(s[1])) for case, s in scored)
            minor = case_values((case, None if s is None else float(s[2])) for case, s in scored)
            low, high = rounded(cluster_bootstrap({case: [m] for case, m in value.means.items()}, draws=bootstrap,
                                                  seed=seed, key=f"npcbench|{model}|{variant}|{component}"))
            evaluable = sum(s is not None for _, s in scored)
            rows.append({"model": model, "variant": variant, "component": component, "responses": len(answers),
                         "evaluable": evaluable, "not_evaluable": len(answers) - evaluable, "failed": len(missing),
                         "cases": value.cases, "score_mean": mean(list(value.means.values())),
                         "ci_low": low, "ci_high": high,
                         "major_error_n": count(major.total), "major_error_pct": pct(major.total, major.cases),
                         "minor_error_n": count(minor.total), "minor_error_pct": pct(minor.total, minor.cases),
                         **_strict_columns(answers, missing, known)})
    return rows
