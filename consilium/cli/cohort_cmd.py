"""``consilium cohort``: every (case, model, format) arm of a cohort, optionally judged."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from consilium import aio
from consilium.agents.records import FORMATS, Format
from consilium.cli.options import add_model_arguments, model_options, model_spec, positive_int, run_config
from consilium.cohort.run import CohortArm, append_jsonl, load_cohort, run_cohort, write_csv
from consilium.datafiles import first_error, load_data_file
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.board import BoardConfig
from consilium.graphs.consilium import ConsiliumConfig
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models.factory import build_model
from consilium.simulate import RunModels
from consilium.traces.io import new_run_id, read_trace, write_manifest

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("cohort", help="run a consilium on every case × model × format, optionally judged")
    parser.add_argument("--cases", required=True, type=Path, help="folder of case files or AgentClinic .jsonl")
    parser.add_argument("--config", type=Path, default=None, help="YAML run settings (configs/consilium.yaml)")
    parser.add_argument("--experiment", type=Path, default=None, metavar="FILE",
                        help="an experiment setup (configs/experiments/*.yaml): protocol, variants, run settings, "
                             "judges; flags override it")
    parser.add_argument("--protocol", choices=["consilium", "board"], default=None,
                        help="consilium (formats) or tumor board (modes) (default: consilium)")
    parser.add_argument("--formats", default=None, help="consilium formats, comma-separated (default: both)")
    parser.add_argument("--modes", default=None, help="board modes, comma-separated (default: both)")
    add_model_arguments(parser)
    parser.add_argument("--extra-model", action="append", default=[], metavar="SPEC",
                        help="more panel models; each gets its own arms (repeatable)")
    parser.add_argument("--concurrency", type=positive_int, default=4,
                        help="model calls in flight across all arms (default 4)")
    parser.add_argument("--judge", action="append", default=[], metavar="RUBRIC", help="rubric(s) to score with")
    parser.add_argument("--judge-model", default=None, metavar="SPEC", help="the judge's model (needed with --judge)")
    parser.add_argument("--wall-limit", type=float, default=None, metavar="SECONDS",
                        help="per-arm wall-clock limit; an arm past it is recorded as failed")
    parser.add_argument("--limit", type=positive_int, default=None, help="only the first N cases")
    parser.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR", help="finish an interrupted cohort")
    parser.add_argument("--out", type=Path, default=Path("runs"), help="output folder (default runs/)")
    parser.set_defaults(func=run)


class Experiment(BaseModel):
    """An experiment setup file (configs/experiments/*.yaml)."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    protocol: Literal["consilium", "board"] = "consilium"
    formats: list[str] = ["free-form", "structured"]
    modes: list[str] = ["agents", "single"]
    run: dict[str, Any] = Field(default_factory=dict, description="ConsiliumConfig or BoardConfig settings")
    judges: list[str] = []


def load_experiment(path: Path) -> Experiment:
    experiment = load_data_file(path, Experiment, "experiment")
    try:
        (BoardConfig if experiment.protocol == "board" else ConsiliumConfig).model_validate(experiment.run)
    except ValidationError as exc:
        raise UserError(f"{path}: {first_error(exc, prefix='run.')}") from None
    return experiment


def _modes(text: str) -> tuple[str, ...]:
    names = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in names if m not in ("agents", "single")]
    if unknown or not names:
        raise UserError(f"--modes: unknown mode(s) {', '.join(unknown) or '(none)'} (agents, single)")
    return names


def _formats(text: str) -> tuple[Format, ...]:
    names = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = [f for f in names if f not in FORMATS]
    if unknown or not names:
        raise UserError(f"--formats: unknown format(s) {', '.join(unknown) or '(none)'} (free-form, structured)")
    return names  # type: ignore[return-value]


def run(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment) if args.experiment else Experiment()
    protocol = args.protocol or experiment.protocol
    cases = load_cohort(args.cases)[: args.limit]
    config: ConsiliumConfig | BoardConfig
    flags = {"timeout_s": args.timeout, "wall_limit_s": args.wall_limit}
    if protocol == "board":
        formats: tuple[str, ...] = _modes(args.modes or ",".join(experiment.modes))
        config = run_config(BoardConfig, args.config, {**experiment.run, **flags}) if not args.config else \
            run_config(BoardConfig, args.config, flags)
    else:
        formats = _formats(args.formats or ",".join(experiment.formats))
        config = run_config(ConsiliumConfig, args.config, {**experiment.run, **flags}) if not args.config else \
            run_config(ConsiliumConfig, args.config, flags)
    judges = args.judge or experiment.judges
    if judges and not args.judge_model:
        raise UserError("--judge-model: a judged cohort needs a judge model (never the panel's by default)")
    rubrics = [load_rubric(name) for name in judges]
    specs = [model_spec(args), *args.extra_model]
    options = model_options(args, max_concurrency=args.concurrency)
    models = {spec: RunModels(panel=build_model(spec, options), moderator=build_model(spec, options))
              for spec in dict.fromkeys(specs)}
    for spec in models:  # one stack per spec: panel and moderator share its concurrency limit
        models[spec] = RunModels(panel=models[spec].panel, moderator=models[spec].panel)
    run_dir = args.resume or args.out / new_run_id("cohort")
    run_id = run_dir.name
    run_dir.mkdir(parents=True, exist_ok=True)
    arms = [CohortArm(case, spec, formats, protocol) for case in cases for spec in models]
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("failed {task.fields[failed]} · {task.fields[tokens]:,} tokens"),
                        TimeRemainingColumn(), disable=not sys.stderr.isatty(), transient=True)
    task = progress.add_task("arms", total=len(arms) * len(formats), failed=0, tokens=0)

    def on_done(row: dict[str, Any]) -> None:
        rows.append(row)
        append_jsonl(run_dir / "arms.jsonl", row)
        failed = sum(r["status"] != "completed" for r in rows)
        tokens = sum(int(r.get("input_tokens") or 0) + int(r.get("output_tokens") or 0) for r in rows)
        progress.update(task, advance=1, failed=failed, tokens=tokens)

    async def go() -> None:
        try:
            await run_cohort(arms, models, config, run_dir=run_dir, run_id=run_id,
                             parallel_arms=max(1, args.concurrency), on_done=on_done)
        finally:
            for stack in models.values():
                await stack.panel.aclose()

    with progress:
        aio.run(go())
    rows.sort(key=lambda r: (r["case_id"], r["model_spec"], r["format"]))
    arms_csv = write_csv(run_dir / "arms.csv", rows)
    judged = _judge(rows, rubrics, args, run_dir) if rubrics else []
    traces = [Path(r["trace"]) for r in rows if r.get("trace")]
    write_manifest(run_dir, run_id=run_id, command=sys.argv,
                   config={**config.model_dump(), "protocol": protocol, "variants": list(formats),
                           "models": specs, "cases": str(args.cases)},
                   traces=traces, seed=config.seed)
    elapsed = time.perf_counter() - started
    done = sum(r["status"] == "completed" for r in rows)
    resumed = sum(bool(r.get("resumed")) for r in rows)
    print(f"cohort {run_id}: {len(rows)} arms ({done} completed, {len(rows) - done} failed, {resumed} resumed) "
          f"in {elapsed:.1f} s; {len(rows) / elapsed:.2f} arms/s")
    print(f"arms: {arms_csv}" + (f"\njudgements: {judged[0]}" if judged else ""))
    return 0


def _judge(rows: list[dict[str, Any]], rubrics: list[Any], args: argparse.Namespace, run_dir: Path) -> list[Path]:
    model = build_model(args.judge_model, model_options(args, max_concurrency=args.concurrency))
    setup = JudgeSetup(model=model)
    paths = [Path(r["trace"]) for r in rows if r.get("trace") and r["status"] == "completed"]
    table: list[dict[str, Any]] = []

    async def go() -> None:
        try:
            for rubric in rubrics:
                for path in paths:
                    trace = read_trace(path)
                    judgement = await judge_trace(trace, path.name, rubric, setup)
                    out = path.with_name(path.name.removesuffix(".trace.json") + f".judge.{rubric.name}.json")
                    write_text_atomic(out, judgement.model_dump_json(indent=2) + "\n")
                    for item in judgement.items:
                        variant = f"board-{judgement.variant}" if trace.kind == "board" else judgement.variant
                        table.append({"case_id": judgement.case_id, "model": trace.model,
                                      "format": variant, "rubric": rubric.name,
                                      "component": item.component, "criterion": item.criterion, "score": item.score,
                                      "not_evaluable": item.not_evaluable, "judgement": str(out)})
        finally:
            await model.aclose()

    aio.run(go())
    return [write_csv(run_dir / "judgements.csv", table)]
