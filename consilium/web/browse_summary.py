"""The cohort summary: per protocol, model and format (or mode), the figures ``consilium report`` writes, taken
from the same functions (consilium/api/reports.py reads a cohort with :func:`cohort_parts` and builds Table 3,
Table 7, the scores table and the cost table from it), so the page and the report agree. The page is made again
only when a file of the cohort folder has changed (:func:`summary_stamp`)."""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from consilium.cohort.completeness import lock_held
from consilium.models.pricing import format_usd
from consilium.reports.compare import cost_table, scores_table, table3, table7
from consilium.reports.consilium.judged import numbers, per_output
from consilium.reports.consilium.stats import mean_sd
from consilium.reports.sources import CohortPart, cohort_parts
from consilium.runfolder.rows import JudgementRow
from consilium.web.page import esc, table

__all__ = ["rubric_means", "summary_body", "summary_rows", "summary_stamp"]

NONE = "—"


def _by(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["model"], r["format"]): r for r in rows}


def rubric_means(part: CohortPart) -> dict[tuple[str, str, str], tuple[float | None, int, int]]:
    """(model, format, rubric) → the mean of the per-output items' scores (whole-case criteria apart, as every
    report mean), how many were scored, and how many items were not evaluable; the pooled model too."""
    found: dict[tuple[str, str, str], tuple[float | None, int, int]] = {}
    groups: dict[tuple[str, str, str], list[JudgementRow]] = defaultdict(list)
    for r in part.data.judgements:  # each item in its model's group and the pooled one, in the items' order
        groups[(r.model, r.format, r.rubric)].append(r)
        if r.model != "pooled":
            groups[("pooled", r.format, r.rubric)].append(r)
    for (model, fmt, rubric), rows in groups.items():
        values = numbers(per_output(rows))
        found[(model, fmt, rubric)] = (mean_sd(values)[0], len(values), len(rows) - len(numbers(rows)))
    return found


def summary_rows(part: CohortPart) -> tuple[list[str], list[dict[str, Any]]]:
    """The rubrics judged, and per model × format (then pooled) the summary's figures."""
    data = part.data
    tokens, costs = _by(table7(data)), _by(cost_table(data))
    means = rubric_means(part)
    rubrics = sorted({r for _, _, r in means})
    rows = []
    for outcome in table3(data):
        key = (outcome["model"], outcome["format"])
        row = {**{k: outcome.get(k) for k in ("model", "format", "arms", "completed", "failed", "consensus_pct",
                                             "mean_rounds")},
               "tokens_per_case": tokens.get(key, {}).get("total_tokens_per_case"),
               "conclusion_mean": tokens.get(key, {}).get("mean_judge_score"),
               "cost_usd_total": costs.get(key, {}).get("cost_usd_total"),
               "judge_cost_usd_total": costs.get(key, {}).get("judge_cost_usd_total"),
               "total_cost_usd_total": costs.get(key, {}).get("total_cost_usd_total")}
        for rubric in rubrics:
            row[rubric] = means.get((*key, rubric), (None, 0, 0))
        rows.append(row)
    return rubrics, rows


def _num(value: float | None, digits: int = 2) -> str:
    return NONE if value is None else f"{value:.{digits}f}"


def _part_html(part: CohortPart) -> str:
    rubrics, rows = summary_rows(part)
    headers = ["model", "format or mode", "arms", "completed", "failed", "consensus %", "mean rounds",
               "tokens per case", "conclusion C1–C8 mean (Table 7)",
               *(f"{r}: mean (scored, not evaluable)" for r in rubrics), "panel cost", "judge cost", "total cost"]
    cells = []
    for row in rows:
        scores = [f"{_num(m)} ({n} scored, {ne} not evaluable)" for m, n, ne in (row[r] for r in rubrics)]
        values = [row["model"], row["format"], row["arms"], row["completed"], row["failed"],
                  _num(row["consensus_pct"], 1), _num(row["mean_rounds"]), _num(row["tokens_per_case"], 0),
                  _num(row["conclusion_mean"]), *scores, format_usd(row["cost_usd_total"]),
                  format_usd(row["judge_cost_usd_total"]), format_usd(row["total_cost_usd_total"])]
        tds = [f'<td class="failed">{esc(v)}</td>' if i == 4 and row["failed"] else f"<td>{esc(v)}</td>"
               for i, v in enumerate(values)]  # the failed arms' count in red
        cells.append("<tr>" + "".join(tds) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    criteria = scores_table(part.data)
    detail = table(("model", "rubric", "criterion", "component", "format", "n", "mean", "sd"),
                   ([esc(r["model"]), esc(r["rubric"]), esc(r["criterion_name"]), esc(r["component"]),
                     esc(r["format"]), esc(r["n"]), esc(_num(r["mean"], 3)), esc(_num(r["sd"], 3))]
                    for r in criteria), attrs='class="criteria"') if criteria else ""
    return (f"<h2>{esc(part.protocol)}</h2><table class=\"summary\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(cells)}</tbody></table>"
            + (f"<details><summary>Judge scores by criterion (the report's scores table)</summary>{detail}</details>"
               if detail else ""))


Stamp = tuple[tuple[str, int, int, int], ...]


def summary_stamp(run_dir: Path) -> Stamp:
    """Every file under the cohort folder (its tables, manifest, traces and judgement records), with its size,
    modification time and inode (an atomic rewrite is a new inode): what the summary is made from, stat'ed only."""
    found: list[tuple[str, int, int, int]] = []
    folders = [str(run_dir)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                        continue
                    stat = entry.stat()
                except OSError:  # gone while listed: the next request sees the folder as it is then
                    continue
                found.append((entry.path, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(sorted(found))


_lock = threading.Lock()
_cache: dict[tuple[Path, int], tuple[tuple[Stamp, bool], str]] = {}


def summary_body(run: int, run_dir: Path) -> str:
    """The summary page's body, made again only when :func:`summary_stamp` has changed (a 1,000-arm cohort's
    records take seconds to read; a stat of each file, milliseconds) or a process took or left the folder's lock
    (a "running" cohort whose process is gone reads as aborted)."""
    stamp = (summary_stamp(run_dir), lock_held(run_dir))
    key = (run_dir.resolve(), run)
    with _lock:
        known = _cache.get(key)
    if known is not None and known[0] == stamp:
        return known[1]
    body = _summary_body(run, run_dir)
    with _lock:
        _cache[key] = (stamp, body)
    return body


def _summary_body(run: int, run_dir: Path) -> str:
    """The summary page's body: one table per protocol of the cohort (the report reads one at a time)."""
    parts = cohort_parts(run_dir)
    done = parts[0].done if parts else None
    notice = f'<p class="partial">Partial cohort: {esc(done.summary())}.</p>' if done is not None and done.partial \
        else ""
    return (f"<h1>Summary: {esc(run_dir.name)}</h1><nav><a href=\"/runs/{run}/\">cohort index</a></nav>{notice}"
            "<p class=\"muted\">Per model and format (or mode), then pooled: the figures of <code>consilium report"
            "</code> (Table 3's outcomes, Table 7's tokens and conclusion mean, the cost table), and each rubric's "
            "mean over its per-output items (whole-case criteria apart), with the items not evaluable.</p>"
            + "".join(_part_html(part) for part in parts))
