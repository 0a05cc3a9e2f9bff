"""What judging cost, beside what the panel cost: arms.csv, judgements.csv, cohort's closing lines, report's
cost tables, compare and the viewer.

One cohort is run by the real CLI with scripted models (tests/support/cohort_fixture.py's scripts): ``panel-a`` priced
by its model config, ``panel-b`` without prices, both formats, cases k4–k6, the fixture's failed arm
(``panel-b`` k6 structured), judged on AI Consilium by a jury of two scripted judges: ``judge-alpha``, priced by
its own model config file, and ``judge-beta``, without prices. judge-alpha answers one item with no JSON at all,
so that item is not evaluable after every repair (its calls still cost); judge-beta's call for one item fails
without an answer (a failed call, no usage); the fixture's own not-evaluable items are answered
"not_evaluable". So the cohort's closing lines and arms.csv show judge-alpha's dollars and an unknown total.
``consilium judge --force`` then judges the folder again by judge-alpha and ``judge-gamma`` (priced otherwise,
its call for the same item failing too), so that report, compare and view, which read the records, have known
totals for the priced panel model beside unknown ones for the other.

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
from support.cohort_fixture import MARKERS, arm_mark, judge_script, panel_script
from support.isolation import isolated

from consilium.cli import main

CASES = ("k4", "k5", "k6")
PANEL_PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}  # panel-a's; panel-b has none
#: each judge's prices (USD per 1M tokens); judge-beta has none
PRICES: dict[str, dict[str, float] | None] = {"judge-alpha": {"input": 0.8, "output": 3.2}, "judge-beta": None,
                                              "judge-gamma": {"input": 0.3, "cached_input": 0.1, "output": 1.2}}
FAILED_ARM = ("panel-b", "k6", "structured")
#: (model, format, case, component, criterion): judge-alpha's answer there is no JSON (not evaluable after its
#: repairs); judge-beta's and judge-gamma's call there fails without an answer
INVALID = ("panel-a", "free-form", "k6", "conclusion", "c3")
FAILING = ("panel-a", "free-form", "k4", "conclusion", "c2")
FAILING_ARM = ("panel-a", "k4", "free-form")
DASH = "—"


def dollars(calls: list[dict[str, Any]], prices: dict[str, float] | None) -> float | None:
    """By hand: cached prompt tokens at the cached-input price (the input price when none is given), the rest of
    the prompt at the input price, the output at the output price, per million tokens; None without prices
    (0 for no call)."""
    if not calls:
        return 0.0
    if prices is None:
        return None
    cached_price = prices.get("cached_input", prices["input"])
    return float(sum(((c["usage"]["input_tokens"] - c["usage"]["cached_tokens"]) * prices["input"]
                      + c["usage"]["cached_tokens"] * cached_price + c["usage"]["output_tokens"] * prices["output"])
                     / 1e6 for c in calls))


def judges_dollars(calls: list[dict[str, Any]]) -> float | None:
    """Each judge's calls at its prices in :data:`PRICES`, summed; None when a judge that made calls has none."""
    parts = [dollars([c for c in calls if c["model"] == judge], PRICES[judge]) for judge in PRICES]
    return None if any(p is None for p in parts) else sum(p or 0.0 for p in parts)


def plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def panel_dollars(key: tuple[str, str, str], trace: dict[str, Any]) -> float | None:
    return dollars(trace["calls"], PANEL_PRICES if key[0] == "panel-a" else None)


def tokens(calls: list[dict[str, Any]], field: str) -> int:
    return sum(c["usage"][field] for c in calls)


def _case(case: str) -> dict[str, Any]:
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARKERS[case]}: a patient with fever and cough for {len(case) + 3} days.",
            "reference": {"diagnosis": "Community-acquired pneumonia"}}


def _where(key: tuple[str, ...]) -> dict[str, Any]:
    model, fmt, case, component, criterion = key
    return {"stage": "judge", "role": f"{component}:{criterion}", "contains_all": [MARKERS[case], arm_mark(model, fmt)]}


