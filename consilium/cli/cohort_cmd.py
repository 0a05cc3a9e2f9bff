"""``consilium cohort``: every (case, model, format) arm of a cohort, optionally judged."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from consilium import aio
from consilium.agents.records import FORMATS, Format
from consilium.cases import Case, case_files
from consilium.cli.judge_cmd import add_scope_argument
from consilium.cli.options import (
    ModelConfigFile,
    add_model_arguments,
    model_options,
    model_spec,
    positive_float,
    positive_int,
    run_config,
)
from consilium.cohort.index import INDEX_FIELDS, ArmIndex
from consilium.cohort.manifest import (
    CohortManifest,
    CohortSettings,
    ModelSettings,
    RunLock,
    clean_temp_files,
    new_manifest,
    read_manifest,
    write_cohort_manifest,
)
from consilium.cohort.progress import ArmTally
from consilium.cohort.resume import base_url_for_resume, refuse_conflicts
from consilium.cohort.run import (
    ARM_COLUMNS,
    CohortArm,
    CohortRun,
    append_jsonl,
    check_arm_paths,
    load_cohort_files,
    relative,
    run_cohort,
    write_csv,
)
from consilium.cohort.tables import CsvLog
from consilium.datafiles import first_error, load_data_file, read_data_file
from consilium.errors import UserError
from consilium.fileio import make_folder, write_text_atomic
from consilium.judges.answers import Scope, check_scope
from consilium.judges.coverage import judging_coverage, print_coverage, shortened_input
from consilium.judges.many import judge_files
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import AnyTrace, JudgeSetup
from consilium.log import attach_run_log, get_logger, log_file
from consilium.models import ChatModel
from consilium.models.factory import ModelOptions, build_model
from consilium.protocols.base import RunModels
from consilium.protocols.board.config import BoardConfig
from consilium.protocols.board.run import slide_images
from consilium.protocols.consilium.config import ConsiliumConfig
from consilium.redact import redact_url
from consilium.traces.io import new_run_id

__all__ = ["register", "run"]

log = get_logger(__name__)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("cohort", help="run a consilium on every case × model × format, optionally judged")
    parser.add_argument("--cases", type=Path, default=None,
                        help="folder of case files or AgentClinic .jsonl (required unless --resume)")
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
    parser.add_argument("--concurrency", type=positive_int, default=None,
                        help="model calls in flight across all arms (default 4)")
    parser.add_argument("--judge", action="append", default=[], metavar="RUBRIC", help="rubric(s) to score with")
    parser.add_argument("--judge-model", default=None, metavar="SPEC", help="the judge's model (needed with --judge)")
    add_scope_argument(parser)
    parser.add_argument("--wall-limit", type=positive_float, default=None, metavar="SECONDS",
                        help="per-arm wall-clock limit; an arm past it is recorded as failed")
    parser.add_argument("--limit", type=positive_int, default=None, help="only the first N cases")
    parser.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR",
                        help="finish an interrupted cohort with its own settings (from its manifest.json)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default runs/)")
    from consilium.cli import cohort_merge_cmd
    from consilium.cohort.shard import shard_arg

    parser.add_argument("--shard", type=shard_arg, default=None, metavar="I/N",
                        help="run only shard I of N of the cases (by a hash of the case id); join the N shard "
                             "folders with `cohort merge` (docs/scale.md)")
    parser.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                        help="run the cases as Ray tasks, one partition per CPU of the cluster at ADDRESS "
                             "(default: $RAY_ADDRESS, else a local Ray); needs pip install consilium[ray]")
    parser.set_defaults(func=run)
    cohort_merge_cmd.register(parser)


Mode = Literal["agents", "single"]
MODES: tuple[Mode, ...] = ("agents", "single")


class Experiment(BaseModel):
    """An experiment setup file (configs/experiments/*.yaml)."""

    # Strict, as the run configs are: a bad format or mode names the file's field, not a flag.
    model_config = ConfigDict(extra="forbid", strict=True)

    description: str = ""
    protocol: Literal["consilium", "board"] = "consilium"
    formats: list[Format] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    modes: list[Mode] = Field(default_factory=lambda: list(MODES), min_length=1)
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


@dataclass
class Plan:
    """A cohort ready to run: new, or resumed from its manifest."""

    run_dir: Path
    settings: CohortSettings
    cases: list[Case]
    config: ConsiliumConfig | BoardConfig
    rubrics: list[Rubric]
    options: ModelOptions
    manifest: CohortManifest | None = None  # the resumed cohort's
    scope: Scope | None = None  # the four-decision scope protocol (--scope)
    images: dict[str, tuple[str, ...]] = field(default_factory=dict)  # case id → its slide images (boards)


def _slide_images(protocol: str, found: list[tuple[Case, Path | None]]) -> dict[str, tuple[str, ...]]:
    """Each board case's slide images, resolved against its file's folder as `board --case` resolves
    them, so a cohort's vision models see the slides too (opentumorboard.txt App. B.1 L160); a JSONL
    case has no folder and no images."""
    if protocol != "board":
        return {}
    return {case.id: slide_images(case, file) for case, file in found if file is not None and case.slides}


def _case_places(source: Path, cases: list[Case]) -> list[tuple[str, Case]]:
    """Each case with the file it came from, for an error that names it."""
    if source.is_dir():
        return list(zip([str(p) for p in case_files(source)], cases, strict=False))
    return [(f"{source} (case {c.id})" if source.suffix == ".jsonl" else str(source), c) for c in cases]


def _config_for(protocol: str, args: argparse.Namespace, experiment: Experiment) -> ConsiliumConfig | BoardConfig:
    flags = {"timeout_s": args.timeout, "wall_limit_s": args.wall_limit}
    model: type[ConsiliumConfig] | type[BoardConfig] = BoardConfig if protocol == "board" else ConsiliumConfig
    # Layers: the defaults, the experiment's run settings, a --config file, then flags.
    in_file = read_data_file(args.config, "config") if args.config else None
    under = {k: v for k, v in experiment.run.items() if not (isinstance(in_file, dict) and k in in_file)}
    return run_config(model, args.config, {**under, **flags})


def _variants(protocol: str, args: argparse.Namespace, experiment: Experiment | None) -> tuple[str, ...]:
    if protocol == "board":
        if args.formats:
            raise UserError("--formats: a board cohort has modes (--modes agents,single), not formats")
        return _modes(args.modes or ",".join(experiment.modes if experiment else ["agents", "single"]))
    if args.modes:
        raise UserError("--modes: a consilium cohort has formats (--formats free-form,structured), not modes")
    return _formats(args.formats or ",".join(experiment.formats if experiment else list(FORMATS)))


def absolute_spec(spec: str) -> str:
    """A spec that names a file (``scripted:``, ``gguf:``, ``replay:``) with its path made absolute, so a
    resume from another folder runs the same model, never a like-named file there."""
    kind, _, arg = spec.partition(":")
    if kind in FILE_SPECS and arg and not Path(arg).is_absolute():
        return f"{kind}:{Path(arg).resolve()}"
    return spec


FILE_SPECS = ("scripted", "gguf", "replay")


def _rubric_ref(name: str) -> str:
    """How a judge is recorded: a shipped rubric by name, a rubric file by absolute path."""
    path = Path(name)
    return str(path.resolve()) if path.suffix in (".yaml", ".yml") and path.exists() else name


def _model_file_concurrency(args: argparse.Namespace) -> int | None:
    path = getattr(args, "model_config", None)
    return load_data_file(path, ModelConfigFile, "model config").max_concurrency if path is not None else None


def _api_key_env(args: argparse.Namespace) -> str | None:
    path = getattr(args, "model_config", None)
    return load_data_file(path, ModelConfigFile, "model config").api_key_env if path is not None else None


def _new_plan(args: argparse.Namespace) -> Plan:
    if args.cases is None:
        raise UserError("--cases: required (a folder of case files or a .jsonl file), or --resume RUN_DIR")
    experiment = load_experiment(args.experiment) if args.experiment else Experiment()
    protocol = args.protocol or experiment.protocol
    found = load_cohort_files(args.cases)[: args.limit]
    cases = [case for case, _ in found]
    variants = _variants(protocol, args, experiment)
    config = _config_for(protocol, args, experiment)
    judges = args.judge or experiment.judges
    if judges and not args.judge_model:
        raise UserError("--judge-model: a judged cohort needs a judge model (never the panel's by default)")
    rubrics = [load_rubric(name, flag="--judge") for name in judges]
    check_scope(args.scope, rubrics, _case_places(args.cases, cases))
    specs = list(dict.fromkeys(absolute_spec(spec) for spec in [model_spec(args), *args.extra_model]))
    # --concurrency is the cohort's word for a model's --max-concurrency (calls in flight across all arms).
    concurrency = args.concurrency or args.max_concurrency or _model_file_concurrency(args) or 4
    options = model_options(args, max_concurrency=concurrency)
    settings = CohortSettings(
        protocol=protocol, variants=list(variants), models=specs, cases=str(args.cases.resolve()), limit=args.limit,
        case_hashes={c.id: c.content_hash() for c in cases}, config=config.model_dump(mode="json"),
        judges=[_rubric_ref(name) for name in judges],
        judge_model=args.judge_model, judge_scope=args.scope, concurrency=concurrency,
        model=ModelSettings(
            base_url=redact_url(options.base_url) if options.base_url else None,
            schema_dialect=options.schema_dialect, http_client=options.http_client,
            max_concurrency=options.max_concurrency, timeout=options.timeout_s,
            max_attempts=options.retry.max_attempts, retry_base_delay=options.retry.base_delay_s,
            no_cache=bool(args.no_cache), cache_path=str(args.cache_path.resolve()) if args.cache_path else None,
            api_key_env=_api_key_env(args)))
    return Plan(run_dir=(args.out or Path("runs")) / new_run_id("cohort"), settings=settings, cases=cases,
                config=config, rubrics=rubrics, options=options, scope=args.scope,
                images=_slide_images(protocol, found))


def _resume_plan(args: argparse.Namespace) -> Plan:
    run_dir: Path = args.resume
    manifest = read_manifest(run_dir)
    s = manifest.settings
    experiment = load_experiment(args.experiment) if args.experiment else None
    variants = _variants(s.protocol, args, experiment if experiment else None) \
        if (args.formats or args.modes or experiment) else None
    specs = None
    if args.model or args.model_config or args.extra_model:
        first = absolute_spec(model_spec(args)) if (args.model or args.model_config) else s.models[0]
        extra = [absolute_spec(spec) for spec in args.extra_model]
        specs = list(dict.fromkeys([first, *extra])) if extra else [first, *s.models[1:]]
    config_values = None
    if args.config is not None:
        loaded = read_data_file(args.config, "config") or {}
        model: type[ConsiliumConfig] | type[BoardConfig] = BoardConfig if s.protocol == "board" else ConsiliumConfig
        run_config(model, args.config, {})  # a malformed file is reported as for a new cohort
        config_values = loaded if isinstance(loaded, dict) else {}
    given_options = model_options(args, max_concurrency=s.concurrency) if args.model_config else None
    refuse_conflicts(args, manifest, run_dir, variants=variants, specs=specs, experiment=experiment,
                     config_values=config_values, model_options=given_options)
    if not Path(s.cases).exists():
        raise UserError(f"--resume: the cohort's cases, {s.cases}, are gone; a resumed cohort runs the cases it "
                        "started with")
    found = load_cohort_files(Path(s.cases))[: s.limit]
    cases = [case for case, _ in found]
    hashes = {c.id: c.content_hash() for c in cases}
    for case_id in dict.fromkeys([*s.case_hashes, *hashes]):
        if hashes.get(case_id) != s.case_hashes.get(case_id):
            what = "is new" if case_id not in s.case_hashes else "is gone" if case_id not in hashes else "changed"
            raise UserError(f"--resume: {s.cases}: case {case_id!r} {what} since the cohort started; a resumed "
                            "cohort runs the cases it started with")
    config = (BoardConfig if s.protocol == "board" else ConsiliumConfig).model_validate(s.config)
    rubrics = [load_rubric(name, flag="--judge") for name in s.judges]
    check_scope(s.judge_scope, rubrics, _case_places(Path(s.cases), cases))
    kept = argparse.Namespace(
        model_config=None, base_url=base_url_for_resume(args, manifest, os.environ.get("OPENAI_BASE_URL")),
        schema_dialect=s.model.schema_dialect, http_client=s.model.http_client,
        max_concurrency=s.model.max_concurrency, timeout=s.model.timeout or s.config.get("timeout_s"),
        max_attempts=s.model.max_attempts, retry_base_delay=s.model.retry_base_delay, no_cache=s.model.no_cache,
        cache_path=Path(s.model.cache_path) if s.model.cache_path else None)
    overrides: dict[str, object] = {"max_concurrency": s.concurrency}
    if s.model.api_key_env:
        key = os.environ.get(s.model.api_key_env)
        if not key:
            raise UserError(f"--resume: the cohort's key comes from ${s.model.api_key_env}, which is not set")
        overrides["api_key"] = key
    options = model_options(kept, **overrides)
    return Plan(run_dir=run_dir, settings=s, cases=cases, config=config, rubrics=rubrics, options=options,
                manifest=manifest, scope=s.judge_scope, images=_slide_images(s.protocol, found))


def run(args: argparse.Namespace) -> int:
    from consilium.cli import cohort_scale_cmd  # --shard, --ray: the same plan, run beyond this process

    if cohort_scale_cmd.wanted(args):
        return cohort_scale_cmd.run(args)
    plan = _resume_plan(args) if args.resume is not None else _new_plan(args)
    arms, models, judge = prepare(plan)
    make_folder(plan.run_dir)
    with RunLock(plan.run_dir):
        manifest = open_manifest(plan)
        try:
            return _execute(plan, arms, models, judge, manifest)
        except Exception as exc:
            record_abort(plan, manifest, exc)
            raise


def prepare(plan: Plan) -> tuple[list[CohortArm], dict[str, ChatModel], ChatModel | None]:
    """The plan's arms, refused if two would share a file, and its models, every one opened before
    anything is written: a bad spec or model file leaves no run folder."""
    s = plan.settings
    arms = [CohortArm(case, spec, tuple(s.variants), s.protocol, plan.images.get(case.id, ()))
            for case in plan.cases for spec in s.models]
    check_arm_paths(arms, plan.manifest.layout if plan.manifest is not None else "sharded")
    models = {spec: build_model(spec, plan.options) for spec in s.models}
    judge = build_model(s.judge_model, plan.options) if plan.rubrics and s.judge_model else None
    return arms, models, judge


def open_manifest(plan: Plan) -> CohortManifest:
    """Under the run's lock: the run log attached, a resumed folder's temp files cleaned, and the
    manifest written as running before any call, so a killed cohort has its settings."""
    attach_run_log(plan.run_dir)
    if plan.manifest is not None:
        removed = clean_temp_files(plan.run_dir)
        log.info("cohort_resumed", run_id=plan.run_dir.name, temp_files_removed=removed)
        manifest = plan.manifest.model_copy(update={"status": "running", "error": None})
    else:
        manifest = new_manifest(plan.run_dir.name, list(sys.argv), plan.settings, plan.config.seed)
    write_cohort_manifest(plan.run_dir, manifest)
    return manifest


def record_abort(plan: Plan, manifest: CohortManifest, exc: Exception) -> None:
    """A user error (a refused key, a full disk) or a bug: the manifest says the cohort stopped, and
    why; a user error is raised again as one line naming the stop (the caller re-raises a bug)."""
    reason = str(exc) if isinstance(exc, UserError) else f"internal error: {type(exc).__name__}: {exc}"
    write_cohort_manifest(plan.run_dir, manifest.model_copy(update={"status": "aborted", "error": reason}))
    if isinstance(exc, UserError):
        raise UserError(f"cohort stopped: {exc}") from None


def _execute(plan: Plan, arms: list[CohortArm], models: dict[str, ChatModel], judge: ChatModel | None,
             manifest: CohortManifest) -> int:
    run_dir, s = plan.run_dir, plan.settings
    run_id = run_dir.name
    stacks = {spec: RunModels(panel=model, moderator=model) for spec, model in models.items()}  # one limit per spec
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    tally = ArmTally()  # running counts: re-summing every row on each arm is quadratic
    total = len(arms) * len(s.variants)
    started = time.perf_counter()
    on_terminal = sys.stderr.isatty()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("failed {task.fields[failed]} · {task.fields[tokens]:,} tokens"),
                        TimeRemainingColumn(), disable=not on_terminal, transient=True)
    task = progress.add_task("arms", total=total, failed=0, tokens=0)
    # arms.csv grows row by row as arms finish (complete at every moment), then is rewritten sorted.
    arms_log = CsvLog(run_dir / "arms.csv", (*ARM_COLUMNS, *_variant_columns(s.protocol)))

    def on_done(row: dict[str, Any]) -> None:
        key = (row["case_id"], row["model_spec"], row["format"])
        if not row.get("resumed"):  # a resumed arm's row is in arms.jsonl already
            append_jsonl(run_dir / "arms.jsonl", row)
        row = {k: v for k, v in row.items() if k not in INDEX_FIELDS}
        tally.add(row, rows.get(key))
        rows[key] = row
        arms_log.append([row])
        progress.update(task, advance=1, failed=tally.failed, tokens=tally.tokens)
        log.info("arm_finished", case=row["case_id"], model=row["model_spec"], format=row["format"],
                 status=row["status"], resumed=bool(row.get("resumed")), error=row.get("error") or None)
        if not on_terminal:  # a batch job's log shows progress, one line per arm, with the bar's counts
            note = " (resumed)" if row.get("resumed") else f": {row['error']}" if row["status"] != "completed" else ""
            print(f"[{tally.done}/{total}] {row['case_id']} · {row['format']} · {row['model_spec']}: "
                  f"{row['status']}{note} · failed {tally.failed} · {tally.tokens:,} tokens", file=sys.stderr,
                  flush=True)

    resumed = plan.manifest is not None
    cohort = CohortRun(run_dir=run_dir, run_id=run_id, configs={s.protocol: plan.config}, on_done=on_done,
                       layout=manifest.layout,
                       index=ArmIndex.read(run_dir / "arms.jsonl") if resumed else ArmIndex())

    async def go() -> None:
        try:
            await run_cohort(arms, stacks, cohort, parallel_arms=max(1, s.concurrency))
        finally:
            for model in models.values():
                await model.aclose()

    def table() -> list[dict[str, Any]]:
        return sorted(rows.values(), key=lambda r: (r["case_id"], r["model_spec"], r["format"]))

    try:
        with arms_log, progress:
            aio.run(go())
    finally:
        write_csv(run_dir / "arms.csv", table(), fields=ARM_COLUMNS)  # the arms finished, even if stopped
    return finish(plan, manifest, table, judge, started)


def finish(plan: Plan, manifest: CohortManifest, table: Callable[[], list[dict[str, Any]]],
           judge: ChatModel | None, started: float, where: str = "") -> int:
    """After the arms (run here or on Ray, ``where`` says which): judge the completed ones, mark the
    manifest completed with its traces and counts, print the summary; 1 when some arm failed."""
    run_dir = plan.run_dir
    arms_csv = run_dir / "arms.csv"
    judged = _judge(table(), plan, run_dir, judge) if judge is not None else []
    done_rows = table()
    counts = _counts(done_rows)
    traces = [r["trace"] for r in done_rows if r.get("trace")]
    write_cohort_manifest(run_dir, manifest.model_copy(update={"status": "completed", "traces": traces,
                                                                "counts": counts}))
    elapsed = time.perf_counter() - started
    print(f"cohort {run_dir.name}: {len(done_rows)} arms ({counts['completed']} completed, {counts['failed']} "
          f"failed, {counts['resumed']} resumed) in {elapsed:.1f} s{where}; {len(done_rows) / elapsed:.2f} arms/s")
    print(f"arms: {arms_csv}" + (f"\njudgements: {judged[0]}" if judged else ""))
    if counts["failed"]:
        logged = log_file()
        print(f"consilium: {counts['failed']} of {len(done_rows)} arms failed; their errors are in {arms_csv} "
              f"(columns failed_stage, error)" + (f" and {logged}" if logged else ""), file=sys.stderr)
        return 1
    return 0


def _variant_columns(protocol: str) -> tuple[str, ...]:
    """The columns a protocol's arms add to :data:`ARM_COLUMNS` (consilium/cohort/run.py arm_row, board_row)."""
    if protocol == "board":
        return ("turns", "roles", "format_exact", "format_dense", "format_score", "repetition_penalty")
    return ("rounds", "r1_dissent", "roles")


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    completed = sum(r["status"] == "completed" for r in rows)
    return {"arms": len(rows), "completed": completed, "failed": len(rows) - completed,
            "resumed": sum(bool(r.get("resumed")) for r in rows)}


#: The columns of judgements.csv, in order.
JUDGEMENT_COLUMNS = ("case_id", "model", "format", "rubric", "component", "criterion", "score", "calibrated_score",
                     "not_evaluable", "reason", "shortened_input", "judgement")


def _judge(rows: list[dict[str, Any]], plan: Plan, run_dir: Path, model: ChatModel) -> list[Path]:
    """Every completed arm with every rubric, as many judgements at a time as the cohort's concurrency,
    each trace read as its judgement starts. Rows are appended to judgements.csv as judgements finish;
    at the end the file is rewritten atomically in rubric, then arms.csv, order."""
    setup = JudgeSetup(model=model, scope=plan.scope)
    paths = [run_dir / r["trace"] for r in rows if r.get("trace") and r["status"] == "completed"]
    jobs = [(rubric, path) for rubric in plan.rubrics for path in paths]
    tables: dict[int, list[dict[str, Any]]] = {}
    judgements: list[Judgement] = []
    csv_log = CsvLog(run_dir / "judgements.csv", JUDGEMENT_COLUMNS)

    def done(position: int, path: Path, trace: AnyTrace, rubric: Rubric, judgement: Judgement) -> None:
        out = path.with_name(path.name.removesuffix(".trace.json") + f".judge.{rubric.name}.json")
        write_text_atomic(out, judgement.model_dump_json(indent=2) + "\n")
        judgements.append(judgement.model_copy(update={"calls": []}))  # its calls are in its file
        variant = f"board-{judgement.variant}" if trace.kind == "board" else judgement.variant
        tables[position] = [{"case_id": judgement.case_id, "model": trace.model, "format": variant,
                             "rubric": rubric.name, "component": item.component, "criterion": item.criterion,
                             "score": item.score, "calibrated_score": item.calibrated_score,
                             "not_evaluable": item.not_evaluable, "reason": item.reason or "",
                             # kept/total characters of a whole-case record cut to fit the judge's context
                             "shortened_input": shortened_input(item.detail),
                             "judgement": relative(out, run_dir)} for item in judgement.items]
        csv_log.append(tables[position])

    async def go() -> None:
        try:
            await judge_files(jobs, setup, done, limit=max(1, plan.settings.concurrency))
        finally:
            await model.aclose()

    with csv_log:
        aio.run(go())
    path = write_csv(run_dir / "judgements.csv", [row for position in sorted(tables) for row in tables[position]],
                     fields=JUDGEMENT_COLUMNS)
    # Per rubric and component: judged, not evaluable, the commonest reasons; a rubric of which nothing
    # could be judged is a warning on stderr, never a rubric silently missing from the tables.
    print_coverage(judging_coverage(judgements, [r.name for r in plan.rubrics]))
    return [path]
