"""``consilium study create|export|status|revoke|link``: blinded physician rating studies of a run folder
(docs/studio-web.md, "Rating studies"). Each subcommand parses its flags and makes one API call
(consilium/api/studies.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.options import show_help
from consilium.cli.table import SUMMARIES

__all__ = ["register"]

_DATABASE = ("study database: a SQLite file or a postgresql://… URL (default: RUN_DIR/study.sqlite3)")


def _run_and_database(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the cohort's run folder")
    parser.add_argument("--database", default=None, metavar="URL", help=_DATABASE)


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",")]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("study", help=SUMMARIES["study"])
    parser.set_defaults(func=show_help(parser))
    commands = parser.add_subparsers(dest="study_command", metavar="SUBCOMMAND")
    create = commands.add_parser("create", help="draw the outputs to rate, assign them, print each rater's link")
    _run_and_database(create)
    create.add_argument("--rubric", required=True, help="the rubric whose criteria the raters score (ai-consilium)")
    create.add_argument("--raters", required=True, type=_names, metavar="A,B,C", help="the raters' names")
    create.add_argument("--per-output", type=int, default=1, metavar="K",
                        help="raters per output, balanced across raters (default 1)")
    create.add_argument("--sample", type=int, default=None, metavar="N",
                        help="rate N outputs, stratified by model and variant (default: every output)")
    create.add_argument("--seed", type=int, default=0, help="seed of the sample, assignment and orders (default 0)")
    create.add_argument("--components", type=_names, default=None, metavar="C1,C2",
                        help="the components to rate (default: every one the rubric scores with criteria)")
    create.set_defaults(func=run_create)
    export = commands.add_parser("export", help="the ratings file calibrate reads (.csv or .jsonl), de-blinded")
    _run_and_database(export)
    export.add_argument("--out", required=True, type=Path, metavar="FILE", help="ratings file (.csv or .jsonl)")
    export.set_defaults(func=run_export)
    status = commands.add_parser("status", help="progress per rater and agreement so far")
    _run_and_database(status)
    status.set_defaults(func=run_status)
    revoke = commands.add_parser("revoke", help="stop a rater's link (their answers stay)")
    _run_and_database(revoke)
    revoke.add_argument("--rater", required=True, help="the rater's name")
    revoke.set_defaults(func=run_revoke)
    new = commands.add_parser("link", help="a new link for a rater, or the study's administrator (the old one stops "
                                           "working)")
    _run_and_database(new)
    whose = new.add_mutually_exclusive_group(required=True)
    whose.add_argument("--rater", help="the rater's name")
    whose.add_argument("--admin", action="store_true", help="the study's administrator link instead")
    new.set_defaults(func=run_link)


def run_create(args: argparse.Namespace) -> int:
    from consilium.api.studies import CreateStudyOptions, create_study
    from consilium.study.tokens import link

    made = create_study(args.run_dir, CreateStudyOptions(
        rubric=args.rubric, raters=args.raters, per_output=args.per_output, sample=args.sample, seed=args.seed,
        components=args.components, database=args.database))
    print(f"study {made.study_id} in {made.database}: {made.outputs} outputs, {made.assignments} assignments "
          f"({made.assignments // max(1, len(made.links))}-{-(-made.assignments // max(1, len(made.links)))} per "
          "rater)")
    for note in made.notes:
        print(f"note: {note}")
    print("private links (shown once; `consilium serve RUN_DIR` serves them; another --host/--port changes the "
          "address):")
    for rater, token in made.links.items():
        print(f"  {rater}: {link(token)}")
    print(f"  administrator: {link(made.admin_token)}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from consilium.api.studies import export_study

    done = export_study(args.run_dir, args.out, args.database)
    print(f"ratings: {done.path} ({done.rows} rows); not evaluable: {done.not_evaluable} answers (no row)")
    if done.notes is not None:
        print(f"notes (reasons and comments): {done.notes}")
    return 0


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def run_status(args: argparse.Namespace) -> int:
    from consilium.api.studies import study_status

    done = study_status(args.run_dir, args.database)
    print(f"study {done.study_id} ({done.rubric}) in {done.database}")
    for p in done.progress:
        print(f"  {p.rater:<20} {p.done}/{p.assigned} done" + ("  (revoked)" if p.revoked else ""))
    a = done.agreement
    print(f"inter-rater over {a.items} items rated twice or more: percent={_figure(a.percent)} "
          f"kappa({a.kappa_weights})={_figure(a.kappa)} alpha={_figure(a.alpha)}")
    print(f"judge vs physicians over {a.judge_pairs} pairs: percent={_figure(a.judge_percent)} "
          f"kappa({a.kappa_weights})={_figure(a.judge_kappa)}; not evaluable: {a.not_evaluable} answers")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    from consilium.api.studies import revoke_rater

    revoke_rater(args.run_dir, args.rater, args.database)
    print(f"{args.rater}: link revoked (their answers stay; `consilium study link` gives a new one)")
    return 0


def run_link(args: argparse.Namespace) -> int:
    from consilium.api.studies import new_admin_link, new_rater_link
    from consilium.study.tokens import link

    if args.admin:
        print(f"  administrator: {link(new_admin_link(args.run_dir, args.database))} (the old link stopped)")
        return 0
    print(f"  {args.rater}: {link(new_rater_link(args.run_dir, args.rater, args.database))} (the old link stopped)")
    return 0
