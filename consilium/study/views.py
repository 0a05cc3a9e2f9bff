"""What a study hands out: a rater's queue, the rating page's item (blinded), an answer, a rater's progress,
the live agreement, and the study just created. Plain frozen dataclasses, so the web pages render them and
JSON-encode them (:func:`dataclasses.asdict`) without knowing the database.

Blinding is by construction: :class:`ItemView` has no field that could name the model, the variant (format
or mode), a judge's score, the run id or the trace's file; its ``item`` is an opaque random id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from consilium.judges.rubric import Criterion, Rubric

__all__ = ["Answer", "CreatedStudy", "CriterionView", "ItemView", "LiveAgreement", "QueueEntry", "RaterProgress",
           "criterion_views"]


@dataclass(frozen=True)
class CreatedStudy:
    """A study just made: its id, the database (display form: a URL's password masked), the administrator's
    token and each rater's (plaintext, returned this once; only their SHA-256 is stored), how many outputs
    were drawn and how many (rater, output) assignments made."""

    study_id: str
    database: str
    admin_token: str
    links: dict[str, str]
    outputs: int
    assignments: int
    skipped_arms: int = 0  # arms of the run that did not complete (never drawn)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueueEntry:
    item: str
    position: int  # 1-based, in the rater's own order
    done: bool  # every criterion of the item answered (a score or not evaluable)


@dataclass(frozen=True)
class CriterionView:
    """One criterion as the rating page shows it: its id and text (name and definition), the scale's points,
    each point's anchor (the criterion's own, else the rubric's general scale anchors; None when the rubric
    has none) and whether it is a yes/no question (a binary scale: 1 yes, 0 no)."""

    id: str
    text: str
    scale: list[float]
    anchors: dict[str, str] | None
    binary: bool


@dataclass(frozen=True)
class Answer:
    criterion: str
    score: float | None  # None: not evaluable
    not_evaluable: bool = False
    reason: str | None = None
    comment: str | None = None
    updated_at: str = ""


@dataclass(frozen=True)
class ItemView:
    """The rating page's item: the case as the panel saw it, the output's text, its component, the criteria
    that apply to it, and the rater's answers so far. Nothing names the model, variant, judge or run."""

    item: str
    position: int
    total: int
    case_text: str
    output_text: str
    component: str
    criteria: list[CriterionView]
    answers: dict[str, Answer] = field(default_factory=dict)


@dataclass(frozen=True)
class RaterProgress:
    rater: str
    assigned: int
    done: int
    revoked: bool


@dataclass(frozen=True)
class LiveAgreement:
    """Agreement on what is rated so far; None where a statistic is undefined (too few ratings, or every
    rating the same). Inter-rater: over (output, criterion) units two or more raters scored, ``percent`` the
    share of equal pairs within a unit averaged over units (Fleiss's P̄), ``kappa`` Cohen's κ over every pair of
    raters' scores of a unit (quadratic weights on an ordinal scale, unweighted on a binary one: the statistic
    ``calibrate agreement`` reports, docs/calibration.md), ``alpha`` Krippendorff's α (ordinal; nominal on a
    binary scale). Judge–physician: each physician score paired with the judge's score of the same item
    (``judge_pairs``), the share equal and κ as above. ``not_evaluable``: answers without a score (left out
    of every statistic)."""

    items: int
    percent: float | None
    kappa: float | None
    alpha: float | None
    judge_pairs: int
    judge_percent: float | None
    judge_kappa: float | None
    not_evaluable: int
    kappa_weights: str  # "quadratic" on an ordinal scale, "none" on a binary one


def binary_scale(rubric: Rubric) -> bool:
    return sorted(rubric.scale) == [0, 1]


def _anchors(rubric: Rubric, criterion: Criterion) -> dict[str, str] | None:
    anchors = criterion.anchors or rubric.scale_anchors
    if binary_scale(rubric) and not anchors:
        return {"1": "yes", "0": "no"}
    return {str(score): " ".join(text.split()) for score, text in sorted(anchors.items())} or None


def criterion_views(rubric: Rubric, component: str) -> list[CriterionView]:
    """The criteria of ``rubric`` a rater scores on ``component``, in the rubric's order."""
    return [CriterionView(id=c.id, text=f"{c.name}: {' '.join(c.definition.split())}",
                          scale=[float(s) for s in rubric.scale], anchors=_anchors(rubric, c),
                          binary=binary_scale(rubric))
            for c in rubric.criteria_for(component)]
