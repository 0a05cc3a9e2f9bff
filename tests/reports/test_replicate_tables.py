"""Every table and figure of ``compare`` and ``report`` on a cohort run in replicates (docs/cohorts.md,
"Replicates"): per-case quantities and paired differences average a (model, format, case)'s replicates
first; counts (vote transitions, panels, stop reasons) count every replicate's arm; each title says which.

The study: 2 scripted models × {consilium, single} × 2 formats × 2 cases × 3 replicates, run from one
experiment file. The panels answer by seed (the scripted backend's ``seed`` filter), so each replicate
has its own votes (:func:`votes`: its own rounds and stop reason), its own panel (the last seed's panel
has a fourth role) and its own report, and the judge scores each replicate's answer by the seed mark in it
(:func:`score`). Every expected number is worked out here from those constants.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from support.scripts import STRUCTURED_REPORT, STRUCTURED_REVISION, Scripted, sections

from consilium.cli import main
from consilium.reports.compare import load_cohort_data
from consilium.reports.consilium.data import CohortData
from consilium.reports.figures import case_means, dissent_reductions, rounds_groups
from consilium.runfolder.rows import ArmRow, JudgementRow

MODELS = ("panel-a", "panel-b")
PROTOCOLS = ("consilium", "single")
FORMATS = ("free-form", "structured")
CASES = ("k1", "k2")
MARKERS = {"k1": "ZQALPHA", "k2": "ZQBRAVO"}
SEEDS = (5, 6, 7)
REPLICATES = range(len(SEEDS))
MAX_ROUNDS = 3
PER_OUTPUT = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8")
COMPLEXITY = "case_complexity"
FALLBACK = 2  # every item the judge's rules do not name
POOLED = "pooled"
NO_PANEL = "No panel meets on this case"

IM, CA, NE, PU = "Internal Medicine", "Cardiology", "Neurology", "Pulmonology"


def role_id(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def panel(seed: int) -> list[str]:
    """The role ids of a replicate's panel, the primary first: the last seed adds a fourth role."""
    return [role_id(x) for x in ((IM, CA, NE, PU) if seed == SEEDS[-1] else (IM, CA, NE))]


_im, _ca, _ne = role_id(IM), role_id(CA), role_id(NE)
#: The roles dissenting in rounds 1, 2, …: consensus in 1; consensus in 2; no change after round 1;
#: round limit; consensus in 3.
PATTERNS: tuple[list[set[str]], ...] = ([set()], [{_ca}, set()], [{_ca, _ne}], [{_ca}, {_ne}, {_ne}],
                                        [{_im}, {_ca}, set()])


def votes(model: str, case: str, fmt: str, replicate: int) -> list[set[str]]:
    m, k, f = MODELS.index(model), CASES.index(case), FORMATS.index(fmt)
    return PATTERNS[(m + 2 * k + 3 * f + replicate) % len(PATTERNS)]


def stop_reason(rounds: list[set[str]]) -> str:
    if not rounds[-1]:
        return "consensus"
    return "round_limit" if len(rounds) == MAX_ROUNDS else "no_change"


def mark(protocol: str, model: str, fmt: str, seed: int) -> str:
    return f"{'ARM' if protocol == 'consilium' else 'SOLO'}{model[-1].upper()}{'FF' if fmt == 'free-form' else 'ST'}" \
           f"SEED{seed}"


def score(protocol: str, model: str, case: str, fmt: str, replicate: int, criterion: str) -> int:
    """The judge's score of an answer's criterion: varied over every key, the replicate above all."""
    p, m, k, f = PROTOCOLS.index(protocol), MODELS.index(model), CASES.index(case), FORMATS.index(fmt)
    i = (*PER_OUTPUT, COMPLEXITY).index(criterion)
    return (3 * p + m + 2 * k + f + replicate * (i + 1) + i) % 4


def output_mean(protocol: str, model: str, case: str, fmt: str, replicate: int) -> float:
    return statistics.fmean(score(protocol, model, case, fmt, replicate, c) for c in PER_OUTPUT)


# --- the study ---


