"""``consilium ablate``: a scripted cohort of three cases, each kind run on it, and every number checked by hand.

The panel (``panel_script``) answers by case marker: each case's panel, the dissent of each round (VOTES), a
synthesis that names which opinions it merged (``report FULL``, ``report NO-<role>``), revisions that keep
that name (``… rev<round>``). The judge (``judge_script``) scores each final text by case and name (SCORES), so
the ablated arms score differently from the originals and from each other. The reused-call counts follow from
which requests an ablation leaves as they were (worked out beside each assertion).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import wilcoxon
from support.scripts import Scripted

from consilium import api
from consilium.ablation.report import write_outputs
from consilium.ablation.tables import stat_rows
from consilium.cli import main
from consilium.stats import holm, rank_biserial

CASES = ("k1", "k2", "k3")
MARK = {"k1": "ZQALPHA", "k2": "ZQBRAVO", "k3": "ZQCHARLIE"}
IM, CA, NE, PU = "Internal Medicine", "Cardiology", "Neurology", "Pulmonology"
PANELS = {"k1": (IM, CA, NE), "k2": (CA, IM, PU), "k3": (NE, IM, CA)}  # the primary first
MAX_ROUNDS = 3


def rid(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


#: case → the role ids dissenting in rounds 1, 2, …: k1 consensus in round 2, k2 round_limit at 3, k3 consensus in 1.
VOTES = {"k1": [{rid(CA)}], "k2": [{rid(IM)}] * 3, "k3": []}
RUBRIC = "otb-conclusion-alignment"
METRIC = f"score:{RUBRIC}"
#: case → (a text the final report holds → the judge's score), tried in order.
SCORES = {
    "k1": [("FULL rev", 4), ("report FULL", 2), ("NO-internal-medicine", 2), ("NO-cardiology", 4),
           ("NO-neurology", 3), ("SINGLE", 3), ("MODB", 3)],
    "k2": [("FULL rev3", 5), ("FULL rev", 3), ("report FULL", 4), ("NO-cardiology", 1), ("NO-internal-medicine", 3),
           ("NO-pulmonology", 3), ("SINGLE", 2), ("MODB", 3)],
    "k3": [("report FULL", 5), ("NO-neurology", 3), ("NO-internal-medicine", 5), ("NO-cardiology", 4),
           ("SINGLE", 5), ("MODB", 3)],
}


def panel_script() -> dict[str, Any]:
    script = Scripted("panel")
    for case, labels in PANELS.items():
        m = MARK[case]
        script.roles(*labels, justification=("owns the question", "also needed"), where={"contains": m})
        script.opinion(f"{m} SINGLE answer", where={"contains_all": [m, "No panel meets on this case"]})
    script.opinion("Opinion of {role}")
    for case, labels in PANELS.items():
        m = MARK[case]
        script.synthesis(f"{m} report FULL", where={"contains_all": [m, *(f"[{x}]" for x in labels)]})
        for left in labels:
            script.synthesis(f"{m} report NO-{rid(left)}",
                             where={"contains_all": [m, *(f"[{x}]" for x in labels if x != left)]})
        for rnd, dissenting in enumerate(VOTES[case], 1):
            for role in dissenting:
                script.dissent(role, rnd, where={"contains": m})
        for tag in ["FULL", *(f"NO-{rid(x)}" for x in labels)]:
            script.revision(f"{m} report {tag} rev{{round}}", where={"contains_all": [m, f"report {tag}"]})
    return script.accept().build()


def moderator_script() -> dict[str, Any]:
    script = Scripted("moderator-b")
    for m in MARK.values():
        script.synthesis(f"{m} report MODB", where={"contains": m})
        script.revision(f"{m} report MODB rev{{round}}", where={"contains": m})
    return script.build()


def judge_script() -> dict[str, Any]:
    script = Scripted("judge")
    for case in CASES:
        for text, value in SCORES[case]:
            script.judge({"conclusion_alignment": {"score": value, "rationale": "r"}},
                         where={"contains_all": [MARK[case], text]})
    return script.build()


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ablate")
    (root / "cases").mkdir()
    for case in CASES:
        (root / "cases" / f"{case}.json").write_text(json.dumps({
            "id": case, "title": case, "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARK[case]}: fever and cough.",
            "reference": {"diagnosis": "Pneumonia", "conclusion": "Treat community-acquired pneumonia."}}))
    for name, script in (("panel", panel_script()), ("moderator", moderator_script()), ("judge", judge_script())):
        (root / f"{name}.json").write_text(json.dumps(script))
    (root / "run.yaml").write_text(f"max_rounds: {MAX_ROUNDS}\n")
    code = main(["cohort", "--cases", str(root / "cases"), "--model", f"scripted:{root / 'panel.json'}",
                 "--formats", "free-form", "--config", str(root / "run.yaml"), "--judge", RUBRIC,
                 "--judge-model", f"scripted:{root / 'judge.json'}", "--concurrency", "4", "--out", str(root / "runs")])
    assert code == 0
    [run_dir] = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return run_dir


#: A jury of three judges that score the same final texts differently (case → text → score, tried in order);
#: judge-a is the single judge's SCORES, so its score and the jury's median differ case by case.
JURY_SCORES = {
    "judge-a": SCORES,
    "judge-b": {"k1": [("FULL rev", 2), ("report FULL", 3), ("NO-", 1), ("SINGLE", 5), ("MODB", 2)],
                "k2": [("FULL rev", 1), ("report FULL", 2), ("NO-", 4), ("SINGLE", 1), ("MODB", 5)],
                "k3": [("report FULL", 3), ("NO-", 2), ("SINGLE", 3), ("MODB", 1)]},
    "judge-c": {"k1": [("FULL rev", 1), ("report FULL", 5), ("NO-", 3), ("SINGLE", 2), ("MODB", 4)],
                "k2": [("FULL rev", 2), ("report FULL", 2), ("NO-", 2), ("SINGLE", 4), ("MODB", 1)],
                "k3": [("report FULL", 4), ("NO-", 5), ("SINGLE", 1), ("MODB", 5)]},
}


def scored_by(model: str, scores: dict[str, list[tuple[str, int]]]) -> dict[str, Any]:
    return {"model": model, "rules": [
        {"stage": "judge", "contains_all": [MARK[case], text],
         "json": {"conclusion_alignment": {"score": value, "rationale": "r"}}}
        for case in scores for text, value in scores[case]]}


def write_cases(root: Path) -> Path:
    (root / "cases").mkdir(exist_ok=True)
    for case in CASES:
        (root / "cases" / f"{case}.json").write_text(json.dumps({
            "id": case, "title": case, "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARK[case]}: fever and cough.",
            "reference": {"diagnosis": "Pneumonia", "conclusion": "Treat community-acquired pneumonia."}}))
    return root / "cases"


def run_cohort(root: Path, *flags: str, panel: dict[str, Any] | None = None, codes: tuple[int, ...] = (0,)) -> Path:
    """The three cases run as a cohort in ``root`` by the scripted panel (``panel_script()`` unless given), at a
    cap of MAX_ROUNDS, with ``flags`` (how it is judged); its folder."""
    (root / "panel.json").write_text(json.dumps(panel or panel_script()))
    (root / "run.yaml").write_text(f"max_rounds: {MAX_ROUNDS}\n")
    assert main(["cohort", "--cases", str(write_cases(root)), "--model", f"scripted:{root / 'panel.json'}",
                 "--formats", "free-form", "--config", str(root / "run.yaml"), *flags,
                 "--out", str(root / "runs")]) in codes
    [run_dir] = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return run_dir


@pytest.fixture(scope="module")
def jury_cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three cases judged by a jury of three (--judge-model given three times): each item is its median."""
    root = tmp_path_factory.mktemp("ablate-jury")
    judges = []
    for name, scores in JURY_SCORES.items():
        (root / f"{name}.json").write_text(json.dumps(scored_by(name, scores)))
        judges += ["--judge-model", f"scripted:{root / name}.json"]
    return run_cohort(root, "--judge", RUBRIC, *judges, "--concurrency", "4")


