"""A real consilium cohort with known inputs, for tests that check the papers' tables by hand.

Two scripted panel models (``panel-a``, ``panel-b``) × two formats × six cases, run by the real CLI
(``consilium cohort``) and judged by a scripted AI Consilium judge. Everything a table reports
follows from the constants below, which the tests read to compute the expected numbers themselves:

- ``PANELS``: each (model, case)'s roles, named as role-catalogue categories (consilium/roles/
  catalogue.yaml), so a revised label mapping cannot move the numbers;
- ``VOTES``: per (model, case, format), the roles dissenting in each review round. A last round
  without dissent is ``consensus``; with dissent at ``MAX_ROUNDS`` it is ``round_limit``; with
  dissent earlier the moderator finds nothing to change (``no_change``);
- ``FAILED``: the one arm that fails (its structured synthesis fails), so it has no trace data;
- ``score``: the judge's score per (model, format, case, component, criterion), None where
  ``NOT_EVALUABLE`` names the item.

Each case's text carries ``MARKERS[case]`` and each arm's texts ``arm_mark(model, format)``; the
scripted rules match on them with ``contains_all`` (docs/models.md, the scripted backend file format).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from consilium.cli import main
from support.scripts import STRUCTURED_REPORT, STRUCTURED_REVISION, Scripted, sections

MODELS = ("panel-a", "panel-b")
FORMATS = ("free-form", "structured")
CASES = ("k1", "k2", "k3", "k4", "k5", "k6")
MARKERS = {"k1": "ZQALPHA", "k2": "ZQBRAVO", "k3": "ZQCHARLIE", "k4": "ZQDELTA", "k5": "ZQECHO", "k6": "ZQFOXTROT"}
MAX_ROUNDS = 3

IM, CA, NE, PU = "Internal Medicine", "Cardiology", "Neurology", "Pulmonology"
#: (model, case) → [(label, primary)]: the primary role first.
PANELS: dict[tuple[str, str], list[tuple[str, bool]]] = {
    **{("panel-a", k): [(IM, True), (CA, False), (NE, False)] for k in CASES},
    **{("panel-b", k): [(CA, True), (IM, False), (PU, False)] for k in ("k1", "k2", "k3")},
    **{("panel-b", k): [(NE, True), (IM, False), (CA, False), (PU, False)] for k in ("k4", "k5", "k6")},
}


def role_id(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


_im, _ca, _ne, _pu = (role_id(x) for x in (IM, CA, NE, PU))
#: (model, case, format) → the role ids dissenting in rounds 1, 2, …
VOTES: dict[tuple[str, str, str], list[set[str]]] = {
    ("panel-a", "k1", "free-form"): [set()],
    ("panel-a", "k1", "structured"): [set()],
    ("panel-a", "k2", "free-form"): [{_ca}, set()],
    ("panel-a", "k2", "structured"): [set()],
    ("panel-a", "k3", "free-form"): [{_ca, _ne}, {_ne}, set()],
    ("panel-a", "k3", "structured"): [{_ne}, set()],
    ("panel-a", "k4", "free-form"): [{_im}],
    ("panel-a", "k4", "structured"): [{_ca}, {_ca}, {_ca}],
    ("panel-a", "k5", "free-form"): [{_ne}, {_ca}, {_ca, _ne}],
    ("panel-a", "k5", "structured"): [set()],
    ("panel-a", "k6", "free-form"): [set()],
    ("panel-a", "k6", "structured"): [{_ca}, {_im}],
    ("panel-b", "k1", "free-form"): [{_pu}, set()],
    ("panel-b", "k1", "structured"): [set()],
    ("panel-b", "k2", "free-form"): [set()],
    ("panel-b", "k2", "structured"): [{_im, _pu}, set()],
    ("panel-b", "k3", "free-form"): [{_im}, {_im}],
    ("panel-b", "k3", "structured"): [set()],
    ("panel-b", "k4", "free-form"): [{_ca, _pu}, {_pu}, set()],
    ("panel-b", "k4", "structured"): [set()],
    ("panel-b", "k5", "free-form"): [set()],
    ("panel-b", "k5", "structured"): [{_ne}],
    ("panel-b", "k6", "free-form"): [{_im}, set()],
}
FAILED = ("panel-b", "k6", "structured")

#: The AI Consilium rubric's criteria in its order, and the components each applies to.
CRITERIA = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "panel_adequacy", "case_complexity", "overall_quality")
WHOLE_CASE = ("panel_adequacy", "case_complexity", "overall_quality")
APPLIES = {"role_reasoning": ("c1", "c2", "c3", "c4", "c5", "c7", "c8"),
           "role_opinion": ("c1", "c2", "c4", "c6", "c8"),
           "conclusion": CRITERIA}
COMPONENTS = {"free-form": ("conclusion",), "structured": ("role_reasoning", "role_opinion", "conclusion")}
NOT_EVALUABLE = {
    ("panel-a", "free-form", "k2", "conclusion", "c6"),
    ("panel-a", "structured", "k5", "conclusion", "c5"),
    ("panel-a", "structured", "k4", "role_reasoning", "c7"),
    ("panel-b", "structured", "k3", "role_opinion", "c2"),
    ("panel-b", "free-form", "k1", "conclusion", "overall_quality"),
}


def score(model: str, fmt: str, case: str, component: str, criterion: str) -> int | None:
    """The scripted judge's score: varied over every key, None where not evaluable."""
    if (model, fmt, case, component, criterion) in NOT_EVALUABLE:
        return None
    m, f, k = MODELS.index(model), FORMATS.index(fmt), CASES.index(case)
    i, p = CRITERIA.index(criterion), ("conclusion", "role_reasoning", "role_opinion").index(component)
    return min(3, (k * (i + 2) + 2 * m + f * (1 + k % 2) + p + i // 3) % 5)


def arm_mark(model: str, fmt: str) -> str:
    return f"ARM-{model[-1].upper()}-{'FF' if fmt == 'free-form' else 'ST'}"


def stop_reason(votes: list[set[str]]) -> str:
    if not votes[-1]:
        return "consensus"
    return "round_limit" if len(votes) == MAX_ROUNDS else "no_change"


def _sections(mark: str, what: str) -> dict[str, str]:
    return sections(f"{mark} {what}", final_differential="1. A\n2. B")


def panel_script(model: str) -> dict[str, Any]:
    ff, st = arm_mark(model, "free-form"), arm_mark(model, "structured")
    script = Scripted(model)
    for case in CASES:
        (primary, _), *supporting = PANELS[(model, case)]
        script.roles(primary, *(label for label, _ in supporting), justification=("owns the question", "also needed"),
                     where={"contains": MARKERS[case]})
    if FAILED[0] == model:
        script.fail("synthesis", where={"contains_all": [STRUCTURED_REPORT, MARKERS[FAILED[1]]]})
    (script.structured_opinion(f"{st} conclusion", clinical_data=f"{st} data")
           .opinion(f"{ff} opinion of {{role}}")
           .synthesis(_sections(st, "first report"), where={"contains": STRUCTURED_REPORT})
           .synthesis(f"{ff} first report"))
    for (m, case, fmt), rounds in VOTES.items():
        if m != model:
            continue
        where = {"contains_all": [MARKERS[case], arm_mark(model, fmt)]}
        for rnd, dissenting in enumerate(rounds, 1):
            for role in sorted(dissenting):
                script.dissent(role, rnd, where=where)
        if stop_reason(rounds) == "no_change":
            report: Any = _sections(arm_mark(model, fmt), "unchanged") if fmt == "structured" else "unchanged"
            script.revision(report, changed=False, summary="nothing to change", where={"round": len(rounds), **where})
    return (script.accept()
                  .revision(_sections(st, "revised in round {round}"), where={"contains": STRUCTURED_REVISION})
                  .revision(f"{ff} report revised in round {{round}}")
                  .build())


def judge_script() -> dict[str, Any]:
    script = Scripted("fixture-judge")
    for model in MODELS:
        for fmt in FORMATS:
            for case in CASES:
                for component in COMPONENTS[fmt]:
                    for criterion in APPLIES[component]:
                        value = score(model, fmt, case, component, criterion)
                        script.score("not_evaluable" if value is None else value, item=f"{component}:{criterion}",
                                     where={"contains_all": [MARKERS[case], arm_mark(model, fmt)]})
    return script.build()


def _case(case: str) -> dict[str, Any]:
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic",
            "question": "What is the most likely diagnosis?",
            "presentation": f"Case {MARKERS[case]}: a patient with fever and cough for {CASES.index(case) + 2} days.",
            "reference": {"diagnosis": "Community-acquired pneumonia"}}


def build_cohort(tmp_path: Path) -> Path:
    """Write the cases, scripts and settings under ``tmp_path``, run ``consilium cohort`` (exit 1: one
    arm failed) and return the cohort folder."""
    cases = tmp_path / "cases"
    cases.mkdir()
    for case in CASES:
        (cases / f"{case}.json").write_text(json.dumps(_case(case)))
    specs = []
    for model in MODELS:
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps(panel_script(model)))
        specs.append(f"scripted:{path}")
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(judge_script()))
    config = tmp_path / "run.yaml"
    config.write_text(f"max_rounds: {MAX_ROUNDS}\n")
    out = tmp_path / "runs"
    code = main(["cohort", "--cases", str(cases), "--model", specs[0], "--extra-model", specs[1],
                 "--config", str(config), "--judge", "ai-consilium", "--judge-model", f"scripted:{judge}",
                 "--concurrency", "8", "--out", str(out)])
    assert code == 1, "exactly one arm fails, so the cohort exits 1"
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir
