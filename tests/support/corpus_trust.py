"""Bad inputs of the cohort, resume and calibration commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"

Builder = Callable[[Path], tuple[list[str], str]]


def _not_a_run(tmp: Path) -> Path:
    folder = tmp / "plain"
    folder.mkdir()
    return folder


CORPUS: dict[str, Builder] = {
    "resume without a manifest": lambda t: (["cohort", "--resume", str(_not_a_run(t))], "no manifest"),
    "resume of a missing folder": lambda t: (["cohort", "--resume", str(t / "gone")], "no such run folder"),
    "cohort without cases": lambda t: (["cohort", "--model", "scripted:x.json"], "--cases: required"),
    "nan train fraction": lambda t: (["calibrate", "isotonic", "--ratings", str(t / "r.csv"), "--judgements",
                                      str(t), "--rubric", "ai-consilium", "--train-fraction", "nan"],
                                     "--train-fraction"),
    "zero bootstrap draws": lambda t: (["calibrate", "agreement", "--ratings", str(t / "r.csv"), "--judgements",
                                        str(t), "--rubric", "ai-consilium", "--bootstrap", "0"], "--bootstrap"),
    "modes on a consilium cohort": lambda t: (["cohort", "--cases", str(CASE), "--modes", "agents", "--model",
                                               "scripted:x.json"], "--modes"),
}


def _experiment(tmp: Path, text: str) -> Path:
    path = tmp / "exp.yaml"
    path.write_text(text)
    return path


CORPUS.update({
    "experiment with an unknown format": lambda t: (["cohort", "--cases", str(CASE), "--experiment", str(
        _experiment(t, "formats: [prose]\n")), "--model", "scripted:x.json"], "exp.yaml: formats.0"),
    "experiment with no modes": lambda t: (["cohort", "--cases", str(CASE), "--experiment", str(
        _experiment(t, "protocol: board\nmodes: []\n")), "--model", "scripted:x.json"], "exp.yaml: modes"),
    "negative judge repairs": lambda t: (["judge", str(t), "--rubric", "ai-consilium", "--judge-model",
                                          "embedded", "--max-repairs", "-1"], "--max-repairs"),
})