def _judge(name: str) -> dict[str, Any]:
    """The fixture's judge named ``name``: judge-alpha answers :data:`INVALID` with no JSON (and its repairs,
    whose last message is the validation error without the case's marker, too); the others fail at
    :data:`FAILING`."""
    script = judge_script()
    script["model"] = name
    if name == "judge-alpha":
        script["rules"].insert(0, {**_where(INVALID), "response": "no JSON here"})
        script["rules"].append({"stage": "judge", "role": f"{INVALID[3]}:{INVALID[4]}", "response": "still no JSON"})
    else:
        script["rules"].insert(0, {**_where(FAILING), "fail": "model"})
    return script


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
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        cases = tmp / "cases"
        cases.mkdir()
        for case in CASES:
            (cases / f"{case}.json").write_text(json.dumps(_case(case)))
        scripts = {"panel-a": panel_script("panel-a"), "panel-b": panel_script("panel-b"),
                   **{judge: _judge(judge) for judge in PRICES}}
        configs = {}
        for name, script in scripts.items():
            (tmp / f"{name}.json").write_text(json.dumps(script))
            prices = PANEL_PRICES if name == "panel-a" else PRICES.get(name)
            configs[name] = tmp / f"{name}.yaml"
            configs[name].write_text(f"spec: scripted:{tmp / f'{name}.json'}\n"
                                     + (f"prices: {json.dumps(prices)}\n" if prices else ""))
        (tmp / "run.yaml").write_text("max_rounds: 3\n")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(["cohort", "--cases", str(cases), "--config", str(tmp / "run.yaml"), "--model-config",
                         str(configs["panel-a"]), "--extra-model", f"scripted:{tmp / 'panel-b.json'}", "--judge",
                         "ai-consilium", "--judge-model", str(configs["judge-alpha"]), "--judge-model",
                         str(configs["judge-beta"]), "--concurrency", "4", "--out", str(tmp / "runs")])
        assert code == 1, "one arm fails"
        [run_dir] = list((tmp / "runs").iterdir())
        at_cohort: dict[str, Any] = {"arms": _csv(run_dir / "arms.csv"), "judgements": _csv(run_dir / "judgements.csv"),
                     "records": _records(run_dir), "stdout": printed.getvalue()}
        with contextlib.redirect_stdout(io.StringIO()):
            main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", str(configs["judge-alpha"]),
                  "--judge-model", str(configs["judge-gamma"]), "--force"])
            assert main(["report", str(run_dir), "--bootstrap", "50"]) == 0
            assert main(["compare", str(run_dir), "--bootstrap", "50"]) == 0
            assert main(["view", str(run_dir)]) == 0
        traces = {(r["model"], r["case_id"], r["format"]): json.loads((run_dir / r["trace"]).read_text())
                  for r in at_cohort["arms"] if r.get("trace")}
        # `judge` of the folder judges the failed arm's trace too; the report's tables, as Table 7, are of the
        # completed arms (a failed arm's calls are in arms.csv)
        every = _records(run_dir)
        yield {"run_dir": run_dir, "at_cohort": at_cohort, "traces": traces, "all_records": every,
               "records": {k: v for k, v in every.items() if k != FAILED_ARM}, "tmp": tmp}


def _judge_calls(record: dict[str, Any], judge: str | None = None) -> list[dict[str, Any]]:
    return [c for c in record["calls"] if judge is None or c["model"] == judge]


def _failed(record: dict[str, Any], judge: str | None = None) -> int:
    return sum(1 for item in record["items"] for vote in item["votes"] or []
               if (judge is None or vote["model"] == judge) and (vote["reason"] or "").startswith("judge call failed"))


def test_the_fixture_has_what_the_tables_must_count(cohort: dict[str, Any]) -> None:
    """Two judges at a time, a not-evaluable item whose calls cost, a failed judge call with no usage, a failed arm,
    each judge's calls at its own prices."""
    for records, judges in ((cohort["at_cohort"]["records"], {"judge-alpha", "judge-beta"}),
                            (cohort["records"], {"judge-alpha", "judge-gamma"})):
        assert len(records) == 11 and FAILED_ARM not in records
        invalid = records[(INVALID[0], INVALID[2], INVALID[1])]
        [item] = [i for i in invalid["items"] if (i["component"], i["criterion"]) == INVALID[3:]]
        [vote] = [v for v in item["votes"] if v["model"] == "judge-alpha"]
        assert vote["not_evaluable"] and not vote["reason"].startswith("judge call failed")
        assert len([c for c in _judge_calls(invalid, "judge-alpha") if c["role"] == "conclusion:c3"]) >= 2
        other = (judges - {"judge-alpha"}).pop()
        assert sum(_failed(r) for r in records.values()) == 1 == _failed(records[FAILING_ARM], other)
        assert {c["model"] for r in records.values() for c in r["calls"]} == judges
        for record in records.values():
            for call in record["calls"]:
                prices = PRICES[call["model"]]
                assert call["prices"] == (None if prices is None else {"cached_input": prices["input"], **prices})


