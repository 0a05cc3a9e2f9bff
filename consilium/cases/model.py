"""The Case model: one clinical case as every graph, agent and judge sees it.

A case holds what the panel may read (question, presentation, typed sections,
slides) and, apart from it, an optional ``reference`` that only judges read
(:mod:`consilium.cases.reference`). :meth:`Case.render` is the byte-identical case block of every prompt, so it
never includes the reference. Every model forbids unknown fields so that a
typo in a case file is an error, not a silently ignored key.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from consilium.cases.fields import NonEmptyStr, Strict
from consilium.cases.reference import Reference
from consilium.datafiles.values import DataError, check_value

__all__ = [
    "CASE_ID_PATTERN",
    "SECTION_HEADINGS",
    "Case",
    "CaseKind",
    "ClinicalSections",
    "Slide",
]

#: Letters, digits, ``-``, ``_`` and ``.``, starting with a letter or digit: safe as a file name.
CASE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

CaseKind = Literal["diagnostic", "tumor_board", "consultation"]


def _safe_id(value: str) -> str:
    if not re.fullmatch(CASE_ID_PATTERN, value):
        raise ValueError(
            f"{value!r} is not a valid case id: use 1-128 letters, digits, '-', '_' or '.', "
            "starting with a letter or digit (the id names files)"
        )
    return value


def _holdable(metadata: dict[str, Any]) -> dict[str, Any]:
    """Free-form metadata keeps the rules of a case file's values (consilium/datafiles/values.py: finite
    numbers, integers of at most 4,300 digits, no NUL or lone surrogate), so a case made in code can be
    hashed and written as JSON like one read from a file."""
    try:
        check_value(metadata)
    except DataError as exc:
        raise ValueError(str(exc)) from None
    return metadata


#: Section field name -> heading used by :meth:`Case.render`, in rendering order.
SECTION_HEADINGS: dict[str, str] = {
    "demographics": "Demographics",
    "history": "History",
    "symptoms": "Symptoms",
    "past_medical_history": "Past medical history",
    "medications": "Medications",
    "social_history": "Social history",
    "family_history": "Family history",
    "review_of_systems": "Review of systems",
    "vitals": "Vital signs",
    "exam": "Examination",
    "labs": "Laboratory results",
    "imaging": "Imaging",
    "pathology": "Pathology",
    "molecular": "Molecular findings",
    "treatment_history": "Treatment history",
    "other": "Other",
}


class ClinicalSections(Strict):
    """Typed free-text sections of a case; an absent or blank section is not rendered."""

    demographics: str | None = None
    history: str | None = None
    symptoms: str | None = None
    past_medical_history: str | None = None
    medications: str | None = None
    social_history: str | None = None
    family_history: str | None = None
    review_of_systems: str | None = None
    vitals: str | None = None
    exam: str | None = None
    labs: str | None = None
    imaging: str | None = None
    pathology: str | None = None
    molecular: str | None = None
    treatment_history: str | None = None
    other: str | None = None


class Slide(Strict):
    """A slide shown to the board: a caption, and optionally the path of an image file."""

    caption: NonEmptyStr
    image: str | None = None


class Case(Strict):
    """One clinical case: what the panel reads, plus an optional judge-only reference."""

    id: Annotated[str, AfterValidator(_safe_id)]
    title: str | None = None
    kind: CaseKind = "diagnostic"
    #: What the panel is asked. A tumor board needs none: the board meets on the case and concludes
    #: (opentumorboard.txt §2.4: Board Simulation gives the case summary and slides only), so no made-up
    #: question reaches its model or its judge. Every other kind must have one.
    question: Annotated[NonEmptyStr | None, Field(validate_default=True)] = None
    presentation: NonEmptyStr
    sections: ClinicalSections = Field(default_factory=ClinicalSections)
    slides: list[Slide] = Field(default_factory=list)
    reference: Reference | None = None
    metadata: Annotated[dict[str, Any], AfterValidator(_holdable)] = Field(default_factory=dict)

    @field_validator("question")
    @classmethod
    def _question_unless_a_board(cls, question: str | None, info: ValidationInfo) -> str | None:
        if question is None and info.data.get("kind", "diagnostic") != "tumor_board":
            raise PydanticCustomError("missing", "Field required")
        return question

    def render(self) -> str:
        """The canonical case text placed in every prompt; it never contains the reference.

        Deterministic (same case, same bytes) so that prompts share a cacheable prefix.
        """
        blocks = [f"Question:\n{_clean(self.question)}"] if self.question is not None else []
        blocks.append(f"Presentation:\n{_clean(self.presentation)}")
        for name, heading in SECTION_HEADINGS.items():
            text = getattr(self.sections, name)
            if text is not None and text.strip():
                blocks.append(f"{heading}:\n{_clean(text)}")
        if self.slides:
            lines = [f"Slide {n}: {_clean(slide.caption)}" for n, slide in enumerate(self.slides, 1)]
            blocks.append("Slides:\n" + "\n".join(lines))
        return "\n\n".join(blocks)

    def content_hash(self) -> str:
        """First 16 hex digits of the sha256 of the whole case as canonical JSON."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


_TRAILING_SPACE = re.compile(r"[ \t]+\n")


def _clean(text: str) -> str:
    """Normalise line endings and trailing spaces so rendering does not depend on the editor."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _TRAILING_SPACE.sub("\n", text).strip()
