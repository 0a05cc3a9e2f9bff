"""A cohort that stopped, or is still running, never reads as complete: compare, report and view say how many
of its planned arms finished and the cohort's status at the top, list the missing arms, mark every table
partial, and exit 1; a complete cohort shows no such mark.

The cohort is tests/support/cohort_fixture.py's, run by the real CLI with scripted panels and judge: two models ×
two formats × six cases, one arm failed (a failed arm is finished: its row is there), judged with items
not evaluable. A stopped cohort is made from a copy the way a killed one is left: arms.csv without the rows
(and traces, judgements) of the arms it never ran, and a manifest still saying ``running``. The expected
counts and missing arms are worked out here from the fixture's constants; a second test kills a real
cohort process (SIGKILL) half-way and reads it while it runs and after."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import CASES, FAILED, FORMATS, MODELS
from support.cohorts import copy_cohort
from support.isolation import isolated
from test_viewer_index import parse

from consilium.cli import main
from consilium.cohort.lock import RunLock

DRAWS = 50
#: (model, case, format) of the arms the stopped cohort never ran: both formats of one (model, case), single
#: formats of others, of both models (the failed arm, FAILED, is kept: it finished).
NEVER_RAN = {("panel-b", "k5", "free-form"), ("panel-b", "k5", "structured"), ("panel-b", "k4", "structured"),
             ("panel-a", "k6", "free-form"), ("panel-a", "k2", "structured")}
PLANNED = len(MODELS) * len(CASES) * len(FORMATS)  # 24
FINISHED = PLANNED - len(NEVER_RAN)  # 19
KILLED = "stopped without closing its manifest"


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def cohorts(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("cohorts")
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        complete = copy_cohort(fixture_cohort, tmp)  # compare, report and view write into it
        specs = {row["model_spec"] for row in read_csv(complete / "arms.csv")}
        spec_of = {model: next(s for s in specs if model in s) for model in MODELS}
        stopped = tmp / "stopped" / complete.name
        shutil.copytree(complete, stopped)
        arms = read_csv(stopped / "arms.csv")
        gone = [a for a in arms if (next(m for m in MODELS if spec_of[m] == a["model_spec"]), a["case_id"],
                                    a["format"]) in NEVER_RAN]
        assert len(gone) == len(NEVER_RAN)
        for arm in gone:  # the arm never ran: no trace, no judgement
            trace = stopped / arm["trace"]
            for path in trace.parent.glob(trace.name.removesuffix(".trace.json") + ".*"):
                path.unlink()
        write_rows(stopped / "arms.csv", [a for a in arms if a not in gone])
        judged = read_csv(stopped / "judgements.csv")
        keys = {(a["case_id"], a["model"], a["format"]) for a in gone}
        write_rows(stopped / "judgements.csv",
                   [j for j in judged if (j["case_id"], j["model"], j["format"]) not in keys])
        manifest = json.loads((stopped / "manifest.json").read_text())
        (stopped / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
        # the fixture cohort's judge script, beside its cases (tests/support/cohort_fixture.py's build_cohort)
        judge = fixture_cohort.parents[1] / "judge.json"
        yield {"complete": complete, "stopped": stopped, "spec_of": spec_of, "tmp": tmp, "judge": judge}


#: What a command printed: its exit code, stdout and stderr.
Said = tuple[int, str, str]


def _said(argv: list[str]) -> Said:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def read(cohorts: dict[str, Any]) -> dict[tuple[str, str], Said]:
    """compare, report and view of the stopped and of the complete cohort, each run once into the cohort's own
    folder: (cohort, command) → what it printed. Drawing their figures is most of a command's time, so the
    tests of what the outputs say and of their figures' marks read these same folders."""
    said = {}
    for name in ("stopped", "complete"):
        for command in ("compare", "report", "view"):
            draws = ["--bootstrap", str(DRAWS)] if command != "view" else []
            said[(name, command)] = _said([command, str(cohorts[name]), *draws])
    return said


def missing_labels(spec_of: dict[str, str]) -> set[str]:
    return {f"{case} · {spec_of[model]} · {fmt}" for model, case, fmt in NEVER_RAN}


