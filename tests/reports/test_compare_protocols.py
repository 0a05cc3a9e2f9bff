"""`compare` and `report` on a run folder whose arms mix protocols: the consilium and the single-specialist
baseline, each in both formats, told apart by the ``protocol`` column; and consilium − single on the same cases.

The folder is built by hand: 2 scripted models × {consilium, single} × 2 formats × 4 cases, the traces run
by the real protocols (tests/support/cohort_fixture.py's panel scripts, plus the baseline's answer), arms.csv
written from them, and AI Consilium judgement records whose scores follow :func:`score` (varied over every
key), with one item not evaluable (``NOT_EVALUABLE``) and one failed arm (``FAILED``, no trace). Every
expected number is worked out here from those constants, never by consilium.reports.
"""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
import statistics
from collections.abc import Iterator, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import MAX_ROUNDS, VOTES, _case, panel_script
from support.isolation import isolated

from consilium.agents.records import Format
from consilium.cases import Case
from consilium.cli import main
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.run import run_case
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.single.config import SingleConfig
from consilium.graphs.single.run import run_single_case
from consilium.graphs.single.trace import SingleTrace
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.types import GenerationSettings

MODELS = ("panel-a", "panel-b")
PROTOCOLS = ("consilium", "single")
FORMATS: tuple[Format, ...] = ("free-form", "structured")
CASES = ("k1", "k2", "k3", "k4")
POOLED = "pooled"
SEED, DRAWS = 5, 1000
PER_OUTPUT = ("c1", "c2", "c4")
CRITERIA = (*PER_OUTPUT, "case_complexity")  # case complexity is whole-case: its own rows, in no mean
#: (protocol, format) → component → the criteria judged (the role components exist in the consilium's
#: structured format only; the baseline's answer is judged as a conclusion)
JUDGED: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {("consilium", "free-form"): {"conclusion": CRITERIA},
          ("consilium", "structured"): {"role_opinion": ("c1", "c2"), "conclusion": CRITERIA},
          ("single", "free-form"): {"conclusion": CRITERIA},
          ("single", "structured"): {"conclusion": CRITERIA}}
FAILED = ("panel-b", "single", "structured", "k3")  # (model, protocol, format, case)
NOT_EVALUABLE = ("panel-a", "consilium", "free-form", "k2", "conclusion", "c2")
#: the conclusion criteria applicable in the AI Consilium rubric (Table 10): C1–C8
CONCLUSION_CRITERIA = 8


def arm_format(protocol: str, fmt: str) -> str:
    return fmt if protocol == "consilium" else f"single-{fmt}"


def score(model: str, protocol: str, fmt: str, case: str, component: str, criterion: str) -> int | None:
    """The judge's score, varied over every key; None where not evaluable or the arm failed."""
    if (model, protocol, fmt, case) == FAILED or (model, protocol, fmt, case, component, criterion) == NOT_EVALUABLE:
        return None
    m, p, f, k = MODELS.index(model), PROTOCOLS.index(protocol), FORMATS.index(fmt), CASES.index(case)
    i, c = CRITERIA.index(criterion), ("conclusion", "role_opinion").index(component)
    return (k * (i + 2) + 3 * m + p * (1 + k % 3) + f * (2 + i) + c) % 4


def output_mean(model: str, protocol: str, fmt: str, case: str, component: str = "conclusion") -> float | None:
    values = [s for c in PER_OUTPUT if c in JUDGED[(protocol, fmt)].get(component, ())
              and (s := score(model, protocol, fmt, case, component, c)) is not None]
    return statistics.fmean(values) if values else None


def value(model: str, protocol: str, fmt: str, case: str, component: str, criterion: str) -> float | None:
    if criterion == "mean":
        return output_mean(model, protocol, fmt, case, component)
    return score(model, protocol, fmt, case, component, criterion)


def mine(model: str) -> list[str]:
    return [m for m in MODELS if model in (POOLED, m)]


# --- the folder ---

def single_script(model: str) -> dict[str, Any]:
    """The consilium panel's script (role assignment, the panel's stages) with the baseline's answer first."""
    script = panel_script(model)
    mark = f"SINGLE-{model[-1].upper()}"
    answer = {"final_opinion": f"{mark} A", "summary": "s", "final_differential": "1. A\n2. B",
              "diagnostic_plan": "d", "management_plan": "m", "safety_warnings": "w"}
    script["rules"] = [{"stage": "opinion", "contains_all": ["No panel meets on this case", '"final_opinion"'],
                        "json": answer},
                       {"stage": "opinion", "contains": "No panel meets on this case",
                        "response": f"{mark} answer of {{role}} alone: A is most likely."},
                       *script["rules"]]
    return script


