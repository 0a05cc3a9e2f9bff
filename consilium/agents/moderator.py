"""The moderator agent: assigns the panel, synthesises the opinions, revises on dissent."""

from __future__ import annotations

import re
from typing import Any, Protocol

from consilium.agents.prompting import SHARED, case_messages
from consilium.agents.records import AssignedRole, Format, Opinion, Report, Vote, render_sections
from consilium.agents.schemas import (
    REPORT_SECTIONS,
    RoleAssignmentAnswer,
    RoleLabels,
    assignment_schema,
    free_text_schema,
    length_prompt,
    report_schema,
    revision_schema,
)
from consilium.log import get_logger
from consilium.models import CallTag, ChatModel, GenerationSettings, ModelRequest, OutputSchema
from consilium.roles.catalogue import load_catalogue, normalise_label

__all__ = ["PanelSettings", "assign_panel", "assign_roles", "catalogue_labels", "reports_equal", "revise", "synthesise"]

log = get_logger(__name__)


def _slug(label: str) -> str:
    return normalise_label(label).replace(" ", "-") or "role"


class PanelSettings(Protocol):
    """What a protocol's run config says about its panel (every protocol's RunConfig has it)."""

    min_roles: int
    max_roles: int
    role_labels: RoleLabels

    def settings(self, stage: str) -> GenerationSettings: ...


async def assign_panel(model: ChatModel, case_text: str, config: PanelSettings, *, preamble: str = "preamble",
                       preamble_package: str = SHARED) -> list[AssignedRole]:
    """:func:`assign_roles` with a run config's panel size, label mode and role-assignment settings: the one
    call every protocol that assigns a panel makes."""
    return await assign_roles(model, case_text, min_roles=config.min_roles, max_roles=config.max_roles,
                              settings=config.settings("role_assignment"), preamble=preamble,
                              preamble_package=preamble_package, role_labels=config.role_labels)


async def assign_roles(model: ChatModel, case_text: str, *, min_roles: int, max_roles: int,
                       settings: GenerationSettings, preamble: str = "preamble",
                       preamble_package: str = SHARED, role_labels: RoleLabels = "free") -> list[AssignedRole]:
    """One primary and several supporting roles, each label mapped to a catalogue category.

    The exact label is kept beside its category (ai-consilium.txt, Fig. 2c).
    A label the model repeats is dropped; if that leaves fewer than
    ``min_roles``, the moderator is asked for one more role at a time, from
    the catalogue specialties not yet on the panel. ``preamble`` is the system
    prompt of the meeting's other calls, so that the assignment starts the
    prefix they all share. ``role_labels`` "catalogue" constrains each label to the catalogue's names.
    """
    labels = catalogue_labels() if role_labels == "catalogue" else None
    request = ModelRequest(
        messages=case_messages(case_text, "assign_roles", preamble=preamble, preamble_package=preamble_package,
                               min_supporting=max(0, min_roles - 1),
                               max_supporting=max_roles - 1),
        settings=settings,
        schema=assignment_schema(min_roles, max_roles, labels),
        tag=CallTag(stage="role_assignment", role="moderator"),
    )
    answer = RoleAssignmentAnswer.model_validate((await model.generate(request)).parsed)
    roles: list[AssignedRole] = []
    for proposal, primary in [(answer.primary, True), *((p, False) for p in answer.supporting)]:
        role = _make_role(proposal.label, proposal.justification, primary)
        if any(r.id == role.id for r in roles):
            log.warning("duplicate_role_dropped", label=role.label)
            continue
        roles.append(role)
    while len(roles) < min_roles:
        added = await _add_role(model, case_text, roles, min_roles - len(roles), settings, preamble,
                                  preamble_package)
        if added is None:
            log.warning("panel_smaller_than_minimum", roles=len(roles), min_roles=min_roles)
            break
        roles.append(added)
    return roles


def catalogue_labels() -> tuple[str, ...]:
    """The names a catalogue-labelled panel is chosen from: every category's but ``other``'s."""
    return tuple(c.name for c in load_catalogue().categories if c.id != "other")


def _make_role(label: str, justification: str, primary: bool) -> AssignedRole:
    label = " ".join(label.split())
    category = load_catalogue().map_label(label)
    return AssignedRole(id=_slug(label), label=label, category=category.id, category_name=category.name,
                        primary=primary, justification=" ".join(justification.split()))