def test_arms_csv_has_each_arms_judge_calls_beside_its_panel_cost(cohort: dict[str, Any]) -> None:
    rows, records = cohort["at_cohort"]["arms"], cohort["at_cohort"]["records"]
    assert len(rows) == 12
    for row in rows:
        key = (row["model"], row["case_id"], row["format"])
        calls = records[key]["calls"] if key in records else []
        assert int(row["judge_calls"]) == len(calls)
        assert int(row["judge_input_tokens"]) == tokens(calls, "input_tokens")
        assert int(row["judge_output_tokens"]) == tokens(calls, "output_tokens")
        assert int(row["judge_failed_calls"]) == (1 if key == FAILING_ARM else 0)
        if key == FAILED_ARM:  # not judged: nothing spent on it
            assert row["status"] == "failed" and row["judge_calls"] == "0" and float(row["judge_cost_usd"]) == 0.0
            assert row["total_cost_usd"] == ""  # panel-b has no prices
        else:  # judge-beta has no prices: unknown, an empty cell, never 0
            assert calls and row["judge_cost_usd"] == "" and row["total_cost_usd"] == ""


def test_judgements_csv_rows_sum_to_each_records_calls(cohort: dict[str, Any]) -> None:
    rows, records = cohort["at_cohort"]["judgements"], cohort["at_cohort"]["records"]
    for key, record in records.items():
        mine = [r for r in rows if (r["model"], r["case_id"], r["format"]) == key]
        assert len(mine) == len(record["items"])
        assert sum(int(r["judge_calls"]) for r in mine) == len(record["calls"])
        assert sum(int(r["judge_input_tokens"]) for r in mine) == tokens(record["calls"], "input_tokens")
        assert sum(int(r["judge_output_tokens"]) for r in mine) == tokens(record["calls"], "output_tokens")
    item = {(r["model"], r["format"], r["case_id"], r["component"], r["criterion"]): r for r in rows}
    invalid = records[(INVALID[0], INVALID[2], INVALID[1])]
    assert int(item[INVALID]["judge_calls"]) == len([c for c in invalid["calls"] if c["role"] == "conclusion:c3"])
    assert item[INVALID]["judge_cost_usd"] == ""  # judge-beta's call of it has no prices
    # judge-beta's call failed: the item's one answered call is judge-alpha's, at its prices
    [alpha] = [c for c in records[FAILING_ARM]["calls"] if c["role"] == "conclusion:c2"]
    assert (item[FAILING]["judge_calls"], item[FAILING]["judge_failed_calls"]) == ("1", "1")
    assert float(item[FAILING]["judge_cost_usd"]) == pytest.approx(dollars([alpha], PRICES["judge-alpha"]), abs=1e-8)


def _usd(value: float | None) -> str:
    if value is None:
        return DASH
    return f"${value:,.4f}" if value >= 0.01 else f"${value:.6f}"


