"""Case model, case-file loading and ``consilium cases validate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from consilium.cases import (
    BoardDecisions,
    Case,
    case_to_yaml,
    load_case,
    save_case,
    validate_case_file,
)
from consilium.cli import main
from consilium.errors import UserError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cases"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))

RUBRIC = [
    {"id": "r1", "kind": "requirement", "weight": 6, "text": "Recommends anticoagulation."},
    {"id": "r2", "kind": "requirement", "weight": 4, "text": "Chooses a correct dose."},
    {"id": "m1", "kind": "major_error", "weight": -2, "text": "Recommends aspirin alone."},
    {"id": "n1", "kind": "minor_error", "weight": -1, "text": "Miscalculates the score."},
]


def minimal_case(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "id": "case-1",
        "question": "What is the diagnosis?",
        "presentation": "A 40-year-old with fever.",
        "reference": {"diagnosis": "Brucellosis", "rubric": [dict(c) for c in RUBRIC]},
    }
    data.update(changes)
    return data


def write_yaml(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(UserError) as info:
        load_case(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


def test_examples_are_present_and_valid() -> None:
    assert {p.name for p in EXAMPLE_FILES} >= {
        "diagnostic-myocarditis.yaml",
        "tumor-board-nsclc.yaml",
        "consultation-afib-anticoagulation.yaml",
    }
    for path in EXAMPLE_FILES:
        assert validate_case_file(path) == [], path
        case = load_case(path)
        assert case.id == path.stem
        assert case.reference is not None


def test_example_kinds_and_references() -> None:
    diagnostic = load_case(EXAMPLES / "diagnostic-myocarditis.yaml")
    assert diagnostic.kind == "diagnostic"
    assert diagnostic.reference and diagnostic.reference.diagnosis and diagnostic.reference.differential
    assert len(diagnostic.render()) < 1500

    board = load_case(EXAMPLES / "tumor-board-nsclc.yaml")
    assert board.kind == "tumor_board"
    assert 3 <= len(board.slides) <= 4 and all(slide.image is None for slide in board.slides)
    assert board.sections.pathology and board.sections.molecular and board.sections.imaging
    assert board.reference and board.reference.conclusion and board.reference.decisions

    consult = load_case(EXAMPLES / "consultation-afib-anticoagulation.yaml")
    assert consult.kind == "consultation"
    assert consult.reference is not None
    kinds = {c.kind for c in consult.reference.rubric}
    assert kinds == {"requirement", "major_error", "minor_error"}


def test_render_is_deterministic_and_never_shows_the_reference() -> None:
    for path in EXAMPLE_FILES:
        case = load_case(path)
        text = case.render()
        assert text == load_case(path).render()
        assert text.startswith("Question:\n")
        reference = case.reference
        assert reference is not None
        hidden = [reference.diagnosis, reference.conclusion, *[c.text for c in reference.rubric]]
        if reference.decisions:
            hidden.extend(reference.decisions.in_scope().values())
        for secret in filter(None, hidden):
            assert secret.lower() not in text.lower(), (path.name, secret)


def test_render_orders_sections_and_slides() -> None:
    case = Case.model_validate(
        minimal_case(
            sections={"labs": "CRP 80", "history": "Goat farmer", "exam": "  "},
            slides=[{"caption": "Chest film"}, {"caption": "Blood smear", "image": "smear.png"}],
        )
    )
    text = case.render()
    assert text.index("Question:") < text.index("Presentation:") < text.index("History:")
    assert text.index("History:") < text.index("Laboratory results:") < text.index("Slides:")
    assert "Examination:" not in text  # blank sections are left out
    assert "Slide 1: Chest film\nSlide 2: Blood smear" in text
    assert "Brucellosis" not in text


def test_content_hash_is_stable_and_sensitive() -> None:
    case = Case.model_validate(minimal_case())
    again = Case.model_validate(json.loads(case.model_dump_json()))
    assert case.content_hash() == again.content_hash()
    assert len(case.content_hash()) == 16
    other = Case.model_validate(minimal_case(presentation="A 41-year-old with fever."))
    assert other.content_hash() != case.content_hash()


def test_json_and_yaml_round_trip(tmp_path: Path) -> None:
    case = load_case(EXAMPLES / "tumor-board-nsclc.yaml")
    for suffix in (".json", ".yaml"):
        path = save_case(case, tmp_path / f"copy{suffix}")
        assert load_case(path) == case
    assert "tumor-board-nsclc" in case_to_yaml(case)


def test_out_of_scope_decision_accepts_minus_one() -> None:
    decisions = BoardDecisions.model_validate({"therapy": "Chemotherapy", "surgery": -1, "clinical_trial": "-1"})
    assert decisions.surgery is None and decisions.clinical_trial is None
    assert decisions.in_scope() == {"therapy": "Chemotherapy"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"question": None}, "question"),
        ({"question": "   "}, "question"),
        ({"id": "../escape"}, "id"),
        ({"id": "has space"}, "id"),
        ({"kind": "surgery"}, "kind"),
        ({"colour": "blue"}, "colour"),
        ({"sections": {"histroy": "typo"}}, "sections.histroy"),
        ({"slides": [{"caption": ""}]}, "slides.0.caption"),
    ],
)
def test_bad_fields_are_named(tmp_path: Path, changes: dict[str, object], field: str) -> None:
    data = minimal_case(**changes)
    data = {k: v for k, v in data.items() if v is not None}
    message = load_error(write_yaml(tmp_path / "bad.yaml", data))
    assert f": {field}: " in message


def test_unknown_field_says_so(tmp_path: Path) -> None:
    message = load_error(write_yaml(tmp_path / "bad.yaml", minimal_case(presentaton="typo")))
    assert "presentaton: unknown field" in message


def test_missing_question_is_named(tmp_path: Path) -> None:
    data = minimal_case()
    del data["question"]
    message = load_error(write_yaml(tmp_path / "bad.yaml", data))
    assert message == f"{tmp_path / 'bad.yaml'}: question: required field is missing"


def test_rubric_weights_must_sum_to_ten(tmp_path: Path) -> None:
    data = minimal_case()
    rubric = data["reference"]["rubric"]  # type: ignore[index]
    rubric[1]["weight"] = 3.5
    message = load_error(write_yaml(tmp_path / "bad.yaml", data))
    assert ": reference.rubric: " in message
    assert "sum to 9.5" in message and "10" in message


@pytest.mark.parametrize(
    ("index", "weight", "expected"),
    [(2, -1, "major_error must have weight -2"), (3, -2, "minor_error must have weight -1"), (0, 0, "positive")],
)
def test_wrong_criterion_weight_is_named(tmp_path: Path, index: int, weight: float, expected: str) -> None:
    data = minimal_case()
    data["reference"]["rubric"][index]["weight"] = weight  # type: ignore[index]
    message = load_error(write_yaml(tmp_path / "bad.yaml", data))
    assert f": reference.rubric.{index}.weight: " in message
    assert expected in message


def test_duplicate_criterion_ids(tmp_path: Path) -> None:
    data = minimal_case()
    data["reference"]["rubric"][1]["id"] = "r1"  # type: ignore[index]
    assert "used twice" in load_error(write_yaml(tmp_path / "bad.yaml", data))


def test_file_level_problems(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "syntax.yaml"
    bad_yaml.write_text("id: a\nquestion: [unclosed\npresentation: x\n", encoding="utf-8")
    assert "YAML syntax error at line" in load_error(bad_yaml)

    bad_json = tmp_path / "syntax.json"
    bad_json.write_text('{"id": "a",\n  "question": }\n', encoding="utf-8")
    assert "JSON syntax error at line 2" in load_error(bad_json)

    text_file = tmp_path / "case.txt"
    text_file.write_text("id: a\n", encoding="utf-8")
    assert "unsupported file type '.txt'" in load_error(text_file)

    listing = write_yaml(tmp_path / "list.yaml", [1, 2])
    assert "top level must be a mapping" in load_error(listing)

    empty = tmp_path / "empty.yml"
    empty.write_text("", encoding="utf-8")
    assert "file is empty" in load_error(empty)

    assert "no such file" in load_error(tmp_path / "missing.yaml")


def test_validate_case_file_returns_every_problem(tmp_path: Path) -> None:
    data = minimal_case(id="bad id", colour="blue")
    del data["presentation"]
    problems = validate_case_file(write_yaml(tmp_path / "bad.yaml", data))
    assert {p.field for p in problems} == {"id", "presentation", "colour"}
    assert all(p.file == str(tmp_path / "bad.yaml") for p in problems)


def test_cli_validate_good_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cases", "validate", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == f"{len(EXAMPLE_FILES)} files, 0 invalid"


def test_cli_validate_reports_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    write_yaml(folder / "good.yaml", minimal_case())
    bad = minimal_case()
    bad["reference"]["rubric"][2]["weight"] = -3  # type: ignore[index]
    write_yaml(folder / "bad.yaml", bad)
    missing = tmp_path / "nowhere.yaml"

    assert main(["cases", "validate", str(folder), str(missing)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert f"{folder / 'bad.yaml'}: reference.rubric.2.weight: a major_error must have weight -2" in lines[0]
    assert lines[1] == f"{missing}: no such file or directory"
    assert lines[-1] == "3 files, 2 invalid"


def test_cli_validate_flags_duplicate_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_yaml(tmp_path / "a.yaml", minimal_case())
    (tmp_path / "b.json").write_text(json.dumps(minimal_case()), encoding="utf-8")
    assert main(["cases", "validate", str(tmp_path)]) == 2
    assert "id: case id 'case-1' is also used by" in capsys.readouterr().out


def test_cli_cases_without_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cases"]) == 2
    assert "validate" in capsys.readouterr().out
