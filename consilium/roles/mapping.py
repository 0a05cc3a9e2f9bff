"""Specialty-aware mapping of a free-text role label to a catalogue category.

The paper keeps every model-assigned label with its category (ai-consilium.txt,
Fig. 2c caption, line 41) but does not say how labels are grouped; this matcher is
this project's. A label is read as qualifiers plus a head noun ("cardiac" +
"radiologist"): the head decides the discipline, a surgical head ("surgeon",
"surgery") keeps the label among surgical categories, and ties are broken by the
categories' descriptions, never by their order in the catalogue.

It reads the catalogue through the two small shapes below, so the catalogue builds on this module and
never the other way round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple, Protocol, TypeVar

__all__ = ["Categories", "Category", "LabelTerms", "Practice", "best_category", "canonical", "label_terms", "stem"]

# Role nouns that say nothing about the specialty; "surgeon" is not one of them.
GENERIC = frozenset({
    "specialist", "specialists", "physician", "physicians", "doctor", "consultant", "expert", "attending",
    "fellow", "md", "clinician", "practitioner", "medicine", "clinical", "service", "team", "care", "the",
    "and", "of", "in", "for", "with", "a", "an", "disease", "diseases", "disorder", "disorders", "senior",
})
_SURGICAL_WORDS = frozenset({"surgeon", "surgeons", "surgery", "surgical", "surgically", "operative"})
# Longest first; a stem keeps at least two letters.
_SUFFIXES = ("ological", "ologists", "ologist", "ography", "ographer", "ologic", "ology", "icians", "ician",
             "icist", "ions", "ists", "ical", "ion", "ist", "ics", "ous", "ary", "ic", "ac", "al", "ar",
             "ia", "y", "o", "e", "s")


def canonical(label: str, spelling: Sequence[tuple[str, str]] = ()) -> str:
    """Lower-case words without punctuation, with British spellings made American
    (``spelling`` pairs from the catalogue, e.g. ``("paed", "ped")``)."""
    text = " ".join(re.sub(r"[^a-z0-9]+", " ", label.lower()).split())
    for british, american in spelling:
        text = text.replace(british, american)
    return text


def stem(word: str) -> str:
    """A crude shared stem, so "cardiac", "cardiology" and "cardiologist" all read ``cardi``."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            return word[: -len(suffix)]
    return word


def _stems(words: Iterable[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words if w not in GENERIC and w not in _SURGICAL_WORDS)


class LabelTerms(NamedTuple):
    """A label read as its specialty stems, its head stem (None for a surgical head) and whether
    the head is surgical."""

    stems: frozenset[str]
    head: str | None
    surgical: bool


def label_terms(text: str) -> LabelTerms:
    """Split a canonical label into qualifier stems and its head: the last word that is not generic."""
    words = text.split()
    meaningful = [w for w in words if w not in GENERIC]
    head_word = meaningful[-1] if meaningful else ""
    surgical = head_word in _SURGICAL_WORDS or "surg" in head_word
    head = None if head_word in _SURGICAL_WORDS or not head_word else stem(head_word)
    return LabelTerms(_stems(words), head, surgical)


Practice = Literal["medical", "surgical", "both"]


class Category(Protocol):
    """What the matcher reads of a category (``consilium.roles.catalogue.RoleCategory``)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def aliases(self) -> list[str]: ...
    @property
    def practice(self) -> Practice: ...


C = TypeVar("C", bound=Category)


class Categories(Protocol[C]):
    """What the matcher reads of the catalogue (``consilium.roles.catalogue.Catalogue``)."""

    @property
    def categories(self) -> list[C]: ...
    @property
    def spelling(self) -> list[tuple[str, str]]: ...
    @property
    def surgical_fallback(self) -> str: ...
    def get(self, category_id: str) -> C: ...


class _Score(NamedTuple):
    kind_ok: bool        # the category practises what the label's head says (surgical or not)
    head: bool           # the label's head noun is among the matched words
    share: float         # share of the alias's words the label matched
    matched: int         # how many words matched
    described: int       # label words found in the category's description (the tie-break by meaning)


def _score(terms: LabelTerms, category: Category, aliases: list[frozenset[str]],
           described: frozenset[str]) -> _Score | None:
    best: tuple[bool, float, int] | None = None
    for alias in aliases:
        common = terms.stems & alias
        if common and alias:
            candidate = (terms.head in common, len(common) / len(alias), len(common))
            best = candidate if best is None or candidate > best else best
    in_description = len(terms.stems & described)
    if best is None and not (terms.surgical and in_description):
        return None
    practice: Practice = category.practice
    kind_ok = practice == "both" or (practice == "surgical") == terms.surgical
    head, share, matched = best if best is not None else (False, 0.0, 0)
    return _Score(kind_ok, head, share, matched, in_description)


def best_category(catalogue: Categories[C], label: str) -> C:
    """The category for a label that matched no alias exactly (see the module docstring)."""
    terms = label_terms(canonical(label, catalogue.spelling))
    ranked: list[tuple[_Score, str, C]] = []
    for category in catalogue.categories:
        aliases = [_stems(canonical(a, catalogue.spelling).split()) for a in [category.name, *category.aliases]]
        described = _stems(canonical(category.description, catalogue.spelling).split())
        score = _score(terms, category, aliases, described)
        if score is None or (terms.surgical and not score.kind_ok):
            continue
        if score.head or score.share >= 0.5 or (terms.surgical and score.described):
            ranked.append((score, category.id, category))
    if ranked:
        # Highest score wins; the id only orders exact ties, so catalogue order never matters.
        ranked.sort(key=lambda item: (item[0], _reverse(item[1])), reverse=True)
        return ranked[0][2]
    if terms.surgical:
        return catalogue.get(catalogue.surgical_fallback)
    return catalogue.get("other")


def _reverse(text: str) -> tuple[int, ...]:
    """Sort key that puts ``text`` first among equals when sorting in reverse (alphabetical order)."""
    return tuple(-ord(c) for c in text)
