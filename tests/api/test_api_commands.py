"""Every command is a library function first: each is called here directly (not through the CLI) on scripted runs
with varied values, and its result checked against what the fixture's constants give by hand; no module outside
consilium/cli/ parses flags or reaches into the CLI; and every async API function has a sync twin with its
signature (docs/api.md)."""

from __future__ import annotations

import ast
import inspect
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import CASES, FAILED, FORMATS, MODELS, PANELS, VOTES, stop_reason

from consilium import api
from consilium.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "consilium"
CASE = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
ARMS = [(m, k, f) for m in MODELS for k in CASES for f in FORMATS]


# ---- the layering: flags are the CLI's alone ------------------------------------------------------------------


def _flag_or_cli_imports(path: Path) -> list[str]:
    """``argparse`` and ``consilium.cli`` imported by a module, statements and import_module calls alike."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            names = [str(node.args[0].value)] if called in ("import_module", "__import__") else []
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {name}" for name in names  # type: ignore[attr-defined]
                  if name.split(".")[0] == "argparse" or name == "consilium.cli" or name.startswith("consilium.cli.")]
    return found


def test_no_module_outside_cli_imports_argparse_or_the_cli() -> None:
    """The library never parses flags nor calls a command: ``__main__`` hands off to the CLI, nothing else does."""
    outside = [path for path in sorted(PACKAGE.rglob("*.py"))
               if "cli" not in path.relative_to(PACKAGE).parts[:1] and path.name != "__main__.py"]
    assert [hit for path in outside for hit in _flag_or_cli_imports(path)] == []


def _async_functions() -> dict[str, Any]:
    return {name: getattr(api, name) for name in api.__all__
            if name.startswith("a") and inspect.iscoroutinefunction(getattr(api, name))}


def test_every_async_api_function_has_a_sync_twin_with_the_same_signature() -> None:
    found = _async_functions()
    assert {"acompare", "areport", "aexport", "aview", "ajury", "aschema", "amerge_shards", "aanalyze",
            "avalidate_cases", "aimport_table", "aimport_agentclinic", "areplay_traces", "ajudge_folder",
            "acheck_model", "aboard_meeting", "aspecialist_turn", "aablate", "aagreement", "aisotonic", "arun", "aturn",
            "ajudge", "areplay"} <= set(found)
    for name, coroutine in found.items():
        twin = getattr(api, name[1:], None)
        assert twin is not None and name[1:] in api.__all__, f"{name} has no sync twin"
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(coroutine), name


def test_a_twin_runs_its_coroutine_where_a_loop_is_running() -> None:
    """The sync twin in a notebook cell (a loop running): on a worker thread's loop, the same answer."""
    import asyncio

    async def inside() -> dict[str, Any]:
        return api.schema("case")

    assert asyncio.run(inside()) == api.schema("case")


# ---- compare, report, export, view on the fixture cohort ------------------------------------------------------


def test_the_api_compares_the_fixture_cohort_as_counted_by_hand(fixture_cohort: Path, tmp_path: Path) -> None:
    compared = api.compare(fixture_cohort, api.CompareOptions(out=tmp_path / "compare", bootstrap=40, seed=3))
    rows = {(r["model"], r["format"]): r for r in compared.tables["table3_outcomes"][1]}
    for model in MODELS:
        for fmt in FORMATS:
            arms = [a for a in ARMS if a[0] == model and a[2] == fmt]
            done = [a for a in arms if a != FAILED]
            stops = [stop_reason(VOTES[a]) for a in done]
            row = rows[(model, fmt)]
            assert (row["arms"], row["completed"], row["failed"]) == (6, len(done), 6 - len(done))
            assert (row["consensus"], row["no_change"], row["round_limit"]) == tuple(
                stops.count(s) for s in ("consensus", "no_change", "round_limit"))
            dissent = [len(VOTES[a][0]) / len(PANELS[a[:2]]) for a in done]
            assert row["r1_dissent_mean_pct"] == pytest.approx(100 * statistics.fmean(dissent))
    assert rows[("panel-b", "structured")]["failed"] == 1 and not compared.partial
    assert compared.report == tmp_path / "compare" / "compare.md" and not (fixture_cohort / "compare").exists()
    again = api.compare(fixture_cohort, out=tmp_path / "again", bootstrap=40, seed=3)  # keywords: the same call
    assert again.tables["paired_differences"] == compared.tables["paired_differences"]
    with pytest.raises(UserError, match=r"^bootstrap: must be a positive whole number of draws, got 0$"):
        api.CompareOptions(bootstrap=0)
    with pytest.raises(UserError, match=r"^draws: not an option"):
        api.compare(fixture_cohort, draws=5)


def test_the_api_reports_the_fixture_cohort(fixture_cohort: Path, tmp_path: Path) -> None:
    done = api.report(fixture_cohort, api.ReportOptions(out=tmp_path / "report", bootstrap=40))
    planned, failed = len(MODELS) * len(FORMATS) * len(CASES), 1
    assert f"{planned} arms, {planned - failed} completed, {failed} failed." in done.summary
    assert done.report == tmp_path / "report" / "report.md" and done.report.read_text(encoding="utf-8") == done.markdown
    assert done.markdown.startswith(done.summary) and not done.partial
    [failed_csv] = [p for p in done.csvs if p.name == "failed_arms.csv"]
    lines = failed_csv.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(part in lines[1] for part in FAILED)


