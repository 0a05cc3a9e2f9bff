"""``consilium cohort``: every (case, model, protocol, variant) arm of a cohort, optionally judged.

This module is the command line: its flags are read into the study spec (consilium/spec/study.py: each field
names its flag, so :func:`study_from_args` reads them all alike), and the library runs it
(consilium/api/cohorts.py ``run_study``; beyond this process, ``--shard`` and ``--ray``:
consilium/cohort/scale.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.cohort_study import study_from_args
from consilium.cli.judge_cmd import add_decoding_argument, add_scope_argument
from consilium.cli.labels import add_role_labels_argument
from consilium.cli.options import (
    add_model_arguments,
    add_otel_argument,
    finite_float,
    positive_float,
    positive_int,
)
from consilium.cohort.protocols import protocol_list
from consilium.cohort.shard import Shard
from consilium.errors import UserError
from consilium.graphs.registry import variant_kinds
from consilium.spec.study import VARIANT_FIELDS

__all__ = ["protocol_arg", "register", "run", "shard_arg"]


def protocol_arg(text: str) -> list[str]:
    """argparse type for ``--protocol``: one or more of the protocols a cohort can run, comma-separated."""
    try:
        return protocol_list(text, flag="--protocol")
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--protocol: ")) from None


def shard_arg(text: str) -> Shard:
    """argparse type for ``--shard``: a bad value is argparse's one-line error, exit 2."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("cohort", help="run protocols on every case × model × variant, optionally judged")
    parser.add_argument("--cases", type=Path, default=None,
                        help="folder of case files or AgentClinic .jsonl (required unless --resume)")
    parser.add_argument("--config", type=Path, default=None,
                        help="YAML run settings (configs/consilium.yaml); each protocol takes the keys it has")
    parser.add_argument("--experiment", type=Path, default=None, metavar="FILE",
                        help="an experiment file (configs/experiments/*.yaml): cases, models, protocols, variants, "
                             "run settings, judges, replicates; alone it runs the study, flags beside it override it")
    parser.add_argument("--protocol", type=protocol_arg, default=None, metavar="NAME[,NAME...]",
                        help="the protocols to run side by side, comma-separated: any with variants, e.g. "
                             "consilium (formats), single (formats), board (modes) (default: consilium)")
    parser.add_argument("--formats", "--format", dest="formats", default=None,
                        help="formats of the protocols run in formats (consilium, single), comma-separated "
                             "(default: both)")
    parser.add_argument("--modes", default=None, help="board modes, comma-separated (default: both)")
    for kind in variant_kinds().values():  # each other kind a protocol declares (a plugin's) names its own flag
        if kind.kind not in VARIANT_FIELDS:
            parser.add_argument(kind.flag, dest=f"variants_{kind.kind}", default=None, metavar=",".join(kind.values),
                                help=f"{kind.kind} of {', '.join(kind.protocols)}, comma-separated (default: all)")
    add_model_arguments(parser)
    parser.add_argument("--extra-model", action="append", default=[], metavar="SPEC",
                        help="more panel models; each gets its own arms (repeatable)")
    parser.add_argument("--moderator-model", default=None, metavar="SPEC",
                        help="the moderator's model in every arm (default: the arm's panel model); not with --ray")
    parser.add_argument("--judge", action="append", default=[], metavar="RUBRIC", help="rubric(s) to score with")
    parser.add_argument("--judge-model", action="append", default=None, metavar="SPEC",
                        help="the judge's model (needed with --judge): a spec, SPEC@BASE_URL[#KEY_VAR] or a model "
                             "config file (a judge on its own server); given again, a jury (docs/judges.md, Juries)")
    add_scope_argument(parser)
    add_decoding_argument(parser)
    parser.add_argument("--wall-limit", type=positive_float, default=None, metavar="SECONDS",
                        help="per-arm wall-clock limit; an arm past it is recorded as failed")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed, and the seed of --sample (default 0)")
    parser.add_argument("--temperature", type=finite_float, default=None,
                        help="sampling temperature, 0 to 2 (default 0)")
    parser.add_argument("--max-rounds", type=positive_int, default=None,
                        help="review rounds of the protocols that have them (default 5)")
    add_role_labels_argument(parser)
    add_otel_argument(parser)
    parser.add_argument("--limit", type=positive_int, default=None,
                        help="only the first N cases, in natural order (mac-2 before mac-10; a .jsonl: its first N)")
    parser.add_argument("--sample", type=positive_int, default=None, metavar="N",
                        help="only N cases drawn at random with --seed (default 0), the same N for the same seed; "
                             "recorded in the manifest")
    parser.add_argument("--allow-missing-reference", action="store_true",
                        help="run even when cases lack what a --judge rubric scores against (reference.diagnosis "
                             "for nmb-diagnosis-match, …): their judgements are not evaluable; without it the "
                             "cohort is refused before anything runs")
    parser.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR",
                        help="finish an interrupted cohort with its own settings (from its manifest.json)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default runs/)")
    parser.add_argument("--estimate", action="store_true",
                        help="print the calls, tokens and dollars per stage of the panel and each rubric, "
                             "then stop: no model is called and nothing is written (docs/cohorts.md)")
    parser.add_argument("--like", type=Path, default=None, metavar="RUN_DIR",
                        help="with --estimate: take the rounds and tokens per call from this earlier cohort's "
                             "traces and judgements (default: the protocols' bounds, as a range)")
    from consilium.cli import cohort_merge_cmd

    parser.add_argument("--shard", type=shard_arg, default=None, metavar="I/N",
                        help="run only shard I of N of the cases (by a hash of the case id); join the N shard "
                             "folders with `cohort merge` (docs/scale.md)")
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help="run the cases as Ray tasks, one partition per CPU of the cluster at ADDRESS "
                             "(default: $RAY_ADDRESS, else a local Ray); needs pip install consilium[ray]")
    parser.set_defaults(func=run)
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
