"""Score responses produced anywhere, one JSON object a line, as the OpenTumorBoard code scores them.

Each line holds ``response`` (the model's text) and optionally ``reference_conclusion``,
``response_truncated`` (bool), ``valid_response_length`` and ``response_length_limit`` (tokens). Each output
holds the official ``format_details`` fields, ``conclusion`` (the text the official evaluation extracts, ""
when none) and, with a reference, ``rouge_l`` (0 when no conclusion is found). ``.gz`` files are read as
gzip (the released files ship both ways).

A line with ``raw_response`` and no ``response`` is a Specialist Turn record as the official generation script
writes it (``raw_response``, ``parsed_output``, ``response_mode``, ``extracted_final_response``,
``raw_reasoning_content``, ``final_response_extraction``): its output holds ``answer`` (the text the official
evaluation extracts, "" when none), ``answer_extraction`` (the path that found it) and, with a
``reference_answer``, ``rouge_l`` (null when there is no answer: the official mean leaves it out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consilium.datafiles.text import jsonl_objects
from consilium.errors import UserError
from consilium.otb.answer import answer_text
from consilium.otb.extract import conclusion_text
from consilium.otb.format_score import format_score
from consilium.otb.rouge import rouge_l


def _field(row: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = row.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool)):
        raise UserError(f"{where}: field {name!r} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def score_turn_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    """A Specialist Turn record's answer as the official evaluation extracts it (consilium/otb/answer.py)."""
    found = answer_text(_field(row, "raw_response", str, where), row.get("parsed_output"),
                        reasoning_final=row.get("response_mode") == "reasoning_final",
                        final_response=_field(row, "extracted_final_response", str, where),
                        reasoning=row.get("raw_reasoning_content"),
                        final_extraction=_field(row, "final_response_extraction", str, where))
    out: dict[str, Any] = {"answer": found.text or "", "answer_extraction": found.method}
    reference = _field(row, "reference_answer", str, where)
    if reference is not None:
        out["rouge_l"] = rouge_l(found.text, reference.strip()) if found.text else None
    return out


def score_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    if "raw_response" in row and "response" not in row:
        return score_turn_row(row, where)
    response = row.get("response")
    if not isinstance(response, str):
        raise UserError(f"{where}: field 'response' must be a string (the model's text)")
    reference = _field(row, "reference_conclusion", str, where)
    scored = format_score(response, truncated=bool(_field(row, "response_truncated", bool, where)),
                          length=_field(row, "valid_response_length", int, where),
                          limit=_field(row, "response_length_limit", int, where))
    out: dict[str, Any] = {**scored.fields(), "conclusion": conclusion_text(response)}
    if reference is not None:
        out["rouge_l"] = rouge_l(out["conclusion"], reference) if out["conclusion"] else 0.0
    return out


def score_lines(path: Path) -> list[dict[str, Any]]:
    """One scored object per non-blank input line, in order; a bad line stops with its file and line number
    (nothing is printed for a file that has one: every line is scored before any is printed)."""
    return [score_row(row, where) for where, row in jsonl_objects(path, "a JSONL of responses")]
