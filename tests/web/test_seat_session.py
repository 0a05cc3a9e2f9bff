"""The library under the studio's seat (consilium/cohort/seated.py, seated_session.py): a paused run's saved session
gives back the settings it was started with, its resume runs with them under the folder's lock and writes its
traces as simulate does, and the seated runs under a served folder are found."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from support.scripts import Scripted

from consilium.cli import main
from consilium.cohort.lock import RunLock
from consilium.cohort.seated import SeatedSettings
from consilium.cohort.seated_session import SESSION, read_session, resume, seated_runs, session_path, waiting
from consilium.errors import UserError
from consilium.graphs.consilium.answers import MappingAnswers
from consilium.graphs.registry import get_protocol

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
VOTE = {"vote": "accept", "reason": "I can sign it."}


@pytest.fixture
def paused(tmp_path: Path) -> Path:
    """A free-form run started with settings of every kind (flags, a --config file), paused at the round-1 vote."""
    spec = (Scripted("session-panel").roles("Internist", "Neurologist", "Radiologist").opinion("opinion of {role}")
            .synthesis("Report v1.").accept()).write(tmp_path / "panel.json")
    (tmp_path / "config.yaml").write_text("max_roles: 4\n", encoding="utf-8")
    (tmp_path / "answers.yaml").write_text(yaml.safe_dump({"free-form": {"opinion": "Myocarditis."}}),
                                           encoding="utf-8")
    assert main(["simulate", "--case", str(CASE), "--model", spec, "--format", "free-form", "--out",
                 str(tmp_path / "runs"), "--max-rounds", "2", "--seed", "7", "--temperature", "0.25",
                 "--concurrency", "2", "--config", str(tmp_path / "config.yaml"), "--human", "Cardiologist",
                 "--answers", str(tmp_path / "answers.yaml")]) == 2
    [folder] = (tmp_path / "runs").iterdir()
    return folder


def test_a_saved_session_gives_back_the_settings_the_run_was_started_with(paused: Path) -> None:
    args, case = read_session(session_path(paused))
    settings = SeatedSettings.of(args)
    assert case.id == "diagnostic-myocarditis"
    assert (settings.human, settings.formats, settings.answers) == ("Cardiologist", ["free-form"],
                                                                    paused.parent.parent / "answers.yaml")
    config = settings.run_config(get_protocol("consilium"))
    # The flags typed, the config file's setting, and the role labels a scripted moderator defaults to.
    assert (config.max_rounds, config.seed, config.temperature, config.max_roles) == (2, 7, 0.25, 4)
    assert config.role_labels == "free"
    assert settings.options().max_concurrency == 2
    [prompt] = asyncio.run(waiting(paused, settings.formats))["free-form"]
    assert (prompt.stage, prompt.round, prompt.report_text) == ("vote", 1, "Report v1.")


def test_the_library_resume_runs_with_the_runs_settings_under_its_lock_and_writes_its_traces(paused: Path) -> None:
    answers = MappingAnswers({"free-form": {"votes": {1: VOTE}}}, "given", name="file")
    with RunLock(paused), pytest.raises(UserError, match="in use by this run or a resume of it"):
        asyncio.run(resume(paused, answers, command=["test"]))
    done = asyncio.run(resume(paused, answers, command=["test", str(paused)]))
    assert done.paused == [] and [p.name for p in done.traces] == ["diagnostic-myocarditis.free-form.trace.json"]
    trace = json.loads(done.traces[0].read_text(encoding="utf-8"))
    assert (trace["config"]["max_rounds"], trace["config"]["seed"], trace["config"]["temperature"]) == (2, 7, 0.25)
    assert [(i["stage"], i["round"], i["source"]) for i in trace["human"]["inputs"]] == [
        ("opinion", None, "file"), ("vote", 1, "file")]
    manifest = json.loads((paused / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["command"] == ["test", str(paused)] and manifest["traces"] == [done.traces[0].name]
    with pytest.raises(UserError, match="already finished"):
        asyncio.run(resume(paused, answers, command=["test"]))


def test_seated_runs_are_found_at_and_up_to_two_levels_under_a_folder(tmp_path: Path) -> None:
    for place in (".", "a", "a/b", "a/b/c", "d"):
        (tmp_path / place / "human").mkdir(parents=True, exist_ok=True)
    for place in (".", "a", "a/b", "a/b/c"):  # d has a human/ folder but no session
        (tmp_path / place / "human" / SESSION).write_text("{}", encoding="utf-8")
    assert seated_runs(tmp_path) == [tmp_path, tmp_path / "a", tmp_path / "a" / "b"]
