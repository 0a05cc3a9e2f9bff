"""A study's answers out: the ratings file ``calibrate`` reads, ``calibrate agreement`` on it and on the study
directly, and the live agreement, each figure worked out here by hand from the answers the test gave."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from collections import Counter
from contextlib import closing
from itertools import combinations
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from study_fixture import identities, physician
from support.cohort_fixture import score as judge_score

from consilium.calibration.ratings import load_ratings
from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.rubric import load_rubric
from consilium.study import Study, create_study

RATERS = ("ana", "ben", "cy")
LABELS = [0, 1, 2, 3]
Given = dict[tuple[str, str, str], int | None]  # (rater, item, criterion) → the score given (None: not evaluable)


def qwk(a: list[float], b: list[float]) -> float:
    """Cohen's κ with quadratic weights, from its definition: 1 − Σ w·observed / Σ w·expected."""
    k, n = len(LABELS), len(a)
    observed = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        observed[int(x)][int(y)] += 1
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    weight = [[(i - j) ** 2 / (k - 1) ** 2 for j in range(k)] for i in range(k)]
    disagree = sum(weight[i][j] * observed[i][j] for i in range(k) for j in range(k))
    chance = sum(weight[i][j] * rows[i] * cols[j] / n for i in range(k) for j in range(k))
    return 1 - disagree / chance


@pytest.fixture(scope="module")
def rated(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Given]:
    """A study of 12 sampled outputs, each rated by 2 of 3 raters, every criterion answered by the scripted
    physician (not evaluable where it gives None, with a reason); a comment on each c1 of ana's."""
    db = tmp_path_factory.mktemp("rated") / "study.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=RATERS, per_output=2, sample=12, seed=1,
                 database=str(db))
    study = Study.open(fixture_cohort, str(db))
    ids = identities(db)
    given: Given = {}
    for rater in RATERS:
        for entry in study.queue(rater):
            for criterion in study.item(rater, entry.item).criteria:
                value = physician(rater, ids[entry.item], criterion.id)
                given[(rater, entry.item, criterion.id)] = value
                study.answer(rater, entry.item, criterion.id, score=value, not_evaluable=value is None,
                             reason="no c6 here" if value is None else None,
                             comment="see history" if rater == "ana" and criterion.id == "c1" else None)
    return study, given


