"""Synthetic physician ratings and judgements with known answers, for checking the statistics.

    consilium calibrate synthetic OUT_DIR [--cases 110] [--judge perfect|off-by-one|biased|noisy] [--seed 0]

Writes ``OUT_DIR/ratings.csv`` (two physicians) and ``OUT_DIR/judgements/*.judge.ai-consilium.json``
for the AI Consilium criteria 1–8 of the ``conclusion`` component. The true score of each item is
drawn uniformly from 0–3 with a fixed seed; physician A rates it exactly, physician B is off by one
on a fifth of the items; the judge follows the chosen behaviour.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from consilium.fileio import write_text_atomic
from consilium.judges.record import Judgement, JudgementItem
from consilium.models import GenerationSettings, UsageLedger
from consilium.runfolder.layout import judgement_path, trace_name
from consilium.traces.schema import UsageSummary

__all__ = ["JUDGES", "make_synthetic"]

CRITERIA = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8")
JUDGES = ("perfect", "off-by-one", "biased", "noisy")


def _judge(truth: int, behaviour: str, rng: np.random.Generator) -> int:
    if behaviour == "perfect":
        return truth
    if behaviour == "off-by-one":
        return truth - 1 if truth == 3 else truth + 1
    if behaviour == "biased":
        return min(3, truth + 1)
    return int(np.clip(truth + rng.choice([-1, 0, 0, 1]), 0, 3))


def make_synthetic(out: Path, *, cases: int = 110, judge: str = "perfect", seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    folder = out / "judgements"
    rows = []
    for n in range(cases):
        case_id = f"synthetic-{n:03d}"
        items = []
        for criterion in CRITERIA:
            truth = int(rng.integers(0, 4))
            noisy = int(np.clip(truth + rng.choice([-1, 1]), 0, 3)) if rng.random() < 0.2 else truth
            rows += [(case_id, "conclusion", criterion, "physician-a", truth),
                     (case_id, "conclusion", criterion, "physician-b", noisy)]
            items.append(JudgementItem(component="conclusion", criterion=criterion,
                                       score=float(_judge(truth, judge, rng)), rationale="synthetic"))
        trace = folder / trace_name(case_id, "structured")  # never written: the records name it, as a cohort's do
        record = Judgement(trace=trace.name, trace_kind="consilium", trace_run_id="synthetic",
                           case_id=case_id, variant="structured", rubric="ai-consilium", rubric_version=2,
                           rubric_source="synthetic", judge_model=f"synthetic-{judge}", settings=GenerationSettings(),
                           prompt_hash="synthetic", items=items, aggregates={}, usage=UsageSummary.from_ledger(
                               UsageLedger()), calls=[], started_at=datetime.now(UTC).isoformat(), wall_s=0.0)
        write_text_atomic(judgement_path(trace, record.rubric), record.model_dump_json())
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["case_id", "component", "criterion", "rater", "score"])
    writer.writerows(rows)
    ratings = write_text_atomic(out / "ratings.csv", buffer.getvalue())
    return ratings, folder
