"""A cohort's calls, tokens and dollars before any model call (``consilium cohort --estimate``).

Per stage of the panel and per rubric, summed over the cohort's cases, models and variants: from a
previous cohort's traces (``--like RUN_DIR``: its calls per trace, which carry its panels' sizes and
review rounds, and its tokens per call as a line in the case's size; consilium/cohort/estimate_like.py),
else from each protocol's stage structure under the run settings (consilium/cohort/estimate_shape.py,
consilium/cohort/estimate_judges.py): then a range, fewest to most, and output tokens only bounded above
(``≤``: every answer at its stage's ``max_tokens``). Dollars where the model's prices are known
(consilium/models/pricing.py), every input token at the ``input`` price; else "—".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from consilium.cases import Case
from consilium.cohort.estimate_judges import JudgeBounds, judge_bounds
from consilium.cohort.estimate_like import Prior, StageHistory, case_tokens
from consilium.cohort.estimate_shape import stage_bounds
from consilium.graphs.bounds import StageBounds
from consilium.judges.rubric import Rubric
from consilium.models.pricing import PER_TOKENS, Prices
from consilium.traces.config import RunConfig

__all__ = ["USD_DIGITS", "CohortEstimate", "CohortShape", "EstimateRow", "Span", "estimate"]


@dataclass(frozen=True)
class Span:
    """An estimated figure: the expected value (None: only a range is known) and its fewest and most
    (``low`` None: no lower bound is claimed; ``high`` None: unknown)."""

    expected: float | None
    low: float | None
    high: float | None

    def __add__(self, other: Span) -> Span:
        def add(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a + b
        return Span(add(self.expected, other.expected), add(self.low, other.low), add(self.high, other.high))

    def scaled(self, factor: float) -> Span:
        return self.times(Span(factor, factor, factor))

    def times(self, factor: Span) -> Span:
        def mul(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a * b
        return Span(mul(self.expected, factor.expected), mul(self.low, factor.low), mul(self.high, factor.high))

    def rounded(self, digits: int = 0) -> Span:
        def cut(a: float | None) -> float | None:
            return None if a is None else round(a, digits)
        return Span(cut(self.expected), cut(self.low), cut(self.high))


#: A row's dollars are kept, and printed, to the millionth (consilium/cohort/estimate_table.py).
USD_DIGITS = 6


ZERO = Span(0.0, 0.0, 0.0)


@dataclass
class CohortShape:
    """What a cohort will run: its cases, each protocol's variants and settings, the panel's models, the
    rubrics and their judges, the prices known (spec → prices), and the judges' settings."""

    cases: list[Case]
    protocols: dict[str, tuple[list[str], RunConfig]]
    models: list[str]
    rubrics: list[Rubric] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    prices: dict[str, Prices] = field(default_factory=dict)
    judge_max_tokens: int = 512
    judge_max_repairs: int = 2
    k: int = 5
    decoding: str | None = None  # the judges' decoding order asked for (--judge-decoding); None: by rubric/backend
    moderator: str | None = None  # the moderator's model (--moderator-model), when not the arm's panel model
    replicates: int = 1  # times each arm is run (an experiment's replicates)

    @cached_property
    def sizes(self) -> dict[str, int]:
        """Each case's size in tokens (estimate_like.case_tokens), counted once."""
        return {case.id: case_tokens(case) for case in self.cases}


@dataclass
class EstimateRow:
    """One stage of one part (``panel``, or ``judge <rubric>``) of one protocol variant, over every case and
    model; ``source`` is ``like`` (a previous cohort's figures for the model), ``like (all models)`` (for a
    model it did not run, every model's it ran) or ``bounds`` (the protocol's), joined by ``+`` when mixed."""

    part: str
    protocol: str
    variant: str
    stage: str
    source: str
    calls: Span = ZERO
    input_tokens: Span = ZERO
    output_tokens: Span = ZERO
    usd: Span = ZERO

    def scale(self, factor: int) -> None:
        self.calls, self.input_tokens = self.calls.scaled(factor), self.input_tokens.scaled(factor)
        self.output_tokens, self.usd = self.output_tokens.scaled(factor), self.usd.scaled(factor)

    def round(self) -> None:
        """Whole calls and tokens, dollars to the millionth: the row as it is shown, so that a total, the sum
        of its rows, is the sum of the figures printed."""
        self.calls, self.input_tokens = self.calls.rounded(), self.input_tokens.rounded()
        self.output_tokens, self.usd = self.output_tokens.rounded(), self.usd.rounded(USD_DIGITS)

    def add(self, calls: Span, per_input: Span, per_output: Span, prices: Prices | None) -> None:
        inputs, outputs = calls.times(per_input), calls.times(per_output)
        self.calls += calls
        self.input_tokens += inputs
        self.output_tokens += outputs
        self.usd += _usd(inputs, outputs, prices)


