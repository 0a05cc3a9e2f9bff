"""Calibration reports: a Markdown table, a CSV pandas can read, and judge-vs-physician plots."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consilium.calibration.agreement import BINARY, ORDINAL, AgreementRow, as_dict, describe
from consilium.calibration.pairs import Pair
from consilium.fileio import write_text_atomic
from consilium.redact import redact_figure

__all__ = ["agreement_markdown", "confusion_plot", "write_agreement"]


def _cell(value: object) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def agreement_markdown(rows: Sequence[AgreementRow], *, binary: bool, title: str, notes: Sequence[str],
                       scope: Sequence[dict[str, Any]] = ()) -> str:
    """The statistics table; with ``scope`` (:func:`consilium.calibration.agreement.scope_rows`), the
    agreement on scope after it."""
    keys = [*(BINARY if binary else ORDINAL), "alpha"]
    lines = [f"# {title}", "", *[f"- {n}" for n in notes], "",
             "| criterion | n | cases | " + " | ".join(keys) + " |", "|---|---|---|" + "---|" * len(keys)]
    for row in rows:
        lines.append(f"| {row.criterion} | {row.n} | {row.cases} | "
                     + " | ".join(describe(row, k) for k in keys) + " |")
    if scope:
        columns = list(scope[0])
        lines += ["", "## Scope agreement", "",
                  "The table above reads in-scope scores only (n: the pairs both scored in scope). Here, whether "
                  "the judge and each physician put a unit in scope or out of scope: percent agreement over "
                  "the pairs (physicians among themselves: within each unit, averaged over units).", "",
                  "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in scope]
    return "\n".join(lines) + "\n"


def _csv(rows: Sequence[AgreementRow] | Sequence[dict[str, Any]]) -> str:
    records = [r if isinstance(r, dict) else as_dict(r) for r in rows]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]))
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def confusion_plot(pairs: Sequence[Pair], scale: Sequence[int], path: Path, title: str) -> Path:
    """One confusion matrix (physician rows × judge columns) per criterion, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    criteria = sorted({p.criterion for p in pairs})
    columns = min(4, len(criteria)) or 1
    rows = (len(criteria) + columns - 1) // columns or 1
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 3.0 * rows), squeeze=False)
    labels = list(scale)
    for axis, name in zip(axes.flat, criteria, strict=False):
        matrix = np.zeros((len(labels), len(labels)), dtype=int)
        for p in pairs:
            if p.criterion == name and p.physician in labels and p.judge in labels:
                matrix[labels.index(int(p.physician)), labels.index(int(p.judge))] += 1
        axis.imshow(matrix, cmap="Blues")
        for (i, j), count in np.ndenumerate(matrix):
            axis.text(j, i, str(count), ha="center", va="center", fontsize=8)
        axis.set_xticks(range(len(labels)), [str(v) for v in labels])
        axis.set_yticks(range(len(labels)), [str(v) for v in labels])
        axis.set_xlabel("judge")
        axis.set_ylabel("physician")
        axis.set_title(name, fontsize=9)
    for axis in list(axes.flat)[len(criteria):]:
        axis.axis("off")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    redact_figure(figure).savefig(tmp, dpi=110)
    plt.close(figure)
    tmp.replace(path)
    return path


def write_agreement(out: Path, rows: Sequence[AgreementRow], pairs: Sequence[Pair], *, binary: bool,
                    scale: Sequence[int], title: str, notes: Sequence[str],
                    scope: Sequence[dict[str, Any]] = ()) -> list[Path]:
    """agreement.md, agreement.csv, agreement.png and, with ``scope`` rows, agreement.scope.csv."""
    return [
        write_text_atomic(out / "agreement.md", agreement_markdown(rows, binary=binary, title=title, notes=notes,
                                                                   scope=scope)),
        write_text_atomic(out / "agreement.csv", _csv(rows)),
        *([write_text_atomic(out / "agreement.scope.csv", _csv(scope))] if scope else []),
        confusion_plot(pairs, scale, out / "agreement.png", title),
    ]
