"""What judging cost, beside what the panel cost: arms.csv, judgements.csv, cohort's closing lines, report's
cost tables, compare and the viewer.

One cohort is run by the real CLI with scripted models (tests/cohort_fixture.py's scripts): ``panel-a`` priced
by its model config, ``panel-b`` without prices, both formats, cases k4–k6, the fixture's failed arm
(``panel-b`` k6 structured), judged on AI Consilium by a jury of two scripted judges, ``judge-alpha`` and
``judge-beta``. judge-alpha answers one item with no JSON at all, so that item is not evaluable after every
repair (its calls still cost); judge-beta's call for one item fails without an answer (a failed call, no usage),
and the fixture's own not-evaluable items are answered "not_evaluable". The cohort's judges have no prices (a
judge of another spec than the priced panel model's is not priced: docs/models.md), so its closing lines and
arms.csv show the judges' tokens and an unknown cost. The same jury then judges the folder again with
``consilium judge --model-config`` pricing judge-alpha (judge-beta stays unpriced), and report, compare and
view read those records.

Every expected number is computed here from the calls in the trace and judgement files and the prices written
in the model configs, never by consilium's cost code.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from cohort_fixture import MARKERS, arm_mark, judge_script, panel_script

from consilium.cli import main

CASES = ("k4", "k5", "k6")
PANEL_PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}  # panel-a's
JUDGE_PRICES = {"input": 0.8, "output": 3.2}  # judge-alpha's, at re-judging; judge-beta has none
FAILED_ARM = ("panel-b", "k6", "structured")
#: (judge, model, format, case, component, criterion): judge-alpha's answer there is no JSON (not evaluable
#: after its repairs), judge-beta's call there fails without an answer
INVALID = ("judge-alpha", "panel-a", "free-form", "k6", "conclusion", "c3")
FAILING = ("judge-beta", "panel-a", "free-form", "k4", "conclusion", "c2")
DASH = "—"


def dollars(calls: list[dict[str, Any]], prices: dict[str, float] | None) -> float | None:
    """By hand: cached prompt tokens at the cached-input price (the input price when none is given), the rest of
    the prompt at the input price, the output at the output price, per million tokens; None without prices."""
    if prices is None and calls:
        return None
    if prices is None:
        return 0.0
    cached_price = prices.get("cached_input", prices["input"])
    return sum(((c["usage"]["input_tokens"] - c["usage"]["cached_tokens"]) * prices["input"]
                + c["usage"]["cached_tokens"] * cached_price + c["usage"]["output_tokens"] * prices["output"]) / 1e6
               for c in calls)


def recorded_dollars(calls: list[dict[str, Any]]) -> float | None:
    """At the prices each call recorded (checked against the configs by the tests): None when any has none."""
    if any(c["prices"] is None for c in calls):
        return None
    return sum(dollars([c], c["prices"]) or 0.0 for c in calls)


def tokens(calls: list[dict[str, Any]], field: str) -> int:
    return sum(c["usage"][field] for c in calls)


def _case(case: str) -> dict[str, Any]:
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARKERS[case]}: a patient with fever and cough for {len(case) + 3} days.",
            "reference": {"diagnosis": "Community-acquired pneumonia"}}


def _judge(name: str, rule: dict[str, Any]) -> dict[str, Any]:
    """The fixture's judge named ``name``, ``rule`` first; a repair (whose last message is the validation error,
    without the case's marker) of the item the rule answers with no JSON is answered with no JSON again."""
    script = judge_script()
    script["model"] = name
    script["rules"].insert(0, rule)
    if "response" in rule:
        script["rules"].append({"stage": "judge", "role": rule["role"], "response": "still no JSON"})
    return script


