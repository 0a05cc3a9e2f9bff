"""One length budget per opinion and per report, shared by both formats.

ai-consilium.txt compares free-form and structured "clinical-reasoning conditions" (abstract; Table 7
reports each format's output tokens as a result): the room a format is given must not differ. The
consilium graph runs end to end with the scripted backend; the assertions read the traces' calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consilium.agents.schemas import OPINION_SECTIONS, REPORT_SECTIONS, opinion_schema, report_schema, revision_schema
from consilium.cli import main
from consilium.graphs.consilium.config import DEFAULT_BUDGET_CHARS, ConsiliumConfig, budget_max_tokens
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.models.wrappers.recording import CallRecord

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
BUDGETED = ("opinion", "synthesis", "revision")

ASSIGNMENT = {"primary": {"label": "Cardiologist", "justification": "troponin rise"},
              "supporting": [{"label": "Cardiac radiologist", "justification": "MRI"},
                             {"label": "Infectious disease specialist", "justification": "viral prodrome"}]}
OPINION = dict(zip(OPINION_SECTIONS, ["troponin up", "myocardial injury", "myocarditis vs ACS", "cardiac MRI",
                                      "monitor", "myocarditis"], strict=True))
REPORT = dict(zip(REPORT_SECTIONS, ["myocarditis", "viral prodrome", "ACS", "MRI", "monitor", "arrhythmia"],
                  strict=True))
DISSENT = {"vote": "dissent", "reason": "MRI timing missing", "requested_change": "MRI within 48 h"}
ACCEPT = {"vote": "accept", "reason": "agree", "requested_change": None}


def script(tmp_path: Path, *, opinion: list[Any] | None = None, report: list[Any] | None = None,
           revision: list[Any] | None = None, sopinion: list[Any] | None = None, sreport: list[Any] | None = None,
           srevision: list[Any] | None = None) -> str:
    """A panel that dissents once (so there is a revision). Each list answers the cardiologist's opinion,
    the synthesis or the revision of one format: its first answer first, its last one to every repair
    (a structured repair prompt no longer holds the format's marker, so it has its own rule)."""
    def structured(stage: str, name: str, marker: str, answers: list[Any], role: str | None = None) -> list[Any]:
        who = {"role": role} if role else {}
        return [{"stage": stage, **who, "contains": f"the {name} schema", "json": answers[-1]},
                {"stage": stage, **who, "contains": marker, "json": answers[0]}]

    rules: list[dict[str, Any]] = [
        {"stage": "role_assignment", "json": ASSIGNMENT},
        *structured("opinion", "StructuredOpinion", '"final_conclusion"', sopinion or [OPINION], "cardiologist"),
        {"stage": "opinion", "contains": '"final_conclusion"', "json": OPINION},
        {"stage": "opinion", "role": "cardiologist", "responses": opinion or ["Likely myocarditis."]},
        {"stage": "opinion", "response": "Likely myocarditis."},
        *structured("synthesis", "StructuredReport", '"final_opinion"', sreport or [REPORT]),
        {"stage": "synthesis", "responses": report or ["Report: myocarditis."]},
        {"stage": "vote", "round": 1, "role": "cardiologist", "json": DISSENT},
        {"stage": "vote", "json": ACCEPT},
        *structured("revision", "StructuredRevision", '"final_opinion": "..."', srevision or [
            {"changed": True, "change_summary": "MRI timing", "report": dict(REPORT, diagnostic_plan="MRI in 48 h")}]),
        {"stage": "revision", "responses": revision or [
            {"changed": True, "change_summary": "MRI timing", "report": "Report: myocarditis; MRI in 48 h."}]},
    ]
    path = tmp_path / "panel.json"
    path.write_text(json.dumps({"model": "scripted-panel", "rules": rules}))
    return f"scripted:{path}"


def simulate(tmp_path: Path, model: str, config: str | None = None, expect: int = 0) -> dict[str, Trace]:
    out = tmp_path / "runs"
    argv = ["simulate", "--case", str(CASE), "--model", model, "--out", str(out)]
    if config is not None:
        (tmp_path / "run.yaml").write_text(config)
        argv += ["--config", str(tmp_path / "run.yaml")]
    assert main(argv) == expect
    traces = [read_trace(p) for p in sorted(out.glob("*/*.trace.json"))]
    return {t.format: t for t in traces}


def calls(trace: Trace, stage: str, role: str | None = None) -> list[CallRecord]:
    return [c for c in trace.calls if c.stage == stage and (role is None or c.role == role)]


def test_every_opinion_and_report_call_has_the_same_max_tokens_in_both_formats(tmp_path: Path) -> None:
    traces = simulate(tmp_path, script(tmp_path))
    assert set(traces) == {"free-form", "structured"}
    for stage in BUDGETED:
        sent = {fmt: {c.settings.max_tokens for c in calls(t, stage)} for fmt, t in traces.items()}
        assert sent["free-form"] == sent["structured"] == {budget_max_tokens(stage, DEFAULT_BUDGET_CHARS)}, stage
    # The free-form answers are checked too, not sent unbounded.
    assert {c.schema_name for c in calls(traces["free-form"], "opinion")} == {"FreeFormOpinion"}
    assert {c.schema_name for c in calls(traces["free-form"], "synthesis")} == {"FreeFormReport"}
    assert traces["structured"].config["report_budget_chars"] == DEFAULT_BUDGET_CHARS


@pytest.mark.parametrize("budget", [DEFAULT_BUDGET_CHARS, 1001, 300])
def test_the_structured_section_caps_sum_to_the_free_form_budget(budget: int) -> None:
    def caps(properties: dict[str, Any], names: tuple[str, ...]) -> int:
        assert set(properties) == set(names)
        return sum(int(p["maxLength"]) for p in properties.values())

    opinion, report = opinion_schema(budget).json_schema, report_schema(budget).json_schema
    assert opinion and report
    assert caps(opinion["properties"], OPINION_SECTIONS) == budget
    assert caps(report["properties"], REPORT_SECTIONS) == budget
    structured, free = revision_schema(budget, True).json_schema, revision_schema(budget, False).json_schema
    assert structured and free
    assert caps(structured["$defs"]["StructuredReport"]["properties"], REPORT_SECTIONS) == budget
    assert free["properties"]["report"]["maxLength"] == budget
    # The same value sets the free-form check: one character over is refused, the budget itself passes.
    config = ConsiliumConfig.model_validate({"report_budget_chars": budget, "opinion_budget_chars": budget})
    assert config.budget_chars("synthesis") == config.budget_chars("opinion") == budget


def answers(stage: str, budget: int, cap: int) -> dict[str, list[Any]]:
    """For each format, an answer one character over its room (x), then one that fills it exactly (y)."""
    def sections(base: dict[str, str], ch: str, n: int) -> dict[str, str]:
        return dict(base, **{next(iter(base)): ch * n})

    free, over = ["x" * (budget + 1), "y" * budget], [sections(REPORT, "x", cap + 1), sections(REPORT, "y", cap)]
    if stage == "opinion":
        return {"opinion": free, "sopinion": [sections(OPINION, "x", cap + 1), sections(OPINION, "y", cap)]}
    if stage == "synthesis":
        return {"report": free, "sreport": over}

    def wrap(report: object) -> dict[str, Any]:
        return {"changed": True, "change_summary": "s", "report": report}

    return {"revision": [wrap(r) for r in free], "srevision": [wrap(r) for r in over]}


@pytest.mark.parametrize("stage", BUDGETED)
def test_an_over_budget_free_form_answer_is_repaired_as_an_over_long_section_is(tmp_path: Path, stage: str) -> None:
    budget, cap = 600, 100  # six sections of 100 characters
    traces = simulate(tmp_path, script(tmp_path, **answers(stage, budget, cap)),
                      f"opinion_budget_chars: {budget}\nreport_budget_chars: {budget}\n")
    role = "cardiologist" if stage == "opinion" else "moderator"
    for fmt, trace in traces.items():
        assert trace.status == "completed", (fmt, trace.error)
        first, second = calls(trace, stage, role)
        assert first.error and second.error is None, fmt
        # Free-form opinions and syntheses are text held to the budget; a free-form revision's report is
        # a JSON string with the budget as maxLength; a structured section has its share.
        expected = ("at most 100 characters" if fmt == "structured" else "at most 600 characters"
                    if stage == "revision" else "over its length budget of 600 characters")
        assert expected in first.error, (fmt, first.error)
        repair = second.messages[-1].content
        assert repair.startswith("That answer could not be used:") and expected in repair
        # A text answer is asked for again as text, never as JSON.
        assert ("one JSON object" in repair) == (fmt == "structured" or stage == "revision"), repair
        assert first.settings.max_tokens == second.settings.max_tokens == budget_max_tokens(stage, budget)
        # The answer used is the repaired one, whole; the over-long one is neither kept nor cut to fit.
        text = (next(o.text for o in trace.opinions if o.role == "cardiologist") if stage == "opinion"
                else trace.reports[0 if stage == "synthesis" else 1].text)
        assert "x" not in text and "y" * (cap if fmt == "structured" else budget) in text


def test_a_free_form_report_that_stays_over_budget_fails_the_run_as_a_structured_one_does(tmp_path: Path) -> None:
    model = script(tmp_path, report=["x" * 601], sreport=[dict(REPORT, summary="x" * 101)])
    traces = simulate(tmp_path, model, "report_budget_chars: 600\n", expect=1)
    for fmt, name in (("free-form", "FreeFormReport"), ("structured", "StructuredReport")):
        trace = traces[fmt]
        assert trace.status == "failed" and trace.final_report is None and not trace.reports
        assert trace.error and f"invalid {name} output after 3 attempts" in trace.error
        assert [c.error is not None for c in calls(trace, "synthesis")] == [True, True, True]


def test_the_budget_in_the_config_sets_both_formats(tmp_path: Path) -> None:
    traces = simulate(tmp_path, script(tmp_path), "opinion_budget_chars: 900\nreport_budget_chars: 1200\n")
    for stage, budget in (("opinion", 900), ("synthesis", 1200), ("revision", 1200)):
        for fmt, trace in traces.items():
            [*sent] = calls(trace, stage)
            assert {c.settings.max_tokens for c in sent} == {budget_max_tokens(stage, budget)}, (fmt, stage)
            task = sent[0].messages[-1].content.split("\nTASK\n", 1)[1]
            # Each prompt states its budget; a structured one also each section's share.
            assert f" {budget} characters" in task, (fmt, stage)
            assert (f"at most {budget // 6} characters" in task) == (fmt == "structured"), (fmt, stage)
        assert traces["structured"].config[("opinion" if stage == "opinion" else "report") + "_budget_chars"] == budget


# A trace recorded before the shared budget (config lengths: legacy) reads, and its replay is refused in one line:
# the unequal caps and their prompts no longer run (tests/traces/test_old_records.py).


def _string_bounds(schema: Any, path: str = "") -> dict[str, int | None]:
    """Each string field's maxLength in a JSON schema (None: unbounded), by property path."""
    found: dict[str, int | None] = {}
    if isinstance(schema, dict):
        if schema.get("type") == "string":
            found[path] = schema.get("maxLength")
        for key, value in schema.get("properties", {}).items():
            found.update(_string_bounds(value, f"{path}.{key}".lstrip(".")))
        for key, value in schema.get("$defs", {}).items():
            found.update(_string_bounds(value, f"$defs.{key}"))
    return found


def test_the_grammar_never_holds_a_long_string_below_its_budget() -> None:
    """llama.cpp refuses string bounds above 1000 characters in a grammar. Lowering the free-form
    revision's one-string report to 1000 would give it less room while decoding than the structured
    report's sections share; the bound is left out of the grammar instead, and the grammar builds."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from consilium.models.backends.llama import GRAMMAR_MAX_LENGTH, grammar_safe

    free = revision_schema(DEFAULT_BUDGET_CHARS, structured=False).json_schema
    structured = revision_schema(DEFAULT_BUDGET_CHARS, structured=True).json_schema
    assert _string_bounds(free)["report"] == DEFAULT_BUDGET_CHARS > GRAMMAR_MAX_LENGTH
    assert _string_bounds(grammar_safe(free))["report"] is None  # unbounded while decoding, not 1000
    assert _string_bounds(grammar_safe(free))["change_summary"] == 401  # bounds under the limit stay, +1
    sections = {k: v for k, v in _string_bounds(grammar_safe(structured)).items() if v is not None}
    # one above the schema's: a section the grammar had to end fails validation and is repaired, as a
    # free-form answer over its budget is; it is never passed off cut at its bound
    assert sections == {k: v + 1 for k, v in _string_bounds(structured).items() if v is not None}
    for schema in (free, structured):
        llama_cpp.LlamaGrammar.from_json_schema(json.dumps(grammar_safe(schema)), verbose=False)
