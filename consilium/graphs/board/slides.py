"""A board case's slides as the runs and the judges read them: image paths and their captions.

Apart from the board's running part (run.py) so that reading them never loads LangGraph."""

from __future__ import annotations

from pathlib import Path

from consilium.cases import Case
from consilium.errors import UserError

__all__ = ["slide_captions", "slide_images"]


def slide_images(case: Case, case_file: Path) -> tuple[str, ...]:
    """Paths of the case's slide images, resolved against the case file's folder, which they
    must not leave; a missing file is the user's to fix."""
    folder = case_file.resolve().parent
    images = []
    for n, slide in enumerate(case.slides):
        if not slide.image:
            continue
        path = (folder / slide.image).resolve()
        if not path.is_relative_to(folder):
            raise UserError(f"{case_file}: slides.{n}.image: {slide.image!r} points outside the case's folder")
        if not path.is_file():
            raise UserError(f"{case_file}: slides.{n}.image: file not found: {path}")
        images.append(str(path))
    return tuple(images)


def slide_captions(case: Case) -> tuple[str, ...]:
    """The caption of each slide that has an image, numbered as the case text numbers it, in the order of
    :func:`slide_images`: a slide is sent as its image followed by its caption (opentumorboard.txt App. B.1,
    B.2, C.1)."""
    return tuple(f"Slide {n}: {slide.caption}" for n, slide in enumerate(case.slides, 1) if slide.image)
