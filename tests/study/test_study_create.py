"""``study create`` on the fixture cohort (two models × two formats × six cases, one failed arm): what is drawn,
who rates what in which order, the tokens, and every refusal; each expectation counted by hand."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from study_fixture import OUTPUTS, identities, rows
from support.cohort_fixture import FAILED

from consilium.cli import main
from consilium.errors import UserError
from consilium.study import Study, create_study

RATERS = ("ana", "ben", "cy")


@pytest.fixture(scope="module")
def sampled(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """A study of 10 outputs sampled (seed 5), each rated by 2 of 3 raters."""
    db = tmp_path_factory.mktemp("sampled") / "study.sqlite3"
    made = create_study(fixture_cohort, rubric="ai-consilium", raters=RATERS, per_output=2, sample=10, seed=5,
                        database=str(db))
    return db, made


def test_every_completed_output_is_drawn_and_the_failed_arm_is_counted_not_drawn(
        fixture_cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "all.sqlite3"
    code = main(["study", "create", str(fixture_cohort), "--rubric", "ai-consilium", "--raters", "ana,ben,cy",
                 "--per-output", "2", "--database", str(db)])
    out = capsys.readouterr().out
    assert code == 0
    # 2 models × (6 free-form conclusions + 6 structured arms × 3 components) less the failed structured arm's 3.
    assert len(OUTPUTS) == 2 * (6 + 18) - 3 == 45
    drawn = Counter(identities(db).values())
    assert drawn == Counter(OUTPUTS)
    assert not [o for o in drawn if (o[0], o[2], o[1]) == FAILED]
    assert "45 outputs, 90 assignments" in out and "1 arms did not complete and are not drawn" in out
    links = [line for line in out.splitlines() if "/login/" in line]
    assert [line.split(":")[0].strip() for line in links] == [*RATERS, "administrator"]


def test_assignments_are_balanced_and_each_output_has_k_distinct_raters(sampled: tuple[Path, object]) -> None:
    db, made = sampled
    assigned = rows(db, "SELECT rater, item FROM assignments")
    assert len(assigned) == 20 == made.assignments  # type: ignore[attr-defined]
    loads = Counter(r for r, _ in assigned)
    assert sorted(loads.values()) == [6, 7, 7]  # 20 over 3 raters: differ by at most one
    per_item = Counter(i for _, i in assigned)
    assert len(per_item) == 10 and set(per_item.values()) == {2}
    assert len(set(assigned)) == len(assigned)  # no rater has an output twice


def test_each_rater_has_an_own_random_order_reproduced_by_the_seed(
        fixture_cohort: Path, sampled: tuple[Path, object], tmp_path: Path) -> None:
    db, _ = sampled
    again = tmp_path / "again.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=RATERS, per_output=2, sample=10, seed=5,
                 database=str(again))

    def orders(path: Path) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for rater, draw in rows(path, "SELECT a.rater, o.draw FROM assignments a JOIN outputs o ON o.id = a.item "
                                      "ORDER BY a.rater, a.position"):
            found.setdefault(rater, []).append(draw)
        return found

    first = orders(db)
    assert first == orders(again)  # same seed, same orders (the ids themselves are new random ones)
    assert set(identities(db)).isdisjoint(identities(again))
    assert any(order != sorted(order) for order in first.values())
    positions = rows(db, "SELECT rater, position FROM assignments ORDER BY rater, position")
    for rater in RATERS:
        assert [p for r, p in positions if r == rater] == list(range(1, len(first[rater]) + 1))


def test_a_sample_is_stratified_by_model_and_variant(sampled: tuple[Path, object]) -> None:
    db, _ = sampled
    sizes = Counter((m, v) for m, v, _, _ in OUTPUTS)
    assert sizes == {("panel-a", "free-form"): 6, ("panel-a", "structured"): 18, ("panel-b", "free-form"): 6,
                     ("panel-b", "structured"): 15}
    # 10 × size / 45: 1.33, 4, 1.33, 3.33 → floors 1, 4, 1, 3 (9); the one left goes to the largest remainder,
    # a three-way tie (15/45 each) that the larger stratum, panel-b structured, wins.
    drawn = Counter((m, v) for m, v, _, _ in identities(db).values())
    assert drawn == {("panel-a", "free-form"): 1, ("panel-a", "structured"): 4, ("panel-b", "free-form"): 1,
                     ("panel-b", "structured"): 4}


def test_tokens_are_stored_only_as_hashes(sampled: tuple[Path, object]) -> None:
    db, made = sampled
    tokens = [*made.links.values(), made.admin_token]  # type: ignore[attr-defined]
    assert len(set(tokens)) == 4 and all(len(t) >= 43 for t in tokens)
    stored = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
    assert not [t for t in tokens if t.encode() in stored]
    study = Study.open(Path(rows(db, "SELECT run_dir FROM studies")[0][0]), str(db))
    assert [study.rater_of(made.links[r]) for r in RATERS] == list(RATERS)  # type: ignore[attr-defined]
    assert study.is_admin(made.admin_token) and not study.is_admin(made.links["ana"])  # type: ignore[attr-defined]
    assert study.rater_of(made.admin_token) is None and study.rater_of("") is None  # type: ignore[attr-defined]


def test_item_ids_are_opaque(sampled: tuple[Path, object]) -> None:
    db, _ = sampled
    for item, (model, variant, case, component) in identities(db).items():
        assert len(item) == 16 and not any(word in item for word in (model, variant, case, component))


@pytest.mark.parametrize(("flags", "message"), [
    (["--rubric", "nope"], "--rubric: unknown rubric 'nope'"),
    (["--raters", "ana,ben,ana"], "--raters: ana named more than once"),
    (["--raters", "ana,,cy"], "--raters: give the raters' names separated by commas (none may be empty)"),
    (["--per-output", "4"], "--per-output: 4 raters per output, but only 3 raters are named"),
    (["--sample", "0"], "--sample: must be at least 1, got 0"),
    (["--components", "answer"], "--components: ai-consilium scores no answer with criteria"),
])
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(
        fixture_cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str) -> None:
    base = {"--rubric": "ai-consilium", "--raters": "ana,ben,cy"}
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    argv = ["study", "create", str(fixture_cohort), "--database", str(tmp_path / "s.sqlite3")]
    for flag, value in {**base, **given}.items():
        argv += [flag, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "s.sqlite3").exists()


def test_a_second_study_of_the_run_in_one_database_is_refused(
        fixture_cohort: Path, sampled: tuple[Path, object]) -> None:
    db, _ = sampled
    before = rows(db, "SELECT COUNT(*) FROM outputs")
    with pytest.raises(UserError, match="already holds a study of"):
        create_study(fixture_cohort, rubric="ai-consilium", raters=["zed"], database=str(db))
    assert rows(db, "SELECT COUNT(*) FROM outputs") == before


def test_a_run_folder_without_completed_arms_is_refused(fixture_cohort: Path, tmp_path: Path) -> None:
    run = tmp_path / "empty"
    run.mkdir()
    lines = (fixture_cohort / "arms.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    failed = [line for line in lines[1:] if line.split(",")[header.index("status")] != "completed"]
    (run / "arms.csv").write_text("\n".join([lines[0], *failed]) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"no completed arm has a role_reasoning or role_opinion or conclusion to "
                                        r"rate \(1 arms did not complete\)"):
        create_study(run, rubric="ai-consilium", raters=RATERS, database=str(tmp_path / "s.sqlite3"))