async def _add_role(model: ChatModel, case_text: str, roles: list[AssignedRole], needed: int,
                    settings: GenerationSettings, preamble: str, preamble_package: str) -> AssignedRole | None:
    """Ask for one more role when the model repeated itself, offering only specialties not yet on the
    panel (as a schema enum), so the panel reaches its minimum size with distinct roles."""
    taken = {r.category for r in roles} | {normalise_label(r.label) for r in roles}
    offered = [c.name for c in load_catalogue().categories
               if c.id != "other" and c.id not in taken and normalise_label(c.name) not in taken]
    if not offered:
        return None
    schema = OutputSchema(name="AdditionalRole", json_schema={
        "type": "object", "additionalProperties": False, "required": ["label", "justification"],
        "properties": {"label": {"type": "string", "enum": offered},
                       "justification": {"type": "string", "maxLength": 240}}})
    panel = "\n".join(f"- {r.label} ({'primary' if r.primary else 'supporting'})" for r in roles)
    request = ModelRequest(
        messages=case_messages(case_text, "add_role", preamble=preamble, preamble_package=preamble_package,
                               panel=panel, needed=needed,
                               offered="; ".join(offered)),
        settings=settings, schema=schema, tag=CallTag(stage="role_assignment", role="moderator"),
    )
    parsed = (await model.generate(request)).parsed
    return _make_role(parsed["label"], parsed["justification"], primary=False)


def _opinions_block(roles: list[AssignedRole], opinions: list[Opinion]) -> str:
    by_role = {o.role: o for o in opinions}
    return "\n\n".join(f"[{r.label}]\n{by_role[r.id].text}" for r in roles if r.id in by_role)


async def synthesise(model: ChatModel, case_text: str, roles: list[AssignedRole], opinions: list[Opinion],
                     fmt: Format, settings: GenerationSettings, budget_chars: int) -> Report:
    """The initial report; ``budget_chars`` is its length in either format."""
    structured = fmt == "structured"
    task, lengths = length_prompt("synthesis_structured" if structured else "synthesis_free_form", budget_chars,
                                  REPORT_SECTIONS)
    request = ModelRequest(
        messages=case_messages(case_text, task, opinions=_opinions_block(roles, opinions), **lengths),
        settings=settings,
        schema=report_schema(budget_chars) if structured else free_text_schema("FreeFormReport", budget_chars),
        tag=CallTag(stage="synthesis", role="moderator"),
    )
    response = await model.generate(request)
    if structured:
        sections = {k: str(v) for k, v in response.parsed.items()}
        return Report(version=1, round=0, text=render_sections(sections), sections=sections)
    return Report(version=1, round=0, text=response.text.strip())


def _dissent_block(roles: list[AssignedRole], votes: list[Vote]) -> str:
    labels = {r.id: r.label for r in roles}
    lines = []
    for vote in votes:
        if vote.vote == "dissent":
            change = f" Requested change: {vote.requested_change}" if vote.requested_change else ""
            lines.append(f"- {labels.get(vote.role, vote.role)}: {vote.reason}{change}")
    return "\n".join(lines)


def reports_equal(a: str, b: str) -> bool:
    """Equal after normalising whitespace: such a "revision" is no change."""
    return re.sub(r"\s+", " ", a).strip() == re.sub(r"\s+", " ", b).strip()


async def revise(model: ChatModel, case_text: str, roles: list[AssignedRole], report: Report, votes: list[Vote],
                 round: int, fmt: Format, settings: GenerationSettings, budget_chars: int) -> Report | None:
    """The revised report, or None when the moderator finds no clinically meaningful revision.

    ``budget_chars`` is the revised report's length in either format.
    """
    structured = fmt == "structured"
    task, lengths = length_prompt("revision_structured" if structured else "revision_free_form", budget_chars,
                                  REPORT_SECTIONS)
    request = ModelRequest(
        messages=case_messages(case_text, task,
                               round=round, version=report.version, report=report.text,
                               dissents=_dissent_block(roles, votes), **lengths),
        settings=settings,
        schema=revision_schema(budget_chars, structured),
        tag=CallTag(stage="revision", role="moderator", round=round),
    )
    # Validated against the schema by the repair wrapper: a JSON object of the revision's fields.
    parsed: dict[str, Any] = (await model.generate(request)).parsed
    changed, summary = bool(parsed["changed"]), str(parsed["change_summary"])
    sections: dict[str, str] | None = None
    if structured:
        sections = {name: str(parsed["report"][name]) for name in REPORT_SECTIONS}
        text = render_sections(sections)
    else:
        text = str(parsed["report"]).strip()
    if not changed or reports_equal(text, report.text):
        return None
    return Report(version=report.version + 1, round=round, text=text, sections=sections,
                  change_summary=summary.strip())
