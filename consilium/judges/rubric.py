"""Rubrics as data (consilium/judges/rubrics/*.yaml), validated on load (STYLE.md 3).

One model serves every rubric: criteria with a scale and anchors, the
components each criterion applies to, optional boolean flags the judge must
set, and a ``scoring`` rule naming how the judge's answers become scores.
The texts are this project's wording; scales, anchors' meaning, weights and
formulas follow the papers cited in each file's ``source``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from importlib.metadata import EntryPoint, entry_points
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from consilium.datafiles import first_error
from consilium.errors import UserError
from consilium.judges.kinds import Scoring, ScoringKind, scoring_kind
from consilium.log import get_logger

__all__ = [
    "COMPONENTS",
    "RUBRIC_ENTRY_POINTS",
    "AnswerShape",
    "Component",
    "Criterion",
    "Flag",
    "Rubric",
    "analysis_rubric",
    "analysis_rubric_names",
    "builtin_rubric_names",
    "load_rubric",
    "parse_rubric",
    "plugin_rubric_names",
    "rubric_names",
]

log = get_logger(__name__)

#: The out-of-scope score (consilium/judges/scope.py), which a frozen scale never holds.
OUT_OF_SCOPE_SCORE = -1

#: What a judge can score. role_reasoning / role_opinion: the primary role's structured
#: opinion without / with only its final conclusion; conclusion: the final report (consilium)
#: or the board conclusion; answer: a Specialist Turn answer; differential: a ranked differential.
Component = Literal["role_reasoning", "role_opinion", "conclusion", "answer", "differential"]
COMPONENTS: tuple[str, ...] = ("role_reasoning", "role_opinion", "conclusion", "answer", "differential")

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Flag(_Strict):
    """A yes/no finding the judge reports beside its score (e.g. critical_error)."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    definition: str


class Criterion(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    name: str
    definition: str
    anchors: dict[int, str] = Field(default_factory=dict, description="score → what it means")
    components: list[Component] = Field(min_length=1)
    weight: float = 1.0
    whole_case: bool = Field(default=False, description="scored once for the whole case, not per output")


class AnswerShape(_Strict):
    """How the judge's answer is laid out, as the paper's own output schema lays it out (e.g.
    opentumorboard.txt App. C.1-C.3); consilium/judges/answers.py builds the schema and reads it."""

    score_key: str = Field(default="score", pattern=r"^[a-z][a-z0-9_]*$", description="the score's key")
    nest: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]*$",
                             description="score and rationale sit in an object under this key (C.2)")
    score_first: bool = Field(default=False, description="the score before the rationale (C.1-C.3)")
    rationale_required: bool = Field(default=False, description="an empty rationale is invalid (minLength 1)")


