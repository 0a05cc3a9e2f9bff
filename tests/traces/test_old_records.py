"""Old records: a trace of every released schema version reads through the one upgrade path
(consilium/traces/versions.py) as today's typed record; one that ran a mode this version no longer runs
(consilium/traces/retired.py) still reads, views and judges, and only its replay is refused, in one line naming
its file, its version and the mode (docs/traces.md, "Schema version").

The released versions are 1.0 to 1.9. Files written by releases are kept in tests/fixtures (1.0, 1.3, 1.5);
every version is also built here by taking a today's record back field by field, as each upgrade step's
docstring says the older version lacked, so that each step is read on its own."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from consilium.api import replay
from consilium.cases import load_case
from consilium.cli import main
from consilium.errors import UserError
from consilium.graphs.base import RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.run import run_board
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace, trace_from_data
from consilium.judges.record import read_judgement
from consilium.models import ModelOptions, build_model
from consilium.traces.retired import replay_refusal

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
BOARD_CASE = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
V1_0_CONSILIUM = FIXTURES / "v1.0" / "diagnostic-myocarditis.free-form.trace.json"
V1_0_BOARD = FIXTURES / "v1.0" / "tumor-board-nsclc.board-agents.trace.json"
V1_3_CONSILIUM = FIXTURES / "v1.3" / "diagnostic-myocarditis.structured.trace.json"
V1_3_SINGLE = FIXTURES / "v1.3" / "tumor-board-nsclc.board-single.trace.json"
V1_3_TURN = FIXTURES / "v1.3" / "tumor-board-nsclc.turn.trace.json"
V1_5_OPEN = FIXTURES / "v1.5" / "tumor-board-nsclc.board-agents-open.trace.json"
RELEASED = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9")


def refusal(path: Path, version: str, needs: str) -> str:
    """The one line replay answers for a trace that ran a retired mode (written out, not built by the code)."""
    return (f"replay: {path} was made with consilium trace schema {version} and {needs}, which this version no "
            f"longer replays; read it with view, report, judge, compare or export, which still work")


def spent_by_hand(data: dict[str, Any]) -> tuple[int, int, int]:
    """Input and output tokens of the calls a model answered, and the response-cache hits, from the raw file."""
    answered = [c for c in data["calls"] if not c.get("cached")]
    return (sum(c["usage"]["input_tokens"] for c in answered), sum(c["usage"]["output_tokens"] for c in answered),
            len(data["calls"]) - len(answered))


# --- the files releases wrote ---

def test_a_1_0_consilium_trace_reads_with_the_caps_it_ran_and_its_spending_counted_from_its_calls() -> None:
    raw = json.loads(V1_0_CONSILIUM.read_text())
    assert raw["schema_version"] == "1.0" and "lengths" not in raw["config"] and "spent" not in raw["usage"]
    trace = read_trace(V1_0_CONSILIUM)
    assert isinstance(trace, Trace) and trace.schema_version == "1.9" and trace.origin == (str(V1_0_CONSILIUM), "1.0")
    assert trace.model_spec is None and trace.status == "completed" and trace.format == "free-form"
    assert trace.config.lengths == "legacy" and trace.config.role_labels == "free"
    assert trace.config.max_tokens == {"role_assignment": 768, "opinion": 2048, "synthesis": 2048, "vote": 384,
                                       "revision": 2560}
    assert trace.usage.spent is not None
    assert (trace.usage.spent.input_tokens, trace.usage.spent.output_tokens, trace.usage.cache_hits) == \
        spent_by_hand(raw)
    judgement = read_judgement(FIXTURES / "v1.0" / "diagnostic-myocarditis.free-form.judge.ai-consilium.json")
    assert judgement.schema_version == "1.1" and judgement.items and judgement.case_id == "diagnostic-myocarditis"


def test_a_1_0_board_trace_reads_as_the_alternating_meeting_it_ran_under_the_first_checks() -> None:
    trace = read_trace(V1_0_BOARD)
    assert isinstance(trace, BoardTrace) and trace.origin == (str(V1_0_BOARD), "1.0") and trace.model_spec is None
    assert (trace.config.mode, trace.config.discussion, trace.config.floor_schema) == ("agents", "alternating",
                                                                                        "union")
    assert trace.validation is not None and trace.validation.rules == "1"
    assert trace.validation.repetition is None and trace.validation.repetition_penalty == 0.0
    assert all(t.floor is None and t.responds_to is None for t in trace.turns)
    assert trace.status == "completed" and trace.turns[0].role == "Moderator" and trace.stop_reason
    assert trace.conclusion


def test_the_1_3_records_read_with_todays_modes_and_the_1_5_open_floor_with_its_flat_schema() -> None:
    structured = read_trace(V1_3_CONSILIUM)
    assert isinstance(structured, Trace) and structured.origin[1] == "1.3"
    assert (structured.config.lengths, structured.config.role_labels, structured.format) == ("shared", "free",
                                                                                             "structured")
    single = read_trace(V1_3_SINGLE)
    # A single-mode meeting never had a floor: it reads as a new one of its kind records.
    assert isinstance(single, BoardTrace) and single.origin[1] == "1.3" and single.config.mode == "single"
    assert (single.config.discussion, single.config.floor_schema) == ("open", "union")
    assert single.validation is not None and single.validation.rules == "2"
    turn = read_trace(V1_3_TURN)
    assert isinstance(turn, TurnTrace) and turn.origin[1] == "1.3" and turn.answer
    # Before schema 1.9 a turn whose answer broke the schema failed: none was kept with a finding.
    assert turn.config.schema_failure == "fail" and turn.answer_schema_failure is None
    opened = read_trace(V1_5_OPEN)
    assert isinstance(opened, BoardTrace) and opened.origin[1] == "1.5"
    assert (opened.config.discussion, opened.config.floor_schema) == ("open", "flat")
    assert [(t.number, t.role, t.floor, t.responds_to) for t in opened.turns] == [
        (1, "Moderator", None, None), (2, "Radiologist", "asked", None), (3, "Thoracic surgeon", "passed", 2),
        (4, "Moderator", None, None), (5, "Medical oncologist", "asked", 3), (6, "Radiologist", "passed", 5),
        (7, "Moderator", None, None)]
    assert [c.error for c in opened.calls if c.error] == ["responds_to: turn 1 is the Moderator's; name a "
                                                          "specialist's turn, or null"]
    assert all(replay_refusal(t) is None for t in (structured, single, turn))


def test_a_1_0_trace_with_a_misspelt_stage_reads_without_it() -> None:
    # 1.0 ignored max_tokens entries for stages that do not exist; 1.1 refuses them in configs, and the
    # upgrade drops them from old traces, which is what the run did.
    data = json.loads(V1_0_CONSILIUM.read_text())
    data["config"]["max_tokens"]["opinon"] = 100
    assert "opinon" not in trace_from_data(data, "x.trace.json").config["max_tokens"]


# --- every version, built field by field ---

def downgrade(data: dict[str, Any], to: str) -> dict[str, Any]:
    """A today's record taken back to version ``to``: each step removes what that version did not have (the
    upgrade steps' docstrings, docs/traces.md's table)."""
    old = copy.deepcopy(data)
    config, board = old["config"], old["kind"] == "board"
    for version in reversed(RELEASED[RELEASED.index(to):-1]):
        if version == "1.8" and old["kind"] in ("board", "turn"):  # before a kept answer that broke the schema
            del config["schema_failure"]
            old.pop("answer_schema_failure", None)
        if version == "1.7" and old["kind"] in ("board", "turn"):  # before the user's own prompts
            del config["prompt_files"]
        if version == "1.6" and board:  # before the official format score: rules "2", no official fields
            for key in ("failure_reason", "official"):
                old["validation"].pop(key)
            old["validation"]["rules"] = "2"
            del config["cut_off"], config["preset"]
        if version == "1.5" and board:
            del config["floor_schema"]
        if version == "1.4":
            old.pop("human", None)
            for call in old["calls"]:
                call.pop("prices", None)
        if version == "1.3":
            config.pop("role_labels")
            for call in old["calls"]:
                call.pop("reasoning", None)
                call.pop("omitted_settings", None)
        if version == "1.2":
            del old["usage"]["spent"], old["usage"]["cache_hits"]
            if board:
                del config["discussion"]
                old.pop("moderator_images_sent", None)
                for turn in old["turns"]:
                    turn.pop("floor", None)
                    turn.pop("responds_to", None)
            else:
                del config["lengths"], config["opinion_budget_chars"], config["report_budget_chars"]
        if version == "1.1" and board:
            for key in ("rules", "repetition", "repetition_penalty"):
                old["validation"].pop(key, None)
        if version == "1.0":
            del old["model_spec"]
            for call in old["calls"]:
                call.pop("stage_limit", None)
    old["schema_version"] = to
    return old


@pytest.fixture(scope="module")
def today() -> dict[str, dict[str, Any]]:
    """A today's consilium record (the 1.3 structured fixture as read today) and a board meeting on the open
    floor run now with the shipped scripted panel, each as the JSON a 1.9 file holds."""
    consilium = read_trace(V1_3_CONSILIUM).model_dump(mode="json")
    panel = build_model(PANEL, ModelOptions(cache=False))
    meeting = asyncio.run(run_board(load_case(BOARD_CASE), "agents", RunModels(panel=panel, moderator=panel),
                                    BoardConfig(), run_id="today"))
    assert meeting.status == "completed" and meeting.config.discussion == "open"
    return {"consilium": consilium, "board": meeting.model_dump(mode="json")}


def same_run(read: Any, data: dict[str, Any]) -> None:
    """What no step touches is the record as it was: identity, case, outcome, every call and the total usage."""
    dumped = read.model_dump(mode="json")
    for key in ("run_id", "case_id", "case_hash", "case", "model", "status", "error", "started_at", "wall_s"):
        assert dumped[key] == data[key], key
    assert dumped["usage"]["total"] == data["usage"]["total"]
    assert [(c["index"], c["stage"], c["role"], c["request_hash"], c["response"]) for c in dumped["calls"]] == \
        [(c["index"], c["stage"], c["role"], c["request_hash"], c["response"]) for c in data["calls"]]
    assert dumped["config"]["max_tokens"] == data["config"]["max_tokens"]
    assert dumped["config"]["prompts"] == data["config"]["prompts"]


#: version → (lengths, model_spec kept, replay refused for)
CONSILIUM_EXPECTED = {"1.0": ("legacy", False, "lengths: legacy"), "1.1": ("legacy", True, "lengths: legacy"),
                      "1.2": ("legacy", True, "lengths: legacy"), "1.3": ("shared", True, None),
                      "1.4": ("shared", True, None), "1.5": ("shared", True, None), "1.6": ("shared", True, None),
                      "1.7": ("shared", True, None), "1.8": ("shared", True, None),
                      "1.9": ("shared", True, None)}


@pytest.mark.parametrize("version", RELEASED)
def test_a_consilium_trace_of_every_released_version_reads_as_the_same_record(
        today: dict[str, dict[str, Any]], version: str) -> None:
    data = today["consilium"]
    lengths, spec_kept, refused = CONSILIUM_EXPECTED[version]
    trace = trace_from_data(downgrade(data, version), f"v{version}.trace.json")
    assert isinstance(trace, Trace) and trace.schema_version == "1.9"
    assert trace.origin == (f"v{version}.trace.json", version)
    same_run(trace, data)
    assert [r.text for r in trace.reports] == [r["text"] for r in data["reports"]]
    assert [(v.role, v.vote) for r in trace.rounds for v in r.votes] == \
        [(v["role"], v["vote"]) for r in data["rounds"] for v in r["votes"]]
    assert trace.config.lengths == lengths and trace.config.role_labels == "free"
    assert trace.model_spec == (data["model_spec"] if spec_kept else None)
    # Spending: recorded from 1.3 on; before, counted from the calls (the same here: no call was a cache hit).
    assert trace.usage.spent is not None and trace.usage.cache_hits == 0
    assert (trace.usage.spent.input_tokens, trace.usage.spent.output_tokens) == spent_by_hand(data)[:2]
    assert replay_refusal(trace) == (refusal(Path(f"v{version}.trace.json"), version, refused) if refused else None)


#: version → (discussion, floor_schema, format rules, turns carry their floor, replay refused for)
BOARD_EXPECTED = {
    "1.0": ("alternating", "union", "1", False, "discussion: alternating and validation.rules: 1"),
    "1.1": ("alternating", "union", "1", False, "discussion: alternating and validation.rules: 1"),
    "1.2": ("alternating", "union", "2", False, "discussion: alternating"),
    "1.3": ("open", "flat", "2", True, "floor_schema: flat"),
    "1.4": ("open", "flat", "2", True, "floor_schema: flat"),
    "1.5": ("open", "flat", "2", True, "floor_schema: flat"),
    "1.6": ("open", "union", "2", True, None),
    "1.7": ("open", "union", "3", True, None),
    "1.8": ("open", "union", "3", True, None),
    "1.9": ("open", "union", "3", True, None),
}


@pytest.mark.parametrize("version", RELEASED)
def test_a_board_trace_of_every_released_version_reads_as_the_same_meeting(
        today: dict[str, dict[str, Any]], version: str) -> None:
    data = today["board"]
    discussion, floor_schema, rules, floors, refused = BOARD_EXPECTED[version]
    trace = trace_from_data(downgrade(data, version), f"v{version}.trace.json")
    assert isinstance(trace, BoardTrace) and trace.origin == (f"v{version}.trace.json", version)
    same_run(trace, data)
    assert (trace.transcript, trace.conclusion, trace.stop_reason) == (data["transcript"], data["conclusion"],
                                                                       data["stop_reason"])
    assert [(t.number, t.role, t.text) for t in trace.turns] == [(t["number"], t["role"], t["text"])
                                                                 for t in data["turns"]]
    assert [(t.floor, t.responds_to) for t in trace.turns] == (
        [(t["floor"], t["responds_to"]) for t in data["turns"]] if floors else [(None, None)] * len(data["turns"]))
    assert (trace.config.discussion, trace.config.floor_schema) == (discussion, floor_schema)
    assert trace.validation is not None and trace.validation.rules == rules
    assert trace.validation.checks == [type(trace.validation.checks[0]).model_validate(c)
                                       for c in data["validation"]["checks"]]
    assert replay_refusal(trace) == (refusal(Path(f"v{version}.trace.json"), version, refused) if refused else None)


# --- replay refused, reading kept ---

@pytest.mark.parametrize(("fixture", "version", "needs"), [
    (V1_0_CONSILIUM, "1.0", "lengths: legacy"),
    (V1_0_BOARD, "1.0", "discussion: alternating and validation.rules: 1"),
    (V1_5_OPEN, "1.5", "floor_schema: flat"),
])
def test_replaying_a_trace_that_ran_a_retired_mode_is_refused_in_one_line_and_it_still_views(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture: Path, version: str, needs: str) -> None:
    path = tmp_path / fixture.name
    shutil.copy(fixture, path)
    capsys.readouterr()
    assert main(["replay", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"consilium: error: {refusal(path, version, needs)}\n" and captured.out == ""
    with pytest.raises(UserError) as refused:
        replay(path)
    assert str(refused.value) == refusal(path, version, needs)
    # Nothing written beside it but the run log.
    assert {p.name for p in tmp_path.iterdir()} <= {fixture.name, "consilium.log.jsonl"}
    assert main(["view", str(path), "--out", str(tmp_path / "view.html")]) == 0
    html = (tmp_path / "view.html").read_text()
    assert f"<title>consilium: {fixture.name}</title>" in html and read_trace(path).case_id in html


@pytest.mark.parametrize(("config", "key", "value"), [
    (ConsiliumConfig, "lengths", "legacy"), (BoardConfig, "discussion", "alternating"),
    (BoardConfig, "floor_schema", "flat"),
])
def test_a_new_run_is_refused_a_retired_mode_naming_it(config: type[Any], key: str, value: str) -> None:
    with pytest.raises(Exception, match=rf"{key}\n  {value!r} \(.*\) is no longer run; older traces made with it "
                                        r"still read"):
        config.model_validate({key: value})


@pytest.mark.parametrize(("fixture", "key", "value"), [
    (V1_0_CONSILIUM, "lengths", "legacy"), (V1_0_BOARD, "discussion", "alternating"),
    (V1_5_OPEN, "floor_schema", "flat"),
])
def test_the_settings_of_a_retired_mode_are_refused_to_run_again(fixture: Path, key: str, value: str) -> None:
    """What every re-run of a record (replay, ablation) runs with is its config's run settings: a retired mode's
    are refused there in one line, whoever asks."""
    with pytest.raises(UserError, match=rf"^config\.{key}: {value!r} \(.*\) is no longer run; older traces made "
                                        r"with it still read$"):
        read_trace(fixture).config.run_settings()
    assert read_trace(V1_3_SINGLE).config.run_settings()["discussion"] == "open"


def test_the_board_command_refuses_the_alternating_discussion_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["board", "--case", str(BOARD_CASE), "--model", PANEL, "--discussion", "alternating",
                 "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "discussion: 'alternating' (the board's strict moderator-specialist " \
                                    "alternation) is no longer run" in err
    assert not (tmp_path / "runs").exists()


# The resume validates the manifest's configs without turning a ValidationError into a one-line UserError
# (consilium/cohort/plan_resume.py, resume_plan: "configs = {...model_validate(s.configs[name])...}"), so today the
# refusal is an internal error; strict, so that the fix shows here as an unexpected pass.
def test_a_board_cohort_started_before_the_floor_schema_was_recorded_is_refused_on_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cohort whose manifest and 1.5 traces predate ``floor_schema`` ran the flat moderator schema: its traces
    read as flat, and so does its manifest, which this version no longer runs; a resume would run its last arm
    under another schema than the others, so it is refused in one line naming the setting, nothing run."""
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("tumor-board-nsclc.yaml", "tumor-board-her2-breast.yaml"):
        shutil.copy(BOARD_CASE.parent / name, cases / name)
    assert main(["cohort", "--cases", str(cases), "--protocol", "board", "--model", PANEL,
                 "--out", str(tmp_path / "runs")]) == 0
    [run] = list((tmp_path / "runs").iterdir())
    # Made old: no floor_schema in the manifest's board config or the traces, traces at 1.5, and the HER2
    # meeting in agents mode not yet run (its trace and its row gone).
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["settings"]["configs"]["board"]["floor_schema"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    for path in run.glob("arms/*/*/*.trace.json"):
        trace = json.loads(path.read_text())
        del trace["config"]["floor_schema"]
        path.write_text(json.dumps({**trace, "schema_version": "1.5"}))
    [last] = run.glob("arms/*/*/tumor-board-her2-breast.board-agents.trace.json")
    last.unlink()
    rows = (run / "arms.jsonl").read_text().splitlines()
    kept = [row for row in rows if not ("tumor-board-her2-breast" in row and '"board-agents"' in row)]
    assert len(kept) == len(rows) - 1
    (run / "arms.jsonl").write_text("".join(f"{row}\n" for row in kept))
    finished = [read_trace(p) for p in run.glob("arms/*/*/*.board-agents.trace.json")]
    assert [t.config["floor_schema"] for t in finished] == ["flat"]
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "floor_schema: 'flat' (the board's open floor asked under one flat answer " \
                                    "object) is no longer run" in err
    assert not last.exists() and (run / "arms.jsonl").read_text().splitlines() == kept
