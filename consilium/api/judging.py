"""The library's judging of run folders and trace files with a rubric: what ``consilium judge TRACE|RUN_DIR``
does, returned as :class:`JudgedFolder` (each judgement written beside its trace, the summary over the judged
traces, the coverage, the cohort tables rebuilt). Traces are judged as many at a time as the judge's
concurrency, each read as its judgement starts (consilium/judges/many.py), so a folder of 200k traces holds a
handful in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium.api.options import as_path, options_of
from consilium.api.sync import sync_twin
from consilium.cases import Case
from consilium.errors import UserError
from consilium.judges.answers import Scope
from consilium.judges.decoding import JudgeDecoding
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric
from consilium.models import ChatModel
from consilium.models.factory import ModelOptions
from consilium.models.refs import ModelRef
from consilium.runfolder.layout import judgement_path
from consilium.runfolder.layout import trace_files as run_trace_files

if TYPE_CHECKING:
    from consilium.calibration.isotonic import Calibration
    from consilium.judges.aggregate import Arm
    from consilium.judges.runner import AnyTrace

__all__ = ["JudgeOptions", "JudgedFolder", "JudgedTrace", "ajudge_folder", "judge_folder", "trace_files"]


@dataclass(frozen=True)
class JudgeOptions:
    """``consilium judge``'s options. ``judges``: one judge, or several (a jury), each a spec,
    ``SPEC@BASE_URL#KEY_VAR``, a model config file or a parsed :class:`ModelRef`, built with ``model_options``
    (default: from the environment; its ``max_concurrency`` is how many traces are judged at a time);
    ``calibration``: an isotonic map (``calibrate isotonic``) whose scores are written beside the raw ones;
    ``force``: replace judgements another judge, jury or judge prompt made; ``cli``: messages name the command's
    flags (``--component``, ``--force``) rather than these fields."""

    rubric: str | Rubric = ""
    judges: tuple[str | ModelRef, ...] = ()
    components: tuple[str, ...] | None = None
    max_tokens: int = 512
    max_repairs: int = 2
    k: int = 5
    reference_answer: str | None = None
    scope: Scope | None = None
    judge_decoding: JudgeDecoding | None = None
    calibration: Path | None = None
    force: bool = False
    timeout_s: float = 120.0
    model_options: ModelOptions | None = None
    cli: bool = False
    #: ``STAGE=PATH``: a user's own system prompt for a judging stage (consilium/judges/prompt_files.py).
    prompt_files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "calibration", as_path(self.calibration))
        object.__setattr__(self, "judges", (self.judges,) if isinstance(self.judges, str) else tuple(self.judges))
        if self.components is not None:
            object.__setattr__(self, "components", tuple(self.components))


@dataclass(frozen=True)
class JudgedTrace:
    """One trace judged: its file, its judgement's file, the judgement (its calls are in the file) and the arm
    as the summary counts it."""

    trace: Path
    out: Path
    judgement: Judgement
    arm: Any


@dataclass(frozen=True)
class JudgedFolder:
    """What a judging wrote: the rubric, the judges' model ids, each trace judged (in file order), the summary
    rows over them (several traces), the coverage per rubric, and each cohort's ``judgements.csv`` rebuilt."""

    rubric: Rubric
    models: list[str]
    traces: list[JudgedTrace] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    coverage: Any = None
    rebuilt: list[Path] = field(default_factory=list)


def trace_files(paths: Sequence[Path]) -> list[Path]:
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


