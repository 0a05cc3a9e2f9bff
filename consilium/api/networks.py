"""The library's deliberation networks of a run or cohort (docs/networks.md): each arm's graph as GraphML and a
picture, the cohort's role co-assignment network, the per-category influence, persistence and conformity, the
change paths and the board centralities, what ``consilium analyze`` writes, returned as :class:`Analyzed`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.api.options import as_path, options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.models import ChatModel, GenerationSettings
from consilium.models.factory import ModelOptions

__all__ = ["AnalyzeOptions", "Analyzed", "aanalyze", "analyze"]


@dataclass(frozen=True)
class AnalyzeOptions:
    """``consilium analyze``'s options: the analysis folder (default ``RUN_DIR/analysis``); ``force`` replaces
    an analysis of another run, method or judge there; ``judge_model`` decides each dissent's uptake (a spec,
    ``SPEC@BASE_URL#KEY_VAR``, a model config file or a :class:`ChatModel`; None: the word-overlap rule), recorded
    as ``judge_name`` (default: its label), with its output cap, repairs and timeout; ``model_options`` the
    options of a judge given by spec (default: from the environment)."""

    out: Path | None = None
    force: bool = False
    judge_model: str | ChatModel | None = None
    judge_name: str | None = None
    max_tokens: int = 512
    max_repairs: int = 2
    timeout_s: float = 120.0
    model_options: ModelOptions | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))


@dataclass(frozen=True)
class Analyzed:
    """What ``analyze`` wrote and counted (``analysis``: folder, arms, arms left out, files, how each dissent was
    decided, judge calls that failed), and the cohort's completeness when it is partial (the networks are of the
    finished arms only)."""

    analysis: Any
    done: Any = None
    judged: bool = False


async def aanalyze(run_dir: str | Path, options: AnalyzeOptions | None = None, **changes: Any) -> Analyzed:
    """``consilium analyze RUN_DIR``: every arm's graph, the co-assignment network, the tables and pictures.
    Every trace is read and checked before anything is written; a judge's failed calls are decided by word
    overlap and counted (``analysis.judge_failed``)."""
    return await off_loop(_analyze, Path(run_dir), options_of(AnalyzeOptions, options, changes))


def _analyze(run_dir: Path, options: AnalyzeOptions) -> Analyzed:
    from consilium.reports.networks.analyze import analyze as analyse  # networkx: imported when it runs
    from consilium.reports.networks.judging import UptakeJudge
    from consilium.reports.partial import partial_figures, partial_of

    judge = None
    if options.judge_model is not None:  # a judge decides uptake; without one, the word-overlap rule does
        model, name = _judge(options.judge_model, options.model_options)
        judge = UptakeJudge(model, GenerationSettings(temperature=0.0, seed=0, max_tokens=options.max_tokens,
                                                      timeout_s=options.timeout_s), options.max_repairs,
                            name=options.judge_name or name)
    done = partial_of(run_dir)
    with partial_figures(done):  # each drawing marked
        result = analyse(run_dir, options.out, judge, force=options.force)
    return Analyzed(analysis=result, done=done, judged=judge is not None)


def _judge(given: str | ChatModel, options: ModelOptions | None) -> tuple[ChatModel, str | None]:
    """The judge's model, and its label (a spec's, with its own server if it has one)."""
    if not isinstance(given, str):
        return given, None
    from consilium.models.factory import build_ref
    from consilium.models.refs import parse_model_ref

    ref = parse_model_ref(given, flag="judge_model")
    model = build_ref(ref, options or ModelOptions.from_env())
    return model, ref.label(model.model_id)


analyze = sync_twin(aanalyze)