def panel_script(model: str) -> dict[str, Any]:
    script = Scripted(model)
    for seed in SEEDS:
        labels = (IM, CA, NE, PU) if seed == SEEDS[-1] else (IM, CA, NE)
        script.roles(*labels, where={"seed": seed})
        solo_ff, solo_st = mark("single", model, "free-form", seed), mark("single", model, "structured", seed)
        ff, st = mark("consilium", model, "free-form", seed), mark("consilium", model, "structured", seed)
        script.rule("opinion", where={"seed": seed, "contains_all": [NO_PANEL, STRUCTURED_REPORT]},
                    json=sections(f"{solo_st} answer"))
        script.opinion(f"{solo_ff} answer", where={"seed": seed, "contains": NO_PANEL})
        script.synthesis(sections(f"{st} report"), where={"seed": seed, "contains": STRUCTURED_REPORT})
        script.synthesis(f"{ff} report", where={"seed": seed})
        for case in CASES:
            for fmt in FORMATS:
                replicate = SEEDS.index(seed)
                rounds = votes(model, case, fmt, replicate)
                arm = mark("consilium", model, fmt, seed)
                where = {"seed": seed, "contains_all": [MARKERS[case], arm]}
                for rnd, dissenting in enumerate(rounds, 1):
                    for role in sorted(dissenting):
                        script.dissent(role, rnd, where=where)
                if stop_reason(rounds) == "no_change":
                    report: Any = sections(f"{arm} unchanged") if fmt == "structured" else f"{arm} same"
                    script.revision(report, changed=False, summary="nothing", where={"round": len(rounds), **where})
        script.revision(sections(f"{st} revised {{round}}"), where={"seed": seed, "contains": STRUCTURED_REVISION})
        script.revision(f"{ff} revised {{round}}", where={"seed": seed})
    return script.structured_opinion("A").opinion("opinion of {role}").accept().build()


def judge_script() -> dict[str, Any]:
    script = Scripted("replicate-judge")
    for protocol in PROTOCOLS:
        for model in MODELS:
            for case in CASES:
                for fmt in FORMATS:
                    for replicate, seed in enumerate(SEEDS):
                        for criterion in (*PER_OUTPUT, COMPLEXITY):
                            script.score(score(protocol, model, case, fmt, replicate, criterion),
                                         item=f"conclusion:{criterion}",
                                         where={"contains_all": [MARKERS[case], mark(protocol, model, fmt, seed)]})
    return script.score(FALLBACK).build()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replicate-tables")
    cases = root / "cases"
    cases.mkdir()
    for case in CASES:
        (cases / f"{case}.json").write_text(json.dumps({
            "id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the diagnosis?",
            "presentation": f"Case {MARKERS[case]}: fever and cough.", "reference": {"diagnosis": "Pneumonia"}}))
    for model in MODELS:
        (root / f"{model}.json").write_text(json.dumps(panel_script(model)))
    (root / "judge.json").write_text(json.dumps(judge_script()))
    experiment = root / "experiment.yaml"
    experiment.write_text(f"""cases: cases
models: [scripted:panel-a.json, scripted:panel-b.json]
protocol: [consilium, single]
formats: [free-form, structured]
run: {{max_rounds: {MAX_ROUNDS}, seed: {SEEDS[0]}}}
judges: [ai-consilium]
judge_model: scripted:judge.json
replicates: {len(SEEDS)}
""")
    assert main(["cohort", "--experiment", str(experiment), "--out", str(root / "runs")]) == 0
    [folder] = list((root / "runs").iterdir())
    assert main(["compare", str(folder), "--bootstrap", "2000"]) == 0
    assert main(["report", str(folder), "--bootstrap", "2000"]) == 0
    return folder


def _consilium_arms() -> list[tuple[str, str, str, int]]:
    return [(m, k, f, r) for m in MODELS for k in CASES for f in FORMATS for r in REPLICATES]


def test_the_study_ran_as_scripted(run_dir: Path) -> None:
    rows = read_csv(run_dir / "arms.csv")
    assert len(rows) == len(PROTOCOLS) * len(MODELS) * len(FORMATS) * len(CASES) * len(SEEDS)
    assert all(r["status"] == "completed" for r in rows)
    for r in rows:
        if r["protocol"] == "consilium":
            rounds = votes(r["model"], r["case_id"], r["format"], int(r["replicate"]))
            assert (r["stop_reason"], int(r["rounds"])) == (stop_reason(rounds), len(rounds)), r
    judged = read_csv(run_dir / "judgements.csv")
    for j in judged:
        if j["component"] == "conclusion" and j["criterion"] in (*PER_OUTPUT, COMPLEXITY):
            protocol = "consilium" if j["format"] in FORMATS else "single"
            fmt = j["format"].removeprefix("single-")
            if protocol == "single" and j["criterion"] == COMPLEXITY:  # no deliberation record to judge
                assert j["not_evaluable"] == "True"
                continue
            assert float(j["score"]) == score(protocol, j["model"], j["case_id"], fmt, int(j["replicate"]),
                                              j["criterion"]), j


