"""Issue 18 review fixes: the four-decision rubric's out of scope (−1) in the viewer and the exports, the
single-page view's --out, the exports' atomicity, masking and targets, and the cohort view's run mark.

The board cohort is run by the real CLI with the scripted panel (examples/models/scripted-panel.yaml) as
panel and judge: its four-decision answer is therapy 4, surgery 3, next action 3, clinical trial −1; the
NSCLC and rectal cases lock clinical trial out of scope, the HER2 case has it in scope (so the judge's
−1 there is invalid: not evaluable). Expected values are worked out by hand below.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[1]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ROOT / "examples" / "cases"
# App. E.2: (1.00·4/5 + 1.25·3/5 + 1.15·3/5) / (1.00 + 1.25 + 1.15), clinical trial (−1) out of the sums.
WEIGHTED = (1.00 * 4 / 5 + 1.25 * 3 / 5 + 1.15 * 3 / 5) / 3.40


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("board")
    with pytest.MonkeyPatch.context() as patch:  # the conftest's isolation, for a module-wide fixture
        patch.setenv("CONSILIUM_CACHE", str(tmp / "cache.sqlite"))
        patch.setenv("CONSILIUM_LOG_FILE", str(tmp / "consilium.log.jsonl"))
        patch.setenv("CONSILIUM_EVENT_LOOP", "asyncio")
        assert main(["cohort", "--cases", str(CASES), "--protocol", "board", "--judge", "otb-four-decision",
                     "--model", PANEL, "--judge-model", PANEL, "--out", str(tmp / "runs")]) == 0
        [run_dir] = list((tmp / "runs").iterdir())
        yield run_dir


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / run_dir.name
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("view", "export"))
    return copy


# --- 1. out of scope is no score --------------------------------------------------------------------


def test_the_viewer_shows_the_weighted_mean_and_leaves_out_of_scope_out(board: Path, tmp_path: Path) -> None:
    run_dir = _copy(board, tmp_path)
    assert main(["view", str(run_dir)]) == 0
    nsclc = (run_dir / "view" / "cases" / "tumor-board-nsclc.html").read_text(encoding="utf-8")
    assert f"otb-four-decision: {WEIGHTED:.2f} weighted mean (3 scored, 1 out of scope, 0 not evaluable)" in nsclc
    her2 = (run_dir / "view" / "cases" / "tumor-board-her2-breast.html").read_text(encoding="utf-8")
    assert f"otb-four-decision: {WEIGHTED:.2f} weighted mean (3 scored, 1 not evaluable)" in her2
    index = (run_dir / "view" / "index.html").read_text(encoding="utf-8")
    assert "2.25" not in index  # (4 + 3 + 3 − 1) / 4, the −1 averaged as a score
    assert index.count(f"{WEIGHTED:.2f} weighted mean") == 10


def test_the_judgements_table_has_in_scope_and_no_minus_one(board: Path, tmp_path: Path) -> None:
    run_dir = _copy(board, tmp_path)
    assert main(["export", str(run_dir), "--to", "jsonl"]) == 0
    lines = (run_dir / "export" / "judgements.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {(r["case_id"], r["format"], r["criterion"]): r for r in map(json.loads, lines)}
    assert len(rows) == 5 * 2 * 4
    locked = rows[("tumor-board-nsclc", "board-agents", "clinical_trial")]
    assert (locked["score"], locked["in_scope"], locked["evaluable"]) == (None, False, True)
    invalid = rows[("tumor-board-her2-breast", "board-single", "clinical_trial")]
    assert (invalid["score"], invalid["in_scope"], invalid["evaluable"]) == (None, True, False)
    therapy = rows[("tumor-board-nsclc", "board-agents", "therapy")]
    assert (therapy["score"], therapy["in_scope"]) == (4.0, True)
    assert {(r["scale_min"], r["scale_max"]) for r in rows.values()} == {(1.0, 5.0)}
    assert all(r["score"] != -1 for r in rows.values())
    assert sum(not r["in_scope"] for r in rows.values()) == 4 * 2  # every case but HER2, both formats


def test_the_inspect_log_leaves_out_of_scope_unscored(board: Path, tmp_path: Path) -> None:
    run_dir = _copy(board, tmp_path)
    assert main(["export", str(run_dir), "--to", "inspect"]) == 0
    files = sorted((run_dir / "export").glob("*.eval"))
    assert len(files) == 2
    for file in files:
        log = read_eval_log(str(file))
        samples = {s.id: s for s in log.samples or []}
        score = (samples["tumor-board-nsclc"].scores or {})["otb-four-decision/conclusion/clinical_trial"]
        assert math.isnan(float(score.as_float()))
        assert score.metadata is not None and score.metadata["out_of_scope"] is True
        assert score.metadata["scale"] == [1, 2, 3, 4, 5]
        assert str(score.reason) == "out of scope"
        assert log.results is not None
        results = {s.name: s for s in log.results.scores}
        trial = results["otb-four-decision/conclusion/clinical_trial"]
        assert "mean" not in trial.metrics
        assert (trial.metrics["out_of_scope"].value, trial.metrics["not_evaluable"].value) == (4, 1)
        assert (trial.scored_samples, trial.unscored_samples) == (0, 5)
        assert results["otb-four-decision/conclusion/therapy"].metrics["mean"].value == 4.0


# --- 3, 7, 10e. the view's --out and its judgements -------------------------------------------------


def _one_trace(run_dir: Path) -> Path:
    [trace] = sorted(run_dir.glob("arms/*/*/tumor-board-nsclc.board-agents.trace.json"))
    return trace


def test_the_single_page_view_never_replaces_a_file_it_did_not_write(
        board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _copy(board, tmp_path)
    trace = _one_trace(run_dir)
    before = trace.read_bytes()
    assert main(["view", str(trace), "--out", str(trace)]) == 2  # the trace itself
    assert trace.read_bytes() == before
    assert "a .json file is a trace or a record, not a page" in capsys.readouterr().err
    assert main(["view", str(trace), "--out", str(tmp_path / "new.JSON")]) == 2
    assert not (tmp_path / "new.JSON").exists()
    capsys.readouterr()
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my own notes</p>", encoding="utf-8")
    assert main(["view", str(trace), "--out", str(notes)]) == 2
    assert notes.read_text(encoding="utf-8") == "<p>my own notes</p>"
    err = capsys.readouterr().err
    assert "notes.html: not a page `consilium view` wrote; nothing was written" in err and err.count("\n") == 1
    page = tmp_path / "page.html"
    assert main(["view", str(trace), "--out", str(page)]) == 0
    assert main(["view", str(trace), "--out", str(page)]) == 0  # its own page: replaced
    assert "Judge: otb-four-decision" in page.read_text(encoding="utf-8")


def test_the_single_page_view_reads_only_the_judgements_of_its_trace(board: Path, tmp_path: Path) -> None:
    """A stem with glob characters is matched as it is, and a record that names another trace is left out."""
    trace = _one_trace(board)
    [judged] = trace.parent.glob("tumor-board-nsclc.board-agents.judge.*.json")
    folder = tmp_path / "odd"
    folder.mkdir()
    shutil.copy(trace, folder / "nsclc[1].board-agents.trace.json")
    record = json.loads(judged.read_text(encoding="utf-8"))
    own = {**record, "trace": "nsclc[1].board-agents.trace.json", "judge_model": "own-judge"}
    (folder / "nsclc[1].board-agents.judge.otb-four-decision.json").write_text(json.dumps(own), encoding="utf-8")
    decoy = {**record, "trace": "nsclc1.board-agents.trace.json", "judge_model": "decoy-judge"}
    (folder / "nsclc1.board-agents.judge.otb-four-decision.json").write_text(json.dumps(decoy), encoding="utf-8")
    stray = {**record, "trace": "elsewhere.trace.json", "judge_model": "stray-judge"}
    (folder / "nsclc[1].board-agents.judge.otb-conclusion-alignment.json").write_text(json.dumps(stray),
                                                                                        encoding="utf-8")
    out = tmp_path / "odd.html"
    assert main(["view", str(folder / "nsclc[1].board-agents.trace.json"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "own-judge" in text and "decoy-judge" not in text and "stray-judge" not in text


def test_the_cohort_view_refuses_the_pages_of_another_run(board: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    first = _copy(board, tmp_path / "a")
    second = _copy(board, tmp_path / "b")
    manifest = json.loads((second / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] = "20261201-000000-cohort-other1"
    (second / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    shared = tmp_path / "shared"
    assert main(["view", str(first), "--out", str(shared)]) == 0
    index = (shared / "index.html").read_bytes()
    assert f'<meta name="consilium-run" content="{board.name}">'.encode() in index
    assert main(["view", str(first), "--out", str(shared)]) == 0  # its own pages: replaced
    capsys.readouterr()
    assert main(["view", str(second), "--out", str(shared)]) == 2
    err = capsys.readouterr().err
    assert f"a page of the view of another run ({board.name}); nothing was written" in err
    assert err.count("\n") == 1
    assert (shared / "index.html").read_bytes() == index


# --- 4, 5, 6. the exports: whole or nothing, masked, never into the run folder ------------------------


def test_a_failed_inspect_export_leaves_nothing(board: Path, tmp_path: Path) -> None:
    """The last log's trace does not read: before, the logs before it were already in place."""
    from consilium.export import open_run
    from consilium.export.inspect_log import groups

    run_dir = _copy(board, tmp_path)
    *_, last = groups(open_run(run_dir)).values()
    assert last[0].trace is not None
    last[0].trace.write_text("{not a trace", encoding="utf-8")
    for to in ("inspect", "jsonl"):
        assert main(["export", str(run_dir), "--to", to]) == 2
        assert not (run_dir / "export").exists()
    out = tmp_path / "deep" / "er" / "export"
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(out)]) == 2
    assert not (tmp_path / "deep").exists()


