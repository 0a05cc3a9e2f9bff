"""``consilium analyze RUN_DIR``: deliberation networks of a run or cohort (docs/networks.md): each arm's
graph as GraphML and a picture, the cohort's role co-assignment network, and the per-category influence,
persistence and conformity, the change paths and the board centralities as CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.options import add_model_arguments, build_named, named_label, non_negative_int, positive_int
from consilium.models import GenerationSettings
from consilium.reports.networks.judging import UptakeJudge
from consilium.reports.networks.paths import ANALYSIS_FOLDER
from consilium.reports.networks.uptake import OVERLAP_THRESHOLD
from consilium.reports.partial import partial_figures, partial_line, partial_of

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("analyze", help="deliberation networks of a run or cohort: graphs (GraphML, PNG), "
                                            "influence, persistence, conformity")
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
    from consilium.reports.networks.analyze import analyze  # networkx when it runs: `--help` stays light

    judge = None
    if args.model or args.model_config:  # a judge decides uptake; without one, the word-overlap rule does
        model = build_named(args)  # a spec, SPEC@BASE_URL#KEY_VAR or a model config file
        judge = UptakeJudge(model, GenerationSettings(temperature=0.0, seed=0, max_tokens=args.max_tokens,
                                                      timeout_s=args.timeout or 120.0), args.max_repairs,
                            name=named_label(args, model))
    done = partial_of(args.run_dir)  # the networks are of the finished arms only (docs/cohorts.md)
    with partial_figures(done):  # each drawing marked
        result = analyze(args.run_dir, args.out, judge, force=args.force)
    if done is not None:
        print(partial_line(done))
    methods = ", ".join(f"{n} by {m.replace('_', ' ')}" for m, n in sorted(result.methods.items())) or "none"
    print(f"analysed {result.arms} arms into {result.out}" +
          (f" ({len(result.skipped)} not completed, left out)" if result.skipped else ""))
    if result.other:
        print(f"left out {len(result.other)} arms neither a consilium nor a board meeting (single-specialist "
              f"and other protocols): {', '.join(result.other)}")
    print(f"dissents decided: {methods}" + ("" if judge else f" (word overlap >= {OVERLAP_THRESHOLD})"))
    for name in ("categories.csv", "change_paths.csv", "dissents.csv", "centralities.csv", "coassignment.graphml"):
        print(f"  {result.out / name}")
    if result.judge_failed:  # the files are written, but not as the judge would have decided: exit 1
        print(f"{result.judge_failed} judge calls failed; word overlap decided them (run analyze again to ask "
              "the judge again)")
        return 1
    return 0
