"""Cases: the pydantic Case model, case-file loading and validation, and importers.

A case file (JSON or YAML) becomes a :class:`Case`; problems are reported as
``<file>: <field.path>: <reason>``. :func:`import_agentclinic` converts the
AgentClinic OSCE JSONL vignettes into case files.
"""

from __future__ import annotations

from consilium.cases.agentclinic import import_agentclinic, read_agentclinic, record_to_case
from consilium.cases.loader import (
    CASE_SUFFIXES,
    CaseProblem,
    case_files,
    case_to_yaml,
    load_case,
    problems_from_validation,
    save_case,
    validate_case_file,
)
from consilium.cases.model import SECTION_HEADINGS, Case, CaseKind, ClinicalSections, Slide
from consilium.cases.reference import BoardDecisions, CriterionKind, Reference, RubricCriterion

__all__ = [
    "CASE_SUFFIXES",
    "SECTION_HEADINGS",
    "BoardDecisions",
    "Case",
    "CaseKind",
    "CaseProblem",
    "ClinicalSections",
    "CriterionKind",
    "Reference",
    "RubricCriterion",
    "Slide",
    "case_files",
    "case_to_yaml",
    "import_agentclinic",
    "load_case",
    "problems_from_validation",
    "read_agentclinic",
    "record_to_case",
    "save_case",
    "validate_case_file",
]
