"""What the protocols' graphs for LangGraph's dev server (``langgraph dev``, Studio) share (docs/studio.md).

The server builds a graph by calling the factory ``langgraph.json`` names, with the run's config, on its
event loop, where blocking calls raise (blockbuster). So the factory only returns a small compiled outer
graph; the run's settings are read from ``configurable`` by its first node, ``prepare`` (the case file is
read off the loop), and the second node, named after the protocol, builds the models off the loop and runs
the protocol's own runner, whose graph then runs as its subgraph: every call is recorded in the run's
trace, which is the run's output.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from consilium.agents.labels import default_role_labels
from consilium.agents.prompting import SHARED, load_prompt, prompt_hashes
from consilium.agents.schemas import RoleLabels
from consilium.cases import Case, load_case, problems_from_validation
from consilium.datafiles import DataError, parse_data
from consilium.errors import UserError
from consilium.fileio import make_folder
from consilium.models import ChatModel
from consilium.models.factory import ModelOptions, build_model
from consilium.models.tokens import count_tokens
from consilium.redact import redact, redact_value
from consilium.roles.catalogue import load_catalogue
from consilium.traces.io import new_run_id, trace_path, write_trace
from consilium.traces.schema import TraceBase

__all__ = ["TRUSTED_ENV", "CaseInput", "StudioError", "StudioInput", "StudioJob", "StudioOutput", "StudioSettings",
           "StudioSpec", "check_trusted", "read_settings", "resolve_case", "studio_graph"]

CaseInput = str | dict[str, Any]
M = TypeVar("M", bound=BaseModel)

class StudioError(UserError, ValueError):
    """A dev run's user error (a bad ``configurable`` value, a case that does not load, an unknown model); a
    ValueError too, whose message the LangGraph server shows (it hides others' as "An internal error occurred")."""


class StudioSettings(TypedDict, total=False):
    """The ``configurable`` keys every protocol's dev graph reads (a protocol's settings add its own)."""

    model: Annotated[str, Field(min_length=1, description="the panel's model spec (docs/models.md): embedded, "
                                                          "gguf:PATH, openai:MODEL, vllm:MODEL, scripted:FILE, … "
                                                          "(default: embedded)")]
    moderator_model: Annotated[str, Field(min_length=1, description="the moderator's model spec (default: the "
                                                                    "model)")]
    case: Annotated[CaseInput, Field(description="the case: a case file's path (.yaml, .json; relative to the "
                                                 "server's folder), or the case itself, as a mapping in a case "
                                                 "file's shape or as YAML/JSON text")]
    seed: Annotated[int, Field(description="sampling seed (default 0)")]
    temperature: Annotated[float, Field(ge=0.0, le=2.0, description="sampling temperature (default 0)")]
    role_labels: Annotated[RoleLabels, Field(description="how the moderator names the panel: catalogue or free "
                                                         "(default: catalogue for the embedded model, else free)")]
    out: Annotated[str, Field(description="a folder to write the run's trace in, as `consilium simulate --out` "
                                          "does (default: none; the trace is the run's output)")]


class StudioInput(TypedDict, total=False):
    """A run's input: nothing, or the case (it wins over ``configurable.case``)."""

    case: Annotated[CaseInput, Field(description="as configurable.case: a path, a mapping or YAML/JSON text")]


class StudioOutput(TypedDict, total=False):
    """What every protocol's dev run returns (a protocol's output adds its trace's own fields)."""

    status: str
    error: str | None
    trace: dict[str, Any]
    trace_file: str | None


class _State(StudioInput, StudioOutput, total=False):
    settings: dict[str, Any]
    resolved_case: dict[str, Any]
    case_file: str | None


@dataclass(frozen=True)
class StudioJob:
    """One dev run, ready to go: the case (and its file, None for an inline case), the models, the
    validated settings (the ``configurable`` keys given, by name) and the run's id (its trace's)."""

    case: Case
    case_file: Path | None
    panel: ChatModel
    moderator: ChatModel
    settings: Mapping[str, Any]
    run_id: str

    def config(self, model: type[M], **fields: str) -> M:
        """The protocol's run config from the settings given: ``fields`` maps a config field to its key
        (seed, temperature and role_labels are mapped already); a bad value names its key."""
        keys = {"seed": "seed", "temperature": "temperature", "role_labels": "role_labels", **fields}
        values = {name: self.settings[key] for name, key in keys.items() if key in self.settings}
        if "role_labels" not in values:
            values["role_labels"] = default_role_labels(
                self.settings.get("moderator_model") or self.settings.get("model") or "embedded")
        try:
            return model.model_validate(values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else ""
            raise UserError(f"configurable.{keys.get(field, field)}: {err['msg']}") from None


#: Runs one job; returns its trace (the graph writes it under ``out``, as ``simulate --out`` names its file).
Runner = Callable[[StudioJob], Awaitable[TraceBase]]


@dataclass(frozen=True)
class StudioSpec:
    """A protocol's Studio graph, as it declares it (``Protocol.studio``): its ``configurable`` keys, its output (its
    own keys, ``fields``, are the trace's fields of those names), the case a run without one gets, its run and graph."""

    settings: type[Any]
    output: type[Any]
    default_case: Path
    run: Runner
    subgraph: Callable[[], CompiledStateGraph[Any, Any, Any, Any]]
    prompt_packages: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(key for key in self.output.__annotations__ if key not in StudioOutput.__annotations__)


def read_settings(schema: type[Any], config: RunnableConfig, context: Any) -> dict[str, Any]:
    """The documented keys of a run's ``configurable`` (and of its run context, which wins), validated by
    ``schema``; the server's own keys (thread_id, …) are left out. A bad value names its key."""
    keys = set(TypeAdapter(schema).json_schema().get("properties", {}))
    given = {k: v for k, v in (config.get("configurable") or {}).items() if k in keys}
    if isinstance(context, Mapping):
        given.update({k: v for k, v in context.items() if k in keys})
    try:
        return dict(TypeAdapter(schema).validate_python(given, strict=True))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"][:1])
        if where == "case":  # a union's errors name its members' types, not what a case may be
            raise UserError(f"configurable.case: expected a case file's path, a mapping of case fields or the "
                            f"case as YAML/JSON text, not {type(given.get('case')).__name__}") from None
        raise UserError(f"configurable.{where}: {err['msg']}") from None


#: The environment switch that lets a dev run call the server's own Python (``langchain:`` specs) and
#: write files (``out``); off by default, since anyone who reaches the server may start runs.
TRUSTED_ENV = "CONSILIUM_STUDIO_TRUSTED"


def check_trusted(settings: Mapping[str, Any]) -> None:
    """Refuse what would run the server's own code or write where a run asks, unless :data:`TRUSTED_ENV`
    is on: a ``langchain:MODULE:FACTORY`` spec (it calls any function it names) and ``out``."""
    if os.environ.get(TRUSTED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return
    for key in ("model", "moderator_model"):
        spec = settings.get(key)
        if isinstance(spec, str) and spec.partition(":")[0].strip() == "langchain":
            raise UserError(f"configurable.{key}: a langchain: spec calls a function of the server's Python; "
                            f"refused unless the server runs with {TRUSTED_ENV}=1 (docs/studio.md, Security)")
    if settings.get("out"):
        raise UserError(f"configurable.out: writing the trace into a folder of the server's is refused unless "
                        f"the server runs with {TRUSTED_ENV}=1 (docs/studio.md, Security); the trace is the "
                        "run's output")


def resolve_case(value: CaseInput, where: str) -> tuple[Case, Path | None]:
    """The case named by a path, or given inline (a mapping, or YAML/JSON text: text with a line break or a
    leading brace); blocking (it reads the file). Problems are named ``<where>: <field>: <reason>``."""
    if isinstance(value, str) and not value.strip():
        raise UserError(f"{where}: empty; give a case file's path, a mapping of case fields or the case as "
                        "YAML/JSON text")
    if isinstance(value, str) and "\n" not in value.strip() and not value.lstrip().startswith("{"):
        path = Path(value.strip()).expanduser()
        try:
            return load_case(path), path
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
    data: Any = value
    if isinstance(value, str):
        try:
            data = parse_data(value, json_format=value.lstrip().startswith("{"))
        except DataError as exc:
            raise UserError(f"{where}: {exc.field + ': ' if exc.field else ''}{exc.reason}") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: a case is a mapping of case fields, a case file's path or its text")
    try:
        return Case.model_validate(data), None
    except ValidationError as exc:
        raise UserError(str(problems_from_validation(where, exc)[0])) from None


def _out_folder(out: str) -> None:
    """Create ``out`` before the run (blocking), so a folder that cannot be is named as the key it came from."""
    try:
        make_folder(Path(out).expanduser())
    except UserError as exc:
        raise UserError(f"configurable.out: {exc}") from None


def _build_models(settings: Mapping[str, Any]) -> tuple[ChatModel, ChatModel]:
    # No response cache: its SQLite lookups would block the server's event loop (docs/studio.md).
    options = ModelOptions.from_env(cache=False)
    models: dict[str, ChatModel] = {}
    for key in ("model", "moderator_model"):
        spec = settings.get(key) or settings.get("model") or "embedded"
        if spec not in models:
            try:
                models[spec] = build_model(spec, options)
            except UserError as exc:
                raise UserError(f"configurable.{key}: {exc}") from None
    panel = settings.get("model") or "embedded"
    return models[panel], models[settings.get("moderator_model") or panel]


def _warm(packages: tuple[str, ...]) -> None:
    """Read the prompts and the role catalogue once, off the loop: the runs read them from memory."""
    prompt_hashes(*packages)
    for package in (SHARED, *packages):
        for entry in resources.files(package).joinpath("prompts").iterdir():
            if entry.name.endswith(".md"):
                load_prompt(entry.name.removesuffix(".md"), package)
    load_catalogue()
    count_tokens("")  # tiktoken's encoding, read from its file


def studio_graph(name: str, spec: StudioSpec, variant: Callable[[Any], str]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The dev graph of one protocol: ``prepare`` (settings, case) ─► ``name`` (models, ``spec.run``); its output
    is the trace's status, error and ``spec.fields`` and the trace itself, written under ``out`` as
    ``<run-id>/<case>.<variant(trace)>.trace.json``. ``spec.subgraph`` is drawn inside the second node by Studio."""
    settings_schema, default_case, run, fields = spec.settings, spec.default_case, spec.run, spec.fields
    subgraph = spec.subgraph()

    async def prepare(state: _State, runtime: Runtime[Any]) -> _State:
        try:
            settings = read_settings(settings_schema, get_config(), runtime.context)
            check_trusted(settings)
            if settings.get("out"):
                await asyncio.to_thread(_out_folder, settings["out"])
            value, where = (state["case"], "input.case") if state.get("case") else \
                (settings.get("case", str(default_case)), "configurable.case")
            case, path = await asyncio.to_thread(resolve_case, value, where)
        except UserError as exc:
            raise StudioError(redact(str(exc))) from None
        return {"settings": settings, "resolved_case": case.model_dump(mode="json"),
                "case_file": str(path) if path is not None else None}

    async def protocol(state: _State) -> _State:
        # Named here so that Studio's drawing (xray) finds the protocol's graph among this node's nonlocals.
        assert subgraph is not None
        try:
            return await run_protocol(state)
        except UserError as exc:
            raise StudioError(redact(str(exc))) from None

    async def run_protocol(state: _State) -> _State:
        settings = state["settings"]
        case = Case.model_validate(state["resolved_case"])
        await asyncio.to_thread(_warm, spec.prompt_packages)
        panel, moderator = await asyncio.to_thread(_build_models, settings)
        path = Path(case_file) if (case_file := state.get("case_file")) else None
        run_id = new_run_id(case.id)
        try:
            trace = await run(StudioJob(case, path, panel, moderator, settings, run_id))
        finally:
            for model in dict.fromkeys((panel, moderator)):
                await model.aclose()
        file = trace_path(Path(settings["out"]), run_id, case.id, variant(trace)) if settings.get("out") else None
        written = await asyncio.to_thread(write_trace, file, trace) if file is not None else None
        error = getattr(trace, "error", None)
        # The output goes to the server's store and to Studio: masked as every file consilium writes is.
        return {"status": getattr(trace, "status", ""), "error": redact(error) if error else None,
                "trace": redact_value(trace.model_dump(mode="json")),
                "trace_file": str(written) if written else None,
                **{field: redact_value(getattr(trace, field)) for field in fields}}  # type: ignore[typeddict-item]

    graph = StateGraph(_State, context_schema=settings_schema, input_schema=StudioInput, output_schema=spec.output)
    graph.add_node("prepare", prepare)
    graph.add_node(name, protocol)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", name)
    graph.add_edge(name, END)
    return graph.compile(name=f"{name}-studio")

