"""A cohort at scale: running progress counts, concurrent lazy judging, CSV rows
appended as they finish, resume from the arms.jsonl index, and traces sharded by a hash prefix."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any, cast

import pytest
from test_cohort import PANEL, read_csv, write

from consilium.cases import load_case
from consilium.cli import main
from consilium.cohort.arms import CohortArm, model_folder
from consilium.cohort.index import ArmIndex
from consilium.cohort.progress import ArmTally
from consilium.cohort.run import CohortRun, run_cohort
from consilium.cohort.tables import CsvLog, append_jsonl
from consilium.errors import UserError
from consilium.graphs.base import RunModels
from consilium.graphs.consilium.config import ConsiliumConfig
from consilium.graphs.registry import read_trace
from consilium.judges.many import judge_files
from consilium.judges.record import Judgement, read_judgement
from consilium.judges.rubric import Rubric, load_rubric
from consilium.judges.runner import AnyTrace, JudgeSetup
from consilium.models import ChatModel, ModelRequest, ModelResponse
from consilium.models.backends.scripted import Script, ScriptedModel
from consilium.models.wrappers import ConcurrencyLimitedModel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
#: The structured synthesis fails: those arms are recorded as failed.
BROKEN = dict(PANEL, rules=[r for r in cast(list[dict[str, Any]], PANEL["rules"]) if r["stage"] != "synthesis"] + [
    {"stage": "synthesis", "contains": "in prose", "response": "Report: A."},
    {"stage": "synthesis", "response": "no json here"}])
#: otb-conclusion-alignment makes one judge call per consilium trace.
RUBRIC = "otb-conclusion-alignment"
ALIGNED = {"stage": "judge", "json": {"score": 4, "rationale": "aligned"}}


def case_folder(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    source = EXAMPLE.read_text()
    for i in range(n):
        (folder / f"c{i}.yaml").write_text(source.replace("id: diagnostic-myocarditis", f"id: case-{i}"))
    return folder


def tokens(row: dict[str, Any]) -> int:
    return int(row.get("input_tokens") or 0) + int(row.get("output_tokens") or 0)


# --- progress: running counters -------------------------------------------------------------------


def test_the_tally_equals_a_re_sum_over_the_latest_row_of_every_arm() -> None:
    tally = ArmTally()
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    rows: list[dict[str, Any]] = [
        {"case_id": f"c{i % 5}", "model_spec": f"m{i % 3}", "format": ("free-form", "structured")[i % 2],
             "status": "failed" if i % 7 == 3 else "completed", "resumed": i % 4 == 0,
             "input_tokens": 100 + i, "output_tokens": "" if i % 7 == 3 else 10 * i} for i in range(60)]
    for row in rows:  # 60 rows over 30 arms: half of them replace an earlier row of their arm
        key = (row["case_id"], row["model_spec"], row["format"])
        tally.add(row, latest.get(key))
        latest[key] = row
        assert (tally.done, tally.failed, tally.resumed, tally.tokens) == (
            len(latest), sum(r["status"] != "completed" for r in latest.values()),
            sum(bool(r["resumed"]) for r in latest.values()), sum(tokens(r) for r in latest.values()))
    assert tally.failed > 0 and tally.resumed > 0


def test_the_progress_lines_carry_the_running_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = case_folder(tmp_path, 3)
    out = tmp_path / "runs"
    # Two models, both formats; the broken model's structured arms fail.
    assert main(["cohort", "--cases", str(cases), "--model", write(tmp_path, "p.json", PANEL), "--extra-model",
                 write(tmp_path, "b.json", BROKEN), "--out", str(out)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    [run_dir] = list(out.iterdir())
    logged = [json.loads(line) for line in (run_dir / "arms.jsonl").read_text().splitlines()]
    assert len(lines) == len(logged) == 12
    for n, line in enumerate(lines, 1):  # the progress line of the n-th arm: a re-sum over the first n
        match = re.fullmatch(r"\[(\d+)/12\] .* · failed (\d+) · ([\d,]+) tokens", line)
        assert match, line
        first = logged[:n]
        assert (int(match[1]), int(match[2]), int(match[3].replace(",", ""))) == (
            n, sum(r["status"] != "completed" for r in first), sum(tokens(r) for r in first))
    assert sum(r["status"] == "failed" for r in logged) == 3


# --- judging: concurrent, lazy, rows appended -----------------------------------------------------


class InFlight:
    """A model wrapper counting the calls in flight at once (below the limiter)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.model_id, self.endpoint = inner.model_id, inner.endpoint
        self.supports_images, self.stage_max_tokens = inner.supports_images, inner.stage_max_tokens
        self.enforces_schemas = inner.enforces_schemas
        self.now = self.peak = self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        try:
            return await self.inner.generate(request)
        finally:
            self.now -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


