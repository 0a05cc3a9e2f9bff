"""A third-party protocol, added by an installed package's ``consilium.protocols`` entry point, runs
everywhere the built-in ones do: simulate writes its traces, replay re-runs them identically, view shows them
(consilium/graphs/registry.py; docs/architecture.md, "Add a protocol")."""

from __future__ import annotations

import csv
import json
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.plugin_install import ROOT, install, install_plugin, run_commands, run_consilium, run_python

CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"

#: A protocol outside consilium: the primary specialist's independent opinion alone (the consilium's own
#: opinion agent), after the consilium's own role assignment.
PLUGIN = '''
from typing import Any, ClassVar, Literal

from consilium.agents import moderator, specialist
from consilium.agents.records import FORMATS, AssignedRole, Opinion
from consilium.cases import Case
from consilium.models import CallRecorder, for_run
from consilium.graphs.base import Protocol, RunModels, config_record, run_recorded, start_run
from consilium.graphs.view import Heading, Text
from consilium.traces.config import ConfigRecord, RunConfig
from consilium.traces.schema import TraceBase


class OpinionConfig(RunConfig):
    STAGE_TOKENS: ClassVar[dict[str, int]] = {"role_assignment": 768, "opinion": 400}
    max_tokens: dict[str, int] = {"role_assignment": 768, "opinion": 400}


class OpinionRecord(OpinionConfig, ConfigRecord):
    pass


class OpinionTrace(TraceBase):
    kind: Literal["first-opinion"] = "first-opinion"
    config: OpinionRecord
    format: Literal["free-form", "structured"]
    roles: list[AssignedRole]
    opinion: Opinion | None


async def run_one(case, fmt, models, config, run_id):
    recorder = CallRecorder()
    model = for_run(models.panel, recorder, max_repairs=config.max_repairs)
    state: dict[str, Any] = {}

    async def body() -> None:
        state["roles"] = await moderator.assign_roles(model, case.render(), min_roles=config.min_roles,
                                                      max_roles=config.max_roles,
                                                      settings=config.settings("role_assignment"))
        primary = next(r for r in state["roles"] if r.primary)
        state["opinion"] = await specialist.write_opinion(model, case.render(), primary, fmt,
                                                          config.settings("opinion"), 1200)

    outcome = await run_recorded(body, start_run(recorder), wall_limit_s=config.wall_limit_s, event="failed")
    return OpinionTrace(**outcome.trace_fields(case, run_id=run_id, model=models.panel.model_id,
                                               config=config_record(config)),
                        format=fmt, roles=state.get("roles", []), opinion=state.get("opinion"))


class FirstOpinion(Protocol):
    name: ClassVar[str] = "first-opinion"
    trace_model = OpinionTrace
    config_model = OpinionConfig
    variants = FORMATS
    compared_fields = ("status", "roles", "opinion")

    def variant(self, trace):
        return trace.format

    def arm_variant(self, variant):
        return f"first-{variant}"

    async def run_arm(self, case, variants, models, config, *, run_id, images=(), reuse=(), on_trace=None):
        return [await run_one(case, fmt, models, config, run_id) for fmt in variants]

    async def replay(self, trace, replay):
        config = OpinionConfig.model_validate(trace.config.run_settings())
        return await run_one(Case.model_validate(trace.case), trace.format, RunModels(replay, replay), config,
                             trace.run_id)

    def row(self, trace):
        return {"stop_reason": ""}

    def components(self, trace):
        return {"conclusion": trace.opinion.text} if trace.opinion else {}

    def summary(self, trace):
        return [f"first opinion: {trace.opinion.text[:60]}" if trace.opinion else "no opinion"]

    def view(self, trace):
        return [Heading("First opinion"), Text(trace.opinion.text if trace.opinion else "")]


PROTOCOL = FirstOpinion()
TAKEN = type("Taken", (FirstOpinion,), {"name": "consilium"})()
'''


