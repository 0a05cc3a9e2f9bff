"""Bad run configs, experiment files, model configs and flag values.

Merged into tests/cli/test_bad_inputs.py: each must exit 2 with one line naming the file and field, or the
flag as the user typed it, before anything runs or is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml")
MODEL = ["--model", "scripted:x.json"]

Builder = Callable[[Path], tuple[list[str], str]]


def data_file(tmp: Path, text: str, name: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def simulate_config(text: str, expected: str) -> Builder:
    return lambda t: (["simulate", "--case", CASE, *MODEL, "--config", data_file(t, text, "run.yaml")],
                      f"run.yaml: {expected}")


def board_config(text: str, expected: str, command: str = "board") -> Builder:
    extra = ["--role", "Medical oncologist", "--question", "Surgery?"] if command == "turn" else []
    return lambda t: ([command, "--case", CASE, *MODEL, *extra, "--config", data_file(t, text, "board.yaml")],
                      f"board.yaml: {expected}")


def experiment(text: str, expected: str) -> Builder:
    return lambda t: (["cohort", "--cases", CASE, *MODEL, "--experiment", data_file(t, text, "exp.yaml")],
                      f"exp.yaml: {expected}")


def model_config(text: str, expected: str) -> Builder:
    return lambda t: (["models", "check", "--model-config", data_file(t, text, "model.yaml")],
                      f"model.yaml: {expected}")


def flags(command: str, *argv: str, expected: str) -> Builder:
    where = ["--cases", CASE] if command == "cohort" else ["--case", CASE]
    return lambda t: ([command, *where, *MODEL, *argv], expected)


CORPUS: dict[str, Builder] = {
    # run configs (--config)
    "config misspelt stage": simulate_config("max_tokens: {opinon: 100}\n", "max_tokens: unknown stage 'opinon'"),
    "config zero stage tokens": simulate_config("max_tokens: {opinion: 0}\n", "max_tokens.opinion: "),
    "config negative stage tokens": simulate_config("max_tokens: {vote: -5}\n", "max_tokens.vote: "),
    "config boolean stage tokens": simulate_config("max_tokens: {vote: true}\n", "max_tokens.vote: "),
    "config max_tokens not a mapping": simulate_config("max_tokens: lots\n", "max_tokens: "),
    "config boolean count": simulate_config("max_rounds: true\n", "max_rounds: "),
    "config zero rounds": simulate_config("max_rounds: 0\n", "max_rounds: "),
    "config fractional rounds": simulate_config("max_rounds: 2.5\n", "max_rounds: "),
    "config boolean temperature": simulate_config("temperature: true\n", "temperature: "),
    "config nan temperature": simulate_config("temperature: .nan\n", "temperature: "),
    "config temperature out of range": simulate_config("temperature: 7\n", "temperature: "),
    "config string timeout": simulate_config("timeout_s: '30'\n", "timeout_s: "),
    "config infinite timeout": simulate_config("timeout_s: .inf\n", "timeout_s: "),
    "config zero timeout": simulate_config("timeout_s: 0\n", "timeout_s: "),
    "config negative wall limit": simulate_config("wall_limit_s: -1\n", "wall_limit_s: "),
    "config negative repairs": simulate_config("max_repairs: -1\n", "max_repairs: "),
    "config zero budget": simulate_config("budget_tokens: 0\n", "budget_tokens: "),
    "config boolean seed": simulate_config("seed: true\n", "seed: "),
    "config fractional seed": simulate_config("seed: 1.5\n", "seed: "),
    "config min over max roles": simulate_config("min_roles: 5\nmax_roles: 3\n", "max_roles: min_roles (5)"),
    "config min over default max roles": simulate_config("min_roles: 7\n", "max_roles: min_roles (7)"),
    "config not a mapping": simulate_config("- max_rounds: 2\n", "a config file must be a mapping of settings"),
    "board config consilium stage": board_config("max_tokens: {opinion: 10}\n", "max_tokens: unknown stage"),
    "board config one turn": board_config("max_turns: 1\n", "max_turns: "),
    "board config boolean turns": board_config("max_turns: true\n", "max_turns: "),
    "turn config nan temperature": board_config("temperature: .nan\n", "temperature: ", "turn"),
    "turn config zero stage tokens": board_config("max_tokens: {specialist_turn: 0}\n", "max_tokens.specialist_turn",
                                                  "turn"),
    # experiment files: `run:` is checked as the protocol's run config
    "experiment misspelt stage": experiment("run:\n  max_tokens: {opinon: 1}\n", "run.max_tokens: unknown stage"),
    "experiment board consilium stage": experiment("protocol: board\nrun:\n  max_tokens: {vote: 10}\n",
                                                   "run.max_tokens: unknown stage 'vote'"),
    "experiment zero stage tokens": experiment("run:\n  max_tokens: {opinion: 0}\n", "run.max_tokens.opinion: "),
    "experiment boolean rounds": experiment("run:\n  max_rounds: true\n", "run.max_rounds: "),
    "experiment nan temperature": experiment("run:\n  temperature: .nan\n", "run.temperature: "),
    "experiment zero wall limit": experiment("protocol: board\nrun:\n  wall_limit_s: 0\n", "run.wall_limit_s: "),
    "experiment min over max roles": experiment("run:\n  min_roles: 4\n  max_roles: 3\n", "run.max_roles: "),
    # model configs (--model-config)
    "model config nan timeout": model_config("spec: openai:x\ntimeout_s: .nan\n", "timeout_s: "),
    "model config zero timeout": model_config("spec: openai:x\ntimeout_s: 0\n", "timeout_s: "),
    "model config boolean concurrency": model_config("spec: openai:x\nmax_concurrency: true\n", "max_concurrency: "),
    "model config zero concurrency": model_config("spec: openai:x\nmax_concurrency: 0\n", "max_concurrency: "),
    "model config empty spec": model_config("spec: ''\n", "spec: "),
    "model config no base urls": model_config("spec: openai:x\nbase_url: []\n", "base_url: "),
    "model config empty base url": model_config("spec: openai:x\nbase_url: ['http://a:1/v1', '']\n", "base_url: "),
    "model config key as env name": model_config("spec: openai:x\napi_key_env: sk-0123456789\n",
                                                 "api_key_env: must be the name of an environment variable"),
    # flags: refused with the flag's name as typed
    "flag nan timeout": flags("simulate", "--timeout", "nan", expected="argument --timeout: "),
    "flag zero timeout": flags("simulate", "--timeout", "0", expected="argument --timeout: "),
    "flag infinite wall limit": flags("board", "--wall-limit", "inf", expected="argument --wall-limit: "),
    "flag nan temperature": flags("simulate", "--temperature", "nan", expected="argument --temperature: "),
    "flag temperature out of range": flags("simulate", "--temperature", "9", expected="--temperature: "),
    "flag negative retry delay": flags("simulate", "--retry-base-delay", "-1",
                                       expected="argument --retry-base-delay: "),
    "flag nan retry delay": flags("simulate", "--retry-base-delay", "nan", expected="argument --retry-base-delay: "),
    "cohort flag zero wall limit": flags("cohort", "--wall-limit", "0", expected="--wall-limit: "),
    "cohort flag nan wall limit": flags("cohort", "--wall-limit", "nan", expected="--wall-limit: "),
    "cohort flag zero timeout": flags("cohort", "--timeout", "0", expected="argument --timeout: "),
    "flag min roles over default max": flags("simulate", "--min-roles", "7", expected="--min-roles: "),
    "flag max roles under config min": lambda t: (["simulate", "--case", CASE, *MODEL, "--config", data_file(
        t, "min_roles: 4\n", "run.yaml"), "--max-roles", "3"], "--max-roles: min_roles (4) exceeds max_roles (3)"),
}
