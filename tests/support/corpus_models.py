"""Bad scripted-model files (the model layer's own input, its finish_reason included).

Merged into tests/cli/test_bad_inputs.py: each must exit 2 with one line naming the file and field.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = str(ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml")

Builder = Callable[[Path], tuple[list[str], str]]


def script(text: str, expected: str) -> Builder:
    def build(tmp: Path) -> tuple[list[str], str]:
        path = tmp / "model.yaml"
        path.write_text(text)
        return ["simulate", "--case", CASE, "--model", f"scripted:{path}"], f"model.yaml: {expected}"

    return build


CORPUS: dict[str, Builder] = {
    "scripted empty finish_reason": script("rules:\n  - response: hi\n    finish_reason: ''\n",
                                           "rules.0.finish_reason"),
    "scripted finish_reason not text": script("rules:\n  - response: hi\n    finish_reason: [length]\n",
                                              "rules.0.finish_reason"),
}