def test_export_writes_one_row_per_scored_answer_and_counts_not_evaluable(
        rated: tuple[Study, Given], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    study, given = rated
    ids = identities(Path(study.db.target))
    out = tmp_path / "ratings.csv"
    code = main(["study", "export", str(study.run_dir), "--out", str(out), "--database", study.db.target])
    printed = capsys.readouterr().out
    scored = {k: v for k, v in given.items() if v is not None}
    missing = len(given) - len(scored)
    assert code == 0 and missing > 0
    assert f"({len(scored)} rows); not evaluable: {missing} answers (no row)" in printed
    with out.open(encoding="utf-8", newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert list(lines[0]) == ["case_id", "component", "criterion", "rater", "score", "variant", "model", "run", "trace"]
    expected = Counter()
    for (rater, item, criterion), value in scored.items():
        model, variant, case, component = ids[item]
        expected[(case, component, criterion, rater, f"{value}", variant, model, f"{case}.{variant}.trace.json")] += 1
    assert Counter((r["case_id"], r["component"], r["criterion"], r["rater"], r["score"], r["variant"], r["model"],
                    r["trace"]) for r in lines) == expected
    notes = [json.loads(line) for line in (tmp_path / "ratings.notes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sum(n["not_evaluable"] for n in notes) == missing
    assert sum(n["comment"] == "see history" for n in notes) == sum(1 for r, _, c in given if (r, c) == ("ana", "c1"))
    assert len(load_ratings(out, load_rubric("ai-consilium"))) == len(scored)  # calibrate's own reader takes it
    jsonl = tmp_path / "ratings.jsonl"
    study.export(jsonl)
    assert load_ratings(jsonl, load_rubric("ai-consilium")) == load_ratings(out, load_rubric("ai-consilium"))


def test_calibrate_agreement_reads_the_export_and_the_study_alike(
        rated: tuple[Study, Given], tmp_path: Path) -> None:
    study, given = rated
    ids = identities(Path(study.db.target))
    h, j = [], []
    for (_, item, criterion), value in given.items():
        model, variant, case, component = ids[item]
        judged = judge_score(model, variant, case, component, criterion)
        if value is not None and judged is not None:
            h.append(value)
            j.append(judged)
    out = tmp_path / "ratings.csv"
    study.export(out)
    pooled = {}
    for source in (str(out), study.db.target, "copy-of-run"):
        if source == "copy-of-run":  # the run folder's own study.sqlite3
            run = tmp_path / "run"
            shutil.copytree(study.run_dir, run)
            with closing(sqlite3.connect(study.db.target)) as live, \
                    closing(sqlite3.connect(run / "study.sqlite3")) as copy:
                live.backup(copy)  # the committed answers, wherever WAL keeps them
            source = str(run)
        report = tmp_path / f"report-{len(pooled)}"
        assert main(["calibrate", "agreement", "--ratings", source, "--judgements", str(study.run_dir),
                     "--rubric", "ai-consilium", "--bootstrap", "20", "--out", str(report)]) == 0
        with (report / "agreement.csv").open(encoding="utf-8") as handle:
            pooled[source] = next(r for r in csv.DictReader(handle) if r["criterion"] == "pooled")
    first, *others = pooled.values()
    assert all(o == first for o in others)
    assert int(first["n"]) == len(h)
    assert float(first["exact"]) == pytest.approx(sum(a == b for a, b in zip(h, j, strict=True)) / len(h))
    assert float(first["qwk"]) == pytest.approx(qwk(h, j))


def test_live_agreement_is_computed_on_what_is_rated(
        rated: tuple[Study, Given]) -> None:
    study, given = rated
    ids = identities(Path(study.db.target))
    units: dict[tuple[str, str], dict[str, int]] = {}
    for (rater, item, criterion), value in given.items():
        if value is not None:
            units.setdefault((item, criterion), {})[rater] = value
    shared = {u: s for u, s in units.items() if len(s) >= 2}
    a, b = [], []
    for scores in shared.values():
        for first, second in combinations(sorted(scores), 2):
            a.append(scores[first])
            b.append(scores[second])
    data = np.array([[shared[u].get(r, np.nan) for u in shared] for r in RATERS], dtype=float)
    h, j = [], []
    for (_, item, criterion), value in given.items():
        judged = judge_score(*ids[item], criterion)
        if value is not None and judged is not None:
            h.append(value)
            j.append(judged)
    live = study.agreement()
    assert live.items == len(shared) and live.kappa_weights == "quadratic"
    assert live.percent == pytest.approx(sum(x == y for x, y in zip(a, b, strict=True)) / len(a))  # two raters a unit
    assert live.kappa == pytest.approx(qwk(a, b))
    assert live.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                                                          value_domain=LABELS))
    assert live.judge_pairs == len(h)
    assert live.judge_percent == pytest.approx(sum(x == y for x, y in zip(h, j, strict=True)) / len(h))
    assert live.judge_kappa == pytest.approx(qwk(h, j))
    assert live.not_evaluable == sum(v is None for v in given.values())


def test_export_replaces_only_its_own_unchanged_file(
        rated: tuple[Study, Given], tmp_path: Path) -> None:
    study, _ = rated
    out = tmp_path / "ratings.csv"
    study.export(out)
    study.export(out)  # its own, unchanged: replaced
    out.write_text(out.read_text(encoding="utf-8") + "x,conclusion,c1,zed,1,,,,\n", encoding="utf-8")
    changed = out.read_text(encoding="utf-8")
    with pytest.raises(UserError, match=r"exists and is not a ratings file this study exported \(or it was changed "
                                        r"since\); it is left alone"):
        study.export(out)
    assert out.read_text(encoding="utf-8") == changed
    mine = tmp_path / "mine.csv"
    mine.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(UserError, match="is not a ratings file this study exported"):
        study.export(mine)
    assert mine.read_text(encoding="utf-8") == "my notes\n"
    with pytest.raises(UserError, match=r"--out: .*must be .csv or .jsonl"):
        study.export(tmp_path / "ratings.txt")


def test_study_status_prints_each_raters_progress_and_the_live_figures(
        rated: tuple[Study, Given], capsys: pytest.CaptureFixture[str]) -> None:
    study, given = rated
    assigned = Counter(rater for rater, _ in {(r, i) for r, i, _ in given})
    assert main(["study", "status", str(study.run_dir), "--database", study.db.target]) == 0
    out = capsys.readouterr().out
    for rater in RATERS:  # every item of every rater answered in full
        assert f"{rater:<20} {assigned[rater]}/{assigned[rater]} done" in out
    live = study.agreement()
    assert f"inter-rater over {live.items} items rated twice or more: percent={live.percent:.3f} " \
           f"kappa(quadratic)={live.kappa:.3f} alpha={live.alpha:.3f}" in out
    assert f"not evaluable: {sum(v is None for v in given.values())} answers" in out
