"""The cohort index's filters and sort order, from the page's query string (so a filtered, sorted view is a link,
and works without scripts); browse.js applies the same rules in the page at once."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from consilium.natural import natural_key
from consilium.web.browse_rows import Arm

__all__ = ["FILTERS", "SORTS", "Query", "score_key"]

#: Filter parameter → the arm's value it must equal.
FILTERS: dict[str, Callable[[Arm], str]] = {
    "model": lambda a: a.model, "format": lambda a: a.row.format, "protocol": lambda a: a.row.protocol,
    "status": lambda a: a.row.status, "stop": lambda a: a.row.stop_reason}
#: Sort key → its kind (text sorts in natural order); ``score-<i>`` sorts by the i-th rubric's score, a number.
SORTS = {"case": "text", "model": "text", "protocol": "text", "format": "text", "status": "text", "stop": "text",
         "rounds": "number", "tokens": "number", "cost": "number", "judge_cost": "number", "total_cost": "number"}


def score_key(index: int) -> str:
    return f"score-{index}"


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class Query:
    """What the index shows: each filter's value ("" for any), a score range on one rubric, the sort column and
    its direction (natural order when none)."""

    filters: dict[str, str]
    rubric: str = ""
    low: float | None = None
    high: float | None = None
    sort: str = ""
    descending: bool = False

    @classmethod
    def parse(cls, query: Mapping[str, str], rubrics: list[str]) -> Query:
        rubric = query.get("rubric", "")
        return cls({name: query.get(name, "") for name in FILTERS},
                   rubric if rubric in rubrics else (rubrics[0] if rubrics else ""),
                   _number(query.get("min")), _number(query.get("max")), query.get("sort", ""),
                   query.get("order") == "desc")

    def keeps(self, arm: Arm) -> bool:
        if any(value and FILTERS[name](arm) != value for name, value in self.filters.items()):
            return False
        if self.low is None and self.high is None:
            return True
        found = arm.scores.get(self.rubric)
        mean = found.mean if found is not None else None
        if mean is None:
            return False
        return (self.low is None or mean >= self.low) and (self.high is None or mean <= self.high)

    def value(self, arm: Arm, key: str, rubrics: list[str]) -> str | float | None:
        """The arm's value in a sort column."""
        if key.startswith("score-"):
            index = int(key.removeprefix("score-")) if key.removeprefix("score-").isdigit() else -1
            found = arm.scores.get(rubrics[index]) if 0 <= index < len(rubrics) else None
            return found.mean if found is not None else None
        numbers = {"rounds": arm.rounds, "tokens": arm.tokens, "cost": arm.row.cost_usd,
                   "judge_cost": arm.number("judge_cost_usd"), "total_cost": arm.number("total_cost_usd")}
        if key in numbers:
            return numbers[key]
        texts = {"case": arm.row.case_id, **{name: FILTERS[name](arm) for name in FILTERS}}
        return texts.get(key)

    def apply(self, arms: list[Arm], rubrics: list[str]) -> list[Arm]:
        """The arms kept, in the chosen order (an arm without a value last, either way), else natural order."""
        kept = [arm for arm in arms if self.keeps(arm)]
        if not self.sort or (self.sort not in SORTS and not self.sort.startswith("score-")):
            return kept
        having = [a for a in kept if self.value(a, self.sort, rubrics) is not None]
        lacking = [a for a in kept if self.value(a, self.sort, rubrics) is None]

        def key(arm: Arm) -> tuple[object, ...]:
            value = self.value(arm, self.sort, rubrics)
            return (natural_key(value),) if isinstance(value, str) else (float(value or 0),)

        return sorted(having, key=key, reverse=self.descending) + lacking

    def link(self, **changes: str) -> str:
        """This query with some parameters changed, as a query string (``?…``; empty ones left out)."""
        params = {**self.filters, "rubric": self.rubric, "min": "" if self.low is None else f"{self.low:g}",
                  "max": "" if self.high is None else f"{self.high:g}", "sort": self.sort,
                  "order": "desc" if self.descending else "", **changes}
        kept = {k: v for k, v in params.items() if v}
        return "?" + urlencode(kept) if kept else "?"
