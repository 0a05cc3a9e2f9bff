"""The consilium graph end to end with the scripted backend; assertions on the written traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace

CASE = Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml"

ASSIGNMENT = {"primary": {"label": "Cardiologist", "justification": "troponin rise"},
              "supporting": [{"label": "Cardiac radiologist", "justification": "MRI"},
                             {"label": "Infectious disease specialist", "justification": "viral prodrome"}]}
STRUCTURED_OPINION = {"clinical_data": "troponin up", "syndromes": "myocardial injury",
                      "differential_diagnosis": "myocarditis vs ACS", "diagnostic_strategy": "cardiac MRI",
                      "management_strategy": "monitor", "final_conclusion": "OPINION-OF-{role}"}
REPORT = {"final_opinion": "myocarditis", "summary": "viral prodrome, troponin rise", "final_differential": "ACS",
          "diagnostic_plan": "MRI", "management_plan": "monitor", "safety_warnings": "arrhythmia"}
ACCEPT = {"vote": "accept", "reason": "agree", "requested_change": None}
DISSENT = {"vote": "dissent", "reason": "MRI timing missing", "requested_change": "MRI within 48 h"}


def write_script(tmp_path: Path, *, votes: list[dict[str, Any]], changed: bool = True,
                 same_text: bool = False) -> str:
    """A scripted panel: ``votes`` are rules for the vote stage, tried before 'accept'."""
    revised = "Report: myocarditis." if same_text else "Report revised in round {round}: MRI within 48 h."
    structured_revised = dict(REPORT, diagnostic_plan=REPORT["diagnostic_plan"] if same_text else
                              "MRI within 48 h (round {round})")
    script = {"model": "scripted-panel", "rules": [
        {"stage": "role_assignment", "json": ASSIGNMENT},
        {"stage": "opinion", "contains": '"final_conclusion"', "json": STRUCTURED_OPINION},
        {"stage": "opinion", "response": "OPINION-OF-{role}: likely myocarditis."},
        {"stage": "synthesis", "contains": '"final_opinion"', "json": REPORT},
        {"stage": "synthesis", "response": "Report: myocarditis."},
        *({"stage": "vote", **v} for v in votes),
        {"stage": "vote", "json": ACCEPT},
        {"stage": "revision", "contains": '"final_opinion": "..."',
         "json": {"changed": changed, "change_summary": "added MRI timing", "report": structured_revised}},
        {"stage": "revision", "json": {"changed": changed, "change_summary": "added MRI timing",
                                       "report": "  Report:\n myocarditis. " if same_text else revised}},
    ]}
    path = tmp_path / "panel.json"
    path.write_text(json.dumps(script))
    return f"scripted:{path}"


def simulate(tmp_path: Path, model: str, *extra: str) -> list[Trace]:
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", model, "--out", str(out), *extra]) == 0
    [run_dir] = list(out.iterdir())
    assert (run_dir / "manifest.json").is_file()
    return [read_trace(p) for p in sorted(run_dir.glob("*.trace.json"))]


def assert_replays_identically(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted((tmp_path / "runs").glob("*/*.trace.json"))
    capsys.readouterr()
    assert main(["replay", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert out.count(": identical (") == len(paths) and "0 model calls" in out


def test_consensus_in_round_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = simulate(tmp_path, write_script(tmp_path, votes=[]))
    assert [t.format for t in traces] == ["free-form", "structured"]
    for trace in traces:
        assert trace.status == "completed" and trace.stop_reason == "consensus"
        assert [r.dissent_fraction for r in trace.rounds] == [0.0]
        assert len(trace.reports) == 1 and trace.final_report == trace.reports[0]
        assert [(r.label, r.category, r.primary) for r in trace.roles] == [
            ("Cardiologist", "cardiology", True), ("Cardiac radiologist", "radiology", False),
            ("Infectious disease specialist", "infectious_diseases", False)]
    assert traces[1].final_report and traces[1].final_report.sections == REPORT
    assert_replays_identically(tmp_path, capsys)


def test_dissent_revision_then_consensus_in_round_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    votes = [{"round": 1, "role": "cardiac-radiologist", "json": DISSENT}]
    for trace in simulate(tmp_path, write_script(tmp_path, votes=votes)):
        assert trace.stop_reason == "consensus"
        assert [round(r.dissent_fraction, 3) for r in trace.rounds] == [0.333, 0.0]
        assert [r.version for r in trace.reports] == [1, 2]
        assert trace.reports[1].round == 1 and trace.reports[1].change_summary == "added MRI timing"
        assert trace.rounds[1].report_version == 2
        dissent = trace.rounds[0].votes[1]
        assert (dissent.role, dissent.vote, dissent.requested_change) == ("cardiac-radiologist", "dissent",
                                                                          "MRI within 48 h")
        revision_prompt = next(c for c in trace.calls if c.stage == "revision").messages[-1].content
        assert "Cardiac radiologist: MRI timing missing Requested change: MRI within 48 h" in revision_prompt
    assert_replays_identically(tmp_path, capsys)


@pytest.mark.parametrize("same_text", [False, True], ids=["changed-false", "identical-text"])
def test_no_change_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str], same_text: bool) -> None:
    votes = [{"role": "cardiologist", "json": DISSENT}]
    for trace in simulate(tmp_path, write_script(tmp_path, votes=votes, changed=same_text,
                                                 same_text=same_text)):
        assert trace.stop_reason == "no_change"
        assert len(trace.rounds) == 1 and len(trace.reports) == 1
        assert [c.stage for c in trace.calls].count("revision") == 1
    assert_replays_identically(tmp_path, capsys)


def test_round_limit_at_five(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    votes = [{"role": "infectious-disease-specialist", "json": DISSENT}]
    for trace in simulate(tmp_path, write_script(tmp_path, votes=votes)):
        assert trace.stop_reason == "round_limit"
        assert [r.round for r in trace.rounds] == [1, 2, 3, 4, 5]
        assert [r.version for r in trace.reports] == [1, 2, 3, 4, 5]
        assert all(r.dissent_fraction == pytest.approx(1 / 3) for r in trace.rounds)
        assert [c.stage for c in trace.calls].count("revision") == 4
    assert_replays_identically(tmp_path, capsys)


def test_max_rounds_flag_sets_the_limit(tmp_path: Path) -> None:
    votes = [{"role": "cardiologist", "json": DISSENT}]
    [trace] = simulate(tmp_path, write_script(tmp_path, votes=votes), "--format", "free-form", "--max-rounds", "2")
    assert trace.stop_reason == "round_limit" and len(trace.rounds) == 2


def test_opinions_are_isolated(tmp_path: Path) -> None:
    for trace in simulate(tmp_path, write_script(tmp_path, votes=[])):
        opinion_calls = [c for c in trace.calls if c.stage == "opinion"]
        assert sorted(c.role or "" for c in opinion_calls) == sorted(r.id for r in trace.roles)
        for call in opinion_calls:
            prompt = "\n".join(m.content for m in call.messages)
            assert "OPINION-OF-" not in prompt
        synthesis = next(c for c in trace.calls if c.stage == "synthesis")
        for role in trace.roles:
            assert f"OPINION-OF-{role.id}" in synthesis.messages[-1].content


def test_one_role_assignment_shared_by_both_formats(tmp_path: Path) -> None:
    free, structured = simulate(tmp_path, write_script(tmp_path, votes=[]))
    assert free.roles == structured.roles
    assert (free.role_assignment_shared, structured.role_assignment_shared) == (False, True)
    [a] = [c for c in free.calls if c.stage == "role_assignment"]
    [b] = [c for c in structured.calls if c.stage == "role_assignment"]
    assert a.request_hash == b.request_hash and a.response == b.response and a.started_at == b.started_at


def test_usage_by_stage_sums_to_total_and_case_prefix_is_shared(tmp_path: Path) -> None:
    for trace in simulate(tmp_path, write_script(tmp_path, votes=[{"round": 1, "json": DISSENT}])):
        stages = trace.usage.by_stage
        assert set(stages) == {"role_assignment", "opinion", "synthesis", "vote", "revision"}
        for field in ("input_tokens", "output_tokens", "calls"):
            assert sum(getattr(u, field) for u in stages.values()) == getattr(trace.usage.total, field)
        assert trace.usage.total.calls == len(trace.calls)
        # Every call starts with the same system preamble and the same case block (prefix caching).
        case_block = trace.calls[0].messages[1].content.split("\n\nTASK\n")[0]
        assert all(c.messages[0] == trace.calls[0].messages[0] for c in trace.calls)
        assert all(c.messages[1].content.startswith(case_block + "\n\nTASK\n") for c in trace.calls)
        # Within a stage the role comes last: the calls of a stage and round differ only from the
        # paragraph that names the role on.
        for stage in ("opinion", "vote"):
            for rnd in {c.round for c in trace.calls if c.stage == stage}:
                texts = [c.messages[1].content for c in trace.calls if c.stage == stage and c.round == rnd]
                assert len(texts) == 3
                shared = texts[0][:next(i for i, chars in enumerate(zip(*texts, strict=False))
                                        if len(set(chars)) > 1)]
                assert shared.endswith("\n\nYou are the ") and all(len(t) - len(shared) < 200 for t in texts)


def test_replay_reports_the_first_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    simulate(tmp_path, write_script(tmp_path, votes=[{"round": 1, "role": "cardiologist", "json": DISSENT}]),
             "--format", "free-form")
    [path] = list((tmp_path / "runs").glob("*/*.trace.json"))
    data = json.loads(path.read_text())
    data["rounds"][0]["votes"][0]["vote"] = "accept"
    tampered = tmp_path / "tampered.trace.json"
    tampered.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["replay", str(tampered)]) == 1
    assert "rounds[0].votes[0].vote: recorded 'accept', replayed 'dissent'" in capsys.readouterr().out
    data["calls"][3]["response"] = "A different opinion."
    tampered.write_text(json.dumps(data))
    assert main(["replay", str(tampered)]) == 1
    # A changed opinion changes what the moderator is asked: replay stops at that call.
    assert "different: stage=synthesis role=moderator" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["--case", "missing.yaml"], "missing.yaml"),
    (["--case", str(CASE), "--max-rounds", "0"], "expected a positive integer"),
    (["--case", str(CASE), "--min-roles", "5", "--max-roles", "3"], "min_roles (5) exceeds max_roles (3)"),
    (["--case", str(CASE), "--format", "prose"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], expected: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--model", "scripted:none.yaml", "--out", str(tmp_path / "runs"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_invalid_model_output_is_recorded_as_a_failed_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"rules": [{"stage": "role_assignment", "json": ASSIGNMENT}], "default": "rambling"}))
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{path}", "--out", str(out),
                 "--format", "structured"]) == 1
    [trace_file] = list(out.glob("*/*.trace.json"))
    trace = read_trace(trace_file)
    assert trace.status == "failed" and trace.final_report is None
    assert trace.error and "invalid StructuredOpinion output after 3 attempts" in trace.error
    assert main(["replay", str(trace_file)]) == 0


def test_trace_schema_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "trace"]) == 0
    schema = json.loads(capsys.readouterr().out)
    for field in ("schema_version", "run_id", "case_id", "format", "model", "roles", "opinions", "reports",
                  "rounds", "stop_reason", "final_report", "usage", "calls"):
        assert field in schema["properties"]


def test_token_budget_stops_the_run_before_the_call_that_would_exceed_it(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    model = write_script(tmp_path, votes=[])
    assert main(["simulate", "--case", str(CASE), "--model", model, "--out", str(out), "--format", "free-form",
                 "--max-tokens", "100", "--budget-tokens", "2500"]) == 1
    [trace] = [read_trace(p) for p in out.glob("*/*.trace.json")]
    assert trace.status == "failed" and trace.error and trace.error.startswith("BudgetExceededError: token budget")
    assert trace.usage.total.total_tokens <= 2500
    assert trace.calls and all(c.stage in ("role_assignment", "opinion", "synthesis", "vote") for c in trace.calls)


def test_config_files_set_run_settings_and_flags_override_them(tmp_path: Path) -> None:
    configs = Path(__file__).resolve().parents[2] / "configs"
    model = write_script(tmp_path, votes=[{"role": "cardiologist", "json": DISSENT}])
    [trace] = simulate(tmp_path / "a", model, "--format", "free-form", "--config", str(configs / "embedded-quick.yaml"))
    assert trace.stop_reason == "round_limit" and len(trace.rounds) == 2
    # embedded-quick sets opinion_budget_chars 1000: its opinion calls get that budget's 528 tokens.
    assert trace.config["max_tokens"]["opinion"] == 528 and trace.config["max_roles"] == 3
    [trace] = simulate(tmp_path / "b", model, "--format", "free-form", "--config",
                       str(configs / "embedded-quick.yaml"), "--max-rounds", "3", "--max-tokens", "300")
    assert len(trace.rounds) == 3 and set(trace.config["max_tokens"].values()) == {300}
    for name in ("consilium.yaml",):
        [trace] = simulate(tmp_path / name, model, "--format", "free-form", "--config", str(configs / name))
        assert trace.config["max_rounds"] == 5


def test_a_bad_config_file_names_the_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_rounds: 0\n")
    assert main(["simulate", "--case", str(CASE), "--config", str(bad), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("bad.yaml: max_rounds: Input should be greater than or equal to 1")
    bad.write_text("max_round: 3\n")
    assert main(["simulate", "--case", str(CASE), "--config", str(bad), "--out", str(tmp_path / "runs")]) == 2
    assert "bad.yaml: max_round: Extra inputs are not permitted" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_run_past_its_wall_clock_limit_is_recorded_as_failed(tmp_path: Path) -> None:
    script = json.loads(Path(write_script(tmp_path, votes=[]).removeprefix("scripted:")).read_text())
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({**script, "latency_ms": 150}))
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{slow}", "--out", str(out),
                 "--format", "free-form", "--wall-limit", "0.4"]) == 1
    [trace] = [read_trace(p) for p in out.glob("*/*.trace.json")]
    assert trace.status == "failed" and trace.error == ("WallClockLimit: the run exceeded its wall-clock limit "
                                                        "of 0.4 s")
    assert trace.failed_stage in ("opinion", "synthesis") and trace.wall_s < 2


@pytest.mark.localhost
def test_an_api_key_never_reaches_traces_logs_or_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = "sk-SENTINEL-7f3a9c"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    log = tmp_path / "log.jsonl"
    out = tmp_path / "runs"
    assert main(["--verbose", "--log-file", str(log), "simulate", "--case", str(CASE), "--model",
                 write_script(tmp_path, votes=[]), "--out", str(out), "--format", "free-form"]) == 0
    # An OpenAI backend built with the key, then a refused connection: the error must not echo it.
    assert main(["--verbose", "--log-file", str(log), "models", "check", "--model", "openai:gpt-x", "--base-url",
                 "http://127.0.0.1:9/v1", "--timeout", "1", "--max-tokens", "4"]) == 1
    [run_dir] = list(out.iterdir())
    assert main(["view", str(run_dir)]) == 0
    for path in [log, *run_dir.rglob("*")]:
        if path.is_file():
            assert sentinel not in path.read_text(errors="replace"), path


def test_the_shipped_scripted_panel_runs_a_consilium_without_a_model(tmp_path: Path) -> None:
    """examples/models/scripted-panel.yaml, as the README offers it: one dissent, one revision, consensus."""
    panel = Path(__file__).resolve().parents[2] / "examples" / "models" / "scripted-panel.yaml"
    for trace in simulate(tmp_path, f"scripted:{panel}"):
        assert trace.status == "completed" and trace.stop_reason == "consensus"
        assert [r.label for r in trace.roles] == ["Internist", "Neurologist", "Radiologist"]
        assert [r.dissent_fraction for r in trace.rounds] == [pytest.approx(1 / 3, abs=1e-6), 0.0]
        assert len(trace.reports) == 2
