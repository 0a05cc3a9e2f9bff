"""``consilium jury RUN_DIR --rubric NAME``: how the judges of a jury agree, whether a judge favours
answers of its own model family, and whether length sways them (docs/judges.md, Juries)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.table import SUMMARIES
from consilium.judges.rubric import rubric_names

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("jury", help=SUMMARIES["jury"],
                            description="Read the jury judgements (judge --judge-model A --judge-model B …) of "
                                        "one rubric under RUN_DIR and write Krippendorff's α per criterion and "
                                        "pairwise quadratic-weighted κ, each with percent agreement, over in-scope "
                                        "scores; scope agreement (a rubric with an out-of-scope score); "
                                        "self-preference and length bias, as CSV, markdown and a figure "
                                        "(docs/judges.md, Juries).")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run or cohort folder with jury judgements")
    parser.add_argument("--rubric", required=True, help=f"rubric name ({', '.join(rubric_names())}) or a YAML file")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: RUN_DIR/jury)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.folders import JuryOptions, jury
    from consilium.reports.partial import partial_line

    done = jury(args.run_dir, JuryOptions(rubric=args.rubric, out=args.out))
    data = done.data
    if done.done is not None:  # a stopped or running cohort's: its agreement is of the finished arms
        print(partial_line(done.done))
    print(f"jury of {len(data.members)} judges ({', '.join(m.judge for m in data.members)}) on rubric "
          f"{data.rubric.name}: {len(data.answers)} answers, {len(data.units)} items, {data.ties} ties resolved, "
          f"{data.left_out} not-evaluable votes left out")
    for path in done.files:
        print(path)
    return 0
