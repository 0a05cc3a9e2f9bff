"""The role catalogue (data in catalogue.yaml) and the mapping of free-text role labels to categories.

The paper keeps every model-assigned label together with its category
(ai-consilium.txt, Fig. 2c caption); :meth:`Catalogue.map_label` is that mapping, made
deterministic: exact alias match first, then the specialty-aware matcher of
:mod:`consilium.roles.mapping`, else ``other``.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from consilium.roles.mapping import Practice, best_category, canonical

__all__ = ["Catalogue", "RoleCategory", "load_catalogue", "normalise_label"]


def normalise_label(label: str) -> str:
    return canonical(label)


class RoleCategory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str
    description: str
    aliases: list[str] = []
    # Whether the specialty operates: a label with a surgical head only maps to a
    # "surgical" or "both" category; other labels prefer "medical" or "both" ones.
    practice: Practice = "medical"


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    source: str
    categories: list[RoleCategory]
    # British -> American spelling fragments applied to labels and aliases before matching.
    spelling: list[tuple[str, str]] = []
    # Where a surgeon's label names no surgical specialty ("Breast surgeon").
    surgical_fallback: str = "general_surgery"

    @model_validator(mode="after")
    def _unique(self) -> Catalogue:
        seen: dict[str, str] = {}
        for category in self.categories:
            for alias in [category.name, *category.aliases]:
                key = canonical(alias, self.spelling)
                if seen.get(key, category.id) != category.id:
                    raise ValueError(f"alias {alias!r} belongs to both {seen[key]} and {category.id}")
                seen[key] = category.id
        if "other" not in {c.id for c in self.categories}:
            raise ValueError("the catalogue needs an 'other' category")
        fallback = [c for c in self.categories if c.id == self.surgical_fallback]
        if not fallback or fallback[0].practice == "medical":
            raise ValueError(f"surgical_fallback {self.surgical_fallback!r} must be a surgical category")
        return self

    def get(self, category_id: str) -> RoleCategory:
        for category in self.categories:
            if category.id == category_id:
                return category
        raise KeyError(category_id)

    @cached_property
    def named(self) -> dict[str, RoleCategory]:
        """Each category by the canonical form of its name, id and aliases (the first category to claim a
        form keeps it); built once, not for every label a run maps."""
        named: dict[str, RoleCategory] = {}
        for category in self.categories:
            for name in (category.name, category.id.replace("_", " "), *category.aliases):
                named.setdefault(canonical(name, self.spelling), category)
        return named

    def map_label(self, label: str) -> RoleCategory:
        """The category for a free-text label such as "Interventional cardiologist"."""
        return self.named.get(canonical(label, self.spelling)) or best_category(self, label)


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    text = resources.files("consilium.roles").joinpath("catalogue.yaml").read_text(encoding="utf-8")
    return Catalogue.model_validate(yaml.safe_load(text))
