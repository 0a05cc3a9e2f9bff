"""A consilium cohort on the atrial-fibrillation consultation case whose reference holds signed criteria
(npcbench.txt App. D.3: requirements with positive weights, major and minor errors), for the tests that work
out NPCBench's and Neural-MedBench's numbers by hand (tests/reports/test_report_papers.py,
tests/judges/test_npc_strict.py).

Each case is the example case under its own id, its presentation carrying ``casemark-<id>.`` for the scripted
rules to match; the panel's rules seat the same three roles, which give their opinions and accept, and the
moderator's synthesis per case is the one answer its test scripts (a report's sections, or a failure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from support.scripts import Scripted, sections

ROOT = Path(__file__).resolve().parents[2]
AFIB = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"


def marker(case_id: str) -> str:
    """The text a case's presentation carries, for a rule to match that case's calls."""
    return f"casemark-{case_id}."


def signed_rubric(criteria: dict[str, tuple[str, int]]) -> list[dict[str, Any]]:
    """``reference.rubric``: criterion id → (kind, weight), each with a text of its own."""
    return [{"id": cid, "kind": kind, "weight": weight, "text": f"Criterion {cid}."}
            for cid, (kind, weight) in criteria.items()]


def write_case(folder: Path, case_id: str, reference: dict[str, Any] | None) -> None:
    """The example case as ``folder/<case_id>.yaml`` with ``reference`` (None: no reference at all)."""
    base = yaml.safe_load(AFIB.read_text())
    case = {**base, "id": case_id, "presentation": f"{base['presentation']} Marker {marker(case_id)}"}
    if reference is None:
        case.pop("reference", None)
    else:
        case["reference"] = reference
    (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(case))


def panel_rules() -> list[dict[str, Any]]:
    """The panel's rules before any synthesis: a cardiologist with two supporting roles, an opinion in each
    format, every vote an accept."""
    return (Scripted("panel")
            .roles("Cardiologist", "Haematologist", "Geriatrician", justification=("x", "y", "z"))
            .structured_opinion("Anticoagulate.")
            .opinion("Anticoagulate, says the {role}.")
            .accept()
            .rules)


def synthesis_report(final_opinion: str, differential: str) -> dict[str, str]:
    """The moderator's synthesis: a structured report's sections; a free-form report keeps the same JSON as
    its text."""
    return sections(final_opinion, final_differential=differential)


def judged_text(fmt: str, final_opinion: str) -> str:
    """How the final opinion reads in the judged conclusion: the structured report renders its sections, a
    free-form report is the scripted text itself (the report's JSON)."""
    return f"Final opinion: {final_opinion}" if fmt == "structured" else f'"final_opinion": "{final_opinion}"'
