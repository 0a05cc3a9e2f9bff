"""Judging a folder again: never silently over another judge's judgements, and a cohort's
``judgements.csv`` rebuilt to match its judgement files.

A judgement file beside a trace is the record every table, report and export reads; replacing one made by
another judge model (or jury) or another judge prompt would change a cohort's results without a word, so
``consilium judge`` and the API's ``judge_run`` refuse unless told to (``--force``, ``force=True``). The same
judge re-judging (a retry after a failure, an added component) replaces its own files freely.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from consilium.cohort.arms import relative
from consilium.cohort.finish import JUDGEMENT_COLUMNS, JURY_COLUMNS
from consilium.cohort.spend import rewrite_judge_columns
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.fileio import in_the_way
from consilium.judges.cost import item_spend
from consilium.judges.coverage import shortened_input
from consilium.judges.jury import judges_label
from consilium.judges.prompting import judge_prompt_hash
from consilium.judges.record import Judgement, read_judgement
from consilium.judges.rubric import Rubric
from consilium.judges.runner import JudgeSetup
from consilium.models import ChatModel
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import judgements_of
from consilium.spec.manifest import MANIFEST

__all__ = ["check_replace", "judge_label", "judgement_rows", "rebuild_judgements_csv"]


def judge_label(models: Sequence[ChatModel], names: Sequence[str | None] | None = None) -> str:
    """``judge_model`` as a judgement made by these judges (named by ``names``, their references) records it
    (a jury: ``jury[a, b]``; a judge on its own server with it: consilium/judges/jury.py, judges_label)."""
    named = list(names) if names is not None else [None] * len(models)
    return judges_label([JudgeSetup(model=m, name=n) for m, n in zip(models, named, strict=True)])


def _judgement_mark(path: Path) -> dict[str, str]:
    made = json.loads(path.read_text(encoding="utf-8"))
    return {"judge_model": str(made["judge_model"]), "prompt_hash": str(made["prompt_hash"])}


def check_replace(paths: Iterable[Path], rubric: Rubric, judge: str, *, flag: str, system: str | None = None) -> None:
    """:class:`UserError` naming the first judgement file among ``paths`` that another judge (or another
    judge prompt, by its hash) made; files that do not exist yet, and the same judge's, pass (a judgement's
    mark: its judge and prompt hash, :func:`consilium.fileio.in_the_way`). ``system``: the user's own system
    prompt for the rubric (``--prompt-file``), part of the prompt hash."""
    prompt = judge_prompt_hash(rubric, system)
    for found in in_the_way(paths, {"judge_model": judge, "prompt_hash": prompt}, _judgement_mark)[:1]:
        path, mark = found.path, found.mark or {}
        if found.why == "not a file":
            raise UserError(f"{path}: not a judgement file (a link or a folder) is in the way; {flag} replaces it")
        if found.why != "another":
            raise UserError(f"{path}: an unreadable judgement is in the way; {flag} replaces it")
        by, their_prompt = mark["judge_model"], mark["prompt_hash"]
        if by != judge:
            raise UserError(f"{path}: judged by {by}, not {judge}; {flag} replaces it")
        raise UserError(f"{path}: judged by {by} with another judge prompt (hash {their_prompt}, now "
                        f"{prompt}); {flag} replaces it")


def judgement_rows(judgement: Judgement, *, model: str, protocol: str, variant: str, replicate: dict[str, Any],
                   judgement_file: str, jury: bool) -> list[dict[str, Any]]:
    """The rows of ``judgements.csv`` for one judgement: one per item (docs/cohorts.md)."""
    return [{"case_id": judgement.case_id, "model": model, "protocol": protocol, "format": variant, **replicate,
             "rubric": judgement.rubric, "component": item.component, "criterion": item.criterion,
             "score": item.score, "calibrated_score": item.calibrated_score, "not_evaluable": item.not_evaluable,
             "reason": item.reason or "",
             # kept/total characters of a whole-case record cut to fit the judge's context
             "shortened_input": shortened_input(item.detail), "judgement": judgement_file, **spend,
             **({"jury_judges": item.verdict.judges, "jury_not_evaluable": item.verdict.not_evaluable,
                 "jury_tie": item.verdict.tie or ""} if jury and item.verdict else {})}
            for item, spend in zip(judgement.items, item_spend(judgement), strict=True)]


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def rebuild_judgements_csv(run_dir: Path) -> Path | None:
    """A cohort folder's ``judgements.csv`` rewritten from the judgement files beside its arms' traces (in
    the file's rubric order, then new rubrics by name; within a rubric, arms.csv's order), and arms.csv's judge
    columns with it (consilium/cohort/spend.py), so that both say what the files say after a re-judging; None
    when ``run_dir`` is not a cohort (no manifest, no arms.csv)."""
    arms = RunFolder(run_dir).arms_csv
    if not (run_dir / MANIFEST).is_file() or not arms.is_file():
        return None
    rewrite_judge_columns(run_dir)
    rows = [r for r in _csv(arms) if r.get("trace") and r.get("status") == "completed"]
    order = list(dict.fromkeys(r["rubric"] for r in _csv(RunFolder(run_dir).judgements_csv) if r.get("rubric")))
    found: dict[str, list[tuple[dict[str, str], Judgement, Path]]] = {}
    for row in rows:
        trace = run_dir / row["trace"]
        for path in judgements_of(trace):
            judgement = read_judgement(path)
            found.setdefault(judgement.rubric, []).append((row, judgement, path))
    replicates = any(r.get("replicate") not in (None, "") for r in rows)
    jury = any(j.jury is not None for judged in found.values() for _, j, _ in judged)
    columns: tuple[str, ...] = (*JUDGEMENT_COLUMNS[:4], "replicate", *JUDGEMENT_COLUMNS[4:]) if replicates \
        else JUDGEMENT_COLUMNS
    columns += JURY_COLUMNS if jury else ()
    table: list[dict[str, Any]] = []
    for rubric in [*(r for r in order if r in found), *sorted(set(found) - set(order))]:
        for row, judgement, path in found[rubric]:
            replicate = {"replicate": row["replicate"]} if replicates and row.get("replicate") else {}
            table += judgement_rows(judgement, model=row["model"], protocol=row["protocol"], variant=row["format"],
                                    replicate=replicate, judgement_file=relative(path, run_dir), jury=jury)
    return write_csv(RunFolder(run_dir).judgements_csv, table, fields=columns)
