"""A jury of judges across a cohort: the jury's not-evaluable votes in every table that shows its scores
(judge and cohort coverage, judgements.csv, compare, report, the viewer), ``consilium jury`` never replacing
a file it did not write, a jury in an experiment file, a resumed cohort refusing a changed jury, and a jury
through the Python API. The cases, panel and judges are tests/support/jury_fixture.py's."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.jury_fixture import BASE_CASE, CASES, JUDGES, ORDINAL, SCORES, judge_script, panel_script

import consilium
from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.record import read_judgement


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three cases, the claude panel (j3 cannot judge case C's answer: two votes left out, one per
    format) and the three judges' files."""
    tmp = tmp_path_factory.mktemp("jury-cohort")
    base = yaml.safe_load(BASE_CASE.read_text())
    (tmp / "cases").mkdir()
    for case in CASES:
        data = {**base, "id": f"jury-{case.lower()}", "presentation": f"CASE-{case}. {base['presentation']}"}
        (tmp / "cases" / f"case-{case}.yaml").write_text(yaml.safe_dump(data))
    (tmp / "panel.json").write_text(json.dumps(panel_script("claude")))
    for name in JUDGES:
        (tmp / f"{name}.json").write_text(json.dumps(judge_script(name, False)))
    return tmp


def _specs(setup: Path, names: tuple[str, ...] = tuple(JUDGES)) -> list[str]:
    return [f"scripted:{setup / f'{name}.json'}" for name in names]


def _flags(specs: list[str]) -> list[str]:
    return [arg for spec in specs for arg in ("--judge-model", spec)]


def _cohort(setup: Path, out: Path, *extra: str) -> int:
    return main(["cohort", "--cases", str(setup / "cases"), "--model", f"scripted:{setup / 'panel.json'}",
                 "--judge", ORDINAL, "--out", str(out), *extra])


def _left_out() -> int:
    """Votes of the claude answers no judge of the jury could give, by design: j3 on case C, each format."""
    return 2 * sum(SCORES[j][("C", "claude")] is None for j in JUDGES)


@pytest.fixture(scope="module")
def cohort(setup: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cohort")
    assert _cohort(setup, out, *_flags(_specs(setup))) == 0
    [manifest] = out.rglob("manifest.json")
    return manifest.parent


# ---- the jury's not-evaluable votes, wherever its scores are shown -----------------------------------------


def test_judge_coverage_counts_the_jury_votes_left_out(setup: Path, cohort: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for trace in cohort.rglob("*.trace.json"):
        (traces / trace.name).write_text(trace.read_text())
    capsys.readouterr()
    assert main(["judge", str(traces), "--rubric", ORDINAL, *_flags(_specs(setup)), "--no-cache",
                 "--max-repairs", "1"]) == 0
    [line] = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith(ORDINAL)]
    assert "6 items: 6 judged, 0 not evaluable" in line
    assert f"{_left_out()} jury votes not evaluable (left out of their verdicts)" in line


def test_cohort_tables_compare_report_and_viewer_show_the_jury_votes_left_out(
        cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _csv(cohort / "judgements.csv")
    assert sum(int(r["jury_not_evaluable"]) for r in rows) == _left_out() == 2
    assert {r["jury_judges"] for r in rows} == {"3"}
    assert sum(bool(r["jury_tie"]) for r in rows) == 2  # case C: 4 and 3 left, the lower middle
    assert main(["compare", str(cohort)]) == 0
    assert main(["report", str(cohort)]) == 0
    for table in (cohort / "compare" / "judging_coverage.csv", cohort / "report" / "judging_coverage.csv"):
        [row] = _csv(table)
        assert row["not_evaluable"] == "0" and row["jury_votes_left_out"] == str(_left_out())
    assert "jury_votes_left_out" in (cohort / "compare" / "compare.md").read_text()
    assert main(["view", str(cohort)]) == 0
    pages = [p.read_text() for p in (cohort / "view" / "arms").rglob("*.html")]
    shown = [p for p in pages if "median of 2 of 3 judges, 1 not evaluable" in p]
    assert len(shown) == 2 and all("lower middle" in p and "not evaluable" in p for p in shown)  # case C


def test_a_single_judge_cohort_keeps_its_columns(setup: Path, tmp_path: Path) -> None:
    assert _cohort(setup, tmp_path, "--judge-model", _specs(setup)[0]) == 0
    header = next(tmp_path.rglob("judgements.csv")).read_text().splitlines()[0]
    assert "jury" not in header


# ---- consilium jury never replaces a file it did not write ------------------------------------------------


def test_jury_reruns_but_never_replaces_a_file_it_did_not_write(cohort: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["jury", str(cohort), "--rubric", ORDINAL, "--out", str(out)]) == 0
    first = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".pdf"}
    assert main(["jury", str(cohort), "--rubric", ORDINAL, "--out", str(out)]) == 0  # its own files: a re-run
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.suffix in (".csv", ".md")} == {
        k: v for k, v in first.items() if k.endswith((".csv", ".md"))}
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / f"jury.{ORDINAL}.alpha.csv").write_text("my own table\n")
    capsys.readouterr()
    assert main(["jury", str(cohort), "--rubric", ORDINAL, "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a file `consilium jury` wrote" in err
    assert (mine / f"jury.{ORDINAL}.alpha.csv").read_text() == "my own table\n"
    assert sorted(p.name for p in mine.iterdir()) == [f"jury.{ORDINAL}.alpha.csv"]  # nothing was written


# ---- a jury in an experiment file, and a resumed cohort's jury --------------------------------------------


def _experiment(setup: Path, path: Path, judges: Any) -> Path:
    path.write_text(yaml.safe_dump({"cases": str(setup / "cases"), "models": [f"scripted:{setup / 'panel.json'}"],
                                    "judges": [ORDINAL], "judge_model": judges, "formats": ["structured"]}))
    return path


def test_an_experiment_file_names_a_jury(setup: Path, tmp_path: Path) -> None:
    specs = _specs(setup)
    relative = [f"scripted:../{setup.name}/{name}.json" for name in JUDGES]  # resolved against the file
    folder = setup.parent / "experiments"
    folder.mkdir(exist_ok=True)
    path = _experiment(setup, folder / "jury.yaml", relative)
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path)]) == 0
    [manifest] = tmp_path.rglob("manifest.json")
    settings = json.loads(manifest.read_text())["settings"]
    assert [settings["judge_model"], *settings["jury_models"]] == specs
    judgements = [read_judgement(p) for p in manifest.parent.rglob(f"*.judge.{ORDINAL}.json")]
    assert len(judgements) == 3 and all([m.judge for m in j.jury or []] == specs for j in judgements)


