"""A plugin protocol's own variant kind in a cohort, with no edit to consilium: its flag ``--<kind>``, its key in
an experiment file and its API keyword select its variants; a variant it lacks is refused in one line naming the
protocol and its variants; and ``cohort --estimate`` counts its calls from its declaration
(tests/support/plugins/consilium_second_look.py: the kind ``tempos``, brisk and unhurried)."""

from __future__ import annotations

import csv
import json
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.plugin_install import ROOT, install_plugin, run_commands, run_python

PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
LOOK_ENTRY = "[consilium.protocols]\nsecond-look = consilium_second_look:PROTOCOL\n"
#: What an unknown tempo is told, wherever it was given.
RUNS_IN = "unknown tempo(s) presto (second-look runs in brisk, unhurried)"


@dataclass(frozen=True)
class Runs:
    root: Path
    by_flag: Path  # cohort --tempos unhurried
    by_file: Path  # an experiment file's tempos: [brisk]
    over_file: Path  # that file with --tempos unhurried beside it
    bad_flag: subprocess.CompletedProcess[str]  # --tempos presto
    bad_file: subprocess.CompletedProcess[str]  # tempos: [presto]
    bad_experiment: Path
    resumed: subprocess.CompletedProcess[str]  # the --tempos cohort resumed with its own tempo
    changed: subprocess.CompletedProcess[str]  # … and with another
    estimate: dict[str, list[list[object]]]  # the API's estimate of the plugin's cohort in every tempo, and brisk


