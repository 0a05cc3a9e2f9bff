"""Calibration against physician ratings: statistics with known answers, isotonic, evolve."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from consilium.calibration.agreement import AgreementRow, agreement, binary_stats
from consilium.calibration.pairs import Pair, load_judgements, pair_ratings
from consilium.calibration.ratings import load_ratings
from consilium.calibration.synthetic import make_synthetic
from consilium.cli import main
from consilium.judges.rubric import load_rubric

RUBRIC = load_rubric("ai-consilium")
CASES = Path(__file__).resolve().parents[2] / "examples" / "cases"


def pairs_for(tmp_path: Path, judge: str, *, single_rater: bool = False, cases: int = 110) -> list[Pair]:
    ratings_path, folder = make_synthetic(tmp_path, cases=cases, judge=judge)
    ratings = load_ratings(ratings_path, RUBRIC)
    if single_rater:
        ratings = [r for r in ratings if r.rater == "physician-a"]
    pairs, unmatched = pair_ratings(ratings, [j for _, j in load_judgements(folder, "ai-consilium")])
    assert unmatched == 0
    return pairs


def pooled(rows: list[AgreementRow]) -> dict[str, float | None]:
    return next(r for r in rows if r.criterion == "pooled").point


def test_a_perfect_judge(tmp_path: Path) -> None:
    rows = agreement(pairs_for(tmp_path, "perfect", single_rater=True), binary=False, labels=RUBRIC.scale,
                     bootstrap=50)
    point = pooled(rows)
    assert point["mae"] == 0.0 and point["exact"] == 1.0 and point["qwk"] == pytest.approx(1.0)
    assert point["spearman"] == pytest.approx(1.0) and point["alpha"] == pytest.approx(1.0)


def test_a_judge_off_by_one_on_every_item(tmp_path: Path) -> None:
    point = pooled(agreement(pairs_for(tmp_path, "off-by-one", single_rater=True), binary=False,
                             labels=RUBRIC.scale, bootstrap=0))
    assert point["mae"] == 1.0 and point["exact"] == 0.0 and point["within_one"] == 1.0


def test_kappa_and_alpha_equal_the_library_values(tmp_path: Path) -> None:
    pairs = pairs_for(tmp_path, "noisy", cases=40)
    point = pooled(agreement(pairs, binary=False, labels=RUBRIC.scale, bootstrap=0))
    h = [int(p.physician) for p in pairs]
    j = [int(p.judge) for p in pairs]
    assert point["qwk"] == pytest.approx(cohen_kappa_score(h, j, weights="quadratic"))
    items = sorted({(p.case_id, p.criterion) for p in pairs})
    data = np.full((3, len(items)), np.nan)
    for p in pairs:
        column = items.index((p.case_id, p.criterion))
        data[0 if p.rater == "physician-a" else 1, column] = p.physician
        data[2, column] = p.judge
    assert point["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))


def test_binary_statistics_follow_eq_a9() -> None:
    stats = binary_stats(np.array([1, 1, 0, 0, 1.0]), np.array([1, 0, 0, 1, 1.0]))
    assert stats["accuracy"] == pytest.approx(0.6)
    assert stats["sensitivity"] == pytest.approx(2 / 3) and stats["specificity"] == pytest.approx(0.5)
    assert stats["balanced_agreement"] == pytest.approx(7 / 12) and stats["judge_true_rate"] == pytest.approx(0.6)
    assert stats["kappa"] == pytest.approx((0.6 - 0.52) / 0.48)


def test_bootstrap_intervals_are_reproducible(tmp_path: Path) -> None:
    pairs = pairs_for(tmp_path, "noisy", cases=30)
    first = agreement(pairs, binary=False, labels=RUBRIC.scale, bootstrap=100, seed=7)
    again = agreement(pairs, binary=False, labels=RUBRIC.scale, bootstrap=100, seed=7)
    other = agreement(pairs, binary=False, labels=RUBRIC.scale, bootstrap=100, seed=8)
    assert [r.ci for r in first] == [r.ci for r in again]
    assert [r.ci for r in first] != [r.ci for r in other]
    assert first[-1].criterion == "physician baseline (pooled)"


def test_agreement_command_writes_markdown_csv_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ratings, folder = make_synthetic(tmp_path, cases=110, judge="noisy")
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(folder), "--rubric",
                 "ai-consilium", "--bootstrap", "50"]) == 0
    out = folder / "calibration"
    rows = list(csv.DictReader((out / "agreement.csv").read_text().splitlines()))
    assert [r["criterion"] for r in rows][-2:] == ["pooled", "physician baseline (pooled)"]
    assert (out / "agreement.png").stat().st_size > 1000
    assert "| pooled | 1760 | 110 |" in (out / "agreement.md").read_text()


def test_isotonic_corrects_a_biased_judge_on_held_out_cases(tmp_path: Path) -> None:
    ratings, folder = make_synthetic(tmp_path, cases=110, judge="biased")
    assert main(["calibrate", "isotonic", "--ratings", str(ratings), "--judgements", str(folder), "--rubric",
                 "ai-consilium"]) == 0
    saved = json.loads((folder / "calibration" / "isotonic.ai-consilium.json").read_text())
    for name, mapping in saved["criteria"].items():
        assert mapping["mae_after"] < mapping["mae_before"], name
        assert mapping["test_n"] > 0 and mapping["train_n"] > 0


@pytest.mark.parametrize("row, expected", [
    ("c-1,conclusion,c9,a,2", "line 2: criterion: 'c9' is not a criterion of ai-consilium"),
    ("c-1,conclusion,c1,a,7", "line 2: score: 7 is not on the ai-consilium scale"),
    ("c-1,summary,c1,a,2", "line 2: component: unknown component 'summary'"),
    ("c-1,conclusion,c1,a,high", "line 2: score: Input should be a valid number"),
])
def test_bad_ratings_files_exit_2(row: str, expected: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("case_id,component,criterion,rater,score\n" + row + "\n")
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(tmp_path), "--rubric",
                 "ai-consilium"]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "ratings.csv" in err and len(err.splitlines()) == 1


def _evolve_fixture(tmp_path: Path, physician: dict[str, int]) -> tuple[Path, Path, Path, Path]:
    """Consilium traces judged by a scripted judge that scores 1 under STRICT instructions, else 3."""
    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps({"rules": [
        {"stage": "role_assignment", "json": {"primary": {"label": "Cardiologist", "justification": "x"},
                                              "supporting": [{"label": "Neurologist", "justification": "y"}]}},
        {"stage": "opinion", "response": "Myocarditis."}, {"stage": "synthesis", "response": "Myocarditis; MRI."},
        {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}}]}))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"rules": [
        {"stage": "judge", "contains": "STRICT", "json": {"rationale": "strict", "score": 1}},
        {"stage": "judge", "json": {"rationale": "lenient", "score": 3}}]}))
    optimiser = tmp_path / "optimiser.json"
    optimiser.write_text(json.dumps({"rules": [{"stage": "calibration", "responses": [
        {"instruction": "Judge the factual grounding carefully against the case."},
        {"instruction": "STRICT: give 1 unless every fact is grounded in the case."}]}]}))
    run_dir = tmp_path / "runs" / "cohort"
    source = (CASES / "diagnostic-myocarditis.yaml").read_text()
    for case_id in physician:
        case = tmp_path / f"{case_id}.yaml"
        case.write_text(source.replace("id: diagnostic-myocarditis", f"id: {case_id}"))
        assert main(["simulate", "--case", str(case), "--model", f"scripted:{panel}", "--format", "free-form",
                     "--min-roles", "2", "--out", str(tmp_path / "tmp-runs")]) == 0
    for trace in (tmp_path / "tmp-runs").glob("*/*.trace.json"):
        run_dir.mkdir(parents=True, exist_ok=True)
        trace.rename(run_dir / trace.name)
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}",
                 "--component", "conclusion"]) == 0
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("case_id,component,criterion,rater,score\n" + "".join(
        f"{case_id},conclusion,c1,a,{score}\n" for case_id, score in physician.items()))
    return ratings, run_dir, judge, optimiser


def test_evolve_lowers_training_mae_and_reports_validation(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from consilium.calibration.isotonic import split_cases

    physician = {f"case-{n}": (1 if n < 4 else 3) for n in range(8)}
    ratings, run_dir, judge, optimiser = _evolve_fixture(tmp_path, physician)
    assert main(["calibrate", "evolve", "--ratings", str(ratings), "--judgements", str(run_dir), "--rubric",
                 "ai-consilium", "--judge-model", f"scripted:{judge}", "--optimiser-model", f"scripted:{optimiser}",
                 "--criterion", "c1", "--population", "2", "--generations", "1", "--repeats", "1"]) == 0
    rows = list(csv.DictReader((run_dir / "calibration" / "evolve.ai-consilium.csv").read_text().splitlines()))
    [row] = rows
    train, val = split_cases(list(physician), 0.5, 0)
    # The original instructions score 3 everywhere, the STRICT descendant 1 everywhere.
    expected = {name: 2 * sum(physician[c] == low for c in cases) / len(cases)
                for name, cases, low in [("train_best_initial", train, 1), ("train_best_descendant", train, 3),
                                         ("val_best_initial", val, 1), ("val_best_descendant", val, 3)]}
    for key, value in expected.items():
        assert float(row[key]) == pytest.approx(value), key
    evolved = run_dir / "calibration" / "ai-consilium.v3.yaml"
    if expected["train_best_descendant"] < expected["train_best_initial"]:
        rubric = load_rubric(str(evolved))
        assert rubric.version == 3 and rubric.provenance and rubric.provenance["parent"] == "ai-consilium v2"
        assert next(c for c in rubric.criteria if c.id == "c1").definition.startswith("STRICT")
    assert load_rubric("ai-consilium").version == 2  # the shipped rubric is never replaced


def test_evolve_saves_a_new_rubric_version_when_training_improves(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ratings, run_dir, judge, optimiser = _evolve_fixture(tmp_path, {f"case-{n}": 1 for n in range(6)})
    assert main(["calibrate", "evolve", "--ratings", str(ratings), "--judgements", str(run_dir), "--rubric",
                 "ai-consilium", "--judge-model", f"scripted:{judge}", "--optimiser-model", f"scripted:{optimiser}",
                 "--population", "2", "--generations", "2", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    # Repeat 1 starts from the original instructions only (MAE 2); the scripted optimiser's later
    # rewrites are STRICT, so repeat 2's initial population already holds one (MAE 0). Means over the
    # repeats (2, 0) and (0, 0): 1 ± sample SD √2 = 1.414, and 0 ± 0.
    assert "| c1 | 1.000 ± 1.414 | 0.000 ± 0.000 | 1.000 ± 1.414 | 0.000 ± 0.000 |" in out
    rubric = load_rubric(str(run_dir / "calibration" / "ai-consilium.v3.yaml"))
    assert rubric.provenance and rubric.provenance["criteria"]["c1"]["train_mae_after"] == 0.0
    assert rubric.provenance["criteria"]["c1"]["train_mae_before"] == 2.0


def test_isotonic_maps_are_fitted_and_applied_per_component(tmp_path: Path) -> None:
    """A map fitted on one component is applied to that component only; raw and
    calibrated scores stand side by side in the judgement records."""
    from consilium.calibration.isotonic import fit_isotonic
    from consilium.calibration.pairs import Pair
    from consilium.judges.record import read_judgement

    pairs = [Pair(case_id=f"k{i}", component="conclusion", criterion="c1", rater="a", physician=float(min(3, j + 1)),
                  judge=float(j)) for i in range(20) for j in range(3)]
    calibration = fit_isotonic(pairs, rubric="ai-consilium", rubric_version=RUBRIC.version, scale=RUBRIC.scale,
                               train_fraction=0.5, seed=0)
    assert list(calibration.criteria) == ["conclusion/c1"]
    assert calibration.apply("conclusion", "c1", 1.0) == pytest.approx(2.0)
    assert calibration.apply("role_opinion", "c1", 1.0) is None  # never fitted there: not applied
    path = calibration.save(tmp_path / "isotonic.ai-consilium.json")
    panel = Path(__file__).resolve().parents[2] / "examples" / "models" / "scripted-panel.yaml"
    case = Path(__file__).resolve().parents[2] / "examples" / "cases" / "diagnostic-myocarditis.yaml"
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(case), "--model", f"scripted:{panel}", "--out", str(out)]) == 0
    assert main(["judge", str(out), "--rubric", "ai-consilium", "--judge-model", f"scripted:{panel}",
                 "--calibration", str(path)]) == 0
    seen = set()
    for record in out.rglob("*.judge.ai-consilium.json"):
        for item in read_judgement(record).items:
            if (item.component, item.criterion) == ("conclusion", "c1") and item.score is not None:
                assert item.calibrated_score is not None
                seen.add(item.component)
            else:
                assert item.calibrated_score is None, (item.component, item.criterion)
    assert seen == {"conclusion"}


def test_compare_and_report_show_calibrated_scores_beside_the_raw_ones(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A cohort judged with ``--calibration``: the criterion tables of compare (table8_criteria) and
    report (scores) give each row's calibrated n, mean and population SD beside the raw ones, over the
    items the map was fitted for (conclusion/c1 here); other rows have none. Read from judgements.csv (no
    record left), a calibrated score that is no finite number is refused in one line."""
    import statistics

    import yaml

    from consilium.calibration.isotonic import fit_isotonic

    # Fitted on conclusion/c1 only: judge 0, 1, 2 → physicians 1, 2, 3 (3 clipped to 3).
    pairs = [Pair(f"k{i}", "conclusion", "c1", "a", float(j + 1), float(j)) for i in range(20) for j in range(3)]
    calibration = fit_isotonic(pairs, rubric="ai-consilium", rubric_version=RUBRIC.version, scale=RUBRIC.scale,
                               train_fraction=0.5, seed=0).save(tmp_path / "isotonic.ai-consilium.json")
    raw = {("m0", "free-form"): 0, ("m0", "structured"): 2, ("m1", "free-form"): 1, ("m1", "structured"): None,
           ("m2", "free-form"): 2, ("m2", "structured"): 3}  # None: not evaluable
    calibrated = {0: 1, 1: 2, 2: 3, 3: 3}
    base = yaml.safe_load((CASES / "diagnostic-myocarditis.yaml").read_text())
    cases = tmp_path / "cases"
    cases.mkdir()
    for case in ("m0", "m1", "m2"):
        (cases / f"{case}.yaml").write_text(yaml.safe_dump(
            {**base, "id": case, "presentation": f"{base['presentation']} casemark-{case}."}))
    free_form = "Report: A; CT."  # the scripted panel's free-form final report
    rules: list[dict[str, object]] = [
        {"stage": "judge", "role": "conclusion:c1",
         "contains_all": [f"casemark-{case}.", *([free_form] if fmt == "free-form" else [])],
         "json": {"rationale": "r", "score": "not_evaluable" if score is None else score}}
        for (case, fmt), score in sorted(raw.items())]  # free-form before structured: its rule is narrower
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "judge", "rules": [
        *rules, {"stage": "judge", "json": {"rationale": "r", "score": 1}}]}))
    panel = Path(__file__).resolve().parents[2] / "examples" / "models" / "scripted-panel.yaml"
    assert main(["cohort", "--cases", str(cases), "--model", f"scripted:{panel}", "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = (tmp_path / "runs").iterdir()
    assert main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}",
                 "--calibration", str(calibration)]) == 0
    assert main(["compare", str(run_dir), "--bootstrap", "20"]) == 0
    assert main(["report", str(run_dir)]) == 0
    for table in (run_dir / "compare" / "table8_criteria.csv", run_dir / "report" / "scores.csv"):
        rows = list(csv.DictReader(table.read_text().splitlines()))
        assert {r["model"] for r in rows} == {"scripted-panel", "pooled"}
        for row in rows:
            if (row["component"], row["criterion"]) != ("conclusion", "c1"):
                assert (row["calibrated_n"], row["calibrated_mean"], row["calibrated_sd"]) == ("0", "", ""), row
                continue
            scores = [s for (_, fmt), s in raw.items() if fmt == row["format"] and s is not None]
            adjusted = [calibrated[s] for s in scores]
            assert int(row["n"]) == len(scores) and float(row["mean"]) == pytest.approx(statistics.fmean(scores))
            assert int(row["calibrated_n"]) == len(adjusted)
            assert float(row["calibrated_mean"]) == pytest.approx(statistics.fmean(adjusted), abs=1e-6)
            assert float(row["calibrated_sd"]) == pytest.approx(statistics.pstdev(adjusted), abs=1e-6)
    # free-form: raw 0, 1, 2 → calibrated 1, 2, 3 (mean 2); structured: raw 2, 3 (m1 not evaluable) → 3, 3
    assert [(r["format"], r["calibrated_mean"]) for r in rows if r["model"] == "pooled"
            and (r["component"], r["criterion"]) == ("conclusion", "c1")] == [("free-form", "2.0"),
                                                                              ("structured", "3.0")]
    # With no record left, compare reads judgements.csv: a calibrated score there that is no number is one
    # line naming the file, line and column, as a raw score's is.
    judged = run_dir / "judgements.csv"
    written = list(csv.DictReader(judged.read_text().splitlines()))
    assert sorted(r["calibrated_score"] for r in written if r["criterion"] == "c1" and r["component"] == "conclusion"
                  ) == ["", "1.0", "2.0", "3.0", "3.0", "3.0"]  # m1 structured: not evaluable
    for record in run_dir.rglob("*.judge.ai-consilium.json"):
        record.unlink()
    for bad in ("nan", "high"):
        at = next(i for i, r in enumerate(written) if r["calibrated_score"])
        edited = [dict(r) for r in written]
        edited[at]["calibrated_score"] = bad
        with judged.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(written[0]))
            writer.writeheader()
            writer.writerows(edited)
        capsys.readouterr()
        assert main(["compare", str(run_dir), "--bootstrap", "20"]) == 2
        assert capsys.readouterr().err.strip() == (
            f"consilium: error: {judged}: line {at + 2}: calibrated_score: {bad!r} is not a number")
