"""``consilium report --style otb-leaderboard``: a run folder's board arms and Specialist Turns summarised as the
OpenTumorBoard leaderboard summarises them (AnqiLi24/OpenTumorBoard ``scripts/evaluation/judge/
summarize_llm_judge_batch.py`` and ``scripts/evaluation/metrics/text_metrics.py``), written as ``summary.json``
in the official shape, and as a table per model (CSV and Markdown) beside the leaderboard's rows.

Each response becomes a :class:`consilium.otb.leaderboard.Item`: no text (a failed arm, no extractable
conclusion, an empty answer) is a ``format_failure``, scored at the floor; a judgement missing, not evaluable
or off the official scale is a ``judge_failure`` (the official summary fails a judge answer whole, so one
decision not evaluable fails the four-decision item); else it is scored under the official field names.
``summary.json`` keys: ``task1`` (conclusion alignment), ``task1_four_decisions`` (the official code writes
that rubric as ``task1`` of a separate batch; a cohort judges both at once), ``task2`` (clinical equivalence),
each present when its rubric judged a response of its task, ``text_metrics`` (ROUGE-L per task and model) and
``generation`` (per model, the Specialist Turns as the authors' generation script counts them: how its JSON
reading went, the calls that never answered, and consilium's own format findings, counted apart: an answer kept
though it broke consilium's answer schema is judged as the official evaluation judges it, never a failure).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from consilium.errors import UserError
from consilium.fileio import Mark, in_the_way, write_text_atomic
from consilium.judges.record import Judgement, JudgementItem
from consilium.otb.leaderboard import DECISIONS, Item, Rubric, Status, decision_valid, summary
from consilium.otb.rouge import rouge_l
from consilium.reports.otb_responses import Response, Task, cohort_folders, responses
from consilium.reports.summary import markdown
from consilium.runfolder.rows import rows_csv

__all__ = ["FILES", "Leaderboard", "read_leaderboard"]

#: summary.json's task keys: (the consilium rubric, the task it scores, the official rubric name).
TASKS: dict[str, tuple[str, Task, Rubric]] = {
    "task1": ("otb-conclusion-alignment", "task1", "conclusion_alignment"),
    "task1_four_decisions": ("otb-four-decision", "task1", "four_decisions"),
    "task2": ("otb-clinical-equivalence", "task2", "clinical_equivalence"),
}
SUMMARY, TABLE, BY_TYPE, PAGE = "summary.json", "otb_leaderboard.csv", "otb_leaderboard_by_question_type.csv", \
    "otb_leaderboard.md"
FILES = (SUMMARY, TABLE, BY_TYPE, PAGE)
TITLE = "# OpenTumorBoard leaderboard summary"
#: The generation summary's counters of a turn (``run_vllm_qa_evaluation.py``): its JSON reading, or no response.
GENERATION = ("parsed", "parsed_after_cleanup", "raw_fallback", "errors")
#: The columns of the table as the report wrote it before it counted generation: a table of those is its own.
EARLIER_COLUMNS = ("task", "rubric", "model", "items", "scored", "format_failures", "judge_failures",
                   "conclusion_alignment", *(f"{d}{s}" for d in DECISIONS for s in ("", "_cases")),
                   "clinical_equivalence", "critical_error_rate", "unsupported_claim_rate", "rouge_l_f1",
                   "rouge_l_no_reference")
COLUMNS = (*EARLIER_COLUMNS, "raw_fallback", "generation_errors", "answer_schema_failures")
TYPE_COLUMNS = ("model", "qa_type", "count", "clinical_equivalence", "critical_error_rate", "unsupported_claim_rate")


def _score(items: list[JudgementItem], criterion: str, low: int) -> int | None:
    """The one item's integer score on ``criterion`` within [low, 5], or None (missing, not evaluable, off)."""
    found = [i for i in items if i.criterion == criterion]
    if len(found) != 1 or found[0].not_evaluable or found[0].score is None:
        return None
    score = found[0].score
    return int(score) if float(score).is_integer() and low <= score <= 5 else None


