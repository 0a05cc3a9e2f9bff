"""The library's cohorts: every (case, model, protocol, variant) arm run, optionally judged, as ``consilium
cohort`` runs them, and a folder of traces judged as ``consilium judge RUN_DIR`` judges it (docs/api.md).

A cohort is a study spec (consilium/spec/study.py): :func:`arun_cohort`'s keywords are the spec's fields,
its signature made from them, so an option added to the spec is a keyword here too. The library plans it
(consilium/cohort/plan.py, or consilium/cohort/plan_resume.py for ``resume``) and runs it
(consilium/cohort/execute.py): the same run folder, manifest, ``arms.csv``, ``arms.jsonl``, resume and judging
as the command line, which calls :func:`arun_cohort` too. An error names the flag a field stands for
(``--cases: required …``), as on the command line.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium.api.sync import sync_twin
from consilium.cohort.execute import run_plan, sorted_rows
from consilium.cohort.plan import Plan, new_plan
from consilium.cohort.plan_resume import resume_plan
from consilium.cohort.ray_run import require_ray
from consilium.cohort.rows import counts
from consilium.cohort.scale import run_on_ray, shard_plan
from consilium.errors import UserError
from consilium.graphs.registry import variant_kinds
from consilium.runfolder.folder import RunFolder
from consilium.spec.manifest import CohortManifest, read_manifest
from consilium.spec.study import StudySpec, study_of

if TYPE_CHECKING:  # the judges load where a run folder is judged: a cohort without judges starts without them
    from consilium.api.runs import JudgeModels
    from consilium.judges.answers import Scope
    from consilium.judges.decoding import JudgeDecoding
    from consilium.judges.record import Judgement
    from consilium.judges.rubric import Rubric
    from consilium.judges.runner import AnyTrace
    from consilium.models.factory import ModelOptions

__all__ = ["CohortResult", "ajudge_run", "arun_cohort", "judge_run", "plan_cohort", "resume_line", "run_cohort",
           "run_study", "study_keywords", "with_spec_keywords"]


@dataclass(frozen=True)
class CohortResult:
    """A cohort run: its folder, the rows of its ``arms.csv`` (one per arm, in the file's order, as the
    cohort wrote them) and its counts (``arms``, ``completed``, ``failed``, ``resumed``)."""

    run_dir: Path
    rows: list[dict[str, Any]]
    counts: dict[str, int]
    exit_code: int = 0  # 1 when an arm failed (the command's exit status)

    @property
    def manifest(self) -> CohortManifest:
        """The cohort's ``manifest.json``: every setting it ran with."""
        return read_manifest(self.run_dir)

    @property
    def judgements_csv(self) -> Path | None:
        """``judgements.csv``, when the cohort was judged."""
        path = RunFolder(self.run_dir).judgements_csv
        return path if path.is_file() else None


def _model_specs(models: Any) -> Any:
    """The panel's specs as given; a model object (a cohort's arms name their model by spec, and resume rebuilds
    it from there) is a :class:`UserError`."""
    given = [models] if isinstance(models, str) or not isinstance(models, Sequence) else list(models)
    objects = sorted({type(m).__name__ for m in given if not isinstance(m, str)})
    if objects:
        raise UserError(f"models: run_cohort takes model spec strings (e.g. 'openai:gpt-4o-mini', "
                        f"'langchain:MODULE:FACTORY'), not a {', '.join(objects)} object")
    return models


def study_keywords(cases: str | Path | None, keywords: dict[str, Any]) -> StudySpec:
    """The spec the API's keywords give (None: not given); a keyword naming a variant kind a protocol declares
    besides formats and modes (a plugin's ``tempos=``) is that kind's ``variants``."""
    values = {name: value for name, value in {"cases": cases, **keywords}.items()
              if value is not None and value is not False}
    if "models" in values:
        values["models"] = _model_specs(values["models"])
    kinds = {kind: values.pop(kind) for kind in variant_kinds()
             if kind not in StudySpec.model_fields and kind in values}
    if kinds:
        values["variants"] = {**values.get("variants", {}), **kinds}
    return study_of(values)


def plan_cohort(spec: StudySpec, *, experiment: str | Path | None = None, resume: str | Path | None = None) -> Plan:
    """The plan of the cohort ``spec`` describes (over the ``experiment`` file), or of the cohort in ``resume``
    finished with its own study (``spec`` may say it again; only what a resume may change may differ)."""
    exp = Path(experiment) if experiment is not None else None
    if resume is not None:
        return resume_plan(spec, Path(resume), exp)
    return new_plan(spec, exp)