def _experiment(path: Path, tempos: str) -> Path:
    path.write_text(f"protocol: second-look\ntempos: {tempos}\ncases: cases\nmodels: ['{PANEL}']\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("plugin-variants")
    plugins = install_plugin(root / "site", "consilium_second_look", LOOK_ENTRY)
    (root / "cases").mkdir()
    name = "diagnostic-myocarditis.yaml"
    (root / "cases" / name).write_text((ROOT / "examples" / "cases" / name).read_text(encoding="utf-8"),
                                       encoding="utf-8")
    good, bad = _experiment(root / "look.yaml", "[brisk]"), _experiment(root / "bad.yaml", "[presto]")
    cases = str(root / "cases")
    by_flag, by_file, over_file, bad_flag, bad_file = run_commands(
        plugins,
        ["cohort", "--cases", cases, "--protocol", "second-look", "--tempos", "unhurried", "--model", PANEL,
         "--no-cache", "--out", str(root / "flag")],
        ["cohort", "--experiment", str(good), "--no-cache", "--out", str(root / "file")],
        ["cohort", "--experiment", str(good), "--tempos", "unhurried", "--no-cache", "--out", str(root / "over")],
        ["cohort", "--cases", cases, "--protocol", "second-look", "--tempos", "presto", "--model", PANEL,
         "--out", str(root / "bad")],
        ["cohort", "--experiment", str(bad), "--out", str(root / "bad")])
    assert by_flag.returncode == 0, by_flag.stderr
    assert by_file.returncode == 0, by_file.stderr
    assert over_file.returncode == 0, over_file.stderr
    estimated = run_python(plugins, f'''
        import json
        from consilium.api import estimate_cohort
        rows = lambda e: [[r.part, r.variant, r.stage, r.calls.expected, r.calls.low, r.calls.high] for r in e.rows]
        every = estimate_cohort({cases!r}, protocols=["second-look"], models=[{PANEL!r}])
        brisk = estimate_cohort({cases!r}, protocols=["second-look"], models=[{PANEL!r}], tempos="brisk")
        print(json.dumps({{"every": rows(every), "brisk": rows(brisk)}}))
    ''')
    assert estimated.returncode == 0, estimated.stderr
    [flag_dir], [file_dir], [over_dir] = (list((root / name).iterdir()) for name in ("flag", "file", "over"))
    resumed, changed = run_commands(plugins, ["cohort", "--resume", str(flag_dir), "--tempos", "unhurried"],
                                    ["cohort", "--resume", str(flag_dir), "--tempos", "brisk"])
    return Runs(root, flag_dir, file_dir, over_dir, bad_flag, bad_file, bad, resumed, changed,
                json.loads(estimated.stdout.splitlines()[-1]))


def _arms(run_dir: Path) -> list[tuple[str, str, str]]:
    rows = csv.DictReader((run_dir / "arms.csv").read_text(encoding="utf-8").splitlines())
    return [(r["protocol"], r["format"], r["status"]) for r in rows]


def test_a_plugin_kinds_flag_and_experiment_key_select_its_variants(runs: Runs) -> None:
    assert _arms(runs.by_flag) == [("second-look", "look-unhurried", "completed")]
    assert _arms(runs.by_file) == [("second-look", "look-brisk", "completed")]
    flag = json.loads((runs.by_flag / "manifest.json").read_text(encoding="utf-8"))
    assert flag["settings"]["variants"] == ["unhurried"] and flag["spec"]["variants"] == {"tempos": ["unhurried"]}
    file = json.loads((runs.by_file / "manifest.json").read_text(encoding="utf-8"))
    assert file["settings"]["variants"] == ["brisk"] and file["spec"]["variants"] == {"tempos": ["brisk"]}
    # the flag beside the file wins, and the manifest says it overrode the file
    assert _arms(runs.over_file) == [("second-look", "look-unhurried", "completed")]
    over = json.loads((runs.over_file / "manifest.json").read_text(encoding="utf-8"))
    assert over["settings"]["experiment"]["overridden"] == ["--tempos"]


def test_an_unknown_variant_of_a_plugin_kind_is_one_line_naming_the_protocol_and_its_variants(runs: Runs) -> None:
    for done, where in ((runs.bad_flag, "--tempos"), (runs.bad_file, f"{runs.bad_experiment}: tempos")):
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.strip() == f"consilium: error: {where}: {RUNS_IN}"
    assert not (runs.root / "bad").exists()


def test_a_resume_holds_a_plugin_kinds_variants_to_the_cohorts(runs: Runs) -> None:
    assert runs.resumed.returncode == 0, runs.resumed.stderr
    assert runs.changed.returncode == 2 and runs.changed.stderr.strip() == (
        f"consilium: error: --tempos: 'brisk' differs from the resumed cohort's 'unhurried' ({runs.by_flag}/"
        "manifest.json); a resumed cohort keeps its settings (start a new cohort to change them)")
    assert _arms(runs.by_flag) == [("second-look", "look-unhurried", "completed")]


def test_a_plugin_protocols_estimate_is_what_its_cohort_made(runs: Runs) -> None:
    """Its declared bounds: each tempo's own role assignment (1 call, up to min_roles 3 with every answer
    repaired twice: 9) and one look in prose (exactly 1, never repaired); its scripted cohorts made the fewest,
    counted here from their trace files."""
    made: Counter[tuple[str, str]] = Counter()
    for run_dir in (runs.by_flag, runs.by_file):
        for path in run_dir.rglob("*.trace.json"):
            trace = json.loads(path.read_text(encoding="utf-8"))
            made.update((trace["tempo"], call["stage"]) for call in trace["calls"])
    assert made == {("brisk", "role_assignment"): 1, ("brisk", "second_look"): 1,
                    ("unhurried", "role_assignment"): 1, ("unhurried", "second_look"): 1}
    panel = {(variant, stage): (expected, low, high)
             for part, variant, stage, expected, low, high in runs.estimate["every"] if part == "panel"}
    assert panel == {("brisk", "role_assignment"): (None, 1, 9), ("brisk", "second_look"): (1, 1, 1),
                     ("unhurried", "role_assignment"): (None, 1, 9), ("unhurried", "second_look"): (1, 1, 1)}
    assert {key: low for key, (_, low, _) in panel.items()} == made
    # the API keyword names the kind, as the flag and the experiment key do
    assert {row[1] for row in runs.estimate["brisk"]} == {"brisk"}