def test_cohort_closing_lines_show_panel_judges_and_their_sum(cohort: dict[str, Any]) -> None:
    out, records = cohort["at_cohort"]["stdout"], cohort["at_cohort"]["records"]
    rows = cohort["at_cohort"]["arms"]
    panel_in, panel_out = (sum(int(r["input_tokens"] or 0) for r in rows), sum(int(r["output_tokens"] or 0)
                                                                                for r in rows))
    lines = out.splitlines()
    assert f"cost: panel {panel_in:,} in / {panel_out:,} out tokens" in out
    assert next(x for x in lines if x.startswith("cost: panel")).endswith(DASH)  # panel-b has no prices
    for judge in ("judge-alpha", "judge-beta"):
        calls = [c for r in records.values() for c in _judge_calls(r, judge)]
        [line] = [x for x in lines if x.startswith(f"  judge {judge} (ai-consilium):")]
        failed = sum(_failed(r, judge) for r in records.values())
        assert line == (f"  judge {judge} (ai-consilium): {tokens(calls, 'input_tokens'):,} in / "
                        f"{tokens(calls, 'output_tokens'):,} out tokens, {len(calls):,} calls"
                        + (f", {failed} failed" if failed else "") + f", {_usd(dollars(calls, PRICES[judge]))}")
    every = [c for r in records.values() for c in r["calls"]]
    judges_line = next(x for x in lines if x.startswith("  judges:"))
    assert f"{tokens(every, 'input_tokens'):,} in / {tokens(every, 'output_tokens'):,} out" in judges_line
    assert judges_line.endswith(DASH)
    total = next(x for x in lines if x.startswith("  total:"))
    assert total.endswith(DASH) and f"{panel_in + tokens(every, 'input_tokens'):,} in" in total


def _groups(cohort: dict[str, Any]) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """(model, format) → its completed arms, then pooled per format."""
    done = [k for k, t in cohort["traces"].items() if t["status"] == "completed"]
    groups = {(m, f): [k for k in done if (k[0], k[2]) == (m, f)] for m, _, f in done}
    groups.update({("pooled", f): [k for k in done if k[2] == f] for _, _, f in done})
    return groups


def _number(cell: str) -> float | None:
    return None if cell == "" else float(cell)


def test_report_cost_table_has_judges_and_total_per_model_and_format(cohort: dict[str, Any]) -> None:
    table = {(r["model"], r["format"]): r for r in _csv(cohort["run_dir"] / "report" / "cost.csv")}
    records, traces = cohort["records"], cohort["traces"]
    known_total = 0
    for (model, fmt), arms in _groups(cohort).items():
        row, n = table[(model, fmt)], len(arms)
        calls = [c for k in arms for c in records[k]["calls"]]
        assert int(row["judge_calls"]) == len(calls)
        assert int(row["judge_failed_calls"]) == sum(_failed(records[k]) for k in arms)
        assert float(row["judge_input_tokens_per_case"]) == pytest.approx(tokens(calls, "input_tokens") / n)
        assert float(row["judge_output_tokens_per_case"]) == pytest.approx(tokens(calls, "output_tokens") / n)
        judges = judges_dollars(calls)
        assert judges is not None and judges > 0
        assert float(row["judge_cost_usd_total"]) == pytest.approx(judges, abs=1e-8)
        assert float(row["judge_cost_usd_per_case"]) == pytest.approx(judges / n, abs=1e-8)
        panel = [panel_dollars(k, traces[k]) for k in arms]
        total = None if any(p is None for p in panel) else sum(p or 0.0 for p in panel) + judges
        if total is None:  # panel-b (and a pool with it) has no prices: the total is unknown, never the judges'
            assert (row["cost_usd_total"], row["total_cost_usd_total"], row["total_cost_usd_per_case"]) == ("", "", "")
            continue
        known_total += 1
        assert _number(row["total_cost_usd_total"]) == pytest.approx(total, abs=1e-8)
        assert _number(row["total_cost_usd_per_case"]) == pytest.approx(total / n, abs=1e-8)
    assert known_total == 2  # panel-a's two formats


def test_report_cost_by_stage_has_each_judge_of_the_jury_apart(cohort: dict[str, Any]) -> None:
    every = _csv(cohort["run_dir"] / "report" / "cost_by_stage.csv")
    table = [r for r in every if r["stage"] == "judge"]
    records = cohort["records"]
    for (model, fmt), arms in _groups(cohort).items():
        rows = {r["judge_model"]: r for r in table if (r["model"], r["format"]) == (model, fmt)}
        assert set(rows) == {"judge-alpha", "judge-gamma"}
        for judge, row in rows.items():
            calls = [c for k in arms for c in _judge_calls(records[k], judge)]
            assert row["rubric"] == "ai-consilium" and int(row["cases"]) == len(arms)
            assert int(row["calls"]) == len(calls)
            assert int(row["failed_calls"]) == sum(_failed(records[k], judge) for k in arms)
            assert float(row["input_tokens_per_case"]) == pytest.approx(tokens(calls, "input_tokens") / len(arms))
            expected = dollars(calls, PRICES[judge])
            assert expected is not None and expected > 0
            assert float(row["cost_usd_per_case"]) == pytest.approx(expected / len(arms), abs=1e-8)
    assert all(r["rubric"] == "" and r["judge_model"] == "" for r in every if r["stage"] != "judge")


