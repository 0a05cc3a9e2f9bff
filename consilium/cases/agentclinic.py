"""Import AgentClinic OSCE JSONL records (SamuelSchmidgall/AgentClinic, MIT) as diagnostic cases.

Each line holds one ``OSCE_Examination``: the doctor's objective, the patient
actor's history and symptoms, examination findings and test results as nested
dicts, and the ``Correct_Diagnosis``. Nested dicts become readable
``Key: value`` lines; the diagnosis goes to ``reference.diagnosis`` only, never
into the text the panel reads. Ids are stable across runs (line number plus a
hash of the record), and every line is checked before any file is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from consilium.cases.loader import problems_from_validation
from consilium.cases.model import Case
from consilium.cases.writing import write_cases
from consilium.datafiles import DataError, DataSyntaxError, parse_json
from consilium.datafiles.text import read_text
from consilium.errors import UserError

__all__ = ["SOURCE_LICENSE", "SOURCE_REPOSITORY", "import_agentclinic", "read_agentclinic", "record_to_case"]

SOURCE_REPOSITORY = "SamuelSchmidgall/AgentClinic"
SOURCE_LICENSE = "MIT"

# Patient-actor keys with a section of their own; any other key goes to ``other``.
# Demographics and History form the presentation and are not repeated in a section,
# which keeps the rendered case short for small-context models.
_PRESENTATION_KEYS = {"Demographics", "History"}
_PATIENT_SECTIONS = {
    "Symptoms": "symptoms",
    "Past_Medical_History": "past_medical_history",
    "Current_Medications": "medications",
    "Medications": "medications",
    "Drug_History": "medications",
    "Social_History": "social_history",
    "Family_History": "family_history",
    "Review_of_Systems": "review_of_systems",
}
_IMAGING_WORDS = {
    "imaging", "mri", "ct", "x", "xray", "ray", "rays", "radiograph", "radiographs", "ultrasound",
    "sonography", "echocardiogram", "echocardiography", "mammography", "doppler", "barium", "scan", "pet",
    "angiography",
}  # fmt: skip
_GENERIC_IMAGING_KEYS = {"imaging", "imaging_studies", "imaging_results"}
_KNOWN_KEYS = {"Objective_for_Doctor", "Patient_Actor", "Physical_Examination_Findings", "Test_Results"}


def import_agentclinic(
    path: str | os.PathLike[str], out_dir: str | os.PathLike[str], fmt: Literal["json", "yaml"] = "json",
    *, force: bool = False,
) -> list[Path]:
    """Convert every record of an AgentClinic JSONL file to one case file in ``out_dir``; return the paths.

    Nothing is written unless every line converts, nor when ``out_dir`` holds a case file of one of the ids
    (unless ``force``: consilium/cases/writing.py).
    """
    if fmt not in ("json", "yaml"):
        raise UserError(f"unknown case format {fmt!r}; use json or yaml")
    cases = read_agentclinic(path)
    return write_cases(cases, Path(out_dir), fmt, force=force)


def read_agentclinic(path: str | os.PathLike[str]) -> list[Case]:
    """Parse and convert every non-blank line; a malformed line raises a :class:`UserError` naming it."""
    source = Path(path)
    try:
        text = read_text(source)
    except FileNotFoundError:
        raise UserError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{source}: cannot read AgentClinic JSONL: {exc}") from None
    dataset = _dataset_name(source)
    cases = []
    # The same strict JSON as a case file (no duplicate keys, NaN, NUL, lone surrogates, deep nesting).
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json(line)
        except DataSyntaxError as exc:
            raise UserError(f"{source}: line {number}: not valid JSON (column {exc.column}: {exc.message})") from None
        except DataError as exc:
            raise UserError(f"{source}: line {number}: {exc}") from None
        try:
            cases.append(record_to_case(record, line=number, source_file=source.name, dataset=dataset))
        except ValueError as exc:
            raise UserError(f"{source}: line {number}: {exc}") from None
    if not cases:
        raise UserError(f"{source}: no AgentClinic records found")
    return cases


def record_to_case(record: Any, *, line: int, source_file: str, dataset: str = "") -> Case:
    """Map one OSCE record to a diagnostic :class:`Case`; raises ``ValueError`` if it is malformed."""
    exam = record.get("OSCE_Examination") if isinstance(record, dict) else None
    if not isinstance(exam, dict):
        raise ValueError("expected an object with an 'OSCE_Examination' object")
    objective = _require_text(exam, "Objective_for_Doctor")
    diagnosis = _require_text(exam, "Correct_Diagnosis")
    patient = _optional_dict(exam, "Patient_Actor")
    findings = _optional_dict(exam, "Physical_Examination_Findings")
    tests = _optional_dict(exam, "Test_Results")

    sections: dict[str, list[str]] = {}
    for key, value in patient.items():
        if key in _PRESENTATION_KEYS:
            continue
        name = _PATIENT_SECTIONS.get(key, "other")
        _add(sections, name, _flatten(value, () if name != "other" else (_label(key),)))
    for key, value in findings.items():
        name = "vitals" if key.lower().startswith("vital") else "exam"
        _add(sections, name, _flatten(value, () if name == "vitals" else (_label(key),)))
    for key, value in tests.items():
        # "Imaging: {Chest_CT: ...}" reads better as "Chest CT: ..." under the Imaging heading.
        path = () if key.lower() in _GENERIC_IMAGING_KEYS and isinstance(value, dict) else (_label(key),)
        _add(sections, "imaging" if _is_imaging(key) else "labs", _flatten(value, path))

    digest = hashlib.sha256(_canonical(record).encode("utf-8")).hexdigest()
    prefix = f"agentclinic-{dataset}" if dataset else "agentclinic"
    data: dict[str, Any] = {
        "id": f"{prefix}-{line:03d}-{digest[:8]}",
        "title": f"AgentClinic {dataset or 'OSCE'} case, line {line}",
        "kind": "diagnostic",
        "question": objective,
        "presentation": _presentation(patient, objective),
        "sections": {name: "\n".join(lines) for name, lines in sections.items() if lines},
        "reference": {"diagnosis": diagnosis},
        "metadata": {
            "source": "AgentClinic",
            "source_repository": SOURCE_REPOSITORY,
            "source_file": source_file,
            "line": line,
            "license": SOURCE_LICENSE,
            "record_sha256": digest,
        },
    }
    unmapped = sorted(set(exam) - _KNOWN_KEYS - {"Correct_Diagnosis"})
    if unmapped:  # kept out of the text: an unknown key might hold the answer
        data["metadata"]["unmapped_keys"] = unmapped
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        first = problems_from_validation("", exc)[0]
        raise ValueError(f"converted case is invalid: {first.field}: {first.reason}") from None
    # Some vignettes name the answer themselves; flag it so analyses can leave such cases out.
    case.metadata["diagnosis_in_text"] = diagnosis.strip().lower() in case.render().lower()
    return case


def _presentation(patient: dict[str, Any], objective: str) -> str:
    """Demographics and the history narrative, e.g. ``35-year-old female. The patient reports ...``."""
    demographics = _inline(patient.get("Demographics")).strip().rstrip(".")
    history = "\n".join(_flatten(patient.get("History"), ()))
    if not history:
        symptoms = patient.get("Symptoms")
        primary = _inline(symptoms.get("Primary_Symptom")) if isinstance(symptoms, dict) else ""
        history = f"Presenting complaint: {primary.strip()}" if primary.strip() else ""
    text = ". ".join(part for part in (demographics, history) if part)
    return text or objective


def _flatten(value: Any, path: tuple[str, ...]) -> list[str]:
    """Nested dicts become one ``Outer - Inner: value`` line per leaf; lists are joined with ``; ``."""
    if isinstance(value, dict):
        lines: list[str] = []
        for key, item in value.items():
            lines.extend(_flatten(item, (*path, _label(str(key)))))
        return lines
    text = _inline(value).strip()
    if not text:
        return []
    return [f"{' - '.join(path)}: {text}"] if path else [text]


def _inline(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{_label(str(k))}: {_inline(v)}" for k, v in value.items() if _inline(v))
    if isinstance(value, list):
        return "; ".join(text for text in (_inline(item).strip() for item in value) if text)
    return str(value)


def _label(key: str) -> str:
    return key.replace("_", " ").strip()


def _is_imaging(key: str) -> bool:
    words = set(re.split(r"[^a-z0-9]+", key.lower()))
    return bool(words & _IMAGING_WORDS)


def _add(sections: dict[str, list[str]], name: str, lines: list[str]) -> None:
    sections.setdefault(name, []).extend(lines)


def _require_text(exam: dict[str, Any], key: str) -> str:
    value = exam.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"OSCE_Examination.{key} must be a non-empty string")
    return value.strip()


def _optional_dict(exam: dict[str, Any], key: str) -> dict[str, Any]:
    value = exam.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"OSCE_Examination.{key} must be an object")
    return value


def _canonical(record: Any) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _dataset_name(source: Path) -> str:
    """``agentclinic_medqa.jsonl`` (or ``.jsonl.gz``) -> ``medqa``: the file's stem without the AgentClinic
    prefix."""
    name = source.name.lower().removesuffix(".gz")
    stem = re.sub(r"^agent[-_]?clinic", "", Path(name).stem)
    return "-".join(part for part in re.split(r"[^a-z0-9]+", stem) if part)
