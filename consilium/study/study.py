"""An open rating study: who may rate, each rater's queue, the rating page's items, and the answers.

Every method reads or writes the database in one short transaction of its own (no connection is held
between calls), so the studio calls them from worker threads (``asyncio.to_thread``), several servers or
processes may share a database, and a restart loses nothing: an answer is stored when :meth:`Study.answer`
returns. Answers are upserts keyed by (rater, item, criterion): answering again replaces that rater's
answer, never another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from consilium.errors import ConsiliumError, UserError
from consilium.judges.rubric import Rubric, load_rubric
from consilium.runfolder import RunFolder
from consilium.study.database import Connection, Database
from consilium.study.draw import run_key
from consilium.study.schema import migrate
from consilium.study.tokens import hash_token, new_token, same_hash
from consilium.study.views import Answer, ItemView, QueueEntry, RaterProgress, criterion_views

if TYPE_CHECKING:
    from consilium.calibration.ratings import Rating
    from consilium.study.views import LiveAgreement

__all__ = ["MAX_TEXT", "Forbidden", "Study"]

#: The longest reason or comment kept (characters).
MAX_TEXT = 4000


class Forbidden(ConsiliumError):
    """A rater asked for an item outside their queue, or a revoked or unknown rater wrote (the studio: 403)."""


@dataclass(frozen=True)
class Study:
    """``Study.open(run_dir)``: the study of a run folder (in ``RUN_DIR/study.sqlite3`` unless ``database``)."""

    id: str
    run_dir: Path
    rubric: Rubric
    db: Database
    per_output: int
    Forbidden: ClassVar[type[Forbidden]] = Forbidden

    @classmethod
    def open(cls, run_dir: Path, database: str | None = None) -> Study:
        folder = RunFolder.open(run_dir)
        db = Database.of(folder.path, database)
        if not db.exists:
            raise UserError(f"{folder.path}: no rating study (no {db.display}; run `consilium study create` first)")
        migrate(db)
        key = run_key(folder)
        with db.transaction() as conn:
            row = conn.execute("SELECT id, rubric, per_output, rubric_definition FROM studies WHERE run_key = ?",
                               (key,)).one()
        if row is None:
            raise UserError(f"{db.display}: no rating study of {folder.path} (run `consilium study create` first)")
        return cls(row[0], folder.path, _rubric(row[1], row[3]), db, int(row[2]))

    @classmethod
    def find(cls, database: str) -> list[Study]:
        """Every study ``database`` holds (each with the run folder it was created from)."""
        db = Database.named(database)
        if not db.exists:
            raise UserError(f"{db.display}: no such study database")
        migrate(db)
        with db.transaction() as conn:
            rows = conn.execute("SELECT id, run_dir, rubric, per_output, rubric_definition FROM studies "
                                "ORDER BY created_at").all()
        return [cls(r[0], Path(r[1]), _rubric(r[2], r[4]), db, int(r[3])) for r in rows]

    # Who is who.
    def rater_of(self, token: str) -> str | None:
        """The rater whose live token ``token`` is; None for an unknown or revoked one."""
        if not token:
            return None
        with self.db.transaction() as conn:
            row = conn.execute("SELECT rater, token_hash FROM raters WHERE study_id = ? AND token_hash = ? AND "
                               "revoked = 0", (self.id, hash_token(token))).one()
        return row[0] if row is not None and same_hash(token, row[1]) else None

    def is_admin(self, token: str) -> bool:
        if not token:
            return False
        with self.db.transaction() as conn:
            row = conn.execute("SELECT admin_hash FROM studies WHERE id = ?", (self.id,)).one()
        return row is not None and same_hash(token, row[0])

    def raters(self) -> list[str]:
        with self.db.transaction() as conn:
            return [r[0] for r in conn.execute("SELECT rater FROM raters WHERE study_id = ? ORDER BY rater",
                                               (self.id,)).all()]

    def revoke(self, rater: str) -> None:
        """Stop ``rater``'s link (their answers stay); :meth:`new_link` gives them a new one."""
        with self.db.transaction(write=True) as conn:
            self._known(conn, rater)
            conn.execute("UPDATE raters SET revoked = 1 WHERE study_id = ? AND rater = ?", (self.id, rater))

    def new_link(self, rater: str) -> str:
        """A fresh token for ``rater`` (plaintext, returned once); the old one stops working."""
        token = new_token()
        with self.db.transaction(write=True) as conn:
            self._known(conn, rater)
            conn.execute("UPDATE raters SET token_hash = ?, revoked = 0 WHERE study_id = ? AND rater = ?",
                         (hash_token(token), self.id, rater))
        return token

    def new_admin_link(self) -> str:
        """A fresh administrator token for the study (plaintext, returned once); the old one stops working."""
        token = new_token()
        with self.db.transaction(write=True) as conn:
            conn.execute("UPDATE studies SET admin_hash = ? WHERE id = ?", (hash_token(token), self.id))
        return token

    def _known(self, conn: Connection, rater: str) -> None:
        if conn.execute("SELECT 1 FROM raters WHERE study_id = ? AND rater = ?", (self.id, rater)).one() is None:
            raise UserError(f"--rater: {rater!r} is no rater of this study ({', '.join(self.raters())})")

    # A rater's queue and items.
    def _criteria(self) -> dict[str, list[str]]:
        return {c: [v.id for v in criterion_views(self.rubric, c)] for c in self.rubric.components}

    def queue(self, rater: str) -> list[QueueEntry]:
        """The rater's items in their own order, each marked done once every criterion is answered."""
        criteria = self._criteria()
        with self.db.transaction() as conn:
            rows = conn.execute(
                "SELECT a.item, a.position, o.component, (SELECT COUNT(*) FROM answers n WHERE n.study_id = "
                "a.study_id AND n.rater = a.rater AND n.item = a.item) FROM assignments a JOIN outputs o ON "
                "o.id = a.item WHERE a.study_id = ? AND a.rater = ? ORDER BY a.position", (self.id, rater)).all()
        return [QueueEntry(item, int(position), int(answered) >= len(criteria.get(component, [])))
                for item, position, component, answered in rows]

    def item(self, rater: str, item: str) -> ItemView:
        """The rating page's item; :class:`Forbidden` unless it is in ``rater``'s queue."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT a.position, o.case_text, o.output_text, o.component, (SELECT COUNT(*) FROM assignments t "
                "WHERE t.study_id = a.study_id AND t.rater = a.rater) FROM assignments a JOIN outputs o ON "
                "o.id = a.item WHERE a.study_id = ? AND a.rater = ? AND a.item = ?", (self.id, rater, item)).one()
            if row is None:
                raise Forbidden(f"item {item!r} is not in {rater}'s queue")
            answers = conn.execute("SELECT criterion, score, not_evaluable, reason, comment, updated_at FROM answers "
                                   "WHERE study_id = ? AND rater = ? AND item = ?", (self.id, rater, item)).all()
        return ItemView(item=item, position=int(row[0]), total=int(row[4]), case_text=row[1], output_text=row[2],
                        component=row[3], criteria=criterion_views(self.rubric, row[3]),
                        answers={a[0]: _answer(a) for a in answers})

    def answer(self, rater: str, item: str, criterion: str, *, score: float | None, not_evaluable: bool = False,
               reason: str | None = None, comment: str | None = None) -> Answer:
        """Store ``rater``'s answer to ``criterion`` of ``item`` (replacing their earlier one): a score on the
        rubric's scale, or not evaluable with a reason; a comment either way. A bad answer is a
        :class:`UserError` saying which field is wrong; an item outside the rater's live queue, :class:`Forbidden`."""
        reason, comment = _text("reason", reason), _text("comment", comment)
        if not_evaluable:
            if score is not None:
                raise UserError("score: a not-evaluable answer has no score")
            if not reason:
                raise UserError("reason: say why the criterion is not evaluable")
        elif score is None:
            raise UserError("score: give a score, or mark the criterion not evaluable")
        elif isinstance(score, bool) or float(score) not in self.rubric.scale:
            raise UserError(f"score: {score!r} is not on the {self.rubric.name} scale {self.rubric.scale}")
        value = None if score is None else float(score)
        now = datetime.now(UTC).isoformat()
        with self.db.transaction(write=True) as conn:
            live = conn.execute("SELECT revoked FROM raters WHERE study_id = ? AND rater = ?", (self.id, rater)).one()
            row = conn.execute("SELECT o.component FROM assignments a JOIN outputs o ON o.id = a.item WHERE "
                               "a.study_id = ? AND a.rater = ? AND a.item = ?", (self.id, rater, item)).one()
            if live is None or live[0] or row is None:
                raise Forbidden(f"item {item!r} is not in {rater}'s queue (or the rater's link was revoked)")
            allowed = [c.id for c in criterion_views(self.rubric, row[0])]
            if criterion not in allowed:
                raise UserError(f"criterion: {criterion!r} is not a criterion of this item ({', '.join(allowed)})")
            conn.execute("INSERT INTO answers (study_id, rater, item, criterion, score, not_evaluable, reason, "
                         "comment, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study_id, rater, item, "
                         "criterion) DO UPDATE SET score = excluded.score, not_evaluable = excluded.not_evaluable, "
                         "reason = excluded.reason, comment = excluded.comment, updated_at = excluded.updated_at",
                         (self.id, rater, item, criterion, value, int(not_evaluable), reason, comment, now))
        return Answer(criterion, value, not_evaluable, reason, comment, now)

    def progress(self) -> list[RaterProgress]:
        """Per rater: items assigned, items done (every criterion answered), whether the link is revoked."""
        with self.db.transaction() as conn:
            raters = conn.execute("SELECT rater, revoked FROM raters WHERE study_id = ? ORDER BY rater",
                                  (self.id,)).all()
        out = []
        for rater, revoked in raters:
            queue = self.queue(rater)
            out.append(RaterProgress(rater, len(queue), sum(e.done for e in queue), bool(revoked)))
        return out

    # What was rated.
    def ratings(self) -> list[Rating]:
        """The scored answers as the ratings ``calibrate`` reads, de-blinded (:mod:`consilium.study.export`)."""
        from consilium.study.export import study_ratings

        return study_ratings(self.db, self.id).ratings

    def export(self, path: Path) -> Path:
        """The ratings file (``.csv`` or ``.jsonl``), written atomically (:func:`consilium.study.export.export`)."""
        from consilium.study.export import export

        return export(self.db, self.id, Path(path)).path

    def agreement(self) -> LiveAgreement:
        from consilium.study.live import live_agreement

        return live_agreement(self.db, self.id, self.run_dir, self.rubric)


def _text(name: str, value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > MAX_TEXT:
        raise UserError(f"{name}: longer than {MAX_TEXT} characters")
    return value.strip()


def _answer(row: tuple[object, ...]) -> Answer:
    criterion, score, not_evaluable, reason, comment, updated = row
    return Answer(str(criterion), None if score is None else float(score), bool(not_evaluable),  # type: ignore[arg-type]
                  reason if isinstance(reason, str) else None, comment if isinstance(comment, str) else None,
                  str(updated))


def _rubric(name: str, definition: str | None) -> Rubric:
    """The study's rubric as it was created with (stored whole), else, for a study created before that was
    stored, the rubric of that name."""
    return Rubric.model_validate_json(definition) if definition else load_rubric(name)
