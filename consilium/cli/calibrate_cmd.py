"""``consilium calibrate agreement|isotonic|evolve|synthetic``: judges against physician ratings (and synthetic
ratings with known answers to check the statistics)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.calibration.agreement import agreement, agreement_groups, describe, scope_rows
from consilium.calibration.isotonic import fit_isotonic
from consilium.calibration.pairs import load_judgements, pair_ratings
from consilium.calibration.ratings import load_ratings
from consilium.calibration.report import write_agreement
from consilium.cli.options import fraction, positive_int, show_help
from consilium.cohort.progress import ItemProgress
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.judges.rubric import load_rubric
from consilium.judges.scope import out_of_scope_score, scale_points
from consilium.models.refs import parse_model_ref
from consilium.reports.partial import partial_line, partial_of, titled

__all__ = ["register"]


def _shared(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ratings", required=True, type=Path, help="physician ratings (.csv or .jsonl)")
    parser.add_argument("--judgements", required=True, type=Path, help="run folder with *.judge.RUBRIC.json files")
    parser.add_argument("--rubric", required=True, help="rubric name or YAML file")
    parser.add_argument("--seed", type=int, default=0, help="seed for bootstrap draws and splits (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default: JUDGEMENTS/calibration)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("calibrate", help="compare judges with physician ratings and calibrate them")
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


def _pairs(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    rubric = load_rubric(args.rubric)
    ratings = load_ratings(args.ratings, rubric)
    # A judge named as --judge-model named it (SPEC@BASE_URL#KEY_VAR, a model config file) is found by its name
    # on the jury: its spec, and its server if it has one (consilium/models/refs.py).
    judge = parse_model_ref(args.judge, flag="--judge").name if args.judge is not None else None
    pairs, unmatched = pair_ratings(ratings, load_judgements(args.judgements, rubric.name, judge), args.ratings)
    if not pairs:
        raise UserError(f"{args.ratings}: no rating matches a judge score in {args.judgements}")
    return rubric, ratings, pairs, unmatched


def run_agreement(args: argparse.Namespace) -> int:
    rubric, ratings, pairs, unmatched = _pairs(args)
    binary = sorted(rubric.scale) == [0, 1]
    outside = out_of_scope_score(rubric)
    with ItemProgress("bootstrap", len(agreement_groups(pairs))) as progress:
        rows = agreement(pairs, binary=binary, labels=scale_points(rubric), bootstrap=args.bootstrap,
                         seed=args.seed, out_of_scope=outside,
                         on_row=lambda row: progress.advance(row.criterion, f"{args.bootstrap} draws, n={row.n}"))
    scope = scope_rows(pairs, outside)
    out = args.out or args.judgements / "calibration"
    outputs = {p.output for p in pairs}
    notes = [f"rubric {rubric.name} v{rubric.version}; ratings {args.ratings} ({len(ratings)} ratings, "
             f"{len({r.rater for r in ratings})} raters); {len(pairs)} paired with judge scores, {unmatched} without; "
             f"{len(outputs)} rated outputs of {len({o[0] for o in outputs})} cases",
             f"95% intervals: {args.bootstrap} case-clustered bootstrap draws (cases with replacement, a case drawn "
             f"twice counted twice, each with all its rated outputs), seed {args.seed}, the same draws for every "
             "statistic",
             "statistics: scikit-learn cohen_kappa_score (quadratic weights for ordinal scales), scipy spearmanr/"
             "pearsonr, krippendorff.alpha (physicians and judge as raters; a unit is one output's component and "
             "criterion); binary rates per npcbench.txt Eq. A9",
             *([f"out of scope ({outside}) is no point of the scale: the statistics read in-scope scores only "
                "(n: pairs both scored in scope); agreement on scope is reported apart"] if scope else [])]
    done = partial_of(args.judgements)  # a stopped or running cohort: the judge's scores of its finished arms
    notes = [*([f"{partial_line(done)}: ratings of its missing arms pair with no judge score"] if done else []),
             *notes]
    paths = write_agreement(out, rows, pairs, binary=binary, scale=rubric.scale,
                            title=titled(done, f"Judge vs physicians: {rubric.name}"), notes=notes, scope=scope)
    keys = ("accuracy", "kappa", "balanced_agreement") if binary else ("mae", "qwk", "spearman")
    print("\n".join(notes[: 2 if done else 1]))
    for row in rows:
        print(f"  {row.criterion:<28} n={row.n:<5} " + "  ".join(f"{k}={describe(row, k)}" for k in keys)
              + f"  alpha={describe(row, 'alpha')}")
    for line in scope:
        agreed = line["percent_agreement"]
        print(f"  scope {line['criterion']:<22} n={line['n']:<5} percent_agreement="
              + ("–" if agreed is None else f"{agreed:.3f}"))
    print("report: " + ", ".join(str(p) for p in paths))
    return 0


def run_isotonic(args: argparse.Namespace) -> int:
    if not 0 < args.train_fraction < 1:
        raise UserError("--train-fraction: must be between 0 and 1")
    rubric, _, pairs, _ = _pairs(args)
    calibration = fit_isotonic(pairs, rubric=rubric.name, rubric_version=rubric.version, scale=scale_points(rubric),
                               out_of_scope=out_of_scope_score(rubric), train_fraction=args.train_fraction,
                               seed=args.seed, ratings=str(args.ratings))
    out = args.out or args.judgements / "calibration"
    path = calibration.save(out / f"isotonic.{rubric.name}.json")
    done = partial_of(args.judgements)
    if done is not None:
        print(partial_line(done))
    lines = [f"# {titled(done, f'Isotonic calibration: {rubric.name}')}", "",
             *([f"{partial_line(done)}: fitted on the judge's scores of its finished arms.", ""] if done else []),
             f"Fitted per component and criterion on {args.train_fraction:.0%} of cases (seed {args.seed}); MAE on "
             "the held-out cases before and after.", "", "| component/criterion | train n | test n | MAE before | "
             "MAE after |",
             "|---|---|---|---|---|"]
    for name, m in calibration.criteria.items():
        before = f"{m.mae_before:.3f}" if m.mae_before is not None else "–"
        after = f"{m.mae_after:.3f}" if m.mae_after is not None else "–"
        lines.append(f"| {name} | {m.train_n} | {m.test_n} | {before} | {after} |")
        print(f"  {name:<20} train={m.train_n:<4} test={m.test_n:<4} MAE {before} -> {after}")
    report = write_text_atomic(out / f"isotonic.{rubric.name}.md", "\n".join(lines) + "\n")
    print(f"calibration: {path}\nreport: {report}\napply with: consilium judge … --calibration {path}")
    return 0