def write_record(folder: Path, trace_file: str, trace: dict[str, Any], model: str, protocol: str, fmt: str) -> None:
    case = trace["case_id"]
    items = []
    for component, criteria in JUDGED[(protocol, fmt)].items():
        for criterion in criteria:
            s = score(model, protocol, fmt, case, component, criterion)
            items.append({"component": component, "criterion": criterion, "score": s, "not_evaluable": s is None,
                          "reason": "the output does not address it" if s is None else None,
                          "detail": {"whole_case": criterion == "case_complexity"}})
    record = {"schema_version": "1.0", "kind": "judgement", "trace": trace_file, "trace_kind": trace["kind"],
              "trace_run_id": trace["run_id"], "case_id": case,
              "variant": fmt, "rubric": "ai-consilium", "rubric_version": 1, "rubric_source": "shipped",
              "judge_model": "hand", "settings": GenerationSettings().model_dump(mode="json"),
              "prompt_hash": "0" * 12, "items": items, "aggregates": {}, "usage": trace["usage"], "calls": [],
              "started_at": "2026-01-01T00:00:00+00:00", "wall_s": 0.0}
    stem = trace_file.removesuffix(".trace.json")
    (folder / f"{stem}.judge.ai-consilium.json").write_text(json.dumps(record))


def arm_row(model: str, protocol: str, fmt: str, case: str, trace: dict[str, Any] | None,
            trace_file: str) -> dict[str, Any]:
    row: dict[str, Any] = {"case_id": case, "model_spec": f"scripted:{model}.json", "model": model,
                           "protocol": protocol, "format": arm_format(protocol, fmt)}
    if trace is None:
        return {**row, "status": "failed", "stop_reason": "", "rounds": "", "r1_dissent": "", "roles": "",
                "input_tokens": "", "output_tokens": "", "trace": "", "error": "ModelError: the arm failed"}
    rounds = trace.get("rounds") or []
    total = trace["usage"]["total"]
    return {**row, "status": trace["status"], "stop_reason": trace.get("stop_reason") or "",
            "rounds": len(rounds) if protocol == "consilium" else "",
            "r1_dissent": rounds[0]["dissent_fraction"] if rounds else "", "roles": len(trace["roles"]),
            "input_tokens": total["input_tokens"], "output_tokens": total["output_tokens"], "trace": trace_file,
            "error": ""}


