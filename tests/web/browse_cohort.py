"""The browse pages' cohort: two scripted panels × both formats × three cases (mac-1, mac-2, mac-10: natural
order is not text order), judged by a scripted AI Consilium judge, one arm failed, one item not evaluable, and
hostile text in a case and in a model's opinion. Everything the pages show follows from the constants below,
which the tests read to compute the expected figures themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.scripts import STRUCTURED_REPORT, STRUCTURED_REVISION, Scripted, sections

from consilium.cli import main

MODELS = ("panel-a", "panel-b")
FORMATS = ("free-form", "structured")
CASES = ("mac-1", "mac-2", "mac-10")
MARKERS = {"mac-1": "ZQALPHA", "mac-2": "ZQBRAVO", "mac-10": "ZQCHARLIE"}
MAX_ROUNDS = 3
#: Text that would run or make an element if a page did not escape it.
HOSTILE = '<script>window.PWNED = 1</script>"><img src=x id=pwned onerror="window.PWNED = 2">'
#: The case whose presentation carries :data:`HOSTILE`, and the model whose opinions do.
HOSTILE_CASE, HOSTILE_MODEL = "mac-2", "panel-a"
REFERENCE = "Community-acquired pneumonia"
PANEL = ("Internal Medicine", "Cardiology", "Neurology")
DISSENT_REASON = "ZQREASON the dose is wrong"
#: The first panel model's prices, US dollars per million tokens (its config file's ``prices``).
PRICES = {"input": 2.0, "output": 8.0}

#: (model, case, format) → the roles dissenting in review rounds 1, 2, …: the last round without dissent is a
#: consensus; dissent in round MAX_ROUNDS the round limit; a revision that changes nothing stops with no change.
VOTES: dict[tuple[str, str, str], list[set[str]]] = {
    ("panel-a", "mac-1", "free-form"): [set()],
    ("panel-a", "mac-1", "structured"): [{"cardiology"}, set()],
    ("panel-a", "mac-2", "free-form"): [{"neurology"}, {"neurology"}, {"cardiology"}],
    ("panel-a", "mac-2", "structured"): [set()],
    ("panel-a", "mac-10", "free-form"): [{"cardiology"}, set()],
    ("panel-a", "mac-10", "structured"): [set()],
    ("panel-b", "mac-1", "free-form"): [set()],
    ("panel-b", "mac-1", "structured"): [{"neurology"}, set()],
    ("panel-b", "mac-2", "free-form"): [{"internal-medicine"}],
    ("panel-b", "mac-2", "structured"): [{"internal-medicine"}, {"cardiology"}, set()],
    ("panel-b", "mac-10", "free-form"): [set()],
}
FAILED = ("panel-b", "mac-10", "structured")
#: The one item the judge cannot evaluate: (model, format, case, component, criterion).
NOT_EVALUABLE = ("panel-a", "free-form", "mac-1", "conclusion", "c3")
CRITERIA = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "panel_adequacy", "case_complexity", "overall_quality")
WHOLE_CASE = ("panel_adequacy", "case_complexity", "overall_quality")
APPLIES = {"role_reasoning": ("c1", "c2", "c3", "c4", "c5", "c7", "c8"),
           "role_opinion": ("c1", "c2", "c4", "c6", "c8"), "conclusion": CRITERIA}
COMPONENTS = {"free-form": ("conclusion",), "structured": ("role_reasoning", "role_opinion", "conclusion")}


def score(model: str, fmt: str, case: str, component: str, criterion: str) -> int | None:
    """The scripted judge's score, varied over every key; None for the not-evaluable item."""
    if (model, fmt, case, component, criterion) == NOT_EVALUABLE:
        return None
    m, f, k = MODELS.index(model), FORMATS.index(fmt), CASES.index(case)
    i = CRITERIA.index(criterion)
    return (3 * m + 2 * f + k * (i + 1) + i // 4 + len(component)) % 4


def rationale(model: str, fmt: str, case: str, component: str, criterion: str) -> str:
    return f"ZQWHY {model} {fmt} {case} {component} {criterion}"


def arm_mark(model: str, fmt: str) -> str:
    return f"ARM-{model[-1].upper()}-{'FF' if fmt == 'free-form' else 'ST'}"


def stop_reason(votes: list[set[str]]) -> str:
    if not votes[-1]:
        return "consensus"
    return "round_limit" if len(votes) == MAX_ROUNDS else "no_change"


def opinion_text(model: str) -> str:
    return f"{{role}} thinks pneumonia {HOSTILE if model == HOSTILE_MODEL else ''}"


def panel_script(model: str) -> dict[str, Any]:
    ff, st = arm_mark(model, "free-form"), arm_mark(model, "structured")
    script = Scripted(model)
    script.roles(*PANEL, justification=("owns the question", "also needed"))
    if FAILED[0] == model:
        script.fail("synthesis", where={"contains_all": [STRUCTURED_REPORT, MARKERS[FAILED[1]]]})
    (script.structured_opinion(f"{st} conclusion pneumonia", clinical_data=f"{st} data")
           .opinion(f"{ff} " + opinion_text(model))
           .synthesis(sections(f"{st} first report of the panel"), where={"contains": STRUCTURED_REPORT})
           .synthesis(f"{ff} first report of the panel: pneumonia, treat with amoxicillin"))
    for (m, case, fmt), rounds in VOTES.items():
        if m != model:
            continue
        where = {"contains_all": [MARKERS[case], arm_mark(model, fmt)]}
        for rnd, dissenting in enumerate(rounds, 1):
            for role in sorted(dissenting):
                script.dissent(role, rnd, where=where, reason=DISSENT_REASON)
        if stop_reason(rounds) == "no_change":
            report: Any = sections("unchanged") if fmt == "structured" else "unchanged"
            script.revision(report, changed=False, summary="nothing to change", where={"round": len(rounds), **where})
    return (script.accept(reason="agreed")
                  .revision(sections(f"{st} revised in round {{round}}"), where={"contains": STRUCTURED_REVISION})
                  .revision(f"{ff} report of the panel revised in round {{round}}: pneumonia, treat with doxycycline")
                  .build())


def judge_script() -> dict[str, Any]:
    script = Scripted("browse-judge")
    for model in MODELS:
        for fmt in FORMATS:
            for case in CASES:
                for component in COMPONENTS[fmt]:
                    for criterion in APPLIES[component]:
                        value = score(model, fmt, case, component, criterion)
                        script.score("not_evaluable" if value is None else value, item=f"{component}:{criterion}",
                                     rationale=rationale(model, fmt, case, component, criterion),
                                     where={"contains_all": [MARKERS[case], arm_mark(model, fmt)]})
    return script.build()


def case_file(case: str) -> dict[str, Any]:
    hostile = f" {HOSTILE}" if case == HOSTILE_CASE else ""
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic",
            "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARKERS[case]}: fever and cough for {CASES.index(case) + 2} days.{hostile}",
            "reference": {"diagnosis": REFERENCE}}


