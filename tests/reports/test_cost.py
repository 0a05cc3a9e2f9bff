"""Prices and cost: dollars beside tokens in arms.csv, `simulate`, and `report`.

Two cohorts are run by the real CLI with scripted panels (tests/support/cohort_fixture.py's scripts) and a
scripted AI Consilium judge, then reported together as a folder of cohorts:

- cohort A: ``panel-a`` priced with a cached-input price (its model config), ``panel-b`` (an extra model)
  without prices, both formats, one failed arm of each (``panel-a`` k5 structured by a rule added here,
  ``panel-b`` k6 structured by the fixture's own);
- cohort B: ``panel-c`` priced without a cached-input price (billed as input).

The scripted backend reports no cached prompt tokens, so before the report the completed traces of
``panel-a`` are given varied cached counts, as a server with a prefix cache would report them (a
hand-built variation, usage rebuilt from the calls). Every expected dollar is computed here from the
tokens in the trace files and the prices written in the model configs, never by consilium.models.pricing.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import MARKERS, judge_script, panel_script
from support.isolation import isolated

from consilium.cli import main

CASES = ("k4", "k5", "k6")
PRICES: dict[str, dict[str, float]] = {
    "panel-a": {"input": 2.5, "cached_input": 1.25, "output": 10.0},
    "panel-c": {"input": 0.4, "output": 1.6},
}
FAILS = {("panel-a", "k5", "structured"), ("panel-b", "k6", "structured")}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples"


def dollars(calls: list[dict[str, Any]], prices: dict[str, float], *, spent: bool = False) -> float:
    """By hand: cached prompt tokens at the cached-input price (the input price when none is given), the
    rest of the prompt at the input price, the output at the output price; per million tokens."""
    cached_price = prices.get("cached_input", prices["input"])
    total = 0.0
    for call in calls:
        if spent and call["cached"]:
            continue
        usage = call["usage"]
        total += ((usage["input_tokens"] - usage["cached_tokens"]) * prices["input"]
                  + usage["cached_tokens"] * cached_price + usage["output_tokens"] * prices["output"]) / 1e6
    return total


def _case(case: str) -> dict[str, Any]:
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARKERS[case]}: a patient with fever and cough for {len(case) + 3} days.",
            "reference": {"diagnosis": "Community-acquired pneumonia"}}


def _model_config(path: Path, script: Path, prices: dict[str, float]) -> Path:
    inline = ", ".join(f"{k}: {v}" for k, v in prices.items())
    path.write_text(f"spec: scripted:{script}\nprices: {{{inline}}}\n")
    return path


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _add_cached_tokens(trace_file: Path) -> None:
    """Varied cached prompt tokens on every call, and the trace's usage sums rebuilt from its calls."""
    data = json.loads(trace_file.read_text(encoding="utf-8"))
    for i, call in enumerate(data["calls"]):
        call["usage"]["cached_tokens"] = call["usage"]["input_tokens"] * (i % 4) // 5
    sums: dict[str, dict[str, dict[str, Any]]] = {"by_stage": {}, "by_role": {}, "by_round": {}}
    fields = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "calls")

    def add(into: dict[str, Any], usage: dict[str, Any]) -> None:
        for name in fields:
            into[name] = into.get(name, 0) + usage[name]
        into["estimated"] = into.get("estimated", False) or usage["estimated"]

    total: dict[str, Any] = {}
    for call in data["calls"]:
        for group, key in (("by_stage", call["stage"]), ("by_role", call["role"]), ("by_round", call["round"])):
            add(sums[group].setdefault("-" if key is None else str(key), {}), call["usage"])
        add(total, call["usage"])
    data["usage"].update(sums, total=total, spent=total)
    trace_file.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture(scope="module")
