"""Start-up: the parser, every ``--help`` and a usage error load none of the heavy libraries; a subcommand
loads what it needs when it runs (docs/performance.md, "Start-up")."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

# rich: structlog imports it for pretty tracebacks our console never shows, the progress bar only on a terminal.
HEAVY = ("scipy", "sklearn", "matplotlib", "llama_cpp", "langgraph", "pandas", "pyarrow", "ray", "numpy", "rich")

# Runs in a fresh interpreter: this test process has long since imported everything.
_PROBE = """
import argparse, contextlib, io, json, sys
from consilium.cli import build_parser, main

def commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*prefix, name)
                yield from commands(child, (*prefix, name))

argvs = [["--help"], ["--no-such-flag"]]
for command in commands(build_parser()):
    argvs += [[*command, "--help"], [*command, "--no-such-flag"]]
codes = {}
for argv in argvs:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        codes[" ".join(argv)] = [main(argv), len(out.getvalue()), err.getvalue()]
print(json.dumps({"codes": codes, "loaded": sorted(m for m in %r if m in sys.modules)}))
"""


def test_help_and_usage_errors_load_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE % (HEAVY,)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    codes = result["codes"]
    helps = {argv: code for argv, code in codes.items() if argv.endswith("--help")}
    errors = {argv: code for argv, code in codes.items() if argv.endswith("--no-such-flag")}
    # Every subcommand was reached, nested ones included (`calibrate agreement`), each help printed, each
    # usage error (the unknown flag, or a required argument missing first) refused in one line, exit code 2.
    assert {"judge --help", "cohort --help", "calibrate agreement --help", "ablate --help"} <= set(helps)
    assert all(code == 0 and printed > 0 for code, printed, _ in helps.values()), helps
    assert all(code == 2 and ": error: " in err and err.count("\n") == 1
               for code, _, err in errors.values()), errors
    assert result["loaded"] == []


# Which command modules a command line loaded, in a fresh interpreter: the names in consilium.cli.COMMANDS.
_ONE_COMMAND = """
import contextlib, io, json, sys
from consilium.cli import COMMANDS, main

with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
    code = main(%r)
modules = set(COMMANDS.values())
print(json.dumps({"code": code, "printed": len(out.getvalue()),
                  "loaded": sorted(m.rsplit(".", 1)[1] for m in sys.modules
                                   if m.startswith("consilium.cli.") and m.rsplit(".", 1)[1] in modules)}))
"""


def _one_command(argv: list[str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _ONE_COMMAND % (argv,)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_a_command_line_loads_only_the_module_of_the_command_it_names() -> None:
    # Each names its command after top-level options (one of which takes a value), or alone; `turn` is the
    # second name of the board's module.
    assert _one_command(["-v", "--log-file", "/dev/null", "schema", "--help"]) == {
        "code": 0, "printed": _one_command(["schema", "--help"])["printed"], "loaded": ["schema_cmd"]}
    turn = _one_command(["turn", "--help"])
    assert turn["code"] == 0 and turn["loaded"] == ["board_cmd"]
    models = _one_command(["models", "--no-such-flag"])
    assert models["code"] == 2 and models["loaded"] == ["models_cmd"]
    # No command named (or one not known): the commands listed from the table, no command's module loaded.
    listed = _one_command(["--help"])
    assert listed["code"] == 0 and listed["loaded"] == [] and listed["printed"] > 1000
    assert _one_command(["nonsense"]) == {"code": 2, "printed": 0, "loaded": []}
    assert _one_command([]) == {"code": 2, "printed": listed["printed"], "loaded": []}


def test_the_listing_of_every_command_is_the_help_of_the_whole_parser() -> None:
    """`consilium --help` (the table's lines, no module imported) prints what the whole parser, every
    module's `register` run, prints: same commands, same order, same one-line help."""
    from consilium.cli import build_parser, top_parser

    assert top_parser().format_help() == build_parser().format_help()
    assert top_parser().format_usage() == build_parser().format_usage()


#: Every module of consilium/cli/ that registers a top-level subcommand, found by its name, not read from the
#: table (cohort_merge_cmd registers `merge` on the cohort's own parser).
_COMMAND_MODULES = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "consilium" / "cli").glob("*_cmd.py")
                          if "def register(" in p.read_text() and p.stem != "cohort_merge_cmd")


def test_the_command_table_names_each_command_with_the_module_that_registers_it() -> None:
    from consilium.cli import COMMANDS, _Parser

    registered = {}
    for name in _COMMAND_MODULES:
        sub = _Parser(prog="x").add_subparsers()
        importlib.import_module(f"consilium.cli.{name}").register(sub)
        registered.update(dict.fromkeys(sub.choices, name))
    assert registered == COMMANDS
