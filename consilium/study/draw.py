"""Which outputs a study rates, and who rates which in what order.

An output is one component of one completed arm's trace that the rubric scores with criteria a physician
rates (the judges' own notion: :attr:`Rubric.components` and :meth:`Rubric.criteria_for`; the texts are
the protocol's, :func:`consilium.judges.components.component_texts`). A failed arm has no output: it is
counted, never drawn.

* :func:`sample_outputs`: ``N`` of them, stratified by (model, variant): each stratum's quota is its share
  of ``N`` by the largest-remainder method (ties to the larger stratum, then the stratum's name), and its
  outputs are drawn without replacement by the package's seeded generator (:func:`consilium.stats.generator`,
  key ``study sample <model> <variant>``);
* :func:`assign`: each output to ``K`` distinct raters, balanced: the outputs in draw order, each taking the
  next ``K`` raters of one cycle through the raters (shuffled once by the seed), so every rater's load is
  ⌊NK/R⌋ or ⌈NK/R⌉ and no rater gets an output twice (K ≤ R);
* :func:`orders`: each rater's queue in a random order of their own (key ``study order <rater>``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from consilium.cases import Case
from consilium.errors import UserError
from consilium.graphs.registry import protocol_of
from consilium.judges.components import component_texts
from consilium.judges.rubric import Rubric
from consilium.runfolder import RunFolder
from consilium.stats import generator

__all__ = ["Drawn", "Output", "assign", "draw_outputs", "orders", "sample_outputs"]


@dataclass(frozen=True)
class Output:
    """A rated output, de-blinded: what export names it by, and the texts the rater sees."""

    case_id: str
    component: str
    variant: str
    model: str
    run: str
    trace: str  # relative to the run folder
    case_text: str
    output_text: str

    @property
    def stratum(self) -> tuple[str, str]:
        return self.model, self.variant


@dataclass(frozen=True)
class Drawn:
    outputs: list[Output]
    skipped_arms: int  # arms that did not complete
    missing: int  # completed arms' components the rubric scores that their trace does not have


def rated_components(rubric: Rubric, components: Sequence[str] | None) -> list[str]:
    """The components to rate: those asked for (default: every one) that the rubric scores with criteria."""
    ratable = [c for c in rubric.components if rubric.criteria_for(c)]
    if rubric.kind.criteria_from_case or rubric.kind.name == "diagnosis_match" or not ratable:
        raise UserError(f"--rubric: {rubric.name} scores no criteria of its own a physician rates (scoring "
                        f"{rubric.kind.name}); a study rates a criteria rubric such as ai-consilium")
    if components is None:
        return ratable
    wrong = [c for c in components if c not in ratable]
    if wrong or not components:
        raise UserError(f"--components: {rubric.name} scores no {', '.join(wrong) or 'component'} with criteria "
                        f"(its components: {', '.join(ratable)})")
    return [c for c in ratable if c in components]


def draw_outputs(folder: RunFolder, rubric: Rubric, components: Sequence[str]) -> Drawn:
    """Every output of the run's completed arms on ``components``, in a stable order (trace, component)."""
    arms = folder.arms()
    done = sorted({a.trace for a in arms if a.completed and a.trace})
    skipped = sum(1 for a in arms if not a.completed)
    outputs, missing = [], 0
    for recorded in done:
        path = folder.trace_location(recorded)
        trace = folder.read_trace(path)
        if trace.status != "completed":
            skipped += 1
            continue
        texts = component_texts(trace)
        protocol = protocol_of(trace)
        variant = protocol.variant(trace) if protocol.variants else ""
        case_text = Case.model_validate(trace.case).render()
        for component in components:
            text = texts.get(component)
            if not text or not text.strip():
                missing += 1
                continue
            outputs.append(Output(trace.case_id, component, variant, trace.model, trace.run_id,
                                  folder.relative(path), case_text, text))
    return Drawn(outputs, skipped, missing)


def _quotas(sizes: dict[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """Largest remainders of ``n × size / total``, in whole numbers (no float ties)."""
    total = sum(sizes.values())
    quotas = {s: n * size // total for s, size in sizes.items()}
    rest = n - sum(quotas.values())
    for s in sorted(sizes, key=lambda s: (-(n * sizes[s] % total), -sizes[s], s))[:rest]:
        quotas[s] += 1
    return quotas


def sample_outputs(outputs: list[Output], n: int, seed: int) -> list[Output]:
    """``n`` outputs stratified by (model, variant), proportionally (module docstring); all when ``n`` ≥ all."""
    if n >= len(outputs):
        return list(outputs)
    strata: dict[tuple[str, str], list[Output]] = defaultdict(list)
    for output in outputs:
        strata[output.stratum].append(output)
    chosen: list[Output] = []
    for stratum, quota in sorted(_quotas({s: len(o) for s, o in strata.items()}, n).items()):
        members = strata[stratum]
        picks = generator(seed, f"study sample {stratum[0]} {stratum[1]}").choice(len(members), quota, replace=False)
        chosen += [members[int(i)] for i in sorted(picks)]
    order = {id(o): i for i, o in enumerate(outputs)}
    return sorted(chosen, key=lambda o: order[id(o)])


def assign(outputs: int, raters: Sequence[str], per_output: int, seed: int) -> list[list[str]]:
    """For each output (by index), the ``per_output`` raters who rate it (module docstring)."""
    cycle = [raters[int(i)] for i in generator(seed, "study raters").permutation(len(raters))]
    return [[cycle[(i * per_output + j) % len(cycle)] for j in range(per_output)] for i in range(outputs)]


def orders(queues: dict[str, list[int]], seed: int) -> dict[str, list[int]]:
    """Each rater's output indices in the rater's own seeded random order."""
    return {rater: [items[int(i)] for i in generator(seed, f"study order {rater}").permutation(len(items))]
            for rater, items in queues.items()}


def run_key(folder: RunFolder) -> str:
    """What a study names its run by: the manifest's run id (stable when the folder moves or another site
    mounts it), else the folder's resolved path."""
    if folder.has_manifest:
        run_id = folder.manifest_data().get("run_id")
        if isinstance(run_id, str) and run_id:
            return run_id
    return str(Path(folder.path).resolve())