def cohorts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("cost")
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        cases = tmp / "cases"
        cases.mkdir()
        for case in CASES:
            (cases / f"{case}.json").write_text(json.dumps(_case(case)))
        scripts = {}
        for model in ("panel-a", "panel-b", "panel-c"):
            script = panel_script("panel-a" if model == "panel-c" else model)  # panel-c answers as panel-a
            script["model"] = model
            if model == "panel-a":
                script["rules"].insert(0, {"stage": "synthesis", "contains_all": ['"final_opinion"', MARKERS["k5"]],
                                           "fail": "model"})
            scripts[model] = tmp / f"{model}.json"
            scripts[model].write_text(json.dumps(script))
        judge = tmp / "judge.json"
        judge.write_text(json.dumps(judge_script()))
        run = tmp / "run.yaml"
        run.write_text("max_rounds: 3\n")
        out = tmp / "runs"
        common = ["--cases", str(cases), "--config", str(run), "--judge", "ai-consilium", "--judge-model",
                  f"scripted:{judge}", "--concurrency", "4"]
        config_a = _model_config(tmp / "a.yaml", scripts["panel-a"], PRICES["panel-a"])
        assert main(["cohort", *common, "--model-config", str(config_a), "--extra-model",
                     f"scripted:{scripts['panel-b']}", "--out", str(out / "a")]) == 1
        config_c = _model_config(tmp / "c.yaml", scripts["panel-c"], PRICES["panel-c"])
        assert main(["cohort", *common, "--model-config", str(config_c), "--out", str(out / "b")]) == 0
        [run_a] = list((out / "a").iterdir())
        [run_b] = list((out / "b").iterdir())
        runs = out / "both"
        runs.mkdir()
        run_a, run_b = run_a.rename(runs / "cohort-a"), run_b.rename(runs / "cohort-b")
        arms = {"cohort-a": _read_csv(run_a / "arms.csv"), "cohort-b": _read_csv(run_b / "arms.csv")}
        traces_at_run = {(name, r["model"], r["case_id"], r["format"]): json.loads(
            (runs / name / r["trace"]).read_text(encoding="utf-8"))["calls"]
            for name, rows in arms.items() for r in rows}
        for row in arms["cohort-a"]:
            if row["model"] == "panel-a" and row["status"] == "completed":
                _add_cached_tokens(run_a / row["trace"])
        assert main(["report", str(runs), "--bootstrap", "200"]) == 0
        yield {"runs": runs, "arms": arms, "traces_at_run": traces_at_run}


