"""A case as the OpenTumorBoard release writes it, the text the authors' code sends a model and its judge: the case
summary (the presentation and clinical sections, never a question), the slides as ``<image> caption`` lines, and
the generation scripts' user messages built from them (AnqiLi24/OpenTumorBoard ``scripts/evaluation/formats/``:
``simulation_evaluation_format.py`` and ``qa_evaluation_format.py``, their ``format_user_prompt``).

The board's message falls back to a sentence when the case has no slides; the Specialist Turn's sends the empty
slide text as it is, as the official Specialist Turn template does.
"""

from __future__ import annotations

from consilium.cases.model import SECTION_HEADINGS, Case

__all__ = ["NO_SLIDES", "board_input", "case_summary", "slide_descriptions", "slide_lines", "turn_input"]

#: What the official code sends for a case without slides.
NO_SLIDES = "No slide descriptions are available."


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def case_summary(case: Case) -> str:
    """The case's presentation, then each clinical section under its heading; no question, no slides."""
    blocks = [_clean(case.presentation)]
    for name, heading in SECTION_HEADINGS.items():
        text = getattr(case.sections, name)
        if text is not None and text.strip():
            blocks.append(f"{heading}:\n{_clean(text)}")
    return "\n\n".join(blocks)


def slide_lines(case: Case) -> str:
    """The slides as the released data writes them, one ``<image> caption`` line each ("" without slides)."""
    return "\n".join(f"<image> {_clean(s.caption)}" for s in case.slides)


def slide_descriptions(case: Case) -> str:
    """The slide lines, or the official fallback sentence without slides."""
    return slide_lines(case) or NO_SLIDES


def board_input(case: Case) -> str:
    """The Board Simulation user message: the case summary, then the slide descriptions."""
    return f"CASE SUMMARY:\n{case_summary(case)}\n\nSLIDE DESCRIPTIONS:\n{slide_descriptions(case)}"


def turn_input(case: Case, role: str, question: str) -> str:
    """The Specialist Turn user message: the target role, the case summary, the slides and the question."""
    return (f"TARGET SPECIALIST ROLE:\n{role}\n\nCASE SUMMARY:\n{case_summary(case)}\n\n"
            f"SLIDE DESCRIPTIONS:\n{slide_lines(case)}\n\nQUESTION:\n{question}")