def write_inputs(tmp: Path, cases: tuple[str, ...] = CASES) -> tuple[Path, list[str], str, Path]:
    """The cases folder, the two panels' specs, the judge's spec and the settings file under ``tmp``."""
    folder = tmp / "cases"
    folder.mkdir(exist_ok=True)
    for case in cases:
        (folder / f"{case}.json").write_text(json.dumps(case_file(case)))
    specs = [Scripted(m).extend(panel_script(m)["rules"]).write(tmp / f"{m}.json") for m in MODELS]
    judge = Scripted("browse-judge").extend(judge_script()["rules"]).write(tmp / "judge.json")
    config = tmp / "run.yaml"
    config.write_text(f"max_rounds: {MAX_ROUNDS}\n")
    return folder, specs, judge, config


def run_cohort(tmp: Path, out: Path, *, cases: tuple[str, ...] = CASES, models: tuple[str, ...] = MODELS) -> int:
    """``consilium cohort`` over ``cases`` and ``models`` into ``out``; its exit code."""
    folder, specs, judge, config = write_inputs(tmp, cases)
    chosen = [s for m, s in zip(MODELS, specs, strict=True) if m in models]
    priced = tmp / "priced.yaml"  # the first panel has prices (its arms cost dollars), the other none ("—")
    priced.write_text(json.dumps({"spec": chosen[0], "prices": PRICES}))
    argv = ["cohort", "--cases", str(folder), "--model-config", str(priced),
            *(a for s in chosen[1:] for a in ("--extra-model", s)),
            "--config", str(config), "--judge", "ai-consilium", "--judge-model", judge, "--concurrency", "4",
            "--out", str(out)]
    return main(argv)


def build_browse_cohort(tmp: Path) -> Path:
    """Run the cohort (exit 1: one arm fails) and return its folder."""
    assert run_cohort(tmp, tmp / "runs") == 1, "exactly one arm fails, so the cohort exits 1"
    [run_dir] = [p for p in (tmp / "runs").iterdir() if p.is_dir()]
    return run_dir
