"""The Board Simulation conclusion as the authors' evaluation code finds it for judging, ROUGE-L and
BERTScore (AnqiLi24/OpenTumorBoard ``scripts/evaluation/formats/simulation_evaluation_format.py``,
``extract_conclusion`` on a plain response). It is lenient where the format score is strict: a leading
``<think>`` block and a code fence are dropped, tags may carry spaces and any case, a response cut before
``</conclusion>`` keeps what it has, and a Markdown table with a ``Conclusion:`` line is read too. An empty
result means the response has no conclusion (the leaderboard scores it at the floor; ROUGE-L as 0).
"""

from __future__ import annotations

import re

_THINK = re.compile(r"\A\s*<think\b[^>]*>.*?</think>\s*", re.IGNORECASE | re.DOTALL)
_TURN_HEAD = re.compile(r"(?m)^\s*<\s*turn\s+(\d+)\s*>\s*([^:\n]{1,80}?)\s*:\s*(.*)$")
_OPEN = {name: re.compile(rf"<\s*{name}\s*>", re.IGNORECASE) for name in ("discussion", "conclusion")}
_CLOSE = {name: re.compile(rf"<\s*/\s*{name}\s*>", re.IGNORECASE) for name in ("discussion", "conclusion")}
_LABEL = r"(?:#{1,6}\s*)?(?:\*\*conclusion:\*\*|\*\*conclusion\*\*:|conclusion:)"
_LABELLED = re.compile(rf"(?im)^\s*{_LABEL}\s*(.*)$")
_LABEL_ONLY = re.compile(rf"\A\s*{_LABEL}\s*(.+)\Z", re.IGNORECASE | re.DOTALL)
_TABLE_ROW = re.compile(r"^\s*\|\s*([^|]+?)\s*\|\s*(.*)$")
_XML_CLOSED = re.compile(r"<\s*conclusion\s*>(.*?)<\s*/\s*conclusion\s*>", re.IGNORECASE | re.DOTALL)
_XML_OPEN = re.compile(r"<\s*conclusion\s*>(.+)\Z", re.IGNORECASE | re.DOTALL)


def _cleaned(text: str) -> str:
    text = _THINK.sub("", text.strip(), count=1).strip()
    if text.startswith("```"):
        lines = text.splitlines()[1:]
        if lines and lines[-1].strip() == "```":
            lines = lines[:-1]
        text = "\n".join(lines).strip()
    return text


def _from_turns(text: str) -> str:
    """The conclusion of a ``<turn N>`` transcript, or "" when it has no conclusion tag or no turn text."""
    opened = _OPEN["conclusion"].search(text)
    if opened is None:
        return ""
    closed = _CLOSE["conclusion"].search(text[opened.end():])
    conclusion = (text[opened.end():opened.end() + closed.start()] if closed else text[opened.end():]).strip()
    start = m.end() if (m := _OPEN["discussion"].search(text)) else 0
    end = m.start() if (m := _CLOSE["discussion"].search(text)) else min(len(text), opened.start())
    body = text[start:end]
    heads = list(_TURN_HEAD.finditer(body))
    has_turn = any((h.group(3) + "\n" + body[h.end():(heads[i + 1].start() if i + 1 < len(heads) else len(body))])
                   .strip() for i, h in enumerate(heads))
    return conclusion if has_turn else ""


def _from_table(text: str) -> str:
    """The text after a ``Conclusion:`` line of a Markdown-table transcript with at least one non-empty row."""
    label = _LABELLED.search(text)
    if label is None:
        return ""
    conclusion = (label.group(1) + "\n" + text[label.end():]).strip()
    rows: list[list[str]] = []
    for line in text[:label.start()].strip().splitlines():
        if (row := _TABLE_ROW.match(line)) is not None:
            role = row.group(1).strip()
            if role.casefold() == "role" or re.fullmatch(r":?-+:?", role):
                continue
            rows.append([row.group(2).strip()])
        elif rows:
            rows[-1].append(line.rstrip())
    kept = [t for r in rows if (t := "\n".join(r).strip().removesuffix("|").rstrip())]
    return conclusion if kept else ""


def conclusion_text(response: str) -> str:
    """The conclusion the official evaluation scores, or "" when it finds none."""
    if response.strip():
        cleaned = _cleaned(response)
        found = _from_turns(cleaned) if _TURN_HEAD.search(cleaned) else _from_table(cleaned)
        if found:
            return found
    if "|" not in response and (m := _LABEL_ONLY.match(response.strip())) and m.group(1).strip():
        return m.group(1).strip()
    for pattern in (_XML_CLOSED, _XML_OPEN):
        if (m := pattern.search(response)) and m.group(1).strip():
            return m.group(1).strip()
    return ""
