"""The jury figure (``consilium jury``): Krippendorff's α per criterion (left) and the judge × judge
quadratic-weighted κ pooled over the criteria (right). The numbers are :mod:`consilium.reports.jury_agreement`'s;
an undefined α or κ is drawn as an empty bar or a grey cell marked "n/a"."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from consilium.reports.figures.style import new_figure, paper_style, save_figure
from consilium.reports.jury import ALL, JuryData

__all__ = ["write_jury_figure"]


def _short(name: str, width: int = 34) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1):]


def write_jury_figure(out: Path, stem: str, data: JuryData, alpha: Sequence[dict[str, object]],
                      kappa: Sequence[dict[str, object]]) -> Path:
    judges = [m.judge for m in data.members]
    matrix = np.full((len(judges), len(judges)), np.nan)
    np.fill_diagonal(matrix, 1.0)
    for row in kappa:
        if row["criterion"] == ALL and isinstance(row["kappa"], float):
            a, b = judges.index(str(row["judge_a"])), judges.index(str(row["judge_b"]))
            matrix[a, b] = matrix[b, a] = row["kappa"]
    with paper_style():
        figure, (left, right) = new_figure(8.0, 3.4, columns=2)
        names = [str(r["criterion"]) for r in alpha]
        values = [r["alpha"] if isinstance(r["alpha"], float) else 0.0 for r in alpha]
        colours = ["#7f7f7f" if n == ALL else "#1f77b4" for n in names]
        left.barh(range(len(names)), values, color=colours)
        for y, row in enumerate(alpha):
            value = row["alpha"]
            text = f"{value:.2f}" if isinstance(value, float) else "n/a"
            left.text(value if isinstance(value, float) and value > 0 else 0.0, y, " " + text, va="center",
                      fontsize=7)
        left.set_yticks(range(len(names)), [_short(n) for n in names])
        left.invert_yaxis()
        left.axvline(0, color="black", linewidth=0.6)
        left.set_xlim(min(-0.1, min(values) - 0.1), 1.15)
        scope = ", in-scope scores" if data.out_of_scope is not None else ""
        left.set_xlabel(f"Krippendorff's α ({alpha[0]['level'] if alpha else ''}{scope})")
        left.set_title("Agreement per criterion")
        shown = np.ma.masked_invalid(matrix)
        image = right.imshow(shown, vmin=-1, vmax=1, cmap="RdBu")
        right.set_facecolor("#dddddd")
        for i in range(len(judges)):
            for j in range(len(judges)):
                cell = matrix[i, j]
                right.text(j, i, "n/a" if math.isnan(cell) else f"{cell:.2f}", ha="center", va="center", fontsize=7,
                           color="white" if not math.isnan(cell) and abs(cell) > 0.6 else "black")
        models = [m.model for m in data.members]  # shorter than specs, when they tell the judges apart
        labels = [_short(m, 24) for m in models] if len(set(models)) == len(models) else [_short(j, 24) for j in judges]
        right.set_xticks(range(len(judges)), labels, rotation=30, ha="right")
        right.set_yticks(range(len(judges)), labels)
        right.set_title("Cohen's κ (quadratic), all criteria")
        figure.colorbar(image, ax=right, shrink=0.8)
        return save_figure(figure, out, stem)
