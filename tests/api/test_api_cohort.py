"""The Python API's cohorts, run folders and reports (consilium/api/cohorts.py, reports.py): what each returns
is what it wrote — the rows of arms.csv, the manifest's counts, the judgements beside the traces, compare's
CSVs — run with the shipped scripted panel, as ``consilium cohort`` runs it."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest

import consilium
from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.record import Judgement

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ROOT / "examples" / "cases"
MYOCARDITIS = CASES / "diagnostic-myocarditis.yaml"


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: Any) -> None:
    monkeypatch.setenv("CONSILIUM_CACHE", "off")


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _as_written(row: dict[str, Any], columns: list[str]) -> dict[str, str]:
    """A returned row as csv writes it: None and a missing cell empty, every value its str()."""
    return {k: "" if row.get(k) is None else str(row[k]) for k in columns}


def _same_as_arms_csv(result: consilium.CohortResult) -> None:
    written = _csv(result.run_dir / "arms.csv")
    assert written, "arms.csv has no rows"
    columns = list(written[0])
    assert [_as_written(row, columns) for row in result.rows] == written
    assert set().union(*(row.keys() for row in result.rows)) <= set(columns)


def test_a_cohort_returns_the_rows_and_counts_it_writes(tmp_path: Path) -> None:
    result = consilium.run_cohort(CASES, models=[PANEL], protocols=["consilium", "single"], formats=["structured"],
                              limit=2, judges=["otb-conclusion-alignment"], judge_model=PANEL, out=tmp_path)
    assert result.run_dir.parent == tmp_path and (result.run_dir / "manifest.json").is_file()
    _same_as_arms_csv(result)
    # 2 cases × 2 protocols, one format each, every arm completed, typed as the cohort recorded them
    assert [(r["protocol"], r["format"]) for r in result.rows] == [("single", "single-structured"),
                                                                   ("consilium", "structured")] * 2
    assert all(r["status"] == "completed" and isinstance(r["calls"], int) and r["calls"] > 0 for r in result.rows)
    assert result.counts == {"arms": 4, "completed": 4, "failed": 0, "resumed": 0}
    manifest = json.loads((result.run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed" and manifest["counts"] == result.counts
    assert manifest["traces"] == [r["trace"] for r in result.rows]
    assert all((result.run_dir / r["trace"]).is_file() for r in result.rows)
    assert result.manifest.settings.protocols == ["consilium", "single"]
    # the index holds the same rows (with its own two fields)
    lines = [json.loads(line) for line in (result.run_dir / "arms.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["trace"] for r in lines) == sorted(r["trace"] for r in result.rows)
    assert result.judgements_csv is not None
    judged = _csv(result.judgements_csv)
    assert len(judged) == 4 and {row["rubric"] for row in judged} == {"otb-conclusion-alignment"}


def test_a_resumed_cohort_returns_every_arm_as_resumed(tmp_path: Path) -> None:
    first = consilium.run_cohort(MYOCARDITIS, models=PANEL, protocols="single", out=tmp_path)
    assert first.counts == {"arms": 2, "completed": 2, "failed": 0, "resumed": 0}
    again = consilium.run_cohort(resume=first.run_dir)
    assert again.run_dir == first.run_dir
    assert again.counts == {"arms": 2, "completed": 2, "failed": 0, "resumed": 2}
    assert [r["resumed"] for r in again.rows] == [True, True]
    _same_as_arms_csv(again)
    assert len((first.run_dir / "arms.jsonl").read_text(encoding="utf-8").splitlines()) == 2  # nothing appended


def test_the_api_and_the_command_line_write_the_same_cohort(tmp_path: Path, capsys: Any) -> None:
    assert main(["cohort", "--cases", str(MYOCARDITIS), "--model", PANEL, "--protocol", "single",
                 "--formats", "structured", "--out", str(tmp_path / "cli")]) == 0
    [cli_run] = list((tmp_path / "cli").iterdir())
    result = consilium.run_cohort(MYOCARDITIS, models=PANEL, protocols="single", formats="structured",
                              out=tmp_path / "api")
    varying = {"wall_s", "trace"}  # the run id is in the trace's path; the wall clock differs

    def steady(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{k: v for k, v in row.items() if k not in varying} for row in rows]

    assert steady(_csv(result.run_dir / "arms.csv")) == steady(_csv(cli_run / "arms.csv"))
    cli_settings = json.loads((cli_run / "manifest.json").read_text(encoding="utf-8"))["settings"]
    assert result.manifest.settings.model_dump(mode="json") == cli_settings


def test_the_cohort_twins_work_in_a_running_loop(tmp_path: Path) -> None:
    async def cell() -> tuple[dict[str, int], dict[str, int]]:
        plain = consilium.run_cohort(MYOCARDITIS, models=PANEL, protocols="single", out=tmp_path)  # as in a notebook
        awaited = await consilium.arun_cohort(MYOCARDITIS, models=PANEL, protocols="single", out=tmp_path)
        return plain.counts, awaited.counts

    assert asyncio.run(cell()) == ({"arms": 2, "completed": 2, "failed": 0, "resumed": 0},) * 2


def test_judge_run_returns_the_judgements_it_writes(tmp_path: Path) -> None:
    result = consilium.run_cohort(MYOCARDITIS, models=PANEL, protocols="single", out=tmp_path)
    judgements = consilium.judge_run(result.run_dir, "otb-conclusion-alignment", judge_model=PANEL)
    traces = sorted(result.run_dir.rglob("*.trace.json"))
    assert len(judgements) == len(traces) == 2
    for trace, judgement in zip(traces, judgements, strict=True):
        written = trace.with_name(trace.name.removesuffix(".trace.json") + ".judge.otb-conclusion-alignment.json")
        assert Judgement.model_validate_json(written.read_text(encoding="utf-8")) == judgement
        assert judgement.items[0].score == 2  # the shipped panel's judge rule
    # a trace file named alone, and two paths at once, as `consilium judge` takes them
    assert len(consilium.judge_run(traces[0], "otb-conclusion-alignment", judge_model=PANEL)) == 1
    assert len(consilium.judge_run(traces, "otb-conclusion-alignment", judge_model=PANEL)) == 2


def test_compare_returns_the_tables_it_writes(tmp_path: Path) -> None:
    result = consilium.run_cohort(MYOCARDITIS, models=PANEL, judges=["ai-consilium"], judge_model=PANEL, out=tmp_path)
    compared = consilium.compare(result.run_dir, bootstrap=50)
    assert compared.report == result.run_dir / "compare" / "compare.md" and compared.report.is_file()
    assert compared.report.read_text(encoding="utf-8") == compared.markdown
    written = {path.stem: path for path in compared.csvs}
    assert "table3_outcomes" in written and "judging_coverage" in written
    for name, path in written.items():
        rows = compared.coverage if name == "judging_coverage" else compared.tables[name][1]
        on_disk = _csv(path)
        assert [_as_written(row, list(on_disk[0])) for row in rows] == on_disk, name
    [outcome_free, outcome_structured] = compared.tables["table3_outcomes"][1][:2]
    assert {outcome_free["format"], outcome_structured["format"]} == {"free-form", "structured"}
    report = consilium.report(result.run_dir, bootstrap=50).report  # a Reported: report.md, csvs, figures
    assert report == result.run_dir / "report" / "report.md" and report.is_file()


def test_a_mistake_is_a_user_error_and_leaves_no_run_folder(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--cases: required"):
        consilium.run_cohort(models=PANEL, out=tmp_path)
    with pytest.raises(UserError, match="--protocol: "):
        consilium.run_cohort(MYOCARDITIS, models=PANEL, protocols=["nope"], out=tmp_path)
    with pytest.raises(UserError, match="concurrency: must be positive"):
        consilium.run_cohort(MYOCARDITIS, models=PANEL, concurrency=0, out=tmp_path)
    with pytest.raises(UserError, match="--judge-model"):
        consilium.run_cohort(MYOCARDITIS, models=PANEL, judges=["ai-consilium"], out=tmp_path)
    with pytest.raises(UserError, match="scripted"):
        consilium.run_cohort(MYOCARDITIS, models="scripted:/no/such/panel.yaml", out=tmp_path)
    with pytest.raises(UserError, match="components: rubric otb-conclusion-alignment does not score"):
        consilium.judge_run(tmp_path, "otb-conclusion-alignment", judge_model=PANEL, components=["final_report"])
    assert list(tmp_path.iterdir()) == []


# ---- run_cohort's models, and compare's and report's bootstrap, checked up front ----------------------------


def test_run_cohort_refuses_no_models_and_model_objects(tmp_path: Path) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from consilium import api
    from consilium.errors import UserError

    with pytest.raises(UserError, match=r"^models: give at least one model spec$"):
        api.run_cohort(MYOCARDITIS, models=[], out=tmp_path)
    with pytest.raises(UserError, match=r"models: run_cohort takes model spec strings .*FakeListChatModel"):
        api.run_cohort(MYOCARDITIS, models=[FakeListChatModel(responses=["x"])], out=tmp_path)  # type: ignore[list-item]
    with pytest.raises(UserError, match="run_cohort takes model spec strings"):
        api.run_cohort(MYOCARDITIS, models=FakeListChatModel(responses=["x"]), out=tmp_path)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("draws", [0, -5])
def test_the_apis_compare_and_report_check_bootstrap(panel_judged_cohort: Path, draws: int) -> None:
    from consilium import api
    from consilium.errors import UserError

    with pytest.raises(UserError, match=r"^bootstrap: must be a positive whole number of draws"):
        api.compare(panel_judged_cohort, bootstrap=draws)
    with pytest.raises(UserError, match=r"^bootstrap: must be a positive whole number of draws"):
        api.report(panel_judged_cohort, bootstrap=draws)