async def ajudge_folder(paths: Sequence[str | Path], options: JudgeOptions | None = None,
                        **changes: Any) -> JudgedFolder:
    """Judge every trace named or under a folder named with the rubric and judge(s), as ``consilium judge``
    does; bad input (no judge, a component the rubric does not score, a frozen scope without labels, another
    judge's judgements without ``force``) is refused before a judge is asked."""
    from consilium.calibration.isotonic import load_calibration
    from consilium.cohort.progress import ItemProgress
    from consilium.cohort.rejudging import check_replace, judge_label, rebuild_judgements_csv
    from consilium.graphs.registry import read_trace
    from consilium.judges.aggregate import summarise
    from consilium.judges.answers import check_scope
    from consilium.judges.board_reward import write_judged
    from consilium.judges.coverage import judging_coverage
    from consilium.judges.many import judge_files
    from consilium.judges.prompt_files import judge_stages, read_prompt_files
    from consilium.judges.rubric import load_rubric
    from consilium.judges.runner import JudgeSetup
    from consilium.models import GenerationSettings
    from consilium.models.factory import build_ref
    from consilium.models.refs import parse_refs

    chosen = options_of(JudgeOptions, options, changes)
    given = [Path(p) for p in paths]
    texts = [j for j in chosen.judges if isinstance(j, str)]
    refs = parse_refs(texts, flag="--judge-model" if chosen.cli else "judge_model") if texts else []
    specs = [j if isinstance(j, ModelRef) else refs.pop(0) for j in chosen.judges]
    if not specs:
        raise UserError(f"{'--judge-model' if chosen.cli else 'judge_model'}: name a judge model")
    rubric = chosen.rubric if isinstance(chosen.rubric, Rubric) else load_rubric(chosen.rubric)
    unknown = [c for c in chosen.components or () if c not in rubric.components]
    if unknown:
        raise UserError(f"{'--component' if chosen.cli else 'components'}: rubric {rubric.name} does not score "
                        f"{', '.join(unknown)} (it scores {', '.join(rubric.components)})")
    calibration = load_calibration(chosen.calibration, rubric.name) if chosen.calibration else None
    prompts = read_prompt_files(chosen.prompt_files, judge_stages(rubric), "--prompt-file" if chosen.cli else
                                "prompt_files")
    files = trace_files(given)
    # Only a frozen scope with a four-decision rubric needs every case before judging: read one at a time.
    check_scope(chosen.scope, [rubric], ((f"{path} (case {trace.case_id})", Case.model_validate(trace.case))
                                         for path in files for trace in (read_trace(path),)))
    model_options = chosen.model_options or ModelOptions.from_env()
    models = [build_ref(ref, model_options) for ref in specs]  # one judge, or a jury (docs/judges.md, Juries)
    finished: dict[int, JudgedTrace] = {}
    spent = [0]  # judge calls so far, for the progress line
    try:
        if not chosen.force:  # another judge's judgements are results: never replaced without a word
            check_replace((judgement_path(path, rubric.name) for path in files), rubric,
                          judge_label(models, [r.name for r in specs]), flag="--force" if chosen.cli else "force=True",
                          system=prompts.get(rubric.name))
        setups = [JudgeSetup(model=model, settings=GenerationSettings(temperature=0.0, seed=0,
                                                                      max_tokens=chosen.max_tokens,
                                                                      timeout_s=chosen.timeout_s),
                             max_repairs=chosen.max_repairs, k=chosen.k, reference_answer=chosen.reference_answer,
                             scope=chosen.scope, name=spec.name, decoding=chosen.judge_decoding, prompts=prompts)
                  for spec, model in zip(specs, models, strict=True)]

        def done(position: int, path: Path, trace: AnyTrace, used: Rubric, judgement: Judgement) -> None:
            if chosen.calibration is not None:
                judgement = _calibrate(judgement, calibration, chosen.calibration)
            # the judgement, and a board's match and reward once the reward's rubrics judged it
            out = write_judged(path, trace, used.name, judgement)
            # its calls are in its file; the summary keeps models apart and counts a failed run's missing answer
            finished[position] = JudgedTrace(path, out, judgement.model_copy(update={"calls": []}), _arm(trace, used))
            spent[0] += judgement.usage.total.calls
            progress.advance(path.name, f"{judgement.usage.total.calls} calls, {judgement.wall_s:.1f} s",
                             tail=f"{spent[0]:,} judge calls")

        with ItemProgress("traces", len(files)) as progress:
            await judge_files(((rubric, path) for path in files), setups, done,
                              limit=model_options.max_concurrency,
                              components=list(chosen.components) if chosen.components else None)
    finally:
        await _close(models)
    judged = [finished[position] for position in sorted(finished)]
    judgements = [each.judgement for each in judged]
    summary = summarise(judgements, [each.arm for each in judged]) if len(judged) > 1 else []
    rebuilt = [csv for folder in dict.fromkeys(p.resolve() for p in given if p.is_dir())
               for csv in [rebuild_judgements_csv(folder)] if csv is not None]  # a cohort's table follows its files
    return JudgedFolder(rubric=rubric, models=[m.model_id for m in models], traces=judged, summary=summary,
                        coverage=judging_coverage(judgements, [rubric.name]), rebuilt=rebuilt)


judge_folder = sync_twin(ajudge_folder)


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
