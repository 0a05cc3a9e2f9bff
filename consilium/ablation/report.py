"""An ablation's outputs in its folder: ``arms.csv``, ``pairs.csv``, ``stats.csv``, ``stop_reasons.csv``,
``calls.csv``, for leave-one-out ``contributions.csv``, ``report.md`` and ``forest.png``/``.pdf``; the ablated
traces and their judgements under ``arms/``. The folder is new each run (:func:`new_folder`): nothing is
overwritten."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from consilium.ablation.figures import forest_plot
from consilium.cohort.completeness import Completeness
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.fileio import make_folder, write_json_atomic, write_text_atomic
from consilium.reports.partial import marked_markdown, partial_figures, partial_rows
from consilium.runfolder.layout import ABLATION_RECORD, ABLATIONS

__all__ = ["Tables", "new_folder", "write_outputs"]

Tables = dict[str, list[dict[str, Any]]]

_STAT_COLUMNS = ("group", "model", "format", "metric", "cases", "pairs_left_out", "mean_original", "mean_ablated",
                 "mean_difference", "ci_low", "ci_high", "rank_biserial", "wilcoxon_w", "p", "p_holm", "note")


def new_folder(run_dir: Path, kind: str, out: Path | None, *, judges: Sequence[str] = ()) -> Path:
    """``out`` if it does not exist yet (refused otherwise), else ``RUN_DIR/ablate/<kind>/run-<n>``, the next n;
    with its ``ablation.json``, which marks it as a run of its own: a command given the cohort's folder never
    reads it as the cohort's (consilium/runfolder/layout.py)."""
    if out is not None:
        if out.exists():
            raise UserError(f"--out: {out}: already exists (an ablation never writes over one); name a new folder")
        folder = make_folder(out)
    else:
        base = run_dir / ABLATIONS / kind
        n = 1
        while (base / f"run-{n}").exists():
            n += 1
        folder = make_folder(base / f"run-{n}")
    write_json_atomic(folder / ABLATION_RECORD, {"kind": kind, "cohort": str(run_dir.resolve()), "judges": list(judges),
                                        "created_at": datetime.now(UTC).isoformat()})
    return folder


#: Below this a p-value is printed as ``< 1e-4`` (stats.csv keeps the value as computed).
P_SHOWN_FROM = 1e-4


def _cell(value: Any, column: str = "") -> str:
    if column in ("p", "p_holm") and isinstance(value, float) and value < P_SHOWN_FROM:
        return "< 1e-4"
    if value is None or value == "":
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-3 and value else f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value).replace("|", "\\|")


def _markdown(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return "(none)\n"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c), c) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_outputs(out: Path, kind: str, tables: Tables, summary: list[str],
                  done: Completeness | None = None) -> list[Path]:
    """Every table as CSV, the figure and report.md; returns the files written. Of a partial cohort
    (``done``), each says so (consilium/reports/partial.py): its pairs are of its finished arms only."""
    written = [write_csv(out / f"{name}.csv", partial_rows(done, rows), fields=_STAT_COLUMNS if name == "stats" else ())
               for name, rows in tables.items()]
    with partial_figures(done):
        figure = forest_plot(tables["stats"], out, f"consilium ablate --kind {kind}")
    parts = [f"# Ablation: {kind}\n", *[f"- {line}" for line in summary], "",
             "## Paired differences (ablated − original)\n",
             "One value per case (its ablated arms averaged); 95 % case-clustered bootstrap CI; rank-biserial "
             "from the signed ranks; Wilcoxon signed-rank (zero_method wilcox, two-sided); Holm across the "
             "groups of one model, format and metric (`primary`, whose arms are also its categories', apart); "
             "a p below 1e-4 is shown as < 1e-4 (stats.csv has its value).\n",
             _markdown(tables["stats"], _STAT_COLUMNS)]
    if "contributions" in tables:
        parts += ["## Which specialist mattered (mean score drop when left out)\n",
                  _markdown(tables["contributions"], ("category", "model", "format", "metric", "cases", "mean_drop",
                                                      "ci_low", "ci_high", "p_holm"))]
    parts += ["## Stop reasons (original → ablated)\n",
              _markdown(tables["stop_reasons"], ("group", "model", "format", "original", "ablated", "arms")),
              "## Calls reused from the original traces\n",
              _markdown(tables["calls"], ("group", "model", "format", "arms", "reused_calls", "new_calls",
                                          "reused_share"))]
    if figure is not None:
        parts.append(f"![forest plot]({figure.name})\n")
        written.append(figure)
    written.append(write_text_atomic(out / "report.md", marked_markdown(done, "\n".join(parts))))
    return written
