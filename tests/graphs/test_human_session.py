"""``simulate --human`` (docs/human.md): the session a paused run saves keeps absolute paths and a resume
refuses changed flags; a wall limit is refused with a person at the table; the answers file's content is
checked when it is loaded, and a refusal at the length budget says how to resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
ANSWERS = ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"


def _paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A run with the Cardiologist at the table, paused at the free-form round-2 vote, started from
    ``tmp_path`` with relative paths."""
    partial = yaml.safe_load(ANSWERS.read_text(encoding="utf-8"))
    del partial["free-form"]["votes"][2]
    (tmp_path / "partial.yaml").write_text(yaml.safe_dump(partial), encoding="utf-8")
    (tmp_path / "panel.yaml").write_text(PANEL.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "case.yaml").write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--case", "case.yaml", "--model", "scripted:panel.yaml", "--out", "runs",
                 "--human", "Cardiologist", "--answers", "partial.yaml"]) == 2
    capsys.readouterr()
    (folder,) = (tmp_path / "runs").iterdir()
    return folder.resolve()


def test_the_session_keeps_absolute_paths_and_resume_refuses_changed_flags(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _paused(tmp_path, monkeypatch, capsys)
    saved = json.loads((folder / "human" / "session.json").read_text(encoding="utf-8"))["args"]
    assert saved["answers"] == str(tmp_path.resolve() / "partial.yaml")
    assert saved["case"] == str(tmp_path.resolve() / "case.yaml")
    assert saved["model"] == f"scripted:{tmp_path.resolve() / 'panel.yaml'}"
    for flags, named in ((["--max-rounds", "2"], "--max-rounds"), (["--format", "free-form"], "--formats"),
                         (["--model", f"scripted:{PANEL}"], "--model"), (["--seed", "7"], "--seed")):
        assert main(["simulate", "--resume", str(folder), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"consilium: error: {named}: --resume"), err
    # The same settings again, the model as typed from the same folder, are not a change; nor is -v.
    monkeypatch.chdir(tmp_path / "runs")  # from another folder: the session's absolute paths still hold
    assert main(["simulate", "--resume", str(folder), "--model", f"scripted:{tmp_path / 'panel.yaml'}", "-v",
                 "--answers", str(ANSWERS)]) == 0
    assert len(list(folder.glob("*.trace.json"))) == 2
    manifest = {p: p.read_bytes() for p in folder.glob("*.json")}
    capsys.readouterr()
    assert main(["simulate", "--resume", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already finished" in err
    assert {p: p.read_bytes() for p in folder.glob("*.json")} == manifest


def test_wall_limit_is_refused_with_a_person_at_the_table(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / "runs"),
                 "--human", "Cardiologist", "--answers", str(ANSWERS), "--wall-limit", "60"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("consilium: error: --wall-limit:")
    assert not (tmp_path / "runs").exists()


def test_answers_content_is_checked_at_load_and_a_budget_refusal_says_how_to_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def simulate(answers: str, out: str) -> str:
        (tmp_path / f"{out}.yaml").write_text(answers, encoding="utf-8")
        assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / out),
                     "--human", "Cardiologist", "--answers", str(tmp_path / f"{out}.yaml")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        return err

    # A vote for round 5 (never reached) with an over-long reason, and an empty opinion: refused before the run.
    err = simulate(yaml.safe_dump({"free-form": {"votes": {5: {"vote": "accept", "reason": "x" * 401}}}}), "long")
    assert "long.yaml: free-form.votes.5.reason:" in err and not (tmp_path / "long").exists()
    err = simulate(yaml.safe_dump({"free-form": {"opinion": "  "}}), "empty")
    assert "empty.yaml: free-form.opinion: give the opinion as text" in err and not (tmp_path / "empty").exists()
    err = simulate("free-form:\n  votes:\n    1: {vote: yes, reason: fine}\n", "yes")
    assert "yes.yaml: free-form.votes.1.vote: accept or dissent, not yes" in err and "write accept or dissent" in err
    # Over the run's length budget: found at the prompt; the run waits there and the message says how to go on.
    err = simulate(yaml.safe_dump({"free-form": {"opinion": "x" * 4801}}), "budget")
    (folder,) = (tmp_path / "budget").iterdir()
    assert "over its length budget of 4800" in err and f"resume it with `consilium simulate --resume {folder}`" in err
    assert main(["simulate", "--resume", str(folder), "--answers", str(ANSWERS)]) == 0
    assert len(list(folder.glob("*.trace.json"))) == 2


def test_a_format_stopped_before_its_first_checkpoint_resumes_from_the_shared_panel_and_replays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The free-form opinion is refused at its prompt (over budget) while the structured thread has been given the
    shared panel but holds no checkpoint yet: its calls file holds only the role assignment, which the resume
    restores (answered as made, not made again) instead of refusing the run as a lost checkpoint."""
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"free-form": {"opinion": "x" * 4801}}), encoding="utf-8")
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / "o"),
                 "--human", "Cardiologist", "--answers", str(tmp_path / "b.yaml")]) == 2
    (folder,) = (tmp_path / "o").iterdir()
    calls = json.loads((folder / "human" / "structured.calls.json").read_text())
    assert [c["stage"] for c in calls] == ["role_assignment"]
    assert main(["simulate", "--resume", str(folder), "--answers", str(ANSWERS)]) == 0
    capsys.readouterr()
    assert main(["replay", str(folder)]) == 0
    assert "2 traces: 2 identical, 0 different" in capsys.readouterr().out
