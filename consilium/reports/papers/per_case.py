"""How the paper tables count a cohort's cases, replicates and failed arms: one rule for every table.

- A case's replicates (an experiment's ``replicates:``) are averaged first: each per-case quantity (a
  pass@k outcome, Strict success, R_i, an error flag) is the mean over the case's replicates whose value
  is known, and the table's statistic is the mean over the cases; its interval is over cases (Wilson's
  n is the number of cases), so the replicates never count as independent cases. Without replicates
  (one arm per case) this is the plain per-case statistic. The averaging (:func:`case_values`) lives in
  :mod:`consilium.judges.per_case`, so the ``judge`` command's own summary counts by the same rule.
- A failed arm has no answer. Where the paper scores a missing answer as wrong (npcbench.txt App. C:
  "Missing or conflicting extracted answers have correctness zero and remain in the scored
  denominator"; Strict, Eq. 1; pass@k) it is a failure; where the statistic is a mean over evaluable
  responses (O1 over V, Eq. A7; the OpenTumorBoard means) it is not evaluable. Either way it is counted
  and shown (``failed``), never dropped.
- Whether a case can be scored at all is the case's property: a case without what the rubric compares
  with (``reference.rubric`` for the signed criteria, ``reference.diagnosis`` for the diagnosis match)
  is not evaluable for every model, its failed arms included. The case is read from the trace of any
  arm that ran it, or, for a case whose every arm failed, from the cohort's ``--cases`` source when the
  case there is the one the manifest recorded (its content hash) (:func:`known_cases`); a case known
  neither way is unknown, and its failed arms count by the paper's rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from consilium.cases import Case
from consilium.cohort.cases import load_cohort
from consilium.errors import UserError
from consilium.judges.per_case import CaseValues, case_values
from consilium.judges.rubric import Rubric, load_rubric, rubric_names
from consilium.judges.runner import reference_for
from consilium.reports.consilium.data import replicate_key
from consilium.reports.papers.responses import Response
from consilium.runfolder.rows import ArmRow
from consilium.spec.manifest import MANIFEST, load_manifest

__all__ = ["CaseValues", "FailedArm", "HasReference", "case_values", "failed_arms", "has_reference",
           "known_cases", "rubric_groups", "shared_rows"]

T = TypeVar("T")

#: Whether a case (by id) has what a rubric compares with; None when that is not known.
HasReference = Callable[[str], bool | None]


@dataclass(frozen=True)
class FailedArm:
    """An arm of arms.csv that did not complete: it has no answer to judge."""

    model: str
    variant: str
    case_id: str
    replicate: str


def failed_arms(arms: Iterable[ArmRow]) -> dict[tuple[str, str], list[FailedArm]]:
    """(model, variant) → its failed arms (arms.csv rows whose status is not ``completed``)."""
    failed: dict[tuple[str, str], list[FailedArm]] = defaultdict(list)
    for arm in arms:
        if not arm.completed:
            model, variant = arm.model or arm.model_spec, arm.format
            failed[(model, variant)].append(FailedArm(model, variant, arm.case_id, replicate_key(arm)))
    return dict(failed)


def known_cases(run_dir: Path, recorded: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The cases as the traces of completed arms ``recorded`` them, and each case of the cohort's manifest that
    none recorded (its every arm failed) as the manifest's ``cases`` source holds it, when its content hash is
    the one the manifest recorded. A folder without a manifest, a source that is gone or a case edited since
    leaves the case unknown (nothing is guessed)."""
    known = dict(recorded)
    path = run_dir / MANIFEST
    try:
        settings = load_manifest(path).settings if path.is_file() else None
        wanted = {} if settings is None else {c: h for c, h in settings.case_hashes.items() if c not in known}
        if settings is not None and wanted:
            known |= {case.id: case.model_dump(mode="json") for case in load_cohort(Path(settings.cases))
                      if wanted.get(case.id) == case.content_hash()}
    except (UserError, OSError):
        pass  # the cases stay as the traces recorded them
    return known


@cache
def _rubric(name: str) -> Rubric | None:
    return load_rubric(name) if name in rubric_names() else None


def has_reference(rubric: str, cases: Mapping[str, Mapping[str, Any]]) -> HasReference:
    """Whether each case has the rubric's reference (:func:`consilium.judges.runner.reference_for`), from
    the cases as the traces recorded them; None for a case not among them, or a rubric whose reference is
    not the case's (a Specialist Turn's reference answer, a rubric not shipped)."""
    found = _rubric(rubric)
    if found is None or found.reference in ("answer", "none"):
        return lambda case_id: None

    def check(case_id: str) -> bool | None:
        case = cases.get(case_id)
        return None if case is None else reference_for(found, Case.model_validate(case)) is not None
    return check


def rubric_groups(responses: list[Response], rubric: str,
                  failed: Mapping[tuple[str, str], list[FailedArm]]) -> dict[tuple[str, str], list[Response]]:
    """The rubric's responses by (model, variant), sorted, with every (model, variant) that has failed arms
    present (empty when each of its arms failed) once the rubric judged any arm: a cohort's judges judge
    each of its arms, so the failed ones are the rubric's to count, even in a variant where no arm
    completed (a single-model cohort whose structured arms all failed)."""
    groups: dict[tuple[str, str], list[Response]] = defaultdict(list)
    for response in responses:
        if response.rubric == rubric:
            groups[(response.model, response.variant)].append(response)
    for key in failed if groups else ():
        groups.setdefault(key, [])
    return dict(sorted(groups.items()))


def shared_rows(found: Mapping[tuple[str, str], Iterable[T]]) -> dict[tuple[str, str], set[T]]:
    """(model, variant) → the rows a table shows it, from the rows each group ``found`` (components,
    metrics, criteria): every row any model has in its variant, so a model whose arms failed keeps its
    variant's rows with them counted; for a variant where no model has a row (each arm failed), every row
    of any variant."""
    by_variant: dict[str, set[T]] = defaultdict(set)
    for (_, variant), rows in found.items():
        by_variant[variant] |= set(rows)
    anywhere = set().union(*by_variant.values())
    return {key: by_variant.get(key[1]) or anywhere for key in found}
