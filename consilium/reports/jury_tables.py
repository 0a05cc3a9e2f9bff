"""``consilium jury``'s CSVs and markdown: agreement, self-preference and length bias of a jury."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from consilium.cohort.completeness import Completeness
from consilium.errors import UserError
from consilium.fileio import in_the_way, write_text_atomic
from consilium.reports.jury import JuryData, length_rows, self_preference_rows
from consilium.reports.jury_agreement import alpha_rows, kappa_rows, scope_rows
from consilium.reports.partial import marked_markdown, partial_figures, partial_rows

__all__ = ["MARK", "TABLES", "check_ours", "jury_markdown", "write_jury"]

#: Each table's file name part and the function computing its rows.
TABLES = {"alpha": alpha_rows, "kappa": kappa_rows, "scope": scope_rows, "self_preference": self_preference_rows,
          "length_bias": length_rows}


#: Below this a p-value is shown as ``< 1e-4`` in the markdown (its CSV keeps the value as computed).
P_SHOWN_FROM = 1e-4


def _cell(value: object, key: str = "", *, markdown: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if key.startswith("p_"):  # a p-value is never rounded to 0: the CSV has it as computed
            return ("< 1e-4" if value < P_SHOWN_FROM else f"{value:.4f}") if markdown else repr(value)
        return f"{value:.4f}"
    return str(value)


def _csv(rows: Sequence[dict[str, object]]) -> str:
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _cell(v, k) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def _table(rows: Sequence[dict[str, object]]) -> list[str]:
    """A markdown table; an empty cell is "n/a" for a statistic (its row's note says why), "–" otherwise."""
    if not rows:
        return ["(none)"]
    keys = list(rows[0])
    return ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys),
            *("| " + " | ".join(_cell(row[k], k, markdown=True) or ("–" if k == "note" or row[k] == "" else "n/a")
                                for k in keys)
              + " |" for row in rows)]


def _scope_lines(data: JuryData, tables: dict[str, list[dict[str, object]]]) -> list[str]:
    if data.out_of_scope is None:
        return [f"The rubric has no out-of-scope score: every score is a point of its scale "
                f"({', '.join(str(s) for s in data.scale)}).", ""]
    return ["## Scope agreement", "",
            f"Whether each judge put the item in scope or out of scope ({data.out_of_scope}): percent "
            "agreement within an item, averaged over the items two judges or more decided. The out-of-scope "
            f"score is no point of the scale: α, κ, self-preference and length bias read the in-scope scores "
            f"({', '.join(str(s) for s in data.scale)}) only.", "", *_table(tables["scope"]), ""]


def jury_markdown(data: JuryData, tables: dict[str, list[dict[str, object]]]) -> str:
    rubric = data.rubric
    judges = ", ".join(f"{m.judge} ({m.model}, family {m.family})" for m in data.members)
    lines = [MARK, f"# Jury: {rubric.name} v{rubric.version}", "",
             f"{len(data.members)} judges: {judges}.", "",
             f"{len(data.answers)} answers, {len(data.units)} items; {data.ties} verdicts met a tie (each stated "
             f"in the item's verdict.tie); {data.left_out} not-evaluable votes left out of their verdicts. Verdict: "
             + ("majority (a tie is not evaluable)" if tables["alpha"][0]["level"] == "nominal"
                else "median (an even split: the lower middle)") + ".", "",
             f"Figure: `jury.{rubric.name}.png` (α per criterion; κ per judge pair, all criteria).", "",
             "## Inter-judge agreement: Krippendorff's α", "",
             "percent_agreement = the share of agreeing judge pairs within an item, averaged over the items "
             "with two scores or more; n/a: the note says why.", "", *_table(tables["alpha"]), "",
             "## Pairwise Cohen's κ (quadratic weights)", "",
             "percent_agreement = the share of the items both judges scored with the same score.", "",
             *_table(tables["kappa"]), "", *_scope_lines(data, tables),
             "## Self-preference (answers of panels of the judge's own family)", "",
             "difference = the judge's mean score minus the other judges' mean on the same items (scored in "
             "scope), per answer then over answers; 95% t interval over answers.", "",
             *_table(tables["self_preference"]), "",
             "## Length bias: Spearman's ρ of score with answer length", "",
             "An answer's score is the mean of its items scored in scope (not evaluable and out of scope left "
             "out); n/a where a side is constant or fewer than three answers were scored.", "",
             *_table(tables["length_bias"]), ""]
    return "\n".join(lines)


#: The first line of the markdown: the mark that the report's files are ``consilium jury``'s own.
MARK = "<!-- written by consilium jury -->"


def check_ours(out: Path, name: str) -> None:
    """Refuse, before anything is written, to replace a file ``consilium jury`` did not write: a report
    file of the rubric is replaced only beside this rubric's markdown with its mark (a re-run), the files of
    a report carrying the mark of its markdown (:func:`consilium.fileio.in_the_way`)."""
    targets = [out / f"jury.{name}.{key}.csv" for key in TABLES] + [
        out / f"jury.{name}{suffix}" for suffix in (".md", ".png", ".pdf")]
    markdown = out / f"jury.{name}.md"

    def report_mark(_: Path) -> dict[str, str] | None:
        return {} if markdown.is_file() and markdown.read_text(encoding="utf-8").startswith(MARK) else None

    found = in_the_way(targets, {}, report_mark)
    links = [f for f in found if f.why == "not a file"]
    if links:
        raise UserError(f"{links[0].path}: not a file `consilium jury` wrote (a link or a folder); nothing was "
                        "written (move it, or give --out another folder)")
    if found:
        raise UserError(f"{found[0].path}: exists and is not a file `consilium jury` wrote; nothing was written "
                        "(move it, or give --out another folder)")


def write_jury(out: Path, data: JuryData, done: Completeness | None = None) -> list[Path]:
    """The CSVs (scope agreement only for a rubric with an out-of-scope score), the markdown and the figure
    (α per criterion, κ per judge pair); their paths. A file of the report that ``consilium jury`` did not
    write is never replaced (:func:`check_ours`). Of a partial cohort (``done``), each says so
    (consilium/reports/partial.py)."""
    from consilium.reports.figures.jury import write_jury_figure

    name = data.rubric.name
    check_ours(out, name)
    tables = {key: rows(data) for key, rows in TABLES.items()}
    paths = [write_text_atomic(out / f"jury.{name}.{key}.csv", _csv(partial_rows(done, rows)))
             for key, rows in tables.items() if rows or key != "scope"]
    paths.append(write_text_atomic(out / f"jury.{name}.md", marked_markdown(done, jury_markdown(data, tables))))
    with partial_figures(done):
        paths.append(write_jury_figure(out, f"jury.{name}", data, tables["alpha"], tables["kappa"]))
    return paths
