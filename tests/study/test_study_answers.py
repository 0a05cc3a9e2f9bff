"""Rating: the item a rater sees, answers that upsert and survive reopening, concurrent raters, revoked links,
and every refusal of a bad answer."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from study_fixture import identities, rows
from support.cohort_fixture import APPLIES, MARKERS

from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.rubric import load_rubric
from consilium.study import Forbidden, Study, create_study


@pytest.fixture
def study(fixture_cohort: Path, tmp_path: Path) -> Study:
    db = tmp_path / "study.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=["ana", "ben"], per_output=1, sample=8, seed=2,
                 database=str(db))
    return Study.open(fixture_cohort, str(db))


def test_the_item_shows_the_case_the_output_and_the_criteria_of_its_component(study: Study) -> None:
    rubric = load_rubric("ai-consilium")
    ids = identities(Path(study.db.target))
    for entry in study.queue("ana"):
        view = study.item("ana", entry.item)
        model, variant, case, component = ids[entry.item]
        assert view.component == component and view.position == entry.position
        assert view.total == len(study.queue("ana"))
        assert f"Presentation:\nCase {MARKERS[case]}:" in view.case_text and "reference" not in view.case_text.lower()
        assert view.output_text.strip() and "Community-acquired" not in view.case_text
        assert [c.id for c in view.criteria] == list(APPLIES[component])
        c1 = view.criteria[0]
        assert c1.scale == [0.0, 1.0, 2.0, 3.0] and not c1.binary and sorted(c1.anchors or {}) == ["0", "1", "2", "3"]
        assert c1.anchors["0"].startswith("A fabricated or distorted clinically significant fact")  # type: ignore[index]
        assert c1.text.startswith("Factual Correctness and Source Grounding: ")
        assert rubric.criteria[0].id == "c1"
        shown = repr(view)
        [(run, trace)] = rows(Path(study.db.target), "SELECT run, trace FROM outputs WHERE id = ?", entry.item)
        assert not [word for word in (model, variant, run, Path(trace).name, study.id) if word in shown]


def test_answers_upsert_and_survive_reopening(study: Study, fixture_cohort: Path) -> None:
    first = study.queue("ana")[0]
    criteria = [c.id for c in study.item("ana", first.item).criteria]
    study.answer("ana", first.item, criteria[0], score=1)
    study.answer("ana", first.item, criteria[0], score=3, comment="on reflection")
    study.answer("ana", first.item, criteria[1], score=None, not_evaluable=True, reason="section missing")
    reopened = Study.open(fixture_cohort, study.db.target)
    answers = reopened.item("ana", first.item).answers
    assert set(answers) == {criteria[0], criteria[1]}
    assert (answers[criteria[0]].score, answers[criteria[0]].comment) == (3.0, "on reflection")
    assert answers[criteria[1]].not_evaluable and answers[criteria[1]].score is None
    assert rows(Path(study.db.target), "SELECT COUNT(*) FROM answers") == [(2,)]
    assert not reopened.queue("ana")[0].done
    for criterion in criteria[2:]:
        reopened.answer("ana", first.item, criterion, score=2)
    assert reopened.queue("ana")[0].done
    progress = {p.rater: p for p in reopened.progress()}
    assert (progress["ana"].assigned, progress["ana"].done, progress["ben"].done) == (4, 1, 0)


@pytest.mark.parametrize(("given", "message"), [
    ({"score": 4}, r"^score: 4 is not on the ai-consilium scale \[0, 1, 2, 3\]$"),
    ({"score": 1.5}, r"^score: 1.5 is not on the ai-consilium scale"),
    ({"score": None}, r"^score: give a score, or mark the criterion not evaluable$"),
    ({"score": 2, "not_evaluable": True, "reason": "x"}, r"^score: a not-evaluable answer has no score$"),
    ({"score": None, "not_evaluable": True}, r"^reason: say why the criterion is not evaluable$"),
    ({"score": 2, "comment": "x" * 4001}, r"^comment: longer than 4000 characters$"),
])
def test_a_bad_answer_is_refused_naming_its_field(study: Study, given: dict[str, object], message: str) -> None:
    item = study.queue("ana")[0].item
    criterion = study.item("ana", item).criteria[0].id
    with pytest.raises(UserError, match=message):
        study.answer("ana", item, criterion, **given)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"^criterion: 'c99' is not a criterion of this item"):
        study.answer("ana", item, "c99", score=1)
    assert rows(Path(study.db.target), "SELECT COUNT(*) FROM answers") == [(0,)]


def test_a_rater_cannot_read_or_write_another_raters_item(study: Study) -> None:
    theirs = study.queue("ben")[0].item
    assert theirs not in {e.item for e in study.queue("ana")}
    with pytest.raises(Forbidden):
        study.item("ana", theirs)
    with pytest.raises(Study.Forbidden):
        study.answer("ana", theirs, "c1", score=1)
    with pytest.raises(Forbidden):
        study.item("ana", "no-such-item")


def test_revoke_stops_a_link_and_a_new_link_replaces_the_old(
        study: Study, fixture_cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    item = study.queue("ana")[0].item
    study.answer("ana", item, study.item("ana", item).criteria[0].id, score=2)
    old = study.new_link("ana")
    assert study.rater_of(old) == "ana"
    assert main(["study", "revoke", str(fixture_cohort), "--rater", "ana", "--database", study.db.target]) == 0
    assert study.rater_of(old) is None
    with pytest.raises(Forbidden):
        study.answer("ana", item, study.item("ana", item).criteria[0].id, score=3)
    assert [p.revoked for p in study.progress()] == [True, False]
    capsys.readouterr()
    assert main(["study", "link", str(fixture_cohort), "--rater", "ana", "--database", study.db.target]) == 0
    fresh = capsys.readouterr().out.split("/login/")[1].split()[0]
    assert study.rater_of(fresh) == "ana" and study.rater_of(old) is None
    assert study.item("ana", item).answers["c1"].score == 2.0  # answers stay through revocation
    assert main(["study", "revoke", str(fixture_cohort), "--rater", "zed", "--database", study.db.target]) == 2


def test_the_administrators_link_is_replaced_and_the_old_one_stops_while_the_raters_keep_theirs(
        study: Study, fixture_cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ana = study.new_link("ana")
    argv = ["study", "link", str(fixture_cohort), "--database", study.db.target]
    capsys.readouterr()
    assert main([*argv, "--admin"]) == 0
    first = capsys.readouterr().out.split("/login/")[1].split()[0]
    assert study.is_admin(first) and study.rater_of(first) is None
    assert main([*argv, "--admin"]) == 0
    second = capsys.readouterr().out.split("/login/")[1].split()[0]
    assert study.is_admin(second) and not study.is_admin(first)  # the old administrator link stopped
    assert study.rater_of(ana) == "ana" and not study.is_admin(ana)  # a rater's link is untouched
    # One of the two, never both or neither: argparse's own one-line refusal, exit 2.
    assert main([*argv, "--admin", "--rater", "ana"]) == 2 and main(argv) == 2
    err = capsys.readouterr().err
    assert "not allowed with argument" in err and "one of the arguments --rater --admin is required" in err


def _answer_all(run: str, db: str, rater: str, score: int) -> None:
    study = Study.open(Path(run), db)
    for entry in study.queue(rater):
        for criterion in study.item(rater, entry.item).criteria:
            study.answer(rater, entry.item, criterion.id, score=score)


def _expected(study: Study) -> int:
    return sum(len(study.item(r, e.item).criteria) for r in ("ana", "ben") for e in study.queue(r))


def test_two_raters_answering_at_once_in_threads_lose_nothing(study: Study, fixture_cohort: Path) -> None:
    threads = [threading.Thread(target=_answer_all, args=(str(fixture_cohort), study.db.target, rater, score))
               for rater, score in (("ana", 1), ("ben", 3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = rows(Path(study.db.target), "SELECT rater, score, COUNT(*) FROM answers GROUP BY rater, score")
    assert sum(n for _, _, n in found) == _expected(study)
    assert {(r, s) for r, s, _ in found} == {("ana", 1.0), ("ben", 3.0)}


def test_two_processes_answering_at_once_lose_nothing(study: Study, fixture_cohort: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_answer_all, args=(str(fixture_cohort), study.db.target, rater, score))
               for rater, score in (("ana", 0), ("ben", 2))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    assert rows(Path(study.db.target), "SELECT COUNT(*) FROM answers") == [(_expected(study),)]
    assert rows(Path(study.db.target), "PRAGMA journal_mode") == [("wal",)]