@dataclass(frozen=True)
class CohortEstimate:
    """Every row of the estimate, and what it was made from (the previous cohort read, if any); each row is
    summed over the cases, the models and the replicates (each arm run that many times)."""

    rows: list[EstimateRow]
    cases: int
    models: int
    like: Prior | None
    replicates: int = 1

    def parts(self) -> list[str]:
        return list(dict.fromkeys(row.part for row in self.rows))

    def total(self, part: str | None = None) -> EstimateRow:
        """The rows of ``part`` (every row: None) added up, as they are shown (each row rounded first)."""
        total = EstimateRow(part or "total", "", "", "", "")
        for row in self.rows:
            if part is None or row.part == part:
                total.calls += row.calls
                total.input_tokens += row.input_tokens
                total.output_tokens += row.output_tokens
                total.usd += row.usd
        total.usd = total.usd.rounded(USD_DIGITS)  # the float sum's noise
        return total


def _usd(inputs: Span, outputs: Span, prices: Prices | None) -> Span:
    if prices is None:
        return Span(None, None, None)

    def cost(i: float | None, o: float | None) -> float | None:
        return None if i is None or o is None else (i * prices.input + o * prices.output) / PER_TOKENS
    # No lower bound on output: the fewest dollars are the fewest input tokens' alone.
    low = cost(inputs.low, outputs.low if outputs.low is not None else 0.0)
    return Span(cost(inputs.expected, outputs.expected), low, cost(inputs.high, outputs.high))


def _seen(history: StageHistory, size: int, limits: tuple[int, int] | None) -> tuple[Span, Span, Span]:
    """Calls per trace, input and output tokens per call, as a previous cohort made them. Where the new
    cohort's settings bound the stage's answers (``limits``: fewest, most; rounds, panel size, a rubric's
    items), each prior trace's answers are held to them (a failed one's from above only) and take the prior's
    calls an answer (its repairs): a prior run with more rounds or a larger panel cannot make the new cohort
    spend more than its settings allow (StageHistory.held)."""
    mean, low, high = history.calls if limits is None else history.held(*limits)
    per_input = history.input_tokens(size)
    return Span(mean, low, high), Span(per_input, per_input, per_input), Span(*(history.output,) * 3)


def _bounded(stage: StageBounds, size: int) -> tuple[Span, Span, Span]:
    low, most = stage.calls[0], stage.most
    fewest = stage.prompt.tokens(size)
    most_in = fewest + stage.carried_tokens + stage.repaired_tokens
    return (Span(low if low == most else None, low, most), Span(None, fewest, most_in),
            Span(None, None, stage.max_output))


#: What a row may come from, in the order a row made from several names them.
SOURCES = ("like", "like (all models)", "bounds")


def _source(prior: Prior | None, spec: str, seen: object) -> str:
    """``like`` (the previous cohort's figures for this model), ``like (all models)`` (for a model it did not
    run: every model's it ran) or ``bounds``."""
    if prior is None or seen is None:
        return "bounds"
    return "like" if prior.ran(spec) else "like (all models)"


def _row(rows: dict[tuple[str, ...], EstimateRow], key: tuple[str, str, str, str], source: str) -> EstimateRow:
    """The row of ``key``; its sources joined by ``+`` when its models' figures came from more than one."""
    row = rows.setdefault(key, EstimateRow(*key, source=source))
    if source not in row.source.split("+"):
        row.source = "+".join(s for s in SOURCES if s in [*row.source.split("+"), source])
    return row


