"""Bad inputs of the board's discussion protocol (the moderator passes the floor), merged into
tests/cli/test_bad_inputs.py: each exits 2 with one line naming the flag or the config file and field,
and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml")
MODEL = ["--model", "scripted:x.json"]

Builder = Callable[[Path], tuple[list[str], str]]


def data_file(tmp: Path, text: str, name: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


CORPUS: dict[str, Builder] = {
    "unknown discussion flag": lambda t: (["board", "--case", CASE, *MODEL, "--discussion", "debate"],
                                          "--discussion: invalid choice: 'debate'"),
    "unknown discussion in config": lambda t: (["board", "--case", CASE, *MODEL, "--config",
                                                data_file(t, "discussion: debate\n", "board.yaml")],
                                               "board.yaml: discussion"),
}
