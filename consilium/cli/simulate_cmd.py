"""``consilium simulate``: run a consilium on a case and write one trace per format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from consilium import aio
from consilium.agents.records import FORMATS, Format
from consilium.cases import Case, load_case
from consilium.cli.options import (
    add_model_arguments,
    add_run_arguments,
    model_options,
    model_spec,
    positive_int,
    run_config,
)
from consilium.fileio import make_folder
from consilium.log import attach_run_log
from consilium.models.factory import build_model
from consilium.protocols.base import RunModels
from consilium.protocols.consilium.config import DEFAULT_MAX_TOKENS, ConsiliumConfig
from consilium.protocols.consilium.run import run_case
from consilium.protocols.consilium.trace import Trace
from consilium.traces.io import new_run_id, trace_path, write_manifest, write_trace

__all__ = ["print_summary", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("simulate", help="run a consilium on a case and write its traces")
    parser.add_argument("--case", required=True, type=Path, help="case file (.json, .yaml)")
    parser.add_argument("--format", choices=[*FORMATS, "both"], default="both",
                        help="response format; both shares one role assignment (default: both)")
    add_model_arguments(parser)
    parser.add_argument("--moderator-model", default=None, metavar="SPEC",
                        help="model for the moderator (default: the --model)")
    add_run_arguments(parser, config_file="configs/consilium.yaml", max_tokens=DEFAULT_MAX_TOKENS)
    parser.add_argument("--max-rounds", type=positive_int, default=None, help="review rounds (default 5)")
    parser.add_argument("--min-roles", type=positive_int, default=None, help="smallest panel (default 3)")
    parser.add_argument("--max-roles", type=positive_int, default=None, help="largest panel (default 6)")
    parser.add_argument("--budget-tokens", type=positive_int, default=None,
                        help="stop a format's run before a call that could take it past this many tokens")
    parser.set_defaults(func=run)


def _config(args: argparse.Namespace) -> ConsiliumConfig:
    return run_config(ConsiliumConfig, args.config, {
        "max_rounds": args.max_rounds, "min_roles": args.min_roles, "max_roles": args.max_roles,
        "seed": args.seed, "temperature": args.temperature, "max_tokens": args.max_tokens,
        "budget_tokens": args.budget_tokens, "timeout_s": args.timeout, "wall_limit_s": args.wall_limit})


def run(args: argparse.Namespace) -> int:
    case = load_case(args.case)
    config = _config(args)
    formats: list[Format] = list(FORMATS) if args.format == "both" else [args.format]
    options = model_options(args)
    panel = build_model(model_spec(args), options)
    moderator = build_model(args.moderator_model, options) if args.moderator_model else panel
    run_id = new_run_id(case.id)
    attach_run_log(make_folder(args.out / run_id))  # an unwritable --out is refused before any call
    traces = aio.run(_run(case, formats, RunModels(panel=panel, moderator=moderator), config, run_id))
    paths = [write_trace(trace_path(args.out, run_id, case.id, t.format), t) for t in traces]
    write_manifest(args.out / run_id, run_id=run_id, command=sys.argv, config=traces[0].config, traces=paths,
                   seed=config.seed)
    for trace, path in zip(traces, paths, strict=True):
        print_summary(trace, path)
    return 0 if all(t.status == "completed" for t in traces) else 1


async def _run(case: Case, formats: list[Format], models: RunModels, config: ConsiliumConfig,
               run_id: str) -> list[Trace]:
    try:
        return await run_case(case, formats, models, config, run_id=run_id)
    finally:
        await models.panel.aclose()
        if models.moderator is not models.panel:
            await models.moderator.aclose()


def print_summary(trace: Trace, path: Path) -> None:
    print(f"== {trace.case_id} · {trace.format} · {trace.model} · {trace.status}")
    for role in trace.roles:
        kind = "primary" if role.primary else "supporting"
        print(f"  role: {role.label} [{role.category}] ({kind})")
    dissent = ", ".join(f"r{r.round} {r.dissent_fraction:.2f}" for r in trace.rounds)
    print(f"  rounds: {len(trace.rounds)} (dissent fraction {dissent or '-'}); stop: {trace.stop_reason or '-'}")
    if trace.error:
        print(f"  error: {trace.error}")
    if trace.final_report is not None:
        report = trace.final_report
        conclusion = (report.sections or {}).get("final_opinion") or report.text
        print(f"  final conclusion: {' '.join(conclusion.split())[:400]}")
    print("  tokens by stage (input / output / calls):")
    for stage, usage in trace.usage.by_stage.items():
        print(f"    {stage:<16} {usage.input_tokens:>7} / {usage.output_tokens:>6} / {usage.calls:>3}")
    total = trace.usage.total
    mark = " (estimated)" if total.estimated else ""
    print(f"    {'total':<16} {total.input_tokens:>7} / {total.output_tokens:>6} / {total.calls:>3}{mark}")
    print(f"  wall time: {trace.wall_s:.1f} s")
    print(f"  trace: {path}")
