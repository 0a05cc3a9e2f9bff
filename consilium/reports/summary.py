"""The tables of ``consilium report``: board results (OpenTumorBoard) for a board cohort, and for any
judged cohort one summary per rubric judged (the paper's own table where there is one, else the
criterion means)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.redact import redact_figure
from consilium.reports.compare import CohortData
from consilium.reports.papers import medbench, npcbench, otb
from consilium.reports.papers.per_case import FailedArm, failed_arms, has_reference, rubric_groups, shared_rows
from consilium.reports.papers.responses import Response
from consilium.reports.papers.stats import mean, sd
from consilium.runfolder.rows import ArmRow

__all__ = ["Table", "board_figure", "board_tables", "judged_tables", "markdown", "rubric_summary"]


@dataclass(frozen=True)
class Table:
    """One table of the report: written as ``<name>.csv`` and rendered in report.md under ``title``."""

    name: str
    title: str
    rows: list[dict[str, Any]]


def board_tables(run_dir: Path, data: CohortData, responses: list[Response]) -> list[Table]:
    return [Table("board_summary", "Board Simulation by model and mode (opentumorboard.txt, Table A3; format "
                  "checks App. E.2; conclusion alignment App. C.2; four-decision score App. C.3, E.2)",
                  otb.board_summary(run_dir, data, responses)),
            Table("board_stops", "Board stop reasons by model and mode (completed arms)", otb.board_stops(data))]


def rubric_summary(responses: list[Response], rubrics: set[str],
                   failed: Mapping[tuple[str, str], list[FailedArm]] | None = None) -> list[dict[str, Any]]:
    """Per model, variant, rubric, component and criterion: items, how many were scored and not
    evaluable, the failed arms of the model and variant (no answer to judge), and the mean ± population
    SD of the scores (for a rubric without a paper table here)."""
    groups: dict[tuple[str, str, str, str, str], list[float | None]] = defaultdict(list)
    for rubric in sorted(rubrics):
        found = rubric_groups(responses, rubric, failed or {})
        for (model, variant), group_responses in found.items():
            for item in (i for response in group_responses for i in response.items):
                groups[(model, variant, rubric, item.component, item.criterion)].append(item.score)
        shapes = shared_rows({key: [(i.component, i.criterion) for r in found_responses for i in r.items]
                              for key, found_responses in found.items()})
        for (model, variant), rows_of in shapes.items():  # a group whose every arm failed: rows, nothing scored
            for component, criterion in rows_of:
                groups.setdefault((model, variant, rubric, component, criterion), [])
    rows = []
    for (model, variant, rubric, component, criterion), scores in sorted(groups.items()):
        values = [s for s in scores if s is not None]
        rows.append({"model": model, "variant": variant, "rubric": rubric, "component": component,
                     "criterion": criterion, "items": len(scores), "scored": len(values),
                     "not_evaluable": len(scores) - len(values),
                     "failed": len((failed or {}).get((model, variant), [])), "mean": mean(values), "sd": sd(values)})
    return rows


_COUNTED = ("a case's replicates averaged first, intervals over cases (n = cases); a failed arm counts as "
            "incorrect (a missing answer, npcbench.txt App. C), shown in {column}; a case without {reference} is "
            "not evaluable for every model")
_FAILED = ("; means over cases, a case's replicates averaged first; a failed arm (no conclusion) is not evaluable, "
           "counted in failed")


def judged_tables(responses: list[Response], covered: set[str], *, bootstrap: int, seed: int,
                  arms: list[ArmRow] | None = None,
                  cases: Mapping[str, Mapping[str, Any]] | None = None) -> list[Table]:
    """One table (or two) per rubric judged, except those in ``covered`` (already shown elsewhere). ``arms``
    (arms.csv's rows) give the failed arms every table counts; ``cases`` (case id → the case as its traces
    recorded it) say which cases have each rubric's reference."""
    judged = {r.rubric for r in responses} - covered
    failed, known = failed_arms(arms or []), cases or {}
    tables = []
    if otb.ALIGNMENT in judged:
        tables.append(Table("otb_conclusion_alignment", "Conclusion alignment by model and variant, 1–5 "
                            f"(opentumorboard.txt, App. C.2; Table A3){_FAILED}",
                            otb.conclusion_alignment(responses, failed)))
    if otb.DECISIONS in judged:
        tables += [Table("otb_four_decision", "Four-decision score by model and variant: Σ w·(s/5) / Σ w over the "
                         f"dimensions in scope (opentumorboard.txt, App. C.3, E.2){_FAILED}",
                         otb.four_decision(responses, failed)),
                   Table("otb_decision_dimensions", "Four-decision dimensions: mean 1–5 score over conclusions "
                         f"whose reference decides the dimension (App. C.3; Table A4){_FAILED}",
                         otb.decision_dimensions(responses, failed))]
    if otb.EQUIVALENCE in judged:
        tables.append(Table("otb_specialist_turn", "Specialist Turn: clinical equivalence, critical-error and "
                            f"unsupported-claim rates (opentumorboard.txt, Table A2, App. C.1){_FAILED}",
                            otb.specialist_turn(responses, failed)))
    if npcbench.RUBRIC in judged:
        tables.append(Table("npcbench_scores", f"NPCBench consultation score and error rates over evaluable "
                            f"responses (npcbench.txt, Eqs. A7–A8, Table A29; a failed arm is not in V, counted in "
                            f"failed); case bootstrap 95% CI, {bootstrap} resamples, seed {seed}; strict "
                            "patient-level success (Eq. 1: every signed criterion of the case correct) with 95% "
                            "Wilson and exact (Clopper–Pearson) intervals in percent; "
                            + _COUNTED.format(column="strict_missing", reference="signed criteria"),
                            npcbench.npc_scores(responses, bootstrap=bootstrap, seed=seed, failed=failed,
                                                reference=has_reference(npcbench.RUBRIC, known))))
    if medbench.RUBRIC in judged:
        tables.append(Table("medbench_pass_at_k", "Neural-MedBench diagnostic accuracy, pass@1 and pass@k with "
                            "95% Wilson intervals (neural-medbench.txt, Evaluation Metrics, Confidence Intervals); "
                            + _COUNTED.format(column="failed", reference="a reference diagnosis"),
                            medbench.pass_at_k_table(responses, failed, has_reference(medbench.RUBRIC, known))))
    others = judged - {otb.ALIGNMENT, otb.DECISIONS, otb.EQUIVALENCE, npcbench.RUBRIC, medbench.RUBRIC}
    if others:
        tables.append(Table("rubric_summary", f"Scores by model, variant and criterion ({', '.join(sorted(others))})"
                            "; a failed arm (no answer) is not evaluable, counted in failed",
                            rubric_summary(responses, others, failed)))
    return tables


