"""Bad inputs of a cohort of several protocols (``--protocol consilium,single``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"

Builder = Callable[[Path], tuple[list[str], str]]


def _file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def _cohort(*flags: str) -> list[str]:
    return ["cohort", "--cases", str(CASE), "--model", "scripted:x.json", *flags]


CORPUS: dict[str, Builder] = {
    "protocols: an unknown one in the list": lambda t: (_cohort("--protocol", "consilium,poetry"),
                                                        "--protocol: unknown protocol(s) 'poetry'"),
    "protocols: one that runs no cohort": lambda t: (_cohort("--protocol", "single,turn"),
                                                     "'turn' runs one question at a time"),
    "protocols: one given twice": lambda t: (_cohort("--protocol", "single,single"), "given twice"),
    "protocols: an empty list": lambda t: (_cohort("--protocol", ","), "--protocol: unknown protocol(s) (none)"),
    "protocols: modes without a board": lambda t: (_cohort("--protocol", "consilium,single", "--modes", "agents"),
                                                   "--modes: no protocol of this cohort (consilium, single)"),
    "protocols: formats of a board alone": lambda t: (_cohort("--protocol", "board", "--formats", "free-form"),
                                                      "--formats: no protocol of this cohort (board)"),
    "protocols: an unknown format for both": lambda t: (_cohort("--protocol", "consilium,single", "--formats",
                                                                "prose"), "--formats: unknown format(s) prose"),
    "protocols: a config key no protocol has": lambda t: (_cohort("--protocol", "consilium,single", "--config", _file(
        t, "c.yaml", "max_round: 2\n")), "c.yaml: max_round: Extra inputs are not permitted"),
    "protocols: a consilium key in a single cohort": lambda t: (_cohort("--protocol", "single", "--config", _file(
        t, "c.yaml", "max_rounds: 2\n")), "c.yaml: max_rounds: "),
    "protocols: a bad value for one of them": lambda t: (_cohort("--protocol", "consilium,single", "--config", _file(
        t, "c.yaml", "report_budget_chars: 10\n")), "c.yaml: report_budget_chars: "),
    "protocols: an experiment listing an unknown one": lambda t: (_cohort("--experiment", _file(
        t, "e.yaml", "protocol: [consilium, poetry]\n")), "e.yaml: protocol: unknown protocol(s) 'poetry'"),
    "protocols: an experiment run key no protocol has": lambda t: (_cohort("--experiment", _file(
        t, "e.yaml", "protocol: single\nrun: {max_turns: 4}\n")), "e.yaml: run.max_turns: "),
    # A stage budget goes to the protocols that have the stage (the consilium's vote): one no protocol has is refused.
    "protocols: an experiment stage no protocol has": lambda t: (_cohort("--experiment", _file(
        t, "e.yaml", "protocol: [consilium, single]\nrun: {max_tokens: {votes: 10}}\n")),
        "e.yaml: run.max_tokens: unknown stage 'votes'"),
}