def _rows(path: Path, **where: str) -> list[dict[str, str]]:
    return [r for r in read_csv(path) if all(r.get(k) == v for k, v in where.items())]


def test_table4_counts_every_replicates_transitions(run_dir: Path) -> None:
    counts: dict[tuple[str, int], Counter[tuple[str, str]]] = defaultdict(Counter)
    arms: Counter[tuple[str, int]] = Counter()
    for model, case, fmt, replicate in _consilium_arms():
        rounds = votes(model, case, fmt, replicate)
        for rnd in range(1, len(rounds)):
            for who in (model, POOLED):
                arms[(who, rnd)] += 1
                for role in panel(SEEDS[replicate]):
                    before = "no" if role in rounds[rnd - 1] else "yes"
                    after = "no" if role in rounds[rnd] else "yes"
                    counts[(who, rnd)][(before, after)] += 1
    for out in (run_dir / "compare", run_dir / "report"):
        if not (out / "table4_vote_transitions.csv").is_file():
            continue  # report has no Table 4
        table = _rows(out / "table4_vote_transitions.csv", protocol="consilium")
        assert {(r["model"], int(r["from_round"])) for r in table} == set(arms)
        for row in table:
            key = (row["model"], int(row["from_round"]))
            assert int(row["arms"]) == arms[key], row
            for before in ("no", "yes"):
                for after in ("no", "yes"):
                    assert int(row[f"{before}_to_{after}"]) == counts[key][(before, after)], (row, before, after)
    assert "each replicate's transitions counted" in (run_dir / "compare" / "compare.md").read_text()


def test_table9_averages_a_cases_replicates_within_its_rounds_group(run_dir: Path) -> None:
    def group(rounds: int) -> str:
        return "1" if rounds == 1 else "2" if rounds == 2 else ">=3"

    for model in (*MODELS, POOLED):
        slots: dict[str, dict[tuple[str, str, str], list[int]]] = defaultdict(lambda: defaultdict(list))
        for m, case, fmt, replicate in _consilium_arms():
            if model in (POOLED, m):
                slots[group(len(votes(m, case, fmt, replicate)))][(m, case, fmt)].append(replicate)
        table = _rows(run_dir / "compare" / "table9_rounds.csv", protocol="consilium", model=model)
        assert [r["rounds"] for r in table] == [g for g in ("1", "2", ">=3") if g in slots]
        for row in table:
            here = slots[row["rounds"]]
            means = [statistics.fmean(output_mean("consilium", m, k, f, r) for r in reps)
                     for (m, k, f), reps in here.items()]
            complexity = [statistics.fmean(score("consilium", m, k, f, r, COMPLEXITY) for r in reps)
                          for (m, k, f), reps in here.items()]
            assert int(row["outputs"]) == len(here)
            assert int(row["replicate_outputs"]) == sum(len(v) for v in here.values())
            assert float(row["mean_score"]) == pytest.approx(statistics.fmean(means), abs=1e-6)
            assert float(row["sd"]) == pytest.approx(statistics.pstdev(means), abs=1e-6)
            assert int(row["below_2"]) == sum(v < 2 for v in means)
            assert float(row["complexity_mean"]) == pytest.approx(statistics.fmean(complexity), abs=1e-6)
            assert float(row["complexity_sd"]) == pytest.approx(statistics.pstdev(complexity), abs=1e-6)
            if model == POOLED:  # Fig. 8 draws the pooled rows
                [fig] = [g for g in rounds_groups(load_cohort_data(run_dir, "consilium"))
                         if g.rounds == row["rounds"].replace(">=", "≥")]
                assert (fig.outputs, fig.below_2) == (len(here), sum(v < 2 for v in means))
                assert fig.mean == pytest.approx(statistics.fmean(means), abs=1e-9)
                assert fig.complexity_mean == pytest.approx(statistics.fmean(complexity), abs=1e-9)
    assert "replicates averaged within (model, format, case) in a group" in \
        (run_dir / "compare" / "compare.md").read_text()


