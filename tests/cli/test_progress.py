"""Long commands show their progress on stderr: one line per item off a terminal (a batch job's log), a
bar on a terminal whose last line shows the total; stdout keeps the results alone."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import sys
import threading
from pathlib import Path

import pytest
from support.cohorts import copy_cohort
from support.corpus_evolve import CASES, HEADER, build_judged, write_scripts

from consilium.cli import main
from consilium.cohort.progress import ItemProgress

JUDGE = {"model": "judge", "rules": [{"stage": "judge", "json": {"rationale": "r", "score": 2}}]}
LINE = re.compile(r"^\[(\d+)/(\d+)\] (.+): (.+)$")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two panel models × two formats × four cases, judged on the conclusion (16 traces)."""
    return build_judged(tmp_path_factory.mktemp("progress"))


def _ratings(tmp_path: Path) -> Path:
    rows = [f"{case},conclusion,c1,{rater},{score},panel-a,structured\n"
            for case in CASES for rater, score in (("a", 1), ("b", 2))]
    path = tmp_path / "ratings.csv"
    path.write_text(HEADER + "".join(rows))
    return path


def _lines(err: str) -> list[re.Match[str]]:
    found = [LINE.match(line) for line in err.splitlines()]
    return [m for m in found if m is not None]


def _judge_argv(folder: Path, tmp_path: Path) -> list[str]:
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(JUDGE))
    # The folder was judged by another judge: --force replaces its judgements (judge refuses to otherwise).
    return ["judge", str(folder), "--rubric", "ai-consilium", "--judge-model", f"scripted:{judge}",
            "--component", "conclusion", "--force"]


def test_item_progress_off_a_terminal_writes_one_line_per_item_with_its_counts() -> None:
    stream = io.StringIO()
    with ItemProgress("things", 2, tail="0 calls", stream=stream) as progress:
        progress.advance("first", "done", tail="3 calls")
        progress.advance("second", "failed: no")
    assert stream.getvalue() == "[1/2] first: done · 3 calls\n[2/2] second: failed: no · 3 calls\n"


def test_judge_off_a_terminal_writes_a_line_per_trace_to_stderr_only(judged: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(judged, folder)
    capsys.readouterr()
    assert main(_judge_argv(folder, tmp_path)) == 0
    out, err = capsys.readouterr()
    lines = _lines(err)
    assert [(int(m[1]), int(m[2])) for m in lines] == [(i, 16) for i in range(1, 17)]
    assert all(m[3].endswith(".trace.json") and m[4].startswith("11 calls, ") for m in lines)  # 8 + 3 whole-case
    assert lines[-1][4].endswith(" · 176 judge calls")
    assert "[1/16]" not in out and out.startswith("rubric ai-consilium")


def test_calibrate_agreement_reports_each_row_as_its_bootstrap_ends(judged: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "agreement", "--ratings", str(_ratings(tmp_path)), "--judgements", str(judged),
                 "--rubric", "ai-consilium", "--bootstrap", "20", "--out", str(tmp_path / "cal")]) == 0
    out, err = capsys.readouterr()
    lines = _lines(err)
    assert [(m[1], m[2], m[3]) for m in lines] == [("1", "3", "c1"), ("2", "3", "pooled"),
                                                   ("3", "3", "physician baseline (pooled)")]
    assert lines[0][4] == "20 draws, n=8" and "[1/3]" not in out


def test_calibrate_evolve_reports_each_repeat(judged: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    judge, optimiser = write_scripts(tmp_path)
    argv = ["calibrate", "evolve", "--ratings", str(_ratings(tmp_path)), "--judgements", str(judged), "--rubric",
            "ai-consilium", "--judge-model", judge, "--optimiser-model", optimiser, "--criterion", "c1",
            "--population", "2", "--generations", "1", "--repeats", "2", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    lines = _lines(capsys.readouterr().err)
    assert [(m[1], m[2], m[3]) for m in lines] == [("1", "2", "c1 · repeat 1"), ("2", "2", "c1 · repeat 2")]
    assert all(m[4].startswith("train MAE ") for m in lines)


def test_compare_reports_each_table_and_the_figures(fixture_cohort: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = copy_cohort(fixture_cohort, tmp_path)
    capsys.readouterr()
    assert main(["compare", str(run_dir), "--bootstrap", "200"]) == 0
    out, err = capsys.readouterr()
    lines = _lines(err)
    total = int(lines[0][2])
    assert [int(m[1]) for m in lines] == list(range(1, total + 1))
    labels = [m[3] for m in lines]
    assert "consilium paired_differences" in labels and labels[-2:] == ["baselines", "consilium figures"]
    assert "[1/" not in out


def _on_a_terminal(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; what the terminal showed, escape codes removed."""
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # read as it is written: a full pty buffer would block the writer
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "TTY_INTERACTIVE", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    tty = os.fdopen(slave, "w", encoding="utf-8", buffering=1)
    monkeypatch.setattr(sys, "stderr", tty)
    try:
        code = main(argv)
    finally:
        tty.flush()
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        tty.close()
        reader.join(timeout=5)
        os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", text)


def test_judge_on_a_terminal_draws_a_bar_that_ends_on_the_total(judged: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(judged, folder)
    capsys.readouterr()
    code, shown = _on_a_terminal(_judge_argv(folder, tmp_path), monkeypatch)
    assert code == 0
    last = [line for line in re.split(r"[\r\n]", shown) if line.strip()][-1]
    assert "traces" in last and "16/16" in last and "━" in last and "176 judge calls" in last
    assert not _lines(shown)  # no per-item lines on a terminal
    assert capsys.readouterr().out.startswith("rubric ai-consilium")