def _plugins(tmp_path: Path, entry_points: str) -> Path:
    modules = {"consilium_protocol_demo": PLUGIN, "consilium_protocol_broken": "raise ImportError('no')"}
    return install(tmp_path / "site", "consilium-protocol-demo", modules, entry_points)


def test_a_plugin_protocol_simulates_replays_and_is_viewed(tmp_path: Path) -> None:
    plugins = _plugins(tmp_path, "[consilium.protocols]\nfirst-opinion = consilium_protocol_demo:PROTOCOL\n")
    done = run_consilium(plugins, "simulate", "--protocol", "first-opinion", "--format", "free-form", "--case",
                         str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    assert "first opinion: Opinion of" in done.stdout
    [path] = list((tmp_path / "runs").glob("*/*.first-free-form.trace.json"))
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace["kind"] == "first-opinion" and trace["status"] == "completed"
    assert [c["stage"] for c in trace["calls"]] == ["role_assignment", "opinion"]
    replayed = run_consilium(plugins, "replay", str(path))
    assert replayed.returncode == 0 and "identical (2 recorded calls served, 0 model calls" in replayed.stdout
    page = tmp_path / "view.html"
    viewed = run_consilium(plugins, "view", str(path), "--out", str(page))
    assert viewed.returncode == 0, viewed.stderr
    html = page.read_text(encoding="utf-8")
    assert "<h3>First opinion</h3>" in html and "first-opinion · free-form" in html


def test_without_the_plugin_its_traces_are_refused_by_kind(tmp_path: Path) -> None:
    plugins = _plugins(tmp_path, "[consilium.protocols]\nfirst-opinion = consilium_protocol_demo:PROTOCOL\n")
    done = run_consilium(plugins, "simulate", "--protocol", "first-opinion", "--format", "free-form", "--case",
                         str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    [path] = list((tmp_path / "runs").glob("*/*.trace.json"))
    empty = tmp_path / "none"
    empty.mkdir()
    done = run_consilium(empty, "replay", str(path))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("kind: 'first-opinion' is not a known protocol (known: consilium, board, "
                                        "turn, single)")
    assert "Traceback" not in done.stderr


def test_a_broken_or_clashing_plugin_is_one_line_naming_it(tmp_path: Path) -> None:
    """Named in one line when asked for, never taking the built-in protocols down with it."""
    fixture = ROOT / "tests" / "fixtures" / "v1.3" / "diagnostic-myocarditis.structured.trace.json"
    broken = _plugins(tmp_path / "a", "[consilium.protocols]\nbad = consilium_protocol_broken:PROTOCOL\n")
    done = run_consilium(broken, "simulate", "--protocol", "bad", "--case", str(CASE), "--model",
                         f"scripted:{PANEL}", "--out", str(tmp_path / "runs"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(
        "entry point 'bad' (consilium_protocol_broken:PROTOCOL) in group consilium.protocols: cannot be loaded "
        "(ImportError: no)")
    still = run_consilium(broken, "replay", str(fixture))
    assert still.returncode == 0 and "identical" in still.stdout
    assert "protocol_plugin_skipped" in still.stderr  # the skipped plugin is said, as a warning
    clash = _plugins(tmp_path / "b", "[consilium.protocols]\ntaken = consilium_protocol_demo:TAKEN\n")
    done = run_consilium(clash, "simulate", "--protocol", "taken", "--case", str(CASE), "--model",
                         f"scripted:{PANEL}", "--out", str(tmp_path / "runs"))
    assert done.returncode == 2
    assert "protocol 'consilium' is already defined (built-in or another plugin)" in done.stderr
    assert run_consilium(clash, "replay", str(fixture)).returncode == 0  # the built-in consilium, not the clash


def test_a_plugin_protocol_runs_in_a_cohort_beside_the_consilium(tmp_path: Path) -> None:
    """Its run_arm returns its traces without telling of each (on_trace is optional): every one is still
    written and counted, none vanishes."""
    plugins = _plugins(tmp_path, "[consilium.protocols]\nfirst-opinion = consilium_protocol_demo:PROTOCOL\n")
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("diagnostic-myocarditis.yaml", "consultation-afib-anticoagulation.yaml"):
        (cases / name).write_text((ROOT / "examples" / "cases" / name).read_text(encoding="utf-8"), encoding="utf-8")
    done = run_consilium(plugins, "cohort", "--cases", str(cases), "--protocol", "consilium,first-opinion",
                         "--model", f"scripted:{PANEL}", "--no-cache", "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    [arms] = list((tmp_path / "runs").glob("*/arms.csv"))
    rows = list(csv.DictReader(arms.read_text(encoding="utf-8").splitlines()))
    assert sorted((r["protocol"], r["format"], r["status"]) for r in rows) == sorted(
        [("consilium", f, "completed") for f in ("free-form", "structured")] * 2
        + [("first-opinion", f"first-{f}", "completed") for f in ("free-form", "structured")] * 2)
    assert len(list((tmp_path / "runs").glob("*/arms/*/*/*.first-*.trace.json"))) == 4


def test_a_plugin_that_fails_when_used_is_named_not_an_internal_error(tmp_path: Path) -> None:
    """A backend plugin whose opener raises, and a protocol plugin whose constructor raises: one line naming
    the plugin, exit 2 (a plugin's failure is its author's to fix, not a bug of consilium's)."""
    source = '''
from consilium.models.backends.registry import Backend
from consilium.graphs.single.protocol import SingleProtocol


def _open(arg, options):
    raise RuntimeError("cannot open")


BACKEND = Backend("boom", _open, "always fails", argument="MODEL")


class Fragile(SingleProtocol):
    name = "fragile"

    def __init__(self):
        raise RuntimeError("boom")
'''
    plugins = install(tmp_path / "site", "consilium-fragile", {"consilium_fragile": source},
                      "[consilium.backends]\nboom = consilium_fragile:BACKEND\n"
                      "[consilium.protocols]\nfragile = consilium_fragile:Fragile\n")
    done = run_consilium(plugins, "simulate", "--case", str(CASE), "--model", "boom:x", "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(
        "backend plugin 'boom': could not open 'x': RuntimeError: cannot open")
    done = run_consilium(plugins, "simulate", "--protocol", "fragile", "--case", str(CASE), "--model",
                         f"scripted:{PANEL}", "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "entry point 'fragile' (consilium_fragile:Fragile) in group consilium.protocols: cannot be loaded " \
           "(RuntimeError: boom)" in done.stderr


def test_a_rubric_plugin_shadowed_by_a_built_in_is_said_and_two_of_one_name_refused(tmp_path: Path) -> None:
    fixture = ROOT / "tests" / "fixtures" / "v1.3" / "diagnostic-myocarditis.structured.trace.json"
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "j", "rules": [{"stage": "judge", "json": {"rationale": "r", "score": 4}}]}),
                     encoding="utf-8")
    shadow = install(tmp_path / "a", "consilium-rubric-shadow", {"consilium_rubric_shadow": "R = '/nope.yaml'\n"},
                     "[consilium.rubrics]\notb-conclusion-alignment = consilium_rubric_shadow:R\n")
    copy = tmp_path / "t.trace.json"
    copy.write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    done = run_consilium(shadow, "judge", str(copy), "--rubric", "otb-conclusion-alignment", "--judge-model",
                         f"scripted:{judge}")
    assert done.returncode == 0, done.stderr
    assert "rubric_plugin_ignored" in done.stderr  # judged with the built-in, and said so
    install(tmp_path / "a", "consilium-rubric-twin", {"consilium_rubric_twin": "R = '/nope.yaml'\n"},
            "[consilium.rubrics]\nmine = consilium_rubric_twin:R\n")
    install(tmp_path / "a", "consilium-rubric-twin2", {"consilium_rubric_twin2": "R = '/nope.yaml'\n"},
            "[consilium.rubrics]\nmine = consilium_rubric_twin2:R\n")
    done = run_consilium(shadow, "judge", str(copy), "--rubric", "mine", "--judge-model", f"scripted:{judge}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "rubric plugin 'mine': more than one installed package adds it" in done.stderr


# A plugin protocol with a stage (second_look) and a variant kind (tempos: brisk, unhurried) that no built-in
# protocol has (tests/support/plugins/consilium_second_look.py): every command takes it with no edit to consilium;
# the commands that need another protocol's record refuse it in one line naming it and what it lacks.

LOOK_ENTRY = "[consilium.protocols]\nsecond-look = consilium_second_look:PROTOCOL\n"
TWO_CASES = ("diagnostic-myocarditis.yaml", "consultation-afib-anticoagulation.yaml")
ANSWERS = ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"
#: The shipped panel names the internist primary; the plugin's declared rule answers its stage with this.
VERDICT = "Second look by internist: the working diagnosis stands."
LACKS = "(its Protocol.analyses does not list"


@dataclass(frozen=True)
class Look:
    plugins: Path
    root: Path
    cohort: Path  # consilium and second-look arms of two cases, judged by otb-conclusion-alignment
    cohort_said: str
    alone: Path  # a cohort of the plugin's arms alone, of one case
    simulated: subprocess.CompletedProcess[str]  # simulate --protocol second-look --tempos unhurried
    bad_tempo: subprocess.CompletedProcess[str]  # --tempos presto
    other_kind: subprocess.CompletedProcess[str]  # --tempos to the consilium


@pytest.fixture(scope="module")
def look(tmp_path_factory: pytest.TempPathFactory) -> Look:
    """The plugin installed; the command lines every test below reads, run in one interpreter."""
    root = tmp_path_factory.mktemp("second-look")
    plugins = install_plugin(root / "site", "consilium_second_look", LOOK_ENTRY)
    for folder, names in (("cases", TWO_CASES), ("one-case", TWO_CASES[:1])):
        (root / folder).mkdir()
        for name in names:
            text = (ROOT / "examples" / "cases" / name).read_text(encoding="utf-8")
            (root / folder / name).write_text(text, encoding="utf-8")
    panel = f"scripted:{PANEL}"
    cohort, alone, simulated, bad, other = run_commands(
        plugins,
        ["cohort", "--cases", str(root / "cases"), "--protocol", "consilium,second-look", "--model", panel,
         "--judge", "otb-conclusion-alignment", "--judge-model", panel, "--no-cache", "--out", str(root / "runs")],
        ["cohort", "--cases", str(root / "one-case"), "--protocol", "second-look", "--model", panel, "--no-cache",
         "--out", str(root / "alone")],
        ["simulate", "--protocol", "second-look", "--tempos", "unhurried", "--case", str(CASE), "--model", panel,
         "--out", str(root / "simulated")],
        ["simulate", "--protocol", "second-look", "--tempos", "presto", "--case", str(CASE), "--model", panel,
         "--out", str(root / "bad")],
        ["simulate", "--tempos", "brisk", "--case", str(CASE), "--model", panel, "--out", str(root / "bad")])
    assert alone.returncode == 0, alone.stderr
    [run_dir] = [p for p in (root / "runs").iterdir() if p.is_dir()]
    [alone_dir] = [p for p in (root / "alone").iterdir() if p.is_dir()]
    return Look(plugins, root, run_dir, cohort.stdout + cohort.stderr, alone_dir, simulated, bad, other)


def test_a_plugin_with_its_own_stage_and_variant_kind_simulates_replays_judges_and_is_viewed(look: Look) -> None:
    done = look.simulated
    assert done.returncode == 0, done.stderr
    assert f"second look: {VERDICT}" in done.stdout
    # simulate's usage table has a line for the plugin's own stage: one call
    [line] = [x for x in done.stdout.splitlines() if x.strip().startswith("second_look ")]
    assert line.split("/")[2].split("·")[0].strip() == "1"
    [path] = list((look.root / "simulated").glob("*/diagnostic-myocarditis.look-unhurried.trace.json"))
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert (trace["kind"], trace["tempo"], trace["status"], trace["verdict"]) == (
        "second-look", "unhurried", "completed", VERDICT)
    assert [c["stage"] for c in trace["calls"]] == ["role_assignment", "second_look"]
    assert list(trace["usage"]["by_stage"]) == ["role_assignment", "second_look"]
    page = look.root / "look.html"
    replayed, judged, viewed = run_commands(
        look.plugins, ["replay", str(path)],
        ["judge", str(path), "--rubric", "otb-conclusion-alignment", "--judge-model", f"scripted:{PANEL}"],
        ["view", str(path), "--out", str(page)])
    assert replayed.returncode == 0 and "identical (2 recorded calls served, 0 model calls" in replayed.stdout
    assert judged.returncode == 0, judged.stderr
    assert "otb-conclusion-alignment conclusion      1 items: 1 judged, 0 not evaluable" in judged.stdout
    assert path.with_name(path.name.replace(".trace.json", ".judge.otb-conclusion-alignment.json")).is_file()
    assert viewed.returncode == 0, viewed.stderr
    html = page.read_text(encoding="utf-8")
    assert "<h3>Second look</h3>" in html and "second-look · unhurried" in html and VERDICT in html


def test_a_variant_kind_flag_takes_only_its_own_protocols_values(look: Look) -> None:
    """--tempos exists because the plugin declares the kind; a value it lacks, or the flag given to a protocol
    of another kind, is one line naming the flag, and nothing is written."""
    bad, other = look.bad_tempo, look.other_kind
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == "consilium: error: --tempos: presto: the second-look protocol runs in brisk, unhurried"
    assert other.returncode == 2
    assert other.stderr.strip() == "consilium: error: --tempos: protocol 'consilium' runs in formats (--formats)"
    assert not (look.root / "bad").exists()


def test_a_plugin_protocol_runs_in_a_judged_cohort_and_is_reported_viewed_and_exported(look: Look) -> None:
    rows = list(csv.DictReader((look.cohort / "arms.csv").read_text(encoding="utf-8").splitlines()))
    myo, afib = (name.removesuffix(".yaml") for name in TWO_CASES)
    # Two cases: the consilium in both formats, the plugin in both tempos; its unhurried look at the
    # anticoagulation case fails at its own stage (the declared rule for it fails the call).
    assert sorted((r["protocol"], r["case_id"], r["format"], r["status"], r["failed_stage"]) for r in rows) == sorted(
        [("consilium", c, f, "completed", "") for c in (afib, myo) for f in ("free-form", "structured")]
        + [("second-look", c, "look-brisk", "completed", "") for c in (afib, myo)]
        + [("second-look", myo, "look-unhurried", "completed", ""),
           ("second-look", afib, "look-unhurried", "failed", "second_look")])
    assert "1 of 8 arms failed" in look.cohort_said
    judged = sorted(p.name for p in look.cohort.rglob("*.look-*.judge.otb-conclusion-alignment.json"))
    assert judged == sorted([f"{afib}.look-brisk.judge.otb-conclusion-alignment.json",
                             f"{myo}.look-brisk.judge.otb-conclusion-alignment.json",
                             f"{myo}.look-unhurried.judge.otb-conclusion-alignment.json"])
    site, exported_to = look.root / "site", look.root / "x"
    reported, viewed, exported = run_commands(
        look.plugins, ["report", str(look.cohort)], ["view", str(look.cohort), "--out", str(site)],
        ["export", str(look.cohort), "--to", "jsonl", "--out", str(exported_to)])
    assert reported.returncode == 0, reported.stderr
    # The usage table by stage: the plugin's stage between its role assignment and its judge, completed arms only.
    table = list(csv.DictReader((look.cohort / "report" / "cost_by_stage.csv").read_text(encoding="utf-8")
                                .splitlines()))
    mine = [(r["format"], r["stage"], r["cases"]) for r in table
            if r["protocol"] == "second-look" and r["model"] == "scripted-panel"]
    assert mine == [("look-brisk", "role_assignment", "2"), ("look-brisk", "second_look", "2"),
                    ("look-brisk", "judge", "2"), ("look-unhurried", "role_assignment", "1"),
                    ("look-unhurried", "second_look", "1"), ("look-unhurried", "judge", "1")]
    failed = list(csv.DictReader((look.cohort / "report" / "failed_arms.csv").read_text(encoding="utf-8")
                                 .splitlines()))
    assert [(r["protocol"], r["format"], r["case_id"], r["failed_stage"]) for r in failed] == [
        ("second-look", "look-unhurried", afib, "second_look")]
    assert viewed.returncode == 0, viewed.stderr
    pages = sorted(p.name for p in site.rglob("*.look-*.html"))
    assert pages == sorted(f"{c}.look-{t}.html" for c in (afib, myo) for t in ("brisk", "unhurried"))
    assert exported.returncode == 0, exported.stderr
    calls = [json.loads(line) for line in (exported_to / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    counted = Counter((c["format"], c["stage"]) for c in calls if c["protocol"] == "second-look")
    assert counted == {("look-brisk", "role_assignment"): 2, ("look-brisk", "second_look"): 2,
                       ("look-brisk", "judge"): 2, ("look-unhurried", "role_assignment"): 2,
                       ("look-unhurried", "second_look"): 1, ("look-unhurried", "judge"): 1}
    arms = [json.loads(line) for line in (exported_to / "arms.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted((a["format"], a["status"]) for a in arms if a["protocol"] == "second-look") == [
        ("look-brisk", "completed"), ("look-brisk", "completed"), ("look-unhurried", "completed"),
        ("look-unhurried", "failed")]


def test_each_arm_is_tagged_only_with_its_protocols_declared_stages(look: Look) -> None:
    declared = {"consilium": {"role_assignment", "opinion", "synthesis", "vote", "revision"},
                "second-look": {"role_assignment", "second_look"}}
    seen: dict[str, set[str]] = {}
    for path in look.cohort.rglob("*.trace.json"):
        trace = json.loads(path.read_text(encoding="utf-8"))
        seen.setdefault(trace["kind"], set()).update(c["stage"] for c in trace["calls"])
    assert seen == declared  # every declared stage was used, and nothing else


def test_commands_that_need_another_protocols_record_refuse_the_plugin_in_one_line(look: Look) -> None:
    """Networks and ablation need a consilium-shaped record, a person's seat a panel: a folder of the plugin's
    arms alone, or a seat at its table, is refused naming the protocol and what it lacks; nothing is written."""
    run = look.alone
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    analysed, ablated, seated = run_commands(
        look.plugins, ["analyze", str(run)],
        ["ablate", str(run), "--kind", "no-deliberation", "--judge-model", f"scripted:{PANEL}"],
        ["simulate", "--protocol", "second-look", "--human", "Internist", "--answers", str(ANSWERS), "--case",
         str(CASE), "--model", f"scripted:{PANEL}", "--out", str(look.root / "seat")])
    assert analysed.returncode == 2 and "Traceback" not in analysed.stderr
    assert analysed.stderr.strip().splitlines()[-1] == (
        f"consilium: error: analyze {run}: protocol 'second-look' lacks what the network analysis needs: a "
        "deliberation to draw: a panel's opinions, votes and report versions (a consilium-shaped record) or a "
        f"meeting's turns (the board's) {LACKS} 'networks')")
    assert ablated.returncode == 2 and "Traceback" not in ablated.stderr
    assert ablated.stderr.strip().splitlines()[-1] == (
        f"consilium: error: ablate {run}: protocol 'second-look' lacks what an ablation needs: a panel, a "
        f"moderator and review rounds to re-run with one of them changed (a consilium-shaped record) {LACKS} "
        "'ablation')")
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    assert seated.returncode == 2 and "Traceback" not in seated.stderr
    assert seated.stderr.strip().splitlines()[-1] == (
        "consilium: error: --human: protocol 'second-look' lacks what a person's seat needs: a panel member whose "
        f"opinion and votes a person can write instead {LACKS} 'human_seat')")


def test_a_plugin_protocol_gets_a_studio_graph_and_its_variant_kind_from_its_declaration(look: Look) -> None:
    """The one Studio entry (consilium/graphs/dev.py) has a factory under the plugin's name, whose run answers
    from the plugin's declaration; the registry lists its variant kind for the CLI, the experiment file and
    the API."""
    code = f'''
        import asyncio, json
        import consilium.graphs.dev as dev
        from consilium.graphs.registry import variant_kinds
        graph = vars(dev)["second-look"]({{"configurable": {{"model": "scripted:{PANEL}", "tempo": "unhurried"}}}})
        state = asyncio.run(graph.ainvoke({{}}))
        kind = variant_kinds()["tempos"]
        print(json.dumps([state["status"], state["tempo"], state["verdict"], kind.flag, kind.field,
                          list(kind.protocols), list(kind.values), sorted(variant_kinds())]))
    '''
    done = run_python(look.plugins, code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        "completed", "unhurried", VERDICT, "--tempos", "tempos", ["second-look"], ["brisk", "unhurried"],
        ["formats", "modes", "tempos"]]


#: The built-in protocols' stages, in their registry's order (consilium, board, turn, single), then the judges',
#: calibration's and ``models check``'s: written out here, as the declarations must add up to.
BUILT_IN_STAGES = ("role_assignment", "opinion", "synthesis", "vote", "revision", "board_turn", "conclusion",
                   "specialist_turn", "judge", "calibration", "check")


def test_the_usage_tables_and_the_call_tags_read_one_declaration() -> None:
    """No second list of stages to drift from the protocols' (the models' Literal and usage.STAGES were two, and
    usage.STAGES had lost calibration): a call tag, the ledger's order and the usage tables read the declarations."""
    from pydantic import ValidationError

    from consilium.graphs.registry import protocols
    from consilium.models import types, usage
    from consilium.models.types import CallTag
    from consilium.stages import EVALUATION_STAGES, declared_stages

    assert not hasattr(usage, "STAGES") and not hasattr(types, "STAGES")
    assert declared_stages() == BUILT_IN_STAGES
    assert EVALUATION_STAGES == ("judge", "calibration", "check")
    assert {s for p in protocols().values() for s in p.stages} | set(EVALUATION_STAGES) == set(BUILT_IN_STAGES)
    for stage in BUILT_IN_STAGES:
        assert CallTag(stage=stage).stage == stage
    with pytest.raises(ValidationError, match="'second_look' is not a declared stage"):
        CallTag(stage="second_look")  # the plugin's stage, and it is not installed here
    # a table's stages in declared order; one no protocol here declares (a plugin's trace) last
    assert usage.stage_order({"check", "second_look", "vote", "calibration", "opinion", "board_turn"}) == [
        "opinion", "vote", "board_turn", "calibration", "check", "second_look"]


def test_a_stage_is_known_whichever_module_is_imported_first(tmp_path: Path) -> None:
    """The models check a call's stage before any protocol module is imported: the package root loads them."""
    done = run_python(tmp_path, '''
        import sys
        from consilium.models.types import CallTag
        assert "consilium.graphs.registry" not in sys.modules
        print(CallTag(stage="board_turn").stage, "consilium.graphs.registry" in sys.modules)
    ''')
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["board_turn", "True"]
