"""The frozen scope of a board case, labelled by a candidate-blind judge call and cached, as the authors' code
labels it before training (AnqiLi24/OpenTumorBoard ``training/verl_otb/precompute_reference_scope.py``): the judge
reads the case evidence and the reference conclusion only, never a candidate, and labels each decision positive,
negative or absent; the answer is cached per case id and reference conclusion (its sha256), so every candidate of
the case, and every later run, is judged under the same scope.

The cache is one JSON file per case and reference in ``otb-scope/`` beside consilium's response cache
(:func:`scope_cache_dir`), written whole or not at all. A case that labels its decisions itself
(``reference.decisions``) needs no call (scope_labels.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from consilium.cases import Case
from consilium.datafiles import first_error
from consilium.errors import BudgetExceededError, ModelError, UserError
from consilium.fileio import write_text_atomic
from consilium.judges.answers import closed_schema_example
from consilium.judges.asking import answer_of, how_asked, unplaced
from consilium.judges.otb_layout import scope_user
from consilium.judges.otb_prompting import load_otb_prompt
from consilium.judges.scope_labels import DIMENSIONS, LABELS, FrozenScope, case_scope, reference_sha256
from consilium.models import CallTag, ChatModel, GenerationSettings, Message, ModelRequest, OutputSchema
from consilium.models.factory import default_cache_path

__all__ = ["SCOPE_SCHEMA", "ScopeFailure", "frozen_scope", "scope_cache_dir", "scope_request"]

#: The scope call's answer, as the official code asks for it: a label per decision, then a rationale.
_RATIONALE_MAX = 800
SCOPE_SCHEMA = OutputSchema.from_json_schema({
    "type": "object", "additionalProperties": False, "required": [*DIMENSIONS, "rationale"],
    "properties": {**{name: {"type": "string", "enum": list(LABELS)} for name in DIMENSIONS},
                   "rationale": {"type": "string", "minLength": 1, "maxLength": _RATIONALE_MAX}}},
    name="otb-reference-scope")


@dataclass(frozen=True)
class ScopeFailure:
    """The scope could not be labelled: why, and the failed calls (0 when the judge answered, invalidly)."""

    reason: str
    failed_calls: int


def scope_cache_dir() -> Path:
    """``otb-scope/`` beside consilium's response cache (``$CONSILIUM_CACHE``, default
    ``~/.cache/consilium/responses.sqlite``); with the response cache off, beside its default place: the scope is
    the case's, not a response, and is kept either way."""
    given = os.environ.get("CONSILIUM_CACHE", "")
    cache = Path(given) if given and given.lower() not in ("0", "off", "no", "false") else default_cache_path()
    return cache.parent / "otb-scope"


def _cache_file(folder: Path, case_id: str, sha: str) -> Path:
    return folder / f"{case_id}.{sha[:16]}.json"


def scope_request(case: Case, reference: str, settings: GenerationSettings,
                  system: str | None = None) -> ModelRequest:
    """The candidate-blind call: consilium's scope prompt (or the user's ``system``), the case and reference."""
    text = system if system is not None else load_otb_prompt("scope").format(
        rationale_max_chars=_RATIONALE_MAX, output_shape=closed_schema_example(SCOPE_SCHEMA))
    return ModelRequest(messages=(Message(role="system", content=text),
                                  Message(role="user", content=scope_user(case, reference))),
                        settings=settings, schema=SCOPE_SCHEMA, tag=CallTag(stage="judge", role="scope:decisions"))


def _read_cache(path: Path, sha: str) -> FrozenScope | None:
    if not path.is_file():
        return None
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        found = FrozenScope.model_validate({**{k: v for k, v in data.items() if k != "case_id"}, "source": "cache",
                                            "cache_file": str(path)})
    except (OSError, ValueError) as exc:
        detail = first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise UserError(f"{path}: not a scope cache record ({detail}); delete it to label the case again") from None
    if found.reference_sha256 != sha or set(found.labels) != set(DIMENSIONS) or "present" in found.labels.values():
        raise UserError(f"{path}: not the scope of this reference conclusion; delete it to label the case again")
    return found


async def frozen_scope(case: Case, reference: str, relaxed: ChatModel | None, strict: ChatModel,
                       settings: GenerationSettings, model_id: str, *, cache: Path | None = None,
                       system: str | None = None) -> FrozenScope | ScopeFailure:
    """The case's scope: its own labels, else the cached labels of this reference, else a scope call's
    (written to the cache). ``relaxed``/``strict``: the judge's models in its decoding order (decoding.py)."""
    sha = reference_sha256(reference)
    given = case_scope(case, reference)
    if given is not None:
        return given
    path = _cache_file(cache or scope_cache_dir(), case.id, sha)
    cached = _read_cache(path, sha)
    if cached is not None:
        return cached
    try:
        parsed, error = await answer_of(relaxed, strict, scope_request(case, reference, settings, system))
    except (ModelError, BudgetExceededError) as exc:
        return ScopeFailure(f"the scope call failed: {unplaced(str(exc))}", failed_calls=1)
    if parsed is None:
        return ScopeFailure(f"the scope call's answer stayed invalid, {how_asked(relaxed, strict)}: {error}", 0)
    labels = {name: parsed[name] for name in DIMENSIONS}
    record = {"case_id": case.id, "reference_sha256": sha, "labels": labels, "rationale": parsed["rationale"],
              "judge_model": model_id}
    write_text_atomic(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return FrozenScope(labels=labels, source="judge", reference_sha256=sha, rationale=parsed["rationale"],
                       judge_model=model_id, cache_file=str(path))