def _traces(runs: Path, name: str, arms: list[dict[str, str]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """(model, case, format) → the calls of each completed arm's trace as the report reads it."""
    return {(r["model"], r["case_id"], r["format"]): json.loads((runs / name / r["trace"]).read_text())["calls"]
            for r in arms if r["status"] == "completed"}


def test_arms_csv_has_the_dollars_of_every_arm_at_its_models_prices(cohorts: dict[str, Any]) -> None:
    seen_failed = 0
    for name, rows in cohorts["arms"].items():
        assert len(rows) == (12 if name == "cohort-a" else 6)
        for row in rows:
            calls = cohorts["traces_at_run"][(name, row["model"], row["case_id"], row["format"])]
            assert calls, "every arm, failed ones included, made calls"
            if (row["model"], row["case_id"], row["format"]) in FAILS:
                seen_failed += 1
                assert row["status"] == "failed"
            prices = PRICES.get(row["model"])
            if prices is None:  # no prices: unknown, an empty cell, never 0
                assert (row["cost_usd"], row["spent_cost_usd"]) == ("", "")
                assert all(c["prices"] is None for c in calls)
                continue
            assert float(row["cost_usd"]) == pytest.approx(dollars(calls, prices), abs=1e-8)
            assert float(row["spent_cost_usd"]) == pytest.approx(dollars(calls, prices, spent=True), abs=1e-8)
            assert float(row["cost_usd"]) > 0
            assert calls[0]["prices"]["cached_input"] == prices.get("cached_input", prices["input"])
    assert seen_failed == 2


def test_report_cost_table_per_model_and_format(cohorts: dict[str, Any]) -> None:
    runs = cohorts["runs"]
    table = _read_csv(runs / "report" / "cost.csv")
    got = {(r["cohort"], r["model"], r["format"]): r for r in table}
    cached_seen = False
    for name, rows in cohorts["arms"].items():
        traces = _traces(runs, name, rows)
        for model in {r["model"] for r in rows}:
            for fmt in ("free-form", "structured"):
                row = got[(name, model, fmt)]
                mine = [calls for (m, _, f), calls in traces.items() if (m, f) == (model, fmt)]
                assert int(row["cases"]) == len(mine)
                inputs = [sum(c["usage"]["input_tokens"] for c in calls) for calls in mine]
                cached = [sum(c["usage"]["cached_tokens"] for c in calls) for calls in mine]
                cached_seen |= any(cached)
                assert float(row["input_tokens_per_case"]) == pytest.approx(statistics.fmean(inputs), abs=1e-6)
                assert float(row["cached_tokens_per_case"]) == pytest.approx(statistics.fmean(cached), abs=1e-6)
                prices = PRICES.get(model)
                if prices is None:
                    assert row["priced"] == "0"
                    assert (row["cost_usd_per_case"], row["cost_usd_sd"], row["cost_usd_total"]) == ("", "", "")
                    continue
                costs = [dollars(calls, prices) for calls in mine]
                assert row["priced"] == str(len(mine))
                assert float(row["cost_usd_per_case"]) == pytest.approx(statistics.fmean(costs), abs=1e-8)
                assert float(row["cost_usd_sd"]) == pytest.approx(statistics.pstdev(costs), abs=1e-8)
                assert float(row["cost_usd_total"]) == pytest.approx(sum(costs), abs=1e-8)
    assert cached_seen
    # one unpriced model makes a pooled row unknown; a cohort of priced models pools its arms
    assert got[("cohort-a", "pooled", "structured")]["cost_usd_per_case"] == ""
    pooled_b = got[("cohort-b", "pooled", "free-form")]
    assert pooled_b["cost_usd_per_case"] == got[("cohort-b", "panel-c", "free-form")]["cost_usd_per_case"]
    # the cached-input price counts: panel-a's dollars differ from what its tokens cost at the input price
    traces_a = _traces(runs, "cohort-a", cohorts["arms"]["cohort-a"])
    flat = {**PRICES["panel-a"], "cached_input": PRICES["panel-a"]["input"]}
    structured = [calls for (m, _, f), calls in traces_a.items() if (m, f) == ("panel-a", "structured")]
    assert float(got[("cohort-a", "panel-a", "structured")]["cost_usd_total"]) < sum(
        dollars(calls, flat) for calls in structured) - 1e-6
    # the mean judge score is Table 7's
    tokens = {(r["cohort"], r["model"], r["format"]): r for r in _read_csv(runs / "report" / "tokens.csv")}
    for key, row in got.items():
        assert row["mean_judge_score"] == tokens[key]["mean_judge_score"]
    lines = (runs / "report" / "report.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("## Cost per case by model and format"))
    block = lines[start + 2: lines.index("", start + 2)]
    assert block[0].startswith("| model | format | cases | priced | cost_usd_per_case |")
    cells = next(x for x in block if x.startswith("| panel-b | free-form |")).split(" | ")
    assert cells[3:7] == ["0", "–", "–", "–"]  # unknown, never $0


def test_report_cost_by_stage(cohorts: dict[str, Any]) -> None:
    runs = cohorts["runs"]
    table = _read_csv(runs / "report" / "cost_by_stage.csv")
    # the panel's stages (judging's rows, one per rubric and judge model, are tests/judges/test_judge_cost.py's)
    got = {(r["cohort"], r["model"], r["format"], r["stage"]): r for r in table if r["stage"] != "judge"}
    for name, rows in cohorts["arms"].items():
        traces = _traces(runs, name, rows)
        for (model, fmt) in {(m, f) for m, _, f in traces}:
            mine = [calls for (m, _, f), calls in traces.items() if (m, f) == (model, fmt)]
            stages = {c["stage"] for calls in mine for c in calls}
            assert stages == {k[3] for k in got if k[:3] == (name, model, fmt)}
            for stage in stages:
                row = got[(name, model, fmt, stage)]
                prices = PRICES.get(model)
                if prices is None:
                    assert row["cost_usd_per_case"] == ""
                    continue
                expected = statistics.fmean(dollars([c for c in calls if c["stage"] == stage], prices)
                                            for calls in mine)
                assert float(row["cost_usd_per_case"]) == pytest.approx(expected, abs=1e-8)
    order = [k[3] for k in got if k[:3] == ("cohort-b", "panel-c", "structured")]
    assert order == ["role_assignment", "opinion", "synthesis", "vote", "revision"][: len(order)]


def test_report_draws_cost_against_score_per_cohort(cohorts: dict[str, Any]) -> None:
    report = cohorts["runs"] / "report"
    for name in ("cohort-a", "cohort-b"):
        for suffix in (".png", ".pdf"):
            figure = report / f"{name}-consilium" / f"cost_vs_score{suffix}"
            assert figure.is_file() and figure.stat().st_size > 1000
    assert "cost_vs_score.png" in (report / "report.md").read_text(encoding="utf-8")


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, dict[str, Any]]:
    code = main(["simulate", "--case", str(EXAMPLE / "cases" / "diagnostic-myocarditis.yaml"), "--format",
                 "structured", "--out", str(tmp_path / "runs"), *extra])
    assert code == 0
    out = capsys.readouterr().out
    [trace] = list((tmp_path / "runs").rglob("*.trace.json"))
    return out, json.loads(trace.read_text(encoding="utf-8"))


def _usd(value: float) -> str:
    return f"${value:,.4f}" if value >= 0.01 else f"${value:.6f}"


def test_simulate_prints_dollars_beside_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = {"input": 3.0, "cached_input": 0.3, "output": 15.0}
    config = _model_config(tmp_path / "m.yaml", EXAMPLE / "models" / "scripted-panel.yaml", prices)
    out, trace = _simulate(tmp_path, capsys, "--model-config", str(config))
    stages: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in trace["calls"]:
        stages[call["stage"]].append(call)
    for stage, calls in stages.items():
        line = next(x for x in out.splitlines() if x.strip().startswith(stage + " "))
        assert line.rstrip().endswith(_usd(dollars(calls, prices)))
    total = next(x for x in out.splitlines() if x.strip().startswith("total "))
    assert _usd(dollars(trace["calls"], prices)) in total
    assert "—" not in out


def test_simulate_without_prices_shows_unknown_never_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, trace = _simulate(tmp_path, capsys, "--model", f"scripted:{EXAMPLE / 'models' / 'scripted-panel.yaml'}")
    assert all(call["prices"] is None for call in trace["calls"])
    lines = [x for x in out.splitlines() if " / " in x and x.startswith("    ")]
    assert lines and all(x.rstrip().endswith("—") or "—" in x for x in lines)
    assert "$" not in out


def test_a_moderator_model_is_not_priced_by_the_panels_config(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    panel = EXAMPLE / "models" / "scripted-panel.yaml"
    other = tmp_path / "moderator.yaml"
    other.write_text(panel.read_text(encoding="utf-8"))
    config = _model_config(tmp_path / "m.yaml", panel, {"input": 1.0, "output": 2.0})
    out, trace = _simulate(tmp_path, capsys, "--model-config", str(config), "--moderator-model", f"scripted:{other}")
    priced = {call["stage"] for call in trace["calls"] if call["prices"] is not None}
    unpriced = {call["stage"] for call in trace["calls"] if call["prices"] is None}
    assert priced == {"opinion", "vote"} and "synthesis" in unpriced
    total = next(x for x in out.splitlines() if x.strip().startswith("total "))
    assert "—" in total and "$" not in total  # one unpriced model: the trace's cost is unknown


@pytest.mark.parametrize(("prices", "field", "reason"), [
    ("{input: -1, output: 2}", "prices.input", "greater than or equal to 0"),
    ("{input: 1, output: 2, cache: 1}", "prices.cache", "Extra inputs are not permitted"),
    ("{input: 1}", "prices.output", "Field required"),
    ("{input: '1', output: 2}", "prices.input", "valid number"),
])
def test_bad_prices_exit_2_naming_the_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     prices: str, field: str, reason: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(f"spec: scripted:{EXAMPLE / 'models' / 'scripted-panel.yaml'}\nprices: {prices}\n")
    code = main(["simulate", "--case", str(EXAMPLE / "cases" / "diagnostic-myocarditis.yaml"), "--model-config",
                 str(config), "--out", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert f"{config}: {field}:" in err and reason in err
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("*.trace.json"))


def test_a_trace_without_prices_reads_with_cost_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from consilium.graphs.registry import read_trace
    from consilium.models.pricing import trace_cost

    config = _model_config(tmp_path / "m.yaml", EXAMPLE / "models" / "scripted-panel.yaml", {"input": 1, "output": 1})
    _, trace = _simulate(tmp_path, capsys, "--model-config", str(config))
    [path] = list((tmp_path / "runs").rglob("*.trace.json"))
    assert trace_cost(read_trace(path)) == pytest.approx(dollars(trace["calls"], {"input": 1, "output": 1}))
    for call in trace["calls"]:
        del call["prices"]  # as a trace written before prices were recorded
    path.write_text(json.dumps(trace), encoding="utf-8")
    assert trace_cost(read_trace(path)) is None


def test_a_replayed_trace_costs_what_the_recorded_one_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The replay backend serves each call's recorded prices with its recorded usage, so a replayed run shows the
    dollars of the run it reproduces, not unknown."""
    from consilium.api import replay

    prices = {"input": 2.0, "cached_input": 0.5, "output": 8.0}
    config = _model_config(tmp_path / "m.yaml", EXAMPLE / "models" / "scripted-panel.yaml", prices)
    _, recorded = _simulate(tmp_path, capsys, "--model-config", str(config))
    [path] = list((tmp_path / "runs").rglob("*.trace.json"))
    result = replay(path)
    assert result.identical and result.served == len(recorded["calls"])
    calls = [c.model_dump(mode="json") for c in result.replayed.calls]
    assert [c["prices"] for c in calls] == [c["prices"] for c in recorded["calls"]]
    assert dollars(calls, prices) == pytest.approx(dollars(recorded["calls"], prices)) and dollars(calls, prices) > 0
