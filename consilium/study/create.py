"""``consilium study create``: draw the outputs to rate, assign them to raters, store the study, hand out tokens.

Everything is checked before anything is written (one line per mistake, naming the flag), and the study is
stored in one transaction: a database never holds half a study. A run folder has at most one study per
database; a second ``create`` is refused, never overwriting the first's answers.
"""

from __future__ import annotations

import re
import secrets
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from consilium.errors import UserError
from consilium.judges.rubric import load_rubric
from consilium.runfolder import RunFolder
from consilium.study.database import Database
from consilium.study.draw import assign, draw_outputs, orders, rated_components, run_key, sample_outputs
from consilium.study.schema import migrate
from consilium.study.tokens import hash_token, new_token
from consilium.study.views import CreatedStudy

__all__ = ["check_raters", "create_study"]

_RATER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def check_raters(raters: Sequence[str]) -> list[str]:
    """The raters' names, checked: at least one, none empty or repeated, each a plain name (letters, digits,
    ``_.@-``, up to 64 characters: it names the rater in the ratings file)."""
    names = [r.strip() for r in raters]
    if not names or any(not n for n in names):
        raise UserError("--raters: give the raters' names separated by commas (none may be empty)")
    repeated = sorted(n for n, count in Counter(names).items() if count > 1)
    if repeated:
        raise UserError(f"--raters: {', '.join(repeated)} named more than once")
    wrong = [n for n in names if not _RATER.match(n)]
    if wrong:
        raise UserError(f"--raters: {wrong[0]!r} is not a plain name (letters, digits and _ . @ -, up to 64)")
    return names


def create_study(run_dir: Path, *, rubric: str, raters: Sequence[str], per_output: int = 1,
                 sample: int | None = None, seed: int = 0, components: Sequence[str] | None = None,
                 database: str | None = None) -> CreatedStudy:
    """A new rating study of ``run_dir``'s completed arms (docs/studio-web.md, "Rating studies")."""
    names = check_raters(raters)
    if isinstance(per_output, bool) or per_output < 1:
        raise UserError(f"--per-output: must be at least 1, got {per_output}")
    if per_output > len(names):
        raise UserError(f"--per-output: {per_output} raters per output, but only {len(names)} raters are named")
    if sample is not None and sample < 1:
        raise UserError(f"--sample: must be at least 1, got {sample}")
    scored = load_rubric(rubric)
    wanted = rated_components(scored, components)
    folder = RunFolder.open(run_dir)
    drawn = draw_outputs(folder, scored, wanted)
    if not drawn.outputs:
        raise UserError(f"{folder.path}: no completed arm has a {' or '.join(wanted)} to rate "
                        f"({drawn.skipped_arms} arms did not complete)")
    chosen = drawn.outputs if sample is None else sample_outputs(drawn.outputs, sample, seed)
    raters_of = assign(len(chosen), names, per_output, seed)
    queues: dict[str, list[int]] = {name: [] for name in names}
    for index, assigned in enumerate(raters_of):
        for name in assigned:
            queues[name].append(index)
    ordered = orders(queues, seed)
    db = Database.of(folder.path, database)
    migrate(db)
    key = run_key(folder)
    study_id, admin = secrets.token_hex(8), new_token()
    ids = [secrets.token_hex(8) for _ in chosen]
    tokens = {name: new_token() for name in names}
    now = datetime.now(UTC).isoformat()
    with db.transaction(write=True) as conn:
        if conn.execute("SELECT id FROM studies WHERE run_key = ?", (key,)).one() is not None:
            raise UserError(f"{db.display}: already holds a study of {folder.path} (run {key}); it is left as it is "
                            "(export it with `consilium study export`, or give another --database)")
        conn.execute("INSERT INTO studies (id, run_key, run_dir, rubric, rubric_version, per_output, seed, "
                     "admin_hash, created_at, rubric_definition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (study_id, key, str(folder.path.resolve()), scored.name, scored.version, per_output, seed,
                      hash_token(admin), now, scored.model_dump_json()))
        conn.executemany("INSERT INTO raters (study_id, rater, token_hash, revoked) VALUES (?, ?, ?, 0)",
                         [(study_id, name, hash_token(tokens[name])) for name in names])
        conn.executemany("INSERT INTO outputs (id, study_id, draw, case_id, component, variant, model, run, trace, "
                         "case_text, output_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(ids[i], study_id, i, o.case_id, o.component, o.variant, o.model, o.run, o.trace,
                           o.case_text, o.output_text) for i, o in enumerate(chosen)])
        conn.executemany("INSERT INTO assignments (study_id, rater, item, position) VALUES (?, ?, ?, ?)",
                         [(study_id, name, ids[index], position)
                          for name, queue in ordered.items() for position, index in enumerate(queue, 1)])
    notes = [f"{drawn.skipped_arms} arms did not complete and are not drawn"] if drawn.skipped_arms else []
    if sample is not None and sample > len(drawn.outputs):
        notes.append(f"--sample {sample}: only {len(drawn.outputs)} outputs exist; all are drawn")
    return CreatedStudy(study_id=study_id, database=db.display, admin_token=admin, links=tokens,
                        outputs=len(chosen), assignments=len(chosen) * per_output,
                        skipped_arms=drawn.skipped_arms, notes=tuple(notes))
