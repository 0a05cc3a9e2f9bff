"""``consilium cohort``: every (case, model, protocol, variant) arm of a cohort, optionally judged.

This module is the command line: the study spec's fields declare their flags (consilium/spec/study.py), which
consilium/cli/cohort_study.py makes and reads back into the spec alike, and the library runs it
(consilium/api/cohorts.py ``run_study``; beyond this process, ``--shard`` and ``--ray``:
consilium/cohort/scale.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.cohort_study import add_study_flags, study_from_args
from consilium.cli.judge_cmd import add_decoding_argument, add_scope_argument
from consilium.cli.labels import add_role_labels_argument
from consilium.cli.options import add_model_arguments, add_otel_argument
from consilium.cli.table import SUMMARIES
from consilium.errors import UserError
from consilium.graphs.registry import variant_kinds
from consilium.spec.study import VARIANT_FIELDS

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("cohort", help=SUMMARIES["cohort"])
    add_study_flags(parser)  # each field of the study spec that declares a flag of the cohort's own
    for kind in variant_kinds().values():  # each other kind a protocol declares (a plugin's) names its own flag
        if kind.kind not in VARIANT_FIELDS:
            parser.add_argument(kind.flag, dest=f"variants_{kind.kind}", default=None, metavar=",".join(kind.values),
                                help=f"{kind.kind} of {', '.join(kind.protocols)}, comma-separated (default: all)")
    add_model_arguments(parser)
    add_scope_argument(parser)
    add_decoding_argument(parser)
    add_role_labels_argument(parser)
    # where the study comes from (consilium/cli/cohort_study.py SOURCES), and what to do with it
    parser.add_argument("--experiment", type=Path, default=None, metavar="FILE",
                        help="an experiment file (configs/experiments/*.yaml): cases, models, protocols, variants, "
                             "run settings, judges, replicates; alone it runs the study, flags beside it override it")
    parser.add_argument("--extra-model", action="append", default=[], metavar="SPEC",
                        help="more panel models; each gets its own arms (repeatable)")
    parser.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR",
                        help="finish an interrupted cohort with its own settings (from its manifest.json)")
    add_otel_argument(parser)
    parser.add_argument("--estimate", action="store_true",
                        help="print the calls, tokens and dollars per stage of the panel and each rubric, "
                             "then stop: no model is called and nothing is written (docs/cohorts.md)")
    parser.add_argument("--like", type=Path, default=None, metavar="RUN_DIR",
                        help="with --estimate: take the rounds and tokens per call from this earlier cohort's "
                             "traces and judgements (default: the protocols' bounds, as a range)")
    parser.set_defaults(func=run)
    from consilium.cli import cohort_merge_cmd

    cohort_merge_cmd.register(parser)


def run(args: argparse.Namespace) -> int:
    from consilium.api.cohorts import run_study

    if args.estimate or args.like is not None:
        check_estimate_flags(args)
        from consilium.cohort.estimate_plan import estimate_study
        from consilium.cohort.estimate_table import estimate_lines

        print("\n".join(estimate_lines(estimate_study(study_from_args(args), args.experiment, args.like))))
        return 0
    return run_study(study_from_args(args), experiment=args.experiment, resume=args.resume).exit_code


def check_estimate_flags(args: argparse.Namespace) -> None:
    """``--like`` only with ``--estimate``; ``--estimate`` plans a new cohort, in this process."""
    if getattr(args, "like", None) is not None and not args.estimate:
        raise UserError("--like: only with --estimate (it names the cohort an estimate is made from)")
    if args.estimate:
        for flag, given in (("--resume", args.resume), ("--shard", getattr(args, "shard", None)),
                            ("--ray", getattr(args, "ray", None))):
            if given is not None:
                raise UserError(f"--estimate: estimates a new cohort before it runs; not with {flag}")
