"""A study's answers as the ratings file ``calibrate`` reads (consilium/calibration/ratings.py), de-blinded.

One row per scored answer: ``case_id, component, criterion, rater, score, variant, model, run, trace`` (the
trace's file name, as judgement records name it), so each rating pairs with the judge's score of the same
output (consilium/calibration/pairs.py). A not-evaluable answer has no score and is no row: it is counted.
The ratings file takes no other column (``load_ratings`` refuses one), so reasons and comments go to a
sidecar, ``<name>.notes.jsonl`` beside it, one object per answer that has either.

A file is replaced only when this study wrote it and nobody has changed it since: the study records the
SHA-256 of every file it exports; any other file in the way is refused in one line, nothing written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from consilium.calibration.ratings import Rating
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.study.database import Database

__all__ = ["COLUMNS", "Exported", "StudyRatings", "export", "notes_path", "study_ratings"]

COLUMNS = ("case_id", "component", "criterion", "rater", "score", "variant", "model", "run", "trace")


@dataclass(frozen=True)
class StudyRatings:
    ratings: list[Rating]
    not_evaluable: int
    notes: list[dict[str, Any]]  # answers with a reason or a comment, de-blinded


@dataclass(frozen=True)
class Exported:
    path: Path
    rows: int
    not_evaluable: int
    notes: Path | None  # the sidecar, when any answer has a reason or comment


def study_ratings(db: Database, study_id: str) -> StudyRatings:
    """The study's answers: scored ones as ratings, not-evaluable ones counted, reasons and comments as notes."""
    with db.transaction() as conn:
        rows = conn.execute(
            "SELECT o.case_id, o.component, n.criterion, n.rater, n.score, o.variant, o.model, o.run, o.trace, "
            "n.not_evaluable, n.reason, n.comment FROM answers n JOIN outputs o ON o.id = n.item WHERE "
            "n.study_id = ? ORDER BY o.draw, n.criterion, n.rater", (study_id,)).all()
    ratings, notes, skipped = [], [], 0
    for case_id, component, criterion, rater, score, variant, model, run, trace, not_evaluable, reason, comment in rows:
        named = {"case_id": case_id, "component": component, "criterion": criterion, "rater": rater,
                 "variant": variant or None, "model": model or None, "run": run or None, "trace": Path(trace).name}
        if not_evaluable or score is None:
            skipped += 1
        else:
            ratings.append(Rating(**named, score=float(score)))
        if not_evaluable or comment:
            notes.append({**named, "score": None if score is None else float(score),
                          "not_evaluable": bool(not_evaluable), "reason": reason, "comment": comment})
    return StudyRatings(ratings, skipped, notes)


def notes_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}.notes.jsonl")


def _score(value: float) -> str:
    return f"{value:g}"


def ratings_text(ratings: list[Rating], suffix: str) -> str:
    if suffix == ".jsonl":
        return "".join(json.dumps(r.model_dump(), ensure_ascii=False) + "\n" for r in ratings)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in ratings:
        writer.writerow([r.case_id, r.component, r.criterion, r.rater, _score(r.score), r.variant or "",
                         r.model or "", r.run or "", r.trace or ""])
    return buffer.getvalue()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_ours(path: Path, written: dict[str, str]) -> bool:
    """Whether ``path`` may be written: absent, or a plain file this study exported and nobody changed since
    (True: it is there, ours). Anything else is refused."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UserError(f"{path}: is not a plain file; an export replaces only a file it wrote (nothing was written)")
    if not path.exists():
        return False
    if written.get(str(path.resolve())) != _sha(path):
        raise UserError(f"{path}: exists and is not a ratings file this study exported (or it was changed since); "
                        "it is left alone (nothing was written): choose another --out")
    return True


def export(db: Database, study_id: str, path: Path) -> Exported:
    """Write the ratings file at ``path`` (``.csv`` or ``.jsonl``) and, when any answer has a reason or a
    comment, its notes sidecar; both atomically, each only over a file of this study's own."""
    if path.suffix not in (".csv", ".jsonl"):
        raise UserError(f"--out: {path}: the ratings file must be .csv or .jsonl")
    found = study_ratings(db, study_id)
    if not found.ratings:
        raise UserError(f"{db.display}: no scored answers yet (not evaluable: {found.not_evaluable}); "
                        "nothing to export")
    sidecar = notes_path(path)
    with db.transaction() as conn:
        written = dict(conn.execute("SELECT path, sha256 FROM exports WHERE study_id = ?", (study_id,)).all())
    _check_ours(path, written)
    stale = _check_ours(sidecar, written) and not found.notes
    texts = {path: ratings_text(found.ratings, path.suffix)}
    if found.notes:
        texts[sidecar] = "".join(json.dumps(n, ensure_ascii=False) + "\n" for n in found.notes)
    now = datetime.now(UTC).isoformat()
    for target, text in texts.items():
        write_text_atomic(target, text)
        with db.transaction(write=True) as conn:
            conn.execute("INSERT INTO exports (study_id, path, sha256, written_at) VALUES (?, ?, ?, ?) ON CONFLICT "
                         "(study_id, path) DO UPDATE SET sha256 = excluded.sha256, written_at = excluded.written_at",
                         (study_id, str(target.resolve()), _sha(target), now))
    if stale:
        sidecar.unlink()  # the notes of an earlier export, no longer true of the answers
    return Exported(path, len(found.ratings), found.not_evaluable, sidecar if found.notes else None)