def _where(key: tuple[str, ...]) -> dict[str, Any]:
    _, model, fmt, case, component, criterion = key
    return {"stage": "judge", "role": f"{component}:{criterion}", "contains_all": [MARKERS[case], arm_mark(model, fmt)]}


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _records(run_dir: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(model, case, format) → the AI Consilium judgement record of that arm."""
    found = {}
    for path in run_dir.rglob("*.judge.ai-consilium.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        trace = json.loads((path.parent / record["trace"]).read_text(encoding="utf-8"))
        found[(trace["model"], trace["case_id"], trace["format"])] = record
    return found


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("judgecost")
    with pytest.MonkeyPatch.context() as patch:  # the conftest's isolation, for a module-wide fixture
        patch.setenv("CONSILIUM_CACHE", str(tmp / "cache.sqlite"))
        patch.setenv("CONSILIUM_LOG_FILE", str(tmp / "consilium.log.jsonl"))
        cases = tmp / "cases"
        cases.mkdir()
        for case in CASES:
            (cases / f"{case}.json").write_text(json.dumps(_case(case)))
        paths = {}
        for name, script in (("panel-a", panel_script("panel-a")), ("panel-b", panel_script("panel-b")),
                             ("judge-alpha", _judge("judge-alpha", {**_where(INVALID), "response": "no JSON here"})),
                             ("judge-beta", _judge("judge-beta", {**_where(FAILING), "fail": "model"}))):
            paths[name] = tmp / f"{name}.json"
            paths[name].write_text(json.dumps(script))
        panel_config = tmp / "panel-a.yaml"
        panel_config.write_text(f"spec: scripted:{paths['panel-a']}\nprices: {json.dumps(PANEL_PRICES)}\n")
        judge_config = tmp / "judge-alpha.yaml"
        judge_config.write_text(f"spec: scripted:{paths['judge-alpha']}\nprices: {json.dumps(JUDGE_PRICES)}\n")
        (tmp / "run.yaml").write_text("max_rounds: 3\n")
        jury = ["--judge-model", f"scripted:{paths['judge-alpha']}", "--judge-model", f"scripted:{paths['judge-beta']}"]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(["cohort", "--cases", str(cases), "--config", str(tmp / "run.yaml"), "--model-config",
                         str(panel_config), "--extra-model", f"scripted:{paths['panel-b']}", "--judge", "ai-consilium",
                         *jury, "--concurrency", "4", "--out", str(tmp / "runs")])
        assert code == 1, "one arm fails"
        [run_dir] = list((tmp / "runs").iterdir())
        at_cohort = {"arms": _csv(run_dir / "arms.csv"), "judgements": _csv(run_dir / "judgements.csv"),
                     "records": _records(run_dir), "stdout": printed.getvalue()}
        with contextlib.redirect_stdout(io.StringIO()):
            main(["judge", str(run_dir), "--rubric", "ai-consilium", *jury, "--model-config", str(judge_config)])
            assert main(["report", str(run_dir), "--bootstrap", "50"]) == 0
            assert main(["compare", str(run_dir), "--bootstrap", "50"]) == 0
            assert main(["view", str(run_dir)]) == 0
        traces = {(r["model"], r["case_id"], r["format"]): json.loads((run_dir / r["trace"]).read_text())
                  for r in at_cohort["arms"] if r.get("trace")}
        # `judge` of the folder judges the failed arm's trace too; the report's tables, as Table 7, are of the
        # completed arms (a failed arm's calls are in arms.csv)
        completed = {k: v for k, v in _records(run_dir).items() if k != FAILED_ARM}
        yield {"run_dir": run_dir, "at_cohort": at_cohort, "records": completed, "traces": traces,
               "all_records": _records(run_dir)}


def _judge_calls(record: dict[str, Any], judge: str | None = None) -> list[dict[str, Any]]:
    return [c for c in record["calls"] if judge is None or c["model"] == judge]


def _failed(record: dict[str, Any], judge: str | None = None) -> int:
    return sum(1 for item in record["items"] for vote in item["votes"] or []
               if (judge is None or vote["model"] == judge) and (vote["reason"] or "").startswith("judge call failed"))


def test_the_fixture_has_what_the_tables_must_count(cohort: dict[str, Any]) -> None:
    """Two judges, a not-evaluable item whose calls cost, a failed judge call with no usage, a failed arm."""
    records = cohort["records"]
    assert len(records) == 11 and ("panel-b", "k6", "structured") not in records
    invalid = records[("panel-a", "k6", "free-form")]
    [item] = [i for i in invalid["items"] if (i["component"], i["criterion"]) == INVALID[4:]]
    [vote] = [v for v in item["votes"] if v["model"] == "judge-alpha"]
    assert vote["not_evaluable"] and not vote["reason"].startswith("judge call failed")
    assert len([c for c in invalid["calls"] if c["role"] == "conclusion:c3" and c["model"] == "judge-alpha"]) >= 2
    assert sum(_failed(r) for r in records.values()) == 1 == _failed(records[("panel-a", "k4", "free-form")],
                                                                       "judge-beta")
    assert {c["model"] for r in records.values() for c in r["calls"]} == {"judge-alpha", "judge-beta"}
    # re-judged: judge-alpha's calls carry its prices, judge-beta's none
    for record in records.values():
        for call in record["calls"]:
            expected = {**JUDGE_PRICES, "cached_input": JUDGE_PRICES["input"]} if call["model"] == "judge-alpha" else None
            assert call["prices"] == expected


def test_arms_csv_has_each_arms_judge_calls_beside_its_panel_cost(cohort: dict[str, Any]) -> None:
    rows, records = cohort["at_cohort"]["arms"], cohort["at_cohort"]["records"]
    assert len(rows) == 12
    for row in rows:
        key = (row["model"], row["case_id"], row["format"])
        calls = records[key]["calls"] if key in records else []
        assert int(row["judge_calls"]) == len(calls)
        assert int(row["judge_input_tokens"]) == tokens(calls, "input_tokens")
        assert int(row["judge_output_tokens"]) == tokens(calls, "output_tokens")
        assert int(row["judge_failed_calls"]) == (1 if key == FAILING[1:2] + (FAILING[3], FAILING[2]) else 0)
        if key == FAILED_ARM:
            assert row["status"] == "failed" and row["judge_calls"] == "0" and float(row["judge_cost_usd"]) == 0.0
        else:  # the cohort's judges have no prices: unknown, an empty cell, never 0
            assert calls and row["judge_cost_usd"] == "" and row["total_cost_usd"] == ""
    failed = next(r for r in rows if (r["model"], r["case_id"], r["format"]) == FAILED_ARM)
    assert failed["total_cost_usd"] == ""  # panel-b has no prices either


def test_judgements_csv_rows_sum_to_each_records_calls(cohort: dict[str, Any]) -> None:
    rows, records = cohort["at_cohort"]["judgements"], cohort["at_cohort"]["records"]
    for key, record in records.items():
        mine = [r for r in rows if (r["model"], r["case_id"], r["format"]) == key]
        assert len(mine) == len(record["items"])
        assert sum(int(r["judge_calls"]) for r in mine) == len(record["calls"])
        assert sum(int(r["judge_input_tokens"]) for r in mine) == tokens(record["calls"], "input_tokens")
        assert sum(int(r["judge_output_tokens"]) for r in mine) == tokens(record["calls"], "output_tokens")
        assert all(r["judge_cost_usd"] == "" for r in mine if int(r["judge_calls"]))
    [invalid] = [r for r in rows if (r["model"], r["format"], r["case_id"], r["component"], r["criterion"])
                 == INVALID[1:]]
    record = records[("panel-a", "k6", "free-form")]
    assert int(invalid["judge_calls"]) == len([c for c in record["calls"] if c["role"] == "conclusion:c3"])
    [failing] = [r for r in rows if (r["model"], r["format"], r["case_id"], r["component"], r["criterion"])
                 == FAILING[1:]]
    assert failing["judge_failed_calls"] == "1"


def test_cohort_closing_lines_show_panel_judges_and_their_sum(cohort: dict[str, Any]) -> None:
    out, records = cohort["at_cohort"]["stdout"], cohort["at_cohort"]["records"]
    rows = cohort["at_cohort"]["arms"]
    panel_in, panel_out = (sum(int(r["input_tokens"] or 0) for r in rows), sum(int(r["output_tokens"] or 0)
                                                                                for r in rows))
    assert f"cost: panel {panel_in:,} in / {panel_out:,} out tokens" in out
    lines = out.splitlines()
    for judge in ("judge-alpha", "judge-beta"):
        calls = [c for r in records.values() for c in _judge_calls(r, judge)]
        [line] = [x for x in lines if x.startswith(f"  judge {judge} (ai-consilium):")]
        failed = sum(_failed(r, judge) for r in records.values())
        assert line == (f"  judge {judge} (ai-consilium): {tokens(calls, 'input_tokens'):,} in / "
                        f"{tokens(calls, 'output_tokens'):,} out tokens, {len(calls):,} calls"
                        + (f", {failed} failed" if failed else "") + f", {DASH}")
    every = [c for r in records.values() for c in r["calls"]]
    judges_line = next(x for x in lines if x.startswith("  judges:"))
    assert f"{tokens(every, 'input_tokens'):,} in / {tokens(every, 'output_tokens'):,} out" in judges_line
    total = next(x for x in lines if x.startswith("  total:"))
    assert total.endswith(DASH) and f"{panel_in + tokens(every, 'input_tokens'):,} in" in total


def _groups(cohort: dict[str, Any]) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """(model, format) → its completed arms, then pooled per format."""
    done = [k for k, t in cohort["traces"].items() if t["status"] == "completed"]
    groups = {(m, f): [k for k in done if (k[0], k[2]) == (m, f)] for m, _, f in done}
    groups.update({("pooled", f): [k for k in done if k[2] == f] for _, _, f in done})
    return groups


def test_report_cost_table_has_judges_and_total_per_model_and_format(cohort: dict[str, Any]) -> None:
    table = {(r["model"], r["format"]): r for r in _csv(cohort["run_dir"] / "report" / "cost.csv")}
    records, traces = cohort["records"], cohort["traces"]
    for (model, fmt), arms in _groups(cohort).items():
        row = table[(model, fmt)]
        calls = [c for k in arms for c in records[k]["calls"]]
        n = len(arms)
        assert int(row["judge_calls"]) == len(calls)
        assert int(row["judge_failed_calls"]) == sum(_failed(records[k]) for k in arms)
        assert float(row["judge_input_tokens_per_case"]) == pytest.approx(tokens(calls, "input_tokens") / n)
        assert float(row["judge_output_tokens_per_case"]) == pytest.approx(tokens(calls, "output_tokens") / n)
        # judge-beta is unpriced: the judges' cost and the total are unknown, never 0
        assert (row["judge_cost_usd_per_case"], row["judge_cost_usd_total"], row["total_cost_usd_per_case"]) == \
            ("", "", "")
        panel = [dollars(traces[k]["calls"], PANEL_PRICES if k[0] == "panel-a" else None) for k in arms]
        if model == "panel-a":
            assert float(row["cost_usd_total"]) == pytest.approx(sum(p or 0.0 for p in panel), abs=1e-8)


def test_report_cost_by_stage_has_each_judge_of_the_jury_apart(cohort: dict[str, Any]) -> None:
    table = [r for r in _csv(cohort["run_dir"] / "report" / "cost_by_stage.csv") if r["stage"] == "judge"]
    records = cohort["records"]
    for (model, fmt), arms in _groups(cohort).items():
        rows = {r["judge_model"]: r for r in table if (r["model"], r["format"]) == (model, fmt)}
        assert set(rows) == {"judge-alpha", "judge-beta"}
        for judge, row in rows.items():
            calls = [c for k in arms for c in _judge_calls(records[k], judge)]
            assert row["rubric"] == "ai-consilium" and int(row["cases"]) == len(arms)
            assert int(row["calls"]) == len(calls)
            assert int(row["failed_calls"]) == sum(_failed(records[k], judge) for k in arms)
            assert float(row["input_tokens_per_case"]) == pytest.approx(tokens(calls, "input_tokens") / len(arms))
            if judge == "judge-alpha":
                expected = dollars(calls, JUDGE_PRICES)
                assert expected is not None and expected > 0
                assert float(row["cost_usd_per_case"]) == pytest.approx(expected / len(arms), abs=1e-8)
            else:
                assert row["cost_usd_per_case"] == ""
    panel_rows = [r for r in _csv(cohort["run_dir"] / "report" / "cost_by_stage.csv") if r["stage"] != "judge"]
    assert all(r["rubric"] == "" and r["judge_model"] == "" for r in panel_rows)


def test_report_cost_by_case_sums_panel_and_judges(cohort: dict[str, Any]) -> None:
    table = {(r["model"], r["format"], r["case_id"]): r for r in _csv(cohort["run_dir"] / "report" / "cost_by_case.csv")}
    records, traces = cohort["records"], cohort["traces"]
    for key, record in records.items():
        row = table[(key[0], key[2], key[1])]
        panel = traces[key]["calls"]
        assert int(row["panel_calls"]) == len(panel)
        assert int(row["panel_input_tokens"]) == tokens(panel, "input_tokens")
        assert int(row["judge_calls"]) == len(record["calls"])
        assert int(row["judge_output_tokens"]) == tokens(record["calls"], "output_tokens")
        panel_cost = dollars(panel, PANEL_PRICES if key[0] == "panel-a" else None)
        if panel_cost is None:
            assert row["panel_cost_usd"] == ""
        else:
            assert float(row["panel_cost_usd"]) == pytest.approx(panel_cost, abs=1e-8)
        assert row["judge_cost_usd"] == row["total_cost_usd"] == ""  # judge-beta: unknown
    assert FAILED_ARM[:1] + (FAILED_ARM[2], FAILED_ARM[1]) not in table  # a failed arm is not a completed case


def test_compare_writes_the_same_cost_tables(cohort: dict[str, Any]) -> None:
    compare, report = cohort["run_dir"] / "compare", cohort["run_dir"] / "report"
    for name in ("cost", "cost_by_stage", "cost_by_case"):
        assert _csv(compare / f"{name}.csv") == _csv(report / f"{name}.csv"), name
    assert "judge_cost_usd_per_case" in (compare / "compare.md").read_text(encoding="utf-8")


class _Cells(HTMLParser):
    """The text of every cell of each table, by the table's class ("" when it has none)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(html: str) -> list[tuple[str, list[list[str]]]]:
    parser = _Cells()
    parser.feed(html)
    return parser.tables


def _usd(value: float | None) -> str:
    if value is None:
        return DASH
    return f"${value:,.4f}" if value >= 0.01 else f"${value:.6f}"


def test_the_viewer_index_shows_panel_judge_and_total_cost_per_arm(cohort: dict[str, Any]) -> None:
    [(_, [header, *rows])] = [t for t in _tables((cohort["run_dir"] / "view" / "index.html").read_text()) if
                              t[0] == "arms"]
    assert header[7:12] == ["panel tokens", "panel cost", "judge tokens", "judge cost", "total cost"]
    shown = {(r[2], r[0], r[3]): r for r in rows}
    for key, trace in cohort["traces"].items():
        row = shown[key]
        records = cohort["all_records"]  # the failed arm's trace was judged too, by `judge` of the folder
        calls = records[key]["calls"] if key in records else []
        failed = _failed(records[key]) if key in records else 0
        panel = recorded_dollars(trace["calls"])
        judge = recorded_dollars(calls) if calls else 0.0
        assert row[8] == _usd(panel)
        assert row[9] == f"{tokens(calls, 'input_tokens') + tokens(calls, 'output_tokens'):,}" + (
            f" ({failed} failed calls)" if failed else "")
        assert row[10] == _usd(judge) and row[11] == _usd(None if panel is None or judge is None else panel + judge)
    assert any(r[8].startswith("$") for r in rows) and all(r[10] == DASH for r in rows if r[4] == "completed")


def _arm_page(cohort: dict[str, Any], key: tuple[str, str, str]) -> Path:
    trace = next(r["trace"] for r in cohort["at_cohort"]["arms"] if (r["model"], r["case_id"], r["format"]) == key)
    return cohort["run_dir"] / "view" / trace.replace(".trace.json", ".html")


def test_an_arm_page_shows_each_judges_cost_and_the_sum(cohort: dict[str, Any]) -> None:
    key = ("panel-a", "k4", "free-form")
    page = _arm_page(cohort, key)
    [(_, [header, *rows])] = [t for t in _tables(page.read_text()) if t[1] and t[1][0][:2] == ["who", "rubric"]]
    record, trace = cohort["records"][key], cohort["traces"][key]
    by = {r[0]: r for r in rows}
    alpha, beta = _judge_calls(record, "judge-alpha"), _judge_calls(record, "judge-beta")
    assert by["panel"][2:5] == [str(tokens(trace["calls"], "input_tokens")), str(tokens(trace["calls"],
                                                                                          "output_tokens")),
                                str(len(trace["calls"]))]
    assert by["panel"][6] == _usd(dollars(trace["calls"], PANEL_PRICES))
    assert by["judge judge-alpha"][1:] == ["ai-consilium", str(tokens(alpha, "input_tokens")),
                                           str(tokens(alpha, "output_tokens")), str(len(alpha)), "0",
                                           _usd(dollars(alpha, JUDGE_PRICES))]
    assert by["judge judge-beta"][5:] == ["1", DASH]  # its failed call counted, not as a call of no tokens
    assert by["judges"][4] == str(len(alpha) + len(beta)) and by["judges"][6] == DASH
    assert by["panel + judges"][6] == DASH


def test_an_arm_page_with_its_costs_renders_in_headless_chromium(cohort: dict[str, Any], tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package chromium)")
    page = _arm_page(cohort, ("panel-a", "k4", "free-form"))
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    alpha = _judge_calls(cohort["records"][("panel-a", "k4", "free-form")], "judge-alpha")
    assert "Cost: panel and judges" in done.stdout, done.stderr[-2000:]
    assert _usd(dollars(alpha, JUDGE_PRICES)) in done.stdout
