"""What the cohort view shows of each arm: its arms.csv row, where its page goes, its cost, its judge scores
per rubric and what it concluded; read one case at a time, so memory holds one case's traces."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from consilium.cases.model import CASE_ID_PATTERN
from consilium.judges.cost import JudgeCost
from consilium.judges.record import Judgement, read_judgement
from consilium.judges.rubric import Criterion
from consilium.judges.scoring import weighted_decisions
from consilium.models.pricing import trace_cost
from consilium.natural import natural_key
from consilium.reports.consilium.files import rubric_criteria
from consilium.reports.view_reference import concluded
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import judgements_of, trace_stem
from consilium.runfolder.records import out_of_scope
from consilium.runfolder.rows import ArmRow, text_of
from consilium.traces.schema import TraceBase

__all__ = ["ArmView", "RubricScore", "arm_cost", "arm_judgements", "arm_page", "case_page", "case_rows",
           "conclusion_of", "rubric_score"]


#: A folder or file name a page path may keep (no ``..``, no separator, nothing a URL must quote but these).
_SAFE_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class RubricScore:
    """One rubric's judgement of one arm: the mean of its per-output items' scores (whole-case criteria,
    such as case complexity, are not in the mean; nor is a decision out of scope, −1), or the rubric's
    own aggregate where it has one (``measure``: the four-decision rubric's weighted mean, 0–1), how many
    items were scored, how many were out of scope, and how many items of the judgement (whole-case ones
    included) were not evaluable."""

    mean: float | None
    scored: int
    not_evaluable: int
    items: int
    out_of_scope: int = 0
    measure: str = "mean"


@dataclass
class ArmView:
    """One arm as the index and its case page show it."""

    row: ArmRow  # its arms.csv row (its model filled in from its trace, for a folder written without it)
    page: str | None  # its page, relative to the view folder; None when the arm left no trace
    trace: Path | None = None
    conclusion: str = ""
    cost: float | None = None
    scores: dict[str, RubricScore] = field(default_factory=dict)
    judges: list[JudgeCost] = field(default_factory=list)  # each judge's calls of its judgements (judges/cost.py)

    @property
    def model(self) -> str:
        return self.row.model or self.row.model_spec

    @property
    def replicate(self) -> str:
        """Its replicate as arms.csv writes it ("" for a cohort not run in replicates)."""
        return text_of(self.row.replicate)


def arm_cost(trace: TraceBase) -> float | None:
    """The arm's cost in dollars, as generated, at the prices its calls recorded; None (shown "—") when a
    call has none (:func:`consilium.models.pricing.trace_cost`)."""
    return trace_cost(trace)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def case_page(case_id: str) -> str:
    """``cases/<case>.html``; an id that is no valid case id (an edited arms.csv) is named by its hash, so
    no page lands outside the view folder."""
    return f"cases/{case_id}.html" if re.fullmatch(CASE_ID_PATTERN, case_id) else f"cases/case-{_digest(case_id)}.html"


def arm_page(recorded: str) -> str | None:
    """The page beside the index of the arm whose trace arms.csv records as ``recorded``: the trace's path under
    ``arms/`` with ``.html`` for ``.trace.json`` (so it is as unique as the trace); a trace outside ``arms/`` (or
    a path with ``..`` or odd characters) goes to ``arms/other/``, named by a hash of its path. None for an arm
    that left no trace ("")."""
    if not recorded:
        return None
    parts = PurePosixPath(recorded.replace("\\", "/")).parts
    name = trace_stem(parts[-1]).removesuffix(".json")
    if "arms" in parts[:-1]:
        start = len(parts) - 1 - parts[::-1].index("arms")
        inner = parts[start + 1:-1]
        if all(_SAFE_PART.fullmatch(part) for part in (*inner, name)):
            return "/".join(("arms", *inner, f"{name}.html"))
    safe = name if _SAFE_PART.fullmatch(name) else "arm"
    return f"arms/other/{safe}-{_digest(recorded)}.html"


def case_rows(run_dir: Path, rows: list[ArmRow]) -> Iterator[tuple[str, list[ArmView]]]:
    """The arms of each case, each with its page and trace file, in natural order as a person reads a list
    (mac-2 before mac-10; consilium/natural.py): the cases, and within a case the model specs, their formats
    and replicates (2 before 10). Not arms.csv's order: a running or killed cohort's is the order its arms
    finished in (it is rewritten sorted only when the cohort ends)."""
    by_case: dict[str, list[ArmView]] = {}
    for row in sorted(rows, key=lambda r: tuple(natural_key(part) for part in
                                                (r.case_id, r.model_spec, r.format, text_of(r.replicate)))):
        page = arm_page(row.trace)
        trace = RunFolder(run_dir).trace_location(row.trace) if page is not None else None
        by_case.setdefault(row.case_id, []).append(ArmView(row, page, trace))
    yield from by_case.items()


def arm_judgements(trace: Path) -> list[Judgement]:
    """The judgement records beside a trace that name it, by rubric."""
    found = [read_judgement(p) for p in judgements_of(trace)]
    return sorted((j for j in found if j.trace == trace.name), key=lambda j: j.rubric)


def rubric_score(judgement: Judgement) -> RubricScore:
    """:class:`RubricScore` of one judgement; whether a criterion is whole-case is the shipped rubric's
    word, else the item's own ``detail.whole_case``."""
    criteria = rubric_criteria(judgement.rubric)
    scores = []
    for item in judgement.items:
        known = criteria.get(item.criterion)
        whole_case = known.whole_case if known is not None else bool(item.detail.get("whole_case"))
        if not whole_case and not item.not_evaluable and item.score is not None and not out_of_scope(item):
            scores.append(item.score)
    not_evaluable = sum(item.not_evaluable for item in judgement.items)
    outside = sum(out_of_scope(item) for item in judgement.items)
    own = [component for component, a in judgement.aggregates.items() if _OWN_MEAN in a]
    if own:  # the rubric's own formula (App. E.2's weighted mean), over the components that have one
        values = [v for component in own if (v := _weighted_mean(judgement, component, criteria)) is not None]
        return RubricScore(sum(values) / len(values) if values else None, len(scores), not_evaluable,
                           len(judgement.items), outside, "weighted mean")
    return RubricScore(sum(scores) / len(scores) if scores else None, len(scores), not_evaluable,
                       len(judgement.items), outside)


#: The aggregate a rubric's judgement carries in place of a plain mean (the four-decision rubric's).
_OWN_MEAN = "weighted_mean"


def _weighted_mean(judgement: Judgement, component: str, criteria: dict[str, Criterion]) -> float | None:
    """App. E.2's weighted mean of one component's items, computed from the (validated) items as compare and
    report compute it (:func:`consilium.judges.scoring.weighted_decisions`), not read from the record's stored
    aggregate, which a score corrected by hand leaves stale. Each dimension's weight is the shipped rubric's,
    else the one its item recorded; the stored aggregate only where neither is known."""
    items = [i for i in judgement.items if i.component == component]
    weights = {i.criterion: known.weight if (known := criteria.get(i.criterion)) is not None else i.detail.get("weight")
               for i in items}
    if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights.values()):
        stored = judgement.aggregates[component][_OWN_MEAN]
        return float(stored) if isinstance(stored, int | float) else None
    return weighted_decisions({i.criterion: None if i.score is None else int(i.score) for i in items},
                              {name: float(w) for name, w in weights.items() if isinstance(w, int | float)})


def conclusion_of(trace: TraceBase) -> str:
    """The text the case page shows for an arm: its conclusion (a turn's answer), else its first text."""
    texts = concluded(trace)
    for name in ("conclusion", "answer"):
        if texts.get(name):
            return texts[name]
    return next(iter(texts.values()), "")
