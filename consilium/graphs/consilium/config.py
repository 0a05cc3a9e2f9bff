"""Settings of a consilium run; stored in every trace so a run can be replayed exactly."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from consilium.agents.records import AssignedRole
from consilium.traces.config import ConfigRecord, RunConfig, StageTokens

__all__ = ["BUDGETED_STAGES", "CHARS_PER_TOKEN", "DEFAULT_BUDGET_CHARS", "DEFAULT_MAX_TOKENS", "FRAME_TOKENS",
           "MIN_BUDGET_CHARS", "ConsiliumConfig", "ConsiliumRecord", "budget_max_tokens"]

#: The length budget, in characters, of one opinion and of one report (the initial synthesis and each
#: revision), the same in both formats (docs/consilium.md, "Length budget"). 4800 is the six 800-character
#: sections a structured answer had before the budget was shared.
DEFAULT_BUDGET_CHARS = 4800
#: Below this a structured answer's six sections would get fewer than 50 characters each.
MIN_BUDGET_CHARS = 300
#: The stages whose answer is an opinion or a report, and the budget field each one reads.
BUDGETED_STAGES: dict[str, str] = {"opinion": "opinion_budget_chars", "synthesis": "report_budget_chars",
                                   "revision": "report_budget_chars"}
#: Characters per token assumed when a budget in characters becomes a call's max_tokens. English clinical
#: prose runs at about 4 characters per cl100k token; 2.5 leaves room for numbers, drug names, JSON
#: escapes and less efficient tokenizers, so that the character budget, not max_tokens, is what binds.
CHARS_PER_TOKEN = 2.5
#: Tokens for what surrounds the budgeted text: JSON keys, quotes and braces of a structured answer (the
#: free-form answer gets the same, so that both formats' calls have the same max_tokens).
FRAME_TOKENS = 128
#: A revision answer also holds its ``change_summary`` (agents/schemas.py, REASON).
REVISION_SUMMARY_CHARS = 400


def budget_max_tokens(stage: str, budget_chars: int) -> int:
    """The max_tokens of a budgeted stage's calls, in both formats: the budget at CHARS_PER_TOKEN plus the frame."""
    chars = budget_chars + (REVISION_SUMMARY_CHARS if stage == "revision" else 0)
    return math.ceil(chars / CHARS_PER_TOKEN) + FRAME_TOKENS


#: Every stage's max_tokens at the default budgets (a budgeted stage's follows its budget). Role assignment
#: and vote: room for every schema field at its length bound, so that a structured answer is never cut
#: off by max_tokens before its strings are.
DEFAULT_MAX_TOKENS: dict[str, int] = {
    "role_assignment": 768,
    "opinion": budget_max_tokens("opinion", DEFAULT_BUDGET_CHARS),
    "synthesis": budget_max_tokens("synthesis", DEFAULT_BUDGET_CHARS),
    "vote": 384,
    "revision": budget_max_tokens("revision", DEFAULT_BUDGET_CHARS),
}

class ConsiliumConfig(RunConfig):
    STAGE_TOKENS: ClassVar[dict[str, int]] = DEFAULT_MAX_TOKENS

    max_rounds: int = Field(default=5, ge=1, description="review rounds before stopping with round_limit "
                                                         "(ai-consilium.txt, Fig. 4: 5)")
    max_tokens: StageTokens = Field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS),
                                    description="output tokens per call, by stage (" + ", ".join(DEFAULT_MAX_TOKENS)
                                                + "); a stage left out keeps its default, which for opinion, "
                                                  "synthesis and revision is its length budget's")
    opinion_budget_chars: int = Field(default=DEFAULT_BUDGET_CHARS, ge=MIN_BUDGET_CHARS,
                                      description="characters of one opinion, in both formats: a structured "
                                                  "opinion's sections share them, a free-form one is held to them")
    report_budget_chars: int = Field(default=DEFAULT_BUDGET_CHARS, ge=MIN_BUDGET_CHARS,
                                     description="characters of one report (the synthesis and each revision), "
                                                 "in both formats, as opinion_budget_chars is for an opinion")
    lengths: Literal["shared"] = Field(
        default="shared", description="the answers' length caps: shared, one budget for both formats (traces "
                                      "recorded before it read as legacy, which no longer runs)")
    budget_tokens: int | None = Field(default=None, ge=1, description="stop before a call once this many "
                                                                       "tokens (input + output) are spent")
    # Ablations (consilium ablate, docs/ablations.md); each is recorded only when set, so every other
    # config (and every digest a resume compares) is as it was.
    panel: list[AssignedRole] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="a fixed panel, seated instead of asking the moderator for one (the same panel less one "
                    "role, or under another moderator)")
    review: bool = Field(default=True, exclude_if=lambda v: v is True,
                         description="false: stop at the initial report, with no review round")

    @model_validator(mode="before")
    @classmethod
    def _budget_max_tokens(cls, data: Any) -> Any:
        """Every stage left out of ``max_tokens`` gets its default, a budgeted stage its budget's
        (budget_max_tokens): a config that sets only a budget gets the max_tokens to match, and the trace
        records what each stage had."""
        if not isinstance(data, dict):
            return data
        given = data.get("max_tokens", {})
        if not isinstance(given, dict):
            return data  # the field's own validation reports it
        tokens = {}
        for stage, default in DEFAULT_MAX_TOKENS.items():
            budget = data.get(BUDGETED_STAGES.get(stage, ""), DEFAULT_BUDGET_CHARS)
            if stage in given:
                tokens[stage] = given[stage]
            elif stage in BUDGETED_STAGES and isinstance(budget, int) and not isinstance(budget, bool) \
                    and budget >= MIN_BUDGET_CHARS:
                tokens[stage] = budget_max_tokens(stage, budget)
            else:
                tokens[stage] = default
        tokens.update(given)  # then any unknown stage, for the field's validation to name
        return {**data, "max_tokens": tokens}

    def budget_chars(self, stage: str) -> int:
        """The length budget of a budgeted stage's opinion or report (BUDGETED_STAGES), shared by both formats."""
        budget: int = getattr(self, BUDGETED_STAGES[stage])
        return budget

    def tokens_for(self, stage: str) -> int:
        """The stage's max_tokens: as configured, else its budget's (budget_max_tokens), else the default."""
        if stage in self.max_tokens:
            return self.max_tokens[stage]
        if stage in BUDGETED_STAGES:
            return budget_max_tokens(stage, self.budget_chars(stage))
        return DEFAULT_MAX_TOKENS.get(stage, 512)


class ConsiliumRecord(ConsiliumConfig, ConfigRecord):
    """A consilium trace's ``config``: the run's settings and the hashes of the prompts it used."""

    # Wider than the run's: a record reads the retired value an older run used (consilium/traces/retired.py).
    lengths: Literal["shared", "legacy"] = Field(  # type: ignore[assignment]
        default="shared", description="shared: one length budget for both formats; legacy: the unequal caps of "
                                      "traces recorded before it (structured sections 800 characters, free-form "
                                      "unchecked), which read but no longer replay")