def missing_rows(spec_of: dict[str, str]) -> list[dict[str, str]]:
    """missing_arms.csv as expected: in natural case order (k1 … k6), then model, then format."""
    return [{"case_id": case, "model_spec": spec_of[model], "protocol": "consilium", "format": fmt}
            for model, case, fmt in sorted(NEVER_RAN, key=lambda k: (k[1], k[0], k[2]))]


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#") and not line.startswith("# ")]


def check_partial_files(out: Path, name: str, status: str, spec_of: dict[str, str]) -> str:
    """The report's text and files say the cohort is partial; returns the text."""
    text = (out / name).read_text(encoding="utf-8")
    summary = f"{FINISHED} of {PLANNED} planned arms finished (status: {status}"
    lines = text.splitlines()
    assert summary in lines[2], lines[:4]  # the first thing under the title
    mark = f"[partial: {FINISHED} of {PLANNED} planned arms, cohort {status}]"
    for heading in headings(text):
        assert heading.startswith("## Missing arms") or heading.endswith(mark), heading
    assert f"## Missing arms: {len(NEVER_RAN)}" in text
    listed = {line.removeprefix("- ") for line in lines if line.startswith("- ")}
    assert listed == missing_labels(spec_of)
    csvs = [p for p in out.glob("*.csv") if p.name != "missing_arms.csv"]
    assert len(csvs) >= 5
    for path in csvs:
        rows = read_csv(path)
        assert next(iter(rows[0])) == "partial", path.name
        assert {r["partial"] for r in rows} == {f"{FINISHED} of {PLANNED} planned arms, cohort {status}"}, path.name
    assert read_csv(out / "missing_arms.csv") == missing_rows(spec_of)
    return text


def tables_of(page: Path) -> dict[str, list[list[str]]]:
    """The cell texts of each table of a page, by its class (the viewer tests' parser)."""
    return {name: [[text for text, _ in row] for row in rows] for name, rows in parse(page).tables.items()}


def test_a_killed_cohort_reads_as_aborted_with_its_missing_arms_in_every_output(
        cohorts: dict[str, Any], read: dict[tuple[str, str], Said]) -> None:
    stopped, spec_of = cohorts["stopped"], cohorts["spec_of"]
    code, out, _ = read[("stopped", "compare")]
    assert code == 1
    assert out.splitlines()[2].startswith(f"**Partial cohort: {FINISHED} of {PLANNED} planned arms finished "
                                          f"(status: aborted: {KILLED}")
    assert all(f"- {label}" in out for label in missing_labels(spec_of))
    text = check_partial_files(stopped / "compare", "compare.md", "aborted", spec_of)
    assert f"{FINISHED} arms; {FINISHED - 1} completed." in text  # the failed arm finished, as a failure

    code, out, _ = read[("stopped", "report")]
    assert code == 1
    assert f"{FINISHED} of {PLANNED} planned arms finished (status: aborted" in out
    check_partial_files(stopped / "report", "report.md", "aborted", spec_of)

    code, out, _ = read[("stopped", "view")]
    assert code == 1
    said = out.splitlines()
    assert said[0].startswith(f"partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted")
    index = stopped / "view" / "index.html"
    assert f"Partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted" in \
        index.read_text(encoding="utf-8")
    header, *rows = tables_of(index)["missing"]
    assert header == ["case", "model", "protocol", "format"]
    assert rows == [list(r.values()) for r in missing_rows(spec_of)]
    assert len(tables_of(index)["arms"]) == 1 + FINISHED
    for case in CASES:  # each case page says so too, with the case's own missing arms
        page = (stopped / "view" / "cases" / f"{case}.html").read_text(encoding="utf-8")
        assert f"Partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted" in page
        mine = sorted((m, f) for m, k, f in NEVER_RAN if k == case)
        shown = f"Missing arms of this case: {'; '.join(f'{spec_of[m]} · {f}' for m, f in mine)}." if mine else ""
        assert (shown in page) if mine else "Missing arms of this case" not in page, case


