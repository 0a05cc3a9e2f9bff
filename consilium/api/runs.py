"""The library's runs of one case: a protocol on a case, a Specialist Turn, judge and replay a trace, from a
script or a notebook (docs/api.md); the shared model and event-loop helpers of consilium/api/.

Every function returns the record objects the CLI writes (traces, judgements) and writes nothing unless told
where (``out``). Models are spec strings (``"embedded"``, ``"openai:gpt-4o"``, ``"scripted:FILE"``) or
:class:`~consilium.models.ChatModel` objects. Each ``a…`` coroutine has a plain twin that also works where
an event loop is already running (Jupyter): there it runs the coroutine on a worker thread's own loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from pydantic import ValidationError

from consilium.agents.labels import with_role_labels
from consilium.api.sync import sync_twin
from consilium.cases import Case, load_case
from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.graphs.base import RunModels
from consilium.graphs.board.config import BoardConfig
from consilium.graphs.board.run import run_turn
from consilium.graphs.board.trace import TurnTrace
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.consilium.human_run import run_seated, seated
from consilium.graphs.consilium.seat import HumanPrompt
from consilium.graphs.registry import get_protocol, protocol_of, read_trace
from consilium.graphs.replay import first_difference, replay_trace
from consilium.judges.decoding import JudgeDecoding
from consilium.judges.jury import judge_by_jury
from consilium.judges.record import Judgement
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import JudgeSetup
from consilium.models import ChatModel, GenerationSettings
from consilium.models.backends.langchain_chat import LangChainChatModel
from consilium.models.factory import ModelOptions, build_model, build_ref, shared_layers
from consilium.models.refs import distinct, parse_model_ref
from consilium.traces.config import RunConfig
from consilium.traces.io import new_run_id, trace_path, write_trace
from consilium.traces.schema import TraceBase

__all__ = ["ReplayResult", "ajudge", "areplay", "arun", "aturn", "judge", "load_case", "read_trace", "replay", "run",
           "turn"]

Model = str | ChatModel | BaseChatModel
#: One judge model, or a list of them: a jury (docs/judges.md, Juries).
JudgeModels = Model | Sequence[Model]


def _case(case: Case | str | Path) -> Case:
    return case if isinstance(case, Case) else load_case(Path(case))


def _model(model: Model, options: ModelOptions | None) -> tuple[ChatModel, bool]:
    """The model stack, and whether this call built it (and so closes it): a spec, or a LangChain chat model
    (bare or as a :class:`LangChainChatModel`) in the shared layers; a ChatModel object as given."""
    if isinstance(model, str):
        return build_model(model, options or ModelOptions.from_env()), True
    if isinstance(model, BaseChatModel | LangChainChatModel):
        bare = model if isinstance(model, LangChainChatModel) else LangChainChatModel(model)
        return shared_layers(bare, options or ModelOptions.from_env(), spec=bare.model_id), True
    return model, False


def judge_setups(judge_model: JudgeModels, options: ModelOptions | None,
                 **fields: Any) -> tuple[list[JudgeSetup], list[ChatModel]]:
    """A setup per judge (several: a jury, each named by its spec, and server, or model id), and the models this
    call built (to close). A string is a spec, ``SPEC@BASE_URL#KEY_VAR`` or a model config file
    (consilium/models/refs.py): a judge on its own server. A judge given twice is refused: its vote would count
    twice."""
    given: list[Model] = [judge_model] if isinstance(judge_model, str | ChatModel | BaseChatModel) else [
        *judge_model]
    if not given:
        raise UserError("judge_model: an empty list (name one judge model, or several for a jury)")
    refs = {i: parse_model_ref(entry, flag="judge_model") for i, entry in enumerate(given) if isinstance(entry, str)}
    distinct(list(refs.values()), [str(given[i]) for i in refs], "judge_model")
    shared = options or ModelOptions.from_env()
    for each in refs.values():  # a judge's key variable unset: refused before any model is opened
        each.options(shared)
    setups, own = [], []
    for i, entry in enumerate(given):
        ref = refs.get(i)
        model, built = (build_ref(ref, shared), True) if ref is not None else _model(entry, options)
        own += [model] if built else []
        setups.append(JudgeSetup(model=model, name=ref.name if ref is not None else model.model_id, **fields))
    names = [s.name for s in setups]
    twice = sorted({str(n) for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"judge_model: {', '.join(twice)} given twice (each judge of a jury once)")
    return setups, own


def _config(model: type[RunConfig], config: RunConfig | Mapping[str, Any] | None) -> RunConfig:
    if config is None:
        return model()
    if isinstance(config, model):
        return config
    if isinstance(config, RunConfig):
        raise UserError(f"config: a {type(config).__name__}, not the protocol's {model.__name__}")
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        raise UserError(f"config: {first_error(exc)}") from None


async def arun(case: Case | str | Path, *, protocol: str = "consilium", variants: Sequence[str] | None = None,
               model: Model = "embedded", moderator: Model | None = None,
               config: RunConfig | Mapping[str, Any] | None = None, options: ModelOptions | None = None,
               out: str | Path | None = None, human: str | None = None,
               answers: Mapping[str, Any] | Callable[[HumanPrompt], Any] | None = None) -> list[TraceBase]:
    """Run ``protocol`` (consilium, board, single or a plugin's) on ``case`` in each of ``variants`` (its
    formats or modes; default all), and return its traces; with ``out``, each is also written as ``simulate``
    writes it (``out/<run-id>/<case>.<variant>.trace.json``). A model failure is recorded in its trace
    (status ``failed``), as on the command line. ``human`` seats a person as that panel member (of a protocol
    whose declaration lists ``human_seat``: the consilium), answering from ``answers``: a mapping shaped like an
    answers file, or a function of each prompt (docs/human.md)."""
    chosen = get_protocol(protocol)
    person = None
    if human is not None or answers is not None:
        chosen.require("human_seat", "human")  # as the protocol declares (Protocol.analyses)
        person = seated(human, answers)
    if not chosen.variants:
        raise UserError(f"protocol: {chosen.name!r} is not run on a case alone (use `turn` for a Specialist Turn)")
    wanted = list(variants) if variants is not None else list(chosen.variants)
    unknown = [v for v in wanted if v not in chosen.variants]
    if unknown or not wanted:
        raise UserError(f"variants: {unknown or wanted!r}: the {chosen.name} protocol runs in "
                        f"{', '.join(chosen.variants)}")
    the_case = _case(case)
    # role_labels, unless the config sets it, as the moderator's model defaults to (a model object: free).
    chair_spec = moderator if moderator is not None else model
    settings = with_role_labels(_config(chosen.config_model, config), *([chair_spec] if isinstance(chair_spec, str)
                                                                         else []))
    if person is not None and not isinstance(settings, ConsiliumConfig):  # the seat is the consilium graph's
        raise UserError(f"human: protocol {chosen.name!r} seats no person")
    panel, own_panel = _model(model, options)
    chair, own_chair = _model(moderator, options) if moderator is not None else (panel, False)
    run_id = new_run_id(the_case.id)
    try:
        models = RunModels(panel=panel, moderator=chair)
        traces: list[TraceBase]
        if person is not None:
            assert isinstance(settings, ConsiliumConfig)  # refused above
            traces = list(await run_seated(the_case, wanted, models, settings, run_id=run_id, human=person))
        else:
            traces = list(await chosen.run_arm(the_case, wanted, models, settings, run_id=run_id))
    finally:
        for stack, own in ((panel, own_panel), (chair, own_chair)):
            if own:
                await stack.aclose()
    if out is not None:
        for trace in traces:
            write_trace(trace_path(Path(out), run_id, the_case.id, chosen.arm_variant(chosen.variant(trace))), trace)
    return traces


run = sync_twin(arun)


async def aturn(case: Case | str | Path, role: str, question: str, *, model: Model = "embedded",
                config: BoardConfig | Mapping[str, Any] | None = None,
                options: ModelOptions | None = None) -> TurnTrace:
    """The Specialist Turn (opentumorboard.txt App. B.1): ``role`` answers ``question`` on the case."""
    the_case = _case(case)
    settings = _config(BoardConfig, config)
    assert isinstance(settings, BoardConfig)
    answerer, own = _model(model, options)
    try:
        return await run_turn(the_case, role, question, answerer, settings, run_id=new_run_id(the_case.id))
    finally:
        if own:
            await answerer.aclose()


turn = sync_twin(aturn)


def _trace(trace: TraceBase | str | Path) -> tuple[TraceBase, str]:
    if isinstance(trace, TraceBase):
        return trace, f"{trace.case_id}.{protocol_of(trace).variant(trace)}"
    return read_trace(trace), Path(trace).name


async def ajudge(trace: TraceBase | str | Path, rubric: str | Rubric, *, judge_model: JudgeModels,
                 components: Sequence[str] | None = None, reference_answer: str | None = None,
                 settings: GenerationSettings | None = None, options: ModelOptions | None = None,
                 judge_decoding: JudgeDecoding | None = None) -> Judgement:
    """Score one trace (an object or a trace file) with a rubric (a name, a rubric file, or a :class:`Rubric`)
    and a judge model, or a list of them (a jury: each item's score is the verdict, each judge's in
    ``votes``); the judgement is returned, not written. ``judge_decoding``: ``--judge-decoding``."""
    record, name = _trace(trace)
    used = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    setups, own = judge_setups(judge_model, options, reference_answer=reference_answer, decoding=judge_decoding)
    if settings is not None:  # else the judge's defaults (temperature 0, as the CLI's)
        setups = [dataclasses.replace(setup, settings=settings) for setup in setups]
    try:
        return await judge_by_jury(record, name, used, setups, list(components) if components else None)
    finally:
        for model in own:
            await model.aclose()


judge = sync_twin(ajudge)


class ReplayResult:
    """A replayed trace: the re-run record, how many recorded calls served it, and the first difference from
    the recorded one (None: identical)."""

    def __init__(self, replayed: TraceBase, served: int, difference: str | None) -> None:
        self.replayed, self.served, self.difference = replayed, served, difference

    @property
    def identical(self) -> bool:
        return self.difference is None

    def __repr__(self) -> str:
        return f"ReplayResult(identical={self.identical}, served={self.served}, difference={self.difference!r})"


async def areplay(trace: TraceBase | str | Path) -> ReplayResult:
    """Re-run a trace from its recorded calls (no model is called) and compare it with the recorded one."""
    record, _ = _trace(trace)
    replayed, model = await replay_trace(record)
    return ReplayResult(replayed, model.served, first_difference(record, replayed))


replay = sync_twin(areplay)
