"""A third-party protocol, added by an installed package's ``consilium.protocols`` entry point, runs
everywhere the built-in ones do: simulate writes its traces, replay re-runs them identically, view shows them
(consilium/graphs/registry.py; docs/architecture.md, "Add a protocol")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from support.plugin_install import ROOT, install, run_consilium

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
