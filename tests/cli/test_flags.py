"""One flag for one idea, spelled the same on every command: ``--concurrency`` with a default
by backend, ``--formats`` on simulate and cohort, the run settings on cohort as on simulate, ``-v`` and
``--log-file`` after the subcommand, and ``replay RUN_DIR``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from consilium.cli import build_parser, main
from consilium.cli.options import model_options
from consilium.spec.manifest import read_manifest

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"


def _cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir(parents=True)
    shutil.copy(CASE, folder / CASE.name)
    return folder


def _cohort(tmp_path: Path, *flags: str) -> Path:
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(_cases(tmp_path)), "--model", PANEL, "--out", str(out), *flags]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def _options(*argv: str) -> int:
    args = build_parser().parse_args(["simulate", "--case", str(CASE), *argv])
    return model_options(args).max_concurrency


@pytest.mark.parametrize("spec, expected", [
    ("embedded", 1), ("gguf:/models/m.gguf", 1), ("openai:gpt-4o", 16), ("vllm:m", 16), (PANEL, 4)])
def test_the_default_concurrency_suits_the_backend(spec: str, expected: int) -> None:
    assert _options("--model", spec) == expected
    assert _options("--model", spec, "--concurrency", "7") == 7


def test_max_concurrency_is_the_old_spelling_of_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    assert _options("--model", "openai:m", "--max-concurrency", "3") == 3
    assert "--max-concurrency is deprecated, use --concurrency" in capsys.readouterr().err


def test_help_names_the_default_by_backend(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["simulate"], ["cohort"], ["judge"], ["models", "check"]):
        assert main([*command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "--concurrency N" in text and "default: by backend: embedded 1, gguf 1, openai 16, vllm 16" in text
        assert "--max-concurrency" not in text


def test_a_cohort_records_the_concurrency_it_resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = read_manifest(_cohort(tmp_path, "--formats", "structured")).settings
    assert settings.concurrency == 4 and settings.model.max_concurrency == 4  # scripted: the general default
    old = read_manifest(_cohort(tmp_path / "old", "--formats", "structured", "--max-concurrency", "2")).settings
    assert old.concurrency == 2 and "deprecated, use --concurrency" in capsys.readouterr().err


def test_simulate_takes_formats_as_cohort_does(tmp_path: Path) -> None:
    for flag, value, written in (("--formats", "structured", ["structured"]),
                                 ("--format", "free-form", ["free-form"]),
                                 ("--formats", "free-form,structured", ["free-form", "structured"])):
        out = tmp_path / value
        assert main(["simulate", "--case", str(CASE), "--model", PANEL, flag, value, "--out", str(out)]) == 0
        traces = sorted(p.name for p in out.rglob("*.trace.json"))
        assert [name.split(".")[1] for name in traces] == written


def test_cohort_takes_format_as_well(tmp_path: Path) -> None:
    run_dir = _cohort(tmp_path, "--format", "free-form")
    assert read_manifest(run_dir).settings.variants == ["free-form"]


def test_cohort_takes_the_run_settings_simulate_takes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _cohort(tmp_path, "--formats", "structured", "--seed", "7", "--temperature", "0.3",
                      "--max-rounds", "2")
    config = read_manifest(run_dir).settings.configs["consilium"]
    assert (config["seed"], config["temperature"], config["max_rounds"]) == (7, 0.3, 2)
    [trace] = run_dir.rglob("*.trace.json")
    recorded = json.loads(trace.read_text())["config"]
    assert (recorded["seed"], recorded["temperature"], recorded["max_rounds"]) == (7, 0.3, 2)
    # a resume that asks for another seed is refused, naming the flag
    assert main(["cohort", "--resume", str(run_dir), "--seed", "8"]) == 2
    assert "--seed" in capsys.readouterr().err
    # a setting no protocol of the cohort has is refused, as simulate refuses it
    assert main(["cohort", "--cases", str(_cases(tmp_path / "b")), "--model", PANEL, "--protocol", "single",
                 "--max-rounds", "2", "--out", str(tmp_path / "b" / "runs")]) == 2
    assert "--max-rounds: not a setting of protocol 'single'" in capsys.readouterr().err


def test_the_logging_options_go_before_or_after_the_subcommand(tmp_path: Path) -> None:
    parser = build_parser()
    before = parser.parse_args(["-v", "--log-file", "a.jsonl", "replay", "t.trace.json"])
    after = parser.parse_args(["replay", "t.trace.json", "-v", "--log-file", "b.jsonl"])
    neither = parser.parse_args(["replay", "t.trace.json"])
    nested = parser.parse_args(["calibrate", "agreement", "--ratings", "r", "--judgements", "j", "--rubric", "x",
                                "--verbose"])
    assert (before.verbose, before.log_file) == (True, "a.jsonl")  # not reset by the subcommand's parser
    assert (after.verbose, after.log_file) == (True, "b.jsonl")
    assert (neither.verbose, neither.log_file) == (False, None) and nested.verbose
    log = tmp_path / "log.jsonl"
    assert main(["simulate", "--case", str(CASE), "--model", PANEL, "--formats", "structured",
                 "--out", str(tmp_path / "runs"), "--log-file", str(log)]) == 0
    assert log.exists() and all(json.loads(line) for line in log.read_text().splitlines())


def test_replay_takes_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", PANEL, "--out", str(out)]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    capsys.readouterr()
    assert main(["replay", str(run_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(": identical (" in line for line in lines[:2])
    assert lines[2] == "2 traces: 2 identical, 0 different"
    trace = next(run_dir.glob("*.free-form.trace.json"))
    data = json.loads(trace.read_text())
    data["calls"][3]["response"] = "A different opinion."  # the moderator is then asked something else
    trace.write_text(json.dumps(data))
    assert main(["replay", str(run_dir)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert sum(": different: " in line for line in lines) == 1 and lines[-1] == "2 traces: 1 identical, 1 different"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["replay", str(empty)]) == 2
    assert "no *.trace.json files to replay" in capsys.readouterr().err


def test_cohort_takes_a_moderator_model_as_simulate_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = ROOT / "examples" / "models" / "scripted-panel.yaml"
    moderator = tmp_path / "moderator.yaml"
    moderator.write_text(shipped.read_text().replace("model: scripted-panel\n", "model: the-moderator\n", 1))
    run_dir = _cohort(tmp_path, "--formats", "structured", "--moderator-model", f"scripted:{moderator}")
    assert read_manifest(run_dir).settings.moderator_model == f"scripted:{moderator.resolve()}"
    [trace] = run_dir.rglob("*.trace.json")
    data = json.loads(trace.read_text())
    assert (data["model"], data["moderator_model"]) == ("scripted-panel", "the-moderator")
    assert main(["cohort", "--resume", str(run_dir), "--moderator-model", PANEL]) == 2
    assert "--moderator-model" in capsys.readouterr().err
