"""Start-up: the parser, every ``--help`` and a usage error load none of the heavy libraries; a subcommand
loads what it needs when it runs (docs/performance.md, "Start-up")."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "sklearn", "matplotlib", "llama_cpp", "langgraph", "pandas", "pyarrow", "ray", "numpy")

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