def ablate(run_dir: Path, kind: str, *extra: str, name: str | None = None) -> Path:
    out = run_dir.parent / (name or f"out-{kind}")
    assert main(["ablate", str(run_dir), "--kind", kind, "--out", str(out), "--bootstrap", "500", *extra]) == 0
    return out


def table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def stat(out: Path, group: str, metric: str = METRIC) -> dict[str, str]:
    [row] = [r for r in table(out / "stats.csv") if r["group"] == group and r["metric"] == metric]
    return row


def calls(out: Path) -> dict[tuple[str, str], tuple[int, int]]:
    return {(r["condition"], r["case_id"]): (int(r["reused_calls"]), int(r["new_calls"]))
            for r in table(out / "arms.csv")}


def trace(out: Path, case: str, condition: str) -> dict[str, Any]:
    [path] = out.glob(f"arms/*/*/{case}.free-form.{condition}.trace.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def p_of(differences: Sequence[float]) -> float:
    return float(wilcoxon(differences, zero_method="wilcox").pvalue)


def by_hand_rank_biserial(differences: Sequence[float]) -> float:
    """Signed ranks of |d| over the non-zero d (ties averaged), (W+ − W−) / (W+ + W−)."""
    nonzero = sorted((d for d in differences if d), key=abs)
    ranks: dict[float, float] = {}
    i = 0
    while i < len(nonzero):
        j = i
        while j < len(nonzero) and abs(nonzero[j]) == abs(nonzero[i]):
            j += 1
        ranks[abs(nonzero[i])] = (i + 1 + j) / 2
        i = j
    plus = sum(ranks[abs(d)] for d in nonzero if d > 0)
    minus = sum(ranks[abs(d)] for d in nonzero if d < 0)
    return (plus - minus) / (plus + minus)


def holm_by_hand(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - k) * ps[i]))
        adjusted[i] = running
    return adjusted


def test_no_deliberation(cohort: Path) -> None:
    out = ablate(cohort, "no-deliberation")
    # The role assignment, three opinions and the synthesis ask what the original asked: all reused, none new.
    assert calls(out) == {("no-deliberation", c): (5, 0) for c in CASES}
    k1 = trace(out, "k1", "no-deliberation")
    assert k1["rounds"] == [] and len(k1["reports"]) == 1 and k1["config"]["review"] is False
    assert k1["stop_reason"] is None and k1["final_report"]["text"] == "ZQALPHA report FULL"
    # originals: k1 "FULL rev1" 4, k2 "FULL rev2" 3, k3 "FULL" 5; the initial reports: 2, 4, 5
    differences = [2 - 4, 4 - 3, 5 - 5]
    row = stat(out, "no-deliberation")
    assert int(row["cases"]) == 3 and float(row["mean_difference"]) == round(-1 / 3, 4)
    assert float(row["rank_biserial"]) == round(by_hand_rank_biserial(differences), 4) == round(-1 / 3, 4)
    assert float(row["p"]) == p_of(differences) and float(row["p_holm"]) == float(row["p"])  # a family of one
    assert float(row["ci_low"]) <= float(row["mean_difference"]) <= float(row["ci_high"])
    rounds = stat(out, "no-deliberation", "rounds")
    assert float(rounds["mean_difference"]) == -2.0 and float(rounds["rank_biserial"]) == -1.0  # 0 − (2, 3, 1)
    stops = {(r["original"], r["ablated"]): int(r["arms"]) for r in table(out / "stop_reasons.csv")}
    assert stops == {("consensus", "none"): 2, ("round_limit", "none"): 1}
    assert (out / "forest.png").is_file() and "## Paired differences" in (out / "report.md").read_text()
    assert "15 reused from the original traces, 0 new" in (out / "report.md").read_text()