def _cell(value: Any) -> str:
    return "–" if value is None else " ".join(str(value).split()).replace("|", "\\|")


def markdown(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the same rows and columns as the CSV (None shown as –)."""
    if not rows:
        return "(no data)\n"
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r.get(k)) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def board_figure(rows: list[dict[str, Any]], out: Path) -> Path:
    """Per model and mode: (a) mean conclusion alignment on its 1–5 scale (App. C.2), n judged under each
    bar; (b) the App. E.2 format checks, the share of transcripts passing every check and the mean share
    of checks passed, n completed arms checked. Written as PNG and PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figure, (left, right) = plt.subplots(1, 2, figsize=(max(8.0, 2.2 * len(rows)), 4.0))
    xs = list(range(len(rows)))
    names = [f"{r['model']}\n{r['mode']}" for r in rows]
    # points, not bars: a 1–5 scale has no zero for a bar to start from (a mean of 1 would not show)
    for x, row in zip(xs, rows, strict=True):
        value = row["conclusion_alignment_mean"]
        if value is None:
            left.annotate("not judged", (x, 1.0), ha="center", fontsize=7, color="grey")
        else:
            left.plot([x], [value], "o", color="tab:blue", markersize=8)
            left.annotate(f"{value:.2f}", (x, value), textcoords="offset points", xytext=(0, 8), ha="center",
                          fontsize=7)
    left.set_xlim(-0.5, len(rows) - 0.5)
    left.grid(axis="y", alpha=0.3)
    left.set_xticks(xs, [f"{n}\nn={r['conclusion_alignment_n']}" for n, r in zip(names, rows, strict=True)],
                    fontsize=7)
    left.set_ylim(0.8, 5.2)
    left.set_yticks([1, 2, 3, 4, 5])
    left.set_ylabel("mean conclusion alignment (1–5)")
    left.set_title("(a) Conclusion alignment (App. C.2)", fontsize=9)
    width = 0.4
    for i, (key, label) in enumerate([("format_exact_rate", "all checks pass"),
                                      ("format_dense_mean", "checks passed (mean share)")]):
        right.bar([x + (i - 0.5) * width for x in xs], [r[key] or 0 for r in rows], width, label=label)
    right.set_xticks(xs, [f"{n}\nn={r['format_checked']}" for n, r in zip(names, rows, strict=True)], fontsize=7)
    right.set_ylim(0, 1.05)
    right.set_ylabel("share of transcripts")
    right.set_title("(b) Format checks (App. E.2)", fontsize=9)
    right.legend(fontsize=7, loc="lower right")
    figure.suptitle("Board Simulation by model and mode (opentumorboard.txt)", fontsize=10)
    figure.tight_layout()
    path = out / "board_format.png"
    redact_figure(figure)  # its texts masked as every file's (consilium/redact.py)
    for target in (path, path.with_suffix(".pdf")):
        tmp = target.with_name(f".{target.stem}.tmp{target.suffix}")
        figure.savefig(tmp, dpi=110)
        tmp.replace(target)
    plt.close(figure)
    return path