def test_a_cohort_whose_lock_is_held_reads_as_running(cohorts: dict[str, Any],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The lock a running cohort holds on its folder tells it from a killed one, whose manifest says running
    too (the test holds the lock as the cohort process does)."""
    stopped, spec_of = cohorts["stopped"], cohorts["spec_of"]
    out = cohorts["tmp"] / "while-running"
    with RunLock(stopped):
        assert main(["compare", str(stopped), "--bootstrap", str(DRAWS), "--out", str(out)]) == 1
        assert main(["view", str(stopped), "--out", str(cohorts["tmp"] / "view-running")]) == 1
    capsys.readouterr()
    check_partial_files(out, "compare.md", "running", spec_of)
    assert "(status: running)" in (cohorts["tmp"] / "view-running" / "index.html").read_text(encoding="utf-8")


def test_an_aborted_cohort_says_why_it_stopped(cohorts: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    stopped = cohorts["tmp"] / "aborted"
    shutil.copytree(cohorts["stopped"], stopped)
    manifest = json.loads((stopped / "manifest.json").read_text())
    reason = "cohort stopped: HTTP 401 from the server: the key was refused"
    (stopped / "manifest.json").write_text(json.dumps({**manifest, "status": "aborted", "error": reason}))
    assert main(["report", str(stopped), "--bootstrap", str(DRAWS)]) == 1
    assert f"{FINISHED} of {PLANNED} planned arms finished (status: aborted: {reason})" in capsys.readouterr().out
    check_partial_files(stopped / "report", "report.md", "aborted", cohorts["spec_of"])


def test_a_complete_cohort_carries_no_partial_mark(cohorts: dict[str, Any],
                                                   read: dict[tuple[str, str], Said]) -> None:
    complete = cohorts["complete"]
    assert [read[("complete", command)][0] for command in ("compare", "report", "view")] == [0, 0, 0]
    said = "".join(read[("complete", command)][1] for command in ("compare", "report", "view"))
    assert "partial cohort" not in said.lower() and "[partial:" not in said and "planned arms" not in said
    for folder, name in (("compare", "compare.md"), ("report", "report.md")):
        out = complete / folder
        assert "partial" not in (out / name).read_text(encoding="utf-8").lower()
        assert not (out / "missing_arms.csv").exists()
        assert all("partial" not in p.read_text(encoding="utf-8").splitlines()[0] for p in out.glob("*.csv"))
    index = (complete / "view" / "index.html").read_text(encoding="utf-8")
    assert "Partial cohort" not in index and "missing" not in tables_of(complete / "view" / "index.html")
    arms = read_csv(complete / "arms.csv")
    assert len(arms) == PLANNED and sum(a["status"] != "completed" for a in arms) == 1  # FAILED, finished
    assert FAILED in {(next(m for m in MODELS if m in a["model_spec"]), a["case_id"], a["format"])
                      for a in arms if a["status"] != "completed"}


def test_a_cohort_killed_mid_way_reads_as_running_then_aborted(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A real cohort process: model a answers at once, model b never (each of its calls waits ten minutes).
    Two arms run at a time in case order, so a's arms of k1 and k2 finish (4 rows: two formats each) and b's
    k1 and k2 arms hold both places; the process is read while it runs, then killed with SIGKILL."""
    from support.cohort_fixture import MAX_ROUNDS, _case, panel_script

    cases = tmp_path / "cases"
    cases.mkdir()
    chosen = ("k1", "k2", "k3")
    for case in chosen:
        (cases / f"{case}.json").write_text(json.dumps(_case(case)))
    specs = []
    for model, latency in (("panel-a", 0), ("panel-b", 600_000)):
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps({**panel_script(model), "latency_ms": latency}))
        specs.append(f"scripted:{path}")
    (tmp_path / "run.yaml").write_text(f"max_rounds: {MAX_ROUNDS}\n")
    out = tmp_path / "runs"
    env = {**os.environ, "CONSILIUM_CACHE": str(tmp_path / "cache.sqlite"),
           "CONSILIUM_LOG_FILE": str(tmp_path / "log.jsonl")}
    child = subprocess.Popen([sys.executable, "-m", "consilium", "cohort", "--cases", str(cases), "--model", specs[0],
                              "--extra-model", specs[1], "--config", str(tmp_path / "run.yaml"), "--concurrency", "2",
                              "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 180
        while time.time() < deadline and child.poll() is None:
            found = list(out.glob("*/arms.jsonl"))
            if found and len(found[0].read_text().splitlines()) >= 4:
                break
            time.sleep(0.1)
        assert child.poll() is None, "the cohort ended before it could be read running"
        [run_dir] = [p for p in out.iterdir() if p.is_dir()]
        finished, planned = 4, len(chosen) * len(specs) * len(FORMATS)
        capsys.readouterr()
        assert main(["view", str(run_dir), "--out", str(tmp_path / "view-running")]) == 1
        assert capsys.readouterr().out.startswith(
            f"partial cohort: {finished} of {planned} planned arms finished (status: running); 8 planned arms missing")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "running"  # as the kill left it
    assert main(["compare", str(run_dir), "--bootstrap", str(DRAWS)]) == 1
    said = capsys.readouterr().out
    assert f"{finished} of {planned} planned arms finished (status: aborted: {KILLED}" in said
    missing = read_csv(run_dir / "compare" / "missing_arms.csv")
    expected = [(case, spec, fmt) for case in chosen for spec in specs for fmt in FORMATS
                if not (spec == specs[0] and case in ("k1", "k2"))]
    assert [(m["case_id"], m["model_spec"], m["format"]) for m in missing] == expected
    line = f"partial cohort: {finished} of {planned} planned arms finished (status: aborted: {KILLED}"
    assert main(["analyze", str(run_dir)]) == 0  # its networks are of the finished arms: its first line says so
    assert capsys.readouterr().out.startswith(line)
    assert main(["export", str(run_dir), "--to", "jsonl"]) == 0  # stdout lists the files; the note is on stderr
    assert capsys.readouterr().err.startswith(f"note: {line}")


def test_a_cohort_killed_before_any_arm_finished_says_so_in_one_line(cohorts: dict[str, Any],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """arms.csv as a cohort starts it (its header alone): nothing to report, one line with the plan, exit 2."""
    empty = cohorts["tmp"] / "empty"
    shutil.copytree(cohorts["stopped"], empty, ignore=shutil.ignore_patterns("compare", "report", "view"))
    header = (empty / "arms.csv").read_text(encoding="utf-8").splitlines()[0]
    (empty / "arms.csv").write_text(header + "\n", encoding="utf-8")
    for command in ("compare", "report", "view"):
        capsys.readouterr()
        assert main([command, str(empty)]) == 2, command
        err = capsys.readouterr().err.strip()
        said = (f"consilium: error: {empty / 'arms.csv'}: no arms: 0 of {PLANNED} planned arms finished (status: "
                f"aborted: {KILLED} (its process was killed, or its machine went down)); nothing to report yet")
        assert err.splitlines() == [said], (command, err)
        assert not (empty / command).exists()


def test_a_folder_of_cohorts_names_the_partial_one(cohorts: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """report over a folder holding a complete cohort and a stopped one: the stopped one's notice and missing
    arms (with a ``cohort`` column), its rows marked, the complete one's rows not."""
    both = cohorts["tmp"] / "both"
    skip = shutil.ignore_patterns("compare", "report", "view")
    shutil.copytree(cohorts["complete"], both / "done", ignore=skip)
    shutil.copytree(cohorts["stopped"], both / "stopped", ignore=skip)
    capsys.readouterr()
    assert main(["report", str(both), "--bootstrap", str(DRAWS)]) == 1
    text = (both / "report" / "report.md").read_text(encoding="utf-8")
    top = text.split("\n# ")[0]  # before the first cohort's own section
    assert "## stopped" in top and "## done" not in top
    assert f"{FINISHED} of {PLANNED} planned arms finished (status: aborted: {KILLED}" in top
    missing = read_csv(both / "report" / "missing_arms.csv")
    assert missing == [{"cohort": "stopped", **row} for row in missing_rows(cohorts["spec_of"])]
    outcomes = read_csv(both / "report" / "outcomes.csv")
    assert list(outcomes[0])[:2] == ["partial", "cohort"]
    mark = f"{FINISHED} of {PLANNED} planned arms, cohort aborted"
    assert {r["cohort"] for r in outcomes if r["partial"] == mark} == {"stopped"}
    assert {r["cohort"] for r in outcomes if r["partial"] == ""} == {"done"}


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_PANEL = f"scripted:{EXAMPLES / 'models' / 'scripted-panel.yaml'}"


def _seven_cases(tmp_path: Path) -> Path:
    """mac-1 … mac-7, the example diagnostic case under each id (a --limit in string order would differ)."""
    import yaml

    source = yaml.safe_load((EXAMPLES / "cases" / "diagnostic-myocarditis.yaml").read_text())
    folder = tmp_path / "cases"
    folder.mkdir()
    for n in (1, 2, 3, 4, 5, 6, 7, 10, 11):
        (folder / f"mac-{n}.json").write_text(json.dumps({**source, "id": f"mac-{n}"}))
    return folder


def _read_as_killed(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """view of the folder as a killed cohort leaves it: its last arms.csv row gone, its manifest running."""
    rows = read_csv(run_dir / "arms.csv")
    write_rows(run_dir / "arms.csv", rows[:-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    capsys.readouterr()
    code = main(["view", str(run_dir), "--out", str(run_dir / "view-killed")])
    return code, capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(("flags", "cases", "variants", "replicates"), [
    # the first 3 of 9 in natural order; consilium and single, both formats each: 4 variants
    (["--limit", "3", "--protocol", "consilium,single"], 3, 4, 1),
    # 2 of 9 drawn with seed 5; free-form only, in both protocols
    (["--sample", "2", "--seed", "5", "--protocol", "consilium,single", "--formats", "free-form"], 2, 2, 1),
    # an experiment file's 3 replicates, of the first 2 cases, the consilium's free-form
    (["--limit", "2", "--formats", "free-form", "--experiment", "EXPERIMENT"], 2, 1, 3),
])
def test_the_plan_holds_only_the_cases_replicates_and_variants_the_cohort_took(
        flags: list[str], cases: int, variants: int, replicates: int, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A complete cohort that took some of its cases (--limit, --sample) is not partial: its plan is the cases
    it took, not the folder's nine; with every protocol's variants and every replicate. One arm gone, it is
    one short of that plan."""
    folder = _seven_cases(tmp_path)
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("replicates: 3\n")
    flags = [str(experiment) if flag == "EXPERIMENT" else flag for flag in flags]
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(folder), "--model", EXAMPLE_PANEL, *flags, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    planned = cases * variants * replicates  # one panel model
    assert len(read_csv(run_dir / "arms.csv")) == planned
    capsys.readouterr()
    assert main(["view", str(run_dir)]) == 0
    assert "partial" not in capsys.readouterr().out
    code, said = _read_as_killed(run_dir, capsys)
    assert code == 1
    assert said.startswith(f"partial cohort: {planned - 1} of {planned} planned arms finished (status: aborted: "
                           f"{KILLED}"), said
    assert said.endswith("1 planned arms missing (listed on the index)")


def test_a_shard_folder_plans_only_its_own_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each shard of --limit 5 holds some of the five cases; each shard folder is complete against its own
    plan, and the two plans together are the five cases' arms (both formats), as the merged folder's is."""
    folder = _seven_cases(tmp_path)
    shards = []
    for shard in ("1/2", "2/2"):
        out = tmp_path / f"shard-{shard[0]}"
        assert main(["cohort", "--cases", str(folder), "--model", EXAMPLE_PANEL, "--limit", "5", "--shard", shard,
                     "--out", str(out)]) == 0
        [run_dir] = list(out.iterdir())
        shards.append(run_dir)
    sizes = [len(read_csv(run_dir / "arms.csv")) for run_dir in shards]
    assert sum(sizes) == 5 * 2 and all(sizes)  # every case of the five in one shard or the other
    merged = tmp_path / "merged"
    assert main(["cohort", "merge", str(shards[0]), str(shards[1]), "--out", str(merged)]) == 0
    for run_dir in [*shards, merged]:
        capsys.readouterr()
        assert main(["view", str(run_dir)]) == 0, run_dir
        assert "partial" not in capsys.readouterr().out
    for run_dir, size in ((shards[0], sizes[0]), (merged, 10)):
        code, said = _read_as_killed(run_dir, capsys)
        assert code == 1 and said.startswith(f"partial cohort: {size - 1} of {size} planned arms finished"), said
    # A shard resumed (its own command path) says so first too, and ends complete against its plan.
    assert main(["cohort", "--resume", str(shards[0])]) == 0
    assert capsys.readouterr().err.splitlines()[0].startswith(
        f"resuming: partial cohort: {sizes[0] - 1} of {sizes[0]} planned arms finished (status: aborted: {KILLED}")
    assert main(["view", str(shards[0])]) == 0


def figure_marks(folder: Path) -> dict[str, tuple[str | None, bool]]:
    """Each figure under ``folder``: its PNG's Description, and whether its PDF's Subject is the mark."""
    from PIL import Image

    found = {}
    for png in sorted(folder.rglob("*.png")):
        with Image.open(png) as image:
            text = image.text.get("Description")  # type: ignore[attr-defined]
        pdf = png.with_suffix(".pdf")
        subject = f"/Subject ({text})".encode() in pdf.read_bytes() if text and pdf.is_file() else False
        found[png.relative_to(folder).as_posix()] = (text, subject)
    return found


def test_a_partial_cohorts_figures_carry_its_mark_and_a_complete_ones_none(
        cohorts: dict[str, Any], read: dict[tuple[str, str], Said]) -> None:
    """compare's and report's figures are marked as their tables' titles are: drawn in a corner, and in each
    file's metadata (the PNG's Description, the PDF's Subject), so an image copied out still says so."""
    mark = f"partial: {FINISHED} of {PLANNED} planned arms, cohort aborted"
    for command in ("compare", "report"):
        assert read[("stopped", command)][0] == 1, command
        marks = figure_marks(cohorts["stopped"] / command)
        assert len(marks) >= 5, command
        assert set(marks.values()) == {(mark, True)}, (command, marks)
        assert read[("complete", command)][0] == 0, command
        marks = figure_marks(cohorts["complete"] / command)
        assert len(marks) >= 5 and set(marks.values()) == {(None, False)}, (command, marks)


def _copy(cohorts: dict[str, Any], name: str) -> Path:
    stopped: Path = cohorts["stopped"]
    folder: Path = cohorts["tmp"] / name / stopped.name
    shutil.copytree(stopped, folder, ignore=shutil.ignore_patterns("compare", "report", "view"))
    return folder


def _marked_report(text: str, mark: str) -> None:
    """The notice right under the title, the missing arms listed, every other ``## `` heading marked."""
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    assert lines[title + 2].startswith(f"**Partial cohort: {FINISHED} of {PLANNED} planned arms finished "
                                       f"(status: aborted: {KILLED}"), lines[title: title + 3]
    assert f"## Missing arms: {len(NEVER_RAN)}" in lines
    for heading in headings(text):
        assert heading.startswith("## Missing arms") or heading.endswith(f"[{mark}]"), heading


def test_jury_ablate_and_calibrate_of_a_partial_cohort_say_so_and_mark_their_tables(
        cohorts: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """The other commands reading a cohort's finished arms: their first line, their markdown's notice and
    headings, a partial column first in every CSV, and their figures."""
    mark = f"partial: {FINISHED} of {PLANNED} planned arms, cohort aborted"
    line = f"partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted: {KILLED}"
    tmp = cohorts["tmp"]

    folder = _copy(cohorts, "jury")  # judged again by a jury of two: the fixture's judge, and a copy of it
    other = tmp / "judge-copy.json"
    other.write_text(json.dumps({**json.loads(cohorts["judge"].read_text()), "model": "fixture-judge-2"}))
    assert main(["judge", str(folder), "--rubric", "ai-consilium", "--judge-model", f"scripted:{cohorts['judge']}",
                 "--judge-model", f"scripted:{other}", "--no-cache", "--force"]) == 0
    capsys.readouterr()
    assert main(["jury", str(folder), "--rubric", "ai-consilium"]) == 0
    assert capsys.readouterr().out.startswith(line)
    _marked_report((folder / "jury" / "jury.ai-consilium.md").read_text(encoding="utf-8"), mark)
    csvs = list((folder / "jury").glob("*.csv"))
    assert len(csvs) >= 4 and all({r["partial"] for r in read_csv(p)} == {mark.removeprefix("partial: ")}
                                  and next(iter(read_csv(p)[0])) == "partial" for p in csvs)
    assert set(figure_marks(folder / "jury").values()) == {(mark, True)}

    folder = _copy(cohorts, "ablate")
    assert main(["ablate", str(folder), "--kind", "no-deliberation", "--bootstrap", str(DRAWS), "--out",
                 str(tmp / "ablation")]) == 0
    said = capsys.readouterr().out
    assert said.startswith(line)
    report = (tmp / "ablation" / "report.md").read_text(encoding="utf-8")
    _marked_report(report, mark)
    assert f"- {line}" in report and "the pairs are of its finished arms only" in report
    for path in (tmp / "ablation").glob("*.csv"):
        rows = read_csv(path)
        assert not rows or next(iter(rows[0])) == "partial", path.name
    assert {r["partial"] for r in read_csv(tmp / "ablation" / "stats.csv")} == {mark.removeprefix("partial: ")}

    folder = _copy(cohorts, "calibrate")
    ratings = tmp / "ratings.csv"
    ratings.write_text("case_id,model,variant,component,criterion,rater,score\n" + "".join(
        f"{case},panel-a,free-form,conclusion,c{c},{rater},{(n + c + len(rater)) % 4}\n"
        for n, case in enumerate(CASES) for c in (1, 2) for rater in ("a", "bb")), encoding="utf-8")
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(folder), "--rubric",
                 "ai-consilium", "--bootstrap", str(DRAWS)]) == 0
    assert capsys.readouterr().out.startswith(line)
    text = (folder / "calibration" / "agreement.md").read_text(encoding="utf-8")
    assert text.startswith(f"# Judge vs physicians: ai-consilium [{mark}]\n\n- {line}")
    assert main(["calibrate", "isotonic", "--ratings", str(ratings), "--judgements", str(folder), "--rubric",
                 "ai-consilium"]) == 0
    assert capsys.readouterr().out.startswith(line)
    text = (folder / "calibration" / "isotonic.ai-consilium.md").read_text(encoding="utf-8")
    assert text.startswith(f"# Isotonic calibration: ai-consilium [{mark}]\n\n{line}")


def test_a_resume_says_first_how_much_of_its_plan_the_folder_holds(
        cohorts: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A killed cohort resumed: one line before its arms run; the resumed cohort is complete (the failed arm
    stays a failure, so the cohort exits 1 and is not partial)."""
    folder = _copy(cohorts, "resume")
    capsys.readouterr()
    assert main(["cohort", "--resume", str(folder)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"resuming: partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted: "
                      f"{KILLED} (its process was killed, or its machine went down)); {len(NEVER_RAN)} planned arms "
                      "missing"), err[:2]
    assert len(read_csv(folder / "arms.csv")) == PLANNED
    assert main(["view", str(folder)]) == 0
    assert "partial" not in capsys.readouterr().out


def test_the_api_reports_a_partial_cohort_without_raising(cohorts: dict[str, Any],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """consilium.compare and consilium.report write the same files as the commands and return normally; the
    compared result says partial, the report's text starts with the notice."""
    import consilium

    tmp = cohorts["tmp"] / "api"
    compared = consilium.compare(cohorts["stopped"], out=tmp / "compare", bootstrap=DRAWS)
    assert compared.partial
    assert all(title.endswith(f"[partial: {FINISHED} of {PLANNED} planned arms, cohort aborted]")
               for title, _ in compared.tables.values())
    report = consilium.report(cohorts["stopped"], out=tmp / "report", bootstrap=DRAWS).report
    assert report.read_text(encoding="utf-8").splitlines()[2].startswith(
        f"**Partial cohort: {FINISHED} of {PLANNED} planned arms finished (status: aborted")
    assert not consilium.compare(cohorts["complete"], out=tmp / "complete", bootstrap=DRAWS).partial
    capsys.readouterr()