def test_leave_one_out_and_primary_is_a_holm_family_of_its_own(cohort: Path) -> None:
    out = ablate(cohort, "leave-one-out")
    # A fixed panel makes no role assignment; the two remaining opinions are reused; the synthesis merges other
    # opinions (new), so every later call sees another report (new). k1 less CA: one round of 2 votes (3 new);
    # less IM or NE: CA still dissents, so 2 votes, a revision and 2 votes (6 new). k2 less IM: no dissent (3
    # new), less CA or PU: IM dissents to the cap, 3 × 2 votes and 2 revisions (9 new). k3: one round (3 new).
    expected = {"k1": {IM: 6, CA: 3, NE: 6}, "k2": {CA: 9, IM: 3, PU: 9}, "k3": {NE: 3, IM: 3, CA: 3}}
    assert calls(out) == {(f"without-{rid(x)}", c): (2, n) for c, new in expected.items() for x, n in new.items()}
    k1 = trace(out, "k1", "without-internal-medicine")
    assert [r["id"] for r in k1["roles"]] == ["cardiology", "neurology"] and len(k1["rounds"]) == 2
    assert [r["id"] for r in k1["config"]["panel"]] == ["cardiology", "neurology"]
    assert {v["role"] for rnd in k1["rounds"] for v in rnd["votes"]} == {"cardiology", "neurology"}
    assert not any(c["stage"] == "role_assignment" for c in k1["calls"])
    assert len(trace(out, "k2", "without-cardiology")["rounds"]) == 3
    # score differences by category (originals 4, 3, 5): IM in k1 (2), k2 (3), k3 (5); CA in k1 (4), k2 (1),
    # k3 (4); NE in k1 (3), k3 (3); PU in k2 (3); the primary roles IM (2), CA (1), NE (3).
    diffs = {"internal_medicine": [-2, 0, 0], "cardiology": [0, -2, -1], "neurology": [-1, -2], "pulmonology": [0],
             "primary": [-2, -2, -2]}
    rows = {g: stat(out, g) for g in diffs}
    for group, d in diffs.items():
        assert float(rows[group]["mean_difference"]) == round(sum(d) / len(d), 4), group
        assert int(rows[group]["cases"]) == len(d)
    assert rows["pulmonology"]["p"] == "" and "not testable" in rows["pulmonology"]["note"]
    for group in (g for g in diffs if any(diffs[g])):
        assert float(rows[group]["p"]) == p_of(diffs[group])
        assert float(rows[group]["rank_biserial"]) == round(by_hand_rank_biserial(diffs[group]), 4)
    # Holm: the testable categories are one family (each left-out arm once). The primary role's arm is also one
    # of its category's, so `primary` tests those arms again: it is a family of its own, p_holm = p.
    categories = ["internal_medicine", "cardiology", "neurology"]
    for group, adjusted in zip(categories, holm_by_hand([p_of(diffs[g]) for g in categories]), strict=True):
        assert float(rows[group]["p_holm"]) == pytest.approx(adjusted, rel=1e-9), group
    assert float(rows["primary"]["p_holm"]) == float(rows["primary"]["p"]) == p_of(diffs["primary"])
    assert rows["pulmonology"]["p_holm"] == ""
    drops = [(r["category"], float(r["mean_drop"])) for r in table(out / "contributions.csv")]
    assert drops == [("primary", 2.0), ("neurology", 1.5), ("cardiology", 1.0), ("internal_medicine", 0.6667),
                     ("pulmonology", 0.0)]


def test_single(cohort: Path) -> None:
    out = ablate(cohort, "single")
    # The baseline's role assignment is the consilium's own request (reused); its one answer is new.
    assert calls(out) == {("single", c): (1, 1) for c in CASES}
    k2 = trace(out, "k2", "single")
    assert k2["kind"] == "single" and k2["specialist"] == "cardiology"
    row = stat(out, "single")
    assert float(row["mean_difference"]) == round((3 - 4 + 2 - 3 + 5 - 5) / 3, 4)
    assert float(row["p"]) == p_of([-1, -1, 0])


def test_max_rounds(cohort: Path) -> None:
    out = ablate(cohort, "max-rounds", "--max-rounds", "1,2,5")
    # Up to the original's last round every request is the original's. Cap 1: assignment, 3 opinions, synthesis,
    # 3 votes (8); cap 2: k1 all 12, k2 12 (its third round never comes), k3 8; cap 5: k2 goes on: a third revision
    # and a fourth round of 3 votes are new.
    assert calls(out) == {**{("max-rounds-1", c): (8, 0) for c in CASES},
                          ("max-rounds-2", "k1"): (12, 0), ("max-rounds-2", "k2"): (12, 0),
                          ("max-rounds-2", "k3"): (8, 0), ("max-rounds-5", "k1"): (12, 0),
                          ("max-rounds-5", "k2"): (16, 4), ("max-rounds-5", "k3"): (8, 0)}
    assert len(trace(out, "k2", "max-rounds-5")["rounds"]) == 4
    assert trace(out, "k2", "max-rounds-1")["stop_reason"] == "round_limit"
    one, two, five = (stat(out, f"max_rounds={k}") for k in (1, 2, 5))
    assert float(one["mean_difference"]) == round(-1 / 3, 4) and float(one["p"]) == p_of([-2, 1, 0])
    assert two["p"] == "" and float(two["mean_difference"]) == 0.0  # k2 ends at "FULL rev1" as the original: 3
    assert float(five["mean_difference"]) == round(2 / 3, 4) and float(five["p"]) == p_of([0, 2, 0])
    [adjusted_one, adjusted_five] = holm_by_hand([p_of([-2, 1, 0]), p_of([0, 2, 0])])
    assert float(one["p_holm"]) == pytest.approx(adjusted_one, rel=1e-9)
    assert float(five["p_holm"]) == pytest.approx(adjusted_five, rel=1e-9)
    assert float(stat(out, "max_rounds=5", "rounds")["mean_difference"]) == round(1 / 3, 4)


def test_moderator(cohort: Path) -> None:
    moderator = cohort.parent.parent / "moderator.json"
    out = ablate(cohort, "moderator", "--moderator-model", f"scripted:{moderator}")
    # The same panel (no assignment call), its three opinions reused; the other moderator's syntheses and
    # revisions are new, and so is every vote on its reports: k1 1 + 3 + 1 + 3, k2 1 + 3 × 3 + 2, k3 1 + 3.
    assert calls(out) == {("moderator", "k1"): (3, 8), ("moderator", "k2"): (3, 12), ("moderator", "k3"): (3, 4)}
    k2 = trace(out, "k2", "moderator")
    assert k2["moderator_model"] == "moderator-b" and [r["id"] for r in k2["roles"]] == ["cardiology",
                                                                                          "internal-medicine",
                                                                                          "pulmonology"]
    assert float(stat(out, "moderator")["mean_difference"]) == round((3 - 4 + 3 - 3 + 3 - 5) / 3, 4)


def median_of_the_jury(case: str, text: str) -> float:
    """The jury's verdict by hand: each judge's first rule that the text matches, the middle of the three."""
    scores = sorted(next(v for t, v in JURY_SCORES[judge][case] if t in text) for judge in JURY_SCORES)
    return float(scores[1])


