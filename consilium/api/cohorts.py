"""The library's cohorts: every (case, model, protocol, variant) arm run, optionally judged, as ``consilium
cohort`` runs them, and a folder of traces judged as ``consilium judge RUN_DIR`` judges it (docs/api.md).

A cohort is planned by the command line's own planner (consilium/cli/cohort_plan.py) from the flags its
typed arguments stand for, and run by the same ``run_plan``: the same run folder, manifest, ``arms.csv``,
``arms.jsonl``, resume and judging. Its arguments are what the plan is made of, so an error names the flag
an argument stands for (``--cases: required …``), as on the command line.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.api.runs import JudgeModels, judge_setups
from consilium.api.sync import run_sync as _sync
from consilium.cases import Case
from consilium.cli import build_parser
from consilium.cli.cohort_execute import run_plan, sorted_rows
from consilium.cli.cohort_plan import new_plan, resume_plan
from consilium.cli.judge_cmd import judgement_path, trace_files
from consilium.cli.judge_replace import check_replace, judge_label, rebuild_judgements_csv
from consilium.cohort.protocols import protocol_list
from consilium.cohort.rows import counts
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import read_trace
from consilium.judges.answers import Scope, check_scope
from consilium.judges.decoding import JudgeDecoding
from consilium.judges.many import judge_files
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import AnyTrace
from consilium.models.factory import ModelOptions
from consilium.models.refs import parse_refs
from consilium.spec.manifest import CohortManifest, read_manifest

__all__ = ["CohortResult", "ajudge_run", "arun_cohort", "judge_run", "run_cohort"]

Names = str | Sequence[str]


@dataclass(frozen=True)
class CohortResult:
    """A cohort run: its folder, the rows of its ``arms.csv`` (one per arm, in the file's order, as the
    cohort wrote them) and its counts (``arms``, ``completed``, ``failed``, ``resumed``)."""

    run_dir: Path
    rows: list[dict[str, Any]]
    counts: dict[str, int]

    @property
    def manifest(self) -> CohortManifest:
        """The cohort's ``manifest.json``: every setting it ran with."""
        return read_manifest(self.run_dir)

    @property
    def judgements_csv(self) -> Path | None:
        """``judgements.csv``, when the cohort was judged."""
        path = self.run_dir / "judgements.csv"
        return path if path.is_file() else None


def _names(value: Names | None) -> list[str] | None:
    return None if value is None else [value] if isinstance(value, str) else list(value)


def _model_specs(models: Any) -> list[str] | None:
    """The panel's specs; none at all, or a model object (a cohort's arms name their model by spec, and
    resume rebuilds it from there), is a :class:`UserError`."""
    given = None if models is None else [models] if isinstance(models, str) or not isinstance(
        models, Sequence) else list(models)
    if given is not None and not given:
        raise UserError("models: give at least one model spec")
    objects = sorted({type(m).__name__ for m in given or [] if not isinstance(m, str)})
    if objects:
        raise UserError(f"models: run_cohort takes model spec strings (e.g. 'openai:gpt-4o-mini', "
                        f"'langchain:MODULE:FACTORY'), not a {', '.join(objects)} object")
    return given


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise UserError(f"{name}: must be positive, got {value!r}")


