"""The OpenTumorBoard authors' judge message layout: the rubric and the task in the system message, the data alone
in the user message, in upper-case tagged sections.

The sections, their order and their fallbacks are the official code's (AnqiLi24/OpenTumorBoard):

* a board's conclusion (conclusion alignment, four decisions): ``<CASE_SUMMARY>``, ``<SLIDE_DESCRIPTIONS>``
  ("No slide descriptions are available." when the case has none), ``<REFERENCE_CONCLUSION>``,
  ``<CANDIDATE_RESPONSE>`` (``scripts/evaluation/judge/build_llm_judge_batch.py``, its Board Simulation
  message; ``training/verl_otb/reward.py`` sends the same one);
* a Specialist Turn's answer (clinical equivalence): ``<TARGET_SPECIALIST_ROLE>``, ``<CASE_SUMMARY>``,
  ``<SLIDE_DESCRIPTIONS>``, ``<QUESTION>``, ``<REFERENCE_EXPERT_ANSWER>``, ``<CANDIDATE_ANSWER>`` (the batch
  builder's Specialist Turn message);
* the candidate-blind scope call: ``<CASE_EVIDENCE>``, ``<REFERENCE_CONCLUSION>``
  (``training/verl_otb/precompute_reference_scope.py``);
* the consistency judge: ``<CASE_EVIDENCE>``, ``<SCOPE>`` (the frozen labels as compact JSON),
  ``<REFERENCE_DISCUSSION>``, ``<REFERENCE_CONCLUSION>``, ``<CANDIDATE_DISCUSSION>``, ``<CANDIDATE_CONCLUSION>``
  (``training/verl_otb/reward.py``).

The case summary is the case's presentation and clinical sections, never a question (a board is asked none);
the slide descriptions are the released ``<image> caption`` lines. Case evidence is the official
``CASE SUMMARY:`` / ``SLIDES:`` text the reward code splits back into those two sections.

Text goes in as it is, so a judge reads "<2 cm" as the authors' judge did; only a tag of the layout itself inside
the data (``</CANDIDATE_RESPONSE>``, in any case and with the look-alike brackets of prompting.py) has its brackets
written as character references, so no text can close its section or open another.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from consilium.cases import Case
from consilium.cases.otb_text import NO_SLIDES, case_summary, slide_descriptions

__all__ = ["NO_SLIDES", "TAGS", "board_user", "case_evidence", "case_summary", "consistency_user", "guard",
           "scope_user", "sections", "slide_descriptions", "turn_user"]

#: Every tag of the layout.
TAGS: tuple[str, ...] = ("CASE_SUMMARY", "SLIDE_DESCRIPTIONS", "REFERENCE_CONCLUSION", "CANDIDATE_RESPONSE",
                         "TARGET_SPECIALIST_ROLE", "QUESTION", "REFERENCE_EXPERT_ANSWER", "CANDIDATE_ANSWER",
                         "CASE_EVIDENCE", "SCOPE", "REFERENCE_DISCUSSION", "CANDIDATE_DISCUSSION",
                         "CANDIDATE_CONCLUSION")

_OPEN, _CLOSE = "<＜﹤〈《‹⟨⟪〈⧼ᐸ˂", ">＞﹥〉》›⟩⟫〉⧽ᐳ˃"
_OWN_TAG = re.compile(rf"[{_OPEN}]\s*/?\s*(?:{'|'.join(TAGS)})\s*[{_CLOSE}]", re.IGNORECASE)


def _escape(tag: str) -> str:
    return "".join(f"&#x{ord(ch):X};" if ch in _OPEN or ch in _CLOSE else ch for ch in tag)


def guard(text: str) -> str:
    """``text`` as it is, but for a tag of this layout inside it, whose brackets are written as character
    references."""
    return _OWN_TAG.sub(lambda m: _escape(m.group(0)), text)


def sections(parts: Sequence[tuple[str, str]]) -> str:
    """Tagged sections, one blank line apart, each text guarded."""
    return "\n\n".join(f"<{tag}>\n{guard(text)}\n</{tag}>" for tag, text in parts)


def case_evidence(case: Case) -> str:
    """The case as the reward code's evidence text: the summary, then the slides."""
    return f"CASE SUMMARY:\n{case_summary(case)}\n\nSLIDES:\n{slide_descriptions(case)}"


def board_user(case: Case, reference: str, candidate: str) -> str:
    """A board conclusion's judge message."""
    return sections((("CASE_SUMMARY", case_summary(case)), ("SLIDE_DESCRIPTIONS", slide_descriptions(case)),
                     ("REFERENCE_CONCLUSION", reference), ("CANDIDATE_RESPONSE", candidate)))


def turn_user(case: Case, role: str, question: str, reference: str, candidate: str) -> str:
    """A Specialist Turn answer's judge message."""
    return sections((("TARGET_SPECIALIST_ROLE", role), ("CASE_SUMMARY", case_summary(case)),
                     ("SLIDE_DESCRIPTIONS", slide_descriptions(case)), ("QUESTION", question),
                     ("REFERENCE_EXPERT_ANSWER", reference), ("CANDIDATE_ANSWER", candidate)))


def scope_user(case: Case, reference: str) -> str:
    """The candidate-blind scope call's message: the case and the reference conclusion, no candidate."""
    return sections((("CASE_EVIDENCE", case_evidence(case)), ("REFERENCE_CONCLUSION", reference)))


def consistency_user(case: Case, scope: Mapping[str, str], reference_discussion: str, reference: str,
                     discussion: str, conclusion: str) -> str:
    """The consistency judge's message; ``scope``: each decision's frozen label, in the dimensions' order."""
    return sections((("CASE_EVIDENCE", case_evidence(case)),
                     ("SCOPE", json.dumps(dict(scope), separators=(",", ":"))),
                     ("REFERENCE_DISCUSSION", reference_discussion), ("REFERENCE_CONCLUSION", reference),
                     ("CANDIDATE_DISCUSSION", discussion), ("CANDIDATE_CONCLUSION", conclusion)))