def test_consilium_vs_single_averages_each_protocols_replicates(run_dir: Path) -> None:
    for model in (*MODELS, POOLED):
        for fmt in FORMATS:
            for criterion in ("mean", "c1", "c5"):
                def value(protocol: str, m: str, case: str, fmt: str = fmt, criterion: str = criterion) -> float:
                    if criterion == "mean":
                        return statistics.fmean(output_mean(protocol, m, case, fmt, r) for r in REPLICATES)
                    return statistics.fmean(score(protocol, m, case, fmt, r, criterion) for r in REPLICATES)

                models = MODELS if model == POOLED else (model,)
                diffs = {k: [value("consilium", m, k) - value("single", m, k) for m in models] for k in CASES}
                flat = [d for v in diffs.values() for d in v]
                clusters = [statistics.fmean(v) for v in diffs.values()]
                for out in ("compare", "report"):
                    [row] = _rows(run_dir / out / "consilium_vs_single.csv", model=model, format=fmt,
                                  rubric="ai-consilium", component="conclusion", criterion=criterion)
                    assert (int(row["cases"]), int(row["pairs"])) == (len(flat), len(flat)), row
                    assert float(row["mean_difference"]) == pytest.approx(statistics.fmean(flat), abs=1e-6), row
                    assert float(row["ci_low"]) == pytest.approx(min(clusters), abs=1e-6)
                    assert float(row["ci_high"]) == pytest.approx(max(clusters), abs=1e-6)
    assert "each protocol's replicates averaged within (model, format, case) first" in \
        (run_dir / "compare" / "compare.md").read_text()


def test_fig3b_averages_a_cases_replicates_and_counts_them(run_dir: Path) -> None:
    def dissent(rounds: list[set[str]], rnd: int, seed: int) -> float:
        return 100 * len(rounds[rnd - 1]) / len(panel(seed))

    rows = dissent_reductions(load_cohort_data(run_dir, "consilium"), bootstrap=2000)
    expected = {}
    for rnd in range(1, MAX_ROUNDS):
        for fmt in FORMATS:
            slots: dict[tuple[str, str], list[float]] = defaultdict(list)
            for m, case, f, replicate in _consilium_arms():
                rounds, seed = votes(m, case, f, replicate), SEEDS[replicate]
                if f == fmt and len(rounds) > rnd:
                    slots[(m, case)].append(dissent(rounds, rnd, seed) - dissent(rounds, rnd + 1, seed))
            if slots:
                expected[(fmt, rnd)] = (sum(len(v) for v in slots.values()),
                                        statistics.fmean(statistics.fmean(v) for v in slots.values()))
    assert {(r.format, r.from_round) for r in rows} == set(expected)
    for row in rows:
        arms, mean = expected[(row.format, row.from_round)]
        assert row.averaged and row.arms == arms and row.mean == pytest.approx(mean, abs=1e-9), row
        assert row.ci_low <= row.mean <= row.ci_high
    assert (run_dir / "compare" / "consilium" / "fig3b_dissent_reduction.png").is_file()


def test_panels_count_every_replicates_own_panel(run_dir: Path) -> None:
    per_model = len(CASES) * len(SEEDS)  # a panel per case and replicate (its formats share it)
    four = len(CASES)  # the last seed's panels have four roles
    for out in ("compare", "report"):
        if not (run_dir / out / "fig2_panel_sizes.csv").is_file():
            continue  # report has no Fig. 2 tables
        sizes = {(r["model"], int(r["roles"])): int(r["panels"])
                 for r in _rows(run_dir / out / "fig2_panel_sizes.csv", protocol="consilium")}
        for model in MODELS:
            assert sizes[(model, 3)] == per_model - four and sizes[(model, 4)] == four
        assert sizes[(POOLED, 3)] == len(MODELS) * (per_model - four) and sizes[(POOLED, 4)] == len(MODELS) * four
        categories = {(r["model"], r["category_name"]): r
                      for r in _rows(run_dir / out / "fig2_role_categories.csv", protocol="consilium")}
        [pulmonology] = [r for (m, name), r in categories.items() if m == "panel-a" and "ulmon" in name]
        assert int(pulmonology["panels"]) == four
        assert float(pulmonology["panels_pct"]) == pytest.approx(100 * four / per_model, abs=1e-6)
        assert int(pulmonology["supporting"]) == four
        assert float(pulmonology["supporting_pct"]) == pytest.approx(100 * four / (2 * per_model + four), abs=1e-6)