def test_report_cost_by_case_sums_panel_and_judges(cohort: dict[str, Any]) -> None:
    rows = _csv(cohort["run_dir"] / "report" / "cost_by_case.csv")
    table = {(r["model"], r["format"], r["case_id"]): r for r in rows}
    records, traces = cohort["records"], cohort["traces"]
    for key, record in records.items():
        row = table[(key[0], key[2], key[1])]
        panel = traces[key]["calls"]
        assert int(row["panel_calls"]) == len(panel)
        assert int(row["panel_input_tokens"]) == tokens(panel, "input_tokens")
        assert int(row["judge_calls"]) == len(record["calls"])
        assert int(row["judge_output_tokens"]) == tokens(record["calls"], "output_tokens")
        assert int(row["judge_failed_calls"]) == _failed(record)
        panel, judges = panel_dollars(key, traces[key]), judges_dollars(record["calls"])
        assert _number(row["judge_cost_usd"]) == pytest.approx(judges, abs=1e-8)
        if panel is None:  # panel-b has no prices: its cost and the total unknown, never 0
            assert (row["panel_cost_usd"], row["total_cost_usd"]) == ("", "")
        else:
            assert _number(row["panel_cost_usd"]) == pytest.approx(panel, abs=1e-8)
            assert _number(row["total_cost_usd"]) == pytest.approx(plus(panel, judges), abs=1e-8)
    for fmt in ("free-form", "structured"):
        for case in CASES:
            pooled = table[("pooled", fmt, case)]
            arms = [k for k in records if k[1:] == (case, fmt)]
            assert int(pooled["judge_calls"]) == sum(len(records[k]["calls"]) for k in arms)
    assert ("panel-b", "structured", "k6") not in table  # a failed arm is not a completed case


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


def test_the_viewer_index_shows_panel_judge_and_total_cost_per_arm(cohort: dict[str, Any]) -> None:
    [(_, [header, *rows])] = [t for t in _tables((cohort["run_dir"] / "view" / "index.html").read_text()) if
                              t[0] == "arms"]
    assert header[7:12] == ["panel tokens", "panel cost", "judge tokens", "judge cost", "total cost"]
    shown = {(r[2], r[0], r[3]): r for r in rows}
    records = cohort["all_records"]  # the failed arm's trace was judged too, by `judge` of the folder
    for key, trace in cohort["traces"].items():
        row = shown[key]
        calls = records[key]["calls"] if key in records else []
        failed = _failed(records[key]) if key in records else 0
        panel, judges = panel_dollars(key, trace), judges_dollars(calls)
        assert row[8] == _usd(panel)
        assert row[9] == f"{tokens(calls, 'input_tokens') + tokens(calls, 'output_tokens'):,}" + (
            f" ({failed} failed calls)" if failed else "")
        assert (row[10], row[11]) == (_usd(judges), _usd(plus(panel, judges)))
    assert {r[11] == DASH for r in rows} == {True, False}  # panel-a's totals known, panel-b's not


def _arm_page(cohort: dict[str, Any], key: tuple[str, str, str]) -> Path:
    trace = next(r["trace"] for r in cohort["at_cohort"]["arms"] if (r["model"], r["case_id"], r["format"]) == key)
    return Path(cohort["run_dir"]) / "view" / str(trace).replace(".trace.json", ".html")


