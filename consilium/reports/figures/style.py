"""What every figure shares: the look of a paper's figure, the orders and labels of models, formats and
criteria, and an atomic PNG + PDF writer. Matplotlib is used without pyplot (no GUI backend, no global
figure state): a :class:`~matplotlib.figure.Figure` renders through Agg when saved. Within :func:`marked_figures`
every figure saved carries a mark (a partial cohort's, consilium/reports/partial.py), drawn above it and
written in the files' metadata (the PNG's Description, the PDF's Subject)."""

from __future__ import annotations

import os
import re
import tempfile
import textwrap
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium.agents.records import FORMATS
from consilium.errors import UserError
from consilium.judges.rubric import Criterion, load_rubric, rubric_names
from consilium.redact import redact_figure
from consilium.reports.compare import CohortData
from consilium.reports.figures.fonts import cached_font_subsets
from consilium.runfolder.rows import ArmRow

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

__all__ = [
    "FORMAT_COLOURS",
    "FORMAT_MARKERS",
    "INPUT_COLOUR",
    "OUTPUT_COLOUR",
    "POOLED",
    "RUBRIC",
    "SUFFIXES",
    "completed_arms",
    "criterion_label",
    "format_label",
    "formats_of",
    "integer_axis",
    "marked_figures",
    "models_of",
    "new_figure",
    "paper_style",
    "per_output_criteria",
    "remove_figure",
    "rubric_scale",
    "save_figure",
]

#: The rubric of Figs. 6–8 (ai-consilium.txt).
RUBRIC = "ai-consilium"
#: The ``model`` of a row pooling every model, last in every per-model figure.
POOLED = "pooled"
#: Each figure is written in these formats, same stem.
SUFFIXES = (".png", ".pdf")
#: ai-consilium.txt Fig. 3c: free-form blue circles, structured orange squares; Fig. 5: input blue, output orange.
FORMAT_COLOURS = {"free-form": "#1f77b4", "structured": "#ff7f0e"}
FORMAT_MARKERS = {"free-form": "o", "structured": "s"}
INPUT_COLOUR, OUTPUT_COLOUR = "#1f77b4", "#ff7f0e"
#: Inches around a marked figure's tight area (the mark lies above the figure, which grows to hold it).
TIGHT_PAD = 0.05
#: The mark every figure saved now carries (None: none); set by :func:`marked_figures`.
_MARK: ContextVar[str | None] = ContextVar("figure_mark", default=None)

_STYLE: dict[Any, Any] = {  # matplotlib types its keys as a Literal of every setting
    "font.size": 8.5, "axes.titlesize": 9.5, "axes.titleweight": "bold", "axes.labelsize": 8.5,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 7.5, "legend.frameon": False,
    "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 100, "savefig.dpi": 200,
    "pdf.fonttype": 42, "font.family": "DejaVu Sans",
}


def paper_style() -> AbstractContextManager[None]:
    """Matplotlib settings for every figure (read when an artist is made, so hold it while drawing)."""
    import matplotlib

    return matplotlib.rc_context(_STYLE)


def new_figure(width: float, height: float, *, rows: int = 1, columns: int = 1, **kwargs: Any) -> tuple[Figure, Any]:
    """A figure and its axes (one axis, or an array of them), drawn with the constrained layout."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # At the PNG's resolution, so the one layout save_figure runs is the one the PNG was laid out at before.
    dpi = matplotlib.rcParams["savefig.dpi"]
    figure = Figure(figsize=(width, height), layout="constrained",
                    dpi=matplotlib.rcParams["figure.dpi"] if dpi == "figure" else dpi)
    FigureCanvasAgg(figure)  # the canvas the layout and the PNG are drawn on
    kwargs.setdefault("squeeze", True)
    return figure, figure.subplots(rows, columns, **kwargs)


def integer_axis(axis: Any, which: str = "x") -> None:
    """Ticks at whole numbers only (counts, rounds)."""
    from matplotlib.ticker import MaxNLocator

    (axis.xaxis if which == "x" else axis.yaxis).set_major_locator(MaxNLocator(integer=True))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@contextmanager
def marked_figures(mark: str | None) -> Iterator[None]:
    """Every figure saved inside carries ``mark`` (``partial: 8 of 40 planned arms, cohort aborted``), so an
    image copied out of its report still says what its table's title says; None: no mark."""
    token = _MARK.set(mark)
    try:
        yield
    finally:
        _MARK.reset(token)


