"""The Python API (consilium/api/), called exactly as docs/api.md shows: every ```python block of the doc
runs here, from the repository root, and must not raise; then the figures the examples print are checked."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

import consilium
from consilium.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"

BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_documented_example_runs_as_written(number: int, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CONSILIUM_CACHE", "off")
    exec(compile(BLOCKS[number], f"docs/api.md block {number + 1}", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_the_doc_has_its_examples() -> None:
    assert len(BLOCKS) == 11  # the last: every command from Python


def test_run_returns_the_records_the_cli_writes(tmp_path: Path) -> None:
    traces = consilium.run(CASE, model=PANEL, out=tmp_path)
    assert [t.format for t in traces] == ["free-form", "structured"]
    assert all(t.status == "completed" and t.stop_reason == "consensus" for t in traces)
    # The shipped panel: the radiologist dissents in round 1, the report is revised, round 2 accepts.
    assert [len(t.rounds) for t in traces] == [2, 2] and traces[1].role_assignment_shared
    written = sorted(p.name for p in tmp_path.glob("*/*.trace.json"))
    assert written == ["diagnostic-myocarditis.free-form.trace.json", "diagnostic-myocarditis.structured.trace.json"]
    assert consilium.read_trace(next(tmp_path.glob("*/*.structured.trace.json"))).model_dump() == \
        traces[1].model_dump()


def test_judge_and_replay_a_trace_object_and_a_file(tmp_path: Path) -> None:
    [trace] = consilium.run(CASE, protocol="single", variants=["structured"], model=PANEL, out=tmp_path)
    judgement = consilium.judge(trace, "otb-conclusion-alignment", judge_model=PANEL)
    assert judgement.trace_kind == "single" and [i.component for i in judgement.items] == ["conclusion"]
    assert judgement.items[0].score == 2  # the shipped panel's judge rule: {rationale: ok, score: 2}
    [path] = list(tmp_path.glob("*/*.trace.json"))
    for given in (trace, path, str(path)):
        check = consilium.replay(given)
        assert check.identical and check.served == 2 and check.difference is None


def test_the_plain_functions_work_inside_a_running_loop() -> None:
    """As in a notebook cell: an event loop is running, and the plain twin still returns the result."""
    async def cell() -> list[str]:
        return [t.status for t in consilium.run(CASE, protocol="single", model=PANEL)]

    assert asyncio.run(cell()) == ["completed", "completed"]


def test_a_mistake_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserError, match="unknown protocol 'nope'"):
        consilium.run(CASE, protocol="nope", model=PANEL)
    with pytest.raises(UserError, match=r"variants: \['agents'\]: the consilium protocol runs in free-form, "
                                        "structured"):
        consilium.run(CASE, variants=["agents"], model=PANEL)
    with pytest.raises(UserError, match="turn"):
        consilium.run(CASE, protocol="turn", model=PANEL)
    with pytest.raises(UserError, match="config: max_rounds: "):
        consilium.run(CASE, model=PANEL, config={"max_rounds": 0})


def test_import_consilium_stays_light() -> None:
    code = "import sys, consilium; print('langgraph' in sys.modules, consilium.__version__)"
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.stdout.split() == ["False", consilium.__version__]
