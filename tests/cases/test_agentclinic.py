"""Importing AgentClinic OSCE JSONL (../shared/data/agentclinic_medqa.jsonl) as case files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consilium.cases import import_agentclinic, load_case, read_agentclinic, validate_case_file
from consilium.cli import main
from consilium.errors import UserError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "agentclinic_medqa.jsonl"


@pytest.fixture
def source() -> Path:
    if not DATA.is_file():
        pytest.skip("../shared/data/agentclinic_medqa.jsonl not present beside the repository")
    return DATA


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_import_writes_one_valid_case_per_record(source: Path, tmp_path: Path) -> None:
    written = import_agentclinic(source, tmp_path / "json")
    assert len(written) == 107
    assert len({p.name for p in written}) == 107
    for path in written:
        assert validate_case_file(path) == [], path

    originals = records(source)
    for path, record in zip(written, originals, strict=True):
        case = load_case(path)
        exam = record["OSCE_Examination"]
        assert isinstance(exam, dict)
        assert case.kind == "diagnostic"
        assert case.reference is not None and case.reference.diagnosis == exam["Correct_Diagnosis"].strip()
        assert case.question == exam["Objective_for_Doctor"].strip()
        assert case.metadata["license"] == "MIT"
        assert case.metadata["source_file"] == source.name
        assert path.name == f"{case.id}.json"


def test_ids_are_stable_across_imports(source: Path, tmp_path: Path) -> None:
    first = [p.name for p in import_agentclinic(source, tmp_path / "a")]
    second = [p.name for p in import_agentclinic(source, tmp_path / "b", fmt="yaml")]
    assert [name.removesuffix(".json") for name in first] == [name.removesuffix(".yaml") for name in second]
    assert first[0].startswith("agentclinic-medqa-001-")
    assert load_case(tmp_path / "a" / first[0]) == load_case(tmp_path / "b" / second[0])


def test_first_case_does_not_reveal_the_diagnosis(source: Path) -> None:
    case = read_agentclinic(source)[0]
    assert case.reference is not None and case.reference.diagnosis
    text = case.render()
    assert case.reference.diagnosis.lower() not in text.lower()
    assert case.metadata["diagnosis_in_text"] is False
    assert "Vital signs:" in text and "Examination:" in text and "Symptoms:" in text
    assert "_" not in text  # keys are turned into words


def test_cli_import(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cases"
    assert main(["cases", "import", "agentclinic", str(source), "--out", str(out), "--format", "yaml"]) == 0
    assert f"wrote 107 cases to {out}" in capsys.readouterr().out
    assert len(list(out.glob("*.yaml"))) == 107
    assert main(["cases", "validate", str(out)]) == 0


def test_malformed_line_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    good = {
        "OSCE_Examination": {
            "Objective_for_Doctor": "Diagnose the cough.",
            "Patient_Actor": {"Demographics": "30-year-old man", "History": "Cough for a week."},
            "Correct_Diagnosis": "Acute bronchitis",
        }
    }
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + '{"OSCE_Examination": {\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"broken\.jsonl: line 3: not valid JSON"):
        import_agentclinic(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()

    path.write_text(json.dumps({"OSCE_Examination": {"Objective_for_Doctor": "x"}}) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"line 1: OSCE_Examination\.Correct_Diagnosis"):
        read_agentclinic(path)

    assert main(["cases", "import", "agentclinic", str(tmp_path / "none.jsonl"), "--out", str(tmp_path)]) == 2


def test_small_record_maps_fields(tmp_path: Path) -> None:
    record = {
        "OSCE_Examination": {
            "Objective_for_Doctor": "Diagnose the rash.",
            "Patient_Actor": {
                "Demographics": "8-year-old girl",
                "History": "Rash for two days.",
                "Symptoms": {"Primary_Symptom": "Rash", "Secondary_Symptoms": ["Fever", "Sore throat"]},
                "Current_Medications": ["Paracetamol"],
            },
            "Physical_Examination_Findings": {
                "Vital_Signs": {"Temperature": "38.9°C"},
                "Skin_Examination": {"Rash_Type": "Sandpaper-like"},
            },
            "Test_Results": {"Throat_Culture": {"Result": "Positive"}, "Chest_X-ray": {"Findings": "Clear"}},
            "Correct_Diagnosis": "Scarlet fever",
        }
    }
    path = tmp_path / "agentclinic_demo.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    case = read_agentclinic(path)[0]
    assert case.id.startswith("agentclinic-demo-001-")
    assert case.presentation == "8-year-old girl. Rash for two days."
    assert case.sections.symptoms == "Primary Symptom: Rash\nSecondary Symptoms: Fever; Sore throat"
    assert case.sections.medications == "Paracetamol"
    assert case.sections.vitals == "Temperature: 38.9°C"
    assert case.sections.exam == "Skin Examination - Rash Type: Sandpaper-like"
    assert case.sections.labs == "Throat Culture - Result: Positive"
    assert case.sections.imaging == "Chest X-ray - Findings: Clear"
    assert "scarlet" not in case.render().lower()