def test_fig7_case_means_average_each_arms_replicates(run_dir: Path) -> None:
    [c1] = [r for r in case_means(load_cohort_data(run_dir, "consilium")) if r.criterion == "c1"]
    for case in CASES:
        slots = [statistics.fmean(score("consilium", m, case, f, r, "c1") for r in REPLICATES)
                 for m in MODELS for f in FORMATS]
        assert c1.means[case] == pytest.approx(statistics.fmean(slots), abs=1e-9)


def test_counts_pool_every_replicate_arm_and_titles_say_so(run_dir: Path) -> None:
    table3 = _rows(run_dir / "compare" / "table3_outcomes.csv", protocol="consilium")
    for model in (*MODELS, POOLED):
        for fmt in FORMATS:
            arms = [(m, k, f, r) for m, k, f, r in _consilium_arms() if f == fmt and model in (POOLED, m)]
            stops = Counter(stop_reason(votes(m, k, f, r)) for m, k, f, r in arms)
            [row] = [r for r in table3 if (r["model"], r["format"]) == (model, fmt)]
            assert int(row["arms"]) == int(row["completed"]) == len(arms)
            assert {s: int(row[s]) for s in ("consensus", "no_change", "round_limit")} == \
                {s: stops[s] for s in ("consensus", "no_change", "round_limit")}
            assert float(row["mean_rounds"]) == pytest.approx(
                statistics.fmean(len(votes(m, k, f, r)) for m, k, f, r in arms), abs=1e-6)
    compare_md = (run_dir / "compare" / "compare.md").read_text()
    report_md = (run_dir / "report" / "report.md").read_text()
    for title in ("## Table 3: controller-recorded outcomes by model and format (ai-consilium.txt) (replicates "
                  "pooled: each replicate is an arm, counted in n)",
                  "## Paired differences, structured − free-form within (model, case), with 95% CIs from a "
                  "case-clustered bootstrap (2000 draws, seed 0) (replicates averaged within (model, format, case) "
                  "first)"):
        assert title in compare_md
    assert "## Outcomes (ai-consilium.txt, Table 3) (replicates pooled" in report_md
    assert "## Tokens per case (Table 7) (replicates pooled: cases = replicate arms" in report_md


# ---- a criterion never evaluable keeps its row in the replicate tables ----------------------------------------


def _replicated_data() -> CohortData:
    arms, rows = [], []
    for case in ("k1", "k2"):
        for fmt in ("free-form", "structured"):
            for replicate in ("0", "1"):
                arms.append({"case_id": case, "model": "m", "format": fmt, "status": "completed",
                             "replicate": replicate})
                score = str(1 + int(replicate) + (fmt == "structured"))
                for criterion, value in (("c1", score), ("c2", "")):
                    rows.append({"case_id": case, "model": "m", "protocol": "consilium", "format": fmt,
                                 "replicate": replicate, "rubric": "ai-consilium", "component": "conclusion",
                                 "criterion": criterion, "score": value, "not_evaluable": str(not value),
                                 "reason": "no reference" if not value else "", "whole_case": "False",
                                 "judgement": "j.json"})
    return CohortData(arms=[ArmRow.model_validate(a) for a in arms],
                      judgements=[JudgementRow.model_validate(r) for r in rows])


def test_the_replicate_tables_keep_a_criterion_never_evaluable() -> None:
    from consilium.reports.consilium.paired import paired_differences
    from consilium.reports.consilium.replicates import replicate_case_sd, replicate_sd

    data = _replicated_data()
    sd = {(r["model"], r["format"], r["criterion"]): r for r in replicate_sd(data, bootstrap=50)}
    never = sd[("m", "free-form", "c2")]
    assert never["not_evaluable"] == 4 and never["cases"] == 0 and never["mean"] is None
    assert never["sd_pooled"] is None and never["ci_low"] is None
    scored = sd[("m", "free-form", "c1")]
    assert scored["not_evaluable"] == 0 and scored["mean"] == 1.5 and scored["cases"] == 2
    assert sd[("pooled", "structured", "c2")]["not_evaluable"] == 4
    cases = [r for r in replicate_case_sd(data) if r["criterion"] == "c2"]
    assert len(cases) == 4 and all(r["not_evaluable"] == 2 and r["replicates"] == 0 and r["mean"] is None
                                   for r in cases)
    paired = {(r["model"], r["criterion"]): r for r in paired_differences(data, bootstrap=50)}
    assert paired[("m", "c2")]["not_evaluable"] == 8 and paired[("m", "c2")]["mean_difference"] is None
    assert paired[("m", "c1")]["mean_difference"] == 1.0 and paired[("m", "c1")]["not_evaluable"] == 0
