"""Judge-score tables of a consilium cohort, per model and pooled (ai-consilium.txt, Tables 6–20, and
the paired free-form vs structured differences).

A *per-output* criterion is one of criteria 1–8; the whole-case criteria (panel adequacy, complexity,
overall quality: ``whole_case`` in consilium/judges/rubrics/ai-consilium.yaml) are reported in their
own rows and never enter a C1–C8 mean. Not-evaluable items are left out of every mean and counted
in the coverage tables (10–12).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from consilium.judges.rubric import COMPONENTS
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData, rubric_criteria
from consilium.reports.consilium.outcomes import models_of
from consilium.reports.consilium.stats import POOLED, cluster_bootstrap, mean_sd, number, percent

__all__ = [
    "COMPONENT_FORMATS",
    "MEAN_CRITERION",
    "output_means",
    "paired_differences",
    "scores_table",
    "table6",
    "table7",
    "table8",
    "table9",
    "table10",
    "table11",
    "table12",
]

#: The columns of Tables 6, 8, 10–20: the role components exist in the structured format only.
COMPONENT_FORMATS = (("role_reasoning", "structured"), ("role_opinion", "structured"),
                     ("conclusion", "free-form"), ("conclusion", "structured"))
#: The ``criterion`` of a paired difference of C1–C8 output means.
MEAN_CRITERION = "mean"

Row = dict[str, str]


def _score(row: Row) -> float | None:
    return float(row["score"]) if row["score"] else None


def _whole_case(row: Row) -> bool:
    return row.get("whole_case", "").strip().lower() == "true"


def _consilium(data: CohortData) -> list[Row]:
    """The items of the AI Consilium judge on its own criteria."""
    criteria = rubric_criteria(CONSILIUM_RUBRIC)
    return [r for r in data.judgements if r["rubric"] == CONSILIUM_RUBRIC and r["criterion"] in criteria]


def _per_output(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if not _whole_case(r)]


def _mine(model: str, rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if model in (POOLED, r["model"])]


def _numbers(rows: Iterable[Row]) -> list[float]:
    return [s for s in (_score(r) for r in rows) if s is not None]


def _criterion_order(rubric: str, criteria: Iterable[str]) -> list[str]:
    known = list(rubric_criteria(rubric))
    return sorted(set(criteria), key=lambda c: (known.index(c) if c in known else len(known), c))


def _models(data: CohortData) -> list[str]:
    return [*models_of(data), POOLED]


def table6(data: CohortData) -> list[dict[str, Any]]:
    """Table 6: per model and pooled, for each component and format, the mean ± population SD of all
    numeric C1–C8 scores (``n`` of them)."""
    rows = _per_output(_consilium(data))
    if not rows:
        return []
    table = []
    for model in _models(data):
        for component, fmt in COMPONENT_FORMATS:
            group = [r for r in _mine(model, rows) if r["component"] == component and r["format"] == fmt]
            if group:
                values = _numbers(group)
                mean, sd = mean_sd(values)
                table.append({"model": model, "component": component, "format": fmt, "n": len(values),
                              "mean": mean, "sd": sd})
    return table


def table7(data: CohortData) -> list[dict[str, Any]]:
    """Table 7: per model and format (then pooled per format), completed ``cases``, the mean judge
    score (the mean of every numeric C1–C8 score of the conclusions; None when none was judged), and
    input, output and total tokens per case (each format's path includes the shared role assignment)."""
    scores = [r for r in _per_output(_consilium(data)) if r["component"] == "conclusion"]
    formats = sorted({f for _, f in data.tokens})
    groups = [((m, f), data.tokens[(m, f)]) for m, f in sorted(data.tokens)]
    for fmt in formats:
        pooled: Counter[str] = Counter()
        for (_, f), counter in data.tokens.items():
            if f == fmt:
                pooled.update(counter)
        groups.append(((POOLED, fmt), pooled))
    table = []
    for (model, fmt), counter in groups:
        cases = counter["cases"]
        inp = sum(v for k, v in counter.items() if k.endswith(":input")) / cases if cases else 0.0
        out = sum(v for k, v in counter.items() if k.endswith(":output")) / cases if cases else 0.0
        judged = _numbers(r for r in _mine(model, scores) if r["format"] == fmt)
        table.append({"model": model, "format": fmt, "cases": cases, "mean_judge_score": mean_sd(judged)[0],
                      "input_tokens_per_case": number(inp), "output_tokens_per_case": number(out),
                      "total_tokens_per_case": number(inp + out)})
    return table


def scores_table(data: CohortData) -> list[dict[str, Any]]:
    """Per model and pooled, every rubric's criteria by component and format: ``n`` numeric scores,
    their mean and population SD, and whether the criterion is whole-case (its own row, never in a
    C1–C8 mean). The AI Consilium rows are Table 8 (pooled) and Tables 13–20 (per model)."""
    keys = {(r["rubric"], r["component"], r["format"], r["criterion"]) for r in data.judgements}
    rubrics = sorted({k[0] for k in keys})
    table = []
    for model in _models(data):
        mine = _mine(model, data.judgements)
        for rubric in rubrics:
            criteria = rubric_criteria(rubric)
            for criterion in _criterion_order(rubric, (k[3] for k in keys if k[0] == rubric)):
                for component in COMPONENTS:
                    for fmt in sorted({k[2] for k in keys if k[:2] == (rubric, component) and k[3] == criterion}):
                        group = [r for r in mine if (r["rubric"], r["component"], r["format"], r["criterion"])
                                 == (rubric, component, fmt, criterion)]
                        if not group:
                            continue
                        values = _numbers(group)
                        mean, sd = mean_sd(values)
                        known = criteria.get(criterion)
                        table.append({"model": model, "rubric": rubric, "criterion": criterion,
                                      "criterion_name": known.name if known else criterion,
                                      "whole_case": any(_whole_case(r) for r in group), "component": component,
                                      "format": fmt, "n": len(values), "mean": mean, "sd": sd})
    return table


def table8(data: CohortData) -> list[dict[str, Any]]:
    """Table 8 (``model`` pooled) and Tables 13–20 (one model each): the AI Consilium rows of
    :func:`scores_table`."""
    return [r for r in scores_table(data) if r["rubric"] == CONSILIUM_RUBRIC]


def output_means(data: CohortData, component: str = "conclusion") -> dict[tuple[str, str, str], float]:
    """Per (model, format, case): the mean of the numeric C1–C8 scores of one component's output."""
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for row in _per_output(_consilium(data)):
        score = _score(row)
        if row["component"] == component and score is not None:
            scores[(row["model"], row["format"], row["case_id"])].append(score)
    return {k: statistics.fmean(v) for k, v in scores.items()}


def _rounds_group(rounds: int) -> str:
    return "1" if rounds == 1 else "2" if rounds == 2 else ">=3"


def table9(data: CohortData) -> list[dict[str, Any]]:
    """Table 9: per model and pooled, by completed review rounds (1, 2, >=3): the ``outputs`` (final
    reports with a numeric C1–C8 score), the mean of their C1–C8 output means with population SD,
    the outputs whose mean is below 2 and their %, and the mean ± population SD of their numeric case
    complexity (criterion 10, ``case_complexity``)."""
    means = output_means(data)
    complexity = {(r["model"], r["format"], r["case_id"]): float(r["score"]) for r in _consilium(data)
                  if r["component"] == "conclusion" and r["criterion"] == "case_complexity" and r["score"]}
    table = []
    for model in _models(data):
        groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for arm in data.arms:
            key = (arm["model"], arm["format"], arm["case_id"])
            if arm.get("status") == "completed" and key in means and model in (POOLED, arm["model"]):
                groups[_rounds_group(int(arm["rounds"]))].append(key)
        for name in ("1", "2", ">=3"):
            if name not in groups:
                continue
            values = [means[k] for k in groups[name]]
            below = sum(v < 2 for v in values)
            mean, sd = mean_sd(values)
            c_mean, c_sd = mean_sd([complexity[k] for k in groups[name] if k in complexity])
            table.append({"model": model, "rounds": name, "outputs": len(values), "mean_score": mean, "sd": sd,
                          "below_2": below, "below_2_pct": percent(below, len(values)),
                          "complexity_mean": c_mean, "complexity_sd": c_sd})
    return table


def _applicable(component: str, *, whole_case: bool) -> list[str]:
    return [c.id for c in rubric_criteria(CONSILIUM_RUBRIC).values()
            if component in c.components and c.whole_case == whole_case]


def _arm_counts(data: CohortData, model: str, fmt: str) -> int:
    return sum(1 for a in data.arms if a["format"] == fmt and model in (POOLED, a["model"]))


def table10(data: CohortData) -> list[dict[str, Any]]:
    """Table 10: per model and pooled, the C1–C8 criteria applicable to each component and format, and
    the opportunities: every arm of that model and format in arms.csv (failed ones included) times
    the applicable criteria."""
    if not _consilium(data):
        return []
    table = []
    for model in _models(data):
        for component, fmt in COMPONENT_FORMATS:
            criteria, arms = _applicable(component, whole_case=False), _arm_counts(data, model, fmt)
            if arms:
                table.append({"model": model, "component": component, "format": fmt,
                              "applicable_criteria": " ".join(criteria), "criteria": len(criteria), "arms": arms,
                              "opportunities": arms * len(criteria)})
    return table


def _coverage(rows: list[Row], opportunities: int) -> dict[str, Any]:
    judged = sum(1 for r in rows if r["score"])
    not_evaluable = sum(1 for r in rows if not r["score"])
    return {"judged": judged, "opportunities": opportunities, "judged_pct": percent(judged, opportunities),
            "not_evaluable": not_evaluable, "missing": opportunities - judged - not_evaluable}


def table11(data: CohortData) -> list[dict[str, Any]]:
    """Table 11: per model and pooled, each component's numeric C1–C8 scores out of its opportunities
    (Table 10); the rest is ``not_evaluable`` or ``missing`` (a failed arm, an arm not judged)."""
    rows = _per_output(_consilium(data))
    table = []
    for opp in table10(data):
        group = [r for r in _mine(opp["model"], rows) if (r["component"], r["format"]) == (opp["component"],
                                                                                           opp["format"])]
        table.append({"model": opp["model"], "component": opp["component"], "format": opp["format"],
                      **_coverage(group, opp["opportunities"])})
    return table


def table12(data: CohortData) -> list[dict[str, Any]]:
    """Table 12 (``model`` pooled) and its per-model rows: each criterion's numeric scores out of its
    opportunities (the arms of that model and format), per component and format; the whole-case
    criteria in their own rows."""
    rows = _consilium(data)
    if not rows:
        return []
    criteria = rubric_criteria(CONSILIUM_RUBRIC)
    table = []
    for model in _models(data):
        mine = _mine(model, rows)
        for criterion in criteria.values():
            for component, fmt in COMPONENT_FORMATS:
                arms = _arm_counts(data, model, fmt)
                if component not in criterion.components or not arms:
                    continue
                group = [r for r in mine if (r["criterion"], r["component"], r["format"]) ==
                         (criterion.id, component, fmt)]
                table.append({"model": model, "criterion": criterion.id, "criterion_name": criterion.name,
                              "whole_case": criterion.whole_case, "component": component, "format": fmt,
                              **_coverage(group, arms)})
    return table


def _pairs(data: CohortData) -> dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]]:
    """(rubric, component, criterion) → (model, case) → format → score; for the AI Consilium judge
    also the C1–C8 output mean as criterion ``mean``."""
    pairs: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, float]]] = defaultdict(
        lambda: defaultdict(dict))
    for row in data.judgements:
        score = _score(row)
        if score is not None:
            pairs[(row["rubric"], row["component"], row["criterion"])][(row["model"], row["case_id"])][
                row["format"]] = score
    for component in {r["component"] for r in _consilium(data)}:
        for (model, fmt, case), mean in output_means(data, component).items():
            pairs[(CONSILIUM_RUBRIC, component, MEAN_CRITERION)][(model, case)][fmt] = mean
    return pairs


