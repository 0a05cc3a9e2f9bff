"""The README's commands on the embedded default model, each run once as a user runs it, with --no-cache.

    .venv/bin/python benchmarks/embedded_commands.py [--only TEXT] [--out DIR]

Rows: ``make demo``'s command (``simulate`` on examples/cases/diagnostic-myocarditis.yaml, both formats),
``judge`` of the demo's structured trace with nmb-diagnosis-match and with ai-consilium (``--judge-model
embedded``), and ``board --mode agents``, ``board --mode single`` and ``turn`` on every
examples/cases/tumor-board-*.yaml (``turn`` asks the Medical oncologist the case's own question). Each
command is a fresh process (``python -m consilium``), timed from start to exit; its calls and invalid
answers (each sent back for a repair, or recorded as the stage's failure) are read from the records it
wrote. Prints one markdown table: command, exit status, wall s, calls, invalid answers, outcome. Run it on
an otherwise idle machine: the embedded model shares the CPUs with everything else. ``--only`` keeps the
rows whose command contains TEXT (the judge rows need the demo's row). Outputs go to a temporary folder,
or to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
DEMO_CASE = "examples/cases/diagnostic-myocarditis.yaml"
RUBRICS = ("nmb-diagnosis-match", "ai-consilium")
TURN_ROLE = "Medical oncologist"


@dataclass
class Row:
    command: str
    code: int | None = None
    wall_s: float | None = None
    calls: int = 0
    invalid: int = 0
    outcome: str = "not run"

    def markdown(self) -> str:
        code = "–" if self.code is None else str(self.code)
        wall = "–" if self.wall_s is None else f"{self.wall_s:.0f}"
        return f"| `{self.command}` | {code} | {wall} | {self.calls} | {self.invalid} | {self.outcome} |"


def run(argv: list[str]) -> tuple[int, float, str]:
    """Exit status, wall seconds and the last line of stderr of ``python -m consilium ARGV``."""
    start = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "consilium", *argv], cwd=ROOT, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, time.perf_counter() - start, lines[-1] if lines else ""


def counted(records: list[dict[str, Any]]) -> tuple[int, int]:
    """Calls made and answers found invalid (a call with an error), over every record."""
    calls = [c for r in records for c in r.get("calls") or []]
    return len(calls), sum(1 for c in calls if c.get("error"))


def trace_outcome(trace: dict[str, Any]) -> str:
    """A trace's status and what it ended with, per protocol."""
    if trace.get("status") != "completed":
        return f"{trace.get('status')} at {trace.get('failed_stage')}: {str(trace.get('error'))[:120]}"
    kind = trace.get("kind")
    if kind == "board":
        validation = trace.get("validation") or {}
        said = f"{len(trace.get('turns') or [])} turns, {trace.get('stop_reason')}, " if trace.get("turns") else ""
        return f"completed ({said}format exact {validation.get('exact')}, dense {validation.get('dense')})"
    if kind == "turn":
        return f"completed ({len(str(trace.get('answer') or ''))} characters)"
    return f"completed ({trace.get('format')}: {trace.get('stop_reason')}, {len(trace.get('rounds') or [])} rounds)"


def judgement_outcome(judgement: dict[str, Any]) -> str:
    items = judgement.get("items") or []
    missing = sum(1 for i in items if i.get("not_evaluable"))
    return f"{len(items) - missing} of {len(items)} items scored, {missing} not evaluable"


def record(row: Row, argv: list[str], out: Path, pattern: str) -> list[Path]:
    """Run ``argv``; fill ``row`` from the records matching ``pattern`` under ``out`` that it wrote."""
    before = set(out.glob(pattern))
    row.code, row.wall_s, last = run(argv)
    written = sorted(set(out.glob(pattern)) - before)
    records = [json.loads(p.read_text(encoding="utf-8")) for p in written]
    row.calls, row.invalid = counted(records)
    if not records:
        row.outcome = f"no record written ({last[:160]})"
    elif pattern.endswith("*.judge.*.json"):
        row.outcome = "; ".join(judgement_outcome(r) for r in records)
    else:
        row.outcome = "; ".join(trace_outcome(r) for r in records)
    return written


def judge_label(rubric: str) -> str:
    return f"judge <demo>.structured.trace.json --rubric {rubric} --judge-model embedded"


def plan() -> list[tuple[str, list[str], str]]:
    """(label, argv, what the command writes) for every row but the judges'."""
    rows = [(f"make demo: simulate --case {DEMO_CASE}", ["simulate", "--case", DEMO_CASE], "demo")]
    for case in sorted((ROOT / "examples" / "cases").glob("tumor-board-*.yaml")):
        path = case.relative_to(ROOT).as_posix()
        for mode in ("agents", "single"):
            rows.append((f"board --mode {mode} --case {path}", ["board", "--mode", mode, "--case", path], mode))
        question = str(yaml.safe_load(case.read_text(encoding="utf-8")).get("question") or "What do you recommend?")
        rows.append((f"turn --case {path} --role {shlex.quote(TURN_ROLE)}",
                     ["turn", "--case", path, "--role", TURN_ROLE, "--question", question], "turn"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run only the rows whose command contains this text")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="embedded-commands-") as scratch:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        rows: list[Row] = []
        for label, command, kind in plan():
            judges = [r for r in RUBRICS if args.only in judge_label(r)] if kind == "demo" else []
            if args.only not in label and not judges:  # the demo runs for the judges' rows, which read its trace
                continue
            row = Row(label)
            rows.append(row)
            written = record(row, [*command, "--no-cache", "--out", str(out / kind)], out / kind, "*/*.trace.json")
            print(row.markdown(), file=sys.stderr, flush=True)
            structured = [p for p in written if p.name.endswith(".structured.trace.json")]
            for rubric in judges:
                judged = Row(judge_label(rubric))
                rows.append(judged)
                if structured:
                    record(judged, ["judge", str(structured[0]), "--rubric", rubric, "--judge-model", "embedded",
                                    "--no-cache"], structured[0].parent, "*.judge.*.json")
                else:
                    judged.outcome = "not run: the demo wrote no structured trace"
                print(judged.markdown(), file=sys.stderr, flush=True)
        print("| command | exit | wall s | calls | invalid answers | outcome |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            print(row.markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
