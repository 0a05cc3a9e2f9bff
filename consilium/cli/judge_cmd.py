"""``consilium judge``: score traces with a rubric judge and write a judgement beside each trace.

Traces are judged as many at a time as the judge model's ``--concurrency``, each read as its
judgement starts (consilium/judges/many.py), so judging a folder of 200k traces holds a handful in
memory, not all of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium import aio
from consilium.cases import Case
from consilium.cli.options import add_model_arguments, model_options, model_spec, non_negative_int, positive_int
from consilium.spec.connection import default_concurrency
from consilium.cohort.progress import ItemProgress
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import read_trace
from consilium.judges.answers import SCOPES, check_scope
from consilium.judges.decoding import DECODINGS
from consilium.judges.record import Judgement
from consilium.judges.rubric import COMPONENTS, Rubric, load_rubric, rubric_names
from consilium.models import ChatModel, GenerationSettings
from consilium.models.factory import build_ref
from consilium.models.refs import ModelRef, parse_refs
from consilium.runfolder.layout import trace_files as run_trace_files

if TYPE_CHECKING:
    from consilium.calibration.isotonic import Calibration
    from consilium.judges.aggregate import Arm
    from consilium.judges.runner import AnyTrace

__all__ = ["add_decoding_argument", "add_scope_argument", "judge_specs", "judgement_path", "register", "run",
           "trace_files"]


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
    parser = sub.add_parser("judge", help="score traces with a rubric judge")
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
    parser.set_defaults(func=run)


def judge_specs(args: argparse.Namespace) -> list[ModelRef]:
    """The judges: each ``--judge-model`` given (several: a jury; each a spec, ``SPEC@BASE_URL`` or a model
    config file: consilium/models/refs.py), else the model config's spec; the same judge twice is refused (a
    jury of one judge twice would count its vote twice)."""
    given: list[str] = args.model if isinstance(args.model, list) else []
    return parse_refs(given if len(given) > 1 else [model_spec(args)], flag=args.model_flag)


def trace_files(paths: list[Path]) -> list[Path]:
    """The traces named, and every ``*.trace.json`` of a folder named (a cohort keeps them in ``arms/<model>/``;
    a run nested in it, such as an ablation's under ``ablate/``, is not its: consilium/runfolder/layout.py), each
    once."""
    files: dict[Path, Path] = {}
    for path in paths:
        if path.is_dir():
            found = run_trace_files(path)  # the run's own: not an ablation's or another run's nested in it
        elif path.is_file():
            found = [path]
        else:
            raise UserError(f"{path}: no such trace file or run folder")
        for file in found:
            files.setdefault(file.resolve(), file)
    if not files:
        raise UserError(f"{', '.join(map(str, paths))}: no *.trace.json files to judge (searched its subfolders, not "
                        f"the runs nested in it)")
    return list(files.values())


def judgement_path(trace_file: Path, rubric: str) -> Path:
    return trace_file.with_name(trace_file.name.removesuffix(".trace.json") + f".judge.{rubric}.json")


def run(args: argparse.Namespace) -> int:
    # Judging's own modules load here: `cohort` imports this module for its flags only.
    from consilium.calibration.isotonic import load_calibration
    from consilium.cli.judge_replace import check_replace, judge_label, rebuild_judgements_csv
    from consilium.judges.aggregate import summarise
    from consilium.judges.coverage import judging_coverage, print_coverage
    from consilium.judges.many import judge_files
    from consilium.judges.runner import JudgeSetup

    specs = judge_specs(args)  # a judge model must be named: fail before reading anything
    rubric = load_rubric(args.rubric)
    unknown = [c for c in args.component or [] if c not in rubric.components]
    if unknown:
        raise UserError(f"--component: rubric {rubric.name} does not score {', '.join(unknown)} "
                        f"(it scores {', '.join(rubric.components)})")
    calibration = load_calibration(args.calibration, rubric.name) if args.calibration else None
    files = trace_files(args.paths)
    # Only --scope frozen with a four-decision rubric needs every case before judging: they are read
    # one at a time for it, and let go.
    check_scope(args.scope, [rubric], ((f"{path} (case {trace.case_id})", Case.model_validate(trace.case))
                                       for path in files for trace in (read_trace(path),)))
    options = model_options(args)
    if len(specs) > 1 and not args.concurrency:  # a jury: what suits its slowest judge's backend, by default
        options = model_options(args, max_concurrency=min(options.max_concurrency,
                                                          default_concurrency(*(ref.spec for ref in specs))))
    models = [build_ref(ref, options) for ref in specs]  # one judge, or a jury (docs/judges.md, Juries)
    if not args.force:  # another judge's judgements are results: never replaced without a word
        try:
            check_replace((judgement_path(path, rubric.name) for path in files), rubric,
                          judge_label(models, [r.name for r in specs]), flag="--force")
        except UserError:
            aio.run(_close(models))
            raise
    setups = [JudgeSetup(model=model, settings=GenerationSettings(temperature=0.0, seed=0, max_tokens=args.max_tokens,
                                                                  timeout_s=args.timeout or 120.0),
                         max_repairs=args.max_repairs, k=args.k, reference_answer=args.reference_answer,
                         scope=args.scope, name=spec.name, decoding=args.judge_decoding)
              for spec, model in zip(specs, models, strict=True)]
    finished: dict[int, tuple[Path, Path, Judgement, Arm]] = {}
    spent = [0]  # judge calls so far, for the progress line

    def done(position: int, path: Path, trace: AnyTrace, used: Rubric, judgement: Judgement) -> None:
        if args.calibration is not None:
            judgement = _calibrate(judgement, calibration, args.calibration)
        out = write_text_atomic(judgement_path(path, used.name), judgement.model_dump_json(indent=2) + "\n")
        # its calls are in its file; the summary keeps models apart and counts a failed run's missing answer
        finished[position] = (path, out, judgement.model_copy(update={"calls": []}), _arm(trace, used))
        spent[0] += judgement.usage.total.calls
        progress.advance(path.name, f"{judgement.usage.total.calls} calls, {judgement.wall_s:.1f} s",
                         tail=f"{spent[0]:,} judge calls")

    async def go() -> None:
        try:
            await judge_files(((rubric, path) for path in files), setups, done, limit=options.max_concurrency,
                              components=args.component)
        finally:
            for model in models:
                await model.aclose()

    with ItemProgress("traces", len(files)) as progress:
        aio.run(go())
    judgements = [finished[position][2] for position in sorted(finished)]
    judged_by = (f"judge model {models[0].model_id}" if len(models) == 1 else
                 f"jury of {len(models)} judges: {', '.join(m.model_id for m in models)}")
    print(f"rubric {rubric.name} v{rubric.version} ({rubric.source}); {judged_by}")
    for position in sorted(finished):
        path, out, judgement, _ = finished[position]
        print(f"== {path.name} -> {out.name} ({judgement.wall_s:.1f} s, {judgement.usage.total.calls} calls)")
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
    if len(judgements) > 1:
        print("== summary over the judged traces (per case, its replicates averaged first; rates with 95% Wilson "
              "intervals over the cases)")
        rows = summarise(judgements, [finished[position][3] for position in sorted(finished)])
        for row in rows:
            print(_summary_line(row, several_protocols=len({r["protocol"] for r in rows}) > 1,
                                several_models=len({r["model"] for r in rows}) > 1))
    for folder in dict.fromkeys(p.resolve() for p in args.paths if p.is_dir()):
        rebuilt = rebuild_judgements_csv(folder)  # a cohort's table says what its judgement files now say
        if rebuilt is not None:
            print(f"judgements: {rebuilt} (rebuilt from the judgement files)")
    # A rubric that could not be applied at all is a failure, not an empty result.
    return 1 if print_coverage(judging_coverage(judgements, [rubric.name])) else 0


async def _close(models: list[ChatModel]) -> None:
    for model in models:
        await model.aclose()


def _calibrate(judgement: Judgement, calibration: Calibration | None, path: Path) -> Judgement:
    """Calibrated scores beside the raw ones, only on the (component, criterion) a map was fitted for;
    a component's calibrated mean beside its mean, over its calibrated items."""
    if calibration is None:
        return judgement
    items = [i.model_copy(update={"calibrated_score": calibration.apply(i.component, i.criterion, i.score)})
             for i in judgement.items]
    aggregates = {}
    for component, summary in judgement.aggregates.items():
        calibrated = [i.calibrated_score for i in items if i.component == component
                      and not i.detail.get("whole_case") and i.calibrated_score is not None]
        extra = {"calibrated_mean": sum(calibrated) / len(calibrated)} if calibrated and "mean" in summary else {}
        aggregates[component] = {**summary, **extra}
    return judgement.model_copy(update={"items": items, "aggregates": aggregates,
                                        "calibration": str(path)})


def _arm(trace: AnyTrace, rubric: Rubric) -> Arm:
    """The judged trace as the summary counts it: its panel model, whether its run failed, and whether its
    case has the rubric's reference (None: a reference that is not the case's, such as a turn's answer)."""
    from consilium.judges.aggregate import Arm
    from consilium.judges.runner import reference_for

    case = Case.model_validate(trace.case)
    reference = None if not rubric.kind.needs_reference or rubric.reference in ("answer", "none") \
        else reference_for(rubric, case) is not None
    return Arm(str(getattr(trace, "model", "-")), getattr(trace, "status", "completed") != "completed", reference)


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
