"""Consilium − single-specialist baseline: the judge's scores of the two protocols' arms on the same
cases, paired within (model, format, case), with case-clustered bootstrap intervals (MedAgentBoard's
question: does deliberation help at all?).

The baseline's answer is judged as a conclusion, so its scores pair with the consilium's final report
criterion by criterion (and on the C1–C8 output mean, criterion ``mean``). A (model, case) of a format
pairs when both arms completed and both items have a numeric score; every other one is counted in the
``left_out_*`` column saying why. In a cohort run in replicates each protocol's replicates of a (model, format,
case) are averaged first (a score over the replicates that have one; the arm completed when any replicate did),
so a case pairs once however many replicates it has (docs/cohorts.md, "Replicates").
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from consilium.agents.records import FORMATS
from consilium.graphs.arms import arm_format
from consilium.reports.consilium.data import CONSILIUM_RUBRIC, CohortData
from consilium.reports.consilium.judged import consilium_items, per_output, score_of
from consilium.reports.consilium.paired import MEAN_CRITERION, rubric_key_order
from consilium.reports.consilium.scores import output_means
from consilium.reports.consilium.stats import POOLED, number
from consilium.stats import cluster_bootstrap

__all__ = ["protocol_differences"]

Key = tuple[str, str, str]  # rubric, component, criterion
Slot = tuple[str, str, str]  # model, variant (free-form / structured), case


def _variants(data: CohortData) -> dict[str, str]:
    """arms.csv format → the protocol's variant (``single-free-form`` → ``free-form``)."""
    return {f: v for v in FORMATS if (f := arm_format(data.protocol, v)) is not None}


def _arms(data: CohortData) -> dict[Slot, str]:
    """(model, variant, case) → the arm's status (of its replicates: ``completed`` when any completed)."""
    variants = _variants(data)
    status: dict[Slot, str] = {}
    for a in data.arms:
        if a.format in variants:
            slot = (a.model, variants[a.format], a.case_id)
            if status.get(slot) != "completed":
                status[slot] = a.status
    return status


def _scores(data: CohortData) -> dict[Key, dict[Slot, float | None]]:
    """(rubric, component, criterion) → (model, variant, case) → the score, None when not evaluable; for
    the AI Consilium judge also the C1–C8 output mean (None when no C1–C8 item had a score); a slot's
    replicates are averaged (None when none of them had a score)."""
    variants = _variants(data)
    scores: dict[Key, dict[Slot, float | None]] = defaultdict(dict)
    replicates: dict[Key, dict[Slot, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    for row in data.judgements:
        if row.format in variants:
            slot = (row.model, variants[row.format], row.case_id)
            replicates[(row.rubric, row.component, row.criterion)][slot].append(score_of(row))
    for key, slots in replicates.items():
        for slot, values in slots.items():
            known = [v for v in values if v is not None]
            scores[key][slot] = statistics.fmean(known) if known else None
    for row in per_output(consilium_items(data)):
        if row.format in variants:
            slot = (row.model, variants[row.format], row.case_id)
            scores[(CONSILIUM_RUBRIC, row.component, MEAN_CRITERION)].setdefault(slot, None)
    for component in {r.component for r in consilium_items(data)}:
        for (model, fmt, case), mean in output_means(data, component).items():
            if fmt in variants:
                scores[(CONSILIUM_RUBRIC, component, MEAN_CRITERION)][(model, variants[fmt], case)] = mean
    return scores


def protocol_differences(protocol: CohortData, baseline: CohortData, *, bootstrap: int = 10_000,
                         seed: int = 0) -> list[dict[str, Any]]:
    """``protocol`` − ``baseline`` (the consilium's arms and the single baseline's), per model and pooled,
    format, and each rubric, component and criterion both were scored on: ``cases`` the (model, case)s
    with an arm of either protocol in that format, ``pairs`` those where both arms have a score, their mean
    difference with its 95 % interval from a bootstrap resampling cases (all of a case's models together;
    ``bootstrap`` draws seeded by ``seed``), and the cases left out: ``left_out_failed`` (an arm failed),
    ``left_out_no_arm`` (one protocol has no arm of the case), ``left_out_not_evaluable`` (an item not
    evaluable) and ``left_out_not_judged`` (both arms completed, an item missing)."""
    arms, base_arms = _arms(protocol), _arms(baseline)
    scores, base_scores = _scores(protocol), _scores(baseline)
    models = sorted({s[0] for s in (*arms, *base_arms)})
    table = []
    for model in [*models, POOLED]:
        for variant in FORMATS:
            slots = sorted({s for s in (*arms, *base_arms) if s[1] == variant and model in (POOLED, s[0])})
            for key in rubric_key_order(set(scores) & set(base_scores)):
                mine, theirs = scores[key], base_scores[key]
                if not any(s in mine or s in theirs for s in slots):
                    continue  # neither protocol was scored on it in this format
                clusters: dict[str, list[float]] = defaultdict(list)
                left = {"failed": 0, "no_arm": 0, "not_evaluable": 0, "not_judged": 0}
                for slot in slots:
                    status = (arms.get(slot), base_arms.get(slot))
                    a, b = mine.get(slot), theirs.get(slot)
                    if None in status:
                        left["no_arm"] += 1
                    elif status != ("completed", "completed"):
                        left["failed"] += 1
                    elif slot not in mine or slot not in theirs:
                        left["not_judged"] += 1
                    elif a is None or b is None:
                        left["not_evaluable"] += 1
                    else:
                        clusters[slot[2]].append(a - b)
                diffs = [d for values in clusters.values() for d in values]
                low = high = None
                if diffs:
                    low, high = cluster_bootstrap(clusters, draws=bootstrap, seed=seed,
                                                  key=f"{protocol.protocol}-{baseline.protocol}|{model}|{variant}|"
                                                      f"{'|'.join(key)}")
                table.append({"protocol": protocol.protocol, "baseline": baseline.protocol, "model": model,
                              "format": variant, "rubric": key[0], "component": key[1], "criterion": key[2],
                              "cases": len(slots), "pairs": len(diffs),
                              "mean_difference": number(statistics.fmean(diffs)) if diffs else None,
                              "ci_low": number(low), "ci_high": number(high),
                              **{f"left_out_{why}": n for why, n in left.items()}})
    return table
