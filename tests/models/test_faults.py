"""Reliability: a cohort against a fault-injecting server ends with every arm accounted for."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import shared_data
from support.faultserver import FAULTS, fault_server

from consilium.cli import main
from consilium.models.backends.scripted import Script, ScriptRule

SCRIPT = Script(model="fault-panel", rules=[
    ScriptRule(contains="Choose the panel of specialists", json={
        "primary": {"label": "Internist", "justification": "x"},
        "supporting": [{"label": "Neurologist", "justification": "y"},
                       {"label": "Radiologist", "justification": "z"}]}),
    ScriptRule(contains='"final_conclusion"', json={
        "clinical_data": "d", "syndromes": "s", "differential_diagnosis": "1. A", "diagnostic_strategy": "t",
        "management_strategy": "m", "final_conclusion": "A"}),
    ScriptRule(contains="each specialist writes an independent opinion", response="My opinion: A is most likely."),
    ScriptRule(contains='"final_opinion", "summary"', json={
        "final_opinion": "A", "summary": "s", "final_differential": "1. A", "diagnostic_plan": "d",
        "management_plan": "m", "safety_warnings": "w"}),
    ScriptRule(contains="in prose", response="Report: A is most likely; confirm with test T."),
    ScriptRule(contains='"vote": "accept" or "dissent"', json={"vote": "accept", "reason": "ok",
                                                              "requested_change": None}),
    ScriptRule(contains="Score the candidate", json={"rationale": "adequate", "score": 2}),
])


@pytest.mark.localhost
def test_a_cohort_under_a_20_percent_fault_rate_loses_no_arm(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    cases = shared_data("agentclinic_medqa.jsonl")
    out = tmp_path / "runs"
    with fault_server(SCRIPT, rate=0.2, seed=1, hang_s=1.0) as server:
        code = main(["cohort", "--cases", str(cases), "--limit", "50", "--model", "openai:fault-panel",
                     "--base-url", server.base_url, "--schema-dialect", "none", "--timeout", "0.5",
                     "--max-attempts", "8", "--retry-base-delay", "0.01", "--concurrency", "16",
                     "--judge", "ai-consilium", "--judge-model", "openai:fault-judge", "--out", str(out)])
    [run_dir] = list(out.iterdir())
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    # An unusable answer (empty or cut off: 4 of the 16 faults) three times running fails its stage by design,
    # about once in 8 000 calls, which the concurrency's interleaving makes land on an arm some runs: the
    # cohort then says so by its exit code (1), and every arm is still recorded, completed or failed.
    assert code == (1 if any(a["status"] == "failed" for a in arms) else 0)
    assert len(arms) == 100 and len({(a["case_id"], a["format"]) for a in arms}) == 100
    for arm in arms:
        assert arm["status"] in ("completed", "failed")
        if arm["status"] == "failed":
            assert arm["failed_stage"] and arm["error"], arm
    assert set(server.injected) == set(FAULTS), server.injected
    # The judge ran under the same faults: every criterion of every completed arm is scored or
    # recorded as not evaluable with a reason, never missing.
    judged = list(csv.DictReader((run_dir / "judgements.csv").read_text().splitlines()))
    per_arm = {"free-form": 11, "structured": 11 + 7 + 5}
    completed_arms = [a for a in arms if a["status"] == "completed"]
    assert len(judged) == sum(per_arm[a["format"]] for a in completed_arms)
    assert all(j["score"] or j["not_evaluable"] == "True" for j in judged)
    completed = len(completed_arms)
    print(f"faults injected {dict(server.injected)}; requests {server.requests}; arms completed {completed}/100")
    assert completed >= 90


@pytest.mark.localhost
def test_a_cohort_killed_midway_resumes_without_repeating_finished_calls(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from consilium.graphs.registry import read_trace

    cases = shared_data("agentclinic_medqa.jsonl")
    out = tmp_path / "runs"
    with fault_server(SCRIPT, rate=0.0) as server:
        common = ["--cases", str(cases), "--limit", "30", "--model", "openai:fault-panel", "--base-url",
                  server.base_url, "--schema-dialect", "none", "--concurrency", "4"]
        child = subprocess.Popen([sys.executable, "-m", "consilium", "cohort", *common, "--out", str(out)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
        deadline = time.time() + 120
        progress = None
        while time.time() < deadline and child.poll() is None:
            found = list(out.glob("*/arms.jsonl"))
            if found and len(found[0].read_text().splitlines()) >= 20:
                progress = found[0]
                break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert progress is not None, "the cohort did not get far enough before the deadline"
        run_dir = progress.parent
        finished = {p: p.stat().st_mtime_ns for p in run_dir.glob("arms/*/*/*.trace.json")}
        # A write the kill cut short leaves at most its temporary file: every file it was for reads whole.
        assert all(read_trace(p) for p in finished)
        before = server.requests
        assert main(["cohort", *common, "--resume", str(run_dir)]) == 0
        after = server.requests
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    assert len(arms) == 60 and all(a["status"] == "completed" for a in arms)
    assert not list(run_dir.rglob(".*.tmp")), "a temporary file of a write cut short was left behind"
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in finished.items())  # finished arms untouched
    # After the resume the server sees only calls that no finished arm had made: calls an interrupted
    # arm had completed come back from the response cache (marked cached in its trace).
    resumed = [read_trace(p) for p in run_dir.glob("arms/*/*/*.trace.json") if p not in finished]
    uncached = sum(1 for t in resumed for c in t.calls if not c.cached)
    assert resumed and after - before <= uncached, (after - before, uncached)
    print(f"killed after {len(finished)} finished traces ({before} requests); the resume made {after - before} "
          f"requests for {len(resumed)} remaining arms whose traces record {uncached} uncached calls")


def test_a_failing_disk_write_leaves_the_old_file_whole(tmp_path: Path) -> None:
    """The file-size limit makes the write fail half-way (EFBIG), as a full disk would."""
    import subprocess
    import sys

    target = tmp_path / "run.trace.json"
    target.write_text('{"old": "complete"}\n')
    script = f"""
import resource, signal
from pathlib import Path
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_text_atomic(Path({str(target)!r}), "x" * 100_000)
except UserError as exc:
    print("failed:", exc)
else:
    print("written")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("failed:"), done.stdout + done.stderr
    assert target.read_text() == '{"old": "complete"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["run.trace.json"]  # no temporary file left behind
