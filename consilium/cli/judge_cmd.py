"""``consilium judge``: score traces with a rubric judge and write a judgement beside each trace (the
library's :func:`consilium.api.judging.judge_folder`, as many at a time as the judge's ``--concurrency``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from consilium.cli.options import add_model_arguments, model_options, model_spec, non_negative_int, positive_int
from consilium.cli.table import SUMMARIES
from consilium.judges.answers import SCOPES
from consilium.judges.decoding import DECODINGS
from consilium.judges.rubric import COMPONENTS, rubric_names
from consilium.models.refs import ModelRef, parse_refs
from consilium.spec.connection import default_concurrency

__all__ = ["add_decoding_argument", "add_scope_argument", "judge_specs", "register", "run"]


def add_scope_argument(parser: argparse.ArgumentParser) -> None:
    """``--scope`` of the four-decision rubric (opentumorboard.txt App. E.2 L194), shared with ``cohort``."""
    parser.add_argument("--scope", choices=SCOPES, default=None,
                        help="four-decision scope: frozen locks the dimensions the case's reference.decisions leaves "
                             "null to -1 in the judge's schema (training protocol); judge lets the judge decide "
                             "scope from the reference conclusion (evaluation protocol). Default: frozen when the "
                             "case labels its decisions, judge otherwise")


def add_decoding_argument(parser: argparse.ArgumentParser) -> None:
    """``--judge-decoding``, the judge's decoding order (docs/judges.md, Decoding order), shared with ``cohort``."""
    parser.add_argument("--judge-decoding", choices=DECODINGS, default=None,
                        help="constrained: the schema enforced from the first attempt; paper: schema-free attempts "
                             "and repairs first, then one constrained attempt (npcbench.txt App. D.2). Default: "
                             "the rubric's pin (npc-signed-criteria: paper), else constrained where the judge's "
                             "backend enforces schemas and paper where it does not")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("judge", help=SUMMARIES["judge"])
    parser.add_argument("paths", type=Path, nargs="+", metavar="TRACE|RUN_DIR", help="trace files or run folders")
    parser.add_argument("--rubric", required=True, help=f"rubric name ({', '.join(rubric_names())}) or a YAML file")
    parser.add_argument("--component", action="append", choices=COMPONENTS, default=None,
                        help="component(s) to score (default: every one the rubric applies to)")
    add_model_arguments(parser, default=None, flag="--judge-model", repeatable=True)
    parser.add_argument("--max-tokens", type=positive_int, default=512, help="output tokens per judge call (512)")
    parser.add_argument("--max-repairs", type=non_negative_int, default=2,
                        help="retries showing the validation error (2)")
    parser.add_argument("--k", type=positive_int, default=5, help="ranked candidates for pass@k (default 5)")
    parser.add_argument("--reference-answer", default=None,
                        help="the reference answer for a Specialist Turn whose question the case's reference.answers "
                             "does not answer (otb-clinical-equivalence); the case's own answer to the question wins")
    add_scope_argument(parser)
    add_decoding_argument(parser)
    parser.add_argument("--calibration", type=Path, default=None,
                        help="isotonic calibration file from `calibrate isotonic` to apply to the scores")
    parser.add_argument("--force", action="store_true",
                        help="replace judgements another judge model, jury or judge prompt made (refused otherwise)")
    parser.add_argument("--prompt-file", action="append", default=[], metavar="STAGE=PATH",
                        help="your own system prompt for a judging stage (the rubric's name, or otb-scope for the "
                             "frozen scope's call), sent verbatim and recorded by hash (docs/judges.md)")
    parser.set_defaults(func=run)


def judge_specs(args: argparse.Namespace) -> list[ModelRef]:
    """The judges: each ``--judge-model`` given (several: a jury; each a spec, ``SPEC@BASE_URL`` or a model
    config file: consilium/models/refs.py), else the model config's spec; the same judge twice is refused (a
    jury of one judge twice would count its vote twice)."""
    given: list[str] = args.model if isinstance(args.model, list) else []
    return parse_refs(given if len(given) > 1 else [model_spec(args)], flag=args.model_flag)


