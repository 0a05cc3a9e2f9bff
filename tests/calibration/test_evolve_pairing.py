"""`calibrate evolve` pairs each rating with the one judged trace it rates, re-runs the judge for the
re-evaluation with new seeds, promotes only on the mean over repeats when validation improves too, and
writes Table 5 as a CSV (ai-consilium.txt, Table 5).

The folder holds two panel models × two formats × four cases; physicians rated only (panel-a,
structured) and (panel-b, free-form). Expected numbers are worked out here from the scripts.
"""

from __future__ import annotations

import asyncio
import csv
import statistics
from pathlib import Path

import pytest
from support.corpus_evolve import CASES, HEADER, build_judged, evolve_argv, mark, write_scripts

from consilium.api.evolving import table5_csv
from consilium.calibration.evolution_results import Candidate, CriterionResult, Evaluation, RepeatResult
from consilium.calibration.evolve import REEVALUATION_SEED_OFFSET, Item, evolve_criterion, rated_items
from consilium.calibration.isotonic import split_cases
from consilium.calibration.pairs import load_judgements
from consilium.calibration.ratings import load_ratings
from consilium.cli import main
from consilium.graphs.consilium.trace import Trace
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.wrappers.cache import CachedModel

RUBRIC = load_rubric("ai-consilium")
RATED = (("panel-a", "structured"), ("panel-b", "free-form"))


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_judged(tmp_path_factory.mktemp("evolve"))


def ratings_file(tmp_path: Path, target: dict[str, float], *, second_rater: float = 0.0) -> Path:
    """Ratings of c1 on the conclusion of the RATED traces only: rater a gives ``target[case]``; rater b
    gives it plus ``second_rater``, so a trace's target is the mean of the two."""
    rows = [f"{case},conclusion,c1,{rater},{score:g},{model},{fmt}\n"
            for case in CASES for model, fmt in RATED
            for rater, score in (("a", target[case]), ("b", target[case] + second_rater))]
    path = tmp_path / "ratings.csv"
    path.write_text(HEADER + "".join(rows))
    return path


def arm(item: Item) -> tuple[str, str]:
    """The (panel model, format) of the item's trace."""
    assert isinstance(item.trace, Trace)
    return item.trace.model, item.trace.format


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_targets_belong_to_the_rated_traces_only(judged: Path, tmp_path: Path) -> None:
    ratings = ratings_file(tmp_path, {"e1": 1, "e2": 2, "e3": 1, "e4": 0}, second_rater=1)
    items, unmatched = rated_items(load_ratings(ratings, RUBRIC), load_judgements(judged, RUBRIC.name), ratings)
    assert unmatched == 0 and list(items) == ["c1"]
    got = {(*arm(i), i.case_id): (i.target, i.ratings) for i in items["c1"]}
    # a target per rated trace (the mean of its two ratings), none for the unrated model-format pairs
    assert got == {(model, fmt, case): (score + 0.5, 2) for model, fmt in RATED
                   for case, score in {"e1": 1, "e2": 2, "e3": 1, "e4": 0}.items()}
    assert all(mark(*arm(i)) in str(i.trace.model_dump()) for i in items["c1"])


def test_format_is_another_name_for_variant(judged: Path, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"case_id": "e2", "component": "conclusion", "criterion": "c1", "rater": "a", "score": 1, '
                    '"model": "panel-b", "format": "structured"}\n')
    [rating] = load_ratings(path, RUBRIC)
    assert rating.variant == "structured"
    items, _ = rated_items([rating], load_judgements(judged, RUBRIC.name), path)
    [item] = items["c1"]
    assert arm(item) == ("panel-b", "structured")


