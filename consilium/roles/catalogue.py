"""The role catalogue (data in catalogue.yaml) and the mapping of free-text role labels to categories.

The paper keeps every model-assigned label together with its category
(ai-consilium.txt, Fig. 2c caption); :func:`map_label` is that mapping, made
deterministic: exact alias match first, then the best token overlap, else ``other``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Catalogue", "RoleCategory", "load_catalogue", "map_label", "normalise_label"]

_GENERIC = {"specialist", "medicine", "physician", "doctor", "clinical", "surgeon", "surgery", "consultant",
            "the", "and", "of", "in", "for", "expert", "service", "care", "team"}


def normalise_label(label: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", label.lower()).split())


class RoleCategory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str
    description: str
    aliases: list[str] = []


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    source: str
    categories: list[RoleCategory]

    @model_validator(mode="after")
    def _unique(self) -> Catalogue:
        seen: dict[str, str] = {}
        for category in self.categories:
            for alias in [category.name, *category.aliases]:
                key = normalise_label(alias)
                if seen.get(key, category.id) != category.id:
                    raise ValueError(f"alias {alias!r} belongs to both {seen[key]} and {category.id}")
                seen[key] = category.id
        if "other" not in {c.id for c in self.categories}:
            raise ValueError("the catalogue needs an 'other' category")
        return self

    def get(self, category_id: str) -> RoleCategory:
        for category in self.categories:
            if category.id == category_id:
                return category
        raise KeyError(category_id)

    def map_label(self, label: str) -> RoleCategory:
        """The category for a free-text label such as "Interventional cardiologist"."""
        key = normalise_label(label)
        for category in self.categories:
            if key in {normalise_label(a) for a in [category.name, category.id.replace("_", " "), *category.aliases]}:
                return category
        words = set(key.split()) - _GENERIC
        head = key.split()[-1] if key else ""
        # Score: share of the alias matched, then matched words, then whether the label's
        # head noun ("radiologist" in "cardiac radiologist") is among them.
        best, best_score = self.get("other"), (0.0, 0, False)
        for category in self.categories:
            for alias in [category.name, *category.aliases]:
                alias_words = set(normalise_label(alias).split()) - _GENERIC
                common = words & alias_words
                if not common:
                    continue
                score = (len(common) / len(alias_words), len(common), head in common)
                if score > best_score:
                    best, best_score = category, score
        return best if best_score[0] >= 0.5 else self.get("other")


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    text = resources.files("consilium.roles").joinpath("catalogue.yaml").read_text(encoding="utf-8")
    return Catalogue.model_validate(yaml.safe_load(text))


def map_label(label: str) -> RoleCategory:
    return load_catalogue().map_label(label)
