"""A cohort keeps its four-decision scope protocol: ``--scope`` is written to the
manifest, a resumed cohort judges under it without being told again, and a different ``--scope`` on
resume is refused like any other changed setting (opentumorboard.txt App. E.2 L194: the training and
evaluation protocols must not mix within one set of results)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from consilium.cli import main
from consilium.judges.record import Judgement

ROOT = Path(__file__).resolve().parents[2]
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"  # its reference leaves clinical_trial null
BOARD = {"model": "scripted-board", "rules": [
    {"stage": "board_turn", "role": "board", "response": (
        "<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>\n"
        "<conclusion>Lobectomy after staging. Adjuvant chemotherapy then osimertinib.</conclusion>")}]}
JUDGE = {"model": "scripted-judge", "rules": [{"stage": "judge", "json": {
    "therapy": 4, "surgery": 5, "next_action": 3, "clinical_trial": 2, "rationale": "r"}}]}


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


def cohort(tmp_path: Path, *extra: str) -> int:
    return main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(tmp_path / "cases"),
                 "--model", write(tmp_path / "board.json", BOARD), "--judge", "otb-four-decision",
                 "--judge-model", write(tmp_path / "judge.json", JUDGE), *extra])


def judgement(run_dir: Path) -> Judgement:
    [path] = list(run_dir.rglob("*.judge.otb-four-decision.json"))
    return Judgement.model_validate_json(path.read_text())


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "nsclc.yaml").write_text(yaml.safe_dump(yaml.safe_load(NSCLC.read_text())))
    assert cohort(tmp_path, "--scope", "judge", "--out", str(tmp_path / "runs")) == 0
    [found] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    return found


def test_the_scope_is_kept_in_the_manifest_and_used_on_resume(tmp_path: Path, run_dir: Path) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["judge_scope"] == "judge"
    first = judgement(run_dir)
    # judge protocol: the trial the reference leaves undecided still enters the mean with its weight 2.00
    assert first.aggregates["conclusion"]["scope"] == "judge"
    assert first.aggregates["conclusion"]["in_scope"] == ["clinical_trial", "next_action", "surgery", "therapy"]
    for path in run_dir.rglob("*.json"):
        if path.name != "manifest.json":
            path.unlink()  # the arm and its judgement are run again on resume
    (run_dir / "arms.jsonl").unlink(missing_ok=True)
    assert cohort(tmp_path, "--resume", str(run_dir)) == 0
    again = judgement(run_dir)
    # without --scope the resumed cohort keeps "judge"; the case's default would be "frozen"
    assert again.aggregates["conclusion"]["scope"] == "judge"
    assert again.aggregates["conclusion"]["weighted_mean"] == pytest.approx(
        (1.00 * 4 / 5 + 1.25 * 5 / 5 + 1.15 * 3 / 5 + 2.00 * 2 / 5) / 5.40)


def test_another_scope_on_resume_is_refused(tmp_path: Path, run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != "consilium.log.jsonl"}
    capsys.readouterr()
    assert cohort(tmp_path, "--resume", str(run_dir), "--scope", "frozen") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("consilium: error: --scope: 'frozen' differs from the resumed cohort's 'judge'")
    assert {p: p.read_bytes() for p in before} == before
