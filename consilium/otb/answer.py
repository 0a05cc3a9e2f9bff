"""The Specialist Turn answer as the authors' evaluation finds it for judging and text metrics, in two steps:

1. at generation, the response is read as the requested JSON object ``{"answer": str}`` where it can be: a
   leading ``<think>`` block dropped, then the whole text, a code fence's inside, or the span from the first
   ``{`` to the last ``}``, whichever first parses to an object with exactly that key (AnqiLi24/OpenTumorBoard
   ``scripts/evaluation/generation/run_vllm_qa_evaluation.py``, ``parse_content``, schema ``answer_only``);
2. before judging, the answer is that object's ``answer``, or else recovered from the raw text: a JSON object
   with an ``answer`` string, a ``{"answer": "`` wrapper cut before its end (only its JSON escapes decoded), or
   the raw text itself when it is plain prose; a JSON-shaped text with no answer is unrecoverable
   (``scripts/evaluation/formats/qa_evaluation_format.py``, ``extract_answer_text``).

A response whose answer is not found, or is empty, is a format failure: never judged, scored at the floor by the
leaderboard's summary. Each result names the path that found it, under the official names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "answer_text", "official_answer", "parse_answer"]

_THINK = re.compile(r"\A\s*<think\b[^>]*>.*?</think>\s*", re.IGNORECASE | re.DOTALL)
_WRAPPER = re.compile(r'^\s*\{\s*"answer"\s*:\s*"', re.IGNORECASE | re.DOTALL)
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True)
class Answer:
    """The answer text (None: none found, a format failure) and the official name of the path that found it."""

    text: str | None
    method: str


def _unfenced(text: str) -> str:
    """The inside of a code fence that opens ``text`` (its first line dropped, a closing fence line too)."""
    lines = text.splitlines()[1:]
    if lines and lines[-1].strip() == "```":
        lines = lines[:-1]
    return "\n".join(lines).strip()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def parse_answer(content: str) -> tuple[dict[str, Any] | None, str]:
    """The generation step: the object ``{"answer": str}`` and ``parsed`` / ``parsed_after_cleanup``, or None and
    ``raw_fallback``."""
    stripped = content.strip()
    cleaned = _THINK.sub("", stripped, count=1).strip()
    thought = cleaned != stripped
    candidates = [cleaned]
    if cleaned.startswith("```"):
        candidates.append(_unfenced(cleaned))
    left, right = cleaned.find("{"), cleaned.rfind("}")
    if left >= 0 and right > left:
        candidates.append(cleaned[left:right + 1])
    for index, candidate in enumerate(dict.fromkeys(candidates)):
        value = _loads(candidate)
        if isinstance(value, dict) and set(value) == {"answer"} and isinstance(value["answer"], str):
            return value, "parsed" if index == 0 and not thought else "parsed_after_cleanup"
    return None, "raw_fallback"


def _decoded(fragment: str) -> str:
    """JSON string escapes decoded, nothing else rewritten."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(0)[2:], 16)) if m.group(0)[1] == "u" else _SIMPLE[m.group(0)[1]],
                       fragment)


def answer_text(raw: str | None, parsed: Any = None, *, reasoning_final: bool = False,
                final_response: str | None = None, reasoning: str | None = None,
                final_extraction: str | None = None) -> Answer:
    """The judging step on one response record: ``raw`` its text, ``parsed`` the generation step's object; the
    keywords are a ``reasoning_final`` run's fields (its extracted final response, the provider's reasoning and
    how the final was found)."""
    if isinstance(parsed, dict) and isinstance(parsed.get("answer"), str):
        text = parsed["answer"].strip()
        return Answer(text, "parsed") if text else Answer(None, "unrecoverable")
    direct = False
    if reasoning_final:
        if isinstance(final_response, str) and final_response.strip():
            raw = final_response
        elif reasoning is None and final_extraction == "missing_explicit_final_boundary":
            direct = True  # no visible reasoning at all: only a strict JSON answer counts
        else:
            return Answer(None, "unrecoverable_reasoning_final")
    if not isinstance(raw, str) or not raw.strip():
        return Answer(None, "unrecoverable")
    cleaned = raw.strip()
    if cleaned.startswith("```"):
        cleaned = _unfenced(cleaned)
    value = _loads(cleaned)
    if isinstance(value, dict) and isinstance(value.get("answer"), str) and (not direct or set(value) == {"answer"}):
        text = value["answer"].strip()
        if not text:
            return Answer(None, "unrecoverable")
        return Answer(text, "direct_final_json_no_reasoning_trace" if direct else "raw_json")
    if direct:
        return Answer(None, "unrecoverable_reasoning_final")
    if (wrapper := _WRAPPER.match(cleaned)) is not None:
        text = cleaned[wrapper.end():].strip()
        text = text[:-1].rstrip() if text.endswith("}") else text
        text = _decoded(text[:-1] if text.endswith('"') else text).strip()
        return Answer(text, "raw_json_wrapper_recovered") if text else Answer(None, "unrecoverable")
    if cleaned.startswith(("{", "[")) or cleaned == '""':
        return Answer(None, "unrecoverable")
    return Answer(cleaned, "raw_plain_text")


def official_answer(raw: str | None) -> Answer:
    """Both steps on a response's raw text, as an instruction-following run reads it."""
    parsed, _status = parse_answer(raw) if isinstance(raw, str) else (None, "raw_fallback")
    return answer_text(raw, parsed)
