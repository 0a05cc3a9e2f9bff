"""Start-up: what `consilium --help` costs beside `python -c pass`, measured side by side in one run.

    .venv/bin/python benchmarks/startup.py [RUNS]

Prints the import time ``python -X importtime -m consilium --help`` reports for consilium (the sum of the
cumulative times of its top-level imports, ``consilium`` and ``consilium.cli``; median of three) and the
wall time of ``python -m consilium --help`` and of ``python -c pass``, run alternately RUNS times (10),
medians. ``python -m consilium`` takes the package from the current folder, so running this from a
checkout of another commit (``git worktree add``) measures that commit with the same interpreter. Modules
are read from bytecode, as an installed package's are: compiled by a first, unmeasured run into a folder of
its own (``PYTHONPYCACHEPREFIX``), even where the environment says not to write bytecode.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = sys.executable
#: An installed package's environment: bytecode written once (to a folder of this process's) and read after.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="consilium-startup-pycache-")}
atexit.register(shutil.rmtree, ENV["PYTHONPYCACHEPREFIX"], ignore_errors=True)
#: A top-level import (no indent before its name) of `-X importtime`: its cumulative microseconds, its name.
_TOP = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")


def import_seconds() -> float:
    """consilium's share of the import time of `consilium --help`."""
    report = subprocess.run([PYTHON, "-X", "importtime", "-m", "consilium", "--help"], capture_output=True,
                            text=True, check=True, env=ENV).stderr
    found = (_TOP.match(line) for line in report.splitlines())
    return sum(int(m.group(1)) for m in found if m and m.group(2).startswith("consilium")) / 1e6


def wall_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True, env=ENV)
    return time.perf_counter() - start


def measure(runs: int = 10) -> dict[str, float]:
    wall_seconds([PYTHON, "-m", "consilium", "--help"])  # compiles what --help imports, unmeasured
    imports = statistics.median(import_seconds() for _ in range(3))
    helps, bare = [], []
    for _ in range(runs):  # alternately, so the machine's load falls on both alike
        helps.append(wall_seconds([PYTHON, "-m", "consilium", "--help"]))
        bare.append(wall_seconds([PYTHON, "-c", "pass"]))
    return {"imports": imports, "help": statistics.median(helps), "bare": statistics.median(bare), "runs": runs}


def startup_section(quick: bool) -> list[str]:
    """make bench's section (benchmarks/suite.py): `consilium --help` beside `python -c pass`."""
    m = measure(5 if quick else 10)
    return ["## Start-up (`consilium --help` beside `python -c pass`, run alternately)", "",
            "| import time of consilium (`-X importtime`, median of 3) | `consilium --help` wall | "
            "`python -c pass` wall | ratio |", "|---|---|---|---|",
            f"| {m['imports']:.3f} s | {m['help']:.3f} s | {m['bare']:.3f} s | **{m['help'] / m['bare']:.0f}×** |", "",
            f"Walls are medians of {m['runs']} runs each.", ""]


def main(runs: int = 10) -> None:
    m = measure(runs)
    print(f"import time of consilium in `consilium --help`: {m['imports']:.3f} s (median of 3)")
    print(f"wall time, median of {runs}: consilium --help {m['help']:.3f} s, python -c pass {m['bare']:.3f} s "
          f"({m['help'] / m['bare']:.0f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