def paired_differences(data: CohortData, *, bootstrap: int = 10_000, seed: int = 0) -> list[dict[str, Any]]:
    """Structured − free-form, paired within (model, case), per model and pooled, for each rubric,
    component and criterion scored in both formats (and the C1–C8 output mean, criterion ``mean``):
    ``cases`` paired (model, case) outputs, the mean difference and its 95 % interval from a bootstrap
    that resamples cases (all of a case's models together), ``bootstrap`` draws seeded by ``seed``."""
    pairs = _pairs(data)
    table = []
    for model in _models(data):
        for rubric, component, criterion in sorted(pairs, key=lambda k: (
                k[0], COMPONENTS.index(k[1]) if k[1] in COMPONENTS else len(COMPONENTS), k[2] != MEAN_CRITERION,
                _criterion_order(k[0], [c for r, _, c in pairs if r == k[0]]).index(k[2]))):
            clusters: dict[str, list[float]] = defaultdict(list)
            for (m, case), by_format in pairs[(rubric, component, criterion)].items():
                if model in (POOLED, m) and "free-form" in by_format and "structured" in by_format:
                    clusters[case].append(by_format["structured"] - by_format["free-form"])
            if not clusters:
                continue
            diffs = [d for values in clusters.values() for d in values]
            low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed,
                                          key=f"{model}|{rubric}|{component}|{criterion}")
            table.append({"model": model, "rubric": rubric, "component": component, "criterion": criterion,
                          "cases": len(diffs), "mean_difference": number(statistics.fmean(diffs)),
                          "ci_low": number(low), "ci_high": number(high)})
    return table
