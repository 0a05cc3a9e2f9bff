"""NPCBench's O1 consultation summary (npcbench.txt, App. C.5.1, Eqs. A7–A8; Table A29), per model
and variant: the mean normalised signed score with a case-clustered bootstrap 95 % interval, and the
major- and minor-error rates, over the evaluable responses only (the set V of Eq. A7)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from consilium.judges.record import JudgementItem
from consilium.judges.scoring import signed_score
from consilium.reports.papers.responses import Response, by_component, group
from consilium.reports.papers.stats import cluster_bootstrap, mean, pct

__all__ = ["RUBRIC", "npc_scores", "response_score"]

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


def npc_scores(responses: list[Response], *, bootstrap: int, seed: int) -> list[dict[str, Any]]:
    """Per model, variant and component: O1 = the mean of R_i over V (items weighted equally, Eq. A7),
    its percentile 95 % interval from ``bootstrap`` case-clustered resamples (seeded), and
    ErrorRate_s = 100/|V| · Σ 1{H_i^s > 0} (Eq. A8) for s = major, minor, as a count and a percentage."""
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
                         "minor_error_n": minors, "minor_error_pct": pct(minors, len(scored))})
    return rows
