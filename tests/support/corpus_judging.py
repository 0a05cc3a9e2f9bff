"""Bad inputs of `judge`, `compare` and `report` (merged into tests/cli/test_bad_inputs.py): each is one
line on stderr and exit 2, with nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Builder = Callable[[Path], tuple[list[str], str]]

CONSILIUM_HEADER = "case_id,model_spec,model,format,status,stop_reason,rounds,r1_dissent,trace\n"


def run_dir(tmp: Path, arms: str | bytes, files: dict[str, str] | None = None) -> Path:
    folder = tmp / "cohort"
    folder.mkdir()
    (folder / "arms.csv").write_bytes(arms if isinstance(arms, bytes) else arms.encode())
    for name, text in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def _completed(trace: str, rounds: str = "2") -> str:
    return CONSILIUM_HEADER + f"c,scripted:p,p,free-form,completed,consensus,{rounds},0.3,{trace}\n"


FAILED_ONLY = "case_id,model_spec,format,status,error,trace\nc,scripted:p,free-form,failed,boom,\n"

CORPUS: dict[str, Builder] = {
    "compare on a board cohort": lambda t: (["compare", str(run_dir(t, (
        "case_id,model_spec,model,format,status,stop_reason,turns,input_tokens,output_tokens,trace\n"
        "c,scripted:p,p,board-agents,completed,closed,4,10,10,arms/p/c.board-agents.trace.json\n")))],
        "use `consilium report"),
    "compare without arms.csv columns": lambda t: (["compare", str(run_dir(t, "case_id,format\nc,free-form\n"))],
                                                  "missing column(s) status"),
    "compare completed arm without rounds": lambda t: (["compare", str(run_dir(t, (
        "case_id,model,format,status,stop_reason,trace\nc,p,free-form,completed,consensus,x.trace.json\n")))],
        "missing column rounds"),
    "report rounds not a number": lambda t: (["report", str(run_dir(t, _completed("x.trace.json", "two")))],
                                             "rounds: 'two' is not a number"),
    "report arms.csv with no arms": lambda t: (["report", str(run_dir(t, CONSILIUM_HEADER))], "no arms"),
    "report arms.csv not utf-8": lambda t: (["report", str(run_dir(t, b"case_id,format,status\n\xff\xfe,x,y\n"))],
                                            "arms.csv: not readable"),
    "compare arms.csv ragged row": lambda t: (["compare", str(run_dir(t, "case_id,format,status\nc,x,failed,4,5\n"))],
                                              "more cells than columns"),
    "compare trace missing": lambda t: (["compare", str(run_dir(t, _completed("arms/p/gone.trace.json")))],
                                        "trace not found"),
    "report trace unreadable": lambda t: (["report", str(run_dir(t, _completed("arms/p/c.free-form.trace.json"), {
        "arms/p/c.free-form.trace.json": "{not json"}))], "not a readable JSON trace"),
    "report judgement record unreadable": lambda t: (["report", str(run_dir(t, FAILED_ONLY, {
        "arms/p/c.free-form.judge.ai-consilium.json": "{}"}))], "c.free-form.judge.ai-consilium.json"),
    "compare judgements.csv without columns": lambda t: (["compare", str(run_dir(t, FAILED_ONLY, {
        "judgements.csv": "case_id,rubric\nc,ai-consilium\n"}))], "judgements.csv: missing column(s)"),
    "compare judgements.csv score not a number": lambda t: (["compare", str(run_dir(t, FAILED_ONLY, {
        "judgements.csv": "case_id,model,format,rubric,component,criterion,score,not_evaluable\n"
                          "c,p,free-form,ai-consilium,conclusion,c1,high,False\n"}))], "score: 'high' is not a number"),
    "judge component the rubric lacks": lambda t: (["judge", str(t), "--rubric", "otb-conclusion-alignment",
                                                    "--component", "role_opinion", "--judge-model", "embedded"],
                                                   "--component: rubric otb-conclusion-alignment does not score"),
    "judge folder without traces": lambda t: (["judge", str(t), "--rubric", "ai-consilium", "--judge-model",
                                               "embedded"], "no *.trace.json files to judge"),
}
