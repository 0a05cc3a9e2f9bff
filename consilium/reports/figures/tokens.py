"""Token use per case (ai-consilium.txt Fig. 5): input (blue) and output (orange) stacked, (a) by model
and format, (b) by pipeline stage and format over every model.

Each format's path includes the role assignment, which both formats of a case share: its calls are in
both traces, so a per-format value repeats it, and the experiment-wide total counts it once. Per case
means are over completed arms (Σ tokens / Σ cases), as Table 7 computes them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from consilium.models.usage import stage_order
from consilium.reports.compare import CohortData
from consilium.reports.figures.style import (
    INPUT_COLOUR,
    OUTPUT_COLOUR,
    format_label,
    formats_of,
    new_figure,
    save_figure,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["SHARED_STAGE", "TokenBar", "draw_fig5a", "draw_fig5b", "tokens_by_model", "tokens_by_stage"]

#: The stage both formats of a case share (counted once in the experiment-wide total).
SHARED_STAGE = "role_assignment"


@dataclass(frozen=True)
class TokenBar:
    """Mean tokens per case of one bar: ``model`` and ``format`` (empty where pooled), and ``stage``
    (``"total"`` for a whole path, ``"experiment"`` for both formats with the shared stage once)."""

    model: str
    format: str
    stage: str
    cases: int
    input: float
    output: float

    @property
    def total(self) -> float:
        return self.input + self.output


def _per_case(counter: Counter[str], cases: int, stage: str | None = None) -> tuple[float, float]:
    def part(kind: str) -> float:
        keys = [k for k in counter if k.endswith(f":{kind}") and (stage is None or k == f"{stage}:{kind}")]
        return sum(counter[k] for k in keys) / cases if cases else 0.0

    return part("input"), part("output")


def tokens_by_model(data: CohortData) -> list[TokenBar]:
    """Fig. 5a: per model (sorted) and format, the whole path's tokens per case."""
    rows = []
    for model in sorted({m for m, _ in data.tokens}):
        for fmt in formats_of(f for m, f in data.tokens if m == model):
            counter = data.tokens[(model, fmt)]
            rows.append(TokenBar(model, fmt, "total", counter["cases"], *_per_case(counter, counter["cases"])))
    return rows


def tokens_by_stage(data: CohortData) -> list[TokenBar]:
    """Fig. 5b, pooled over models: per stage in pipeline order, one bar per format; then each format's
    path total; then the experiment-wide total: every format's stages but the shared one, plus the
    shared stage's tokens per case once (its mean over every completed arm)."""
    pooled: dict[str, Counter[str]] = {}
    for (_, fmt), counter in data.tokens.items():
        pooled.setdefault(fmt, Counter()).update(counter)
    formats = formats_of(pooled)
    present = {k.rsplit(":", 1)[0] for c in pooled.values() for k in c if ":" in k}
    stages = stage_order(present)
    rows = [TokenBar("", fmt, stage, pooled[fmt]["cases"], *_per_case(pooled[fmt], pooled[fmt]["cases"], stage))
            for stage in stages for fmt in formats]
    rows += [TokenBar("", fmt, "total", pooled[fmt]["cases"], *_per_case(pooled[fmt], pooled[fmt]["cases"]))
             for fmt in formats]
    everything: Counter[str] = Counter()
    for counter in pooled.values():
        everything.update(counter)
    inp, out = _per_case(everything, everything["cases"], SHARED_STAGE)
    for counter in pooled.values():
        path, own = _per_case(counter, counter["cases"]), _per_case(counter, counter["cases"], SHARED_STAGE)
        inp, out = inp + path[0] - own[0], out + path[1] - own[1]
    rows.append(TokenBar("", "", "experiment", everything["cases"], inp, out))
    return rows


def _scale(rows: list[TokenBar]) -> tuple[float, str]:
    """Thousands once any bar reaches 10,000 tokens (as the paper shows them), else tokens."""
    return (1000.0, "thousands of tokens per case") if max((r.total for r in rows), default=0) >= 10_000 \
        else (1.0, "tokens per case")


def _stacked(axis: Axes, rows: list[TokenBar], labels: list[str], note: str) -> None:
    divisor, unit = _scale(rows)
    ys = list(range(len(rows)))
    axis.barh(ys, [r.input / divisor for r in rows], color=INPUT_COLOUR, label="input (prompt)")
    bars = axis.barh(ys, [r.output / divisor for r in rows], left=[r.input / divisor for r in rows],
                     color=OUTPUT_COLOUR, label="output (completion)")
    digits = 1 if divisor > 1 else 0
    axis.bar_label(bars, [f"{r.total / divisor:,.{digits}f}" for r in rows], padding=3, fontsize=7)
    axis.set_yticks(ys, labels)
    axis.invert_yaxis()
    axis.set_xlim(0, max(r.total for r in rows) / divisor * 1.15)
    axis.set_xlabel(unit)
    axis.figure.supxlabel(note, fontsize=7.5)


def draw_fig5a(rows: list[TokenBar], out: Path) -> Path:
    figure, axis = new_figure(6.6, 1.9 + 0.34 * len(rows))
    _stacked(axis, rows, [f"{r.model}, {format_label(r.format)[0]} (n = {r.cases})" for r in rows],
             "F free-form, S structured; each path includes the role assignment\nn = completed arms")
    figure.suptitle("Tokens per case by model and format (ai-consilium.txt Fig. 5a)", fontsize=9.5, fontweight="bold")
    figure.legend(loc="outside right center")
    return save_figure(figure, out, "fig5a_tokens_by_model")


def _stage_label(row: TokenBar) -> str:
    if row.stage == "experiment":
        return f"Experiment total, shared stage once (n = {row.cases})"
    fmt = format_label(row.format)[0]
    if row.stage == "total":
        return f"Path total, {fmt} (n = {row.cases})"
    return f"{row.stage.replace('_', ' ').capitalize()}, {fmt}" + (" (shared)" if row.stage == SHARED_STAGE else "")


def draw_fig5b(rows: list[TokenBar], out: Path) -> Path:
    figure, axis = new_figure(7.2, 1.9 + 0.3 * len(rows))
    _stacked(axis, rows, [_stage_label(r) for r in rows],
             "F free-form, S structured; the shared role assignment is in each format's path\n"
             "but counted once in the experiment total; n = completed arms")
    first_total = next(i for i, r in enumerate(rows) if r.stage == "total")
    axis.axhline(first_total - 0.5, color="black", linewidth=0.6)
    figure.suptitle("Tokens per case by pipeline stage and format, all models (ai-consilium.txt Fig. 5b)",
                    fontsize=9.5, fontweight="bold")
    figure.legend(loc="outside right center")
    return save_figure(figure, out, "fig5b_tokens_by_stage")
