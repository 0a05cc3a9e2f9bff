"""``consilium analyze RUN_DIR``: deliberation networks of a run or cohort (docs/networks.md): each arm's
graph as GraphML and a picture, the cohort's role co-assignment network, and the per-category influence,
persistence and conformity, the change paths and the board centralities as CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.options import add_model_arguments, build_named, named_label, non_negative_int, positive_int
from consilium.cli.table import SUMMARIES
from consilium.reports.networks.paths import ANALYSIS_FOLDER
from consilium.reports.networks.uptake import OVERLAP_THRESHOLD

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("analyze", help=SUMMARIES["analyze"])
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a cohort folder (arms.csv) or a simulate run")
    parser.add_argument("--out", type=Path, default=None, help=f"analysis folder (default RUN_DIR/{ANALYSIS_FOLDER})")
    parser.add_argument("--force", action="store_true",
                        help="replace an analysis of another run, method or judge in the --out folder (refused "
                             "without it)")
    add_model_arguments(parser, default=None, flag="--judge-model")
    parser.add_argument("--max-tokens", type=positive_int, default=512, help="output tokens per judge call (512)")
    parser.add_argument("--max-repairs", type=non_negative_int, default=2,
                        help="judge retries showing the validation error (2)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.api.networks import AnalyzeOptions, analyze
    from consilium.reports.partial import partial_line

    judge, name = None, None
    if args.model or args.model_config:  # a spec, SPEC@BASE_URL#KEY_VAR or a model config file
        judge = build_named(args)
        name = named_label(args, judge)
    done = analyze(args.run_dir, AnalyzeOptions(out=args.out, force=args.force, judge_model=judge, judge_name=name,
                                                max_tokens=args.max_tokens, max_repairs=args.max_repairs,
                                                timeout_s=args.timeout or 120.0))
    result = done.analysis
    if done.done is not None:
        print(partial_line(done.done))
    methods = ", ".join(f"{n} by {m.replace('_', ' ')}" for m, n in sorted(result.methods.items())) or "none"
    print(f"analysed {result.arms} arms into {result.out}" +
          (f" ({len(result.skipped)} not completed, left out)" if result.skipped else ""))
    if result.other:
        print(f"left out {len(result.other)} arms neither a consilium nor a board meeting (single-specialist "
              f"and other protocols): {', '.join(result.other)}")
    print(f"dissents decided: {methods}" + ("" if done.judged else f" (word overlap >= {OVERLAP_THRESHOLD})"))
    for file in ("categories.csv", "change_paths.csv", "dissents.csv", "centralities.csv", "coassignment.graphml"):
        print(f"  {result.out / file}")
    if result.judge_failed:  # the files are written, but not as the judge would have decided: exit 1
        print(f"{result.judge_failed} judge calls failed; word overlap decided them (run analyze again to ask "
              "the judge again)")
        return 1
    return 0