def test_an_arm_page_shows_each_judges_cost_and_the_sum(cohort: dict[str, Any]) -> None:
    page = _arm_page(cohort, FAILING_ARM)
    [(_, [_, *rows])] = [t for t in _tables(page.read_text()) if t[1] and t[1][0][:2] == ["who", "rubric"]]
    record, trace = cohort["records"][FAILING_ARM], cohort["traces"][FAILING_ARM]
    by = {r[0]: r for r in rows}
    alpha, gamma = _judge_calls(record, "judge-alpha"), _judge_calls(record, "judge-gamma")
    panel = panel_dollars(FAILING_ARM, trace)
    assert by["panel"][2:5] == [str(tokens(trace["calls"], f)) for f in ("input_tokens", "output_tokens")] + [
        str(len(trace["calls"]))]
    assert by["panel"][6] == _usd(panel)
    for judge, calls, failed in (("judge-alpha", alpha, "0"), ("judge-gamma", gamma, "1")):
        # judge-gamma's failed call counted apart, not as a call of no tokens
        assert by[f"judge {judge}"][1:] == ["ai-consilium", str(tokens(calls, "input_tokens")),
                                            str(tokens(calls, "output_tokens")), str(len(calls)), failed,
                                            _usd(dollars(calls, PRICES[judge]))]
    judges = judges_dollars(alpha + gamma)
    assert by["judges"][4:] == [str(len(alpha) + len(gamma)), "1", _usd(judges)]
    assert by["panel + judges"][6] == _usd(plus(panel, judges)) != DASH


def test_an_arm_page_with_its_costs_renders_in_headless_chromium(cohort: dict[str, Any], tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package chromium)")
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", _arm_page(cohort, FAILING_ARM).as_uri()], capture_output=True, text=True, timeout=120)
    record, trace = cohort["records"][FAILING_ARM], cohort["traces"][FAILING_ARM]
    assert "Cost: panel and judges" in done.stdout, done.stderr[-2000:]
    total = plus(panel_dollars(FAILING_ARM, trace), judges_dollars(record["calls"]))
    assert "<td>panel + judges</td>" in done.stdout and f"<td>{_usd(total)}</td>" in done.stdout


def test_the_cost_figure_puts_each_point_at_its_panel_and_its_panel_plus_judges_cost(cohort: dict[str, Any]) -> None:
    """The figure's numbers (a pure function of the cohort, consilium/reports/figures/cost.py draws them): panel-a's
    points at its mean panel cost and, hollow, at that plus its mean judge cost; panel-b has no point (no prices)."""
    from consilium.reports.consilium.cost import cost_points
    from consilium.reports.consilium.data import load_cohort_data

    points = {(p.model, p.format): p for p in cost_points(load_cohort_data(cohort["run_dir"]))}
    assert set(points) == {("panel-a", "free-form"), ("panel-a", "structured")}
    for (model, fmt), point in points.items():
        arms = _groups(cohort)[(model, fmt)]
        panel = [panel_dollars(k, cohort["traces"][k]) or 0.0 for k in arms]
        judges = judges_dollars([c for k in arms for c in cohort["records"][k]["calls"]])
        assert point.cost == pytest.approx(sum(panel) / len(arms), abs=1e-10)
        assert point.judge_cost == pytest.approx((judges or 0.0) / len(arms), abs=1e-10)
    for suffix in (".png", ".pdf"):
        assert (cohort["run_dir"] / "report" / f"cost_vs_score{suffix}").stat().st_size > 1000


def test_judging_the_folder_again_rewrites_arms_csv_judge_columns_from_its_records(cohort: dict[str, Any]) -> None:
    """After ``judge RUN_DIR --force`` by judge-alpha and judge-gamma (both priced), arms.csv's judge columns count
    the records now beside each arm's trace (the failed arm's, which that judging scored, included), never the
    cohort's own judging by the half-priced jury it replaced; the panel's columns are as the cohort wrote them."""
    rows = _csv(cohort["run_dir"] / "arms.csv")
    before = {(r["model"], r["case_id"], r["format"]): r for r in cohort["at_cohort"]["arms"]}
    records = cohort["all_records"]
    assert len(rows) == len(before) == 12 and FAILED_ARM in records
    for row in rows:
        key = (row["model"], row["case_id"], row["format"])
        assert {c: v for c, v in row.items() if not c.startswith(("judge_", "total_"))} == {
            c: v for c, v in before[key].items() if not c.startswith(("judge_", "total_"))}
        calls = records[key]["calls"]
        assert {c["model"] for c in calls} == {"judge-alpha", "judge-gamma"}
        assert int(row["judge_calls"]) == len(calls)
        assert int(row["judge_input_tokens"]) == tokens(calls, "input_tokens")
        assert int(row["judge_output_tokens"]) == tokens(calls, "output_tokens")
        assert int(row["judge_failed_calls"]) == (1 if key == FAILING_ARM else 0)
        judges = judges_dollars(calls)
        assert judges is not None and float(row["judge_cost_usd"]) == pytest.approx(judges, abs=1e-8)
        panel = panel_dollars(key, cohort["traces"][key])
        if panel is None:  # panel-b has no prices: the total unknown, an empty cell, never the judges' alone
            assert row["total_cost_usd"] == ""
        else:
            assert float(row["total_cost_usd"]) == pytest.approx(panel + judges, abs=1e-8)


