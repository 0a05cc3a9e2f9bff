"""Fixes from the second review of issue 18: a LangChain model's own key masked, a judge that will not
silently replace another judge's judgements, and the smaller checks (docs/models.md, docs/cohorts.md)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from keyecho import key_echo_server

from consilium.cli import main
from consilium.reports.consilium.data import CohortData

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"

_FACTORY = '''
import os
from langchain_openai import ChatOpenAI

def chat():
    return ChatOpenAI(model="stub", api_key=os.environ["REVIEW18B_KEY"], base_url=os.environ["REVIEW18B_URL"],
                      max_retries=0)

def broken():
    raise RuntimeError("no model for key " + os.environ["REVIEW18B_KEY"])
'''


#: The chat model's own key: new in each test process, so no other test has registered it for masking.
SECRET = f"sk-review18b-{uuid.uuid4().hex}"


@pytest.fixture
def factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module ``review18b_factory`` whose ``chat()`` is a ChatOpenAI holding SECRET as its own key."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "review18b_factory.py").write_text(_FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key is the chat model's own, not the environment's
    monkeypatch.setenv("REVIEW18B_KEY", SECRET)
    return "review18b_factory"


@pytest.mark.localhost
def test_a_langchain_models_own_key_is_in_no_output(factory: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out, log = tmp_path / "out", tmp_path / "run.log"
    with key_echo_server() as url:
        monkeypatch.setenv("REVIEW18B_URL", url)
        code = main(["simulate", "--case", str(CASE), "--model", f"langchain:{factory}:chat", "--format",
                     "free-form", "--out", str(out), "--log-file", str(log), "-v"])
    assert code == 1
    captured = capsys.readouterr()
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "400" in written  # the echoed error was recorded, masked
    for text in (written, log.read_text(), captured.out, captured.err):
        assert SECRET not in text
    sys.modules.pop(factory, None)


def test_a_langchain_factorys_failure_message_is_masked(factory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from consilium.errors import UserError
    from consilium.models.backends.langchain_chat import load_chat_model
    from consilium.redact import register_secret

    monkeypatch.setenv("REVIEW18B_URL", "http://127.0.0.1:9/v1")
    register_secret(SECRET)  # known (as from an earlier model), yet the factory's own message would show it
    with pytest.raises(UserError) as info:
        load_chat_model(f"{factory}:broken")
    assert SECRET not in str(info.value) and "***" in str(info.value)


# --- 2. a judge never silently replaces another judge's judgements -------------------------------------------


@pytest.fixture
def judged_cohort(tmp_path: Path) -> Path:
    """A cohort of one arm judged with ai-consilium by the scripted panel's model."""
    assert main(["cohort", "--cases", str(CASE), "--model", PANEL, "--formats", "free-form", "--judge",
                 "ai-consilium", "--judge-model", PANEL, "--out", str(tmp_path / "out")]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    return run_dir


def _other_judge(tmp_path: Path) -> str:
    other = tmp_path / "other-judge.yaml"
    text = (ROOT / "examples" / "models" / "scripted-panel.yaml").read_text()
    other.write_text(text.replace("\nmodel: scripted-panel\n", "\nmodel: other-judge\n", 1))
    return f"scripted:{other}"


def test_judging_a_cohort_again_with_another_judge_is_refused(judged_cohort: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (record,) = judged_cohort.rglob("*.judge.ai-consilium.json")
    before = record.read_text()
    capsys.readouterr()
    assert main(["judge", str(judged_cohort), "--rubric", "ai-consilium", "--judge-model",
                 _other_judge(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and record.name in err and "--force" in err
    assert "judged by scripted-panel, not other-judge" in err
    assert record.read_text() == before
    # The same judge re-judging replaces its own judgements without being told.
    assert main(["judge", str(judged_cohort), "--rubric", "ai-consilium", "--judge-model", PANEL]) == 0


def test_a_forced_rejudging_rebuilds_the_cohorts_judgements_csv(judged_cohort: Path, tmp_path: Path) -> None:
    table = judged_cohort / "judgements.csv"
    written = table.read_text()
    table.write_text(written.splitlines()[0] + "\n")  # stale: what the files say is no longer in it
    other = _other_judge(tmp_path)
    assert main(["judge", str(judged_cohort), "--rubric", "ai-consilium", "--judge-model", other, "--force"]) == 0
    (record,) = judged_cohort.rglob("*.judge.ai-consilium.json")
    assert '"judge_model": "other-judge"' in record.read_text()
    assert table.read_text() == written  # as the cohort wrote it: the other judge scores alike


def test_the_apis_judge_run_refuses_another_judge_unless_forced(judged_cohort: Path, tmp_path: Path) -> None:
    from consilium import api
    from consilium.errors import UserError

    table = judged_cohort / "judgements.csv"
    written = table.read_text()
    other = _other_judge(tmp_path)
    with pytest.raises(UserError, match="judged by scripted-panel, not other-judge; force=True"):
        api.judge_run(judged_cohort, "ai-consilium", judge_model=other)
    table.write_text(written.splitlines()[0] + "\n")
    (judgement,) = api.judge_run(judged_cohort, "ai-consilium", judge_model=other, force=True)
    assert judgement.judge_model == "other-judge" and table.read_text() == written


# --- 3. run_cohort's models ------------------------------------------------------------------------------------


def test_run_cohort_refuses_no_models_and_model_objects(tmp_path: Path) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from consilium import api
    from consilium.errors import UserError

    with pytest.raises(UserError, match=r"^models: give at least one model spec$"):
        api.run_cohort(CASE, models=[], out=tmp_path)
    with pytest.raises(UserError, match=r"models: run_cohort takes model spec strings .*FakeListChatModel"):
        api.run_cohort(CASE, models=[FakeListChatModel(responses=["x"])], out=tmp_path)  # type: ignore[list-item]
    with pytest.raises(UserError, match="run_cohort takes model spec strings"):
        api.run_cohort(CASE, models=FakeListChatModel(responses=["x"]), out=tmp_path)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


# --- 4, 14, 8: experiment files --------------------------------------------------------------------------------


def _experiment(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(f"cases: {CASE}\nmodels:\n  - {PANEL}\nformats: [free-form]\n{extra}")
    return path


def test_seed_beside_an_experiments_seeds_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "seeds: [3, 4]\n")
    assert main(["cohort", "--experiment", str(path), "--seed", "7", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--seed: {path} sets each replicate's seed (seeds:)")
    assert not (tmp_path / "out").exists()


def test_replicates_have_an_upper_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "replicates: 100000000000\n")
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "replicates" in err and "1000" in err


@pytest.mark.parametrize(("extra", "field"), [
    (f"  - {PANEL}\n", "models"), ("judges: [ai-consilium, ai-consilium]\n", "judges")], ids=["models", "judges"])
def test_an_entry_listed_twice_is_refused(extra: str, field: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "")
    text = path.read_text()
    path.write_text(text.replace("formats: [free-form]\n", "") + extra if field == "models" else text + extra)
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}: {field}.1: " in err and f"twice ({field}.0 and {field}.1;" in err


def test_a_format_listed_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _experiment(tmp_path, "")
    path.write_text(path.read_text().replace("formats: [free-form]", "formats: [free-form, structured, free-form]"))
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    assert f"{path}: formats.2: free-form is listed twice (formats.0 and formats.2" in capsys.readouterr().err


# --- 15. credentials in a URL's query ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "masked"), [
    ("https://h/v1?api_key=abc123secret", "https://h/v1?api_key=***"),
    ("GET https://h/v1/chat?x=1&key=K99&token=t0k&sig=s1g#f", "GET https://h/v1/chat?x=1&key=***&token=***&sig=***#f"),
    ("https://u:p@h/v1?Password=pw&max_tokens=5&model=m", "https://***@h/v1?Password=***&max_tokens=5&model=m"),
    ("https://h/v1?X-Amz-Signature=abc&access_token=zz", "https://h/v1?X-Amz-Signature=***&access_token=***"),
    ("a = b and x=1", "a = b and x=1"),
])
def test_secret_query_values_are_masked(text: str, masked: str) -> None:
    from consilium.redact import redact, redact_url

    assert redact_url(text) == masked
    assert redact(text) == masked


# --- 12. the API's bootstrap -----------------------------------------------------------------------------------


@pytest.mark.parametrize("draws", [0, -5])
def test_the_apis_compare_and_report_check_bootstrap(judged_cohort: Path, draws: int) -> None:
    from consilium import api
    from consilium.errors import UserError

    with pytest.raises(UserError, match=r"^bootstrap: must be a positive whole number of draws"):
        api.compare(judged_cohort, bootstrap=draws)
    with pytest.raises(UserError, match=r"^bootstrap: must be a positive whole number of draws"):
        api.report(judged_cohort, bootstrap=draws)


# --- 13. a run folder given as "." ------------------------------------------------------------------------------


def test_a_run_folder_given_as_dot_keeps_its_name(judged_cohort: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(judged_cohort)
    capsys.readouterr()
    assert main(["cohort", "--resume", "."]) == 0
    assert f"cohort {judged_cohort.name}: 1 arms" in capsys.readouterr().out
    assert main(["compare", ".", "--bootstrap", "10"]) == 0
    assert (judged_cohort / "compare" / "compare.md").read_text().startswith(
        f"# Free-form vs structured: {judged_cohort.name}\n")
    assert main(["report", ".", "--bootstrap", "10"]) == 0
    assert (judged_cohort / "report" / "report.md").read_text().startswith(f"# Cohort report: {judged_cohort.name}\n")


# --- 7. a criterion never evaluable keeps its row in the replicate tables -------------------------------------


def _replicated_data() -> CohortData:
    arms, rows = [], []
    for case in ("k1", "k2"):
        for fmt in ("free-form", "structured"):
            for replicate in ("0", "1"):
                arms.append({"case_id": case, "model": "m", "format": fmt, "status": "completed",
                             "replicate": replicate})
                score = str(1 + int(replicate) + (fmt == "structured"))
                for criterion, value in (("c1", score), ("c2", "")):
                    rows.append({"case_id": case, "model": "m", "protocol": "consilium", "format": fmt,
                                 "replicate": replicate, "rubric": "ai-consilium", "component": "conclusion",
                                 "criterion": criterion, "score": value, "not_evaluable": str(not value),
                                 "reason": "no reference" if not value else "", "whole_case": "False",
                                 "judgement": "j.json"})
    return CohortData(arms=arms, judgements=rows)


def test_the_replicate_tables_keep_a_criterion_never_evaluable() -> None:
    from consilium.reports.consilium.paired import paired_differences
    from consilium.reports.consilium.replicates import replicate_case_sd, replicate_sd

    data = _replicated_data()
    sd = {(r["model"], r["format"], r["criterion"]): r for r in replicate_sd(data, bootstrap=50)}
    never = sd[("m", "free-form", "c2")]
    assert never["not_evaluable"] == 4 and never["cases"] == 0 and never["mean"] is None
    assert never["sd_pooled"] is None and never["ci_low"] is None
    scored = sd[("m", "free-form", "c1")]
    assert scored["not_evaluable"] == 0 and scored["mean"] == 1.5 and scored["cases"] == 2
    assert sd[("pooled", "structured", "c2")]["not_evaluable"] == 4
    cases = [r for r in replicate_case_sd(data) if r["criterion"] == "c2"]
    assert len(cases) == 4 and all(r["not_evaluable"] == 2 and r["replicates"] == 0 and r["mean"] is None
                                   for r in cases)
    paired = {(r["model"], r["criterion"]): r for r in paired_differences(data, bootstrap=50)}
    assert paired[("m", "c2")]["not_evaluable"] == 8 and paired[("m", "c2")]["mean_difference"] is None
    assert paired[("m", "c1")]["mean_difference"] == 1.0 and paired[("m", "c1")]["not_evaluable"] == 0


# --- 11. dollars in the board and turn summaries ---------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["board", "--case", str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"), "--mode", "single"],
    ["turn", "--case", str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"), "--role", "Radiation Oncology",
     "--question", "Would you irradiate?"]], ids=["board", "turn"])
def test_board_and_turn_summaries_show_dollars(command: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "priced.yaml"
    config.write_text(f"spec: {PANEL}\nprices: {{input: 2.5, output: 10.0}}\n")
    assert main([*command, "--model-config", str(config), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "tokens by stage (input / output / calls · cost, unknown without prices):" in out
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    assert " · $" in total


# --- 10. a judge's prices in an experiment ---------------------------------------------------------------------


def test_a_judges_prices_in_an_experiment_get_a_true_message(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    priced = f"{{spec: '{PANEL}', prices: {{input: 1, output: 2}}}}"
    path = _experiment(tmp_path, f"judges: [ai-consilium]\njudge_model: {priced}\n")
    assert main(["cohort", "--experiment", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{path}: judge_model.prices: only panel models take prices (models.N.prices); a judge or "
                        "moderator model is priced only when its spec is a priced panel model's")


# --- 9. dollars from estimated tokens are marked --------------------------------------------------------------


def test_costs_from_estimated_tokens_are_marked(tmp_path: Path) -> None:
    import csv

    config = tmp_path / "priced.yaml"
    config.write_text(f"spec: {PANEL}\nprices: {{input: 2.5, output: 10.0}}\n")
    assert main(["cohort", "--cases", str(CASE), "--model-config", str(config), "--formats", "free-form",
                 "--judge", "ai-consilium", "--judge-model", PANEL, "--out", str(tmp_path / "out")]) == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    with (run_dir / "arms.csv").open(encoding="utf-8") as handle:
        (arm,) = list(csv.DictReader(handle))
    assert arm["cost_usd"] and arm["cost_estimated"] == "True"  # the scripted backend's tokens are estimated
    assert main(["report", str(run_dir), "--bootstrap", "10"]) == 0
    for name in ("cost", "cost_by_stage"):
        with (run_dir / "report" / f"{name}.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert rows and all(r["estimated"] == "True" for r in rows)
    md = (run_dir / "report" / "report.md").read_text()
    assert "estimated = true: tokens counted with tiktoken, so the dollars are estimates too)" in md