def official_scores(rubric: Rubric, judgement: Judgement) -> dict[str, Any] | None:
    """The judgement under the official field names, or None when the official summary would count it a judge
    failure. A decision scores −1 (out of scope) or 1–5; a 0 (the frozen scope's reward scale allows it in
    scope) fails the whole item, as the official validation rejects the judge's whole answer."""
    items = judgement.items
    if rubric == "conclusion_alignment":
        score = _score(items, "conclusion_alignment", 1)
        return None if score is None else {"conclusion_alignment": score}
    if rubric == "four_decisions":
        decisions = {d: _score(items, d, -1) for d in DECISIONS}
        return None if any(s is None or not decision_valid(s) for s in decisions.values()) else decisions
    score = _score(items, "clinical_equivalence", 1)
    if score is None:
        return None
    [flags] = [i.flags for i in items if i.criterion == "clinical_equivalence"]
    if not {"critical_error", "unsupported_claim"} <= set(flags):
        return None
    return {"clinical_equivalence_score": score, "critical_error": bool(flags["critical_error"]),
            "unsupported_claim": bool(flags["unsupported_claim"])}


def leaderboard_items(found: list[Response], task: Task, rubric_name: str, rubric: Rubric) -> list[Item]:
    """Each response of ``task`` as an item of the official rubric ``rubric`` (consilium's ``rubric_name``)."""
    items = []
    for response in (r for r in found if r.task == task):
        judgement = response.judgements.get(rubric_name)
        scores = official_scores(rubric, judgement) if judgement is not None and response.text else None
        status: Status = "format_failure" if not response.text else "judge_failure" if scores is None else "scored"
        items.append(Item(response.model, status, scores, response.qa_type))
    return items


def text_metrics(found: list[Response], task: Task) -> dict[str, dict[str, Any]]:
    """Per model, as ``text_metrics.py`` prints it: ``items``, ``format_failures`` and ``rouge_l_f1``, the mean
    ROUGE-L over the responses with text (a board response without a conclusion counts as 0); a response with
    text whose case has no reference is left out of the mean and counted in ``no_reference``."""
    by_model: dict[str, list[Response]] = defaultdict(list)
    for response in (r for r in found if r.task == task):
        by_model[response.model].append(response)
    out = {}
    for model, group in sorted(by_model.items()):
        values = [rouge_l(r.text, r.reference) for r in group if r.text and r.reference]
        values += [0.0 for r in group if not r.text] if task == "task1" else []
        out[model] = {"items": len(group), "format_failures": sum(not r.text for r in group),
                      "rouge_l_f1": fmean(values) if values else None,
                      "no_reference": sum(bool(r.text) and not r.reference for r in group)}
    return out


def generation(found: list[Response]) -> dict[str, dict[str, int]]:
    """Per model, its Specialist Turns as the authors' generation summary counts them (``responses``: those that
    came back, then :data:`GENERATION`), and ``answer_schema_failures``: the turns kept though their answer broke
    consilium's answer schema, a format finding of consilium's own that changes no official number."""
    by_model: dict[str, list[Response]] = defaultdict(list)
    for response in (r for r in found if r.task == "task2"):
        by_model[response.model].append(response)
    return {model: {"responses": sum(r.generation != "errors" for r in group),
                    **{name: sum(r.generation == name for r in group) for name in GENERATION},
                    "answer_schema_failures": sum(r.schema_failure for r in group)}
            for model, group in sorted(by_model.items())}