def _reworded(record: Path, out: Path) -> Path:
    """A copy of ``record`` whose failed judge call's reason says something else."""
    data = json.loads(record.read_text(encoding="utf-8"))
    for item in data["items"]:
        for vote in item["votes"] or []:
            if (vote["reason"] or "").startswith("judge call failed"):
                vote["reason"] = "the judge's server went away"
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def test_a_failed_judge_call_is_counted_from_the_record_not_from_its_reasons_wording(
        cohort: dict[str, Any], tmp_path: Path) -> None:
    """Each judge's vote records the calls that failed without an answer: judge-gamma's at FAILING is 1 and every
    other vote's 0, so a reason worded otherwise still counts it."""
    from consilium.judges.cost import judge_costs
    from consilium.judges.record import read_judgement

    record = cohort["all_records"][FAILING_ARM]
    votes = {(i["component"], i["criterion"], v["model"]): v for i in record["items"] for v in i["votes"]}
    assert votes[(*FAILING[3:], "judge-gamma")]["failed_calls"] == 1
    assert sum(v["failed_calls"] for v in votes.values()) == 1
    trace = next(r["trace"] for r in cohort["at_cohort"]["arms"] if (r["model"], r["case_id"], r["format"])
                 == FAILING_ARM)
    path = cohort["run_dir"] / str(trace).replace(".trace.json", ".judge.ai-consilium.json")
    costs = {c.judge_model: c.failed_calls for c in judge_costs(read_judgement(_reworded(path, tmp_path / path.name)))}
    assert costs == {"judge-alpha": 0, "judge-gamma": 1}


def test_a_failed_call_that_several_items_read_counts_once(cohort: dict[str, Any], tmp_path: Path) -> None:
    """The four-decision rubric asks one call for a conclusion's four dimensions: when it fails, the four items are
    not evaluable, and the judgement has one failed call, not four."""
    from consilium.judges.cost import judge_costs
    from consilium.judges.record import read_judgement

    trace = json.loads((cohort["run_dir"] / next(
        r["trace"] for r in cohort["at_cohort"]["arms"] if (r["model"], r["case_id"], r["format"]) == FAILING_ARM
    )).read_text(encoding="utf-8"))
    trace["case"]["reference"]["conclusion"] = "Community-acquired pneumonia: oral amoxicillin, review in 48 hours."
    path = tmp_path / "arm.trace.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    (tmp_path / "failing.json").write_text(json.dumps({"model": "judge-down",
                                                       "rules": [{"stage": "judge", "fail": "model"}]}))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["judge", str(path), "--rubric", "otb-four-decision", "--scope", "judge", "--judge-model",
              f"scripted:{tmp_path / 'failing.json'}", "--max-attempts", "1"])
    judgement = read_judgement(tmp_path / "arm.judge.otb-four-decision.json")
    conclusion = [i for i in judgement.items if i.component == "conclusion"]
    assert len(conclusion) == 4 and all(i.not_evaluable for i in conclusion) and judgement.calls == []
    assert [c.failed_calls for c in judge_costs(judgement)] == [1]


def test_a_jurys_model_config_prices_the_judge_it_configures(cohort: dict[str, Any], tmp_path: Path) -> None:
    """``judge --model-config FILE`` with a jury: FILE's prices are its own model's (judge-alpha's, second here),
    never the first ``--judge-model``'s (judge-gamma, given by a plain spec: unpriced)."""
    tmp = cohort["tmp"]
    source = cohort["run_dir"] / next(r["trace"] for r in cohort["at_cohort"]["arms"]
                                      if (r["model"], r["case_id"], r["format"]) == ("panel-a", "k5", "structured"))
    path = tmp_path / "arm.trace.json"
    shutil.copyfile(source, path)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["judge", str(path), "--rubric", "ai-consilium", "--model-config", str(tmp / "judge-alpha.yaml"),
                     "--judge-model", f"scripted:{tmp / 'judge-gamma.json'}",
                     "--judge-model", f"scripted:{tmp / 'judge-alpha.json'}"]) == 0
    record = json.loads((tmp_path / "arm.judge.ai-consilium.json").read_text(encoding="utf-8"))
    alpha = PRICES["judge-alpha"]
    assert alpha is not None
    prices = {c["model"]: c["prices"] for c in record["calls"]}
    assert prices == {"judge-alpha": {"cached_input": alpha["input"], **alpha}, "judge-gamma": None}


