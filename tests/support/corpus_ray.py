"""Bad inputs of ``cohort --shard`` and ``cohort merge`` (merged into tests/cli/test_bad_inputs.py): each
is one line on stderr and exit 2, with nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Builder = Callable[[Path], tuple[list[str], str]]

ROOT = Path(__file__).resolve().parents[2]
CASES = str(ROOT / "examples" / "cases")
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"


def _cohort(*flags: str) -> list[str]:
    return ["cohort", "--cases", CASES, "--model", PANEL, *flags]


def _not_a_cohort(tmp: Path) -> Path:
    folder = tmp / "notes"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"kind": "simulate"}\n')
    return folder


CORPUS: dict[str, Builder] = {
    "shard zero": lambda t: (_cohort("--shard", "0/2"), "--shard"),
    "shard past its count": lambda t: (_cohort("--shard", "3/2"), "1 ≤ I ≤ N"),
    "shard not a fraction": lambda t: (_cohort("--shard", "x"), "is not I/N"),
    "shard without a count": lambda t: (_cohort("--shard", "1"), "--shard"),
    "merge of a missing folder": lambda t: (["cohort", "merge", str(t / "nowhere"), "--out", str(t / "m")],
                                            "no such run folder"),
    "merge of a folder that is not a cohort": lambda t: (["cohort", "merge", str(_not_a_cohort(t)), "--out",
                                                          str(t / "m")], "kind: not a cohort manifest"),
    "merge caches without a target": lambda t: (["cohort", "merge", str(t), "--out", str(t / "m"), "--caches",
                                                 str(t / "c.sqlite")], "--cache-out"),
}
