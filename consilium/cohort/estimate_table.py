"""A cohort estimate as the table ``consilium cohort --estimate`` prints (docs/cohorts.md, "Estimating a
cohort"): a row per stage of the panel and per rubric, their totals and the cohort's, and what it was made
from."""

from __future__ import annotations

from consilium.cohort.estimate import USD_DIGITS, CohortEstimate, EstimateRow, Span

__all__ = ["estimate_lines", "format_span"]

_HEADER = ("part", "protocol", "variant", "stage", "calls", "input tokens", "output tokens", "USD", "from")


def _number(value: float) -> str:
    return f"{round(value):,}"


def _usd(value: float) -> str:
    """Every row's dollars to the millionth, as the estimate keeps them: the total is their visible sum."""
    return f"${value:,.{USD_DIGITS}f}"


def format_span(span: Span, money: bool = False) -> str:
    """``1,234`` (known), ``1,200 (1,000–1,500)`` (expected, and its range), ``1,000–1,500`` (a range only),
    ``≤ 1,500`` (bounded above only) or "—" (unknown)."""
    show = _usd if money else _number
    if span.high is None:
        return "—"
    if span.low is None:
        return f"≤ {show(span.high)}"
    if show(span.low) == show(span.high):
        return show(span.high)
    between = f"{show(span.low)}–{show(span.high)}"
    return f"{show(span.expected)} ({between})" if span.expected is not None else between


def _cells(row: EstimateRow) -> tuple[str, ...]:
    return (row.part, row.protocol, row.variant, row.stage, format_span(row.calls), format_span(row.input_tokens),
            format_span(row.output_tokens), format_span(row.usd, money=True), row.source)


def _source(estimate: CohortEstimate) -> list[str]:
    prior = estimate.like
    if prior is None:
        return ["from the protocols' bounds (panel sizes min_roles..max_roles, rounds 1..max_rounds): a range; "
                "output tokens at most every answer at its stage's max_tokens"]
    seen = "; ".join(f"{protocol} {variant}: " + ", ".join(f"{n} round{'s' * (n != 1)} ×{count}"
                                                            for n, count in sorted(rounds.items()))
                     for (protocol, variant), rounds in prior.rounds.items() if set(rounds) != {0})
    made = f"{prior.traces} traces, {prior.failed} failed" + (f"; {prior.partial}" if prior.partial else "")
    return [f"from {prior.run_dir} ({made})" + (f"; rounds {seen}" if seen else "")]


def estimate_lines(estimate: CohortEstimate) -> list[str]:
    """The table, then a line on judge calls' retry bound and one on what the figures come from."""
    body: list[tuple[str, ...]] = []
    for part in estimate.parts():
        body += [_cells(row) for row in estimate.rows if row.part == part]
        total = estimate.total(part)
        body.append(_cells(EstimateRow(f"{part} total", "", "", "", "", total.calls, total.input_tokens,
                                       total.output_tokens, total.usd)))
    grand = estimate.total()
    body.append(_cells(EstimateRow("total", "", "", "", "", grand.calls, grand.input_tokens, grand.output_tokens,
                                   grand.usd)))
    widths = [max(len(line[i]) for line in (_HEADER, *body)) for i in range(len(_HEADER))]
    times = f" × {estimate.replicates} replicates" if estimate.replicates > 1 else ""
    lines = [f"Estimate: {estimate.cases} case(s) × {estimate.models} model(s){times}; no model was called"]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
              for line in (_HEADER, *body)]
    if any(row.part.startswith("judge ") for row in estimate.rows):
        lines.append("judge calls: 1 per item when its first answer is valid; the upper end has every item "
                     "repaired as often as the decoding order allows")
    return lines + _source(estimate)