def test_ablation_pairs_are_judged_by_the_same_jury(jury_cohort: Path) -> None:
    """A cap equal to the cohort's own re-runs every arm call for call: the traces are the originals', so with
    both sides judged by the cohort's jury every difference is exactly 0. A cap of 1 changes k1's answer only."""
    out = ablate(jury_cohort, "max-rounds", "--max-rounds", f"1,{MAX_ROUNDS}")
    # The originals' final reports: k1 "FULL rev1" (median of 4, 2, 1), k2 "FULL rev2" (3, 1, 2), k3 "FULL" (5, 3, 4)
    finals = {"k1": "ZQALPHA report FULL rev1", "k2": "ZQBRAVO report FULL rev2", "k3": "ZQCHARLIE report FULL"}
    originals = {c: median_of_the_jury(c, t) for c, t in finals.items()}
    assert originals == {"k1": 2.0, "k2": 2.0, "k3": 4.0}
    arms = {(r["condition"], r["case_id"]): r for r in table(out / "arms.csv")}
    for case, score in originals.items():
        for cap in (1, MAX_ROUNDS):
            assert float(arms[(f"max-rounds-{cap}", case)][f"score_original:{RUBRIC}"]) == score
    same = f"max_rounds={MAX_ROUNDS}"
    rows = [r for r in table(out / "stats.csv") if r["group"] == same]
    assert sorted(r["metric"] for r in rows) == sorted([METRIC, "rounds", "tokens"])  # every metric's row
    for row in rows:
        metric = row["metric"]
        assert int(row["cases"]) == 3 and int(row["pairs_left_out"]) == 0, metric
        assert (float(row["mean_difference"]), float(row["ci_low"]), float(row["ci_high"])) == (0.0, 0.0, 0.0), metric
        assert row["mean_original"] == row["mean_ablated"], metric
        assert (row["p"], row["p_holm"], row["rank_biserial"], row["wilcoxon_w"]) == ("", "", "", ""), metric
        assert row["note"] == "not testable: every difference is zero", metric
    pairs = [r for r in table(out / "pairs.csv") if r["group"] == same]
    assert len(pairs) == 9 and all(float(r["difference"]) == 0.0 and r["original"] == r["ablated"] for r in pairs)
    # every arm's row: each side's score, rounds, tokens and stop reason the same; every call the original's
    for row in (r for r in arms.values() if r["condition"] == f"max-rounds-{MAX_ROUNDS}"):
        for before, after in ((f"score_original:{RUBRIC}", f"score:{RUBRIC}"), ("rounds_original", "rounds"),
                              ("tokens_original", "tokens"), ("stop_reason_original", "stop_reason")):
            assert row[before] == row[after] != "", (row["case_id"], after)
        assert int(row["new_calls"]) == 0
    stops = [r for r in table(out / "stop_reasons.csv") if r["group"] == same]
    assert sum(int(r["arms"]) for r in stops) == 3 and all(r["original"] == r["ablated"] for r in stops)
    # Cap 1 stops every case after its first vote: the initial report "report FULL" is the answer.
    ablated = {c: median_of_the_jury(c, "report FULL") for c in CASES}
    assert ablated == {"k1": 3.0, "k2": 2.0, "k3": 4.0}
    one = stat(out, "max_rounds=1")
    assert float(one["mean_difference"]) == round(sum(ablated[c] - originals[c] for c in CASES) / 3, 4)
    # every ablated judgement is the jury's: three votes per item and the median's rule
    judgement = json.loads(next(out.glob(f"arms/*/*/k2.free-form.max-rounds-1.judge.{RUBRIC}.json")).read_text())
    assert judgement["judge_model"] == "jury[judge-a, judge-b, judge-c]"
    assert [len(i["votes"]) for i in judgement["items"]] == [3] and judgement["items"][0]["verdict"]["rule"] == "median"
    report = (out / "report.md").read_text()
    assert "originals judged by jury[judge-a, judge-b, judge-c]: 3 judgements read from the cohort, 0 made here" \
        in report, report
    assert "ablated arms judged by jury[judge-a, judge-b, judge-c]" in report
    assert not (out / "originals").exists()  # the cohort's own verdicts were the same jury's: read, not remade


@pytest.mark.parametrize("kind", ["no-deliberation", "leave-one-out", "single", "moderator"])
def test_every_kind_scores_both_sides_by_the_cohorts_jury(jury_cohort: Path, kind: str) -> None:
    """Each kind on the jury-judged cohort: the originals keep the jury's verdicts (read, none made again) and
    every ablated arm is scored by the same three judges with the same rule, the median of their votes, worked
    out here from each arm's answer; each comparison's mean difference follows from those medians."""
    moderator = jury_cohort.parent.parent / "moderator.json"
    moderator.write_text(json.dumps(moderator_script()))
    extra = ["--moderator-model", f"scripted:{moderator}"] if kind == "moderator" else []
    out = ablate(jury_cohort, kind, *extra, name=f"jury-{kind}")
    originals = {"k1": 2.0, "k2": 2.0, "k3": 4.0}  # as in test_ablation_pairs_are_judged_by_the_same_jury
    differences: dict[str, dict[str, list[float]]] = {}
    for row in table(out / "arms.csv"):
        data = json.loads((out / row["trace"]).read_text())
        answer = (data.get("final_report") or data.get("answer"))["text"]
        case, expected = row["case_id"], median_of_the_jury(row["case_id"], answer)
        assert float(row[f"score_original:{RUBRIC}"]) == originals[case], row
        assert float(row[f"score:{RUBRIC}"]) == expected, (row["condition"], case, answer)
        judgement = json.loads((out / row["trace"].replace(".trace.json", f".judge.{RUBRIC}.json")).read_text())
        assert judgement["judge_model"] == "jury[judge-a, judge-b, judge-c]"
        assert [(len(i["votes"]), i["verdict"]["rule"]) for i in judgement["items"]] == [(3, "median")]
        for group in row["groups"].split():
            differences.setdefault(group, {}).setdefault(case, []).append(expected - originals[case])
    for group, cases in differences.items():
        per_case = [sum(d) / len(d) for d in cases.values()]
        assert float(stat(out, group)["mean_difference"]) == round(sum(per_case) / len(per_case), 4), group
    report = (out / "report.md").read_text()
    assert "originals judged by jury[judge-a, judge-b, judge-c]: 3 judgements read from the cohort, 0 made " \
        "here\n" in report, report
    assert not (out / "originals").exists()


