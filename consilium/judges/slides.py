"""The slides a judge is sent: each image beside its caption to a vision judge of a rubric that reads
them (opentumorboard.txt App. C.1 L170, "Each slide is supplied as its image followed by its caption"),
else the captions alone, which the case text holds, and a note in the judgement saying the images were not
sent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.cases import Case
from consilium.graphs.board.slides import slide_captions
from consilium.judges.rubric import Rubric
from consilium.models import ChatModel

__all__ = ["JudgeSlides", "judge_slides"]


@dataclass(frozen=True)
class JudgeSlides:
    images: tuple[str, ...] = ()
    captions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def message_fields(self) -> dict[str, Any]:
        """Keywords for :func:`consilium.judges.prompting.judge_messages`."""
        return {"images": self.images, "captions": self.captions}


def judge_slides(rubric: Rubric, trace: Any, case: Case, model: ChatModel) -> JudgeSlides:
    """The trace's slide images (``config.images``, paired in order with the case's captioned slides)
    as the judge model can take them."""
    images = tuple(str(p) for p in getattr(trace.config, "images", ()))  # a board's or a turn's (TurnRecord)
    if not images or not rubric.slide_images:
        return JudgeSlides()
    if not model.supports_images:
        return JudgeSlides(notes=(f"{len(images)} slide image(s) not sent: judge model {model.model_id} does not "
                                  "accept images; the captions were sent",))
    missing = [p for p in images if not Path(p).is_file()]
    captions = slide_captions(case)
    if missing or len(captions) != len(images):
        why = f"{len(missing)} not found (e.g. {missing[0]})" if missing else "they do not match the case's slides"
        return JudgeSlides(notes=(f"{len(images)} slide image(s) not sent: {why}; the captions were sent",))
    return JudgeSlides(images, captions)
