"""The cohort command as a process: what it does besides the model calls stays off the event loop, so the
calls in flight are not held back (docs/performance.md, "The cohort command as a process")."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from consilium.cli import main
from consilium.models.types import GenerationSettings, Message, ModelRequest
from consilium.models.wrappers.recording import request_hash

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
#: Case c1's structured synthesis answers no JSON: its structured arm fails, the others complete.
BROKEN = "ZQBROKEN"


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three cases × both formats of the shipped scripted panel, one structured arm failing, run by the CLI
    with every file replacement watched: which file, and whether it was made on the event loop's thread."""
    tmp = tmp_path_factory.mktemp("cohort-process")
    cases = tmp / "cases"
    cases.mkdir()
    source = EXAMPLE.read_text()
    for n, extra in enumerate(("", f" {BROKEN}", " Smoker.")):
        text = source.replace("id: diagnostic-myocarditis", f"id: case-{n}")
        (cases / f"c{n}.yaml").write_text(text.replace("aching muscles", f"aching muscles{extra}"))
    script = yaml.safe_load((ROOT / "examples" / "models" / "scripted-panel.yaml").read_text())
    script["rules"].insert(0, {"stage": "synthesis", "contains_all": [BROKEN, '"final_opinion"'],
                               "response": "no json here"})
    panel = tmp / "panel.json"
    panel.write_text(json.dumps(script))
    replaced: list[tuple[str, bool]] = []
    real_replace = os.replace

    def watched(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        replaced.append((os.fspath(dst), _on_event_loop()))
        real_replace(src, dst, *args, **kwargs)

    out = tmp / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "replace", watched)
        code = main(["--log-file", str(tmp / "log.jsonl"), "cohort", "--cases", str(cases), "--model",
                     f"scripted:{panel}", "--out", str(out), "--no-cache"])
    [run_dir] = list(out.iterdir())
    return {"code": code, "run_dir": run_dir, "replaced": replaced}


def test_a_cohort_writes_every_trace_off_the_event_loop(cohort: dict[str, Any]) -> None:
    traces = [(path, on_loop) for path, on_loop in cohort["replaced"] if path.endswith(".trace.json")]
    # Six traces: case-1's structured arm failed, and its trace says where.
    assert len(traces) == 6
    assert [on_loop for _, on_loop in traces] == [False] * 6
    # The tables are still written where they were (a table is rewritten once, at the end).
    assert any(path.endswith("arms.csv") for path, _ in cohort["replaced"])


