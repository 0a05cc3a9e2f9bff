"""What a judge's decoding order costs: the same cohort of traces judged by the same stand-in server in the
paper's order (schema-free attempts and repairs, then one constrained attempt) and in the constrained one
(the schema enforced from the first attempt), side by side in one process.

    .venv/bin/python benchmarks/judge_cost.py [--quick]

The stand-in is benchmarks/fakeserver.py with ``--schemas honour``: a small model on a grammar, whose
answers keep the rubric's schema only under ``response_format`` and are prose otherwise, so every
schema-free attempt is invalid (the case met on a real cohort: 4,680 of 6,240 judge calls invalid). The panel's
traces come from the scripted panel in-process (benchmarks/workload.py), both formats of each case; the
judges are ai-consilium and nmb-diagnosis-match, at the CLI's defaults (max_repairs 2, temperature 0),
with the response cache off so every call reaches the server.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

from workload import cases, fake_server, run_cohort

from consilium import aio
from consilium.judges.decoding import JudgeDecoding
from consilium.judges.record import Judgement
from consilium.judges.rubric import load_rubric
from consilium.judges.runner import JudgeSetup, judge_trace
from consilium.models.factory import ModelOptions, build_model

__all__ = ["RUBRICS", "Cost", "judge_cost", "judge_cost_section"]

RUBRICS = ("ai-consilium", "nmb-diagnosis-match")
#: What the stand-in writes when no schema holds it.
PROSE = "The report reads well to me and I would score it highly."
LATENCY_MS = 100.0
CONCURRENCY = 64


@dataclass(frozen=True)
class Cost:
    order: JudgeDecoding
    items: int
    calls: int
    invalid: int
    not_evaluable: int
    input_tokens: int
    wall_s: float

    @property
    def calls_per_item(self) -> float:
        return self.calls / self.items


def _cost(order: JudgeDecoding, judgements: list[Judgement], wall_s: float) -> Cost:
    calls = [c for j in judgements for c in j.calls]
    return Cost(order=order, items=sum(len(j.items) for j in judgements), calls=len(calls),
                invalid=sum(c.error is not None for c in calls),
                not_evaluable=sum(i.not_evaluable for j in judgements for i in j.items),
                input_tokens=sum(j.usage.total.input_tokens for j in judgements), wall_s=wall_s)


async def _judge_all(traces: list[Any], url: str, order: JudgeDecoding) -> Cost:
    model = build_model("openai:fake", ModelOptions(base_url=url, max_concurrency=CONCURRENCY, cache=False))
    setup = JudgeSetup(model=model, decoding=order)
    started = time.perf_counter()
    try:
        judgements = await asyncio.gather(*(judge_trace(t, f"{t.case_id}.{t.format}.trace.json", load_rubric(r), setup)
                                            for t in traces for r in RUBRICS))
    finally:
        await model.aclose()
    return _cost(order, list(judgements), time.perf_counter() - started)


def judge_cost(n_cases: int) -> tuple[int, Cost, Cost]:
    """The traces judged, then the paper's order's cost and the constrained order's, on one stand-in server."""
    _, traces = aio.run(run_cohort(cases(n_cases), 0.0, 8))
    with fake_server(LATENCY_MS, [{"contains": [], "response": PROSE}], ("--schemas", "honour")) as url:
        before = aio.run(_judge_all(traces, url, "paper"))
        after = aio.run(_judge_all(traces, url, "constrained"))
    return len(traces), before, after


def judge_cost_section(quick: bool) -> list[str]:
    """This benchmark's Markdown for benchmarks/suite.py: before (the paper's order, what every judge did)
    and after (constrained, the default on a schema-enforcing backend), and their ratios."""
    n_traces, before, after = judge_cost(4 if quick else 24)
    lines = [f"## Judge decoding order ({n_traces} traces × {len(RUBRICS)} rubrics, {before.items} items, against "
             f"benchmarks/fakeserver.py --schemas honour answering in {LATENCY_MS:.0f} ms, concurrency "
             f"{CONCURRENCY}; benchmarks/judge_cost.py)", "",
             "| order | calls | calls per item | invalid answers | not evaluable | judge input tokens | wall s |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {c.order} | {c.calls:,} | {c.calls_per_item:.2f} | {c.invalid:,} | {c.not_evaluable} | "
              f"{c.input_tokens:,} | {c.wall_s:.2f} |" for c in (before, after)]
    lines += ["", f"paper / constrained: calls per item **{before.calls_per_item / after.calls_per_item:.2f}×**, "
                  f"judge input tokens **{before.input_tokens / after.input_tokens:.2f}×**, wall time "
                  f"**{before.wall_s / after.wall_s:.2f}×**.", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 cases instead of 24")
    print("\n".join(judge_cost_section(parser.parse_args().quick)))


if __name__ == "__main__":
    main()
