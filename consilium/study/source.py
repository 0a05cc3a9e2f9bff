"""``calibrate --ratings`` naming a study instead of a ratings file: a run folder holding a study
(``RUN_DIR/study.sqlite3``), a study database file, or a ``postgresql://`` URL. The ratings are the rows
``study export`` would write (:func:`consilium.study.export.study_ratings`), so reading a study directly and
reading its export give the same figures.
"""

from __future__ import annotations

from pathlib import Path

from consilium.calibration.ratings import Rating
from consilium.errors import UserError
from consilium.judges.rubric import Rubric
from consilium.study.database import is_database_url
from consilium.study.study import Study

__all__ = ["names_a_study", "ratings_of_study"]

_SQLITE = b"SQLite format 3\x00"


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_SQLITE)) == _SQLITE
    except OSError:
        return False


def names_a_study(source: str | Path) -> bool:
    """Whether ``--ratings`` names a study (a folder, a SQLite file, a PostgreSQL URL) and not a ratings file."""
    text = str(source)
    return is_database_url(text) or Path(text).is_dir() or (Path(text).is_file() and _is_sqlite(Path(text)))


def _open(source: str, judgements: Path) -> Study:
    if Path(source).is_dir():
        return Study.open(Path(source))
    try:
        return Study.open(judgements, source)
    except UserError:
        studies = Study.find(source)  # a database of one study, made from a copy of the run elsewhere
        if len(studies) != 1:
            raise
        return studies[0]


def ratings_of_study(source: str | Path, judgements: Path, rubric: Rubric) -> list[Rating]:
    """The scored answers of the study ``source`` names (``judgements``: the run it rated), checked to be of
    ``rubric``; a study without any yet is a :class:`UserError`."""
    study = _open(str(source), judgements)
    if study.rubric.name != rubric.name:
        raise UserError(f"--ratings: the study rates {study.rubric.name}, not {rubric.name} (--rubric)")
    ratings = study.ratings()
    if not ratings:
        raise UserError(f"--ratings: {study.db.display}: the study has no scored answers yet")
    return ratings