@dataclass(frozen=True)
class Leaderboard:
    """The summary in the official shape, its table rows per (task, model) and per question type, the folder
    they go to, and whether RUN_DIR holds cohorts (whose own report is written beside them)."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    by_question_type: list[dict[str, Any]]
    out: Path
    cohorts: bool

    @property
    def page(self) -> str:
        return self.texts()[PAGE]

    def texts(self) -> dict[str, str]:
        page = [TITLE, "", "The official summary's rules (docs/opentumorboard.md, \"Report as the leaderboard "
                "does\"): no conclusion or answer scores 1 and is counted in format_failures; judge failures are "
                "counted apart and left out; each decision's mean is over the items that take it; rates are "
                "fractions of the scored items; ROUGE-L counts a missing board conclusion as 0. A Specialist Turn's "
                "raw_fallback and generation_errors are counted as the authors' generation script counts them, and "
                "answer_schema_failures (answers kept though they broke consilium's own answer schema, judged as "
                "the official evaluation judges them) apart; none of the three changes an official number.", "",
                "## Per task and model", "", markdown(self.rows), "## Specialist Turn by question type", "",
                markdown(self.by_question_type)]
        return {SUMMARY: json.dumps(self.summary, ensure_ascii=False, indent=2) + "\n",
                TABLE: rows_csv(self.rows, COLUMNS), BY_TYPE: rows_csv(self.by_question_type, TYPE_COLUMNS),
                PAGE: "\n".join(page)}

    def check_writable(self) -> None:
        """Refuse (one line, nothing written) when a file it would write is there and is not one it wrote."""
        for way in in_the_way([self.out / name for name in FILES], {}, _mark)[:1]:
            raise UserError(f"{way.path}: exists and is not a leaderboard file `consilium report --style "
                            f"otb-leaderboard` wrote ({way.why}); it is left alone (nothing was written)")

    def write(self) -> list[Path]:
        """summary.json, the two tables and the page, in that order."""
        self.check_writable()
        return [write_text_atomic(self.out / name, text) for name, text in self.texts().items()]


def _mark(path: Path) -> Mark | None:
    """A file this report wrote is its own mark: summary.json of task keys and text_metrics, a table with its
    header, the page with its title."""
    text = path.read_text(encoding="utf-8")
    if path.name == SUMMARY:
        data = json.loads(text)
        ours = isinstance(data, dict) and "text_metrics" in data and set(data) <= {*TASKS, "text_metrics",
                                                                                   "generation"}
    elif path.name == PAGE:
        ours = text.startswith(TITLE + "\n")
    else:
        headers = (COLUMNS, EARLIER_COLUMNS) if path.name == TABLE else (TYPE_COLUMNS,)
        ours = any(text.startswith(",".join(header) + "\r\n") for header in headers)
    return {} if ours else None


def _generation_cells(got: dict[str, Any], task: str, model: str) -> dict[str, Any]:
    """A turn row's generation counts (empty cells for a board)."""
    counts = got.get("generation", {}).get(task, {}).get(model)
    if counts is None:
        return {}
    return {"raw_fallback": counts["raw_fallback"], "generation_errors": counts["errors"],
            "answer_schema_failures": counts["answer_schema_failures"]}


def _rows(got: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    covered = set()
    for key, (_, task, rubric) in TASKS.items():
        if key not in got:
            continue
        covered.add(task)
        for model, entry in got[key]["models"].items():
            row: dict[str, Any] = {"task": key, "rubric": rubric, "model": model}
            for name, value in entry.items():
                if name in DECISIONS:
                    row[name], row[f"{name}_cases"] = value["mean"], value["cases"]
                elif name != "by_question_type":
                    row[name] = value
            metrics = got["text_metrics"].get(task, {}).get(model, {})
            rows.append({**row, "rouge_l_f1": metrics.get("rouge_l_f1"),
                         "rouge_l_no_reference": metrics.get("no_reference"),
                         **_generation_cells(got, task, model)})
    for task in sorted(set(got["text_metrics"]) - covered):  # no rubric judged it: its counts and ROUGE-L alone
        rows += [{"task": task, "rubric": "", "model": model, "items": m["items"],
                  "format_failures": m["format_failures"], "rouge_l_f1": m["rouge_l_f1"],
                  "rouge_l_no_reference": m["no_reference"], **_generation_cells(got, task, model)}
                 for model, m in got["text_metrics"][task].items()]
    return [{c: row.get(c) for c in COLUMNS} for row in rows]


def read_leaderboard(run_dir: Path, out: Path) -> Leaderboard:
    """The leaderboard summary of RUN_DIR's board arms and Specialist Turns, to be written to ``out``: read and
    checked, ``out``'s files included (:meth:`Leaderboard.check_writable`); nothing written."""
    found = responses(run_dir)
    got: dict[str, Any] = {}
    for key, (rubric_name, task, rubric) in TASKS.items():
        if any(r.task == task and rubric_name in r.judgements for r in found):
            got[key] = summary(rubric, leaderboard_items(found, task, rubric_name, rubric))
    got["text_metrics"] = {task: text_metrics(found, task) for task in ("task1", "task2")
                           if any(r.task == task for r in found)}
    if any(r.task == "task2" for r in found):
        got["generation"] = {"task2": generation(found)}
    by_type = [{"model": model, "qa_type": qa_type, **values}
               for model, entry in got.get("task2", {}).get("models", {}).items()
               for qa_type, values in entry["by_question_type"].items()]
    board = Leaderboard(got, _rows(got), by_type, out, bool(cohort_folders(run_dir)))
    board.check_writable()
    return board
