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
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from scipy.stats import beta

from consilium.judges.record import JudgementItem
from consilium.judges.scoring import signed_score
from consilium.reports.papers.responses import Response, by_component, group
from consilium.reports.papers.stats import DIGITS, cluster_bootstrap, mean, pct, wilson

__all__ = ["RUBRIC", "clopper_pearson", "element_correct", "failed_cases", "npc_scores", "response_score",
           "strict_success"]

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


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """The exact binomial interval of a proportion, as npcbench.txt App. C.2.3 gives for Strict."""
    if n == 0:
        return None, None
    alpha = 1 - level
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1 - alpha / 2, successes + 1, n - successes))
    return round(low, DIGITS), round(high, DIGITS)


def _percent(bounds: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    low, high = bounds
    return None if low is None else round(100 * low, 2), None if high is None else round(100 * high, 2)


def _strict_columns(answers: list[tuple[str, list[JudgementItem]]], missing: set[str]) -> dict[str, object]:
    """Strict over the patients (cases) of one model, variant and component: a patient's elements are
    every signed criterion of its responses there (one per case in a cohort). A patient whose arm
    failed has no answer, which Eq. 1 scores as incorrect (§4.1: P counts every patient): it is a
    failure in P, counted in ``strict_missing`` so that it is seen."""
    patients: dict[str, list[JudgementItem]] = defaultdict(list)
    for case, items in answers:
        patients[case] += items
    missing = missing - set(patients)
    outcomes = [strict_success(items) for items in patients.values()] + [False] * len(missing)
    known = [o for o in outcomes if o is not None]
    successes = sum(known)
    low, high = _percent(wilson(successes, len(known)))
    exact_low, exact_high = _percent(clopper_pearson(successes, len(known)))
    return {"strict_n": successes, "strict_patients": len(known), "strict_missing": len(missing),
            "strict_not_evaluable": len(outcomes) - len(known),
            "strict_pct": pct(successes, len(known)), "strict_ci_low": low, "strict_ci_high": high,
            "strict_exact_low": exact_low, "strict_exact_high": exact_high}


def failed_cases(arms: list[dict[str, str]]) -> dict[tuple[str, str], set[str]]:
    """(model, variant) → the cases whose arm did not complete (arms.csv rows), for Eq. 1's P."""
    failed: dict[tuple[str, str], set[str]] = defaultdict(set)
    for arm in arms:
        if arm.get("status") != "completed":
            failed[(arm.get("model") or arm.get("model_spec", ""), arm.get("format", ""))].add(arm.get("case_id", ""))
    return dict(failed)


def npc_scores(responses: list[Response], *, bootstrap: int, seed: int,
               failed: dict[tuple[str, str], set[str]] | None = None) -> list[dict[str, Any]]:
    """Per model, variant and component: O1 = the mean of R_i over V (items weighted equally, Eq. A7),
    its percentile 95 % interval from ``bootstrap`` case-clustered resamples (seeded), and
    ErrorRate_s = 100/|V| · Σ 1{H_i^s > 0} (Eq. A8) for s = major, minor, as a count and a percentage;
    and Strict (Eq. 1) over the evaluable patients: its count ``strict_n``, the patients ``strict_patients``
    (P, failed arms included as failures and counted in ``strict_missing``: ``failed`` from
    :func:`failed_cases`), those not evaluable, the percentage and its 95 % Wilson and Clopper–Pearson
    intervals, in percent."""
    rows = []
    for (model, variant), group_responses in group(responses, RUBRIC).items():
        components: dict[str, list[tuple[str, list[JudgementItem]]]] = defaultdict(list)
        for response in group_responses:
            for component, items in by_component(response).items():
                components[component].append((response.case_id, items))
        for component, answers in sorted(components.items()):
            scored = [(case, s) for case, items in answers if (s := response_score(items)) is not None]
            clusters: dict[str, list[float]] = defaultdict(list)
            for case, (value, _, _) in scored:
                clusters[case].append(value)
            low, high = cluster_bootstrap(clusters, bootstrap, seed)
            majors = sum(major for _, (_, major, _) in scored)
            minors = sum(minor for _, (_, _, minor) in scored)
            rows.append({"model": model, "variant": variant, "component": component, "responses": len(answers),
                         "evaluable": len(scored), "not_evaluable": len(answers) - len(scored),
                         "score_mean": mean([value for _, (value, _, _) in scored]), "ci_low": low, "ci_high": high,
                         "major_error_n": majors, "major_error_pct": pct(majors, len(scored)),
                         "minor_error_n": minors, "minor_error_pct": pct(minors, len(scored)),
                         **_strict_columns(answers, (failed or {}).get((model, variant), set()))})
    return rows