def test_an_ablations_folder_with_its_originals_judged_again_reads_as_a_run(
        jury_cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Another jury (two of the cohort's three judges) judges the originals again into the ablation's folder:
    each original's trace goes beside its new judgement, as every judgement record's trace lies, so ``jury``
    of the ablation's folder reads its 6 answers (3 originals, 3 ablated) instead of stopping at a trace not
    found."""
    root = jury_cohort.parent.parent
    specs = [a for name in ("judge-b", "judge-c") for a in ("--judge-model", f"scripted:{root}/{name}.json")]
    out = ablate(jury_cohort, "no-deliberation", *specs, name="jury-of-two")
    copies = sorted((out / "originals").rglob("*.trace.json"), key=lambda p: p.name)
    assert [p.name for p in copies] == [f"{c}.free-form.trace.json" for c in CASES]
    for copy in copies:
        [original] = jury_cohort.glob(f"arms/*/*/{copy.name}")
        assert copy.read_bytes() == original.read_bytes()
    capsys.readouterr()
    assert main(["jury", str(out), "--rubric", RUBRIC, "--out", str(out / "jury")]) == 0
    assert f"on rubric {RUBRIC}: 6 answers" in capsys.readouterr().out


def test_another_judge_re_judges_the_originals_too(cohort: Path) -> None:
    """--judge-model naming another judge than the cohort's: the originals are judged again by it (into the
    ablation's folder; the cohort's judgements stay as they were), so both sides of a pair are its scores."""
    other = {"k1": [("FULL rev", 1), ("report FULL", 5)], "k2": [("FULL rev", 4), ("report FULL", 2)],
             "k3": [("report FULL", 2)]}
    script = cohort.parent.parent / "other-judge.json"
    script.write_text(json.dumps(scored_by("judge-other", other)))
    kept = {p: p.read_bytes() for p in cohort.rglob("*") if p.is_file()}  # every file of the cohort's folder
    assert sum(p.name.endswith(f".judge.{RUBRIC}.json") for p in kept) == 3
    out = ablate(cohort, "max-rounds", "--max-rounds", f"1,{MAX_ROUNDS}", "--judge-model", f"scripted:{script}",
                 name="out-other-judge")
    by_other = {"k1": 1.0, "k2": 4.0, "k3": 2.0}  # the originals' final reports as the other judge scores them
    arms = {(r["condition"], r["case_id"]): r for r in table(out / "arms.csv")}
    assert {c: float(arms[(f"max-rounds-{MAX_ROUNDS}", c)][f"score_original:{RUBRIC}"]) for c in CASES} == by_other
    same = stat(out, f"max_rounds={MAX_ROUNDS}")
    assert (float(same["mean_difference"]), float(same["ci_low"]), float(same["ci_high"])) == (0.0, 0.0, 0.0)
    one = stat(out, "max_rounds=1")  # "report FULL": 5, 2, 2
    assert float(one["mean_difference"]) == round((5 - 1 + 2 - 4 + 2 - 2) / 3, 4)
    assert {p: p.read_bytes() for p in cohort.rglob("*") if p.is_file()} == kept  # none written, none changed
    assert len(list((out / "originals").rglob(f"*.judge.{RUBRIC}.json"))) == 3
    report = (out / "report.md").read_text()
    assert "originals judged by judge-other: 0 judgements read from the cohort, 3 made here (the cohort's were " \
        "not reused: by judge)" in report, report
    assert "ablated arms judged by judge-other" in report


def test_judge_and_jury_of_a_cohort_read_its_own_arms_not_its_ablations(
        jury_cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An ablation in its default place (RUN_DIR/ablate/…) holds 3 more traces and jury judgements; judging the
    cohort again judges its 3 arms, and the jury's statistics read its 3 answers, none of the ablation's."""
    assert main(["ablate", str(jury_cohort), "--kind", "no-deliberation", "--bootstrap", "100"]) == 0
    inside = list((jury_cohort / "ablate").rglob(f"*.judge.{RUBRIC}.json"))
    assert len(inside) == 3
    capsys.readouterr()
    judges = [a for name in JURY_SCORES for a in ("--judge-model", f"scripted:{jury_cohort.parent.parent}/{name}.json")]
    assert main(["judge", str(jury_cohort), "--rubric", RUBRIC, *judges]) == 0
    judged = [line for line in capsys.readouterr().out.splitlines() if line.startswith("== ") and "->" in line]
    assert sorted(line.split()[1] for line in judged) == [f"{c}.free-form.trace.json" for c in CASES]
    assert main(["jury", str(jury_cohort), "--rubric", RUBRIC, "--out", str(jury_cohort.parent / "jury-out")]) == 0
    assert f"on rubric {RUBRIC}: 3 answers" in capsys.readouterr().out


def test_failed_ablated_arms_are_counted_in_pairs_left_out(cohort: Path) -> None:
    """Another moderator that fails on k3's synthesis: k3's ablated arm fails, enters no pair, and is counted
    as a pair left out of every metric of its comparison; k1 and k2 are paired as in test_moderator."""
    script = moderator_script()
    script["rules"].insert(0, {"stage": "synthesis", "contains": MARK["k3"], "fail": "model"})
    moderator = cohort.parent.parent / "moderator-failing.json"
    moderator.write_text(json.dumps(script))
    out = ablate(cohort, "moderator", "--moderator-model", f"scripted:{moderator}", name="out-moderator-failing")
    assert {r["case_id"]: r["status"] for r in table(out / "arms.csv")} == \
        {"k1": "completed", "k2": "completed", "k3": "failed"}
    for metric in (METRIC, "rounds", "tokens"):
        row = stat(out, "moderator", metric)
        assert (int(row["cases"]), int(row["pairs_left_out"])) == (2, 1), metric
    assert float(stat(out, "moderator")["mean_difference"]) == round((3 - 4 + 3 - 3) / 2, 4)
    assert "1 failed" in (out / "report.md").read_text()


def test_replicates_are_averaged_within_their_case(tmp_path: Path) -> None:
    """Two replicates (seeds 0 and 1); with seed 1 the k1 synthesis is another text, scored 1. Each case is one
    pair, its replicates' differences averaged: k1 (2 − 4 + 1 − 4) / 2, k2 +1, k3 0."""
    for case in CASES:
        (tmp_path / "cases").mkdir(exist_ok=True)
        (tmp_path / "cases" / f"{case}.json").write_text(json.dumps({
            "id": case, "title": case, "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARK[case]}: fever and cough.",
            "reference": {"diagnosis": "Pneumonia", "conclusion": "Treat community-acquired pneumonia."}}))
    panel = panel_script()
    panel["rules"].insert(0, {"stage": "synthesis", "seed": 1, "contains_all": [MARK["k1"], *(f"[{x}]" for x in
                                                                                             PANELS["k1"])],
                              "response": f"{MARK['k1']} report FULL-SEED1"})
    judge = judge_script()
    judge["rules"].insert(0, {"stage": "judge", "contains_all": [MARK["k1"], "FULL-SEED1"],
                              "json": {"conclusion_alignment": {"score": 1, "rationale": "r"}}})
    (tmp_path / "panel.json").write_text(json.dumps(panel))
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    (tmp_path / "study.yaml").write_text(
        f"cases: cases\nmodels: [scripted:panel.json]\nformats: [free-form]\nrun: {{max_rounds: {MAX_ROUNDS}}}\n"
        f"judges: [{RUBRIC}]\njudge_model: scripted:judge.json\nreplicates: 2\n")
    assert main(["cohort", "--experiment", str(tmp_path / "study.yaml"), "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    out = ablate(run_dir, "no-deliberation")
    arms = table(out / "arms.csv")
    assert sorted((r["case_id"], r["replicate"]) for r in arms) == [(c, r) for c in CASES for r in ("0", "1")]
    assert all((r["reused_calls"], r["new_calls"]) == ("5", "0") for r in arms)
    pairs = {r["case_id"]: r for r in table(out / "pairs.csv") if r["metric"] == METRIC}
    assert {c: (int(r["arms"]), float(r["difference"])) for c, r in pairs.items()} == \
        {"k1": (2, -2.5), "k2": (2, 1.0), "k3": (2, 0.0)}
    row = stat(out, "no-deliberation")
    assert int(row["cases"]) == 3 and float(row["mean_difference"]) == round((-2.5 + 1 + 0) / 3, 4)
    assert float(row["p"]) == p_of([-2.5, 1.0, 0.0])


def test_the_statistics_helpers_agree_with_the_hand_formulas() -> None:
    d = [1.5, -0.5, 2.0, -2.0, 0.0, 3.0]
    assert rank_biserial(d) == pytest.approx(by_hand_rank_biserial(d))
    assert rank_biserial([0.0, 0.0]) is None
    ps = [0.01, 0.04, None, 0.03]
    assert holm(ps) == pytest.approx([0.03, 0.06, None, 0.06])


def test_a_p_value_below_1e_4_is_kept_and_printed_as_such_never_as_zero(tmp_path: Path) -> None:
    """25 cases that all went up, by distinct amounts: Wilcoxon's exact two-sided p is 2 / 2**25 (the one
    all-positive sign pattern and its mirror), 6e-8, which six decimals would round to 0."""
    differences = [0.1 * (i + 1) for i in range(25)]
    pairs = [{"group": "single", "model": "m", "format": "free-form", "metric": METRIC, "case_id": f"c{i}",
              "arms": 1, "original": 1.0, "ablated": 1.0 + d, "difference": d} for i, d in enumerate(differences)]
    pairs += [{**r, "case_id": f"k{i}", "original": 2.0, "ablated": 2.0 + d, "difference": d, "group": "other"}
              for i, (r, d) in enumerate(zip(pairs[:6], [0.5, -0.25, 1.0, 0.75, -1.5, 2.0], strict=True))]
    stats = stat_rows(pairs, {}, draws=200, seed=0)
    row = next(r for r in stats if r["group"] == "single")
    assert row["p"] == 2 / 2**25 == p_of(differences) and row["p_holm"] == min(1.0, 2 * 2 / 2**25)
    other = next(r for r in stats if r["group"] == "other")
    assert other["p"] == p_of([0.5, -0.25, 1.0, 0.75, -1.5, 2.0]) > 1e-4
    write_outputs(tmp_path, "single", {"stats": stats, "stop_reasons": [], "calls": []}, ["by hand"])
    lines = {line.split(" | ")[0]: line for line in (tmp_path / "report.md").read_text().splitlines()
             if line.startswith("| single") or line.startswith("| other")}
    assert lines["| single"].endswith("| < 1e-4 | < 1e-4 | – |"), lines["| single"]
    assert f"| {other['p']:.4f} |" in lines["| other"], lines["| other"]  # four decimals, as every other cell
    assert [float(r["p"]) for r in table(tmp_path / "stats.csv")] == [r["p"] for r in stats]


@pytest.mark.parametrize("argv, expected", [
    (["ablate", "/no/such/run", "--kind", "single"], "/no/such/run: no such run folder"),
    (["ablate", "{run}", "--kind", "moderator"], "--moderator-model: --kind moderator needs"),
    (["ablate", "{run}", "--kind", "single", "--moderator-model", "embedded"], "--moderator-model: only"),
    (["ablate", "{run}", "--kind", "single", "--out", "{run}"], "--out: "),
    (["ablate", "{run}", "--kind", "max-rounds", "--max-rounds", "0,2"], "--max-rounds"),
    (["ablate", "{run}", "--kind", "sideways"], "--kind"),
    (["ablate", "{run}", "--kind", "single", "--max-rounds", "2"], "--max-rounds: only"),
    (["ablate", "{cases}", "--kind", "single"], "no manifest.json"),
    (["ablate", "{run}", "--kind", "single", "--judge-model", "embedded", "--judge-model", "embedded"],
     "--judge-model: embedded given twice"),
])
def test_bad_input_is_one_line_and_exit_2(cohort: Path, argv: list[str], expected: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(run=cohort, cases=cohort.parent.parent / "cases") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_the_stop_reason_table_counts_each_ablated_arm_once(cohort: Path) -> None:
    """Leave-one-out: the arm without a primary role enters its category's comparisons and ``primary``'s, but
    it is one arm: the stop-reason and call tables count it once, under its category, so they add up to the
    ablated arms (nine: three cases of three roles), never twelve."""
    out = cohort.parent / "out-stops-once"
    assert main(["ablate", str(cohort), "--kind", "leave-one-out", "--out", str(out), "--bootstrap", "50"]) == 0
    arms = table(out / "arms.csv")  # one row per ablated arm
    assert len(arms) == 9
    expected = Counter((a["left_out_category"], a["stop_reason_original"] or "none", a["stop_reason"] or "none")
                       for a in arms)
    stops = {(r["group"], r["original"], r["ablated"]): int(r["arms"]) for r in table(out / "stop_reasons.csv")}
    assert stops == dict(expected) and sum(stops.values()) == 9
    assert "primary" not in {r["group"] for r in table(out / "calls.csv")}
    assert sum(int(r["arms"]) for r in table(out / "calls.csv")) == 9


def test_every_command_given_the_cohort_reads_its_own_arms_not_its_ablations(
        cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two ablations inside the cohort's folder (one in its default place, ``ablate/``, one put by ``--out`` in
    a folder of the cohort), each with 3 more traces and their judgements: replay, analyze, compare, report,
    export, view, calibrate and the Python API, given the cohort's folder, read its 3 arms and their 3
    judgements only, and leave the ablations' files as they were."""
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir)
    assert main(["ablate", str(run_dir), "--kind", "no-deliberation", "--bootstrap", "50"]) == 0
    assert main(["ablate", str(run_dir), "--kind", "single", "--bootstrap", "50",
                 "--out", str(run_dir / "mine" / "single")]) == 0
    ablations = {p: p.read_bytes() for p in run_dir.rglob("*.json") if "ablate" in p.parts or "mine" in p.parts}
    assert sum(p.name.endswith(".trace.json") for p in ablations) == 6
    assert sum(p.name.endswith(f".judge.{RUBRIC}.json") for p in ablations) == 6
    capsys.readouterr()

    assert main(["replay", str(run_dir)]) == 0
    assert "3 traces: 3 identical, 0 different" in capsys.readouterr().out
    assert main(["analyze", str(run_dir)]) == 0
    assert "analysed 3 arms" in capsys.readouterr().out
    coverage = f"| {RUBRIC} | conclusion | 3 | 3 | 0 |"  # items, judged, not evaluable: the 3 arms' only
    for command in ("compare", "report"):
        assert main([command, str(run_dir), "--bootstrap", "50"]) == 0, command
        out = capsys.readouterr().out
        assert coverage in out and "left out" not in out, (command, out)
    assert main(["export", str(run_dir), "--to", "jsonl"]) == 0
    exported = [json.loads(line) for line in (run_dir / "export" / "judgements.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in exported) == list(CASES)
    assert main(["view", str(run_dir)]) == 0
    assert sorted(p.name for p in (run_dir / "view").rglob("*.html") if p.name != "index.html") == \
        sorted(f"{c}{page}.html" for c in CASES for page in ("", ".free-form"))  # each case's and its arm's
    ratings = tmp_path / "ratings.csv"  # two physicians rate each case's answer
    ratings.write_text("case_id,component,criterion,rater,score\n" + "".join(
        f"{case},conclusion,conclusion_alignment,{rater},{score}\n"
        for rater, scores in (("a", (4, 3, 5)), ("b", (4, 2, 5))) for case, score in zip(CASES, scores, strict=True)))
    capsys.readouterr()
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(run_dir), "--rubric", RUBRIC,
                 "--bootstrap", "20", "--out", str(tmp_path / "calibration")]) == 0
    assert "6 paired with judge scores, 0 without; 3 rated outputs of 3 cases" in capsys.readouterr().out

    judged = api.judge_run(run_dir, RUBRIC, judge_model=f"scripted:{cohort.parent.parent / 'judge.json'}", force=True)
    assert sorted(j.trace for j in judged) == [f"{c}.free-form.trace.json" for c in CASES]
    assert {p: p.read_bytes() for p in ablations} == ablations


FOUR = "otb-four-decision"
#: case → (a text the final report holds → the four decisions therapy, surgery, next action, clinical trial),
#: tried in order; −1: the judge puts the decision out of scope, which is no score.
FOUR_SCORES = {"k1": [("FULL rev", (4, -1, 2, -1)), ("report FULL", (2, 3, -1, -1))],
               "k2": [("FULL rev", (5, 3, 1, -1)), ("report FULL", (-1, -1, 4, -1))],
               "k3": [("report FULL", (3, 3, 3, 3))]}


def four_rules() -> list[dict[str, Any]]:
    dims = ("therapy", "surgery", "next_action", "clinical_trial")
    return [{"stage": "judge", "schema_contains": "clinical_trial", "contains_all": [MARK[case], text],
             "json": {**dict(zip(dims, scores, strict=True)), "rationale": "r"}}
            for case in CASES for text, scores in FOUR_SCORES[case]]


#: opentumorboard.txt App. E.2 (L194): the weights of therapy, surgery, next action and clinical trial.
FOUR_WEIGHTS = (1.00, 1.25, 1.15, 2.00)


def weighted_in_scope(case: str, text: str) -> float:
    """App. E.2's score by hand: Σ w·(s/5) / Σ w over the decisions in scope (s ≠ −1)."""
    scores = next(s for t, s in FOUR_SCORES[case] if t in text)
    kept = [(w, s) for w, s in zip(FOUR_WEIGHTS, scores, strict=True) if s != -1]
    return sum(w * s / 5 for w, s in kept) / sum(w for w, _ in kept)


def test_a_cohort_judged_with_two_rubrics_is_compared_on_each_and_out_of_scope_is_no_score(tmp_path: Path) -> None:
    """A cohort judged with two rubrics by one judge: each rubric is its own metric, both sides read from the
    cohort's judgements. On the four-decision rubric an arm's score is the rubric's own, App. E.2's weighted
    mean over the decisions in scope: a −1 is out of scope, not the lowest point (averaged in as a score, it
    turned k2's rise into a fall of 1.75)."""
    judge = {"model": "judge", "rules": [*four_rules(), *judge_script()["rules"]]}
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    run_dir = run_cohort(tmp_path, "--judge", RUBRIC, "--judge", FOUR,
                         "--judge-model", f"scripted:{tmp_path}/judge.json")
    out = ablate(run_dir, "no-deliberation")
    finals = {"k1": "report FULL rev1", "k2": "report FULL rev2", "k3": "report FULL"}  # the originals' answers
    four = {c: (weighted_in_scope(c, finals[c]), weighted_in_scope(c, "report FULL")) for c in CASES}
    # k1: (4/5 + 1.15·2/5) / 2.15 → (2/5 + 1.25·3/5) / 2.25; k2: (1 + 1.25·3/5 + 1.15/5) / 3.4 → 4/5; k3 3/5
    expected = {"k1": (1.26 / 2.15, 1.15 / 2.25), "k2": (1.98 / 3.4, 0.8), "k3": (0.6, 0.6)}
    assert all(four[c] == pytest.approx(expected[c]) for c in CASES)
    arms = {r["case_id"]: r for r in table(out / "arms.csv")}
    for case, (before, after) in four.items():
        assert (float(arms[case][f"score_original:{FOUR}"]), float(arms[case][f"score:{FOUR}"])) == \
            (round(before, 4), round(after, 4)), case
    row = stat(out, "no-deliberation", f"score:{FOUR}")
    assert float(row["mean_difference"]) == round(sum(a - b for b, a in four.values()) / 3, 4)
    assert int(row["cases"]) == 3 and float(row["mean_difference"]) > 0  # the −1 as a score: a fall
    assert float(stat(out, "no-deliberation")["mean_difference"]) == round((2 - 4 + 4 - 3 + 5 - 5) / 3, 4)
    report = (out / "report.md").read_text()
    assert f"judged with: {RUBRIC}, {FOUR}" in report
    assert "originals judged by judge: 6 judgements read from the cohort, 0 made here" in report, report


def test_a_cohort_never_judged_is_compared_on_rounds_and_tokens_or_judged_on_both_sides(tmp_path: Path) -> None:
    """A cohort run without a judge: its ablation compares rounds and tokens only and says no rubric judged it;
    given a rubric and a judge, the ablation judges the originals too (into its own folder) with that judge."""
    (tmp_path / "judge.json").write_text(json.dumps(judge_script()))
    run_dir = run_cohort(tmp_path)
    plain = ablate(run_dir, "no-deliberation", name="plain")
    assert {r["metric"] for r in table(plain / "stats.csv")} == {"rounds", "tokens"}
    assert float(stat(plain, "no-deliberation", "rounds")["mean_difference"]) == -2.0  # 0 − (2, 3, 1)
    report = (plain / "report.md").read_text()
    assert "judged with: no rubric" in report and "originals judged by" not in report
    judged = ablate(run_dir, "no-deliberation", "--judge", RUBRIC, "--judge-model",
                    f"scripted:{tmp_path / 'judge.json'}", name="judged")
    assert float(stat(judged, "no-deliberation")["mean_difference"]) == round((2 - 4 + 4 - 3 + 5 - 5) / 3, 4)
    assert "originals judged by judge: 0 judgements read from the cohort, 3 made here" in \
        (judged / "report.md").read_text()
    assert len(list((judged / "originals").rglob(f"*.judge.{RUBRIC}.json"))) == 3
    assert not list(run_dir.glob("arms/**/*.judge.*.json"))  # the cohort's folder gains no judgement


def test_the_cohorts_judgements_made_with_other_judge_settings_are_not_reused(
        cohort: Path, tmp_path: Path) -> None:
    """The cohort judged again by its own judge model but with another output budget (``judge --max-tokens``):
    the ablation's judge, with the cohort's settings, is not the judge of those records, so it judges the
    originals again rather than pair its scores with theirs; the report says why."""
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir)
    judge = f"scripted:{cohort.parent.parent / 'judge.json'}"
    assert main(["judge", str(run_dir), "--rubric", RUBRIC, "--judge-model", judge, "--max-tokens", "1024",
                 "--force"]) == 0
    out = ablate(run_dir, "no-deliberation", name="other-settings")
    report = (out / "report.md").read_text()
    assert "originals judged by judge: 0 judgements read from the cohort, 3 made here (the cohort's were not " \
        "reused: by judge with other settings (max_tokens 1024))" in report, report
    assert len(list((out / "originals").rglob(f"*.judge.{RUBRIC}.json"))) == 3
    assert float(stat(out, "no-deliberation")["mean_difference"]) == round((2 - 4 + 4 - 3 + 5 - 5) / 3, 4)


MATCH = "nmb-diagnosis-match"
#: judge → case → (a text the answer holds → does it match the reference diagnosis), tried in order.
MATCH_VOTES = {"judge-a": {"k1": [("FULL rev", True), ("report FULL", False)],
                           "k2": [("FULL rev", True), ("report FULL", False)], "k3": [("report FULL", True)]},
               "judge-b": {"k1": [("FULL rev", True), ("report FULL", True)],
                           "k2": [("FULL rev", False), ("report FULL", True)], "k3": [("report FULL", False)]},
               "judge-c": {"k1": [("FULL rev", False), ("report FULL", False)],
                           "k2": [("FULL rev", True), ("report FULL", True)], "k3": [("report FULL", True)]}}


def test_a_binary_rubrics_jury_scores_both_sides_by_its_majority(tmp_path: Path) -> None:
    """A cohort judged by a jury of three on a binary rubric (Neural-MedBench's diagnosis match): both sides
    of each pair are the jury's majority (the rule of a binary scale), the originals read from the cohort,
    the ablated arms judged by the same three; the majorities by hand: originals k1 (1, 1, 0) → 1, k2 (1, 0,
    1) → 1, k3 (1, 0, 1) → 1; the initial reports k1 (0, 1, 0) → 0, k2 (0, 1, 1) → 1, k3 as the original (one
    judge alone, judge-a, would have scored k2's initial report 0)."""
    judges = []
    for name, votes in MATCH_VOTES.items():
        rules: list[dict[str, Any]] = [
            {"stage": "judge", "contains_all": [MARK[case], text], "role": "conclusion:final_conclusion",
             "json": {"rationale": "r", "match": match}} for case in CASES for text, match in votes[case]]
        rules.append({"stage": "judge", "json": {"rationale": "r", "match": False}})  # the differential's ranks
        (tmp_path / f"{name}.json").write_text(json.dumps({"model": name, "rules": rules}))
        judges += ["--judge-model", f"scripted:{tmp_path / name}.json"]
    run_dir = run_cohort(tmp_path, "--judge", MATCH, *judges)
    out = ablate(run_dir, "no-deliberation")
    arms = {r["case_id"]: r for r in table(out / "arms.csv")}
    assert {c: (float(r[f"score_original:{MATCH}"]), float(r[f"score:{MATCH}"])) for c, r in arms.items()} == \
        {"k1": (1.0, 0.0), "k2": (1.0, 1.0), "k3": (1.0, 1.0)}
    assert float(stat(out, "no-deliberation", f"score:{MATCH}")["mean_difference"]) == round(-1 / 3, 4)
    sides = [*run_dir.glob(f"arms/*/*/*.judge.{MATCH}.json"), *out.glob(f"arms/*/*/*.judge.{MATCH}.json")]
    assert len(sides) == 6
    for path in sides:
        judgement = json.loads(path.read_text())
        [conclusion] = [i for i in judgement["items"] if i["component"] == "conclusion"]
        assert (len(conclusion["votes"]), conclusion["verdict"]["rule"]) == (3, "majority"), path
    assert "3 judgements read from the cohort, 0 made here" in (out / "report.md").read_text()


def test_a_cohorts_failed_arm_is_named_as_not_ablated_and_in_no_pair(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """k3's consilium arm failed in the cohort (its synthesis call failed): there is no original to re-run, so
    the ablation pairs k1 and k2 only, and says so in its report and on the terminal rather than drop it."""
    panel = panel_script()
    panel["rules"].insert(0, {"stage": "synthesis", "contains": MARK["k3"], "fail": "model"})
    (tmp_path / "judge.json").write_text(json.dumps(judge_script()))
    run_dir = run_cohort(tmp_path, "--judge", RUBRIC, "--judge-model", f"scripted:{tmp_path}/judge.json", panel=panel,
                         codes=(0, 1))
    assert {r["case_id"]: r["status"] for r in table(run_dir / "arms.csv")}["k3"] == "failed"
    capsys.readouterr()
    out = ablate(run_dir, "no-deliberation")
    line = "1 consilium arms of the cohort did not complete, so were not ablated and are in no pair: " \
        "k3 · free-form (failed)"
    assert line in capsys.readouterr().out and line in (out / "report.md").read_text()
    assert sorted(r["case_id"] for r in table(out / "arms.csv")) == ["k1", "k2"]
    row = stat(out, "no-deliberation")
    assert int(row["cases"]) == 2 and float(row["mean_difference"]) == round((2 - 4 + 4 - 3) / 2, 4)