def _cohort_flags(cases: str | Path | None, *, models: Names | None, moderator: str | None, protocols: Names | None,
                  formats: Names | None, modes: Names | None, config: str | Path | None, seed: int | None,
                  temperature: float | None, max_rounds: int | None, wall_limit: float | None,
                  role_labels: str | None, judges: Names | None, judge_model: Names | None, scope: Scope | None,
                  experiment: str | Path | None, out: str | Path | None, concurrency: int | None,
                  limit: int | None, resume: str | Path | None, sample: int | None = None,
                  allow_missing_reference: bool = False, judge_decoding: JudgeDecoding | None = None) -> Any:
    """The ``cohort`` command line the arguments stand for: the parser's defaults, then each argument given."""
    for name, value in (("concurrency", concurrency), ("limit", limit), ("sample", sample),
                        ("max_rounds", max_rounds), ("wall_limit", wall_limit)):
        _positive(name, value)
    args = build_parser().parse_args(["cohort"])
    panel = _model_specs(models)
    given: dict[str, Any] = {
        "cases": cases, "config": config, "experiment": experiment, "out": out, "resume": resume,
        "model": panel[0] if panel else None, "moderator_model": moderator,
        "seed": seed, "temperature": temperature, "max_rounds": max_rounds, "wall_limit": wall_limit,
        "role_labels": role_labels, "scope": scope, "concurrency": concurrency, "limit": limit, "sample": sample,
        "judge_decoding": judge_decoding,
        "formats": ",".join(_names(formats) or []) or None, "modes": ",".join(_names(modes) or []) or None,
    }
    for name in ("cases", "config", "experiment", "out", "resume"):
        if given[name] is not None:
            given[name] = Path(given[name])
    for name, value in given.items():
        if value is not None:
            setattr(args, name, value)
    args.extra_model = panel[1:] if panel else []
    args.allow_missing_reference = allow_missing_reference
    # Several: a jury, as --judge-model given for each (docs/judges.md, Juries); each as the manifest records it
    # (consilium/models/refs.py), so a resume names it in the form the cohort kept; one judge twice is refused.
    jury = [ref.record for ref in parse_refs(_names(judge_model) or [], flag="judge_model")]
    args.judge_model, args.jury_models = (jury[0] if jury else None), jury[1:]
    args.judge = _names(judges) or []
    if protocols is not None:
        args.protocol = protocol_list(",".join(_names(protocols) or []), flag="--protocol")
    return args


def _planned_and_run(args: Any) -> CohortResult:
    plan = resume_plan(args) if args.resume is not None else new_plan(args)
    kept: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    run_plan(plan, kept)
    rows = sorted_rows(kept)
    return CohortResult(run_dir=plan.run_dir, rows=rows, counts=counts(rows))


async def arun_cohort(cases: str | Path | None = None, *, models: Names | None = None,
                      moderator: str | None = None, protocols: Names | None = None, formats: Names | None = None,
                      modes: Names | None = None, config: str | Path | None = None, seed: int | None = None,
                      temperature: float | None = None, max_rounds: int | None = None,
                      wall_limit: float | None = None, role_labels: str | None = None, judges: Names | None = None,
                      judge_model: Names | None = None, scope: Scope | None = None,
                      experiment: str | Path | None = None, out: str | Path | None = None,
                      concurrency: int | None = None, limit: int | None = None,
                      resume: str | Path | None = None, sample: int | None = None,
                      allow_missing_reference: bool = False,
                      judge_decoding: JudgeDecoding | None = None) -> CohortResult:
    """Run a cohort as ``consilium cohort`` does (each argument is the flag of its name: ``models`` the
    ``--model`` and ``--extra-model`` specs, ``protocols`` ``--protocol``, ``judges`` ``--judge``, ``config``
    a ``--config`` file, ``experiment`` an experiment file, ``resume`` a run folder to finish, ``sample`` N
    cases drawn with ``seed``) and return its folder, its arms.csv rows and counts. A failed arm is a row
    with status ``failed``, not an exception."""
    args = _cohort_flags(cases, models=models, moderator=moderator, protocols=protocols, formats=formats,
                         modes=modes, config=config, seed=seed, temperature=temperature, max_rounds=max_rounds,
                         wall_limit=wall_limit, role_labels=role_labels, judges=judges, judge_model=judge_model,
                         scope=scope, experiment=experiment, out=out, concurrency=concurrency, limit=limit,
                         resume=resume, sample=sample, allow_missing_reference=allow_missing_reference,
                         judge_decoding=judge_decoding)
    # The cohort runs its own event loop (as the CLI's does): on a worker thread, in the caller's context.
    return await asyncio.to_thread(contextvars.copy_context().run, _planned_and_run, args)