def save_figure(figure: Figure, out: Path, stem: str) -> Path:
    """Write ``stem.png`` and ``stem.pdf`` in ``out``, each to a temporary file beside it and then
    renamed, so a reader never sees half a figure; the PNG's path is returned. Inside :func:`marked_figures`
    the mark is drawn above the figure and kept in each file's metadata."""
    mark = _MARK.get()
    if mark is not None:  # above the figure, which grows to hold it (no title or label is covered)
        figure.text(0.5, 1.0, f"[{mark}]", ha="center", va="bottom", fontsize=8, color="#b22222")
    redact_figure(figure)  # its texts masked as every file's (consilium/redact.py)
    bbox = _lay_out(figure, tight=mark is not None)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for suffix in SUFFIXES:
            target = out / f"{stem}{suffix}"
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{suffix}", dir=out)
            os.close(fd)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give what a plain open() would
            try:
                # No creation date in the PDF, so the same cohort gives the same bytes.
                with cached_font_subsets():
                    figure.savefig(tmp, format=suffix[1:], metadata=_metadata(suffix, mark), bbox_inches=bbox)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    except OSError as exc:
        raise UserError(f"{out / stem}: cannot write the figure ({exc.strerror or exc})") from None
    return out / f"{stem}.png"


def _lay_out(figure: Figure, *, tight: bool) -> Bbox | None:
    """Lay ``figure`` out once (one draw without rendering) and keep that layout for every format: with a
    layout engine, or ``bbox_inches="tight"``, savefig lays the figure out again before each file, a second
    whole draw per file. With ``tight`` (a mark drawn above the figure), the area that holds every artist,
    padded, in inches; else None (the figure's own area)."""
    import matplotlib

    figure.draw_without_rendering()
    # No engine at all (not "none", a placeholder savefig would still lay out for); the axes keep their places.
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        figure.set_layout_engine(None)
    return figure.get_tightbbox().padded(TIGHT_PAD) if tight else None


def _metadata(suffix: str, mark: str | None) -> dict[str, Any]:
    """No creation date in the PDF; the mark as the PNG's Description and the PDF's Subject."""
    if suffix == ".pdf":
        return {"CreationDate": None, **({"Subject": mark} if mark else {})}
    return {"Description": mark} if mark else {}


def remove_figure(out: Path, stem: str) -> None:
    """Remove a figure left by an earlier run that this run has no data for (it would be stale)."""
    for suffix in SUFFIXES:
        (out / f"{stem}{suffix}").unlink(missing_ok=True)


def completed_arms(data: CohortData) -> list[ArmRow]:
    return [a for a in data.arms if a.completed]


def models_of(data: CohortData) -> list[str]:
    """The cohort's models, sorted (a failed arm's model included)."""
    return sorted({a.model for a in data.arms if a.model})


def formats_of(keys: Iterable[str]) -> list[str]:
    """Formats in the paper's order (free-form, structured), any other after them."""
    seen = set(keys)
    return [f for f in FORMATS if f in seen] + sorted(seen - set(FORMATS))


def format_label(fmt: str) -> str:
    return fmt[:1].upper() + fmt[1:]


def rubric_scale(rubric: str = RUBRIC) -> tuple[int, int]:
    """The lowest and highest score of a shipped rubric's scale (0–3 for ai-consilium)."""
    scale = [s for s in load_rubric(rubric).scale if s >= 0]
    return min(scale), max(scale)


def per_output_criteria(rubric: str = RUBRIC, component: str = "conclusion") -> list[Criterion]:
    """The rubric's criteria scored per output for a component, in the rubric's order: C1–C8 of
    ai-consilium.txt; the whole-case criteria (panel adequacy, complexity, overall quality) are not."""
    if rubric not in rubric_names():
        return []
    return [c for c in load_rubric(rubric).criteria if component in c.components and not c.whole_case]


def criterion_label(criterion: Criterion, width: int = 0) -> str:
    """``"1: Factual Correctness and Source Grounding"`` (criterion c1), wrapped to ``width`` if given."""
    number = re.fullmatch(r"c(\d+)", criterion.id)
    label = f"{number.group(1)}: {criterion.name}" if number else criterion.name
    return "\n".join(textwrap.wrap(label, width)) if width else label