def test_the_inspect_log_is_masked(board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-review18-inspect-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    run_dir = _copy(board, tmp_path)
    trace = _one_trace(run_dir)
    data = json.loads(trace.read_text(encoding="utf-8"))
    data.update(status="failed", error=f"ModelError: https://user:hunter2pass@proxy.example/v1: HTTP 400: "
                                       f"Authorization: Bearer {secret}")
    trace.write_text(json.dumps(data), encoding="utf-8")  # as a trace written by hand, past the masking
    out = tmp_path / "inspect"
    assert main(["export", str(run_dir), "--to", "inspect", "--inspect-format", "json", "--out", str(out)]) == 0
    text = "".join(f.read_text(encoding="utf-8") for f in out.glob("*.json"))
    assert "https://***@proxy.example/v1: HTTP 400: Authorization: Bearer ***" in text
    assert secret not in text and "hunter2pass" not in text


def test_an_export_into_the_run_folder_is_refused_even_with_force(
        board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _copy(board, tmp_path)
    index = (run_dir / "arms.jsonl").read_bytes()
    for out in (run_dir, run_dir / "export" / ".."):
        assert main(["export", str(run_dir), "--to", "jsonl", "--out", str(out), "--force"]) == 2
        assert "the run folder itself" in capsys.readouterr().err
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(run_dir), "--force"]) == 2
    assert (run_dir / "arms.jsonl").read_bytes() == index
    assert not list(run_dir.glob("*.eval")) and not (run_dir / "calls.jsonl").exists()


# --- 10b. the Inspect log's moderator: its own spec ---------------------------------------------------


def test_the_inspect_moderator_role_names_its_own_backend(board: Path, tmp_path: Path) -> None:
    run_dir = _copy(board, tmp_path)
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(tmp_path / "panel")]) == 0
    for file in (tmp_path / "panel").glob("*.eval"):  # no --moderator-model: the moderator is the panel
        roles = read_eval_log(str(file), header_only=True).eval.model_roles or {}
        assert not isinstance(moderator := roles["moderator"], list)
        assert moderator.model == "scripted/scripted-panel"
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["settings"]["moderator_model"] = "openai:gpt-4o-mini"  # as if run with --moderator-model
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(tmp_path / "own")]) == 0
    files = list((tmp_path / "own").glob("*.eval"))
    assert len(files) == 2
    for file in files:
        roles = read_eval_log(str(file), header_only=True).eval.model_roles or {}
        assert not isinstance(moderator := roles["moderator"], list)
        # The moderator's id as its traces record it, behind its own backend's name (not "scripted/").
        assert moderator.model == "openai/scripted-panel" and moderator.args == {"model_spec": "openai:gpt-4o-mini"}