def run(args: argparse.Namespace) -> int:
    # Judging's own modules load here: `cohort` imports this module for its flags only.
    from consilium.api.judging import JudgeOptions, judge_folder
    from consilium.judges.coverage import print_coverage

    specs = judge_specs(args)  # a judge model must be named: fail before reading anything
    options = model_options(args)
    if len(specs) > 1 and not args.concurrency:  # a jury: what suits its slowest judge's backend, by default
        options = model_options(args, max_concurrency=min(options.max_concurrency,
                                                          default_concurrency(*(ref.spec for ref in specs))))
    done = judge_folder(args.paths, JudgeOptions(
        rubric=args.rubric, judges=tuple(specs), components=tuple(args.component) if args.component else None,
        max_tokens=args.max_tokens, max_repairs=args.max_repairs, k=args.k, reference_answer=args.reference_answer,
        scope=args.scope, judge_decoding=args.judge_decoding, calibration=args.calibration, force=args.force,
        timeout_s=args.timeout or 120.0, model_options=options, cli=True, prompt_files=tuple(args.prompt_file)))
    rubric = done.rubric
    judged_by = (f"judge model {done.models[0]}" if len(done.models) == 1 else
                 f"jury of {len(done.models)} judges: {', '.join(done.models)}")
    print(f"rubric {rubric.name} v{rubric.version} ({rubric.source}); {judged_by}")
    for each in done.traces:
        judgement, calls = each.judgement, each.judgement.usage.total.calls
        print(f"== {each.trace.name} -> {each.out.name} ({judgement.wall_s:.1f} s, {calls} calls)")
        for component, summary in judgement.aggregates.items():
            shown = {k: v for k, v in summary.items() if k not in ("scores", "items")}
            print(f"  {component:<15} " + ", ".join(f"{k}={_fmt(v)}" for k, v in shown.items()))
        rouge = judgement.overlap.get("rouge_l")
        if rouge:
            print(f"  {'rouge_l':<15} f1={rouge['f1']:.3f} against {rouge['against']}")
        similarity = judgement.overlap.get("semantic_similarity")
        if similarity:
            cosine = f"{similarity['cosine']:.3f}" if similarity["cosine"] is not None else similarity["note"]
            print(f"  {'similarity':<15} {cosine} ({similarity['model']})")
    if len(done.traces) > 1:
        print("== summary over the judged traces (per case, its replicates averaged first; rates with 95% Wilson "
              "intervals over the cases)")
        for row in done.summary:
            print(_summary_line(row, several_protocols=len({r["protocol"] for r in done.summary}) > 1,
                                several_models=len({r["model"] for r in done.summary}) > 1))
    for rebuilt in done.rebuilt:
        print(f"judgements: {rebuilt} (rebuilt from the judgement files)")
    # A rubric that could not be applied at all is a failure, not an empty result.
    return 1 if print_coverage(done.coverage) else 0


def _summary_line(row: dict[str, Any], several_protocols: bool, several_models: bool) -> str:
    """One row of :func:`summarise`: n is the cases (Wilson's n), the traces beside it when replicates made more."""
    stats = []
    for key, value in row.items():
        if isinstance(value, dict) and "rate" in value:
            low, high = value["wilson95"]
            stats.append(f"{key}={value['rate']:.3f} [{low:.3f}, {high:.3f}] (n={value['n']} cases)")
        elif isinstance(value, dict) and value.get("mean") is not None:
            stats.append(f"{key}={value['mean']:.3f} (n={value['n']} cases)")
    label = " ".join([row["protocol"]] * several_protocols + [row["model"]] * several_models + [row["variant"]])
    traces = f" ({row['traces']} traces)" if row["traces"] != row["cases"] else ""
    traces += f" failed={row['failed']}" if row["failed"] else ""
    notes = "".join(f"; {note}" for note in row.get("notes", []))
    return (f"  {label:<11} {row['component']:<15} cases={row['cases']}{traces} not_evaluable={row['not_evaluable']} "
            + ", ".join(stats) + notes)


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
