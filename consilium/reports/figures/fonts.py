"""The PDFs' fonts, subset once per process: each PDF embeds its text's fonts as TrueType (``pdf.fonttype``
42, so the text stays text a journal's workflow can edit and search), cut down to the glyphs it uses.
Matplotlib cuts a fresh subset from the font file for every PDF, with fontTools decoding the whole font each
time (about 0.15 s a font, most of a PDF's writing time), although a cohort's figures, and the next
cohort's, ask for the same few glyph sets again. :func:`cached_font_subsets` keeps each subset's bytes,
keyed on the font file and the glyphs, and hands matplotlib a copy read back from them: the font
embedded is byte for byte the one matplotlib cuts itself.

It replaces matplotlib's ``_backend_pdf_ps.get_glyphs_subset`` while a figure's PDF is written (matplotlib
has no public hook for it); with a matplotlib whose function is not the one this wraps (before 3.11, which
took characters and returned bytes), nothing is replaced and every PDF is cut afresh, as before.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from io import BytesIO
from typing import Any

__all__ = ["SUBSETS_KEPT", "cached_font_subsets", "subsets_cut"]

#: Subsets kept (least recently used dropped first); one is a font's bytes for a figure's glyphs, ~12 KB.
SUBSETS_KEPT = 256


#: Matplotlib's own function, kept while :func:`cached_font_subsets` stands in for it.
_MATPLOTLIB: list[Any] = []


@contextmanager
def cached_font_subsets() -> Iterator[None]:
    """While inside, a PDF written by matplotlib takes its font subsets from this process's cache."""
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    original = getattr(pdf_ps, "get_glyphs_subset", None)
    if original is None or original is _cached_subset or not _wrappable(pdf_ps, original):
        yield  # not matplotlib 3.11's function, or already inside
        return
    _MATPLOTLIB[:] = [original]
    pdf_ps.get_glyphs_subset = _cached_subset
    try:
        yield
    finally:
        pdf_ps.get_glyphs_subset = original


def subsets_cut() -> int:
    """How many subsets this process has cut from a font file (each other PDF's took a kept one)."""
    return _subset.cache_info().misses


def _wrappable(pdf_ps: Any, function: Any) -> bool:
    """Matplotlib 3.11's form: (fontfile, glyphs) → a context manager of SubsetResults (font, glyph_index_map)."""
    return hasattr(pdf_ps, "SubsetResults") and list(inspect.signature(function).parameters) == ["fontfile", "glyphs"]


def _cached_subset(fontfile: Any, glyphs: Iterable[int]) -> Any:
    from fontTools.ttLib import TTFont
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    data, index_map = _subset(fontfile, frozenset(glyphs))
    # recalcTimestamp=False: written back, the font keeps the bytes of matplotlib's own subset
    return pdf_ps.SubsetResults(TTFont(BytesIO(data), recalcTimestamp=False), dict(index_map))._as_cm()


@functools.lru_cache(maxsize=SUBSETS_KEPT)
def _subset(fontfile: Any, glyphs: frozenset[int]) -> tuple[bytes, tuple[tuple[int, int], ...]]:
    """The subset matplotlib cuts: its bytes and its glyph index map (``fontfile`` names the face too)."""
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    font_as_file: Any = pdf_ps.font_as_file  # untyped in matplotlib
    with _MATPLOTLIB[0](fontfile, set(glyphs)) as subset:
        return font_as_file(subset.font).getvalue(), tuple(sorted(subset.glyph_index_map.items()))
