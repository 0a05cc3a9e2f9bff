"""The cohort command as a process: what it does besides the model calls stays off the event loop, so the
calls in flight are not held back (docs/performance.md, "The cohort command as a process")."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[1]
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
