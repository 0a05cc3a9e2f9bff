"""Every number `consilium compare` reports, checked by hand on a real cohort with known inputs.

The cohort (tests/support/cohort_fixture.py) is run by the real CLI with scripted panels and a scripted
judge: 2 models × 2 formats × 6 cases, varied votes, rounds and stop reasons, varied scores, a few
not-evaluable items and one failed arm. Each expected value below is computed here from the
fixture's constants (and, for tokens, from the traces the cohort wrote), never by consilium.reports.
"""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
import statistics
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import (
    APPLIES,
    CASES,
    COMPONENTS,
    CRITERIA,
    FAILED,
    FORMATS,
    MAX_ROUNDS,
    MODELS,
    PANELS,
    VOTES,
    WHOLE_CASE,
    role_id,
    score,
    stop_reason,
)
from support.cohorts import copy_cohort
from support.isolation import isolated

from consilium.cli import main
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.types import CallTag, Message, ModelRequest

POOLED = "pooled"
SEED, DRAWS = 7, 2000
PER_OUTPUT = tuple(c for c in CRITERIA if c not in WHOLE_CASE)
COMPONENT_FORMATS = (("role_reasoning", "structured"), ("role_opinion", "structured"),
                     ("conclusion", "free-form"), ("conclusion", "structured"))
CATEGORY = {"Internal Medicine": "internal_medicine", "Cardiology": "cardiology", "Neurology": "neurology",
            "Pulmonology": "pulmonology"}
ARMS = list(product(MODELS, CASES, FORMATS))
COMPLETED = [a for a in ARMS if a != FAILED]


