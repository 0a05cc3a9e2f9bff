"""``consilium export``: Inspect AI logs and flat JSONL / Parquet tables of a real run folder.

The cohort is tests/support/cohort_fixture.py's, run by the real CLI: two scripted panel models × both formats ×
six cases, judged by a scripted AI Consilium judge with scores varied over every key, items not
evaluable, and one arm that fails. Every expected value is read here from the run's own files with plain
``json`` and ``csv`` (never through the exporter), and the exports are read back with
``inspect_ai.log.read_eval_log``, ``pyarrow.parquet.read_table`` and ``json``.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from inspect_ai.log import EvalLog, read_eval_log
from support.board_cohort import nsclc_agents_trace
from support.cohort_fixture import FAILED, FORMATS, MODELS
from support.cohorts import copy_cohort
from support.localserver import free_port

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = ROOT / "examples" / "models" / "scripted-panel.yaml"
MYOCARDITIS = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"


@pytest.fixture(scope="module")
def cohort(fixture_cohort: Path) -> Path:
    """The shared fixture cohort (tests/conftest.py), only read here."""
    return fixture_cohort


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def arms_csv(run_dir: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((run_dir / "arms.csv").read_text(encoding="utf-8").splitlines()))


def judgements_of(trace_file: Path) -> list[dict[str, Any]]:
    stem = trace_file.name.removesuffix(".trace.json")
    return [load(p) for p in sorted(trace_file.parent.glob(f"{stem}.judge.*.json"))]


def arm_files(run_dir: Path) -> list[tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]]:
    """Every arm of arms.csv with its trace and judgement records, as plain JSON."""
    found = []
    for row in arms_csv(run_dir):
        trace_file = run_dir / row["trace"]
        found.append((row, load(trace_file), judgements_of(trace_file)))
    return found


def usage_sum(calls: list[dict[str, Any]], key: str) -> int:
    return sum(int(c["usage"].get(key, 0)) for c in calls)


def same_time(a: str | None, b: str) -> bool:
    return a is not None and datetime.fromisoformat(a) == datetime.fromisoformat(b)


def export(run_dir: Path, to: str, out: Path, *extra: str) -> int:
    return main(["export", str(run_dir), "--to", to, "--out", str(out), *extra])


# --- Inspect AI ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def logs(cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], EvalLog]:
    out = tmp_path_factory.mktemp("inspect")
    assert export(cohort, "inspect", out) == 0
    found = {}
    for file in sorted(out.glob("*.eval")):
        log = read_eval_log(str(file))
        found[(str(log.eval.model_args["model_spec"]), str(log.eval.task_args["format"]))] = log
    return found


def test_one_inspect_log_per_model_and_format(cohort: Path, logs: dict[tuple[str, str], EvalLog]) -> None:
    manifest = load(cohort / "manifest.json")
    specs = manifest["settings"]["models"]
    assert sorted(logs) == sorted((spec, fmt) for spec in specs for fmt in FORMATS)
    for (spec, fmt), log in logs.items():
        model_id = MODELS[specs.index(spec)]
        assert log.status == "success"
        assert log.eval.task == f"consilium_{fmt}"
        assert log.eval.model == f"scripted/{model_id}"
        assert log.eval.run_id == manifest["run_id"]
        assert log.eval.dataset.name == Path(manifest["settings"]["cases"]).name
        assert log.eval.dataset.samples == len(manifest["settings"]["case_hashes"])
        assert same_time(log.eval.created, manifest["created_at"])
        assert log.eval.model_roles is not None
        judge = log.eval.model_roles["judge"]
        assert not isinstance(judge, list) and judge.model == "fixture-judge"
        assert judge.args == {"model_spec": manifest["settings"]["judge_model"]}


def test_samples_are_the_cases_with_answer_target_usage_and_outcome(
        cohort: Path, logs: dict[tuple[str, str], EvalLog]) -> None:
    checked = 0
    for row, trace, judgements in arm_files(cohort):
        log = logs[(row["model_spec"], row["format"])]
        assert log.samples is not None
        [sample] = [s for s in log.samples if s.id == row["case_id"]]
        case = trace["case"]
        assert sample.input == f"Question:\n{case['question']}\n\nPresentation:\n{case['presentation']}"
        assert sample.target == case["reference"]["diagnosis"]
        assert sample.metadata["status"] == trace["status"]
        assert sample.metadata["stop_reason"] == trace["stop_reason"]
        assert sample.metadata["rounds"] == len(trace["rounds"])
        assert sample.metadata["calls"] == len(trace["calls"])
        # Usage per model: the panel's calls from the trace, the judge's from its records.
        run_calls = trace["calls"]
        judge_calls = [c for j in judgements for c in j["calls"]]
        expected = {}
        for name, calls in ((row["model"], run_calls), ("fixture-judge", judge_calls)):
            if calls:
                expected[name] = (usage_sum(calls, "input_tokens") - usage_sum(calls, "cached_tokens"),
                                  usage_sum(calls, "output_tokens"), usage_sum(calls, "cached_tokens"),
                                  usage_sum(calls, "reasoning_tokens"))
        got = {name: (u.input_tokens, u.output_tokens, u.input_tokens_cache_read, u.reasoning_tokens)
               for name, u in sample.model_usage.items()}
        assert got == expected
        assert sum(u.total_tokens for u in sample.model_usage.values()) == \
            trace["usage"]["total"]["input_tokens"] + trace["usage"]["total"]["output_tokens"] + \
            usage_sum(judge_calls, "input_tokens") + usage_sum(judge_calls, "output_tokens")
        if trace["status"] == "completed":
            assert sample.error is None
            assert sample.output.completion == trace["final_report"]["text"]
            assert sample.output.model == f"scripted/{row['model']}"
        checked += 1
    assert checked == 2 * 2 * 6


def test_a_failed_arm_is_a_sample_with_its_error_and_no_score(
        cohort: Path, logs: dict[tuple[str, str], EvalLog]) -> None:
    model, case, fmt = FAILED
    [row] = [r for r in arms_csv(cohort) if (r["model"], r["case_id"], r["format"]) == (model, case, fmt)]
    trace = load(cohort / row["trace"])
    assert trace["status"] == "failed"
    log = logs[(row["model_spec"], fmt)]
    assert log.samples is not None and log.results is not None
    [sample] = [s for s in log.samples if s.id == case]
    assert sample.error is not None and sample.error.message == trace["error"]
    assert not sample.scores
    assert sample.metadata["failed_stage"] == trace["failed_stage"] == "synthesis"
    assert log.results.total_samples == 6 and log.results.completed_samples == 5


def test_scores_per_criterion_not_evaluable_as_such_and_the_means(
        cohort: Path, logs: dict[tuple[str, str], EvalLog]) -> None:
    values: dict[tuple[str, str, str], list[float]] = {}
    missing: dict[tuple[str, str, str], int] = {}
    seen_not_evaluable = 0
    for row, trace, judgements in arm_files(cohort):
        if trace["status"] != "completed":
            continue
        log = logs[(row["model_spec"], row["format"])]
        assert log.samples is not None
        [sample] = [s for s in log.samples if s.id == row["case_id"]]
        assert sample.scores is not None
        items = [(j, item) for j in judgements for item in j["items"]]
        assert len(sample.scores) == len(items)
        for judgement, item in items:
            name = f"{judgement['rubric']}/{item['component']}/{item['criterion']}"
            score = sample.scores[name]
            key = (row["model_spec"], row["format"], name)
            values.setdefault(key, [])
            missing.setdefault(key, 0)
            assert score.metadata is not None and score.metadata["not_evaluable"] == item["not_evaluable"]
            assert score.explanation == item["rationale"]
            if item["not_evaluable"]:
                assert isinstance(score.value, float) and math.isnan(score.value)  # not a 0
                assert score.reason == item["reason"]
                missing[key] += 1
                seen_not_evaluable += 1
            else:
                assert score.value == item["score"]
                values[key].append(float(item["score"]))
    assert seen_not_evaluable >= 4  # the fixture's varied not-evaluable items are all there
    assert len({v for vs in values.values() for v in vs}) > 2  # and its scores vary
    for (spec, fmt), log in logs.items():
        assert log.results is not None
        results = {s.name: s for s in log.results.scores}
        expected = {name for s, f, name in values if (s, f) == (spec, fmt)}
        assert set(results) == expected
        for name, result in results.items():
            scored, unscored = values[(spec, fmt, name)], missing[(spec, fmt, name)]
            assert result.metrics["not_evaluable"].value == unscored
            assert result.scored_samples == len(scored) and result.unscored_samples == unscored
            if scored:
                assert result.metrics["mean"].value == pytest.approx(sum(scored) / len(scored))
            else:
                assert "mean" not in result.metrics


@pytest.mark.localhost
def test_inspect_view_lists_and_serves_the_logs(logs: dict[tuple[str, str], EvalLog]) -> None:
    folder = Path(next(iter(logs.values())).location).parent
    port = free_port()
    view = subprocess.Popen([str(Path(sys.executable).with_name("inspect")), "view", "--log-dir", str(folder),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/api"
    try:
        listing = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{base}/logs", timeout=2) as response:
                    listing = json.load(response)
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        assert listing is not None, "inspect view did not start"
        files = sorted(f["name"] for f in listing["files"])
        assert [Path(urllib.parse.urlparse(f).path).name for f in files] == sorted(
            Path(log.location).name for log in logs.values())
        query = urllib.parse.urlencode([("file", f) for f in files])
        with urllib.request.urlopen(f"{base}/log-headers?{query}", timeout=10) as response:
            headers = json.load(response)
        assert sorted(h["eval"]["task"] for h in headers) == sorted(log.eval.task for log in logs.values())
    finally:
        view.terminate()
        view.wait(timeout=10)


# --- flat tables ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("tables")
    assert export(cohort, "jsonl", out) == 0
    assert export(cohort, "parquet", out) == 0
    found: dict[str, dict[str, Any]] = {}
    for name in ("arms", "calls", "judgements"):
        lines = (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        found[name] = {"jsonl": [json.loads(line) for line in lines], "parquet": pq.read_table(out / f"{name}.parquet")}
    return found


def test_parquet_and_jsonl_hold_the_same_rows(tables: dict[str, dict[str, Any]]) -> None:
    for table in tables.values():
        assert table["parquet"].to_pylist() == table["jsonl"]
        assert table["parquet"].column_names == list(table["jsonl"][0])


def test_the_parquet_schema_is_fixed_even_for_a_column_of_nulls(tables: dict[str, dict[str, Any]]) -> None:
    arms = tables["arms"]["parquet"]
    assert arms.column("replicate").null_count == arms.num_rows  # no replicates in this cohort
    assert arms.column("turns").null_count == arms.num_rows  # a consilium has no board turns
    types = {f.name: f.type for f in arms.schema}
    assert types["replicate"] == pa.int64() and types["turns"] == pa.int64()
    assert types["input_tokens"] == pa.int64() and types["wall_s"] == pa.float64()
    assert types["estimated"] == pa.bool_() and types["error"] == pa.string()
    judgements = {f.name: f.type for f in tables["judgements"]["parquet"].schema}
    assert judgements["score"] == pa.float64() and judgements["evaluable"] == pa.bool_()
    assert judgements["calibrated_score"] == pa.float64()


def test_one_arm_row_per_arm_with_the_traces_numbers(cohort: Path, tables: dict[str, dict[str, Any]]) -> None:
    rows = {(r["model_spec"], r["case_id"], r["format"]): r for r in tables["arms"]["jsonl"]}
    files = arm_files(cohort)
    assert len(rows) == len(files) == 24
    manifest = load(cohort / "manifest.json")
    for row, trace, _ in files:
        got = rows[(row["model_spec"], row["case_id"], row["format"])]
        total = trace["usage"]["total"]
        assert got["run_id"] == manifest["run_id"] and got["protocol"] == "consilium"
        assert (got["model"], got["moderator_model"], got["status"]) == (trace["model"], trace["moderator_model"],
                                                                        trace["status"])
        assert got["stop_reason"] == trace["stop_reason"]
        assert got["rounds"] == len(trace["rounds"]) and got["seed"] == trace["config"]["seed"]
        assert got["calls"] == len(trace["calls"])
        assert got["failed_calls"] == sum(c["error"] is not None for c in trace["calls"])
        for key in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
            assert got[key] == total[key]
        assert got["error"] == trace["error"] and got["failed_stage"] == trace["failed_stage"]
        assert got["answer"] == (trace["final_report"]["text"] if trace["final_report"] else None)
        assert got["reference"] == trace["case"]["reference"]["diagnosis"]
        assert got["trace"] == row["trace"]
    failed = [r for r in rows.values() if r["status"] == "failed"]
    assert [(r["model"], r["case_id"], r["format"]) for r in failed] == [FAILED]
    assert failed[0]["error"].startswith("ModelError: ") and failed[0]["stop_reason"] is None


def test_one_call_row_per_call_of_the_run_and_of_its_judgements(
        cohort: Path, tables: dict[str, dict[str, Any]]) -> None:
    rows = tables["calls"]["jsonl"]
    expected = []
    for row, trace, judgements in arm_files(cohort):
        key = (row["model_spec"], row["case_id"], row["format"])
        expected += [(*key, "run", None, c["index"], c["stage"], c["role"], c["round"], c["model"],
                      c["usage"]["input_tokens"], c["usage"]["output_tokens"], c["latency_ms"],
                      c["finish_reason"], "ok" if c["error"] is None else "error", c["usage"]["estimated"])
                     for c in trace["calls"]]
        expected += [(*key, "judge", j["rubric"], c["index"], c["stage"], c["role"], c["round"], c["model"],
                      c["usage"]["input_tokens"], c["usage"]["output_tokens"], c["latency_ms"],
                      c["finish_reason"], "ok" if c["error"] is None else "error", c["usage"]["estimated"])
                     for j in judgements for c in j["calls"]]
    got = [(r["model_spec"], r["case_id"], r["format"], r["source"], r["rubric"], r["index"], r["stage"], r["role"],
            r["round"], r["model"], r["input_tokens"], r["output_tokens"], r["latency_ms"], r["finish_reason"],
            r["status"], r["estimated"]) for r in rows]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert {r["stage"] for r in rows} >= {"role_assignment", "opinion", "synthesis", "vote", "revision", "judge"}


def test_one_judgement_row_per_item(cohort: Path, tables: dict[str, dict[str, Any]]) -> None:
    rows = tables["judgements"]["jsonl"]
    expected = []
    for row, _, judgements in arm_files(cohort):
        for j in judgements:
            expected += [(row["model_spec"], row["case_id"], row["format"], j["rubric"], j["judge_model"],
                          i["component"], i["criterion"], i["score"], not i["not_evaluable"],
                          i["reason"] if i["not_evaluable"] else None, len(i["rationale"] or ""))
                         for i in j["items"]]
    got = [(r["model_spec"], r["case_id"], r["format"], r["rubric"], r["judge_model"], r["component"],
            r["criterion"], r["score"], r["evaluable"], r["not_evaluable_reason"], r["rationale_chars"]) for r in rows]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    not_evaluable = [r for r in rows if not r["evaluable"]]
    assert not_evaluable and all(r["score"] is None and r["not_evaluable_reason"] for r in not_evaluable)
    assert {(r["scale_min"], r["scale_max"]) for r in rows} == {(0.0, 3.0)}
    whole = {r["criterion"] for r in rows if r["whole_case"]}
    assert whole == {"panel_adequacy", "case_complexity", "overall_quality"}


def test_docs_list_every_column_of_every_table() -> None:
    from consilium.export.columns import TABLES

    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    for name, columns in TABLES.items():
        section = text.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        documented = re.findall(r"^\| `([a-z_]+)` \| `([a-z0-9]+)` \|", section, flags=re.M)
        assert documented == [(c.name, c.type) for c in columns], name


def test_an_arm_that_left_no_trace_is_exported_from_its_row(cohort: Path, tmp_path: Path) -> None:
    """A run that raised instead of recording (cohort's failed_row) has a row in arms.csv and no trace."""
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir)
    rows = arms_csv(run_dir)
    model, case, fmt = FAILED
    [row] = [r for r in rows if (r["model"], r["case_id"], r["format"]) == (model, case, fmt)]
    case_data = load(run_dir / row["trace"])["case"]
    (run_dir / row["trace"]).unlink()
    row.update({"model": "", "trace": "", "stop_reason": "", "rounds": "", "failed_stage": "",
                "error": "RuntimeError: the run raised"})
    with (run_dir / "arms.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    assert export(run_dir, "jsonl", run_dir / "tables") == 0
    arms = [json.loads(line) for line in (run_dir / "tables" / "arms.jsonl").read_text().splitlines()]
    [got] = [a for a in arms if (a["case_id"], a["format"]) == (case, fmt) and a["model_spec"] == row["model_spec"]]
    assert (got["model"], got["status"], got["error"], got["trace"]) == (model, "failed", row["error"], None)
    assert got["calls"] is None and got["input_tokens"] is None and got["stop_reason"] is None

    assert export(run_dir, "inspect", run_dir / "logs") == 0
    [log_file] = [p for p in (run_dir / "logs").glob(f"*_consilium_{fmt}_*.eval")
                  if read_eval_log(str(p), header_only=True).eval.model_args["model_spec"] == row["model_spec"]]
    log = read_eval_log(str(log_file))
    assert log.samples is not None
    [sample] = [s for s in log.samples if s.id == case]
    assert sample.error is not None and sample.error.message == row["error"] and not sample.scores
    # The case's text comes from a trace of the same case (the other format's).
    assert sample.input == f"Question:\n{case_data['question']}\n\nPresentation:\n{case_data['presentation']}"
    assert sample.model_usage == {}


# --- refusals ------------------------------------------------------------------------------------------


def test_an_existing_export_is_never_overwritten_without_force(
        cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert export(cohort, "jsonl", out) == 0
    (out / "calls.jsonl").write_text("mine\n", encoding="utf-8")
    capsys.readouterr()
    assert export(cohort, "jsonl", out) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--force" in err and str(out / "arms.jsonl") in err
    assert (out / "calls.jsonl").read_text(encoding="utf-8") == "mine\n"  # nothing was written
    assert export(cohort, "jsonl", out, "--force") == 0
    assert (out / "calls.jsonl").read_text(encoding="utf-8") != "mine\n"
    assert not list(out.glob(".*.tmp"))
    assert export(cohort, "inspect", out) == 0
    assert export(cohort, "inspect", out) == 2


@pytest.mark.parametrize("what", ["missing", "not a run"])
def test_a_bad_run_folder_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               what: str) -> None:
    run_dir = tmp_path / "nowhere"
    if what == "not a run":
        run_dir.mkdir()
        (run_dir / "notes.txt").write_text("x", encoding="utf-8")
    assert export(run_dir, "jsonl", tmp_path / "out") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(run_dir) in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("to", "module"), [("parquet", "pyarrow"), ("inspect", "inspect_ai")])
