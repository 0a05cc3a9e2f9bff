"""``consilium cohort … --estimate [--like RUN_DIR]``: the cohort's plan, estimated, and nothing run or written
(docs/cohorts.md, "Estimating a cohort"). The plan is the one a run would make (consilium/cohort/plan.py), so
a bad field or file is refused as it would be, and no run folder is made;
each model is checked as the run's opening would check it (a known backend, its extra installed, its file
there), without loading a model or reaching a server."""

from __future__ import annotations

from pathlib import Path

from consilium.cohort.estimate import CohortEstimate, CohortShape, estimate
from consilium.cohort.estimate_like import read_prior
from consilium.cohort.plan import Plan, new_plan
from consilium.errors import UserError
from consilium.graphs.registry import get_protocol
from consilium.models.backends.registry import resolve_spec
from consilium.models.factory import ModelOptions, open_backend
from consilium.models.pricing import Prices
from consilium.models.refs import parse_model_ref
from consilium.spec.study import StudySpec

__all__ = ["check_model", "estimate_study", "plan_shape"]


def _prices(spec: str, options: ModelOptions) -> Prices | None:
    """The prices the model of ``spec`` would record (as the factory applies them), or None."""
    return options.prices if options.prices is not None and options.prices_spec in (None, spec) else None


#: Backends that open a file and nothing more (the scripted model's rules, a replayed trace): opened as the run would.
_CHEAP = ("scripted", "replay")


def check_model(spec: str) -> None:
    """``spec`` refused as building it would refuse it (an unknown backend, a missing extra, a missing file), a
    :class:`UserError`; a GGUF file is looked for, not loaded, and no server is reached."""
    backend, arg = resolve_spec(spec)
    backend.check_installed()
    if backend.prefix in _CHEAP:
        open_backend(spec)
    elif backend.prefix == "gguf" and not Path(arg).is_file():
        raise UserError(f"gguf model file not found: {arg}")


def plan_shape(plan: Plan) -> CohortShape:
    """What ``plan`` would run, as an estimate reads it; each of its models checked (:func:`check_model`)."""
    s = plan.settings
    protocols = {name: ([v for v in s.variants if v in get_protocol(name).variants], plan.configs[name])
                 for name in s.protocols}
    judges = [j for j in [s.judge_model, *s.jury_models] if j] if plan.rubrics else []
    for spec in dict.fromkeys([*s.models, *([s.moderator_model] if s.moderator_model else []),
                               *(parse_model_ref(judge).spec for judge in judges)]):
        check_model(spec)
    prices = {spec: p for spec in s.models if (p := _prices(spec, plan.options_for(spec))) is not None}
    if s.moderator_model and (found := _prices(s.moderator_model, plan.options)) is not None:
        prices[s.moderator_model] = found
    for judge in judges:  # as the run builds it (models/factory.py build_ref): its own file's prices, or none
        ref = parse_model_ref(judge)
        if (found := _prices(ref.spec, ref.options(plan.options))) is not None:
            prices[judge] = found
    return CohortShape(cases=plan.cases, protocols=protocols, models=list(s.models), rubrics=plan.rubrics,
                       judges=judges, prices=prices, decoding=getattr(s, "judge_decoding", None),
                       moderator=s.moderator_model, replicates=max(len(s.seeds or []), 1))


def estimate_study(spec: StudySpec, experiment: Path | None = None, like: Path | None = None) -> CohortEstimate:
    """The estimate of the cohort ``spec`` describes; no model is built or called, nothing written."""
    plan = new_plan(spec, experiment)
    prior = read_prior(like) if like is not None else None  # checked before anything is counted
    return estimate(plan_shape(plan), prior)