def _panel(shape: CohortShape, prior: Prior | None, rows: dict[tuple[str, ...], EstimateRow]) -> None:
    """Every (model, protocol variant, case) arm's stages, added to their rows: as the previous cohort made
    them where it has a history for the arm's model and variant, else by the protocol's bounds."""
    for spec in shape.models:
        for protocol, (variants, config) in shape.protocols.items():
            for position, variant in enumerate(variants):
                seen = prior.stages(spec, protocol, variant) if prior else None
                bounds = stage_bounds(protocol, variant, config) or []
                shared = {b.stage for b in bounds if b.shared}
                limits = {(b.stage, b.chair): b.calls for b in bounds}
                if not seen and not bounds:  # a plugin's protocol, with no history to go by: unknown, shown
                    _row(rows, ("panel", protocol, variant, "(every stage)"), "bounds").add(
                        Span(None, None, None), ZERO, ZERO, None)
                    continue
                for case in shape.cases:
                    size = shape.sizes[case.id]
                    made = (((s, chair, _seen(h, size, limits.get((s, chair)))) for (s, chair), h in seen.items())
                            if seen else ((b.stage, b.chair, _bounded(b, size)) for b in bounds))
                    for stage, chair, (calls, per_in, per_out) in made:
                        if stage in shared and position > 0:
                            continue  # made once per (case, model), by the arm's first variant
                        row = _row(rows, ("panel", protocol, variant, stage), _source(prior, spec, seen))
                        # the moderator's calls (--moderator-model) at its model's prices, the rest at the arm's
                        answerer = shape.moderator if chair and shape.moderator else spec
                        row.add(calls, per_in, per_out, shape.prices.get(answerer))


def _judged(shape: CohortShape, prior: Prior | None, rows: dict[tuple[str, ...], EstimateRow]) -> None:
    """Every rubric's calls on every arm's trace, by each judge: the previous cohort's judgements where it
    has them for the rubric, model and variant, else the rubric's items (consilium/cohort/estimate_judges.py)."""
    for rubric in shape.rubrics:
        part, fixed = f"judge {rubric.name}", dict[str, int]()
        # The paper's order's retry bound unless the constrained order is sure: asked for, or pinned by the
        # rubric (by default a backend that does not enforce schemas asks in the paper's order).
        paper = shape.decoding == "paper" or (shape.decoding is None and
                                              getattr(rubric, "decoding", None) != "constrained")
        for protocol, (variants, config) in shape.protocols.items():
            for variant in variants:
                bounds = stage_bounds(protocol, variant, config) or []
                answer = max((b.max_output for b in bounds), default=0)  # the judged text, at most
                record = sum(b.calls[1] * b.max_output for b in bounds)  # the whole record, at most
                key = (part, protocol, variant, "judge")
                for case in shape.cases:
                    size = shape.sizes[case.id]
                    made = judge_bounds(rubric, case, size, protocol, variant, k=shape.k, paper=paper,
                                        max_repairs=shape.judge_max_repairs, fixed=fixed)
                    for spec, judge in _judging(shape):
                        seen = prior.judged(rubric.name, spec, protocol, variant) if prior else None
                        row = _row(rows, key, _source(prior, spec, seen))
                        if made is not None and made.calls[1] == 0:  # nothing to send: no reference, no item
                            row.add(ZERO, ZERO, ZERO, shape.prices.get(judge))
                        elif seen:
                            limits = None if made is None else (made.calls[0], made.calls[1])
                            row.add(*_seen(seen, size, limits), shape.prices.get(judge))
                        elif made is None:
                            row.add(Span(None, None, None), ZERO, ZERO, None)
                        else:
                            row.add(*_judge_bounds(made, answer, record, shape.judge_max_tokens),
                                    shape.prices.get(judge))


def _judge_bounds(made: JudgeBounds, answer: int, record: int, max_tokens: int) -> tuple[Span, Span, Span]:
    """Calls (items; every repair), input tokens per call (the prompt alone; with the judged answer at its
    most, and on a whole-case item the whole record at its most) and output tokens (at most max_tokens)."""
    low, high, most = made.calls
    extra = record * made.whole_case_items / high if high else 0.0  # the whole-case items' share, per call
    return (Span(low if low == high else None, low, most),
            Span(None, made.prompt_tokens, made.prompt_tokens + answer + extra), Span(None, None, max_tokens))


def _judging(shape: CohortShape) -> Iterator[tuple[str, str]]:
    """Every (panel model, judge): each judge of a jury judges every trace."""
    for spec in shape.models:
        for judge in shape.judges:
            yield spec, judge


def estimate(shape: CohortShape, prior: Prior | None = None) -> CohortEstimate:
    """The cohort's calls, tokens and dollars per stage of the panel and per rubric, made without a call."""
    rows: dict[tuple[str, ...], EstimateRow] = {}
    _panel(shape, prior, rows)
    _judged(shape, prior, rows)
    for row in rows.values():
        row.scale(shape.replicates)
        row.round()
    return CohortEstimate(rows=list(rows.values()), cases=len(shape.cases), models=len(shape.models), like=prior,
                          replicates=shape.replicates)
