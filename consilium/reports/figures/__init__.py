"""The figures of ai-consilium.txt (Figs. 2b–8) for a consilium cohort, as PNG and PDF.

Each figure's numbers come from a pure function of the cohort's data (``role_shares``,
``consensus_by_round``, …), which the tests check by hand; the ``draw_*`` functions only draw them.
A figure without data (no judge scores, no roles) is not drawn, and a file of it left by an earlier
run is removed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from consilium.reports.compare import CohortData
from consilium.reports.figures.dynamics import (
    consensus_by_round,
    dissent_reductions,
    draw_fig3a,
    draw_fig3b,
    draw_fig3c,
    outcomes_by_model,
)
from consilium.reports.figures.panels import draw_fig2b, draw_fig2c, role_shares
from consilium.reports.figures.scores import (
    case_means,
    criterion_distributions,
    draw_fig6,
    draw_fig7,
    draw_fig8,
    rounds_groups,
)
from consilium.reports.figures.stops import draw_fig4, stop_counts
from consilium.reports.figures.style import paper_style, remove_figure
from consilium.reports.figures.tokens import draw_fig5a, draw_fig5b, tokens_by_model, tokens_by_stage

__all__ = [
    "FIGURES",
    "case_means",
    "consensus_by_round",
    "criterion_distributions",
    "dissent_reductions",
    "outcomes_by_model",
    "role_shares",
    "rounds_groups",
    "stop_counts",
    "tokens_by_model",
    "tokens_by_stage",
    "write_figures",
]

#: Every figure's file stem (``.png`` and ``.pdf``) and what it reproduces.
FIGURES = {
    "fig2b_role_categories_by_model": "Fig. 2b",
    "fig2c_role_categories_ranked": "Fig. 2c",
    "fig3a_cumulative_consensus": "Fig. 3a",
    "fig3b_dissent_reduction": "Fig. 3b",
    "fig3c_outcomes_by_model": "Fig. 3c",
    "fig4_stop_reasons": "Fig. 4",
    "fig5a_tokens_by_model": "Fig. 5a",
    "fig5b_tokens_by_stage": "Fig. 5b",
    "fig6_score_distributions": "Fig. 6",
    "fig7_case_mean_scores": "Fig. 7",
    "fig8_scores_by_rounds": "Fig. 8",
}


def write_figures(data: CohortData, out: Path, *, bootstrap: int = 10_000, seed: int = 0) -> list[Path]:
    """Draw every figure that has data into ``out``; the PNGs' paths, in figure order (a PDF of the same
    stem lies beside each). ``bootstrap`` resamples from ``seed`` give Fig. 3b's intervals."""
    shares, stops = role_shares(data), stop_counts(data)
    dissent = dissent_reductions(data, bootstrap=bootstrap, seed=seed)
    by_round, outcomes = consensus_by_round(data), outcomes_by_model(data)
    by_model, by_stage = tokens_by_model(data), tokens_by_stage(data)
    distributions, means, rounds = criterion_distributions(data), case_means(data), rounds_groups(data)
    draws: dict[str, Callable[[], Path] | None] = {
        "fig2b_role_categories_by_model": (lambda: draw_fig2b(shares, out)) if shares else None,
        "fig2c_role_categories_ranked": (lambda: draw_fig2c(shares, out)) if shares else None,
        "fig3a_cumulative_consensus": (lambda: draw_fig3a(by_round, out)) if any(r.arms for r in by_round) else None,
        "fig3b_dissent_reduction": (lambda: draw_fig3b(dissent, bootstrap, out)) if dissent else None,
        "fig3c_outcomes_by_model": (lambda: draw_fig3c(outcomes, out)) if outcomes else None,
        "fig4_stop_reasons": (lambda: draw_fig4(stops, out)) if any(s.arms for s in stops) else None,
        "fig5a_tokens_by_model": (lambda: draw_fig5a(by_model, out)) if by_model else None,
        "fig5b_tokens_by_stage": (lambda: draw_fig5b(by_stage, out)) if by_model else None,
        "fig6_score_distributions": (lambda: draw_fig6(distributions, out)) if distributions else None,
        "fig7_case_mean_scores": (lambda: draw_fig7(means, out)) if means else None,
        "fig8_scores_by_rounds": (lambda: draw_fig8(rounds, out)) if rounds else None,
    }
    paths = []
    with paper_style():
        for stem, draw in draws.items():
            if draw is None:
                remove_figure(out, stem)
            else:
                paths.append(draw())
    return paths