def trace_files(tmp_path: Path, n: int) -> list[Path]:
    """``n`` completed consilium traces (free-form), written by a scripted cohort."""
    out = tmp_path / "traces"
    assert main(["cohort", "--cases", str(case_folder(tmp_path, n)), "--model", write(tmp_path, "p.json", PANEL),
                 "--formats", "free-form", "--out", str(out)]) == 0
    return sorted(out.rglob("*.trace.json"))


def test_judging_keeps_the_limit_in_flight_across_traces(tmp_path: Path) -> None:
    files = trace_files(tmp_path, 8)
    counter = InFlight(ScriptedModel(Script.model_validate({"latency_ms": 20, "rules": [ALIGNED]})))
    model = ConcurrencyLimitedModel(counter, 3)
    rubric = load_rubric(RUBRIC)
    judged: list[Judgement] = []

    def done(position: int, path: Path, trace: AnyTrace, used: Rubric, judgement: Judgement) -> None:
        judged.append(judgement)

    asyncio.run(judge_files(((rubric, f) for f in files), JudgeSetup(model=model), done, limit=3))
    # One call per trace: three in flight at once means three traces judged at once, never more.
    assert counter.calls == len(judged) == 8
    assert counter.peak == 3
    assert all(i.score == 4 for j in judged for i in j.items)


def test_traces_are_read_as_their_judgements_start(tmp_path: Path) -> None:
    files = trace_files(tmp_path, 8)
    model = ScriptedModel(Script.model_validate({"latency_ms": 5, "rules": [ALIGNED]}))
    reads: list[Path] = []
    seen: list[int] = []  # reads made when each judgement finished

    def read(path: Path) -> AnyTrace:
        reads.append(path)
        return read_trace(path)

    def done(position: int, path: Path, trace: AnyTrace, used: Rubric, judgement: Judgement) -> None:
        seen.append(len(reads))

    asyncio.run(judge_files(((load_rubric(RUBRIC), f) for f in files), JudgeSetup(model=model), done, limit=2,
                            read=read))
    assert sorted(reads) == files  # each once
    # The k-th judgement to finish saw at most k - 1 + 2 traces read: two in flight, none read ahead.
    assert all(n <= k + 2 for k, n in enumerate(seen)), seen
    assert seen[0] == 2


def test_judge_reads_a_folder_one_trace_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [good] = trace_files(tmp_path, 1)
    folder = tmp_path / "judged"
    folder.mkdir()
    shutil.copy(good, folder / "a.free-form.trace.json")
    (folder / "b.free-form.trace.json").write_text("{not json")
    judge = write(tmp_path, "j.json", {"rules": [ALIGNED]})
    # One at a time: the first trace is judged (and its record written) before the second is read.
    assert main(["judge", str(folder), "--rubric", RUBRIC, "--judge-model", judge, "--max-concurrency", "1"]) == 2
    assert "b.free-form.trace.json: not a readable JSON trace" in capsys.readouterr().err
    assert read_judgement(folder / f"a.free-form.judge.{RUBRIC}.json").items[0].score == 4


def records(run_dir: Path) -> list[Judgement]:
    return [read_judgement(p) for p in run_dir.rglob(f"*.judge.{RUBRIC}.json")]


