"""Run configs, experiment files, model configs and their flags are checked up front, and an error
names the file and field, or the flag exactly as the user types it."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from consilium.cli import build_parser, main
from consilium.cli.options import ModelConfigFile
from consilium.cohort.experiment import load_experiment
from consilium.datafiles import load_data_file
from consilium.errors import UserError
from consilium.graphs.board.config import BOARD_MAX_TOKENS, BoardConfig
from consilium.graphs.consilium.config import DEFAULT_MAX_TOKENS, ConsiliumConfig
from consilium.spec.run_settings import flag_name, run_config

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
# run settings with no flag: set in a --config file only (the length budgets are the protocol's, and
# "lengths" exists for replaying traces recorded before them, as "floor_schema" for board traces before 1.6)
# (panel and review are what consilium ablate changes, docs/ablations.md; cut_off and schema_failure, like
# max_repairs, are set by a file or the otb-paper presets)
FILE_ONLY = {"max_repairs", "opinion_budget_chars", "report_budget_chars", "lengths", "panel", "review",
             "floor_schema", "cut_off", "schema_failure"}
CONFIGS = (ConsiliumConfig, BoardConfig)


def options_of(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {flag for action in sub.choices[command]._actions for flag in action.option_strings}


def fields_of(model: type[BaseModel], kind: type) -> list[str]:
    return [name for name, f in model.model_fields.items() if kind in (f.annotation, *getattr(f.annotation, "__args__",
                                                                                              ()))]


def script(tmp_path: Path) -> str:
    """A scripted panel that would answer every call of a run."""
    path = tmp_path / "panel.json"
    path.write_text(json.dumps({"default": "an answer"}))
    return f"scripted:{path}"


# --- every run-config field maps to the flag the user types -------------------------------------

@pytest.mark.parametrize("command, model", [("simulate", ConsiliumConfig), ("board", BoardConfig)])
def test_every_settable_field_maps_to_a_real_flag_of_its_command(command: str, model: type[BaseModel]) -> None:
    flags = options_of(command)
    for field in set(model.model_fields) - FILE_ONLY:
        assert flag_name(field) in flags, f"{command}: field {field} maps to {flag_name(field)}, not a flag"
    assert {"--timeout", "--wall-limit"} <= options_of("cohort")


@pytest.mark.parametrize("model, field", [(m, f) for m in CONFIGS for f in sorted(set(m.model_fields) - FILE_ONLY)])
def test_run_config_names_the_flag_for_every_field(model: type[BaseModel], field: str) -> None:
    with pytest.raises(UserError) as err:
        run_config(model, None, {field: "not a value"})
    assert str(err.value).startswith(flag_name(field) + ": "), str(err.value)
    assert flag_name(field) in options_of("simulate" if model is ConsiliumConfig else "board")


@pytest.mark.parametrize("argv, expected", [
    (["cohort", "--cases", str(CASE), "--wall-limit", "0"], "--wall-limit: "),
    (["cohort", "--cases", str(CASE), "--wall-limit", "nan"], "--wall-limit: "),
    (["cohort", "--cases", str(CASE), "--timeout", "0"], "argument --timeout: "),
    (["simulate", "--case", str(CASE), "--timeout", "-3"], "argument --timeout: "),
    (["simulate", "--case", str(CASE), "--timeout", "inf"], "argument --timeout: "),
    (["simulate", "--case", str(CASE), "--wall-limit", "nan"], "argument --wall-limit: "),
    (["board", "--case", str(CASE), "--temperature", "nan"], "argument --temperature: "),
    (["simulate", "--case", str(CASE), "--temperature", "2.5"], "--temperature: "),
    (["simulate", "--case", str(CASE), "--retry-base-delay", "-0.5"], "argument --retry-base-delay: "),
    (["models", "check", "--timeout", "nan"], "argument --timeout: "),
    (["simulate", "--case", str(CASE), "--min-roles", "7"], "--min-roles: "),
    (["board", "--case", str(CASE), "--max-roles", "1"], "--max-roles: "),
])
def test_flag_errors_name_the_flag_as_typed(argv: list[str], expected: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = [] if argv[0] == "models" else ["--out", str(tmp_path / "out")]
    assert main([*argv, "--model", script(tmp_path), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    assert "--timeout-s" not in err and "--wall-limit-s" not in err
    assert not (tmp_path / "out").exists()


def test_a_clash_with_the_config_file_names_the_flag_that_caused_it(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("max_roles: 4\n")
    with pytest.raises(UserError, match=r"^--min-roles: max_roles: min_roles \(5\) exceeds max_roles \(4\)$"):
        run_config(ConsiliumConfig, config, {"min_roles": 5, "seed": 3, "temperature": 1.0})


# --- every config-file value is checked before anything runs -------------------------------------

@pytest.mark.parametrize("model", CONFIGS)
def test_every_float_setting_refuses_nan_infinity_and_booleans(model: type[BaseModel]) -> None:
    floats = fields_of(model, float)
    assert {"temperature", "timeout_s", "wall_limit_s"} <= set(floats)
    for field in floats:
        for bad in (math.nan, math.inf, -math.inf, True, "1.0"):
            with pytest.raises(ValidationError):
                model.model_validate({field: bad})


@pytest.mark.parametrize("model", CONFIGS)
def test_every_count_refuses_booleans_and_fractions(model: type[BaseModel]) -> None:
    ints = fields_of(model, int)
    assert {"seed", "min_roles", "max_roles", "max_repairs"} <= set(ints)
    for field in ints:
        for bad in (True, False, 2.0, "3"):
            with pytest.raises(ValidationError):
                model.model_validate({field: bad})
    model.model_validate({"seed": -(2**40)})  # any int is a seed


@pytest.mark.parametrize("model, stages", [(ConsiliumConfig, DEFAULT_MAX_TOKENS), (BoardConfig, BOARD_MAX_TOKENS)])
def test_max_tokens_takes_only_the_protocols_stages_with_at_least_one_token(model: type[BaseModel],
                                                                            stages: dict[str, int]) -> None:
    other = BOARD_MAX_TOKENS if stages is DEFAULT_MAX_TOKENS else DEFAULT_MAX_TOKENS
    foreign = next(s for s in other if s not in stages)
    for bad in ({"opinon": 100}, {foreign: 100}, {next(iter(stages)): 0}, {next(iter(stages)): -1},
                {next(iter(stages)): True}, {next(iter(stages)): 1.5}):
        with pytest.raises(ValidationError):
            model.model_validate({"max_tokens": bad})
    model.model_validate({"max_tokens": {stage: 1 for stage in stages}})


def test_a_misspelt_stage_names_the_file_field_and_the_stages(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("max_tokens: {opinon: 100}\n")
    with pytest.raises(UserError) as err:
        run_config(ConsiliumConfig, config, {})
    assert str(err.value) == (f"{config}: max_tokens: unknown stage 'opinon' (the stages are role_assignment, "
                              "opinion, synthesis, vote, revision)")


def test_a_zero_token_stage_is_refused_before_any_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("max_tokens: {opinion: 0}\n")
    out = tmp_path / "out"
    assert main(["simulate", "--case", str(CASE), "--model", script(tmp_path), "--config", str(config),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"consilium: error: {config}: max_tokens.opinion: Input should be greater than or equal to 1"
    assert not out.exists()


@pytest.mark.parametrize("model", CONFIGS)
def test_the_max_tokens_flag_still_sets_every_stage(model: type[ConsiliumConfig | BoardConfig],
                                                    tmp_path: Path) -> None:
    stages = DEFAULT_MAX_TOKENS if model is ConsiliumConfig else BOARD_MAX_TOKENS
    first = next(iter(stages))
    config = tmp_path / "c.yaml"
    config.write_text(f"max_tokens: {{{first}: 100}}\n")
    # (a consilium config also records its budgeted stages' max_tokens, from the length budget)
    assert run_config(model, config, {}).max_tokens[first] == 100
    assert run_config(model, config, {"max_tokens": 50}).max_tokens == dict.fromkeys(stages, 50)
    assert run_config(model, None, {"max_tokens": 7}).settings(first).max_tokens == 7


def test_an_experiment_run_is_checked_with_the_protocols_config(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    for text, field in [("run: {max_tokens: {opinon: 1}}", "run.max_tokens: unknown stage 'opinon'"),
                        ("protocol: board\nrun: {max_tokens: {opinion: 10}}", "run.max_tokens: unknown stage"),
                        ("run: {max_rounds: true}", "run.max_rounds: "),
                        ("protocol: board\nrun: {wall_limit_s: 0}", "run.wall_limit_s: ")]:
        path.write_text(text + "\n")
        with pytest.raises(UserError, match=f"^{path}: {field}"):
            load_experiment(path)


@pytest.mark.parametrize("values, field", [
    ({"timeout_s": math.nan}, "timeout_s"), ({"timeout_s": 0}, "timeout_s"),
    ({"max_concurrency": True}, "max_concurrency"), ({"max_concurrency": 0}, "max_concurrency"),
    ({"spec": ""}, "spec"), ({"base_url": []}, "base_url"),
    ({"base_url": ["http://a:1/v1", ""]}, "base_url"), ({"base_url": "http://a:1/v1,"}, "base_url"),
])
def test_model_config_files_are_as_strict(values: dict[str, Any], field: str, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"spec": "openai:x", **values}))
    with pytest.raises(UserError, match=f"^{path}: {field}: "):
        load_data_file(path, ModelConfigFile, "model config")


def test_a_key_pasted_as_api_key_env_is_refused_without_being_echoed(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("spec: openai:x\napi_key_env: sk-live-0123456789abcdef\n")
    assert main(["models", "check", "--model-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "api_key_env: must be the name of an environment variable" in err and "sk-live" not in err


def test_every_shipped_config_is_valid() -> None:
    configs = ROOT / "configs"
    run_config(BoardConfig, configs / "board.yaml", {})
    for path in sorted(set(configs.glob("*.yaml")) - {configs / "board.yaml"}):
        run_config(ConsiliumConfig, path, {})
    for path in sorted((configs / "models").glob("*.yaml")):
        load_data_file(path, ModelConfigFile, "model config")
    for path in sorted((configs / "experiments").glob("*.yaml")):
        load_experiment(path)


# ---- experiment files: seeds, replicates, entries listed twice, a judge's prices ------------------------------


def _experiment(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(f"cases: {CASE}\nmodels:\n  - {PANEL}\nformats: [free-form]\n{extra}")
    return path


def test_seed_beside_an_experiments_seeds_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "seeds: [3, 4]\n")
    assert main(["cohort", "--experiment", str(path), "--seed", "7", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--seed: {path} sets each replicate's seed (seeds:)")
    assert not (tmp_path / "out").exists()


def test_replicates_have_an_upper_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "replicates: 100000000000\n")
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "replicates" in err and "1000" in err


@pytest.mark.parametrize(("extra", "field"), [
    (f"  - {PANEL}\n", "models"), ("judges: [ai-consilium, ai-consilium]\n", "judges")], ids=["models", "judges"])
def test_an_entry_listed_twice_is_refused(extra: str, field: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "")
    text = path.read_text()
    path.write_text(text.replace("formats: [free-form]\n", "") + extra if field == "models" else text + extra)
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}: {field}.1: " in err and f"twice ({field}.0 and {field}.1;" in err


def test_a_format_listed_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "")
    path.write_text(path.read_text().replace("formats: [free-form]", "formats: [free-form, structured, free-form]"))
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    assert f"{path}: formats.2: free-form is listed twice (formats.0 and formats.2" in capsys.readouterr().err


def test_a_judges_prices_in_an_experiment_get_a_true_message(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    priced = f"{{spec: '{PANEL}', prices: {{input: 1, output: 2}}}}"
    path = _experiment(tmp_path, f"judges: [ai-consilium]\njudge_model: {priced}\n")
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{path}: judge_model.prices: only panel models take prices (models.N.prices); a judge or "
                        "moderator model is priced only when its spec is a priced panel model's")
