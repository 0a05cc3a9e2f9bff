"""Every command of README.md's "Commands" table runs with the shipped scripted panel.

The table is read from README.md: each row's ``python -m consilium …`` cell is named by its words up to the first
placeholder (``PATH``, ``RUN_DIR``, ``[--flag …]``, ``…``), each ``a\\|b`` alternative on its own, e.g.
``simulate --case``, ``calibrate agreement --ratings``, ``cases import agentclinic``. Each name has a concrete
argv here (the shipped example cases, the scripted panel as every model, a judged scripted cohort made in the
test), run with ``consilium.cli.main``: exit 0 and its main output there. A row whose name has no argv here fails,
so a new README command gets one.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ROOT / "examples" / "cases"
MYOCARDITIS = CASES / "diagnostic-myocarditis.yaml"
NSCLC = CASES / "tumor-board-nsclc.yaml"
MAPPINGS = ROOT / "examples" / "mappings"
EXPERIMENT = ROOT / "configs" / "experiments" / "replicates-scripted.yaml"


def _is_placeholder(word: str) -> bool:
    """``PATH``, ``RUN_DIR|TRACE``, ``FILE.jsonl``, ``[--out DIR]``, ``TRACE…``, ``…``: not a command word."""
    return word.startswith("[") or "…" in word or any(re.search(r"[A-Z]", part) for part in word.split("|"))


def command_names(command: str) -> list[str]:
    """A README command (after ``python -m consilium``) as the names it stands for: its words up to the first
    placeholder, one name per combination of ``a|b`` alternatives."""
    words: list[list[str]] = []
    for word in command.replace("\\|", "|").split():
        if _is_placeholder(word):
            break
        words.append(word.split("|"))
    return [" ".join(combination) for combination in itertools.product(*words)]


def readme_commands() -> list[tuple[str, str]]:
    """(name, the row's command) for every row of the "Commands" table, in the README's order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        match = re.match(r"\| `python -m consilium (.*?)` \|", line)
        if match:
            found += [(name, match.group(1)) for name in command_names(match.group(1))]
    return found


@dataclass
class World:
    """What the commands are run on: a scratch folder, a judged scripted cohort of four cases, a simulate
    run and one of its traces, physician ratings of the cohort's cases."""

    tmp: Path
    cohort: Path
    simulate: Path
    trace: Path
    ratings: Path


def _made(out: Path, argv: list[str]) -> Path:
    """Run ``argv`` (its ``--out`` is ``out``) and return the one run folder it made there."""
    before = set(out.iterdir()) if out.is_dir() else set()
    assert main([*argv, "--out", str(out)]) == 0, argv
    [made] = set(out.iterdir()) - before
    return made


@pytest.fixture(scope="module")
def world(tmp_path_factory: Any) -> World:
    tmp = tmp_path_factory.mktemp("readme")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONSILIUM_CACHE", "off")
        cases = tmp / "cases"
        cases.mkdir()
        for n in range(4):  # four cases: isotonic calibration fits on half of them and checks on the others
            (cases / f"case-{n}.yaml").write_text(MYOCARDITIS.read_text(encoding="utf-8").replace(
                "id: diagnostic-myocarditis", f"id: case-{n}"), encoding="utf-8")
        cohort = _made(tmp / "cohorts", ["cohort", "--cases", str(cases), "--model", PANEL, "--formats",
                                         "free-form", "--judge", "ai-consilium", "--judge-model", PANEL])
        simulate = _made(tmp / "runs", ["simulate", "--case", str(MYOCARDITIS), "--model", PANEL, "--format",
                                        "structured"])
    ratings = tmp / "ratings.csv"
    ratings.write_text("case_id,component,criterion,rater,score\n" + "".join(
        f"case-{n},conclusion,c{c},{rater},{1 + (n + c) % 3}\n"
        for n in range(4) for c in (1, 2) for rater in ("a", "b")), encoding="utf-8")
    [trace] = list(simulate.glob("*.trace.json"))
    return World(tmp=tmp, cohort=cohort, simulate=simulate, trace=trace, ratings=ratings)


#: What a command's run is checked by: the file it must have written (a glob under the world's scratch
#: folder, or a path), or a text its output must hold.
Check = Callable[[World, Path, str], None]


def wrote(pattern: str) -> Check:
    """The command wrote a file matching ``pattern`` under its own output folder."""
    def check(world: World, out: Path, printed: str) -> None:
        assert sorted(out.glob(pattern)), f"nothing matching {pattern} under {out}"
    return check


def printed(text: str) -> Check:
    def check(world: World, out: Path, output: str) -> None:
        assert text in output, f"{text!r} not in the output"
    return check


@dataclass
class Run:
    """One concrete command line (given the world and a fresh output folder) and its check."""

    argv: Callable[[World, Path], list[str]]
    check: Check
    #: A command that runs until stopped (serve): started as a process, its first page fetched, then stopped.
    server: bool = False


def _agentclinic(world: World) -> str:
    path = world.tmp / "agentclinic.jsonl"
    path.write_text(json.dumps({"OSCE_Examination": {
        "Objective_for_Doctor": "Diagnose the cough.",
        "Patient_Actor": {"Demographics": "30-year-old man", "History": "Cough for a week."},
        "Correct_Diagnosis": "Acute bronchitis"}}) + "\n", encoding="utf-8")
    return str(path)


def _copy_of(folder: Path, into: Path) -> Path:
    """A copy of a run folder, for a command that writes into it (so the others see it as made)."""
    import shutil

    return Path(shutil.copytree(folder, into / folder.name))


def _jury_folder(world: World, out: Path) -> str:
    """A copy of the simulate run judged by a jury of two scripted judges (the shipped panel, and a copy of it
    under another name)."""
    folder = _copy_of(world.simulate, out)
    other = out / "other-panel.yaml"
    other.write_bytes((ROOT / "examples" / "models" / "scripted-panel.yaml").read_bytes())
    assert main(["judge", str(folder), "--rubric", "ai-consilium", "--judge-model", PANEL, "--judge-model",
                 f"scripted:{other}"]) == 0
    return str(folder)


def _calibrate(kind: str, *more: str) -> Run:
    return Run(lambda w, out: ["calibrate", kind, "--ratings", str(w.ratings), "--judgements", str(w.cohort),
                               "--rubric", "ai-consilium", "--out", str(out), *more],
               wrote("agreement.csv" if kind == "agreement" else f"{kind}.ai-consilium.*"))


#: The README's command names → the command lines that stand for them.
RUNS: dict[str, list[Run]] = {
    "simulate --case": [Run(lambda w, out: ["simulate", "--case", str(MYOCARDITIS), "--model", PANEL,
                                            "--format", "both", "--max-rounds", "3", "--seed", "1", "--out", str(out)],
                            wrote("*/manifest.json"))],
    # The shipped panel's moderator names free-text roles ("Internist"): --role-labels catalogue would refuse them.
    "simulate": [Run(lambda w, out: ["simulate", "--case", str(MYOCARDITIS), "--model", PANEL, "--role-labels",
                                     "free", "--out", str(out)], wrote("*/*.trace.json"))],
    "simulate --human": [Run(lambda w, out: ["simulate", "--case", str(MYOCARDITIS), "--model", PANEL, "--human",
                                             "Cardiologist", "--answers",
                                             str(ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"),
                                             "--out", str(out)], wrote("*/*.structured.trace.json"))],
    "board": [Run(lambda w, out: ["board", "--case", str(NSCLC), "--model", PANEL, "--mode", "single",
                                  "--role-labels", "free", "--out", str(out)], wrote("*/*.trace.json"))],
    "cohort": [Run(lambda w, out: ["cohort", "--cases", str(MYOCARDITIS), "--model", PANEL, "--protocol", "single",
                                   "--role-labels", "free", "--out", str(out)], wrote("*/arms.csv"))],
    "cohort --cases": [Run(lambda w, out: ["cohort", "--cases", str(CASES), "--model", PANEL, "--limit", "2",
                                           "--concurrency", "2", "--judge", "otb-conclusion-alignment",
                                           "--judge-model", PANEL, "--out", str(out)], wrote("*/judgements.csv"))],
    "cohort --experiment configs/experiments/replicates-scripted.yaml": [
        Run(lambda w, out: ["cohort", "--experiment", str(EXPERIMENT), "--out", str(out)],
            wrote("*/judgements.csv"))],
    "compare": [Run(lambda w, out: ["compare", str(w.cohort), "--bootstrap", "100", "--out", str(out)],
                    wrote("compare.md"))],
    "report": [Run(lambda w, out: ["report", str(w.cohort), "--bootstrap", "100", "--out", str(out)],
                   wrote("report.md"))],
    "export": [Run(lambda w, out: ["export", str(w.cohort), "--to", "jsonl", "--out", str(out)],
                   wrote("arms.jsonl"))],
    "view": [Run(lambda w, out: ["view", str(_copy_of(w.cohort, out))], wrote("*/view/index.html"))],
    "analyze": [Run(lambda w, out: ["analyze", str(w.cohort), "--out", str(out)], wrote("categories.csv"))],
    "ablate": [Run(lambda w, out: ["ablate", str(w.cohort), "--kind", "no-deliberation", "--bootstrap", "100",
                                   "--out", str(out / "ablation")], wrote("ablation/stats.csv"))],
    # --max-turns 12 or more: below, the shipped panel's moderator asks where only `pass` is allowed.
    "board --case": [Run(lambda w, out: ["board", "--case", str(NSCLC), "--mode", "agents", "--max-turns", "16",
                                         "--model", PANEL, "--out", str(out)], wrote("*/*.board-agents.trace.json"))],
    "turn --case": [Run(lambda w, out: ["turn", "--case", str(NSCLC), "--role", "Radiation oncologist",
                                        "--question", "Is the patient a candidate for chemoradiotherapy?",
                                        "--model", PANEL, "--out", str(out)], wrote("*/*.trace.json"))],
    "judge": [Run(lambda w, out: ["judge", str(_copy_of(w.simulate, out)), "--rubric", "otb-conclusion-alignment",
                                  "--judge-model", PANEL, "--component", "conclusion"],
                  wrote("*/*.judge.otb-conclusion-alignment.json"))],
    "jury": [Run(lambda w, out: ["jury", _jury_folder(w, out), "--rubric", "ai-consilium"],
                 wrote("*/jury/jury.ai-consilium.alpha.csv"))],
    "serve": [Run(lambda w, out: ["serve", str(w.cohort)], printed("summary"), server=True)],
    "study create": [Run(lambda w, out: ["study", "create", str(_copy_of(w.cohort, out)), "--rubric", "ai-consilium",
                                         "--raters", "ana,ben", "--per-output", "2"], printed("/login/"))],
    "calibrate agreement --ratings": [_calibrate("agreement", "--bootstrap", "100")],
    "calibrate isotonic --ratings": [_calibrate("isotonic")],
    "calibrate evolve --ratings": [_calibrate("evolve", "--judge-model", PANEL, "--optimiser-model", PANEL,
                                              "--criterion", "c1", "--population", "2", "--generations", "1",
                                              "--repeats", "1")],
    "replay": [Run(lambda w, out: ["replay", str(w.trace)], printed("identical")),
               Run(lambda w, out: ["replay", str(w.cohort)], printed("identical"))],
    "schema trace": [Run(lambda w, out: ["schema", "trace"], printed('"$defs"'))],
    "cases validate": [Run(lambda w, out: ["cases", "validate", *map(str, sorted(CASES.glob("*.yaml")))],
                           printed(" 0 invalid"))],
    "cases import agentclinic": [Run(lambda w, out: ["cases", "import", "agentclinic", _agentclinic(w), "--out",
                                                     str(out)], wrote("*.json"))],
    "cases import table": [Run(lambda w, out: ["cases", "import", "table", str(MAPPINGS / "medqa-sample.jsonl"),
                                               "--mapping", str(MAPPINGS / "medqa-jsonl.yaml"), "--out", str(out)],
                               wrote("*"))],
    "models check": [Run(lambda w, out: ["models", "check", "--model", PANEL], printed("structured"))],
}

#: Each name once (two rows may share one: ``replay TRACE…`` and ``replay RUN_DIR…``), with its first row.
FIRST_ROWS: dict[str, str] = {}
for _name, _command in readme_commands():
    FIRST_ROWS.setdefault(_name, _command)
COMMANDS = list(FIRST_ROWS.items())


def test_a_row_is_named_by_its_words_up_to_the_first_placeholder() -> None:
    assert command_names("cases import agentclinic FILE.jsonl --out DIR") == ["cases import agentclinic"]
    assert command_names("calibrate agreement\\|isotonic --ratings FILE") == ["calibrate agreement --ratings",
                                                                              "calibrate isotonic --ratings"]
    assert command_names("simulate\\|board … --role-labels catalogue\\|free") == ["simulate", "board"]
    # A new command, or a new required flag of one, is a new name: without a command line here, its row fails.
    assert command_names("simulate --new-thing ROLE [--out DIR]") == ["simulate --new-thing"]
    assert "simulate --new-thing" not in RUNS


def test_the_readme_has_its_commands_table() -> None:
    names = [name for name, _ in COMMANDS]
    assert len(names) >= 20 and "simulate --case" in names and "cases import agentclinic" in names


@pytest.mark.localhost  # serve's first page, from the server it starts on 127.0.0.1
@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_each_readme_command_runs_with_the_scripted_panel(name: str, command: str, world: World, capsys: Any,
                                                          monkeypatch: Any, tmp_path: Path) -> None:
    assert name in RUNS, (f"README.md's command `python -m consilium {command}` ({name!r}) has no command line "
                          "in tests/project/test_readme_commands.py: add one to RUNS")
    _run_each(name, world, capsys, monkeypatch, tmp_path)


#: Command lines ready for commands the README does not name yet (rows other sessions are adding).
UNNAMED = [name for name in RUNS if name not in FIRST_ROWS]


@pytest.mark.parametrize("name", UNNAMED)
def test_the_command_lines_ready_for_rows_to_come_run_too(name: str, world: World, capsys: Any, monkeypatch: Any,
                                                          tmp_path: Path) -> None:
    _run_each(name, world, capsys, monkeypatch, tmp_path)


def _run_each(name: str, world: World, capsys: Any, monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("CONSILIUM_CACHE", "off")
    monkeypatch.chdir(tmp_path)  # anything written by default (runs/) stays in the test's folder
    for number, run in enumerate(RUNS[name]):
        out = tmp_path / f"out-{number}"
        argv = run.argv(world, out)
        if run.server:
            run.check(world, out, _first_page(argv, tmp_path))
            continue
        capsys.readouterr()
        code = main(argv)
        output = capsys.readouterr().out
        assert code == 0, f"{argv} exited {code}"
        run.check(world, out, output)


def _first_page(argv: list[str], folder: Path) -> str:
    """Start a server command as users do (a process on a free port), open the administrator's link it prints
    (following its redirect with the session cookie) and return that page; the server is stopped after."""
    import http.cookiejar
    import re
    import subprocess
    import sys
    import urllib.request

    with (folder / "server.log").open("w") as log:
        process = subprocess.Popen([sys.executable, "-m", "consilium", *argv, "--port", "0"], stdout=subprocess.PIPE,
                                   stderr=log, text=True)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            found = re.search(r"\(administrator: (http://127\.0\.0\.1:\d+/login/\S+)\)$", line.strip())
            assert found, f"{argv}: printed {line!r}"
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
            with opener.open(found[1], timeout=30) as response:
                return str(response.read().decode("utf-8"))
        finally:
            process.terminate()
            process.wait(10)
