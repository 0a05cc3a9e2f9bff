"""``--role-labels``: catalogue labels are an enum of the role catalogue's names in the
role-assignment schema, free labels are free text; the default follows the moderator's model; every new trace
records the value, and a trace recorded before the setting reads, and replays, as free."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consilium import aio
from consilium.agents import moderator
from consilium.agents.labels import default_role_labels
from consilium.agents.schemas import RoleLabels
from consilium.cli import build_parser, main
from consilium.cli.cohort_study import study_from_args
from consilium.cli.simulate_run import config_of as _config
from consilium.cohort.plan import new_plan
from consilium.graphs.consilium.config import ConsiliumConfig, ConsiliumRecord
from consilium.graphs.registry import get_protocol, read_trace
from consilium.models import CallRecorder, GenerationSettings, ModelRequest, for_run
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.usage import UsageLedger
from consilium.roles.catalogue import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
FIXTURE = ROOT / "tests" / "fixtures" / "v1.3" / "diagnostic-myocarditis.structured.trace.json"
NAMES = [c.name for c in load_catalogue().categories if c.id != "other"]

ASSIGNMENT = {"primary": {"label": "Cardiology", "justification": "x"}, "supporting": [
    {"label": "Internal Medicine", "justification": "y"}, {"label": "Radiology", "justification": "z"}]}
PANEL: dict[str, Any] = {"model": "scripted-panel", "rules": [
    {"stage": "role_assignment", "json": ASSIGNMENT},
    {"stage": "opinion", "response": "Opinion of {role}."},
    {"stage": "synthesis", "response": "Report: A."},
    {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}},
]}


def _label_schema(request: ModelRequest) -> dict[str, Any]:
    assert request.output_schema is not None and request.output_schema.json_schema is not None
    label: dict[str, Any] = request.output_schema.json_schema["$defs"]["RoleProposal"]["properties"]["label"]
    return label


def _assign(role_labels: RoleLabels) -> list[ModelRequest]:
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> Any:
        seen.append(request)
        return ASSIGNMENT

    model = for_run(ScriptedModel(Script(), responder=responder), CallRecorder(UsageLedger(None)), max_repairs=0)
    roles = aio.run(moderator.assign_roles(model, "A case.", min_roles=3, max_roles=6, settings=GenerationSettings(),
                                           role_labels=role_labels))
    assert [r.label for r in roles] == ["Cardiology", "Internal Medicine", "Radiology"]
    return seen


def test_a_catalogue_assignment_sends_an_enum_of_the_catalogue_names() -> None:
    [request] = _assign("catalogue")
    label = _label_schema(request)
    assert label["enum"] == NAMES and "Other" not in label["enum"]


def test_a_free_assignment_sends_free_text_labels() -> None:
    [request] = _assign("free")
    label = _label_schema(request)
    assert "enum" not in label and label["type"] == "string" and label["maxLength"] == 80


def test_a_label_outside_the_catalogue_is_invalid_under_catalogue() -> None:
    [request] = _assign("catalogue")
    assert request.output_schema is not None
    with pytest.raises(Exception, match="Cardiologist"):
        request.output_schema.validate(json.dumps(dict(ASSIGNMENT, primary={"label": "Cardiologist",
                                                                             "justification": "x"})))


def _simulate(tmp_path: Path, *extra: str) -> list[Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "panel.json"
    script.write_text(json.dumps(PANEL))
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{script}", "--format", "free-form",
                 "--out", str(out), *extra]) == 0
    return sorted(out.glob("*/*.trace.json"))


@pytest.mark.parametrize("labels", ["catalogue", "free"])
def test_a_run_records_its_role_labels_and_replays_identically(tmp_path: Path, labels: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    [path] = _simulate(tmp_path, "--role-labels", labels)
    recorded = json.loads(path.read_text())["config"]
    assert recorded["role_labels"] == labels
    assert read_trace(path).config["role_labels"] == labels
    capsys.readouterr()
    assert main(["replay", str(path)]) == 0
    assert "identical" in capsys.readouterr().out


def test_the_two_settings_ask_different_role_assignments(tmp_path: Path) -> None:
    hashes = {}
    for labels in ("catalogue", "free"):
        [path] = _simulate(tmp_path / labels, "--role-labels", labels)
        [call] = [c for c in read_trace(path).calls if c.stage == "role_assignment"]
        hashes[labels] = call.request_hash
    assert hashes["catalogue"] != hashes["free"]


def test_a_config_file_sets_role_labels_and_the_flag_overrides_it(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("role_labels: catalogue\n")
    [path] = _simulate(tmp_path / "file", "--config", str(config))
    assert read_trace(path).config["role_labels"] == "catalogue"
    [path] = _simulate(tmp_path / "flag", "--config", str(config), "--role-labels", "free")
    assert read_trace(path).config["role_labels"] == "free"


def test_the_default_follows_the_moderators_model() -> None:
    assert default_role_labels("embedded") == "catalogue"
    assert default_role_labels("scripted:x.json") == "free"
    assert default_role_labels("openai:gpt-4o") == "free"
    assert default_role_labels("embedded", "openai:gpt-4o") == "free"  # a cohort's models share one setting
    protocol = get_protocol("consilium")

    def resolved(*argv: str) -> str:
        args = build_parser().parse_args(["simulate", "--case", str(CASE), *argv])
        return _config(args, protocol).role_labels

    assert resolved() == "catalogue"  # simulate's default model is the embedded one
    assert resolved("--model", "scripted:x.json") == "free"
    assert resolved("--model", "scripted:x.json", "--moderator-model", "embedded") == "catalogue"
    assert resolved("--model", "embedded", "--moderator-model", "scripted:x.json") == "free"
    assert resolved("--role-labels", "free") == "free"


def test_a_scripted_run_records_free_by_default(tmp_path: Path) -> None:
    [path] = _simulate(tmp_path)
    assert json.loads(path.read_text())["config"]["role_labels"] == "free"


def test_a_cohort_resolves_the_default_and_takes_the_flag(tmp_path: Path) -> None:
    def configs(*argv: str) -> set[str]:
        args = build_parser().parse_args(["cohort", "--cases", str(ROOT / "examples" / "cases"), "--protocol",
                                          "consilium,single", "--out", str(tmp_path), *argv])
        return {config.role_labels for config in new_plan(study_from_args(args)).configs.values()}

    assert configs("--model", "embedded") == {"catalogue"}
    assert configs("--model", "scripted:x.json") == {"free"}
    assert configs("--model", "embedded", "--role-labels", "free") == {"free"}


def test_a_trace_recorded_before_the_setting_reads_and_replays_as_free(capsys: pytest.CaptureFixture[str]) -> None:
    assert "role_labels" not in json.loads(FIXTURE.read_text())["config"]
    assert read_trace(FIXTURE).config["role_labels"] == "free"
    assert ConsiliumRecord.model_validate({}).role_labels == "free"
    assert ConsiliumConfig().role_labels == "free"  # a run not started by the CLI, which resolves the default
    assert main(["replay", str(FIXTURE)]) == 0
    assert "identical" in capsys.readouterr().out


BOARD: dict[str, Any] = {"model": "scripted-board", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Medical Oncology", "justification": "x"},
                                          "supporting": [{"label": "Radiology", "justification": "y"}]}},
    {"stage": "board_turn", "role": "moderator", "round": 1, "json": {
        "action": "ask", "speaker": "Radiology", "message": "Radiology, the staging?"}},
    {"stage": "board_turn", "role": "moderator", "round": 3, "json": {
        "action": "ask", "speaker": "Medical Oncology", "message": "Oncology, the plan?"}},
    {"stage": "board_turn", "role": "moderator", "json": {"action": "close", "speaker": "Radiology",
                                                         "message": "Thank you."}},
    {"stage": "board_turn", "response": "I agree with the plan."},
    {"stage": "conclusion", "json": {"conclusion": "The board advises surgery. Adjuvant therapy follows pathology."}},
]}


def test_a_board_meeting_takes_the_setting(tmp_path: Path) -> None:
    case = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
    script = tmp_path / "board.json"
    script.write_text(json.dumps(BOARD))
    for labels in ("catalogue", "free"):
        out = tmp_path / labels
        assert main(["board", "--case", str(case), "--model", f"scripted:{script}", "--role-labels", labels,
                     "--out", str(out)]) == 0
        [path] = sorted(out.glob("*/*.trace.json"))
        trace = read_trace(path)
        assert trace.config["role_labels"] == labels
        assert [r.label for r in trace.roles] == ["Medical Oncology", "Radiology"]  # type: ignore[attr-defined]
        assert main(["replay", str(path)]) == 0


def test_the_api_resolves_the_default_as_the_command_line_does(tmp_path: Path) -> None:
    """consilium.run takes role_labels from its config when set, else from the moderator's spec by the same rule
    as the CLI (agents/labels.py): a scripted spec is free, and so is a model object, whose spec is unknown."""
    import consilium

    script = tmp_path / "panel.json"
    script.write_text(json.dumps(PANEL))

    def labels(**kwargs: Any) -> str:
        [trace] = consilium.run(CASE, variants=["free-form"], **kwargs)
        return str(trace.config["role_labels"])

    assert labels(model=f"scripted:{script}") == "free"
    assert labels(model=f"scripted:{script}", config={"role_labels": "catalogue"}) == "catalogue"
    assert labels(model=ScriptedModel(Script.model_validate(PANEL))) == "free"
