"""``consilium board`` (a tumor-board meeting) and ``consilium turn`` (the Specialist Turn task)."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium.cli.labels import add_role_labels_argument
from consilium.cli.options import (
    add_model_arguments,
    add_run_arguments,
    model_options,
    model_spec,
    positive_int,
)
from consilium.cli.table import SUMMARIES
from consilium.graphs.board.config import BOARD_MAX_TOKENS, BoardConfig
from consilium.graphs.board.presets import PRESETS
from consilium.graphs.board.trace import BoardTrace, TurnTrace
from consilium.models.pricing import format_usd, stage_costs, trace_cost
from consilium.redact import clip
from consilium.spec.run_settings import run_config

__all__ = ["register", "run_board_command", "run_turn_command"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", required=True, type=Path, help="case file (.json, .yaml)")
    add_model_arguments(parser)
    add_run_arguments(parser, config_file="configs/board.yaml", max_tokens=BOARD_MAX_TOKENS)
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None,
                        help="otb-paper: as OpenTumorBoard's authors ran the open models (one call, temperature 0, "
                             "seed 0, max_tokens 65536 for a board and 8192 for a turn, no repair, a cut-off answer "
                             "kept and scored); otb-paper-reasoning: the same at temperature 0.6, as they ran the "
                             "open reasoning models; flags given beside it override it (docs/opentumorboard.md)")
    parser.add_argument("--prompt-file", action="append", default=[], metavar="STAGE=PATH",
                        help="your own system prompt for a stage (board_single: the one call of --mode single; "
                             "specialist_turn: a turn), e.g. the OpenTumorBoard authors' prompt files; the case "
                             "goes in their user message; recorded whole in the trace (docs/opentumorboard.md)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    board = sub.add_parser("board", help=SUMMARIES["board"])
    _common(board)
    board.add_argument("--mode", choices=["agents", "single"], default=None,
                       help="agents: a moderator and specialist agents, turn by turn; single: one call writes "
                            "the whole meeting (default: agents; the preset's, with --preset)")
    board.add_argument("--max-turns", type=positive_int, default=None, help="turn limit (agents mode; default 12)")
    board.add_argument("--discussion", choices=["open", "alternating"], default=None,
                       help="agents mode: open lets the moderator pass the floor for a direct reply and closes at "
                            "the turn limit; alternating is the older strict moderator-specialist alternation "
                            "(default: open)")
    board.add_argument("--min-roles", type=positive_int, default=None, help="smallest panel (default 2)")
    board.add_argument("--max-roles", type=positive_int, default=None, help="largest panel (default 6)")
    board.add_argument("--moderator-model", default=None, metavar="SPEC",
                       help="model for the moderator (default: the --model)")
    add_role_labels_argument(board)
    board.set_defaults(func=run_board_command)

    turn = sub.add_parser("turn", help=SUMMARIES["turn"])
    _common(turn)
    turn.add_argument("--role", required=True, help="the specialist, e.g. 'Radiation oncologist'")
    turn.add_argument("--question", required=True, help="the question put to the specialist")
    turn.set_defaults(func=run_turn_command)


def _config(args: argparse.Namespace) -> BoardConfig:
    flags = {"seed": args.seed, "temperature": args.temperature, "max_tokens": args.max_tokens,
             "timeout_s": args.timeout, "wall_limit_s": args.wall_limit, "preset": args.preset}
    for name in ("max_turns", "min_roles", "max_roles", "discussion", "role_labels"):
        flags[name] = getattr(args, name, None)
    return run_config(BoardConfig, args.config, flags)


def run_board_command(args: argparse.Namespace) -> int:
    from consilium.api.meetings import MeetingOptions, board_meeting

    done = board_meeting(args.case, args.mode, MeetingOptions(
        out=args.out, model=model_spec(args), moderator=args.moderator_model, config=_config(args),
        model_options=model_options(args), prompt_files=tuple(args.prompt_file)))
    _print_board(done.trace, done.path)
    return 0 if done.completed else 1


def run_turn_command(args: argparse.Namespace) -> int:
    from consilium.api.meetings import MeetingOptions, specialist_turn

    done = specialist_turn(args.case, args.role, args.question, MeetingOptions(
        out=args.out, model=model_spec(args), config=_config(args), model_options=model_options(args),
        prompt_files=tuple(args.prompt_file)))
    trace = done.trace
    print(f"== {trace.case_id} · Specialist Turn · {trace.role} [{trace.role_category}] · {trace.model} · "
          f"{trace.status}")
    print(f"  question: {trace.question}")
    print(f"  answer: {trace.answer}" if trace.answer is not None else f"  error: {trace.error}")
    _print_usage(trace)
    print(f"  trace: {done.path}")
    return 0 if done.completed else 1


def _print_usage(trace: BoardTrace | TurnTrace) -> None:
    for note in trace.notes:
        print(f"  note: {note}")
    print("  tokens by stage (input / output / calls · cost, unknown without prices):")  # as simulate shows them
    costs = stage_costs(trace)
    for stage, usage in trace.usage.by_stage.items():
        print(f"    {stage:<16} {usage.input_tokens:>7} / {usage.output_tokens:>6} / {usage.calls:>3}"
              f" · {format_usd(costs.get(stage))}")
    total = trace.usage.total
    print(f"    {'total':<16} {total.input_tokens:>7} / {total.output_tokens:>6} / {total.calls:>3}"
          f" · {format_usd(trace_cost(trace))}{' (estimated)' if total.estimated else ''}")
    print(f"  wall time: {trace.wall_s:.1f} s")


def _print_board(trace: BoardTrace, path: Path) -> None:
    print(f"== {trace.case_id} · board ({trace.mode}) · {trace.model} · {trace.status}")
    for role in trace.roles:
        print(f"  role: {role.label} [{role.category}]")
    print(f"  turns: {len(trace.turns)}; stop: {trace.stop_reason or '-'}")
    if trace.error:
        print(f"  error: {trace.error}")
    if trace.conclusion:
        print(f"  conclusion: {clip(trace.conclusion, 500)}")
    if trace.validation is not None:
        failed = ", ".join(c.name for c in trace.validation.failed) or "none"
        print(f"  format: exact {trace.validation.exact}, dense {trace.validation.dense:.3f}, "
              f"score {trace.validation.score:.3f}; failed checks: {failed}")
    _print_usage(trace)
    print(f"  trace: {path}")
