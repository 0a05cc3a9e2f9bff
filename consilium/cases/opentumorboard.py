"""OpenTumorBoard's released data as consilium cases (AnqiLi24/OpenTumorBoard, ``src/build_benchmark.py``
writes the format; the Hugging Face dataset ships it as ``data/*.jsonl.gz``).

Read: ``task1_<split>.jsonl`` (Board Simulation: one record per case, ``simulation_id``, ``case_summary``,
``slides`` as one string of ``<image> caption`` lines, ``reference_conclusion``), ``task2_<split>.jsonl``
(Specialist Turn: one record per question, ``qa_id``, ``qa_type``, ``target_specialist_role``,
``question``, ``reference_answer``) and the ShareGPT manifests of ``test_inputs/`` (the same records under
``metadata``; an image manifest also lists each slide's image), gzip or not. A case is one recording's
case (``video_dir``/``video_uid`` and ``case_id``): its Board Simulation record and all its questions.

Each becomes a ``tumor_board`` case with no question (the board meets on the case: no made-up question
reaches a model or judge), the summary as its presentation, a slide list (captions; images only when a
slides folder is given), the board's conclusion as ``reference.conclusion`` and every answered question
as a ``reference.answers`` item with its role, ``qa_type`` and official id. The official ids stay in
``metadata``. A question asked twice of one role keeps its first answer; the other ids are listed in
``metadata.duplicate_qa_ids``; questions with an empty recorded answer in ``metadata.unanswered_qa_ids``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.cases.loader import problems_from_validation
from consilium.cases.model import Case, Slide
from consilium.cases.reference import question_key
from consilium.datafiles.text import jsonl_objects
from consilium.errors import UserError

__all__ = ["read_opentumorboard", "source_files"]

NO_SLIDES = "No slide descriptions are available."
_NAMES = re.compile(r"^(task[12](_[a-z]+)?|[a-z_]+\.(caption|image))\.jsonl(\.gz)?$")


def source_files(source: Path) -> list[Path]:
    """The released files under a data folder (its ``test_inputs/`` too), or the one file given."""
    if source.is_file():
        return [source]
    if not source.is_dir():
        raise UserError(f"{source}: no such file or folder")
    found = sorted(p for folder in (source, source / "test_inputs") if folder.is_dir()
                   for p in folder.iterdir() if _NAMES.match(p.name))
    if not found:
        raise UserError(f"{source}: holds no OpenTumorBoard file (task1_*.jsonl, task2_*.jsonl, "
                        "test_inputs/*.caption.jsonl, gzip or not)")
    return found


@dataclass
class _Group:
    board: dict[str, Any] | None = None
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    images: list[str] | None = None
    splits: set[str] = field(default_factory=set)


def _records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for where, row in jsonl_objects(path, "OpenTumorBoard JSONL"):
        if isinstance(row.get("conversations"), list):  # a ShareGPT manifest: the record is its metadata
            images, metadata = row.get("images"), row.get("metadata")
            if not isinstance(metadata, dict):
                raise UserError(f"{where}: a ShareGPT record's metadata must be an object")
            row = {**metadata, "_images": images} if isinstance(images, list) else metadata
        rows.append((where, row))
    return rows


def _text(row: dict[str, Any], name: str, where: str, *, empty: bool = False) -> str:
    value = row.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise UserError(f"{where}: field {name!r} must be {'a string' if empty else 'non-empty text'}")
    return value


def _split(path: Path) -> str:
    name = path.name.split(".")[0]
    return name.split("_", 1)[1] if name.startswith("task") and "_" in name else "test"


def _group_key(row: dict[str, Any], where: str) -> tuple[str, str]:
    recording = row.get("video_dir") or row.get("video_uid")
    if not isinstance(recording, str) or not recording:
        raise UserError(f"{where}: field 'video_dir' (or 'video_uid') must name the recording")
    return recording, _text(row, "case_id", where)


def read_opentumorboard(source: Path, slides: Path | None = None) -> list[Case]:
    """Every case of the files under ``source``; ``slides``: the folder the image manifests' ``slides/…``
    paths are relative to (the pipeline output the official README links as ``slides``)."""
    groups: dict[tuple[str, str], _Group] = {}
    for path in source_files(source):
        for where, row in _records(path):
            group = groups.setdefault(_group_key(row, where), _Group())
            group.splits.add(_split(path))
            if "qa_id" in row:
                group.questions.setdefault(_text(row, "qa_id", where), {**row, "_where": where})
            elif "simulation_id" in row:
                _text(row, "simulation_id", where)
                _text(row, "case_summary", where)
                merged = {**(group.board or {}), **row, "_where": where}
                group.board = merged
            else:
                raise UserError(f"{where}: neither a Board Simulation record (simulation_id) nor a Specialist "
                                "Turn record (qa_id)")
            if row.get("_images") and "simulation_id" in row:
                group.images = [str(p) for p in row["_images"]]
    return [_case(key, group, slides) for key, group in sorted(groups.items())]


def _slide_list(text: str, images: list[str] | None, slides: Path | None, where: str) -> list[Slide]:
    if not text.strip() or text.strip() == NO_SLIDES:
        return []
    captions = [c.strip() for c in text.split("<image>")] if "<image>" in text else text.splitlines()
    captions = [c for c in captions if c.strip()]
    paths: list[str | None] = [None] * len(captions)
    if slides is not None and images:
        if len(images) != len(captions):
            raise UserError(f"{where}: {len(images)} slide images for {len(captions)} slide captions")
        paths = [str(slides / p.removeprefix("slides/")) for p in images]
    return [Slide(caption=c, image=p) for c, p in zip(captions, paths, strict=True)]


def _case(key: tuple[str, str], group: _Group, slides: Path | None) -> Case:
    recording, case_id = key
    first = group.board or next(iter(group.questions.values()))
    where = first["_where"]
    summary = _text(first, "case_summary", where)
    answers, seen, duplicates, unanswered = [], set(), [], []
    for qa_id, row in sorted(group.questions.items()):
        at = row["_where"]
        role, question = _text(row, "target_specialist_role", at), _text(row, "question", at)
        answer = _text(row, "reference_answer", at, empty=True).strip()
        if not answer:
            unanswered.append(qa_id)
            continue
        if (question_key(role), question_key(question)) in seen:
            duplicates.append(qa_id)
            continue
        seen.add((question_key(role), question_key(question)))
        answers.append({"question": question, "answer": answer, "role": role, "source_id": qa_id,
                        "qa_type": row.get("qa_type") or None})
    board = group.board or {}
    conclusion = str(board.get("reference_conclusion") or "").strip() or None
    ids = {name: board.get(name, first.get(name)) for name in
           ("simulation_id", "video_uid", "video_dir", "case_id", "case_start_sec", "case_end_sec", "source_task")}
    metadata = {"source": "OpenTumorBoard", "splits": sorted(group.splits),
                **{k: v for k, v in ids.items() if v is not None}, "qa_ids": sorted(group.questions),
                **({"duplicate_qa_ids": duplicates} if duplicates else {}),
                **({"unanswered_qa_ids": unanswered} if unanswered else {})}
    case_name = board.get("simulation_id") or re.sub(r"[^A-Za-z0-9._-]+", "-", f"{recording}-{case_id}")
    data = {"id": case_name, "kind": "tumor_board", "title": f"{recording} {case_id}", "presentation": summary,
            "slides": _slide_list(str(first.get("slides") or ""), group.images, slides, where),
            "reference": {"conclusion": conclusion, "answers": answers} if conclusion or answers else None,
            "metadata": metadata}
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        problem = problems_from_validation(where, exc)[0]
        raise UserError(f"{problem} (case {case_name})") from None