@pytest.mark.parametrize(("judges", "field"), [([], "judge_model: an empty list"),
                                               (["J1", "J2", "J1"], "judge_model.2: ")])
def test_an_experiment_jury_empty_or_with_a_judge_twice_exits_2(setup: Path, tmp_path: Path, judges: list[str],
                                                                field: str, capsys: pytest.CaptureFixture[str]
                                                                ) -> None:
    names = {"J1": _specs(setup)[0], "J2": _specs(setup)[1]}
    path = _experiment(setup, tmp_path / "bad.yaml", [names[j] for j in judges])
    capsys.readouterr()
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}: {field}" in err
    assert "given twice" in err or not judges


def test_resume_refuses_a_changed_jury_in_one_line(setup: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    j1, j2, j3 = _specs(setup)
    out = tmp_path / "out"
    assert _cohort(setup, out, "--limit", "1", *_flags([j1, j2])) == 0
    [manifest] = out.rglob("manifest.json")
    run_dir = str(manifest.parent)
    for changed in ([j1, j3], [j1], [j1, j2, j3], [j2, j1]):  # the second changed, one dropped, one added, order
        capsys.readouterr()
        assert main(["cohort", "--resume", run_dir, *_flags(changed)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("consilium: error: --judge-model: ")
        assert f"differs from the resumed cohort's '{j1}, {j2}'" in err
    path = _experiment(setup, tmp_path / "other-jury.yaml", [j1, j3])
    capsys.readouterr()
    assert main(["cohort", "--resume", run_dir, "--experiment", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--experiment: 'judge_model " in err
    assert main(["cohort", "--resume", run_dir, *_flags([j1, j2])]) == 0  # the same jury: resumed
    assert main(["cohort", "--resume", run_dir]) == 0


# ---- the Python API --------------------------------------------------------------------------------------


def test_the_api_judges_with_a_jury(setup: Path, cohort: Path, tmp_path: Path) -> None:
    specs = _specs(setup)
    [trace] = [p for p in cohort.rglob("jury-c.free-form.trace.json")]
    judgement = consilium.judge(trace, ORDINAL, judge_model=specs)
    [item] = judgement.items
    assert item.votes is not None and item.verdict is not None
    assert [v.score for v in item.votes] == [SCORES[j][("C", "claude")] for j in JUDGES]
    assert item.score == 3 and item.verdict.not_evaluable == 1 and "lower middle" in (item.verdict.tie or "")
    assert consilium.judge(trace, ORDINAL, judge_model=specs[:1]).jury is None  # a list of one: one judge
    copy = tmp_path / trace.name
    copy.write_text(trace.read_text())
    [written] = consilium.judge_run(copy, ORDINAL, judge_model=specs[:2])
    assert read_judgement(next(tmp_path.glob("*.judge.*.json"))).jury == written.jury
    assert [m.judge for m in written.jury or []] == specs[:2]
    with pytest.raises(UserError, match="given twice"):
        consilium.judge(trace, ORDINAL, judge_model=[specs[0], specs[0]])
    with pytest.raises(UserError, match="empty list"):
        consilium.judge(trace, ORDINAL, judge_model=[])


def test_run_cohort_takes_a_jury(setup: Path, tmp_path: Path) -> None:
    specs = _specs(setup)
    result = consilium.run_cohort(setup / "cases", models=[f"scripted:{setup / 'panel.json'}"], limit=1,
                                  formats=["structured"], judges=[ORDINAL], judge_model=specs, out=tmp_path)
    settings = result.manifest.settings
    assert [settings.judge_model, *settings.jury_models] == specs
    assert result.judgements_csv is not None and "jury_not_evaluable" in result.judgements_csv.read_text()
    with pytest.raises(UserError, match=r"judge_model: .* given twice"):
        consilium.run_cohort(setup / "cases", models=[f"scripted:{setup / 'panel.json'}"], judges=[ORDINAL],
                             judge_model=[specs[0], specs[0]], out=tmp_path)