def test_cohort_judgements_csv_is_complete_and_in_order(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    judge = write(tmp_path, "j.json", {"latency_ms": 5, "rules": [ALIGNED]})
    assert main(["cohort", "--cases", str(case_folder(tmp_path, 5)), "--model", write(tmp_path, "p.json", PANEL),
                 "--judge", RUBRIC, "--judge-model", judge, "--concurrency", "4", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    arms = read_csv(run_dir / "arms.csv")
    rows = read_csv(run_dir / "judgements.csv")
    # In arms.csv's order, one row per judged item, each equal to its judgement record.
    assert [r["judgement"].replace(f".judge.{RUBRIC}.json", ".trace.json") for r in rows] == [a["trace"] for a in arms]
    for row in rows:
        record = read_judgement(run_dir / row["judgement"])
        [item] = record.items
        assert (row["case_id"], row["format"], row["rubric"], row["criterion"], float(row["score"])) == (
            record.case_id, record.variant, RUBRIC, item.criterion, item.score)
    assert len(records(run_dir)) == 10


def test_a_cohort_stopped_while_judging_keeps_every_row_finished(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    # Three judge calls answer; the fourth stands in for a bug and stops the cohort.
    judge = write(tmp_path, "j.json", {"rules": [{**ALIGNED, "times": 3}, {"stage": "judge", "fail": "internal"}]})
    code = main(["cohort", "--cases", str(case_folder(tmp_path, 3)), "--model", write(tmp_path, "p.json", PANEL),
                 "--judge", RUBRIC, "--judge-model", judge, "--concurrency", "1", "--out", str(out)])
    assert code != 0
    [run_dir] = list(out.iterdir())
    rows = read_csv(run_dir / "judgements.csv")  # appended as each judgement finished: complete rows
    assert len(rows) == 3 and all(r["score"] == "4.0" and r["rubric"] == RUBRIC for r in rows)
    assert sorted(r["judgement"] for r in rows) == sorted(
        str(p.relative_to(run_dir)) for p in run_dir.rglob(f"*.judge.{RUBRIC}.json"))
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "aborted"


def test_a_csv_log_is_complete_row_by_row(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"

    def rows() -> list[dict[str, str]]:
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))

    with CsvLog(path, ("a", "b")) as log:
        assert rows() == []
        log.append([{"a": "1", "b": 'two, "quoted"\nlines'}])
        log.append([{"a": "3"}, {"a": "4", "b": "x", "ignored": "y"}])
        assert rows() == [{"a": "1", "b": 'two, "quoted"\nlines'}, {"a": "3", "b": ""},
                                  {"a": "4", "b": "x"}]
    kept = path.read_text()
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    with CsvLog(link, ("a",)) as log:  # a link in its place is replaced, never written through
        log.append([{"a": "5"}])
    assert not link.is_symlink() and link.read_bytes() == b"a\r\n5\r\n" and path.read_text() == kept


# --- resume from the arms.jsonl index -------------------------------------------------------------


class Cohort:
    """A scripted cohort run through :func:`run_cohort`, as the CLI runs it, counting trace reads."""

    def __init__(self, tmp_path: Path, n: int) -> None:
        self.run_dir = tmp_path / "run"
        self.run_dir.mkdir()
        folder = case_folder(tmp_path, n)
        self.arms = [CohortArm(load_case(folder / f"c{i}.yaml"), "scripted:p", ("free-form", "structured"))
                     for i in range(n)]
        self.reads: list[Path] = []
        self.rows: list[dict[str, Any]] = []

    def read(self, path: Path) -> AnyTrace:
        self.reads.append(path)
        return read_trace(path)

    def on_done(self, row: dict[str, Any]) -> None:
        if not row.get("resumed"):
            append_jsonl(self.run_dir / "arms.jsonl", row)
        self.rows.append(row)

    def run(self) -> list[dict[str, Any]]:
        self.reads, self.rows = [], []
        run = CohortRun(run_dir=self.run_dir, run_id="r", configs={"consilium": ConsiliumConfig()},
                        on_done=self.on_done, index=ArmIndex.read(self.run_dir / "arms.jsonl"), read=self.read)
        model = ScriptedModel(Script.model_validate(PANEL))
        asyncio.run(run_cohort(self.arms, {"scripted:p": RunModels(model, model)}, run, parallel_arms=2))
        return self.rows

    def path(self, i: int, fmt: str) -> Path:
        trace = next(r["trace"] for r in self.rows if r["case_id"] == f"case-{i}" and r["format"] == fmt)
        return self.run_dir / str(trace)


def test_a_resume_reuses_unchanged_traces_from_arms_jsonl_unread(tmp_path: Path) -> None:
    cohort = Cohort(tmp_path, 3)
    first = cohort.run()
    assert len(first) == 6 and not any(r["resumed"] for r in first)
    assert all(r["trace_sha256"] == hashlib.sha256((cohort.run_dir / r["trace"]).read_bytes()).hexdigest()
               for r in first)
    again = cohort.run()
    assert cohort.reads == []  # every arm from its line: no trace parsed or validated
    assert all(r["resumed"] for r in again)
    strip = ("resumed", "trace_sha256", "arm_settings")
    assert sorted((r["case_id"], r["format"], {k: v for k, v in r.items() if k not in strip}) for r in again) == \
        sorted((r["case_id"], r["format"], {k: v for k, v in r.items() if k not in strip}) for r in first)


def test_a_changed_trace_is_read_again_and_redone_or_refused(tmp_path: Path) -> None:
    cohort = Cohort(tmp_path, 3)
    cohort.run()
    edited, broken, other = cohort.path(0, "free-form"), cohort.path(1, "structured"), cohort.path(2, "free-form")
    data = json.loads(edited.read_text())
    edited.write_text(json.dumps({**data, "wall_s": data["wall_s"] + 1}))  # still a valid, matching trace
    broken.write_text("{torn")
    rows = cohort.run()
    # The edited trace is read and validated again (then reused); the torn one is read, found unreadable
    # and redone, which reads its case's other format for the shared role assignment; no other trace is read.
    assert sorted(cohort.reads) == sorted([edited, broken, cohort.path(1, "free-form")])
    by = {(r["case_id"], r["format"]): r for r in rows}
    assert by[("case-0", "free-form")]["resumed"] and not by[("case-1", "structured")]["resumed"]
    assert read_trace(broken).status == "completed"
    data = json.loads(other.read_text())
    other.write_text(json.dumps({**data, "case_hash": "0" * 16}))  # made from another version of the case
    with pytest.raises(UserError, match="case_hash: the trace was made from another version"):
        cohort.run()
    assert other in cohort.reads


# --- sharded layout -------------------------------------------------------------------------------


def test_traces_are_sharded_by_a_hash_of_the_case_id(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    spec = write(tmp_path, "p.json", PANEL)
    assert main(["cohort", "--cases", str(case_folder(tmp_path, 4)), "--model", spec, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    folder = model_folder(f"scripted:{tmp_path / 'p.json'}")
    arms = read_csv(run_dir / "arms.csv")
    assert len(arms) == 8
    for arm in arms:
        shard = hashlib.sha256(arm["case_id"].encode()).hexdigest()[:2]
        assert arm["trace"] == f"arms/{folder}/{shard}/{arm['case_id']}.{arm['format']}.trace.json"
        assert (run_dir / arm["trace"]).is_file()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["schema_version"], manifest["layout"]) == ("1.4", "sharded")
    assert sorted(manifest["traces"]) == sorted(a["trace"] for a in arms)


def test_an_old_flat_cohort_still_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    spec = write(tmp_path, "p.json", PANEL)
    cases = case_folder(tmp_path, 4)
    assert main(["cohort", "--cases", str(cases), "--model", spec, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    # Made into a 1.1 cohort: one folder per model, no index fields in arms.jsonl, a 1.1 manifest.
    for trace in list(run_dir.rglob("*.trace.json")):
        trace.rename(trace.parent.parent / trace.name)
    for shard in run_dir.glob("arms/*/*/"):
        shard.rmdir()

    def flat(path: str) -> str:
        return re.sub(r"/[0-9a-f]{2}/", "/", path)

    lines = [json.loads(line) for line in (run_dir / "arms.jsonl").read_text().splitlines()]
    (run_dir / "arms.jsonl").write_text("".join(json.dumps({**{k: v for k, v in r.items() if k not in (
        "trace_sha256", "arm_settings")}, "trace": flat(r["trace"])}) + "\n" for r in lines))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["layout"]
    manifest.update(schema_version="1.1", traces=[flat(t) for t in manifest["traces"]])
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    victim = sorted(run_dir.glob("arms/*/*.trace.json"))[0]
    victim.unlink()
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert "8 arms (8 completed, 0 failed, 7 resumed)" in capsys.readouterr().out
    assert victim.is_file() and not list(run_dir.glob("arms/*/*/*.trace.json"))  # still flat
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["schema_version"], manifest["layout"]) == ("1.4", "flat")
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    assert all((run_dir / a["trace"]).is_file() and a["trace"].count("/") == 2 for a in arms)


@pytest.mark.parametrize("protocol, key, kept", [("consilium", "lengths", "legacy"), ("board", "discussion",
                                                                                        "alternating")])
def test_a_manifest_from_before_the_shared_budget_and_open_floor_reads_as_what_it_ran(
        tmp_path: Path, protocol: str, key: str, kept: str) -> None:
    """A 1.1 cohort started before the shared length budget (or the open board discussion) ran the
    legacy protocol: its settings read so, and a resume never runs its remaining arms under another."""
    from consilium.spec.manifest import read_manifest

    out = tmp_path / "runs"
    spec = write(tmp_path, "p.json", PANEL)
    assert main(["cohort", "--cases", str(case_folder(tmp_path, 1)), "--model", spec, "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["layout"]
    settings = manifest["settings"]  # as 1.1 had it: one protocol and its config
    settings["config"] = settings.pop("configs")["consilium"]
    del settings["protocols"]
    manifest["settings"]["protocol"] = protocol
    manifest["settings"]["config"].pop("lengths", None)
    manifest["settings"]["config"].pop("discussion", None)
    manifest.update(schema_version="1.1")
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert read_manifest(run_dir).settings.configs[protocol][key] == kept
    manifest["settings"]["config"][key] = "set-by-then"  # a 1.1 cohort that recorded it keeps its own
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert read_manifest(run_dir).settings.configs[protocol][key] == "set-by-then"
