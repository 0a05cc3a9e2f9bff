"""Rating studies as library calls (docs/studio-web.md, "Rating studies"): what ``consilium study
create|export|status|revoke|link`` do, returned for the command to print. The study itself is
:mod:`consilium.study`'s; these open it and call it off the event loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consilium.api.options import options_of
from consilium.api.sync import off_loop, sync_twin

__all__ = ["CreateStudyOptions", "StudyExported", "StudyStatus", "acreate_study", "aexport_study", "anew_admin_link",
           "anew_rater_link", "arevoke_rater", "astudy_status", "create_study", "export_study", "new_admin_link",
           "new_rater_link", "revoke_rater", "study_status"]


@dataclass(frozen=True)
class CreateStudyOptions:
    """The rubric, the raters, how many raters rate each output, a stratified sample of N outputs (None: all)
    and its seed, the components to rate (None: every one the rubric scores), and the database (None: the run
    folder's ``study.sqlite3``; a SQLite file or a ``postgresql://`` URL)."""

    rubric: str = "ai-consilium"
    raters: Sequence[str] = ()
    per_output: int = 1
    sample: int | None = None
    seed: int = 0
    components: Sequence[str] | None = None
    database: str | None = None


@dataclass(frozen=True)
class StudyExported:
    """The ratings file, its rows, the answers marked not evaluable (no row), and the notes sidecar if any."""

    path: Path
    rows: int
    not_evaluable: int
    notes: Path | None


@dataclass(frozen=True)
class StudyStatus:
    """The study's id, rubric and database (display form), each rater's progress and the agreement so far."""

    study_id: str
    rubric: str
    database: str
    progress: list[Any] = field(default_factory=list)
    agreement: Any = None


async def acreate_study(run_dir: str | Path, options: CreateStudyOptions | None = None, **changes: Any) -> Any:
    """``consilium study create``: a new blinded rating study of the run's completed arms; returns the
    :class:`consilium.study.CreatedStudy` (each rater's token, once)."""
    from consilium.study import create_study as create

    chosen = options_of(CreateStudyOptions, options, changes)
    return await off_loop(create, Path(run_dir), rubric=chosen.rubric, raters=list(chosen.raters),
                          per_output=chosen.per_output, sample=chosen.sample, seed=chosen.seed,
                          components=None if chosen.components is None else list(chosen.components),
                          database=chosen.database)


def _export(run_dir: Path, out: Path, database: str | None) -> StudyExported:
    from consilium.study import Study
    from consilium.study.export import export

    study = Study.open(run_dir, database)
    done = export(study.db, study.id, out)
    return StudyExported(done.path, done.rows, done.not_evaluable, done.notes)


async def aexport_study(run_dir: str | Path, out: str | Path, database: str | None = None) -> StudyExported:
    """``consilium study export``: the ratings file ``calibrate`` reads (.csv or .jsonl), de-blinded."""
    return await off_loop(_export, Path(run_dir), Path(out), database)


def _status(run_dir: Path, database: str | None) -> StudyStatus:
    from consilium.study import Study

    study = Study.open(run_dir, database)
    return StudyStatus(study.id, study.rubric.name, study.db.display, study.progress(), study.agreement())


async def astudy_status(run_dir: str | Path, database: str | None = None) -> StudyStatus:
    """``consilium study status``: progress per rater and the agreement so far."""
    return await off_loop(_status, Path(run_dir), database)


def _revoke(run_dir: Path, rater: str, database: str | None) -> None:
    from consilium.study import Study

    Study.open(run_dir, database).revoke(rater)


async def arevoke_rater(run_dir: str | Path, rater: str, database: str | None = None) -> None:
    """``consilium study revoke``: the rater's link stops working (their answers stay)."""
    await off_loop(_revoke, Path(run_dir), rater, database)


def _new_link(run_dir: Path, rater: str, database: str | None) -> str:
    from consilium.study import Study

    return Study.open(run_dir, database).new_link(rater)


async def anew_rater_link(run_dir: str | Path, rater: str, database: str | None = None) -> str:
    """``consilium study link``: a fresh token for the rater (the old one stops working)."""
    return await off_loop(_new_link, Path(run_dir), rater, database)


def _new_admin_link(run_dir: Path, database: str | None) -> str:
    from consilium.study import Study

    return Study.open(run_dir, database).new_admin_link()


async def anew_admin_link(run_dir: str | Path, database: str | None = None) -> str:
    """``consilium study link --admin``: a fresh administrator token for the study (the old one stops working)."""
    return await off_loop(_new_admin_link, Path(run_dir), database)


create_study = sync_twin(acreate_study)
export_study = sync_twin(aexport_study)
study_status = sync_twin(astudy_status)
revoke_rater = sync_twin(arevoke_rater)
new_rater_link = sync_twin(anew_rater_link)
new_admin_link = sync_twin(anew_admin_link)