def build_folder(tmp: Path) -> Path:
    run_dir = tmp / "mixed"
    rows: list[dict[str, Any]] = []
    for model in MODELS:
        folder = run_dir / "arms" / model
        folder.mkdir(parents=True)
        consilium = ScriptedModel(Script.model_validate(panel_script(model)))
        single = ScriptedModel(Script.model_validate(single_script(model)))
        for case_id in CASES:
            case = Case.model_validate(_case(case_id))
            panel_run = run_case(case, list(FORMATS), RunModels(consilium, consilium),
                                 ConsiliumConfig(max_rounds=MAX_ROUNDS), run_id="r1")
            single_run = run_single_case(case, list(FORMATS), RunModels(single, single), SingleConfig(), run_id="r1")
            runs: dict[str, Sequence[Trace | SingleTrace]] = {"consilium": asyncio.run(panel_run),
                                                              "single": asyncio.run(single_run)}
            for protocol, fmt in product(PROTOCOLS, FORMATS):
                [trace] = [t for t in runs[protocol] if t.format == fmt]
                assert trace.status == "completed", (model, protocol, fmt, case_id, trace.error)
                name = f"{case_id}.{arm_format(protocol, fmt)}.trace.json"
                if (model, protocol, fmt, case_id) == FAILED:
                    rows.append(arm_row(model, protocol, fmt, case_id, None, ""))
                    continue
                data = json.loads(trace.model_dump_json())
                (folder / name).write_text(json.dumps(data))
                write_record(folder, name, data, model, protocol, fmt)
                rows.append(arm_row(model, protocol, fmt, case_id, data, f"arms/{model}/{name}"))
    write_csv(run_dir / "arms.csv", rows)
    return run_dir


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def tables_of(folder: Path) -> dict[str, list[dict[str, str]]]:
    return {p.stem: read_csv(p) for p in folder.glob("*.csv")}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("protocols")
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        run_dir = build_folder(tmp)
        assert main(["compare", str(run_dir), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
        yield {"run_dir": run_dir, "tmp": tmp, "tables": tables_of(run_dir / "compare"),
               "md": (run_dir / "compare" / "compare.md").read_text(encoding="utf-8")}


def close(actual: str, expected: float | None) -> bool:
    if expected is None:
        return actual == ""
    return actual != "" and abs(float(actual) - expected) <= 1e-5


def check(rows: list[dict[str, str]], key: tuple[str, ...], expected: dict[tuple[Any, ...], dict[str, Any]]) -> None:
    """``rows`` hold exactly the keys of ``expected``, each with the expected values."""
    by_key = {tuple(r[k] for k in key): r for r in rows}
    assert len(by_key) == len(rows), "one row per key"
    assert sorted(by_key) == sorted(tuple(str(x) for x in k) for k in expected)
    for k, values in expected.items():
        row = by_key[tuple(str(x) for x in k)]
        for column, want in values.items():
            ok = close(row[column], want) if want is None or isinstance(want, float) else row[column] == str(want)
            assert ok, (k, column, row[column], want)


# --- the tables ---

def test_every_table_has_a_protocol_column_and_both_protocols(mixed: dict[str, Any]) -> None:
    tables = mixed["tables"]
    assert {"table3_outcomes", "table6_components", "table7_tokens", "table8_criteria", "table11_coverage",
            "paired_differences", "judging_coverage", "consilium_vs_single"} <= set(tables)
    for name, rows in tables.items():
        assert rows and next(iter(rows[0])) == "protocol", name
        header = "| " + " | ".join(rows[0]) + " |"
        assert header in mixed["md"], name
    for name in ("table3_outcomes", "table6_components", "table7_tokens", "table8_criteria", "table11_coverage",
                 "paired_differences", "judging_coverage"):
        assert {r["protocol"] for r in tables[name]} == set(PROTOCOLS), name
    assert {r["protocol"] for r in tables["table4_vote_transitions"]} == {"consilium"}  # the baseline has no votes
    assert "16 consilium; 16 single" in mixed["md"] and "31 completed" in mixed["md"]
    assert (mixed["run_dir"] / "compare" / "consilium" / "fig4_stop_reasons.png").is_file()
    assert not (mixed["run_dir"] / "compare" / "single").exists()  # the figures draw a deliberation


def test_outcomes_count_each_protocol_apart(mixed: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for protocol, model, fmt in product(PROTOCOLS, [*MODELS, POOLED], FORMATS):
        arms = [(m, case) for m in mine(model) for case in CASES]
        failed = sum((m, protocol, fmt, case) == FAILED for m, case in arms)
        row: dict[str, Any] = {"arms": len(arms), "completed": len(arms) - failed, "failed": failed}
        if protocol == "consilium":
            row["mean_rounds"] = statistics.fmean(len(VOTES[(m, case, fmt)]) for m, case in arms)
        else:
            row.update({"mean_rounds": None, "r1_dissent_mean_pct": None, "consensus": None})
        expected[(protocol, model, arm_format(protocol, fmt))] = row
    check(mixed["tables"]["table3_outcomes"], ("protocol", "model", "format"), expected)
    assert expected[("single", "panel-b", "single-structured")]["failed"] == 1


def test_criterion_means_are_per_protocol_format_model_and_criterion(mixed: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for (protocol, fmt), components in JUDGED.items():
        for component, criteria in components.items():
            for model, criterion in product([*MODELS, POOLED], criteria):
                values = [s for m in mine(model) for case in CASES
                          if (s := score(m, protocol, fmt, case, component, criterion)) is not None]
                expected[(protocol, model, criterion, component, arm_format(protocol, fmt))] = {
                    "n": len(values), "mean": statistics.fmean(values), "sd": statistics.pstdev(values),
                    "whole_case": criterion == "case_complexity"}
    check(mixed["tables"]["table8_criteria"], ("protocol", "model", "criterion", "component", "format"), expected)
    # the not-evaluable item and the failed arm are left out of their own group only
    assert expected[("consilium", "panel-a", "c2", "conclusion", "free-form")]["n"] == 3
    assert expected[("single", "panel-b", "c1", "conclusion", "single-structured")]["n"] == 3
    assert expected[("single", "panel-b", "c1", "conclusion", "single-free-form")]["n"] == 4


def test_component_means_and_coverage_per_protocol(mixed: dict[str, Any]) -> None:
    table6: dict[tuple[Any, ...], dict[str, Any]] = {}
    table11: dict[tuple[Any, ...], dict[str, Any]] = {}
    for (protocol, fmt), components in JUDGED.items():
        for component, model in product(components, [*MODELS, POOLED]):
            criteria = [c for c in components[component] if c in PER_OUTPUT]
            values = [s for m in mine(model) for case in CASES for c in criteria
                      if (s := score(m, protocol, fmt, case, component, c)) is not None]
            key = (protocol, model, component, arm_format(protocol, fmt))
            table6[key] = {"n": len(values), "mean": statistics.fmean(values), "sd": statistics.pstdev(values)}
            if component == "conclusion":
                arms = len(mine(model)) * len(CASES)
                items = sum(1 for m in mine(model) for case in CASES if (m, protocol, fmt, case) != FAILED
                            for c in criteria)
                opportunities = arms * CONCLUSION_CRITERIA
                table11[key] = {"judged": len(values), "opportunities": opportunities,
                                "not_evaluable": items - len(values), "missing": opportunities - items}
    check(mixed["tables"]["table6_components"], ("protocol", "model", "component", "format"), table6)
    rows = [r for r in mixed["tables"]["table11_coverage"] if r["component"] == "conclusion"]
    check(rows, ("protocol", "model", "component", "format"), table11)
    assert table11[("consilium", "panel-a", "conclusion", "free-form")]["not_evaluable"] == 1
    assert table11[("single", "panel-b", "conclusion", "single-structured")]["missing"] == 4 * 8 - 3 * 3


def test_tokens_per_case_per_protocol(mixed: dict[str, Any]) -> None:
    arms = read_csv(mixed["run_dir"] / "arms.csv")
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for protocol, model, fmt in product(PROTOCOLS, [*MODELS, POOLED], FORMATS):
        done = [a for a in arms if a["protocol"] == protocol and a["format"] == arm_format(protocol, fmt)
                and a["status"] == "completed" and model in (POOLED, a["model"])]
        inp = statistics.fmean(int(a["input_tokens"]) for a in done)
        out = statistics.fmean(int(a["output_tokens"]) for a in done)
        expected[(protocol, model, arm_format(protocol, fmt))] = {"cases": len(done), "input_tokens_per_case": inp,
                                                                 "output_tokens_per_case": out}
    check(mixed["tables"]["table7_tokens"], ("protocol", "model", "format"), expected)


def test_free_form_vs_structured_is_paired_within_each_protocol(mixed: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for protocol, model, criterion in product(PROTOCOLS, [*MODELS, POOLED], ("mean", *CRITERIA)):
        diffs = []
        for m, case in product(mine(model), CASES):
            ff = value(m, protocol, "free-form", case, "conclusion", criterion)
            st = value(m, protocol, "structured", case, "conclusion", criterion)
            if ff is not None and st is not None:
                diffs.append(st - ff)
        expected[(protocol, model, "conclusion", criterion)] = {"cases": len(diffs),
                                                                "mean_difference": statistics.fmean(diffs)}
    rows = mixed["tables"]["paired_differences"]
    check(rows, ("protocol", "model", "component", "criterion"), expected)
    assert expected[("single", "panel-b", "conclusion", "c1")]["cases"] == 3  # its structured k3 failed
    assert expected[("consilium", "panel-a", "conclusion", "c2")]["cases"] == 3  # k2's c2 not evaluable
    for row in rows:
        assert float(row["ci_low"]) <= float(row["mean_difference"]) <= float(row["ci_high"]), row


def expected_baseline() -> dict[tuple[Any, ...], dict[str, Any]]:
    """(model, format, criterion) → consilium − single over the cases where both have a score."""
    result: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model, fmt, criterion in product([*MODELS, POOLED], FORMATS, ("mean", *CRITERIA)):
        clusters: dict[str, list[float]] = {}
        failed = not_evaluable = 0
        for m, case in product(mine(model), CASES):
            if any((m, p, fmt, case) == FAILED for p in PROTOCOLS):
                failed += 1
                continue
            a = value(m, "consilium", fmt, case, "conclusion", criterion)
            b = value(m, "single", fmt, case, "conclusion", criterion)
            if a is None or b is None:
                not_evaluable += 1
            else:
                clusters.setdefault(case, []).append(a - b)
        diffs = [d for values in clusters.values() for d in values]
        result[(model, fmt, criterion)] = {
            "cases": len(mine(model)) * len(CASES), "pairs": len(diffs), "mean_difference": statistics.fmean(diffs),
            "left_out_failed": failed, "left_out_not_evaluable": not_evaluable, "left_out_no_arm": 0,
            "left_out_not_judged": 0, "clusters": clusters}
    return result


def test_consilium_minus_single_on_the_same_cases(mixed: dict[str, Any]) -> None:
    rows = mixed["tables"]["consilium_vs_single"]
    assert list(rows[0])[:8] == ["protocol", "baseline", "model", "format", "rubric", "component", "criterion",
                                 "cases"]
    assert {(r["protocol"], r["baseline"], r["rubric"], r["component"]) for r in rows} == {
        ("consilium", "single", "ai-consilium", "conclusion")}  # the role components have no baseline
    expected = expected_baseline()
    check(rows, ("model", "format", "criterion"),
          {k: {c: v for c, v in e.items() if c != "clusters"} for k, e in expected.items()})
    assert expected[("panel-b", "structured", "c1")]["left_out_failed"] == 1
    assert expected[(POOLED, "structured", "c1")]["left_out_failed"] == 1
    assert expected[("panel-a", "free-form", "c2")]["left_out_not_evaluable"] == 1
    assert expected[("panel-a", "free-form", "mean")]["pairs"] == 4  # k2's mean has c1 and c4
    by_key = {(r["model"], r["format"], r["criterion"]): r for r in rows}
    for key, e in expected.items():
        row = by_key[key]
        case_means = [statistics.fmean(v) for v in e["clusters"].values()]
        assert min(case_means) - 1e-6 <= float(row["ci_low"]) <= float(row["mean_difference"]) \
            <= float(row["ci_high"]) <= max(case_means) + 1e-6, key
    assert len({r["mean_difference"] for r in rows}) > 10  # varied values, not one number everywhere


# --- older folders, and report ---

def strip(rows: list[dict[str, str]], *columns: str) -> list[dict[str, str]]:
    return [{k: v for k, v in r.items() if k not in columns} for r in rows]


def without_protocol_column(source: Path, target: Path, keep: set[str] | None = None) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("compare", "report"))
    rows = [r for r in read_csv(target / "arms.csv") if keep is None or r["protocol"] in keep]
    write_csv(target / "arms.csv", strip(rows, "protocol"))
    return target


def test_a_folder_without_the_protocol_column_is_told_by_its_formats(mixed: dict[str, Any]) -> None:
    old = without_protocol_column(mixed["run_dir"], mixed["tmp"] / "old-mixed")
    assert main(["compare", str(old), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
    assert tables_of(old / "compare") == mixed["tables"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_folder_of_one_protocol_without_the_column_compares_as_before(mixed: dict[str, Any], protocol: str) -> None:
    """One protocol's arms, arms.csv as written before the column: no protocol column in any table, and the
    same numbers as that protocol's rows of the mixed folder (nothing of the other's leaks into them)."""
    old = without_protocol_column(mixed["run_dir"], mixed["tmp"] / f"old-{protocol}", keep={protocol})
    assert main(["compare", str(old), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
    tables = tables_of(old / "compare")
    assert "consilium_vs_single" not in tables
    assert (old / "compare" / "fig4_stop_reasons.png").is_file() == (protocol == "consilium")
    mixed_tables = {name: [r for r in rows if r.get("protocol") == protocol]
                    for name, rows in mixed["tables"].items() if name != "consilium_vs_single"}
    assert set(tables) == {name for name, rows in mixed_tables.items() if rows}
    for name, rows in tables.items():
        assert "protocol" not in rows[0], name
        assert rows == strip(mixed_tables[name], "protocol"), name


def test_report_splits_the_protocols_and_adds_the_baseline_difference(mixed: dict[str, Any]) -> None:
    copy = mixed["tmp"] / "again" / "mixed"
    shutil.copytree(mixed["run_dir"], copy, ignore=shutil.ignore_patterns("compare"))
    assert main(["report", str(copy), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
    report = tables_of(copy / "report")
    assert {r["protocol"] for r in report["outcomes"]} == set(PROTOCOLS)
    assert strip([r for r in report["scores"] if r["protocol"] == "single"], "cohort", "protocol") == \
        strip([r for r in mixed["tables"]["table8_criteria"] if r["protocol"] == "single"], "protocol")
    assert strip(report["consilium_vs_single"], "cohort") == mixed["tables"]["consilium_vs_single"]
    assert (copy / "report" / "mixed-consilium" / "fig4_stop_reasons.png").is_file()
    assert "# mixed (single arms)" in (copy / "report" / "report.md").read_text(encoding="utf-8")
