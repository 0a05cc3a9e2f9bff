"""``consilium otb score FILE.jsonl``: OpenTumorBoard's deterministic scores of responses made anywhere, as
the authors' code computes them (docs/opentumorboard.md, "Scoring as the authors do")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from consilium.cli.table import SUMMARIES

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("otb", help=SUMMARIES["otb"])
    actions = parser.add_subparsers(dest="otb_action", metavar="ACTION", required=True)
    score = actions.add_parser("score", help="score a JSONL of responses; one JSON object per line on stdout")
    score.add_argument("file", type=Path, help="JSONL (or .jsonl.gz): response, optional reference_conclusion, "
                                               "response_truncated, valid_response_length, response_length_limit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from consilium.otb.responses import score_lines

    scored = list(score_lines(args.file))  # all or nothing: a bad line prints no partial output
    for row in scored:
        print(json.dumps(row))
    return 0