class Rubric(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    version: int = Field(ge=1)
    title: str
    source: str = Field(description="paper file and tables/sections it follows")
    scoring: Scoring
    scale: list[int] = Field(description="allowed scores; -1 means out of scope where the rubric allows it")
    not_evaluable: bool = Field(description="whether the judge may return not-evaluable instead of a score")
    reference: Literal["none", "diagnosis", "conclusion", "decisions", "answer", "case_criteria"]
    instructions: str = Field(description="how to judge, in this project's words")
    rules: list[str] = Field(default_factory=list, description="scoring rules the judge must apply")
    scale_anchors: dict[int, str] = Field(default_factory=dict)
    flags: list[Flag] = Field(default_factory=list)
    criteria: list[Criterion] = Field(default_factory=list)
    rationale_max_chars: int = Field(default=1000, ge=100)
    slide_images: bool = Field(default=False, description="a vision judge is sent each slide's image beside its "
                                                          "caption (opentumorboard.txt App. C.1); else captions only")
    answer: AnswerShape = Field(default_factory=AnswerShape, description="the answer's layout, as the "
                                                          "paper's output schema lays it out")
    layout: Literal["consilium", "otb"] = Field(
        default="consilium", description="the judge messages' layout: consilium's tagged sections with the task in "
                                         "the user message, or the OpenTumorBoard authors' upper-case tags with the "
                                         "data alone in the user message (consilium/judges/otb_layout.py)")
    frozen_scale: list[int] | None = Field(
        default=None, description="the scores an in-scope dimension takes under a frozen scope, where they differ "
                                  "from the scale's (the authors' reward code takes 0-5); null: the scale's")
    decoding: Literal["constrained", "paper"] | None = Field(
        default=None, description="pins the judge's decoding order (consilium/judges/decoding.py): paper for a "
                                  "rubric whose paper judged schema-free first; null: the backend's default")
    provenance: dict[str, Any] | None = Field(default=None, description="for an evolved rubric: parent version, "
                                                                         "ratings, seed, MAE before and after")

    @model_validator(mode="after")
    def _consistent(self) -> Rubric:
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError(f"criterion ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        if sorted(set(self.scale)) != sorted(self.scale) or not self.scale:
            raise ValueError("scale must list distinct scores")
        for criterion in self.criteria:
            unknown = sorted(set(criterion.anchors) - set(self.scores))
            if unknown:
                raise ValueError(f"criterion {criterion.id}: anchors for scores outside the scale: {unknown}")
        if self.frozen_scale is not None and (OUT_OF_SCOPE_SCORE in self.frozen_scale or not self.frozen_scale):
            raise ValueError("frozen_scale lists the in-scope scores: not empty, without -1")
        unknown = sorted(set(self.scale_anchors) - set(self.scale))
        if unknown:
            raise ValueError(f"scale_anchors outside the scale: {unknown}")
        if not self.kind.criteria_from_case and not self.criteria:
            raise ValueError("a rubric needs criteria (only signed_criteria takes them from the case)")
        return self

    @property
    def scores(self) -> list[int]:
        """Every score an item may hold: the scale's and the frozen scale's."""
        return sorted({*self.scale, *(self.frozen_scale or ())})

    def criteria_for(self, component: str) -> list[Criterion]:
        return [c for c in self.criteria if component in c.components]

    @property
    def kind(self) -> ScoringKind:
        """What the rubric's ``scoring`` kind needs and decides (consilium/judges/kinds.py)."""
        return scoring_kind(self.scoring)

    @property
    def components(self) -> list[str]:
        """The components the rubric scores, in :data:`COMPONENTS` order."""
        fixed = self.kind.fixed_components
        return list(fixed) if fixed else [c for c in COMPONENTS if any(c in crit.components for crit in self.criteria)]


def parse_rubric(text: str, origin: str) -> Rubric:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{origin}: not valid YAML ({str(exc).splitlines()[0]})") from None
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{origin}: {first_error(exc)}") from None


#: The entry-point group a package adds rubrics under: the entry point's name is the rubric's name, its
#: object a path to the rubric's YAML file or a callable returning a path, a Rubric or the rubric's data.
RUBRIC_ENTRY_POINTS = "consilium.rubrics"


@cache
def _shipped(*folder: str) -> tuple[str, ...]:
    """The rubric files shipped in a folder of the package (listed once: shipped files do not change)."""
    found = resources.files("consilium.judges").joinpath(*folder)
    return tuple(sorted(e.name.removesuffix(".yaml") for e in found.iterdir() if e.name.endswith(".yaml")))


def builtin_rubric_names() -> list[str]:
    """The rubrics shipped in consilium/judges/rubrics/."""
    return list(_shipped("rubrics"))


def analysis_rubric_names() -> list[str]:
    """The rubrics of consilium's own analyses (consilium/judges/rubrics/analysis/): ``judge --rubric`` does not
    offer them, their command loads them by name (analyze's ``dissent-uptake``)."""
    return list(_shipped("rubrics", "analysis"))


@cache
def analysis_rubric(name: str) -> Rubric:
    """The analysis rubric ``name`` (one of :func:`analysis_rubric_names`)."""
    where = f"consilium/judges/rubrics/analysis/{name}.yaml"
    return parse_rubric(resources.files("consilium.judges").joinpath("rubrics", "analysis", f"{name}.yaml")
                        .read_text(encoding="utf-8"), where)


@cache
def _plugins() -> dict[str, EntryPoint]:
    """Installed packages' rubrics by name. A built-in name wins over a plugin's (never shadowed; the plugin is
    ignored with a warning), and a name two packages add is refused, naming both."""
    builtin = set(builtin_rubric_names())
    found: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=RUBRIC_ENTRY_POINTS):
        found.setdefault(ep.name, []).append(ep)
    plugins = {}
    for name, points in sorted(found.items()):
        where = "; ".join(f"{ep.value}" for ep in points)
        if name in builtin:
            _shadowed[name] = where
        elif len(points) > 1:
            _ambiguous[name] = where  # refused when asked for; the other rubrics stay usable
        else:
            plugins[name] = points[0]
    return plugins


#: Plugins a built-in rubric's name shadows: name → their entry points (said when the built-in is loaded).
_shadowed: dict[str, str] = {}
#: Plugin rubric names more than one installed package adds: name → their entry points.
_ambiguous: dict[str, str] = {}


def plugin_rubric_names() -> list[str]:
    """The rubrics installed packages add through the ``consilium.rubrics`` entry points."""
    return sorted(_plugins())


def rubric_names() -> list[str]:
    """Every rubric ``--rubric NAME`` finds: the built-in ones and the plugins'."""
    return sorted({*builtin_rubric_names(), *plugin_rubric_names()})


def _plugin_rubric(ep: EntryPoint, flag: str) -> Rubric:
    """The rubric a plugin's entry point gives; anything wrong with it is a UserError naming the plugin."""
    where = f"{flag}: rubric plugin {ep.name!r} (entry point {ep.value!r} in group {RUBRIC_ENTRY_POINTS})"
    try:
        found: Any = ep.load()
    except Exception as exc:  # a plugin's import can fail in any way; the user must see which plugin
        raise UserError(f"{where}: cannot be loaded ({type(exc).__name__}: {exc})") from None
    if callable(found) and not isinstance(found, (str, PathLike)):
        make: Callable[[], Any] = found
        try:
            found = make()
        except Exception as exc:
            raise UserError(f"{where}: raised {type(exc).__name__}: {exc}") from None
    if isinstance(found, (str, PathLike)):
        path = Path(found)
        if not path.is_file():
            raise UserError(f"{where}: no such rubric file {path}")
        rubric = parse_rubric(path.read_text(encoding="utf-8"), str(path))
    elif isinstance(found, Rubric):
        rubric = found
    elif isinstance(found, Mapping):
        try:
            rubric = Rubric.model_validate(dict(found))
        except ValidationError as exc:
            raise UserError(f"{where}: {first_error(exc)}") from None
    else:
        raise UserError(f"{where}: gives a {type(found).__name__}, not a rubric file path, a Rubric or a "
                        "callable returning one")
    if rubric.name != ep.name:
        raise UserError(f"{where}: name: {rubric.name!r} differs from the entry point's name")
    return rubric


def _unknown(name: str, flag: str) -> UserError:
    plugins = plugin_rubric_names()
    return UserError(f"{flag}: unknown rubric {name!r} (built-in: {', '.join(builtin_rubric_names())}; "
                     f"plugins: {', '.join(plugins) if plugins else 'none installed'}; or a rubric YAML file)")


@cache
def load_rubric(name_or_path: str, *, flag: str = "--rubric") -> Rubric:
    """A shipped rubric by name, a plugin's by name (entry points ``consilium.rubrics``), or a rubric
    file by path; ``flag`` names the option in an error."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return parse_rubric(path.read_text(encoding="utf-8"), str(path))
    if name_or_path not in builtin_rubric_names():
        plugin = _plugins().get(name_or_path)
        if name_or_path in _ambiguous:
            raise UserError(f"{flag}: rubric plugin {name_or_path!r}: more than one installed package adds it "
                            f"({_ambiguous[name_or_path]})")
        if plugin is None:
            raise _unknown(name_or_path, flag)
        return _plugin_rubric(plugin, flag)
    _plugins()
    if name_or_path in _shadowed:  # a plugin of a built-in's name is ignored, with a warning
        log.warning("rubric_plugin_ignored", rubric=name_or_path, plugins=_shadowed[name_or_path],
                    reason="a built-in rubric has this name")
    text = resources.files("consilium.judges").joinpath("rubrics", f"{name_or_path}.yaml").read_text("utf-8")
    rubric = parse_rubric(text, f"consilium/judges/rubrics/{name_or_path}.yaml")
    if rubric.name != name_or_path:
        raise UserError(f"consilium/judges/rubrics/{name_or_path}.yaml: name: {rubric.name!r} differs from the file")
    return rubric