def test_each_arm_is_told_once_with_the_digest_of_its_trace_as_written(cohort: dict[str, Any]) -> None:
    run_dir: Path = cohort["run_dir"]
    assert cohort["code"] == 1  # an arm failed
    lines = [json.loads(line) for line in (run_dir / "arms.jsonl").read_text().splitlines()]
    keys = [(row["case_id"], row["format"]) for row in lines]
    assert sorted(keys) == sorted((f"case-{n}", f) for n in range(3) for f in ("free-form", "structured"))
    status = {(row["case_id"], row["format"]): row["status"] for row in lines}
    assert status.pop(("case-1", "structured")) == "failed"
    assert set(status.values()) == {"completed"}
    for row in lines:
        written = (run_dir / row["trace"]).read_bytes()
        assert row["trace_sha256"] == hashlib.sha256(written).hexdigest()
        assert json.loads(written)["status"] == row["status"]
    with (run_dir / "arms.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 6


#: Run in a fresh interpreter: ``consilium cohort`` against an OpenAI-compatible server, stopped where its first
#: call would reach the network (the audit event of resolving or connecting), printing the modules loaded then.
_FIRST_CALL = """
import json, os, sys
def at_first_call(event, args):
    if event in ("socket.getaddrinfo", "socket.connect"):
        print(json.dumps(sorted(sys.modules)), flush=True)
        os._exit(0)
sys.addaudithook(at_first_call)
from consilium.cli import main
main(%r)
"""


@pytest.fixture(scope="module")
def first_call_modules(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules a two-case cohort against a server (no --judge) has loaded when its first call goes out."""
    tmp_path = tmp_path_factory.mktemp("first-call")
    cases = tmp_path / "cases"
    cases.mkdir()
    for n in range(2):
        (cases / f"c{n}.yaml").write_text(EXAMPLE.read_text().replace("id: diagnostic-myocarditis", f"id: c-{n}"))
    argv = ["cohort", "--cases", str(cases), "--model", "openai:stand-in", "--base-url", "http://127.0.0.1:9/v1",
            "--out", str(tmp_path / "runs")]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-first-call", "CONSILIUM_CACHE": str(tmp_path / "cache.sqlite")}
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL % (argv,)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Stopped at the first call: nothing has answered, no trace is written.
    assert not any(path.is_file() for path in (tmp_path / "runs").rglob("*.trace.json"))
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_cohort_against_a_server_makes_its_first_call_without_tiktoken(first_call_modules: set[str]) -> None:
    """A served model reports its usage, so nothing counts tokens before its first answer: tiktoken and its
    encoding load on the first count (a scripted or replayed call, a server that does not report usage)."""
    # The protocol's graphs and the HTTP client are in.
    assert {"consilium.graphs.consilium.run", "aiohttp", "langgraph.graph"} <= first_call_modules
    assert sorted(m for m in first_call_modules if m.split(".")[0] in ("tiktoken", "tiktoken_ext", "openai")) == []


def test_a_cohort_without_judges_makes_its_first_call_without_judging_or_reporting(
        first_call_modules: set[str]) -> None:
    """A cohort without --judge loads neither the judges' runner and jury, nor the calibration, nor the report's
    tables and figures before its first call, nor LangChain's chat model class (a model of ours is not one).
    (rich is loaded there, by httpx's command-line module that the LangGraph SDK's httpx brings in; consilium's
    own modules leave it alone: tests/cli/test_startup.py.)"""
    assert {"consilium.cohort.finish", "consilium.models.wrappers.observed"} <= first_call_modules
    unused = ("consilium.calibration", "consilium.reports", "consilium.judges.many", "consilium.judges.jury",
              "consilium.judges.runner", "consilium.judges.aggregate", "consilium.judges.coverage",
              "langchain_core.language_models.chat_models")
    assert sorted(m for m in first_call_modules if m.startswith(unused)) == []


def _digest_by_hand(messages: list[dict[str, Any]], settings: dict[str, Any]) -> str:
    blob = json.dumps({"messages": messages, "settings": settings, "schema": None, "enforce": None},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_a_request_is_digested_once_and_a_changed_one_again() -> None:
    """The cache's key and the call's record both digest each request; the second is a look-up of the first,
    and a request made after another is gone (its id perhaps reused) gets its own digest."""
    settings = GenerationSettings(temperature=0.3, max_tokens=77)
    request = ModelRequest(messages=(Message(role="system", content="Panel."), Message(role="user", content="Ä 1")),
                           settings=settings)
    by_hand_settings = settings.model_dump(exclude={"timeout_s"})
    assert by_hand_settings["temperature"] == 0.3 and by_hand_settings["max_tokens"] == 77
    first = request_hash(request)
    assert first == _digest_by_hand([{"role": "system", "content": "Panel.", "images": []},
                                     {"role": "user", "content": "Ä 1", "images": []}],
                                    by_hand_settings)
    assert request_hash(request) is first  # looked up, not serialised again
    changed = request.with_messages((Message(role="user", content="Ä 2"),))
    assert request_hash(changed) == _digest_by_hand(
        [{"role": "user", "content": "Ä 2", "images": []}], by_hand_settings)
    del request, changed
    for n in range(50):  # short-lived requests: each its own digest, whatever id it is given
        one = ModelRequest(messages=(Message(role="user", content=f"case {n}"),), settings=settings)
        assert request_hash(one) == _digest_by_hand(
            [{"role": "user", "content": f"case {n}", "images": []}], by_hand_settings)


def test_the_process_benchmark_names_modules_a_cohort_imports() -> None:
    """benchmarks/cohort_process.py times the imports a cohort needs by their module names; a renamed module
    must fail here, not in `make bench`."""
    import importlib.util

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import cohort_process
    finally:
        sys.path.pop(0)
    missing = [name for name in cohort_process.COHORT_IMPORTS if importlib.util.find_spec(name) is None]
    assert not missing