def run_cohort(cases: str | Path | None = None, *, models: Names | None = None, moderator: str | None = None,
               protocols: Names | None = None, formats: Names | None = None, modes: Names | None = None,
               config: str | Path | None = None, seed: int | None = None, temperature: float | None = None,
               max_rounds: int | None = None, wall_limit: float | None = None, role_labels: str | None = None,
               judges: Names | None = None, judge_model: Names | None = None, scope: Scope | None = None,
               experiment: str | Path | None = None, out: str | Path | None = None,
               concurrency: int | None = None, limit: int | None = None,
               resume: str | Path | None = None, sample: int | None = None,
               allow_missing_reference: bool = False,
               judge_decoding: JudgeDecoding | None = None) -> CohortResult:
    """:func:`arun_cohort`, from plain code or a notebook."""
    return _sync(arun_cohort(cases, models=models, moderator=moderator, protocols=protocols, formats=formats,
                             modes=modes, config=config, seed=seed, temperature=temperature,
                             max_rounds=max_rounds, wall_limit=wall_limit, role_labels=role_labels, judges=judges,
                             judge_model=judge_model, scope=scope, experiment=experiment, out=out,
                             concurrency=concurrency, limit=limit, resume=resume, sample=sample,
                             allow_missing_reference=allow_missing_reference, judge_decoding=judge_decoding))


async def ajudge_run(paths: str | Path | Sequence[str | Path], rubric: str | Rubric, *, judge_model: JudgeModels,
                     components: Sequence[str] | None = None, reference_answer: str | None = None,
                     scope: Scope | None = None, concurrency: int = 4,
                     options: ModelOptions | None = None, force: bool = False,
                     judge_decoding: JudgeDecoding | None = None) -> list[Judgement]:
    """Score every trace under a run folder (or the trace files named) with a rubric, as ``consilium judge
    RUN_DIR`` does: each judgement is written beside its trace (``<case>.<variant>.judge.<rubric>.json``) and
    returned, in the order of the trace files, ``concurrency`` at a time. A judgement another judge (or judge
    prompt) made is refused unless ``force``; a cohort folder's ``judgements.csv`` is rebuilt to match.
    ``judge_decoding`` is the judge's decoding order (``--judge-decoding``; None: the rubric's pin, else the
    backend's default; docs/judges.md, Decoding order)."""
    _positive("concurrency", concurrency)
    used = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    unknown = [c for c in components or [] if c not in used.components]
    if unknown:
        raise UserError(f"components: rubric {used.name} does not score {', '.join(unknown)} "
                        f"(it scores {', '.join(used.components)})")
    files = trace_files([Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths])
    check_scope(scope, [used], ((f"{path} (case {trace.case_id})", Case.model_validate(trace.case))
                                for path in files for trace in (read_trace(path),)))
    setups, own = judge_setups(judge_model, options, scope=scope, reference_answer=reference_answer,
                               decoding=judge_decoding)
    finished: dict[int, Judgement] = {}

    def done(position: int, path: Path, trace: AnyTrace, rubric: Rubric, judgement: Judgement) -> None:
        write_text_atomic(judgement_path(path, rubric.name), judgement.model_dump_json(indent=2) + "\n")
        finished[position] = judgement

    try:
        if not force:
            check_replace((judgement_path(path, used.name) for path in files), used,
                          judge_label([s.model for s in setups], [s.name for s in setups]), flag="force=True")
        await judge_files(((used, path) for path in files), setups, done, limit=concurrency,
                          components=list(components) if components else None)
    finally:
        for model in own:
            await model.aclose()
    for folder in dict.fromkeys(Path(p).resolve() for p in ([paths] if isinstance(paths, str | Path) else paths)
                                if Path(p).is_dir()):
        rebuild_judgements_csv(folder)
    return [finished[position] for position in sorted(finished)]


def judge_run(paths: str | Path | Sequence[str | Path], rubric: str | Rubric, *, judge_model: JudgeModels,
              components: Sequence[str] | None = None, reference_answer: str | None = None,
              scope: Scope | None = None, concurrency: int = 4,
              options: ModelOptions | None = None, force: bool = False,
              judge_decoding: JudgeDecoding | None = None) -> list[Judgement]:
    """:func:`ajudge_run`, from plain code or a notebook."""
    return _sync(ajudge_run(paths, rubric, judge_model=judge_model, components=components,
                            reference_answer=reference_answer, scope=scope, concurrency=concurrency,
                            options=options, force=force, judge_decoding=judge_decoding))