@pytest.fixture(scope="module")
def cohort(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("fixture")
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        run_dir = copy_cohort(fixture_cohort, tmp)  # compare writes into it
        assert main(["compare", str(run_dir), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
        tables = {p.stem: read_csv(p) for p in (run_dir / "compare").glob("*.csv")}
        yield {"run_dir": run_dir, "tables": tables, "md": (run_dir / "compare" / "compare.md").read_text()}


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def close(actual: str, expected: float | None, tolerance: float = 1e-5) -> bool:
    if expected is None:
        return actual == ""
    return actual != "" and abs(float(actual) - expected) <= tolerance


def check(rows: list[dict[str, str]], key: tuple[str, ...], expected: dict[tuple[Any, ...], dict[str, Any]]) -> None:
    """``rows`` hold exactly the keys of ``expected``, each with the expected numbers."""
    by_key = {tuple(r[k] for k in key): r for r in rows}
    assert sorted(by_key) == sorted(tuple(str(x) for x in k) for k in expected)
    for k, values in expected.items():
        row = by_key[tuple(str(x) for x in k)]
        for column, value in values.items():
            ok = close(row[column], value, 1e-4 if column == "r1_dissent_mean_pct" else 1e-5) \
                if value is None or isinstance(value, float) else row[column] == str(value)
            assert ok, (k, column, row[column], value)


def mine(model: str, arms: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [a for a in arms if model in (POOLED, a[0])]


def pct(n: int, total: int) -> float | None:
    return 100 * n / total if total else None


def judged(model: str, fmt: str, case: str, component: str, criterion: str) -> int | None:
    """The score the arm's judgement holds (None: not evaluable, or the arm failed)."""
    return None if (model, case, fmt) == FAILED else score(model, fmt, case, component, criterion)


def output_mean(model: str, case: str, fmt: str) -> float | None:
    values = [s for c in PER_OUTPUT if (s := judged(model, fmt, case, "conclusion", c)) is not None]
    return statistics.fmean(values) if values else None


# --- the scripted backend's contains_all ---

def test_contains_all_needs_every_substring() -> None:
    script = Script.model_validate({"rules": [{"contains_all": ["alpha", "beta"], "response": "both"},
                                              {"contains": "alpha", "response": "alpha only"}]})

    def ask(text: str) -> str:
        request = ModelRequest(messages=(Message(role="user", content=text),), tag=CallTag(stage="judge"))
        return asyncio.run(ScriptedModel(script).generate(request)).text

    assert ask("beta then alpha") == "both"
    assert ask("alpha, no other") == "alpha only"


# --- the cohort is the one planned ---

def test_the_fixture_cohort_ran_as_planned(cohort: dict[str, Any]) -> None:
    arms = read_csv(cohort["run_dir"] / "arms.csv")
    assert len(arms) == 24
    got = {(a["model"], a["case_id"], a["format"]): a for a in arms}
    for arm, row in got.items():
        if arm == FAILED:
            assert row["status"] == "failed"
            continue
        assert row["status"] == "completed", arm
        assert (row["stop_reason"], int(row["rounds"])) == (stop_reason(VOTES[arm]), len(VOTES[arm])), arm
    assert {stop_reason(VOTES[a]) for a in COMPLETED} == {"consensus", "no_change", "round_limit"}
    assert {len(VOTES[a]) for a in COMPLETED} == {1, 2, 3}


# --- Table 3 ---

def test_table3_outcomes_per_model_and_pooled(cohort: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model, fmt in product([*MODELS, POOLED], FORMATS):
        arms = [a for a in mine(model, ARMS) if a[2] == fmt]
        done = [a for a in arms if a != FAILED]
        dissent = [len(VOTES[a][0]) / len(PANELS[a[:2]]) for a in done]
        stops = [stop_reason(VOTES[a]) for a in done]
        row: dict[str, Any] = {"arms": len(arms), "completed": len(done), "failed": len(arms) - len(done),
                               "r1_dissent_mean_pct": 100 * statistics.fmean(dissent),
                               "r1_unanimous": dissent.count(0), "r1_unanimous_pct": pct(dissent.count(0), len(done)),
                               "mean_rounds": statistics.fmean(len(VOTES[a]) for a in done) * 1.0}
        for stop in ("consensus", "no_change", "round_limit"):
            row[stop], row[f"{stop}_pct"] = stops.count(stop), pct(stops.count(stop), len(done))
        expected[(model, fmt)] = row
    check(cohort["tables"]["table3_outcomes"], ("model", "format"), expected)
    assert expected[("panel-b", "structured")]["failed"] == 1  # the failed arm shows


# --- Table 4 ---

def test_table4_vote_transitions_per_model_and_pooled(cohort: dict[str, Any]) -> None:
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for arm in COMPLETED:
        rounds = VOTES[arm]
        for r in range(1, len(rounds)):
            for model in (arm[0], POOLED):
                c = counts.setdefault((model, r), {"arms": 0, "no_to_yes": 0, "no_to_no": 0, "yes_to_no": 0,
                                                   "yes_to_yes": 0})
                c["arms"] += 1
                for label, _ in PANELS[arm[:2]]:
                    role = role_id(label)
                    before = "no" if role in rounds[r - 1] else "yes"
                    after = "no" if role in rounds[r] else "yes"
                    c[f"{before}_to_{after}"] += 1
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for (model, r), c in counts.items():
        no, yes = c["no_to_yes"] + c["no_to_no"], c["yes_to_no"] + c["yes_to_yes"]
        expected[(model, f"R{r}->R{r + 1}")] = {
            **c, "from_round": r, "no_to_yes_pct": pct(c["no_to_yes"], no), "no_to_no_pct": pct(c["no_to_no"], no),
            "yes_to_no_pct": pct(c["yes_to_no"], yes), "yes_to_yes_pct": pct(c["yes_to_yes"], yes)}
    assert {r for _, r in counts} == {1, 2}  # R1->R2 and R2->R3 (MAX_ROUNDS is 3)
    check(cohort["tables"]["table4_vote_transitions"], ("model", "transition"), expected)


# --- Tables 6, 7, 8, 13–20 ---

def scores_of(model: str, component: str, fmt: str, criteria: tuple[str, ...]) -> list[int]:
    return [s for m, case, f in mine(model, COMPLETED) if f == fmt for c in criteria
            if component in COMPONENTS[fmt] and c in APPLIES[component]
            and (s := judged(m, f, case, component, c)) is not None]


def test_table6_components_per_model_and_pooled(cohort: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model in [*MODELS, POOLED]:
        for component, fmt in COMPONENT_FORMATS:
            values = scores_of(model, component, fmt, PER_OUTPUT)
            expected[(model, component, fmt)] = {"n": len(values), "mean": statistics.fmean(values),
                                                 "sd": statistics.pstdev(values)}
    check(cohort["tables"]["table6_components"], ("model", "component", "format"), expected)


def test_table7_mean_judge_score_excludes_whole_case_criteria_and_tokens_per_case(cohort: dict[str, Any]) -> None:
    arms = {(a["model"], a["case_id"], a["format"]): a for a in read_csv(cohort["run_dir"] / "arms.csv")}
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model, fmt in product([*MODELS, POOLED], FORMATS):
        done = [a for a in mine(model, COMPLETED) if a[2] == fmt]
        values = scores_of(model, "conclusion", fmt, PER_OUTPUT)
        inp = statistics.fmean(int(arms[a]["input_tokens"]) for a in done)
        out = statistics.fmean(int(arms[a]["output_tokens"]) for a in done)
        expected[(model, fmt)] = {"cases": len(done), "mean_judge_score": statistics.fmean(values),
                                  "input_tokens_per_case": inp, "output_tokens_per_case": out,
                                  "total_tokens_per_case": inp + out}
    rows = cohort["tables"]["table7_tokens"]
    assert list(rows[0]) == ["model", "format", "cases", "mean_judge_score", "input_tokens_per_case",
                             "output_tokens_per_case", "total_tokens_per_case"]
    check(rows, ("model", "format"), expected)
    # Averaging case_complexity in (the old bug) would give another number.
    with_complexity = scores_of("panel-a", "conclusion", "free-form", (*PER_OUTPUT, "case_complexity"))
    assert statistics.fmean(with_complexity) != pytest.approx(expected[("panel-a", "free-form")]["mean_judge_score"])


def test_table8_criterion_profiles_per_model_and_pooled(cohort: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model in [*MODELS, POOLED]:
        for criterion in CRITERIA:
            for component, fmt in COMPONENT_FORMATS:
                if criterion not in APPLIES[component]:
                    continue
                values = scores_of(model, component, fmt, (criterion,))
                expected[(model, criterion, component, fmt)] = {
                    "n": len(values), "mean": statistics.fmean(values), "sd": statistics.pstdev(values),
                    "whole_case": criterion in WHOLE_CASE, "rubric": "ai-consilium"}
    check(cohort["tables"]["table8_criteria"], ("model", "criterion", "component", "format"), expected)


# --- Table 9 ---

def rounds_group(rounds: int) -> str:
    return "1" if rounds == 1 else "2" if rounds == 2 else ">=3"


def test_table9_rounds_per_model_and_pooled(cohort: dict[str, Any]) -> None:
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for model in [*MODELS, POOLED]:
        for name in ("1", "2", ">=3"):
            arms = [a for a in mine(model, COMPLETED) if rounds_group(len(VOTES[a])) == name]
            means = [m for a in arms if (m := output_mean(*a)) is not None]
            complexity = [s for m, case, f in arms if (s := judged(m, f, case, "conclusion", "case_complexity"))
                          is not None]
            below = sum(v < 2 for v in means)
            expected[(model, name)] = {"outputs": len(means), "mean_score": statistics.fmean(means),
                                       "sd": statistics.pstdev(means), "below_2": below,
                                       "below_2_pct": pct(below, len(means)),
                                       "complexity_mean": statistics.fmean(complexity),
                                       "complexity_sd": statistics.pstdev(complexity)}
    rows = cohort["tables"]["table9_rounds"]
    assert list(rows[0]) == ["model", "rounds", "outputs", "mean_score", "sd", "below_2", "below_2_pct",
                             "complexity_mean", "complexity_sd"]
    check(rows, ("model", "rounds"), expected)
    below_2 = [expected[(m, r)]["below_2"] for m in MODELS for r in ("1", "2", ">=3")]
    assert 0 < sum(below_2) < len(COMPLETED)  # some outputs below 2, some not: the count is tested
    assert MAX_ROUNDS == 3


# --- Tables 10–12 ---

def coverage(arms: list[tuple[str, str, str]], component: str, criteria: list[str],
             opportunities: int) -> dict[str, Any]:
    done = [a for a in arms if a != FAILED]
    items = [score(m, f, case, component, c) for m, case, f in done for c in criteria]
    n = sum(s is not None for s in items)
    return {"judged": n, "opportunities": opportunities, "judged_pct": pct(n, opportunities),
            "not_evaluable": len(items) - n, "missing": opportunities - len(items)}


def test_tables10_to_12_applicability_and_coverage(cohort: dict[str, Any]) -> None:
    t10, t11, t12 = {}, {}, {}
    for model in [*MODELS, POOLED]:
        for component, fmt in COMPONENT_FORMATS:
            arms = [a for a in mine(model, ARMS) if a[2] == fmt]  # the failed arm is an opportunity too
            criteria = [c for c in PER_OUTPUT if c in APPLIES[component]]
            opportunities = len(arms) * len(criteria)
            t10[(model, component, fmt)] = {"criteria": len(criteria), "applicable_criteria": " ".join(criteria),
                                            "arms": len(arms), "opportunities": opportunities}

            t11[(model, component, fmt)] = coverage(arms, component, criteria, opportunities)
            for criterion in CRITERIA:
                if criterion in APPLIES[component]:
                    t12[(model, criterion, component, fmt)] = {**coverage(arms, component, [criterion], len(arms)),
                                                                "whole_case": criterion in WHOLE_CASE}
    check(cohort["tables"]["table10_applicability"], ("model", "component", "format"), t10)
    check(cohort["tables"]["table11_coverage"], ("model", "component", "format"), t11)
    check(cohort["tables"]["table12_criterion_coverage"], ("model", "criterion", "component", "format"), t12)
    assert t10[("panel-a", "role_reasoning", "structured")]["criteria"] == 7  # Table 10: 7, 5, 8, 8
    assert t11[("panel-b", "conclusion", "structured")]["missing"] == 8  # the failed arm's 8 criteria


# --- paired differences ---

def expected_pairs() -> dict[tuple[str, str], tuple[int, float, dict[str, list[float]]]]:
    """(model, criterion) → (pairs, mean structured − free-form, case → differences)."""
    result = {}
    for model in [*MODELS, POOLED]:
        for criterion in ("mean", *CRITERIA):
            clusters: dict[str, list[float]] = {}
            for m, case in product(MODELS, CASES):
                if model not in (POOLED, m):
                    continue
                if criterion == "mean":
                    ff, st = output_mean(m, case, "free-form"), output_mean(m, case, "structured")
                else:
                    ff = judged(m, "free-form", case, "conclusion", criterion)
                    st = judged(m, "structured", case, "conclusion", criterion)
                if ff is not None and st is not None:
                    clusters.setdefault(case, []).append(st - ff)
            diffs = [d for values in clusters.values() for d in values]
            result[(model, criterion)] = (len(diffs), statistics.fmean(diffs), clusters)
    return result


def test_paired_differences_are_structured_minus_free_form_within_model_and_case(cohort: dict[str, Any]) -> None:
    rows = cohort["tables"]["paired_differences"]
    assert list(rows[0]) == ["model", "rubric", "component", "criterion", "cases", "mean_difference", "ci_low",
                             "ci_high", "not_evaluable", "failed"]  # not_evaluable: items no judge could score
    # the failed arm (panel-b, structured) has no score to pair: counted in its model's rows and the pooled ones
    assert {(r["model"], r["failed"]) for r in rows} == {("pooled", "1"), ("panel-b", "1"), *(
        (m, "0") for m in MODELS if m != "panel-b")}
    expected = {(m, "ai-consilium", "conclusion", c): {"cases": n, "mean_difference": d}
                for (m, c), (n, d, _) in expected_pairs().items()}
    check(rows, ("model", "rubric", "component", "criterion"), expected)
    for row in rows:
        assert float(row["ci_low"]) <= float(row["mean_difference"]) <= float(row["ci_high"]), row
    # Pairing by case alone (the old bug) keeps only the last model's scores: the pooled c4 differs.
    assert expected[(POOLED, "ai-consilium", "conclusion", "c4")]["cases"] == 11
    assert any(expected[(m, "ai-consilium", "conclusion", "c1")]["mean_difference"] != expected[
        (POOLED, "ai-consilium", "conclusion", "c1")]["mean_difference"] for m in MODELS)


def test_the_bootstrap_is_case_clustered_and_a_fixed_seed_reproduces_it(
        cohort: dict[str, Any], tmp_path: Path) -> None:
    copy = tmp_path / "again"
    shutil.copytree(cohort["run_dir"], copy)
    shutil.rmtree(copy / "compare")
    assert main(["compare", str(copy), "--bootstrap", str(DRAWS), "--seed", str(SEED)]) == 0
    assert read_csv(copy / "compare" / "paired_differences.csv") == cohort["tables"]["paired_differences"]
    assert main(["compare", str(copy), "--bootstrap", str(DRAWS), "--seed", str(SEED + 1)]) == 0
    assert read_csv(copy / "compare" / "paired_differences.csv") != cohort["tables"]["paired_differences"]
    # The interval comes from resampling cases: it lies within the range of the case means, and a
    # criterion whose difference is the same in every case has a zero-width interval.
    rows = {(r["model"], r["criterion"]): r for r in cohort["tables"]["paired_differences"]}
    for (model, criterion), (_, _, clusters) in expected_pairs().items():
        case_means = [statistics.fmean(v) for v in clusters.values()]
        row = rows[(model, criterion)]
        assert min(case_means) - 1e-6 <= float(row["ci_low"]) <= float(row["ci_high"]) <= max(case_means) + 1e-6


# --- Fig. 2b/2c and the label mapping ---

def test_role_categories_panel_sizes_and_the_label_mapping(cohort: dict[str, Any]) -> None:
    panels = {k: v for k, v in PANELS.items() if any(a[:2] == k for a in COMPLETED)}
    assert len(panels) == 12  # panel-b / k6 keeps its panel: its free-form arm completed
    categories, sizes, labels = {}, {}, {}
    for model in [*MODELS, POOLED]:
        mine_ = {k: v for k, v in panels.items() if model in (POOLED, k[0])}
        roles = [r for v in mine_.values() for r in v]
        supporting = sum(not p for _, p in roles)
        for label, category in CATEGORY.items():
            of = [p for lab, p in roles if lab == label]
            including = sum(any(lab == label for lab, _ in v) for v in mine_.values())
            categories[(model, category)] = {
                "primary": sum(of), "primary_pct": pct(sum(of), len(mine_)), "supporting": len(of) - sum(of),
                "supporting_pct": pct(len(of) - sum(of), supporting), "assignments": len(of),
                "assignments_pct": pct(len(of), len(roles)), "panels": including,
                "panels_pct": pct(including, len(mine_)), "category_name": label}
            if of:
                labels[(model, label)] = {"category": category, "assignments": len(of), "primary": sum(of),
                                          "supporting": len(of) - sum(of)}
        for size in {len(v) for v in mine_.values()}:
            n = sum(len(v) == size for v in mine_.values())
            sizes[(model, size)] = {"panels": n, "panels_pct": pct(n, len(mine_))}
    check(cohort["tables"]["fig2_role_categories"], ("model", "category"), categories)
    check(cohort["tables"]["fig2_panel_sizes"], ("model", "roles"), sizes)
    check(cohort["tables"]["role_label_mapping"], ("model", "label"), labels)


# --- numbers as numbers, a model column everywhere, and compare.md renders the same tables ---

LABELS = {"model", "format", "component", "criterion", "criterion_name", "rubric", "transition", "rounds",
          "applicable_criteria", "category", "category_name", "label", "whole_case", "commonest_reasons",
          "stage", "judge_model", "case_id", "estimated"}


def test_every_table_has_numbers_a_model_column_and_is_in_compare_md(cohort: dict[str, Any]) -> None:
    tables = cohort["tables"]
    assert set(tables) >= {"table3_outcomes", "table4_vote_transitions", "table6_components", "table7_tokens",
                           "table8_criteria", "table9_rounds", "table10_applicability", "table11_coverage",
                           "table12_criterion_coverage", "paired_differences", "fig2_role_categories",
                           "fig2_panel_sizes", "role_label_mapping"}
    for name, rows in tables.items():
        if name == "judging_coverage":
            continue
        assert "model" in rows[0], name
        assert any(r["model"] == POOLED for r in rows), name
        header = "| " + " | ".join(rows[0]) + " |"
        assert header in cohort["md"], name
        for row in rows:
            for column, value in row.items():
                if column not in LABELS and value != "":
                    float(value)  # a number, never "17 (68.0%)"
    row = next(r for r in tables["table3_outcomes"] if r["model"] == "panel-a" and r["format"] == "free-form")
    rendered = f"| panel-a | free-form | 6 | 6 | 0 | {float(row['r1_dissent_mean_pct']):.3f} | {row['r1_unanimous']} |"
    assert rendered in cohort["md"]
    assert json.loads(json.dumps(tables["table7_tokens"]))  # plain rows, readable by any CSV reader


def test_whole_case_criteria_are_known_from_the_rubric_not_only_from_each_record(fixture_cohort: Path,
                                                                                tmp_path: Path) -> None:
    """A judgement record whose items lack the ``whole_case`` note (an older or hand-made record) must not
    put case complexity back into a C1–C8 mean: the shipped rubric says which criteria are whole-case."""
    import json as _json

    from consilium.cli import main

    run_dir = copy_cohort(fixture_cohort, tmp_path)
    assert main(["compare", str(run_dir), "--bootstrap", "50", "--out", str(tmp_path / "before")]) == 0
    for record in run_dir.rglob("*.judge.ai-consilium.json"):
        data = _json.loads(record.read_text())
        for item in data["items"]:
            item["detail"].pop("whole_case", None)
        record.write_text(_json.dumps(data))
    assert main(["compare", str(run_dir), "--bootstrap", "50", "--out", str(tmp_path / "after")]) == 0
    for name in ("table7_tokens.csv", "table9_rounds.csv", "table6_components.csv"):
        assert (tmp_path / "after" / name).read_text() == (tmp_path / "before" / name).read_text(), name