def test_a_rating_that_fits_two_traces_is_refused(judged: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("case_id,component,criterion,rater,score,format\n"
                       + "".join(f"{c},conclusion,c1,a,1,free-form\n" for c in CASES))
    judge, optimiser = write_scripts(tmp_path)
    assert main(evolve_argv(ratings, judged, judge, optimiser, "--out", str(tmp_path / "o"))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "matches 2 judged traces" in err
    assert "model panel-a" in err and "model panel-b" in err and "add a model" in err
    assert not (tmp_path / "o").exists()


def test_reevaluation_runs_the_judge_again_with_new_seeds(judged: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """At repeat 0's re-evaluation seed the judge scores STRICT e1 items 2, not 1: the training
    re-evaluation and validation MAE show it, the selection pass does not."""
    ratings = ratings_file(tmp_path, dict.fromkeys(CASES, 1.0))
    judge, optimiser = write_scripts(tmp_path, [
        {"stage": "judge", "seed": REEVALUATION_SEED_OFFSET, "contains_all": ["STRICT", "casemark-e1."],
         "json": {"rationale": "a new sample", "score": 2}}])
    out = tmp_path / "out"
    assert main(evolve_argv(ratings, judged, judge, optimiser, "--repeats", "2", "--out", str(out))) == 0
    rows = read_csv(out / "evolve.ai-consilium.csv")
    assert [r["repeat"] for r in rows] == ["0", "1"]
    expected: dict[str, list[float]] = {k: [] for k in ("ti", "td", "vi", "vd")}
    for repeat, row in enumerate(rows):
        train, val = split_cases(list(CASES), 0.5, repeat)
        n_train, n_val = 2 * len(train), 2 * len(val)  # two rated traces per case
        assert (row["train_items"], row["val_items"]) == (str(n_train), str(n_val))
        assert row["judge_seed_selection"] == str(repeat)
        assert row["judge_seed_reevaluation"] == str(REEVALUATION_SEED_OFFSET + repeat)
        # the selection pass: initial (original, lenient: 3 vs 1) and one STRICT child (1 vs 1)
        assert float(row["selection_best_initial"]) == 2.0 and float(row["selection_best_descendant"]) == 0.0
        assert row["selection_judge_calls"] == str(3 * n_train)
        # the re-evaluation judges the best initial and the best descendant again on every item
        assert row["reevaluation_judge_calls"] == str(2 * (n_train + n_val))
        assert row["reevaluation_cached_calls"] == "0"
        e1_error = 1.0 if repeat == 0 else 0.0  # the seed-keyed answer exists for repeat 0's seed only
        td = e1_error * 2 * ("e1" in train) / n_train
        vd = e1_error * 2 * ("e1" in val) / n_val
        assert float(row["train_best_descendant"]) == pytest.approx(td)
        assert float(row["val_best_descendant"]) == pytest.approx(vd)
        assert float(row["train_best_initial"]) == 2.0 and float(row["val_best_initial"]) == 2.0
        for key, value in (("ti", 2.0), ("td", td), ("vi", 2.0), ("vd", vd)):
            expected[key].append(value)
    assert sum(float(r["train_best_descendant"]) + float(r["val_best_descendant"]) for r in rows) > 0
    [table] = read_csv(out / "evolve.ai-consilium.table5.csv")
    for column, key in (("train_reeval_best_initial", "ti"), ("train_reeval_best_descendant", "td"),
                        ("val_best_initial", "vi"), ("val_best_descendant", "vd")):
        assert float(table[f"{column}_mean"]) == pytest.approx(statistics.fmean(expected[key]), abs=1e-4)
        assert float(table[f"{column}_sd"]) == pytest.approx(statistics.stdev(expected[key]), abs=1e-4)
    assert (table["criterion"], table["repeats"], table["promoted"]) == ("c1", "2", "true")
    evolved = load_rubric(str(out / "ai-consilium.v3.yaml"))
    assert next(c for c in evolved.criteria if c.id == "c1").definition.startswith("STRICT")
    assert evolved.provenance and evolved.provenance["criteria"]["c1"]["train_mae_before"] == 2.0
    assert "c1: promoted" in capsys.readouterr().out


def test_promotion_is_refused_when_validation_does_not_improve(judged: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Physicians give 1 on the training cases and 3 on the validation cases: the STRICT descendant
    (scores 1) wins training (MAE 2 -> 0) and loses validation (0 -> 2), so nothing is written."""
    train, _ = split_cases(list(CASES), 0.5, 0)
    ratings = ratings_file(tmp_path, {c: 1.0 if c in train else 3.0 for c in CASES})
    judge, optimiser = write_scripts(tmp_path)
    out = tmp_path / "out"
    assert main(evolve_argv(ratings, judged, judge, optimiser, "--repeats", "1", "--out", str(out))) == 0
    stdout = capsys.readouterr().out
    assert "c1: not promoted: validation MAE did not improve (0.000 -> 2.000)" in stdout
    assert "no criterion promoted: no new rubric version written" in stdout
    assert not (out / "ai-consilium.v3.yaml").exists()
    [table] = read_csv(out / "evolve.ai-consilium.table5.csv")
    assert table["promoted"] == "false" and "validation" in table["decision"]
    assert (float(table["train_reeval_best_initial_mean"]), float(table["train_reeval_best_descendant_mean"]),
            float(table["val_best_initial_mean"]), float(table["val_best_descendant_mean"])) == (2.0, 0.0, 0.0, 2.0)


def test_the_response_cache_never_serves_the_selection_pass_to_the_reevaluation(judged: Path,
                                                                                tmp_path: Path) -> None:
    ratings = ratings_file(tmp_path, dict.fromkeys(CASES, 1.0))
    items, _ = rated_items(load_ratings(ratings, RUBRIC), load_judgements(judged, RUBRIC.name), ratings)
    judge_spec, optimiser_spec = write_scripts(tmp_path)
    criterion = next(c for c in RUBRIC.criteria if c.id == "c1")

    async def run() -> list[tuple[int, int, frozenset[int | None]]]:
        judge = CachedModel(ScriptedModel(Script.load(judge_spec.removeprefix("scripted:"))), tmp_path / "c.sqlite")
        optimiser = ScriptedModel(Script.load(optimiser_spec.removeprefix("scripted:")))
        result = await evolve_criterion(RUBRIC, criterion, items["c1"], judge=JudgeSetup(model=judge),
                                        optimiser=optimiser, population=2, generations=1, repeats=1)
        await judge.aclose()
        x = result.repeats[0]
        return [(e.calls, e.cached, e.seeds) for e in (x.train_initial, x.train_descendant)]

    first = asyncio.run(run())
    # the original instructions were judged on the training items in the selection pass (seed 0) and
    # again here: the new seed misses the cache, so these are new judge calls
    assert [(cached, seeds) for _, cached, seeds in first] == [(0, frozenset({REEVALUATION_SEED_OFFSET}))] * 2
    assert all(calls > 0 for calls, _, _ in first)
    # the cache is live: the same run again is answered from it
    again = asyncio.run(run())
    assert [(calls, cached) for calls, cached, _ in again] == [(calls, calls) for calls, _, _ in first]


def test_a_scripted_rule_can_match_on_the_seed() -> None:
    """The scripted backend's `seed` filter (docs/models.md): a rule answers only calls with that seed."""
    from consilium.models import GenerationSettings, Message, ModelRequest

    model = ScriptedModel(Script.model_validate({"rules": [{"seed": 7, "response": "seven"},
                                                           {"response": "other"}]}))

    async def ask(seed: int | None) -> str:
        request = ModelRequest(messages=(Message(role="user", content="hi"),),
                               settings=GenerationSettings(seed=seed))
        return (await model.generate(request)).text

    assert [asyncio.run(ask(s)) for s in (7, 0, None)] == ["seven", "other", "other"]


# ai-consilium.txt Table 5, criterion 1 and criterion 4's validation cells as printed (mean, SD), and three
# repeats' MAEs that give them: k correct-distance units of 1/27 (training) or 1/9 (validation) items.
PAPER_TABLE5 = {
    "train_reeval_best_initial": ((25 / 27, 29 / 27, 31 / 27), 1.0494, 0.1132),
    "train_reeval_best_descendant": ((13 / 27, 17 / 27, 21 / 27), 0.6296, 0.1481),
    "val_best_initial": ((9 / 9, 12 / 9, 12 / 9), 1.2222, 0.1925),
    "val_best_descendant": ((5 / 9, 5 / 9, 7 / 9), 0.6296, 0.1283),
}


def _repeat(index: int, maes: dict[str, float]) -> RepeatResult:
    def evaluation(mae: float) -> Evaluation:
        return Evaluation(mae=mae, worst=[], calls=0, cached=0, seeds=frozenset({index}))
    initial, descendant = Candidate("initial", "initial", None), Candidate("evolved", "descendant", 0)
    return RepeatResult(repeat=index, train_cases=27, val_cases=9, train_items=27, val_items=9, selection_seed=index,
                        reevaluation_seed=REEVALUATION_SEED_OFFSET + index, best_initial=initial,
                        best_descendant=descendant, selection_initial=1.0, selection_descendant=0.5,
                        train_initial=evaluation(maes["train_reeval_best_initial"]),
                        train_descendant=evaluation(maes["train_reeval_best_descendant"]),
                        val_initial=evaluation(maes["val_best_initial"]),
                        val_descendant=evaluation(maes["val_best_descendant"]), selection_calls=0)


def test_table5_reports_the_sample_sd_over_repeats_as_the_paper_does() -> None:
    """Each cell is mean ± the sample SD (n − 1) over the repeats: three repeats that give the paper's
    printed criterion-1 means give its printed SDs to the fourth decimal, where the population SD does not."""
    repeats = [_repeat(i, {cell: values[i] for cell, (values, _, _) in PAPER_TABLE5.items()}) for i in range(3)]
    [row] = read_csv_text(table5_csv([CriterionResult("c1", repeats, calls=0)]))
    for cell, (values, paper_mean, paper_sd) in PAPER_TABLE5.items():
        centre = sum(values) / len(values)
        sample = (sum((v - centre) ** 2 for v in values) / (len(values) - 1)) ** 0.5  # by hand, n − 1
        population = (sum((v - centre) ** 2 for v in values) / len(values)) ** 0.5
        assert round(centre, 4) == paper_mean and round(sample, 4) == paper_sd != round(population, 4)
        assert (float(row[f"{cell}_mean"]), float(row[f"{cell}_sd"])) == (paper_mean, paper_sd), cell
    # one repeat has no sample SD: the cell is empty, never 0
    [single] = read_csv_text(table5_csv([CriterionResult("c1", repeats[:1], calls=0)]))
    assert single["train_reeval_best_initial_sd"] == "" and single["train_reeval_best_initial_mean"] != ""


def read_csv_text(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(text.splitlines()))
