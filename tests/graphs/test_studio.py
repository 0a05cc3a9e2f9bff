"""The graphs langgraph.json names run under LangGraph's dev server (docs/studio.md).

Each graph is built as the server builds it (the file and factory langgraph.json names, called with a run
config as langgraph-api calls a factory that takes one), with the server's rule against blocking calls on
the event loop in force; its input, config and context schemas carry the documented keys; and it runs with
the documented ``configurable`` keys on the scripted panel. One test drives ``langgraph dev`` itself
through langgraph-sdk.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from langgraph_api._factory_utils import _classify_factory
from support.keyecho import SECRET, key_echo_server
from support.localserver import free_port

from consilium.errors import UserError
from consilium.graphs.registry import read_trace

ROOT = Path(__file__).resolve().parents[2]
PANEL = "scripted:examples/models/scripted-panel.yaml"
CONSILIUM_CASE = "examples/cases/diagnostic-myocarditis.yaml"
BOARD_CASE = "examples/cases/tumor-board-nsclc.yaml"
SHARED_KEYS = {"model", "moderator_model", "case", "seed", "temperature", "role_labels", "out"}
KEYS = {"consilium": SHARED_KEYS | {"format", "max_rounds"}, "board": SHARED_KEYS | {"mode", "max_turns"}}


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server runs in the folder of langgraph.json; relative case and model paths are read from there."""
    monkeypatch.chdir(ROOT)


def _factory(graph_id: str) -> Callable[..., Any]:
    """The factory langgraph.json names, imported from its file as langgraph-api imports it."""
    path, _, name = json.loads((ROOT / "langgraph.json").read_text())["graphs"][graph_id].partition(":")
    module_name = path.replace("/", "__").removesuffix(".py").lstrip(".")  # langgraph_api.graph._graph_from_spec
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    factory: Callable[..., Any] = getattr(module, name)
    return factory