def test_with_only_judgements_csv_left_the_judge_columns_are_unknown_never_zero(
        cohort: dict[str, Any], tmp_path: Path) -> None:
    """A copy of the cohort without its judgement records (judgements.csv holds the scores, not the calls): report's
    judge and total cells are unknown (None: an empty cell), never 0 calls, 0 tokens or the panel's cost alone; the
    panel's stay known. The tables are what report writes (consilium/reports/consilium/cost.py)."""
    from consilium.reports.consilium.cost import cost_by_case, cost_by_stage, cost_table
    from consilium.reports.consilium.data import load_cohort_data

    copy = tmp_path / "cohort"
    shutil.copytree(cohort["run_dir"], copy,
                    ignore=shutil.ignore_patterns("report", "compare", "view", "*.judge.*.json"))
    data = load_cohort_data(copy)
    assert data.judgements_from == "judgements.csv" and data.judgements
    rows = cost_table(data)
    assert rows and all(row[c] is None for row in rows for c in (
        "judge_calls", "judge_failed_calls", "judge_input_tokens_per_case", "judge_output_tokens_per_case",
        "judge_cost_usd_per_case", "judge_cost_usd_total", "total_cost_usd_per_case", "total_cost_usd_total"))
    panel_a = [row for row in rows if row["model"] == "panel-a"]
    assert len(panel_a) == 2 and all(row["cost_usd_total"] > 0 for row in panel_a)
    by_case = cost_by_case(data)
    assert by_case and all(row[c] is None for row in by_case for c in (
        "judge_calls", "judge_failed_calls", "judge_input_tokens", "judge_output_tokens", "judge_cost_usd",
        "total_cost_usd"))
    assert not [r for r in cost_by_stage(data) if r["stage"] == "judge"]


def test_the_per_case_rows_sum_to_each_model_and_formats_totals(cohort: dict[str, Any]) -> None:
    """cost_by_case.csv's rows of a model and format add up to cost.csv's totals for it (calls, failed calls, tokens
    per case × cases, dollars), and each pooled row to its models' rows; both against the records' calls."""
    report = cohort["run_dir"] / "report"
    totals = {(r["model"], r["format"]): r for r in _csv(report / "cost.csv")}
    by_case = _csv(report / "cost_by_case.csv")
    records = cohort["records"]
    for (model, fmt), row in totals.items():
        mine = [r for r in by_case if (r["model"], r["format"]) == (model, fmt)]
        cases = int(row["cases"])
        assert sum(int(r["arms"]) for r in mine) == cases == len(_groups(cohort)[(model, fmt)])
        calls = [c for k in _groups(cohort)[(model, fmt)] for c in records[k]["calls"]]
        assert sum(int(r["judge_calls"]) for r in mine) == int(row["judge_calls"]) == len(calls)
        assert sum(int(r["judge_failed_calls"]) for r in mine) == int(row["judge_failed_calls"])
        assert sum(int(r["judge_input_tokens"]) for r in mine) == pytest.approx(
            float(row["judge_input_tokens_per_case"]) * cases) == tokens(calls, "input_tokens")
        assert sum(float(r["judge_cost_usd"]) for r in mine) == pytest.approx(float(row["judge_cost_usd_total"]),
                                                                             abs=1e-7)
        if row["total_cost_usd_total"]:
            assert sum(float(r["total_cost_usd"]) for r in mine) == pytest.approx(
                float(row["total_cost_usd_total"]), abs=1e-7)
        else:  # unknown in total: unknown in some case, never a sum that skips it
            assert any(r["total_cost_usd"] == "" for r in mine)
