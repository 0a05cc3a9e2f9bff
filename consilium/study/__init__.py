"""Rating studies without any web code: physicians rate a run's outputs, blinded, and the ratings feed
``calibrate`` (docs/studio-web.md, "Rating studies" and "Storage").

The interface the studio's pages and the command line use::

    create_study(run_dir, *, rubric, raters, per_output=1, sample=None, seed=0, components=None,
                 database=None) -> CreatedStudy
        CreatedStudy(study_id, database (display form), admin_token, links: rater -> token (plaintext, once),
                     outputs, assignments, skipped_arms, notes)
    Study.open(run_dir, database=None) -> Study          # SQLite default: RUN_DIR/study.sqlite3
    Study.find(database) -> list[Study]
    study.id, study.run_dir, study.rubric (Rubric), study.raters() -> list[str]
    study.rater_of(token) -> str | None                 # None: unknown or revoked
    study.is_admin(token) -> bool
    study.queue(rater) -> list[QueueEntry(item, position, done)]
    study.item(rater, item) -> ItemView                 # Forbidden unless the item is in the rater's queue
        ItemView(item, position, total, case_text, output_text, component, criteria: list[CriterionView],
                 answers: dict[criterion, Answer]); CriterionView(id, text, scale, anchors, binary)
    study.answer(rater, item, criterion, *, score, not_evaluable=False, reason=None, comment=None) -> Answer
        Answer(criterion, score, not_evaluable, reason, comment, updated_at)
    study.progress() -> list[RaterProgress(rater, assigned, done, revoked)]
    study.agreement() -> LiveAgreement(items, percent, kappa, alpha, judge_pairs, judge_percent, judge_kappa,
                                       not_evaluable, kappa_weights)     # flat; None where undefined
    study.export(path) -> Path; study.ratings() -> list[Rating]
    study.revoke(rater) -> None; study.new_link(rater) -> str
    link(token, base="http://127.0.0.1:8765") -> str    # the studio's login path, /login/<token>

``Forbidden`` (also ``Study.Forbidden``) is a :class:`~consilium.errors.ConsiliumError`; a bad answer or flag is
a :class:`~consilium.errors.UserError`. Every call is synchronous (sqlite3, psycopg 3); the studio runs them
on worker threads. The names load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from consilium.study.create import create_study
    from consilium.study.study import Forbidden, Study
    from consilium.study.tokens import link
    from consilium.study.views import (
        Answer,
        CreatedStudy,
        CriterionView,
        ItemView,
        LiveAgreement,
        QueueEntry,
        RaterProgress,
    )

__all__ = ["Answer", "CreatedStudy", "CriterionView", "Forbidden", "ItemView", "LiveAgreement", "QueueEntry",
           "RaterProgress", "Study", "create_study", "link"]
_WHERE = {"create_study": "create", "Forbidden": "study", "Study": "study", "link": "tokens",
          **dict.fromkeys(("Answer", "CreatedStudy", "CriterionView", "ItemView", "LiveAgreement", "QueueEntry",
                           "RaterProgress"), "views")}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"consilium.study.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