@cache
def _enable_blockbuster() -> Callable[[], Any]:
    """langgraph_runtime_inmem's own switch; importing the runtime makes a .langgraph_api/ folder in the working
    folder, so it is imported in a scratch one."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            from langgraph_runtime_inmem.queue import _enable_blockbuster as enable
        finally:
            os.chdir(here)
    return cast(Callable[[], Any], enable)


@contextmanager
def _no_blocking() -> Iterator[None]:
    """The dev server's own check (blockbuster, as langgraph_runtime_inmem turns it on): a blocking call made
    on the event loop raises."""
    buster = _enable_blockbuster()()
    try:
        yield
    finally:
        buster.deactivate()


def _build(graph_id: str, configurable: dict[str, Any] | None = None) -> Any:
    """The graph as the server builds it for a run: the factory called on the event loop with the run config."""
    factory = _factory(graph_id)
    hook = _classify_factory(factory)
    assert hook is not None  # a factory of the run config, not a graph object
    config = {"configurable": {"thread_id": "t-1", "assistant_id": "a-1", **(configurable or {})}}

    async def build() -> Any:
        return factory(**hook(config, None))

    with _no_blocking():
        return asyncio.run(build())


def _run(graph_id: str, configurable: dict[str, Any], state: dict[str, Any] | None = None) -> dict[str, Any]:
    graph = _build(graph_id)

    async def go() -> dict[str, Any]:
        result: dict[str, Any] = await graph.ainvoke(state or {}, config={"configurable": configurable})
        return result

    with _no_blocking():
        return asyncio.run(go())


@pytest.mark.parametrize("graph_id", ["consilium", "board"])
def test_each_graph_declares_its_documented_keys(graph_id: str) -> None:
    graph = _build(graph_id)
    assert set(graph.get_input_jsonschema()["properties"]) == {"case"}
    context = graph.get_context_jsonschema()
    assert set(context["properties"]) == KEYS[graph_id]
    with pytest.warns(Warning):  # deprecated by LangGraph, still what langgraph-api renders as the config schema
        config = graph.get_config_jsonschema()
    assert set(config["$defs"][context["title"]]["properties"]) == KEYS[graph_id]
    variant = {"consilium": "format", "board": "mode"}[graph_id]
    assert context["properties"][variant]["enum"] == (["free-form", "structured"] if graph_id == "consilium"
                                                      else ["agents", "single"])
    output = set(graph.get_output_jsonschema()["properties"])
    assert {"status", "error", "trace", "trace_file", "roles", "stop_reason", variant} <= output
    # Studio's drawing (xray) shows the protocol's own graph inside the run's second node.
    nodes = set(graph.get_graph(xray=True).nodes)
    inner = {"consilium": {"assign_roles", "opinion", "vote", "tally", "revise"},
             "board": {"assign_roles", "moderate", "speak", "conclude"}}[graph_id]
    assert {"prepare", *(f"{graph_id}:{n}" for n in inner)} <= nodes


def test_the_consilium_runs_with_the_documented_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSILIUM_STUDIO_TRUSTED", "1")  # `out` writes on the server: a trusted server's
    result = _run("consilium", {"model": PANEL, "moderator_model": PANEL, "case": CONSILIUM_CASE,
                                "format": "free-form", "max_rounds": 1, "seed": 7, "temperature": 0.5,
                                "role_labels": "free", "out": str(tmp_path)})
    assert result["status"] == "completed" and result["error"] is None
    # The radiologist dissents in round 1; one round allowed: the run stops at the round limit.
    assert result["stop_reason"] == "round_limit" and len(result["rounds"]) == 1
    assert [r.label for r in result["roles"]] == ["Internist", "Neurologist", "Radiologist"]
    assert result["format"] == "free-form" and result["final_report"].text.startswith("Report")
    trace = result["trace"]
    assert trace["kind"] == "consilium" and trace["case_id"] == "diagnostic-myocarditis"
    assert {k: trace["config"][k] for k in ("max_rounds", "seed", "temperature", "role_labels")} == \
        {"max_rounds": 1, "seed": 7, "temperature": 0.5, "role_labels": "free"}
    assert trace["calls"] and {c["stage"] for c in trace["calls"]} >= {"role_assignment", "opinion", "vote"}
    written = read_trace(Path(result["trace_file"]))
    assert written.model_dump(mode="json") == trace


@pytest.mark.parametrize("mode", ["agents", "single"])
def test_the_board_runs_in_each_mode_with_an_inline_case(mode: str) -> None:
    text = (ROOT / BOARD_CASE).read_text(encoding="utf-8")
    # The scripted moderator is written for the default turn limit, 12.
    result = _run("board", {"model": PANEL, "case": text, "mode": mode, "max_turns": 12})
    assert result["status"] == "completed" and result["mode"] == mode
    assert result["conclusion"] and result["validation"] is not None
    assert result["trace"]["kind"] == "board" and result["trace"]["case_id"] == "tumor-board-nsclc"
    assert result["trace_file"] is None
    if mode == "agents":
        assert len(result["turns"]) == 12 and result["stop_reason"] == "turn_limit"
        assert result["trace"]["config"]["max_turns"] == 12
    else:
        assert result["stop_reason"] == "single_call" and result["validation"].exact == 1


def test_the_input_case_may_be_a_mapping_and_wins_over_the_configurable_one() -> None:
    case = yaml.safe_load((ROOT / CONSILIUM_CASE).read_text(encoding="utf-8"))
    case["id"] = "inline-myocarditis"
    result = _run("consilium", {"model": PANEL, "case": "no/such/file.yaml"}, {"case": case})
    assert result["status"] == "completed" and result["trace"]["case_id"] == "inline-myocarditis"


def test_the_factorys_configurable_keys_are_its_runs_defaults() -> None:
    """Called as LangGraph's own tools call it: the documented keys of the factory's config are bound; a run's
    own configurable wins."""
    graph = _build("consilium", {"model": PANEL, "max_rounds": 1})
    first = asyncio.run(graph.ainvoke({}))
    assert first["stop_reason"] == "round_limit" and first["trace"]["model"] == "scripted-panel"
    second = asyncio.run(graph.ainvoke({}, config={"configurable": {"max_rounds": 3}}))
    assert second["stop_reason"] == "consensus" and len(second["rounds"]) == 2


@pytest.mark.parametrize(("configurable", "message"), [
    ({"mode": "board"}, "configurable.mode: Input should be 'agents' or 'single'"),
    ({"max_turns": 1}, "configurable.max_turns: Input should be greater than or equal to 2"),
    ({"max_rounds": 0}, "configurable.max_rounds: Input should be greater than or equal to 1"),
    ({"format": "free_form"}, "configurable.format: Input should be 'free-form' or 'structured'"),
    ({"seed": "7"}, "configurable.seed: Input should be a valid integer"),
    ({"role_labels": "grammar"}, "configurable.role_labels: Input should be 'catalogue' or 'free'"),
    ({"case": "examples/cases/missing.yaml"}, "configurable.case: examples/cases/missing.yaml: no such file"),
    ({"case": "id: x\ntitle: t\n"}, "configurable.case: "),
    ({"case": "{not json"}, "configurable.case: "),
    ({"model": "nosuch:thing"}, "configurable.model: unknown model spec 'nosuch:thing'"),
    ({"moderator_model": "scripted:no/such/script.yaml"}, "configurable.moderator_model: "),
    ({"model": ""}, "configurable.model: String should have at least 1 character"),
    ({"moderator_model": ""}, "configurable.moderator_model: String should have at least 1 character"),
    ({"case": ""}, "configurable.case: empty; give a case file's path, a mapping of case fields or the case as "
                   "YAML/JSON text"),
    ({"case": 5}, "configurable.case: expected a case file's path, a mapping of case fields or the case as "
                  "YAML/JSON text, not int"),
    ({"model": "langchain:os:getpid"}, "configurable.model: a langchain: spec calls a function of the server's "
                                       "Python; refused unless the server runs with CONSILIUM_STUDIO_TRUSTED=1"),
    ({"moderator_model": "langchain:os:getpid"}, "configurable.moderator_model: a langchain: spec calls"),
    ({"out": "runs"}, "configurable.out: writing the trace into a folder of the server's is refused unless the "
                      "server runs with CONSILIUM_STUDIO_TRUSTED=1"),
])
def test_a_bad_setting_fails_the_run_naming_its_key(configurable: dict[str, Any], message: str) -> None:
    graph_id = "board" if {"mode", "max_turns"} & set(configurable) else "consilium"
    with pytest.raises(UserError) as caught:
        _run(graph_id, {"model": PANEL, **configurable})
    assert str(caught.value).startswith(message)
    # A ValueError as well: the server shows such an error's message (others it hides as "internal").
    assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)


def test_a_trusted_server_names_an_out_that_is_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSILIUM_STUDIO_TRUSTED", "1")
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        _run("board", {"model": PANEL, "out": str(tmp_path / "file")})
    assert str(caught.value).startswith(f"configurable.out: {tmp_path / 'file'}: cannot create the output folder")


@pytest.mark.localhost
def test_a_key_in_a_model_error_is_nowhere_in_the_runs_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with key_echo_server() as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = _run("board", {"model": "openai:stub", "case": BOARD_CASE})
    assert result["status"] == "failed" and "HTTP 400" in result["error"]
    assert "HTTP 400" in json.dumps(result["trace"])
    assert SECRET not in json.dumps(result, default=str)


# --- the dev server itself ------------------------------------------------------------------------------


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def _dev_server(folder: Path, startup_timeout_s: float = 40.0) -> Iterator[str]:
    """``langgraph dev`` on 127.0.0.1, stopped with its whole process group in any case. It runs in ``folder``,
    which holds langgraph.json and links to the package and the examples: the server resolves the graphs' paths
    against its working folder and keeps its state in .langgraph_api/ there, where a server started in the
    repository may have left runs it would take up first."""
    (folder / "langgraph.json").write_bytes((ROOT / "langgraph.json").read_bytes())
    for name in ("consilium", "examples"):
        (folder / name).symlink_to(ROOT / name, target_is_directory=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
               "--port", str(port)]  # `langgraph dev`
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + startup_timeout_s
            while not _ok(url):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode("utf-8", errors="replace")[-6000:]
                    pytest.fail(f"langgraph dev did not come up on {url} (exit {server.poll()}):\n{tail}")
                time.sleep(0.25)
            yield url
        finally:
            _stop(server)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Its process group: asked to stop, then killed if it has not within 10 s (a graceful shutdown waits for
    the runs in flight)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:  # the group is gone already
            break
        try:
            server.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    server.wait()


@pytest.mark.localhost
def test_langgraph_dev_runs_the_consilium_and_the_board(tmp_path: Path) -> None:
    from langgraph_sdk import get_client

    async def drive(url: str) -> list[dict[str, Any]]:
        client = get_client(url=url)
        results = []
        for graph_id, settings in (("consilium", {"model": PANEL, "case": CONSILIUM_CASE, "format": "structured",
                                                  "max_rounds": 3}),
                                   ("board", {"model": PANEL, "case": BOARD_CASE, "mode": "single"}),
                                   ("consilium", {"model": PANEL, "max_rounds": 0})):
            thread = await client.threads.create()
            # The board's settings go as the run's context, which the server accepts instead of configurable.
            given: dict[str, Any] = {"context": settings} if graph_id == "board" else \
                {"config": {"configurable": settings}}
            result = await client.runs.wait(thread["thread_id"], graph_id, input={}, raise_error=False, **given)
            assert isinstance(result, dict)
            results.append(result)
        return results

    with _dev_server(tmp_path) as url:
        consilium, board, refused = asyncio.run(asyncio.wait_for(drive(url), timeout=45))
    assert consilium["status"] == "completed" and consilium["stop_reason"] == "consensus"
    assert consilium["final_report"]["sections"]["final_opinion"] and consilium["trace"]["kind"] == "consilium"
    assert [r["label"] for r in consilium["roles"]] == ["Internist", "Neurologist", "Radiologist"]
    assert board["status"] == "completed" and board["conclusion"] and board["trace"]["mode"] == "single"
    assert refused["__error__"] == {"error": "StudioError",
                                    "message": "configurable.max_rounds: Input should be greater than or equal to 1"}