def test_without_the_export_extra_the_error_names_it(
        cohort: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        to: str, module: str) -> None:
    for name in [m for m in sys.modules if m == module or m.startswith(f"{module}.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it fails
    monkeypatch.setitem(sys.modules, module, None)
    assert export(cohort, to, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "pip install 'consilium[export]'" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


# --- a simulate run folder -----------------------------------------------------------------------------


def test_a_simulate_run_folder_exports_too(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(MYOCARDITIS), "--model", f"scripted:{SCRIPTED}", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    # A server that reports cached and reasoning tokens, as the openai: backend records them.
    trace_file = run_dir / "diagnostic-myocarditis.structured.trace.json"
    trace = load(trace_file)
    first = trace["calls"][0]["usage"]
    first["cached_tokens"], first["reasoning_tokens"] = first["input_tokens"] // 2, 7
    for key in ("cached_tokens", "reasoning_tokens"):
        trace["usage"]["total"][key] += first[key]
    trace_file.write_text(json.dumps(trace), encoding="utf-8")

    # Before judging: the judge here is the same scripted model, whose usage would add to the panel's.
    assert main(["export", str(run_dir), "--to", "inspect", "--inspect-format", "json"]) == 0
    [log_file] = list((run_dir / "export").glob("*_consilium_structured_*.json"))
    log = read_eval_log(str(log_file))
    assert log.samples is not None
    [sample] = log.samples
    calls = trace["calls"]
    usage = sample.model_usage[trace["model"]]
    assert list(sample.model_usage) == [trace["model"]]
    assert usage.input_tokens == usage_sum(calls, "input_tokens") - usage_sum(calls, "cached_tokens")
    assert usage.input_tokens_cache_read == usage_sum(calls, "cached_tokens") > 0
    assert usage.reasoning_tokens == 7
    assert sample.output.completion == trace["final_report"]["text"]
    # Inspect's provider/model: the spec's backend, or the model's id alone when the trace has no spec.
    assert log.eval.model == (trace["model"] if trace["model_spec"] is None else f"scripted/{trace['model']}")

    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{SCRIPTED}"]) == 0

    assert export(run_dir, "parquet", run_dir / "tables") == 0
    arms = pq.read_table(run_dir / "tables" / "arms.parquet").to_pylist()
    assert sorted(a["format"] for a in arms) == ["free-form", "structured"]
    [structured] = [a for a in arms if a["format"] == "structured"]
    assert structured["cached_tokens"] == trace["usage"]["total"]["cached_tokens"] > 0
    assert structured["reasoning_tokens"] == trace["usage"]["total"]["reasoning_tokens"] == 7
    assert structured["run_id"] == load(run_dir / "manifest.json")["run_id"]
    judged = pq.read_table(run_dir / "tables" / "judgements.parquet").num_rows
    assert judged == sum(len(j["items"]) for f in run_dir.glob("*.trace.json") for j in judgements_of(f))


# --- a board cohort judged with the four-decision rubric (tests/support/board_cohort.py): clinical trial out of scope
# (−1) is no score in the tables and the Inspect log; an export is whole or nothing, masked, never into the run
# folder; the Inspect log's moderator role names its own backend ------------------------------------------------


def test_the_judgements_table_has_in_scope_and_no_minus_one(four_decision_board: Path, tmp_path: Path) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
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


def test_the_inspect_log_leaves_out_of_scope_unscored(four_decision_board: Path, tmp_path: Path) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
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


def test_a_failed_inspect_export_leaves_nothing(four_decision_board: Path, tmp_path: Path) -> None:
    """The last log's trace does not read: before, the logs before it were already in place."""
    from consilium.export import open_run
    from consilium.export.inspect_log import groups

    run_dir = copy_cohort(four_decision_board, tmp_path)
    *_, last = groups(open_run(run_dir)).values()
    assert last[0].trace is not None
    last[0].trace.write_text("{not a trace", encoding="utf-8")
    for to in ("inspect", "jsonl"):
        assert main(["export", str(run_dir), "--to", to]) == 2
        assert not (run_dir / "export").exists()
    out = tmp_path / "deep" / "er" / "export"
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(out)]) == 2
    assert not (tmp_path / "deep").exists()


def test_the_inspect_log_is_masked(four_decision_board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-inspect-export-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    run_dir = copy_cohort(four_decision_board, tmp_path)
    trace = nsclc_agents_trace(run_dir)
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
        four_decision_board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
    index = (run_dir / "arms.jsonl").read_bytes()
    for out in (run_dir, run_dir / "export" / ".."):
        assert main(["export", str(run_dir), "--to", "jsonl", "--out", str(out), "--force"]) == 2
        assert "the run folder itself" in capsys.readouterr().err
    assert main(["export", str(run_dir), "--to", "inspect", "--out", str(run_dir), "--force"]) == 2
    assert (run_dir / "arms.jsonl").read_bytes() == index
    assert not list(run_dir.glob("*.eval")) and not (run_dir / "calls.jsonl").exists()


def test_the_inspect_moderator_role_names_its_own_backend(four_decision_board: Path, tmp_path: Path) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
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