def resume_line(plan: Plan) -> str | None:
    """What a resume says first: how much of its plan the folder holds (``resuming: partial cohort: 8 of 40
    planned arms finished (status: aborted: …); 32 planned arms missing``). Read before the folder is locked: a
    killed cohort's manifest still says running, and only the lock no one holds tells it from a live one,
    which the lock then refuses (so nothing is said of it here)."""
    if plan.manifest is None:
        return None
    from consilium.reports.partial import partial_line, partial_of  # the report's modules: a resume's only

    done = partial_of(plan.run_dir)
    return None if done is None or done.status == "running" else f"resuming: {partial_line(done)}"


def run_study(spec: StudySpec, *, experiment: str | Path | None = None,
              resume: str | Path | None = None) -> CohortResult:
    """The cohort ``spec`` describes, planned and run in this thread (the command line's call; :func:`arun_cohort`
    runs it on a worker thread): its cases cut to its ``shard`` (or a resumed folder's), its arms run here or,
    with ``ray``, as Ray tasks (consilium/cohort/scale.py)."""
    if spec.ray is not None:
        require_ray()  # before anything is read or written
    plan = shard_plan(plan_cohort(spec, experiment=experiment, resume=resume), spec.shard)
    kept: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    resuming = resume_line(plan)
    code = run_plan(plan, kept, resuming=resuming) if spec.ray is None \
        else run_on_ray(plan, spec.ray, kept, resuming=resuming)
    rows = sorted_rows(kept)
    return CohortResult(run_dir=plan.run_dir, rows=rows, counts=counts(rows), exit_code=code)


async def arun_cohort(cases: str | Path | None = None, *, experiment: str | Path | None = None,
                      resume: str | Path | None = None, **study: Any) -> CohortResult:
    """Run a cohort as ``consilium cohort`` does and return its folder, its arms.csv rows and counts. The
    keywords are the study spec's fields (consilium/spec/study.py: ``models`` the panel's specs, ``protocols``,
    ``formats``, ``judges`` the rubrics, ``judge_model`` the judge or a jury, ``config`` a run-settings file,
    ``sample`` N cases drawn with ``seed``, ``shard`` ``"I/N"`` only shard I of N of the cases, ``ray`` run the
    cases as Ray tasks on the cluster at that address, ``""`` the default one, …); ``experiment`` an experiment
    file under them, ``resume`` a run folder to finish. A failed arm is a row with status ``failed``, not an
    exception."""
    spec = study_keywords(cases, study)
    # The cohort runs its own event loop (as the CLI's does): on a worker thread, in the caller's context.
    return await asyncio.to_thread(contextvars.copy_context().run, _run, spec, experiment, resume)


def _run(spec: StudySpec, experiment: str | Path | None, resume: str | Path | None) -> CohortResult:
    return run_study(spec, experiment=experiment, resume=resume)


def with_spec_keywords(func: Callable[..., Any]) -> None:
    """``func``'s signature as its callers see it (``inspect.signature``, help(), a notebook): its own
    parameters but ``**study``, then each field of the study spec as a keyword, so a field added to the spec
    is a keyword of every function that takes a study."""
    own = [p for p in inspect.signature(func).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    named = {p.name for p in own}
    fields = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=field.annotation)
              for name, field in StudySpec.model_fields.items() if name not in named]
    func.__signature__ = inspect.signature(func).replace(parameters=[*own, *fields])  # type: ignore[attr-defined]


with_spec_keywords(arun_cohort)
run_cohort = sync_twin(arun_cohort)


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
    from consilium.api.judging import trace_files
    from consilium.api.runs import judge_setups
    from consilium.cases import Case
    from consilium.cohort.rejudging import check_replace, judge_label, rebuild_judgements_csv
    from consilium.fileio import write_text_atomic
    from consilium.graphs.registry import read_trace
    from consilium.judges.answers import check_scope
    from consilium.judges.many import judge_files
    from consilium.judges.rubric import Rubric, load_rubric
    from consilium.runfolder.layout import judgement_path

    if concurrency <= 0:
        raise UserError(f"concurrency: must be positive, got {concurrency!r}")
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


judge_run = sync_twin(ajudge_run)
