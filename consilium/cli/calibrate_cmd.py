"""``consilium calibrate agreement|isotonic|evolve|synthetic``: judges against physician ratings (and synthetic
ratings with known answers to check the statistics)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consilium.cli.options import fraction, positive_int, show_help
from consilium.cli.table import SUMMARIES

__all__ = ["register"]


def _ratings_source(text: str) -> Path | str:
    return text if text.startswith(("postgresql://", "postgres://")) else Path(text)


def _shared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ratings", required=True, type=_ratings_source,
                        help="physician ratings (.csv or .jsonl), or a rating study: its run folder, its database "
                             "file or postgresql://… URL")
    parser.add_argument("--judgements", required=True, type=Path, help="run folder with *.judge.RUBRIC.json files")
    parser.add_argument("--rubric", required=True, help="rubric name or YAML file")
    parser.add_argument("--seed", type=int, default=0, help="seed for bootstrap draws and splits (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: JUDGEMENTS/calibration)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("calibrate", help=SUMMARIES["calibrate"])
    parser.set_defaults(func=show_help(parser))
    commands = parser.add_subparsers(dest="calibrate_command", metavar="SUBCOMMAND")
    agree = commands.add_parser("agreement", help="agreement statistics with bootstrap intervals")
    _shared(agree)
    agree.add_argument("--bootstrap", type=positive_int, default=1000,
                       help="case-clustered bootstrap draws (default 1000)")
    agree.set_defaults(func=run_agreement)
    _judge_flag(agree)
    iso = commands.add_parser("isotonic", help="fit per-criterion isotonic calibration on a training split")
    _shared(iso)
    iso.add_argument("--train-fraction", type=fraction, default=0.5, help="share of cases to fit on (default 0.5)")
    iso.set_defaults(func=run_isotonic)
    _judge_flag(iso)
    from consilium.cli.evolve_cmd import register_evolve

    register_evolve(commands, _shared, positive_int)
    synthetic = commands.add_parser("synthetic", help="synthetic ratings and judgements with known answers, for "
                                                      "checking the statistics")
    synthetic.add_argument("out", type=Path, metavar="OUT_DIR")
    synthetic.add_argument("--cases", type=positive_int, default=110, help="cases (default 110)")
    synthetic.add_argument("--judge", choices=("perfect", "off-by-one", "biased", "noisy"), default="perfect",
                           help="how the synthetic judge scores (default perfect)")
    synthetic.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    synthetic.set_defaults(func=run_synthetic)


def run_synthetic(args: argparse.Namespace) -> int:
    from consilium.calibration.synthetic import make_synthetic

    ratings, folder = make_synthetic(args.out, cases=args.cases, judge=args.judge, seed=args.seed)
    print(f"ratings: {ratings}\njudgements: {folder}")
    return 0



def _judge_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge", default=None, metavar="SPEC",
                        help="with jury judgements: this judge's scores instead of the jury's verdicts")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"ratings": args.ratings, "rubric": args.rubric, "seed": args.seed, "out": args.out, "judge": args.judge}


def run_agreement(args: argparse.Namespace) -> int:
    from consilium.api.calibrating import AgreementOptions, agreement
    from consilium.calibration.agreement import describe

    done = agreement(args.judgements, AgreementOptions(**_options(args), bootstrap=args.bootstrap))
    binary = sorted(done.rubric.scale) == [0, 1]
    keys = ("accuracy", "kappa", "balanced_agreement") if binary else ("mae", "qwk", "spearman")
    print("\n".join(done.notes[: 2 if done.done else 1]))
    for row in done.rows:
        print(f"  {row.criterion:<28} n={row.n:<5} " + "  ".join(f"{k}={describe(row, k)}" for k in keys)
              + f"  alpha={describe(row, 'alpha')}")
    for line in done.scope:
        agreed = line["percent_agreement"]
        print(f"  scope {line['criterion']:<22} n={line['n']:<5} percent_agreement="
              + ("–" if agreed is None else f"{agreed:.3f}"))
    print("report: " + ", ".join(str(p) for p in done.files))
    return 0


def run_isotonic(args: argparse.Namespace) -> int:
    from consilium.api.calibrating import IsotonicOptions, isotonic
    from consilium.reports.partial import partial_line

    done = isotonic(args.judgements, IsotonicOptions(**_options(args), train_fraction=args.train_fraction))
    if done.done is not None:
        print(partial_line(done.done))
    for name, m in done.calibration.criteria.items():
        before = f"{m.mae_before:.3f}" if m.mae_before is not None else "–"
        after = f"{m.mae_after:.3f}" if m.mae_after is not None else "–"
        print(f"  {name:<20} train={m.train_n:<4} test={m.test_n:<4} MAE {before} -> {after}")
    print(f"calibration: {done.path}\nreport: {done.report}\napply with: consilium judge … --calibration {done.path}")
    return 0