def test_the_api_exports_one_row_per_arm(fixture_cohort: Path, tmp_path: Path) -> None:
    done = api.export(fixture_cohort, api.ExportOptions(to="jsonl", out=tmp_path / "export"))
    assert done.partial_note is None
    [arms] = [p for p in done.files if p.name == "arms.jsonl"]
    rows = [json.loads(line) for line in arms.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(ARMS)
    assert sorted((r["model"], r["case_id"], r["format"]) for r in rows if r["status"] != "completed") == [FAILED]
    with pytest.raises(UserError, match=r"^to: 'csv'"):
        api.ExportOptions(to="csv")  # type: ignore[arg-type]


def test_the_api_views_the_cohort(fixture_cohort: Path, tmp_path: Path) -> None:
    done = api.view(fixture_cohort, out=tmp_path / "view")
    assert done.page == tmp_path / "view" / "index.html" and not done.partial
    page = done.page.read_text(encoding="utf-8")
    assert all(case in page for case in CASES)


# ---- a simulate run judged by a jury, its agreement, its replay --------------------------------------------------


def _judge(tmp: Path, model: str, score: int) -> str:
    path = tmp / f"{model.replace(':', '-')}.json"  # a scripted judge that always gives this score
    path.write_text(json.dumps({"model": model, "rules": [
        {"stage": "judge", "json": {"rationale": "scripted", "score": score}}]}))
    return f"scripted:{path}"


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both formats of one case, judged by a jury of three scripted judges scoring 4, 2 and 5."""
    tmp = tmp_path_factory.mktemp("judged")
    traces = api.run(CASE, model=PANEL, out=tmp / "runs")
    [run_dir] = list((tmp / "runs").iterdir())
    scores = {"openai:gpt-4o-mini": 4, "meta:llama-3-8b": 2, "mistral:mistral-large": 5}
    jury = tuple(_judge(tmp, model, score) for model, score in scores.items())
    judged = api.judge_folder([run_dir], api.JudgeOptions(rubric="otb-conclusion-alignment", judges=jury))
    return {"run_dir": run_dir, "traces": traces, "judged": judged, "scores": scores, "jury": jury, "tmp": tmp}


def test_the_api_judges_a_folder_with_the_jury_verdict(judged_run: dict[str, Any]) -> None:
    judged = judged_run["judged"]
    assert judged.models == list(judged_run["scores"]) and len(judged.traces) == len(judged_run["traces"]) == 2
    verdict = statistics.median(judged_run["scores"].values())  # the median of 4, 2 and 5: 4
    for each in judged.traces:
        assert each.out.is_file() and each.out.name.endswith(".judge.otb-conclusion-alignment.json")
        [item] = each.judgement.items
        assert item.score == verdict == 4 and sorted(v.score for v in item.votes) == [2, 4, 5]
    assert len(judged.summary) >= 1 and judged.rebuilt == []  # a simulate folder has no judgements.csv
    with pytest.raises(UserError, match=r"^components: rubric otb-conclusion-alignment does not score"):
        api.judge_folder([judged_run["run_dir"]], rubric="otb-conclusion-alignment", judges=judged_run["jury"],
                         components=("final_report",))


def test_the_api_reads_the_jurys_agreement(judged_run: dict[str, Any]) -> None:
    done = api.jury(judged_run["run_dir"], rubric="otb-conclusion-alignment", out=judged_run["tmp"] / "jury")
    assert len(done.data.members) == 3 and len(done.data.answers) == 2 and done.done is None
    assert done.files and all(path.is_file() for path in done.files)


def test_the_api_replays_a_folder_and_names_a_changed_trace(judged_run: dict[str, Any], tmp_path: Path) -> None:
    copy = shutil.copytree(judged_run["run_dir"], tmp_path / "copy")
    heard: list[Path] = []
    done = api.replay_traces([copy], on_each=lambda each: heard.append(each.path))
    assert done.folders and len(done.traces) == 2 and done.different == 0 and heard == [t.path for t in done.traces]
    assert all(each.served > 0 for each in done.traces)
    changed = done.traces[0].path
    record = json.loads(changed.read_text(encoding="utf-8"))
    record["stop_reason"] = "round_limit" if record["stop_reason"] != "round_limit" else "consensus"
    changed.write_text(json.dumps(record), encoding="utf-8")
    again = api.replay_traces([copy])
    assert again.different == 1 and not again.traces[0].identical and again.traces[1].identical


# ---- case files, schemas, networks -----------------------------------------------------------------------------


def test_the_api_validates_case_files_as_counted_by_hand(tmp_path: Path) -> None:
    shutil.copy(CASE, tmp_path / "a.yaml")
    shutil.copy(CASE, tmp_path / "b.yaml")  # the same case id twice: the second is a problem
    (tmp_path / "c.json").write_text(json.dumps({"id": "c"}), encoding="utf-8")  # no question, no presentation
    missing = tmp_path / "nowhere.yaml"
    done = api.validate_cases([tmp_path, missing])
    assert (done.checked, done.invalid, done.valid) == (4, 3, False)
    said = [str(problem) for problem in done.problems]
    assert any("b.yaml: id: case id" in line for line in said) and any("c.json" in line for line in said)
    assert said[-1].startswith(f"{missing}:") and "no such file or directory" in said[-1]
    assert api.validate_cases([CASE]).valid


def test_the_api_gives_each_formats_schema() -> None:
    from consilium.cases import Case

    assert api.schema("case") == Case.model_json_schema()
    assert {"case", "trace", "board-trace", "single-trace"} <= set(api.schemas())
    with pytest.raises(UserError, match=r"^name: unknown format 'nope' \(known: "):
        api.schema("nope")


def test_the_api_analyzes_a_run_by_word_overlap(tmp_path: Path) -> None:
    from support.networks_runs import simulate_varied

    run_dir = simulate_varied(tmp_path / "runs")
    done = api.analyze(run_dir, api.AnalyzeOptions(out=tmp_path / "analysis"))
    assert done.analysis.arms == 1 and done.analysis.out == tmp_path / "analysis" and not done.judged
    assert done.analysis.judge_failed == 0 and (tmp_path / "analysis" / "categories.csv").is_file()


# ---- calibration, ablation, the board, a model check --------------------------------------------------------------


def test_the_api_calibrates_synthetic_ratings_counted_by_hand(tmp_path: Path) -> None:
    """Two physicians rate every one of the eight criteria of every case: n is cases × 2 per criterion."""
    from consilium.calibration.synthetic import make_synthetic

    cases = 14
    ratings, judgements = make_synthetic(tmp_path / "syn", cases=cases, judge="perfect", seed=2)
    done = api.agreement(judgements, ratings=ratings, rubric="ai-consilium", bootstrap=30, seed=1)
    criteria = {f"c{i}" for i in range(1, 9)}
    per_criterion = [row for row in done.rows if row.criterion.replace("/", " ").split()[-1] in criteria]
    assert [row.n for row in per_criterion] == [2 * cases] * 8
    assert done.notes[0].startswith("rubric ai-consilium") and f"{8 * 2 * cases} paired" in done.notes[0]
    assert all(path.is_file() for path in done.files)
    fitted = api.isotonic(judgements, api.IsotonicOptions(ratings=ratings, rubric="ai-consilium", train_fraction=0.5))
    assert fitted.path.is_file() and fitted.report.is_file() and len(fitted.calibration.criteria) == 8
    with pytest.raises(UserError, match=r"^--train-fraction: must be between 0 and 1$"):
        api.IsotonicOptions(train_fraction=1.0)


def test_the_api_ablates_a_cohort_pair_by_pair(tmp_path: Path) -> None:
    """Both formats of one case, swept over two round caps: 2 × 2 ablated arms, every call reused."""
    result = api.run_cohort(str(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"), models=PANEL,
                            out=tmp_path)
    heard: list[str] = []
    done = api.ablate(result.run_dir, api.AblateOptions(kind="max-rounds", max_rounds=(1, 2), bootstrap=20,
                                                        on_arm=lambda arm: heard.append(arm.condition.name)))
    assert done.arms == 4 == len(heard) and sorted(set(heard)) == ["max-rounds-1", "max-rounds-2"]
    assert done.new == 0 and done.reused > 0 and done.not_ablated is None
    assert done.out == result.run_dir / "ablate" / "max-rounds" / "run-1" and done.out.is_dir()
    with pytest.raises(UserError, match=r"^--moderator-model: only --kind moderator changes the moderator$"):
        api.ablate(result.run_dir, kind="leave-one-out", moderator_model=PANEL)


def test_the_api_holds_a_board_meeting_and_a_specialist_turn(tmp_path: Path) -> None:
    case = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
    meeting = api.board_meeting(case, "agents", out=tmp_path / "board", model=PANEL)
    assert meeting.completed and meeting.path.name == "tumor-board-nsclc.board-agents.trace.json"
    assert (meeting.path.parent / "manifest.json").is_file() and meeting.trace.mode == "agents"
    turn = api.specialist_turn(case, "Radiation oncologist", "Is the patient a candidate?", out=tmp_path / "turn",
                               model=PANEL)
    assert turn.path.name == "tumor-board-nsclc.turn.trace.json" and turn.trace.role == "Radiation oncologist"
    with pytest.raises(UserError):
        api.specialist_turn(case, "Astrologer", "?", out=tmp_path / "never", model=PANEL)
    assert not (tmp_path / "never").exists()  # refused before a folder or a model


def test_the_api_checks_a_model_and_says_the_scripted_backend_does_not_enforce(tmp_path: Path) -> None:
    done = api.check_model(PANEL, max_tokens=40)
    roles = [call.role for call in done.recorder.calls]
    assert roles[:2] == ["plain", "structured"] and not done.enforcement.declared and not done.failed
