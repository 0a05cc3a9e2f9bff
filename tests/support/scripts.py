"""The one builder of scripted models for the tests: a panel's or a judge's rules, in the scripted backend's file
format (docs/models.md; consilium/models/backends/scripted.py).

A rule is a filter (stage, role, round, seed, contains, contains_all, …) and one answer (``json``, ``response``
or ``fail``); the first rule that matches a call answers it, so rules are added in the order they are to be
tried. Each method adds one rule and returns the builder, so a script reads top to bottom::

    panel = (Scripted("panel-a")
             .roles("Internal Medicine", "Cardiology", where={"contains": "ZQALPHA"})
             .opinion("opinion of {role}")
             .synthesis("first report")
             .accept())
    spec = panel.write(tmp / "panel-a.json")          # "scripted:/…/panel-a.json"

``where`` is the filter of a rule (the keys of the scripted backend's rule model, as they are spelt there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The structured opinion's fields (consilium/graphs/consilium answers), all but the final conclusion.
OPINION_FIELDS = ("clinical_data", "syndromes", "differential_diagnosis", "diagnostic_strategy",
                  "management_strategy")
#: The structured report's fields, all but the final opinion.
REPORT_FIELDS = ("summary", "final_differential", "diagnostic_plan", "management_plan", "safety_warnings")
#: What a structured call's prompt carries (its schema's example): a rule with it answers the structured format.
STRUCTURED_OPINION = '"final_conclusion"'
STRUCTURED_REPORT = '"final_opinion"'
#: The structured revision prompt's example report.
STRUCTURED_REVISION = '"final_opinion": "..."'


def sections(final_opinion: str, *, summary: str = "s", final_differential: str = "1. A",
             diagnostic_plan: str = "d", management_plan: str = "m", safety_warnings: str = "w") -> dict[str, str]:
    """A structured report's sections."""
    return {"final_opinion": final_opinion, "summary": summary, "final_differential": final_differential,
            "diagnostic_plan": diagnostic_plan, "management_plan": management_plan,
            "safety_warnings": safety_warnings}


def structured_opinion(final_conclusion: str, *, clinical_data: str = "d", syndromes: str = "s",
                       differential_diagnosis: str = "1. A", diagnostic_strategy: str = "t",
                       management_strategy: str = "m") -> dict[str, str]:
    """A structured opinion's fields."""
    return {"clinical_data": clinical_data, "syndromes": syndromes, "differential_diagnosis": differential_diagnosis,
            "diagnostic_strategy": diagnostic_strategy, "management_strategy": management_strategy,
            "final_conclusion": final_conclusion}


class Scripted:
    """A scripted model's rules, built in the order they are tried."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.rules: list[dict[str, Any]] = []

    # --- any rule ---

    def rule(self, stage: str, *, where: dict[str, Any] | None = None, json: Any = None,
             response: str | None = None, fail: str | None = None) -> Scripted:
        """One rule: ``stage`` and the filter ``where``, answered by ``json``, ``response`` or ``fail``."""
        answers = {"json": json, "response": response, "fail": fail}
        given = {key: value for key, value in answers.items() if value is not None}
        assert len(given) == 1, f"a rule answers with exactly one of json, response, fail; got {sorted(given)}"
        self.rules.append({"stage": stage, **(where or {}), **given})
        return self

    def extend(self, rules: list[dict[str, Any]]) -> Scripted:
        """Rules written out already (a shared fixture's), added as they are."""
        self.rules += rules
        return self

    # --- a panel ---

    def roles(self, primary: str, *supporting: str, justification: str | tuple[str, ...] = "j",
              where: dict[str, Any] | None = None) -> Scripted:
        """The role assignment: ``primary`` first, then the supporting roles; ``justification`` is one text for
        all, or one per role in order (the last repeats)."""
        texts = (justification,) if isinstance(justification, str) else justification
        said = [texts[min(i, len(texts) - 1)] for i in range(1 + len(supporting))]
        return self.rule("role_assignment", where=where, json={
            "primary": {"label": primary, "justification": said[0]},
            "supporting": [{"label": label, "justification": text}
                           for label, text in zip(supporting, said[1:], strict=True)]})

    def opinion(self, text: str, *, where: dict[str, Any] | None = None) -> Scripted:
        """A free-form opinion (``{role}`` is filled with the role's id)."""
        return self.rule("opinion", where=where, response=text)

    def structured_opinion(self, final_conclusion: str, *, where: dict[str, Any] | None = None,
                           **fields: str) -> Scripted:
        """A structured opinion, for the calls whose prompt carries its schema (unless ``where`` says else)."""
        return self.rule("opinion", where={"contains": STRUCTURED_OPINION} if where is None else where,
                         json=structured_opinion(final_conclusion, **fields))

    def synthesis(self, report: str | dict[str, str], *, where: dict[str, Any] | None = None) -> Scripted:
        """The moderator's synthesis: a free-form text, or a structured report's sections."""
        if isinstance(report, str):
            return self.rule("synthesis", where=where, response=report)
        return self.rule("synthesis", where=where, json=report)

    def dissent(self, role: str, round_: int, *, where: dict[str, Any] | None = None, reason: str = "r",
                requested_change: str = "c") -> Scripted:
        """``role`` dissents in review round ``round_``."""
        return self.rule("vote", where={"role": role, "round": round_, **(where or {})},
                         json={"vote": "dissent", "reason": reason, "requested_change": requested_change})

    def accept(self, *, reason: str = "ok", where: dict[str, Any] | None = None) -> Scripted:
        """Every vote the rules above did not answer: accept."""
        return self.rule("vote", where=where, json={"vote": "accept", "reason": reason, "requested_change": None})

    def revision(self, report: str | dict[str, str], *, changed: bool = True, summary: str = "revised",
                 where: dict[str, Any] | None = None) -> Scripted:
        """The moderator's revision: the report it writes (``{round}`` is filled with the round)."""
        return self.rule("revision", where=where,
                         json={"changed": changed, "change_summary": summary, "report": report})

    def fail(self, stage: str, *, where: dict[str, Any] | None = None) -> Scripted:
        """The calls of ``stage`` that ``where`` matches fail (a model error)."""
        return self.rule(stage, where=where, fail="model")

    # --- a judge ---

    def judge(self, answer: Any, *, item: str | None = None, where: dict[str, Any] | None = None) -> Scripted:
        """A judge's answer: a JSON object, or a text (not JSON); ``item`` is ``component:criterion``."""
        place = {**({"role": item} if item is not None else {}), **(where or {})}
        if isinstance(answer, str):
            return self.rule("judge", where=place, response=answer)
        return self.rule("judge", where=place, json=answer)

    def score(self, value: int | str, *, item: str | None = None, where: dict[str, Any] | None = None,
              rationale: str = "r") -> Scripted:
        """A rubric judge's score of ``item`` (``"not_evaluable"`` where it cannot say)."""
        return self.judge({"rationale": rationale, "score": value}, item=item, where=where)

    # --- the file ---

    def build(self) -> dict[str, Any]:
        """The script as the scripted backend reads it."""
        return {"model": self.model, "rules": list(self.rules)}

    def write(self, path: Path) -> str:
        """Write the script to ``path``; returns its model spec, ``scripted:<path>``."""
        path.write_text(json.dumps(self.build()), encoding="utf-8")
        return f"scripted:{path}"
