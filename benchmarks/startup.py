"""Start-up: what `consilium --help` costs beside `python -c pass`, measured side by side in one run.

    .venv/bin/python benchmarks/startup.py [RUNS]

Prints the import time ``python -X importtime -m consilium --help`` reports for consilium (the sum of the
cumulative times of its top-level imports, ``consilium`` and ``consilium.cli``; median of three) and the
wall time of ``python -m consilium --help`` and of ``python -c pass``, run alternately RUNS times (10),
medians. ``python -m consilium`` takes the package from the current folder, so running this from a
checkout of another commit (``git worktree add``) measures that commit with the same interpreter.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time

PYTHON = sys.executable
#: A top-level import (no indent before its name) of `-X importtime`: its cumulative microseconds, its name.
_TOP = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")


def import_seconds() -> float:
    """consilium's share of the import time of `consilium --help`."""
    report = subprocess.run([PYTHON, "-X", "importtime", "-m", "consilium", "--help"], capture_output=True,
                            text=True, check=True).stderr
    found = (_TOP.match(line) for line in report.splitlines())
    return sum(int(m.group(1)) for m in found if m and m.group(2).startswith("consilium")) / 1e6


def wall_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - start


def main(runs: int = 10) -> None:
    imports = statistics.median(import_seconds() for _ in range(3))
    helps, bare = [], []
    for _ in range(runs):  # alternately, so the machine's load falls on both alike
        helps.append(wall_seconds([PYTHON, "-m", "consilium", "--help"]))
        bare.append(wall_seconds([PYTHON, "-c", "pass"]))
    help_s, bare_s = statistics.median(helps), statistics.median(bare)
    print(f"import time of consilium in `consilium --help`: {imports:.3f} s (median of 3)")
    print(f"wall time, median of {runs}: consilium --help {help_s:.3f} s, python -c pass {bare_s:.3f} s "
          f"({help_s / bare_s:.0f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
