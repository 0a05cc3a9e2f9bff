"""One ownership rule (consilium.fileio.in_the_way): each command that writes outputs replaces its own and
refuses, in one line with exit 2 and nothing written, a file it did not write — the viewer's pages, the
jury's report, the network analysis's folder, an export's files and a judgement record.

One small judged cohort (the shipped scripted panel as panel and judge) serves every test: built once per
module, each test working on its own copy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cohorts import copy_cohort
from support.isolation import isolated
from support.panel_judged_cohort import PANEL, ROOT, build_panel_judged_cohort

from consilium.cli import main
from consilium.errors import UserError
from consilium.fileio import in_the_way
from consilium.reports.jury_tables import MARK, check_ours

MINE = "my own notes, not consilium's\n"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("ownership")
    with isolated(tmp):
        run_dir = build_panel_judged_cohort(tmp)
    yield run_dir


@pytest.fixture
def run(judged: Path, tmp_path: Path) -> Path:
    return copy_cohort(judged, tmp_path / "copy")


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    return err


def test_the_rule_finds_links_folders_unmarked_unreadable_and_others_marks(tmp_path: Path) -> None:
    marks = {"ours.txt": "run=a", "other.txt": "run=b", "bare.txt": "run=", "plain.txt": "no mark", "bad.txt": "!"}
    for name, text in marks.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "ours.txt")

    def read(path: Path) -> dict[str, str] | None:
        text = path.read_text()
        if text == "!":
            raise ValueError("not a mark")
        key, eq, value = text.partition("=")
        return None if not eq else ({key: value} if value else {})

    names = ["new.txt", *marks, "folder", "link"]
    found = {f.path.name: f for f in in_the_way([tmp_path / n for n in names], {"run": "a"}, read)}
    assert {n: f.why for n, f in found.items()} == {"other.txt": "another", "plain.txt": "unmarked",
                                                    "bad.txt": "unreadable", "folder": "not a file",
                                                    "link": "not a file"}
    assert found["other.txt"].mark == {"run": "b"} and isinstance(found["bad.txt"].error, ValueError)
    # A mark that names no run (bare.txt) claims nothing this command differs on: its own, replaced.
    empty, full = tmp_path / "empty-out", tmp_path / "full-out"
    empty.mkdir()
    full.mkdir()
    (full / "x").write_text("x")
    assert [f.path for f in in_the_way([empty, full, tmp_path / "none"], {}, lambda _: None, folder=True)] == [full]


def test_view_replaces_its_pages_and_refuses_a_file_it_did_not_write(run: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "view"
    assert main(["view", str(run), "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert main(["view", str(run), "--out", str(out)]) == 0  # its own pages: replaced
    assert (out / "index.html").read_text() == index
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text(MINE)
    refused(["view", str(run), "--out", str(mine)], capsys, "index.html: not a page `consilium view` wrote")
    assert (mine / "index.html").read_text() == MINE


def test_jury_replaces_its_report_and_refuses_a_file_it_did_not_write(tmp_path: Path) -> None:
    name = "otb-conclusion-alignment"
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder in (ours, theirs):
        folder.mkdir()
        (folder / f"jury.{name}.alpha.csv").write_text(MINE)
    (ours / f"jury.{name}.md").write_text(f"{MARK}\n# Jury\n")
    check_ours(ours, name)  # beside its own marked markdown: a re-run replaces it
    with pytest.raises(UserError, match=r"alpha\.csv: exists and is not a file `consilium jury` wrote"):
        check_ours(theirs, name)
    (theirs / f"jury.{name}.md").write_text("# my notes\n")
    with pytest.raises(UserError, match="not a file `consilium jury` wrote"):
        check_ours(theirs, name)
    (ours / f"jury.{name}.png").mkdir()
    with pytest.raises(UserError, match=r"png: not a file `consilium jury` wrote \(a link or a folder\)"):
        check_ours(ours, name)


def test_analyze_replaces_its_analysis_and_refuses_a_folder_it_did_not_write(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "analysis"
    assert main(["analyze", str(run), "--out", str(out)]) == 0
    assert main(["analyze", str(run), "--out", str(out)]) == 0  # the same analysis again: its own
    stamp = json.loads((out / "analysis.json").read_text())
    (out / "analysis.json").write_text(json.dumps({**stamp, "run_id": "another-run"}))
    refused(["analyze", str(run), "--out", str(out)], capsys, "analysis.json: the analysis there is of run "
            "another-run", "--force")
    (out / "analysis.json").write_text("{not json")
    refused(["analyze", str(run), "--out", str(out)], capsys, "analysis.json: unreadable", "--force replaces it")
    assert main(["analyze", str(run), "--out", str(out), "--force"]) == 0  # as the message says
    assert json.loads((out / "analysis.json").read_text())["run_id"] == stamp["run_id"]
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text(MINE)
    refused(["analyze", str(run), "--out", str(stray)], capsys, "not an analysis folder")
    assert sorted(p.name for p in stray.iterdir()) == ["notes.txt"]


def test_export_refuses_an_existing_file_unless_forced(run: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "export"
    assert main(["export", str(run), "--to", "jsonl", "--out", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    target = out / written[0]
    target.write_text(MINE)
    refused(["export", str(run), "--to", "jsonl", "--out", str(out)], capsys, f"{written[0]}: exists",
            "pass --force to replace the export")
    assert target.read_text() == MINE
    assert main(["export", str(run), "--to", "jsonl", "--out", str(out), "--force"]) == 0
    assert target.read_text() != MINE


def test_judge_replaces_its_own_judgements_and_refuses_another_judges(run: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (record,) = run.rglob("*.judge.ai-consilium.json")
    other = tmp_path / "another-judge.yaml"  # the same script under another model name: another judge
    script = (ROOT / "examples" / "models" / "scripted-panel.yaml").read_text()
    other.write_text(script.replace("\nmodel: scripted-panel\n", "\nmodel: another-judge\n", 1))
    argv = ["judge", str(run), "--rubric", "ai-consilium"]
    assert main([*argv, "--judge-model", PANEL]) == 0  # the same judge: its own record, replaced
    before = record.read_text()
    refused([*argv, "--judge-model", f"scripted:{other}"], capsys, f"{record.name}: judged by", "--force replaces it")
    assert record.read_text() == before
    made = json.loads(before)
    record.write_text(json.dumps({**made, "prompt_hash": "0" * 12}))
    refused([*argv, "--judge-model", PANEL], capsys, "with another judge prompt (hash 000000000000")
    record.write_text("{not json")
    refused([*argv, "--judge-model", PANEL], capsys, "an unreadable judgement is in the way")
