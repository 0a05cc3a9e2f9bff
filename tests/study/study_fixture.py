"""What the rating-study tests share: the fixture cohort's outputs counted by hand, a study's rows read
straight from its SQLite file (not through consilium/study), and a scripted physician whose answers vary
with the item, the criterion and the rater."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from support.cohort_fixture import CASES, FAILED, FORMATS, MODELS

#: The ai-consilium components each format's trace has (free-form: the final report only).
HAS = {"free-form": ("conclusion",), "structured": ("role_reasoning", "role_opinion", "conclusion")}
#: Every output of the fixture cohort's completed arms: (model, variant, case, component).
OUTPUTS = [(m, f, k, c) for m in MODELS for f in FORMATS for k in CASES for c in HAS[f] if (m, k, f) != FAILED]


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of the study database, read with sqlite3 directly."""
    with closing(sqlite3.connect(db)) as conn:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]


def identities(db: Path) -> dict[str, tuple[str, str, str, str]]:
    """Item id → (model, variant, case, component), from the database's outputs table."""
    found = rows(db, "SELECT id, model, variant, case_id, component FROM outputs")
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in found}


def physician(rater: str, identity: tuple[str, str, str, str], criterion: str) -> int | None:
    """The scripted physician's score: varied by rater, output and criterion; None (not evaluable) on c6 of
    panel-b's k2 outputs."""
    model, variant, case, component = identity
    if model == "panel-b" and case == "k2" and criterion == "c6":
        return None
    base = (CASES.index(case) + len(criterion) + len(component) + (model == "panel-b")) % 4
    return min(3, max(0, base + {"ana": 0, "ben": 1, "cy": -1}[rater] * (variant == "structured")))
