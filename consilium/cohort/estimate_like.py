"""What a previous cohort spent, read from its traces and judgements, for an estimate (``--like RUN_DIR``).

Per (protocol, variant, stage, whether the moderator answered: its calls' ``role="moderator"``): how many
calls each trace made (their mean, fewest and most: the spread
of its panels and review rounds), and per call its input tokens as a line in the case's size
(``a + b·case tokens``, least squares over its calls; one case size: the case counted once, ``b = 1``)
and its mean output tokens. Per (rubric, protocol, variant): the same for a judgement's calls, per judge
of its jury. The case's size is its rendered text counted with the project's tokenizer
(consilium/models/tokens.py), as the panel's prompts carry it.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from consilium.cases import Case
from consilium.cohort.completeness import cohort_completeness
from consilium.errors import UserError
from consilium.graphs.registry import protocol_of, read_trace
from consilium.judges.record import read_judgement
from consilium.models import CallRecord
from consilium.models.tokens import count_tokens
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import judgement_files, trace_files
from consilium.spec.manifest import MANIFEST, load_manifest

__all__ = ["Prior", "StageHistory", "StageKey", "case_tokens", "read_prior"]

#: The key of every model's traces together (a model the previous cohort did not run is estimated from them).
ANY = "*"
#: A stage, and whether the moderator's model answered it (a board's turns are the moderator's and the panel's).
StageKey = tuple[str, bool]
#: The largest share of a case's size one call is taken to carry: a fit on few, noisy points is held to it.
MAX_SLOPE = 4.0


def case_tokens(case: Case) -> int:
    """A case's size as every prompt carries it: its rendered text, in the project's tokenizer's tokens."""
    return count_tokens(case.render())


@dataclass
class _Sample:
    calls: list[float] = field(default_factory=list)  # per trace (or judgement, per judge)
    answers: list[float] = field(default_factory=list)  # of them, the answers used (not sent back, not asked again)
    completed: list[bool] = field(default_factory=list)  # whether the trace (or judged trace) completed
    points: list[tuple[int, int, int]] = field(default_factory=list)  # per call: case tokens, input, output


@dataclass(frozen=True)
class StageHistory:
    """One stage as a previous cohort made it: calls per trace (mean, fewest, most), of them the answers used
    (the same; a call whose answer was sent back for repair or asked again is not one) and the calls an
    answer took (its repairs and retries), and per call its input tokens (``intercept + slope · case
    tokens``) and output tokens."""

    calls: tuple[float, float, float]
    intercept: float
    slope: float
    output: float
    answers: tuple[tuple[float, bool], ...] = ()  # per trace: its answers, and whether it completed
    per_answer: float = 1.0

    def held(self, fewest: int, most: int) -> tuple[float, float, float]:
        """Calls per trace (mean, fewest, most) with each trace's answers held to ``fewest``..``most`` and
        taking the calls an answer took: a failed trace is held from above only (it counts with the answers
        it gave)."""
        held = [min(max(n, fewest) if completed else n, most) * self.per_answer for n, completed in self.answers]
        return _spread(held)

    def input_tokens(self, case: int) -> float:
        return self.intercept + self.slope * case


@dataclass(frozen=True)
class Prior:
    """A previous cohort, as an estimate reads it."""

    run_dir: Path
    panel: dict[tuple[str, str, str], dict[StageKey, StageHistory]]  # (model, protocol, variant) → stage → history
    judges: dict[tuple[str, str, str, str], StageHistory]  # (rubric, model, protocol, variant) → per judge
    rounds: dict[tuple[str, str], Counter[int]]  # (protocol, variant) → review rounds → traces
    traces: int
    failed: int
    partial: str | None = None  # a cohort stopped or still running: ``partial: 6 of 12 planned arms, cohort …``

    def stages(self, model: str, protocol: str, variant: str) -> dict[StageKey, StageHistory] | None:
        """The model's own history in (protocol, variant), else every model's of the previous cohort."""
        return self.panel.get((model, protocol, variant)) or self.panel.get((ANY, protocol, variant))

    def judged(self, rubric: str, model: str, protocol: str, variant: str) -> StageHistory | None:
        return self.judges.get((rubric, model, protocol, variant)) or self.judges.get((rubric, ANY, protocol, variant))

    def ran(self, model: str) -> bool:
        """Whether the previous cohort ran ``model`` (else its figures are every model's it ran)."""
        return any(key[0] == model for key in self.panel)


def _spread(values: list[float]) -> tuple[float, float, float]:
    values = values or [0.0]
    return sum(values) / len(values), min(values), max(values)


def _history(sample: _Sample) -> StageHistory:
    calls, answers = _spread(sample.calls), tuple(zip(sample.answers, sample.completed, strict=True))
    per_answer = sum(sample.calls) / sum(sample.answers) if sum(sample.answers) else 1.0
    points = sample.points
    if not points:
        return StageHistory(calls, 0.0, 0.0, 0.0, answers, per_answer)
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    var = sum((p[0] - mx) ** 2 for p in points)
    slope = 1.0 if var < 1e-9 else sum((p[0] - mx) * (p[1] - my) for p in points) / var
    slope = min(max(slope, 0.0), MAX_SLOPE)
    return StageHistory(calls, my - slope * mx, slope, sum(p[2] for p in points) / n, answers, per_answer)


