"""The judge-only part of a case: the reference diagnosis, conclusion, board decisions, NPCBench rubric
and per-question answers that judges compare the panel's output with. It is never shown to the panel.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, ValidationInfo, field_validator, model_serializer

from consilium.cases.fields import NonEmptyStr, Strict

__all__ = [
    "ERROR_WEIGHTS",
    "REQUIREMENT_WEIGHT_TOTAL",
    "BoardDecisions",
    "CriterionKind",
    "Reference",
    "ReferenceAnswer",
    "RubricCriterion",
    "question_key",
]

#: NPCBench: the positive requirements of one item carry weights that sum to 10 points.
REQUIREMENT_WEIGHT_TOTAL = 10.0

#: NPCBench: each triggered major error deducts 2 points, each minor error 1 point.
ERROR_WEIGHTS: dict[str, float] = {"major_error": -2.0, "minor_error": -1.0}

CriterionKind = Literal["requirement", "major_error", "minor_error"]


class BoardDecisions(Strict):
    """The reference board's decision on each of OpenTumorBoard's four dimensions.

    Each field is the reference's decision in words (a decision to do something
    or a stated decision not to). ``None`` means the reference states no
    decision on that dimension: out of scope, which the four-decision judge
    scores as −1. For convenience the paper's literal ``-1`` (or ``"-1"``) is
    accepted in a case file and stored as ``None``.
    """

    therapy: str | None = None
    surgery: str | None = None
    next_action: str | None = None
    clinical_trial: str | None = None

    @field_validator("therapy", "surgery", "next_action", "clinical_trial", mode="before")
    @classmethod
    def _out_of_scope(cls, value: Any) -> Any:
        if (isinstance(value, int | float) and not isinstance(value, bool) and value == -1) or value == "-1":
            return None
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty; use null (or -1) for out of scope")
        return value

    def in_scope(self) -> dict[str, str]:
        """The dimensions the reference decides, by name."""
        return {name: text for name, text in self.model_dump().items() if text is not None}


class RubricCriterion(Strict):
    """One signed NPCBench rubric criterion, judged met / not met.

    A requirement adds its positive weight when met; a triggered major error
    deducts 2 points and a minor error 1 point (weights −2 and −1).
    """

    id: NonEmptyStr
    text: NonEmptyStr
    # Declared before ``weight`` so that the weight check below can read it.
    kind: CriterionKind
    weight: float

    @field_validator("weight")
    @classmethod
    def _weight_matches_kind(cls, weight: float, info: ValidationInfo) -> float:
        if not math.isfinite(weight):
            raise ValueError("must be a finite number")
        kind = info.data.get("kind")
        if kind == "requirement" and weight <= 0:
            raise ValueError(f"a requirement must have a positive weight, got {weight:g}")
        if kind in ERROR_WEIGHTS and weight != ERROR_WEIGHTS[kind]:
            expected = ERROR_WEIGHTS[kind]
            raise ValueError(f"a {kind} must have weight {expected:g} (NPCBench), got {weight:g}")
        return weight


def question_key(question: str) -> str:
    """A question as :meth:`Reference.answer_to` matches it: whitespace runs as one space, case folded."""
    return " ".join(question.split()).casefold()


class ReferenceAnswer(Strict):
    """The answer the real specialist gave to one question put to them (opentumorboard.txt §2.4 L58,
    App. C.1: a Specialist Turn is judged against the reference expert answer to its question)."""

    question: NonEmptyStr
    answer: NonEmptyStr
    role: NonEmptyStr | None = Field(default=None, description="the specialist the question was put to (a label or "
                                                               "catalogue category); absent: any role")
    qa_type: NonEmptyStr | None = Field(default=None, description="the question's type where the source gives one "
                                                                  "(OpenTumorBoard's qa_type)")
    source_id: NonEmptyStr | None = Field(default=None, description="the question's id in its source (an "
                                                                    "OpenTumorBoard qa_id)")

    @model_serializer(mode="wrap")
    def _without_absent_source_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``qa_type`` or ``source_id`` key when absent, so an answer written before they existed keeps
        its case's content hash (traces and cohorts compare it on replay and resume)."""
        data: dict[str, Any] = handler(self)
        for name in ("qa_type", "source_id"):
            if data.get(name) is None:
                data.pop(name, None)
        return data


class Reference(Strict):
    """What judges compare the panel's output with; never shown to the panel."""

    diagnosis: str | None = None
    differential: list[NonEmptyStr] = Field(default_factory=list)
    conclusion: str | None = None
    decisions: BoardDecisions | None = None
    rubric: list[RubricCriterion] = Field(default_factory=list)
    answers: list[ReferenceAnswer] = Field(default_factory=list,
                                           description="per-question reference answers for Specialist Turns")

    @field_validator("answers")
    @classmethod
    def _one_answer_per_question(cls, answers: list[ReferenceAnswer]) -> list[ReferenceAnswer]:
        seen: dict[tuple[str, str], int] = {}
        for index, item in enumerate(answers):
            key = (question_key(item.role or ""), question_key(item.question))
            if key in seen:
                first = answers[seen[key]]
                whom = f" to {first.role}" if first.role else ""
                raise ValueError(f"answers {seen[key]} and {index} are for the same question{whom} "
                                 f"{first.question!r} (questions and roles match ignoring case and spacing)")
            seen[key] = index
        return answers

    @model_serializer(mode="wrap")
    def _without_empty_answers(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No ``answers`` key when there are none, so a case written before the field existed keeps its
        content hash (traces and cohorts compare it on replay and resume)."""
        data: dict[str, Any] = handler(self)
        if not data.get("answers"):
            data.pop("answers", None)
        return data

    def answer_to(self, question: str, *roles: str) -> tuple[int, str] | None:
        """The index and text of the reference answer to ``question``: the one whose question is the
        same after :func:`question_key` (exact otherwise; a paraphrase is another question). An answer
        naming a role matches only a turn put to that role (``roles``: the turn's label and category,
        compared the same way) and comes before one naming none, so one question put to two
        specialists can have an answer each."""
        key = question_key(question)
        targets = {question_key(r) for r in roles}
        same = [(i, a) for i, a in enumerate(self.answers) if question_key(a.question) == key]
        for i, a in same:
            if a.role is not None and question_key(a.role) in targets:
                return i, a.answer
        return next(((i, a.answer) for i, a in same if a.role is None), None)

    @field_validator("rubric")
    @classmethod
    def _rubric_is_signed_npcbench(cls, rubric: list[RubricCriterion]) -> list[RubricCriterion]:
        """NPCBench: the requirements of a non-empty rubric sum to 10 points; ids are unique."""
        if not rubric:
            return rubric
        seen: set[str] = set()
        for criterion in rubric:
            if criterion.id in seen:
                raise ValueError(f"criterion id {criterion.id!r} is used twice")
            seen.add(criterion.id)
        total = sum(c.weight for c in rubric if c.kind == "requirement")
        if not math.isclose(total, REQUIREMENT_WEIGHT_TOTAL, abs_tol=1e-6):
            raise ValueError(
                f"requirement weights sum to {total:g}, but must sum to {REQUIREMENT_WEIGHT_TOTAL:g} (NPCBench)"
            )
        return rubric
