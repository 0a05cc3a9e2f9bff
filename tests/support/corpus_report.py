"""Bad inputs of `report` on folders of cohorts and mixed-protocol cohorts (merged into
tests/cli/test_bad_inputs.py): each is one line on stderr and exit 2, with nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Builder = Callable[[Path], tuple[list[str], str]]

BOARD_ARM = "c,scripted:p,p,board-agents,completed,closed,,{turns},10,10,arms/p/c.board-agents.trace.json\n"
HEADER = "case_id,model_spec,model,format,status,stop_reason,rounds,turns,input_tokens,output_tokens,trace\n"
CONSILIUM_FAILED = "d,scripted:p,p,free-form,failed,,,,,,\n"


def _folder(tmp: Path, files: dict[str, str]) -> Path:
    folder = tmp / "runs"
    folder.mkdir()
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


CORPUS: dict[str, Builder] = {
    "report on a missing folder": lambda t: (["report", str(t / "nowhere")], "no such folder"),
    "report on a folder without a cohort": lambda t: (["report", str(_folder(t, {"notes.txt": "x"}))],
                                                      "no cohort folder with one in it"),
    "report on a folder with a cohort without arms": lambda t: (["report", str(_folder(t, {
        "one/arms.csv": "case_id,format,status\n"}))], "no arms"),
    "report on mixed arms with a board turn count not a number": lambda t: (["report", str(_folder(t, {
        "arms.csv": HEADER + CONSILIUM_FAILED + BOARD_ARM.format(turns="many")}))], "line 3: turns: 'many' is not"),
}
