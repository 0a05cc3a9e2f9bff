"""OpenTumorBoard's released files import as they ship (the format of AnqiLi24/OpenTumorBoard's
``src/build_benchmark.py``): task1 and task2 JSONL, gzip or not, and the ShareGPT caption and image
manifests of ``test_inputs/``. Five records of each type, written here in the released format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from support.otb_release import write_release

from consilium.cases import Case, load_case
from consilium.cases.opentumorboard import read_opentumorboard
from consilium.cli import main
from consilium.errors import UserError


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_release(tmp_path / "data")


def _by_id(cases: list[Case]) -> dict[str, Case]:
    return {c.id: c for c in cases}


def test_every_released_file_type_imports_into_one_case_per_recorded_case(data: Path) -> None:
    cases = _by_id(read_opentumorboard(data))
    # Five board cases, plus case 6 that only task2 knows (rec3's case_6).
    assert sorted(cases) == ["rec3-case_6", "sim_000001", "sim_000002", "sim_000003", "sim_000004", "sim_000005"]
    one = cases["sim_000001"]
    assert (one.kind, one.question, one.presentation) == ("tumor_board", None,
                                                          "Summary of case 1: a patient with a tumour.")
    assert [s.caption for s in one.slides] == ["Slide 1 of case 1: CT image."] and one.slides[0].image is None
    assert [s.caption for s in cases["sim_000002"].slides] == ["Slide 1 of case 2: CT image.",
                                                               "Slide 2 of case 2: CT image."]
    assert cases["sim_000003"].slides == []
    assert one.reference is not None and one.reference.conclusion == "Conclusion 1. Treat and follow up."
    # qa 1 and qa 5 ask one role the same question (case and spacing aside): the first answer stays.
    assert [(a.source_id, a.role, a.qa_type, a.answer) for a in one.reference.answers] == [
        ("qa_000001", "Moderator", "what", "Answer 1."),
        ("qa_000002", "Clinical Trial Specialist", "why", "Answer 2.")]
    assert one.metadata["duplicate_qa_ids"] == ["qa_000005"] and one.metadata["splits"] == ["test"]
    assert (one.metadata["simulation_id"], one.metadata["video_uid"], one.metadata["case_id"]) == (
        "sim_000001", "video_0001", "case_1")
    assert "case_end_sec" not in one.metadata and one.metadata["case_start_sec"] == 10.0
    # Case 3's one question has an empty recorded answer; case 4's board conclusion is empty.
    three = cases["sim_000003"]
    assert three.reference is not None and three.reference.answers == []
    assert three.metadata["unanswered_qa_ids"] == ["qa_000004"]
    assert cases["sim_000004"].reference is None
    assert "Question" not in one.render()  # no made-up question reaches the model


def test_a_slides_folder_gives_each_slide_its_image(data: Path, tmp_path: Path) -> None:
    cases = _by_id(read_opentumorboard(data, slides=tmp_path / "processed"))
    frames = tmp_path / "processed" / "rec1" / "frames"
    assert [s.image for s in cases["sim_000002"].slides] == [str(frames / f"{n}.jpg") for n in (1, 2)]


def test_one_gzip_file_imports_alone(data: Path) -> None:
    cases = read_opentumorboard(data / "task1_test.jsonl.gz")
    assert [c.id for c in cases] == [f"sim_{n:06d}" for n in range(1, 6)]
    assert all(c.reference is None or not c.reference.answers for c in cases)


@pytest.mark.parametrize(("content", "message"), [
    (b"not json\n", "task1_test.jsonl:1: not JSON"),
    (json.dumps({"simulation_id": "sim_1", "video_dir": "r", "case_id": "c"}).encode() + b"\n",
     "task1_test.jsonl:1: field 'case_summary' must be non-empty text"),
    (json.dumps({"video_dir": "r", "case_id": "c"}).encode() + b"\n",
     "task1_test.jsonl:1: neither a Board Simulation record"),
    (gzip.compress(b"{}", mtime=0)[:10], "cannot be read as OpenTumorBoard JSONL (not a complete gzip file"),
])
def test_a_bad_file_is_refused_naming_it(tmp_path: Path, content: bytes, message: str) -> None:
    name = "task1_test.jsonl.gz" if content.startswith(b"\x1f\x8b") else "task1_test.jsonl"
    (tmp_path / name).write_bytes(content)
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        read_opentumorboard(tmp_path)


def test_a_folder_without_released_files_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="holds no OpenTumorBoard file"):
        read_opentumorboard(tmp_path)


def test_cases_import_opentumorboard_writes_case_files_that_load(data: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(data), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 6 cases to {out}"
    files = sorted(p.name for p in out.iterdir())
    assert files == ["rec3-case_6.yaml", *[f"sim_{n:06d}.yaml" for n in range(1, 6)]]
    loaded = load_case(out / "sim_000001.yaml")
    assert loaded.question is None and loaded.reference is not None and len(loaded.reference.answers) == 2
    assert main(["cases", "validate", str(out)]) == 0
    # A second import into the folder is refused, nothing rewritten.
    before = (out / "sim_000001.yaml").read_bytes()
    assert main(["cases", "import", "opentumorboard", str(data), "--out", str(out)]) == 2
    assert (out / "sim_000001.yaml").read_bytes() == before


def test_cases_import_opentumorboard_refuses_a_bad_line_with_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "task2_test.jsonl").write_text("{}\n", encoding="utf-8")
    out = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "task2_test.jsonl:1: field 'video_dir' (or 'video_uid') must name the recording" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(("role", "category"), [("Moderator", "board_moderator"),
                                                ("Clinical Trial Specialist", "clinical_trials"),
                                                ("Nurse Navigator", "nurse_navigation")])
def test_a_turn_is_put_to_every_role_the_official_prompt_names(data: Path, tmp_path: Path, role: str,
                                                               category: str) -> None:
    out = tmp_path / "cases"
    assert main(["cases", "import", "opentumorboard", str(data), "--out", str(out)]) == 0
    case = load_case(out / "sim_000001.yaml")
    assert case.reference is not None
    question = case.reference.answers[0].question
    script = tmp_path / "turn.json"
    script.write_text(json.dumps({"model": "scripted-turn", "rules": [
        {"stage": "specialist_turn", "responses": [{"answer": "Screen her for the open trial first."}]}]}))
    runs = tmp_path / "runs"
    assert main(["turn", "--case", str(out / "sim_000001.yaml"), "--model", f"scripted:{script}", "--out",
                 str(runs), "--role", role, "--question", question]) == 0
    [path] = list(runs.glob("*/*.trace.json"))
    trace = json.loads(path.read_text())
    assert (trace["role"], trace["role_category"], trace["status"]) == (role, category, "completed")
    assert question in json.dumps(trace["calls"][0]["messages"])  # the recorded question, not a made-up one
