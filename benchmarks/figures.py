"""Writing a cohort's figures (``consilium compare``'s Figs. 2b–8, PNG and PDF), this checkout beside another.

    .venv/bin/python benchmarks/figures.py --before /tmp/before [--rounds 3]
    (git worktree add /tmp/before REV: the checkout to compare with)

The cohort is tests/cohort_fixture.py's (2 scripted models × 2 formats × 6 cases, one failed arm), built
once. Each checkout writes its figures in a fresh interpreter, twice: the first as a lone ``compare`` does,
the second as the next ``compare`` in the same process does (a test session runs many), once plain and
once with a partial cohort's mark (drawn above each figure, which grows to hold it). Also counted: the draws
per figure saved (the figure's ``draw_event``s). The checkouts take turns, round by round, so the machine's
load falls on both alike: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARK = "partial: 20 of 24 planned arms, cohort aborted"

#: Run in each checkout's interpreter: the seconds of each write, the draws per figure saved.
CHILD = r"""
import json, sys, time
from pathlib import Path
import matplotlib.figure
from consilium.reports.compare import load_cohort_data
from consilium.reports.figures import write_figures
from consilium.reports.figures.style import marked_figures

run, out, mark = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] or None
data = load_cohort_data(run)
figures, draws = [], []
init = matplotlib.figure.Figure.__init__
def counted(self, *args, **kwargs):  # every figure made, its draws counted by its draw_event
    init(self, *args, **kwargs)
    figures.append(self)
    self.canvas.mpl_connect("draw_event", draws.append)
matplotlib.figure.Figure.__init__ = counted
seconds = []
with marked_figures(mark):
    for n in range(2):
        start = time.perf_counter()
        write_figures(data, out / str(n), bootstrap=500)
        seconds.append(time.perf_counter() - start)
print(json.dumps({"seconds": seconds, "draws": len(draws) / len(figures)}))
"""


def build(tmp: Path) -> Path:
    """The fixture cohort, run by the real CLI with the scripted backend."""
    os.environ.update(CONSILIUM_CACHE=str(tmp / "cache.sqlite"), CONSILIUM_LOG_FILE=str(tmp / "log.jsonl"),
                      CONSILIUM_EVENT_LOOP="asyncio")
    sys.path.insert(0, str(ROOT / "tests"))
    from cohort_fixture import build_cohort

    tmp.mkdir(parents=True, exist_ok=True)
    with open(os.devnull, "w") as quiet, redirect_stdout(quiet), redirect_stderr(quiet):  # the cohort's lines
        run: Path = build_cohort(tmp)
    return run


def write(tree: Path, run: Path, out: Path, mark: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(run), str(out), mark], env=env, cwd=tree,
                          capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(before: Path | None, rounds: int) -> dict[tuple[str, str], list[dict[str, Any]]]:
    trees = {"this": ROOT, **({"before": before.resolve()} if before else {})}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = build(Path(tmp) / "cohort")
        for r in range(rounds):
            for name, tree in (trees.items() if r % 2 == 0 else reversed(trees.items())):
                for kind, mark in (("plain", ""), ("marked", MARK)):
                    out = Path(tmp) / f"{name}-{kind}-{r}"
                    results.setdefault((name, kind), []).append(write(tree, run, out, mark))
    return results


def table(results: dict[tuple[str, str], list[dict[str, Any]]]) -> list[str]:
    def median(name: str, kind: str, n: int) -> float:
        return float(statistics.median(x["seconds"][n] for x in results[(name, kind)]))

    lines = [f"{os.cpu_count()} CPUs; seconds are medians of {len(next(iter(results.values())))} rounds, measured "
             "side by side.", "",
             "| figures | checkout | first write (s) | next write, same process (s) | draws per figure |",
             "|---|---|---:|---:|---:|"]
    for kind in ("plain", "marked"):
        for name in ("before", "this"):
            if (name, kind) in results:
                draws = results[(name, kind)][0]["draws"]
                lines.append(f"| {kind} | {name} | {median(name, kind, 0):.2f} | {median(name, kind, 1):.2f} | "
                             f"{draws:g} |")
        if ("before", kind) in results:
            lines.append(f"| {kind} | before ÷ this | {median('before', kind, 0) / median('this', kind, 0):.2f}× | "
                         f"{median('before', kind, 1) / median('this', kind, 1):.2f}× | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout (git worktree add /tmp/before REV)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(table(measure(args.before, args.rounds))))


if __name__ == "__main__":
    main()