def _add(sample: _Sample, calls: list[CallRecord], size: int, completed: bool, per: int = 1) -> None:
    sample.calls.append(len(calls) / per)
    sample.completed.append(completed)
    # a stage whose every attempt was refused still had an answer to give: its calls are that answer's
    sample.answers.append(max(sum(c.error is None for c in calls), 1 if calls else 0) / per)
    sample.points += [(size, c.usage.input_tokens, c.usage.output_tokens) for c in calls]


def _check(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise UserError(f"--like {run_dir}: " + ("a file, not a cohort's folder" if run_dir.exists() else
                                                 "no such folder"))
    if not (run_dir / MANIFEST).is_file():
        raise UserError(f"--like {run_dir}: not a cohort folder (no {MANIFEST}); give a folder `consilium cohort` "
                        "wrote")
    try:
        load_manifest(run_dir / MANIFEST, what="--like reads a cohort's traces")
    except UserError as exc:
        raise UserError(f"--like: {exc}") from None


def _rows(run_dir: Path) -> list[dict[str, str]]:
    table = RunFolder(run_dir).arms_csv
    if not table.is_file():
        return []
    with table.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _specs(rows: list[dict[str, str]], run_dir: Path) -> dict[Path, str]:
    """Each trace file's panel model spec, from arms.csv (a trace records only its model's id)."""
    return {(run_dir / row["trace"]).resolve(): row["model_spec"] for row in rows
            if row.get("trace") and row.get("model_spec")}


def read_prior(run_dir: Path) -> Prior:
    """The calls and tokens of the cohort in ``run_dir``; a folder that is not a cohort, or one without a
    trace yet, is a :class:`UserError` naming it."""
    _check(run_dir)
    files = trace_files(run_dir)
    if not files:
        raise UserError(f"--like {run_dir}: the cohort has no traces yet, so there is nothing to estimate from")
    rows = _rows(run_dir)
    specs = _specs(rows, run_dir)
    done = cohort_completeness(run_dir, rows)
    made: dict[tuple[str, str, str], list[dict[StageKey, list[CallRecord]]]] = defaultdict(list)  # per trace
    sizes: dict[tuple[str, str, str], list[tuple[int, bool]]] = defaultdict(list)  # per trace: size, completed
    rounds: dict[tuple[str, str], Counter[int]] = defaultdict(Counter)
    arms: dict[tuple[Path, str], tuple[str, str, str, int, bool]] = {}  # trace file → model, protocol, variant,
    # size, completed
    failed = 0
    for path in files:
        trace = read_trace(path)
        protocol = protocol_of(trace)
        spec, variant = specs.get(path.resolve(), trace.model), protocol.variant(trace)
        size = case_tokens(Case.model_validate(trace.case))
        completed = trace.status == "completed"
        arms[(path.parent, path.name)] = (spec, protocol.name, variant, size, completed)
        failed += not completed
        by_stage: dict[StageKey, list[CallRecord]] = defaultdict(list)
        for call in trace.calls:
            by_stage[(call.stage, call.role == "moderator")].append(call)
        for model in (spec, ANY):
            made[(model, protocol.name, variant)].append(by_stage)
            sizes[(model, protocol.name, variant)].append((size, completed))
        rounds[(protocol.name, variant)][len(getattr(trace, "rounds", None) or [])] += 1
    stages: dict[tuple[str, str, str], dict[StageKey, _Sample]] = {}
    for key, traces in made.items():
        stages[key] = defaultdict(_Sample)
        for stage in dict.fromkeys(s for by_stage in traces for s in by_stage):  # a trace without it: 0 calls
            for by_stage, (size, completed) in zip(traces, sizes[key], strict=True):
                _add(stages[key][stage], by_stage.get(stage, []), size, completed)
    judged: dict[tuple[str, str, str, str], _Sample] = defaultdict(_Sample)
    seen: set[tuple[Path, str, str]] = set()  # (folder, trace, rubric) judged
    for path in judgement_files(run_dir):
        judgement = read_judgement(path)
        arm = arms.get((path.parent, judgement.trace))
        seen.add((path.parent, judgement.trace, judgement.rubric))
        # A completed trace judged without a call: its case lacks what the rubric needs (a reference, its own
        # criteria), known for each case an estimate counts; such a judgement says nothing of the calls an
        # evaluable one takes. A failed arm's judgement counts with none, as its panel with the calls it made.
        if arm is not None and not (arm[4] and not judgement.calls):
            for model in (arm[0], ANY):
                _add(judged[(judgement.rubric, model, arm[1], arm[2])], judgement.calls, arm[3], arm[4],
                     per=len(judgement.jury) if judgement.jury else 1)
    # A failed arm the cohort did not judge made no judge call: counted so, for each rubric it judged with.
    for rubric in {rubric for _, _, rubric in seen}:
        for (folder, name), (spec, kind, variant, size, completed) in arms.items():
            if not completed and (folder, name, rubric) not in seen:
                for model in (spec, ANY):
                    _add(judged[(rubric, model, kind, variant)], [], size, False)
    return Prior(run_dir=run_dir, panel={k: {s: _history(v) for s, v in by.items()} for k, by in stages.items()},
                 judges={k: _history(v) for k, v in judged.items()}, rounds=dict(rounds), traces=len(files),
                 failed=failed, partial=done.mark() if done is not None and done.partial else None)
