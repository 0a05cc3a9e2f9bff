"""``consilium simulate``: run a consilium (or another protocol that runs in formats, such as the single-specialist
baseline, ``--protocol single``) on a case and write one trace per format."""

from __future__ import annotations

import argparse
from pathlib import Path

from consilium import aio
from consilium.agents.records import FORMATS
from consilium.cases import Case, load_case
from consilium.cli.labels import add_role_labels_argument
from consilium.cli.options import add_model_arguments, add_run_arguments, model_options, model_spec, positive_int
from consilium.cli.simulate_human import add_human_arguments, run_human
from consilium.cli.simulate_run import DEFAULTS, config_of, finish, with_defaults
from consilium.cli.table import SUMMARIES
from consilium.errors import UserError
from consilium.fileio import make_folder
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import DEFAULT_MAX_TOKENS
from consilium.graphs.registry import AnyProtocol, chosen_variants, get_protocol, protocols, variant_kinds
from consilium.log import attach_run_log
from consilium.models.factory import build_model
from consilium.traces.config import RunConfig
from consilium.traces.io import new_run_id
from consilium.traces.schema import TraceBase

__all__ = ["format_protocols", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("simulate", help=SUMMARIES["simulate"])
    parser.add_argument("--case", type=Path, default=None, help="case file (.json, .yaml); required unless --resume")
    parser.add_argument("--protocol", default="consilium",
                        help="consilium (default), single (the primary role alone answers, with no panel, "
                             "synthesis or voting: the single-specialist baseline), or a plugin's protocol")
    parser.add_argument("--formats", "--format", dest="format", type=_formats, choices=[*FORMATS, "both"],
                        default="both", help="response format(s): free-form, structured, or both (also written "
                        "free-form,structured, as cohort takes it); both shares one role assignment (default: both)")
    for kind in variant_kinds().values():  # each other variant kind a protocol declares names its own flag
        if kind.kind != "formats":
            parser.add_argument(kind.flag, dest=f"variants_{kind.kind}", type=_names, default=None,
                                metavar=",".join(kind.values), help=f"{kind.kind} of {', '.join(kind.protocols)}")
    add_model_arguments(parser)
    parser.add_argument("--moderator-model", default=None, metavar="SPEC",
                        help="model for the moderator (default: the --model)")
    add_run_arguments(parser, config_file="configs/consilium.yaml", max_tokens=DEFAULT_MAX_TOKENS)
    parser.add_argument("--max-rounds", type=positive_int, default=None, help="review rounds (default 5)")
    parser.add_argument("--min-roles", type=positive_int, default=None, help="smallest panel (default 3)")
    parser.add_argument("--max-roles", type=positive_int, default=None, help="largest panel (default 6)")
    parser.add_argument("--budget-tokens", type=positive_int, default=None,
                        help="stop a format's run before a call that could take it past this many tokens")
    add_role_labels_argument(parser)
    add_human_arguments(parser)
    parser.set_defaults(func=run, **dict.fromkeys(DEFAULTS))


def _formats(text: str) -> str:
    """``--formats``: one format, ``both``, or both formats comma-separated (as ``cohort --formats``)."""
    names = {part.strip() for part in text.split(",") if part.strip()}
    return "both" if "," in text and names == set(FORMATS) else text


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def format_protocols() -> list[str]:
    """The protocols that run a case in formats (``--formats``), the consilium first."""
    return [name for name, p in protocols().items() if p.variants and p.variant_flag == "--formats"]


def run(args: argparse.Namespace) -> int:
    if args.human is not None or args.answers is not None or args.resume is not None:
        return run_human(args)  # a person at the table: checkpointed, resumable (cli/simulate_human.py)
    args = with_defaults(args)
    if args.case is None:
        raise UserError("--case: a case file is required (or --resume RUN_DIR to continue a paused run)")
    case = load_case(args.case)
    protocol = get_protocol(args.protocol)
    if protocol.uses_slides or not protocol.variants:
        raise UserError(f"--protocol: {protocol.name!r} is not run by simulate (see `consilium board` and "
                        "`consilium turn`)")
    config = config_of(args, protocol)
    formats: list[str] = (list(FORMATS) if args.format == "both" else [args.format]) \
        if protocol.variant_kind == "formats" \
        else chosen_variants(protocol, getattr(args, f"variants_{protocol.variant_kind}"))
    other = [k.flag for k in variant_kinds().values() if getattr(args, f"variants_{k.kind}", None) is not None
             and k.kind != protocol.variant_kind]
    if other:
        raise UserError(f"{other[0]}: protocol {protocol.name!r} runs in {protocol.variant_kind} "
                        f"({protocol.variant_flag})")
    options = model_options(args)
    panel = build_model(model_spec(args), options)
    moderator = build_model(args.moderator_model, options) if args.moderator_model else panel
    run_id = new_run_id(case.id)
    attach_run_log(make_folder(args.out / run_id))  # an unwritable --out is refused before any call
    traces = aio.run(_run(protocol, case, formats, RunModels(panel=panel, moderator=moderator), config, run_id))
    return finish(args, protocol, run_id, case, traces, config)


async def _run(protocol: AnyProtocol, case: Case, formats: list[str], models: RunModels, config: RunConfig,
               run_id: str) -> list[TraceBase]:
    try:
        return list(await protocol.run_arm(case, formats, models, config, run_id=run_id))
    finally:
        await models.panel.aclose()
        if models.moderator is not models.panel:
            await models.moderator.aclose()
