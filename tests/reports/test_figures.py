"""The numbers behind every figure `consilium compare` draws (ai-consilium.txt Figs. 2b–8), checked by
hand on the fixture cohort (tests/support/cohort_fixture.py: 2 models × 2 formats × 6 cases, varied votes,
rounds, stop reasons and scores, not-evaluable items, one failed arm), and the files themselves.

Each expected value is computed here from the fixture's constants (for tokens, from the traces the
cohort wrote, read as plain JSON), never by consilium.reports.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from support.cohort_fixture import (
    CASES,
    CRITERIA,
    FAILED,
    FORMATS,
    MODELS,
    NOT_EVALUABLE,
    PANELS,
    VOTES,
    WHOLE_CASE,
    score,
    stop_reason,
)
from support.cohorts import copy_cohort
from support.isolation import isolated

from consilium.cli import main
from consilium.errors import UserError
from consilium.reports.compare import CohortData, load_cohort_data
from consilium.reports.figures import (
    FIGURES,
    case_means,
    consensus_by_round,
    criterion_distributions,
    dissent_reductions,
    outcomes_by_model,
    role_shares,
    rounds_groups,
    stop_counts,
    tokens_by_model,
    tokens_by_stage,
    write_figures,
)
from consilium.reports.figures.fonts import cached_font_subsets, subsets_cut
from consilium.reports.figures.style import SUFFIXES, marked_figures, new_figure, paper_style, save_figure
from consilium.runfolder.rows import ArmRow, JudgementRow

POOLED = "pooled"
PER_OUTPUT = tuple(c for c in CRITERIA if c not in WHOLE_CASE)  # C1–C8
ARMS = list(product(MODELS, CASES, FORMATS))  # (model, case, format)
COMPLETED = [a for a in ARMS if a != FAILED]
#: ai-consilium.yaml's names (ai-consilium.txt Table 1), as the figures must show them.
NAMES = {"c1": "1: Factual Correctness and Source Grounding", "c2": "2: Identification and Prioritization of "
         "Clinical Problems", "c3": "3: Completeness and Relevance of Data Use", "c4": "4: Coherence of Clinical "
         "Reasoning", "c5": "5: Quality of the Differential Diagnosis", "c6": "6: Quality of the Final Clinical "
         "Conclusion", "c7": "7: Management strategy", "c8": "8: Safety"}


@pytest.fixture(scope="module")
def cohort(fixture_cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("fixture")
    with isolated(tmp):  # the conftest's isolation, for a module-wide fixture
        run_dir = copy_cohort(fixture_cohort, tmp)  # compare writes into it
        assert main(["compare", str(run_dir), "--bootstrap", "500"]) == 0
        yield {"run_dir": run_dir, "data": load_cohort_data(run_dir)}


def data_of(cohort: dict[str, Any]) -> CohortData:
    data: CohortData = cohort["data"]
    return data


def same(got: list[tuple[Any, ...]], expected: list[tuple[Any, ...]]) -> bool:
    """Rows equal, floats to 1e-9 relative."""
    def equal(x: Any, y: Any) -> bool:
        return bool(x == pytest.approx(y)) if isinstance(y, float) else bool(x == y)

    return len(got) == len(expected) and all(len(g) == len(e) and all(equal(x, y) for x, y in zip(g, e, strict=True))
                                             for g, e in zip(got, expected, strict=True))


def rounds(arm: tuple[str, str, str]) -> int:
    return len(VOTES[arm])


def dissent_pct(arm: tuple[str, str, str], rnd: int) -> float:
    """% of the panel dissenting in round ``rnd``: every role votes each round."""
    return 100 * len(VOTES[arm][rnd - 1]) / len(PANELS[arm[:2]])


def judged(model: str, fmt: str, case: str, criterion: str) -> int | None:
    """The conclusion's score in the arm's judgement (None: not evaluable, or the arm failed)."""
    return None if (model, case, fmt) == FAILED else score(model, fmt, case, "conclusion", criterion)


def output_mean(arm: tuple[str, str, str]) -> float:
    model, case, fmt = arm
    return statistics.fmean(s for c in PER_OUTPUT if (s := judged(model, fmt, case, c)) is not None)


# --- Fig. 2b/2c ---

def test_fig2_role_shares_per_model_and_pooled_by_hand(cohort: dict[str, Any]) -> None:
    everywhere = Counter(label for roles in PANELS.values() for label, _ in roles)
    order = sorted(everywhere, key=lambda name: (-everywhere[name], name))
    assert order == ["Cardiology", "Internal Medicine", "Neurology", "Pulmonology"]  # 12, 12 (by name), 9, 6
    expected = []
    for model in [*MODELS, POOLED]:
        panels = [roles for (m, _), roles in PANELS.items() if model in (POOLED, m)]
        primary = Counter(label for roles in panels for label, is_primary in roles if is_primary)
        supporting = Counter(label for roles in panels for label, is_primary in roles if not is_primary)
        expected += [(model, name, primary[name], primary.total(), supporting[name], supporting.total(), len(panels))
                     for name in order]
    got = [(s.model, s.category_name, s.primary, s.primary_total, s.supporting, s.supporting_total, s.panels)
           for s in role_shares(data_of(cohort))]
    assert got == expected
    # separate denominators: panel-b's 6 panels have 6 primary and 15 supporting assignments
    neurology = next(s for s in role_shares(data_of(cohort)) if (s.model, s.category) == ("panel-b", "neurology"))
    assert (neurology.primary_pct, neurology.supporting_pct) == (50.0, 0.0)
    pooled_cardiology = next(s for s in role_shares(data_of(cohort)) if (s.model, s.category) == (POOLED, "cardiology"))
    assert pooled_cardiology.primary_pct == pytest.approx(100 * 3 / 12)
    assert pooled_cardiology.supporting_pct == pytest.approx(100 * 9 / 27)


# --- Fig. 3a ---

def test_fig3a_cumulative_consensus_and_arms_entering_each_round_by_hand(cohort: dict[str, Any]) -> None:
    last = max(rounds(a) for a in COMPLETED)
    expected = []
    for fmt in FORMATS:
        arms = [a for a in COMPLETED if a[2] == fmt]
        entering = tuple(sum(rounds(a) >= r for a in arms) for r in range(1, last + 1))
        reached = tuple(sum(stop_reason(VOTES[a]) == "consensus" and rounds(a) <= r for a in arms)
                        for r in range(1, last + 1))
        expected.append((fmt, len(arms), entering, reached))
    got = consensus_by_round(data_of(cohort))
    assert [(r.format, r.arms, r.entering, r.consensus) for r in got] == expected
    assert expected[0] == ("free-form", 12, (12, 7, 3), (4, 7, 9))  # the fixture as planned
    assert got[1].pct(0) == pytest.approx(100 * expected[1][3][0] / 11)  # structured: 11 completed arms


# --- Fig. 3b ---

def test_fig3b_mean_reduction_in_dissent_per_revision_by_hand(cohort: dict[str, Any]) -> None:
    expected = []
    case_means: list[list[float]] = []
    for rnd in (1, 2):
        for fmt in FORMATS:
            values = [dissent_pct(a, rnd) - dissent_pct(a, rnd + 1) for a in COMPLETED
                      if a[2] == fmt and rounds(a) > rnd]
            if values:
                expected.append((fmt, rnd, len(values), statistics.fmean(values)))
                by_case: dict[str, list[float]] = {}
                for a in COMPLETED:
                    if a[2] == fmt and rounds(a) > rnd:
                        by_case.setdefault(a[1], []).append(dissent_pct(a, rnd) - dissent_pct(a, rnd + 1))
                case_means.append([statistics.fmean(v) for v in by_case.values()])
    got = dissent_reductions(data_of(cohort), bootstrap=500, seed=3)
    assert [(r.format, r.from_round, r.arms) for r in got] == [e[:3] for e in expected]
    for row, (*_, mean), means in zip(got, expected, case_means, strict=True):
        assert row.mean == pytest.approx(mean)
        assert row.ci_low <= row.mean <= row.ci_high
        # Every resample of whole cases averages case means, so the interval lies within their range.
        assert min(means) - 1e-9 <= row.ci_low and row.ci_high <= max(means) + 1e-9
    assert expected[0][2] == 7 and expected[0][3] == pytest.approx(150 / 7)  # free-form R1 → R2: 21.43 points
    # a fixed seed gives the same intervals; the default is 10,000 resamples
    assert dissent_reductions(data_of(cohort), bootstrap=500, seed=3) == got
    assert (dissent_reductions.__kwdefaults__ or {})["bootstrap"] == 10_000


# --- Fig. 3c ---

def test_fig3c_outcomes_per_model_and_format_then_pooled_by_hand(cohort: dict[str, Any]) -> None:
    expected = []
    for model in [*MODELS, POOLED]:
        for fmt in FORMATS:
            arms = [a for a in COMPLETED if a[2] == fmt and model in (POOLED, a[0])]
            first = [dissent_pct(a, 1) for a in arms]
            expected.append((model, fmt, len(arms), statistics.fmean(first), 100 * first.count(0) / len(arms),
                             statistics.fmean(rounds(a) for a in arms),
                             100 * sum(stop_reason(VOTES[a]) == "consensus" for a in arms) / len(arms)))
    got = outcomes_by_model(data_of(cohort))
    assert [(r.model, r.format, r.arms) for r in got] == [e[:3] for e in expected]
    assert got[-1].model == POOLED  # the pooled rows come last
    for row, e in zip(got, expected, strict=True):
        # arms.csv keeps the round-1 dissent to 6 decimals
        assert row.r1_dissent_pct == pytest.approx(e[3], abs=1e-3)
        assert (row.r1_unanimous_pct, row.mean_rounds, row.consensus_pct) == pytest.approx(e[4:])


# --- Fig. 4 ---

def test_fig4_stop_reasons_per_format_by_hand(cohort: dict[str, Any]) -> None:
    got = stop_counts(data_of(cohort))
    for row, fmt in zip(got, FORMATS, strict=True):
        stops = Counter(stop_reason(VOTES[a]) for a in COMPLETED if a[2] == fmt)
        assert row.format == fmt
        assert row.counts == {s: stops[s] for s in ("consensus", "no_change", "round_limit")}
        assert (row.arms, row.failed) == (sum(stops.values()), int(FAILED[2] == fmt))
        assert sum(row.pct(s) for s in row.counts) == pytest.approx(100)
    assert [r.counts for r in got] == [{"consensus": 9, "no_change": 2, "round_limit": 1},
                                       {"consensus": 8, "no_change": 2, "round_limit": 1}]


# --- Fig. 5a/5b ---

def stage_tokens(cohort: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, dict[str, int]]]:
    """(model, case, format) → stage → {input_tokens, output_tokens}, from each completed arm's trace."""
    run_dir = cohort["run_dir"]
    rows = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    return {(r["model"], r["case_id"], r["format"]): json.loads((run_dir / r["trace"]).read_text())["usage"]["by_stage"]
            for r in rows if r["status"] == "completed"}


def test_fig5a_tokens_per_case_by_model_and_format_by_hand(cohort: dict[str, Any]) -> None:
    tokens = stage_tokens(cohort)
    expected: list[tuple[Any, ...]] = []
    for model, fmt in product(MODELS, FORMATS):
        arms = [a for a in COMPLETED if (a[0], a[2]) == (model, fmt)]
        per_case = [sum(sum(s[f"{kind}_tokens"] for s in tokens[a].values()) for a in arms) / len(arms)
                    for kind in ("input", "output")]
        expected.append((model, fmt, len(arms), *per_case))
    got = [(r.model, r.format, r.cases, r.input, r.output) for r in tokens_by_model(data_of(cohort))]
    assert same(got, expected), (got, expected)


def test_fig5b_tokens_by_stage_with_the_shared_role_assignment_counted_once(cohort: dict[str, Any]) -> None:
    tokens = stage_tokens(cohort)
    # the fixture's formats share each panel's role assignment, so both traces hold its tokens
    for model, case in PANELS:
        if (model, case, "structured") != FAILED:
            assert tokens[(model, case, "free-form")]["role_assignment"] == \
                tokens[(model, case, "structured")]["role_assignment"]

    def mean(arms: list[tuple[str, str, str]], stage: str | None, kind: str) -> float:
        return sum(u[f"{kind}_tokens"] for a in arms for s, u in tokens[a].items() if stage in (None, s)) / len(arms)

    stages = ("role_assignment", "opinion", "synthesis", "vote", "revision")  # pipeline order
    by_format = {fmt: [a for a in COMPLETED if a[2] == fmt] for fmt in FORMATS}
    expected: list[tuple[Any, ...]] = [(fmt, stage, len(by_format[fmt]), mean(by_format[fmt], stage, "input"),
                                        mean(by_format[fmt], stage, "output")) for stage in stages for fmt in FORMATS]
    expected += [(fmt, "total", len(by_format[fmt]), mean(by_format[fmt], None, "input"),
                  mean(by_format[fmt], None, "output")) for fmt in FORMATS]
    experiment = [mean(COMPLETED, "role_assignment", kind) + sum(
        mean(by_format[fmt], None, kind) - mean(by_format[fmt], "role_assignment", kind) for fmt in FORMATS)
        for kind in ("input", "output")]
    expected.append(("", "experiment", len(COMPLETED), *experiment))
    got = [(r.format, r.stage, r.cases, r.input, r.output) for r in tokens_by_stage(data_of(cohort))]
    assert same(got, expected), (got, expected)
    # counted once: the experiment total is less than the two paths by about one role assignment
    paths = sum(r[3] + r[4] for r in expected if r[1] == "total")
    assert paths - (experiment[0] + experiment[1]) == pytest.approx(
        mean(COMPLETED, "role_assignment", "input") + mean(COMPLETED, "role_assignment", "output"), rel=0.01)


# --- Fig. 6 ---

def test_fig6_score_categories_and_not_evaluable_per_criterion_by_hand(cohort: dict[str, Any]) -> None:
    got = criterion_distributions(data_of(cohort))
    assert [r.criterion for r in got] == list(PER_OUTPUT)  # C1–C8 in the rubric's order, no whole-case criterion
    for row in got:
        scores = [judged(m, f, k, row.criterion) for m, k, f in COMPLETED]
        assert row.label == NAMES[row.criterion]  # names, not ids
        assert row.counts == {s: scores.count(s) for s in (0, 1, 2, 3)}  # the rubric's full scale, zeros kept
        assert row.not_evaluable == scores.count(None) == sum(
            1 for m, f, k, component, c in NOT_EVALUABLE if (component, c) == ("conclusion", row.criterion))
        assert row.items == len(COMPLETED)
        assert sum(row.pct(s) for s in (0, 1, 2, 3, None)) == pytest.approx(100)
    assert {r.criterion: r.not_evaluable for r in got if r.not_evaluable} == {"c5": 1, "c6": 1}


# --- Fig. 7 ---

def test_fig7_case_level_means_in_half_point_bins_with_the_median_by_hand(cohort: dict[str, Any]) -> None:
    got = {r.criterion: r for r in case_means(data_of(cohort))}
    assert list(got) == list(PER_OUTPUT)
    for criterion in PER_OUTPUT:
        means = {}
        for case in CASES:
            values = [s for m, k, f in COMPLETED if k == case if (s := judged(m, f, case, criterion)) is not None]
            means[case] = statistics.fmean(values)
        bins = [0] * 6  # [0, 0.5), [0.5, 1), …, [2.5, 3]
        for value in means.values():
            bins[min(int(value / 0.5), 5)] += 1
        row = got[criterion]
        assert row.means == pytest.approx(means)
        assert row.edges == (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
        assert row.bins == tuple(bins)
        assert row.median == pytest.approx(statistics.median(means.values()))
    # case k6's c1 mean: three arms (panel-b's structured arm failed)
    three = [score(m, f, "k6", "conclusion", "c1") for m, f in (("panel-a", "free-form"), ("panel-a", "structured"),
                                                                ("panel-b", "free-form"))]
    assert got["c1"].means["k6"] == pytest.approx(statistics.fmean(s for s in three if s is not None))


# --- Fig. 8 ---

def test_fig8_scores_and_complexity_by_completed_rounds_by_hand(cohort: dict[str, Any]) -> None:
    expected = []
    for name, low, high in (("1", 1, 1), ("2", 2, 2), ("≥3", 3, 99)):
        arms = [a for a in COMPLETED if low <= rounds(a) <= high]
        means = [output_mean(a) for a in arms]
        complexity = [judged(m, f, k, "case_complexity") for m, k, f in arms]
        rated = [c for c in complexity if c is not None]
        expected.append((name, len(arms), statistics.fmean(means), statistics.pstdev(means), sum(m < 2 for m in means),
                         len(rated), statistics.fmean(rated), statistics.pstdev(rated)))
    got = rounds_groups(data_of(cohort))
    assert [(g.rounds, g.outputs, g.below_2, g.complexity_n) for g in got] == [
        (e[0], e[1], e[4], e[5]) for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert (g.mean, g.sd, g.complexity_mean, g.complexity_sd) == pytest.approx((e[2], e[3], e[6], e[7]))
        assert g.below_2_pct == pytest.approx(100 * e[4] / e[1])
    # the whole-case scores are not in the C1–C8 mean: with them, group 1's mean would differ
    with_whole = statistics.fmean(statistics.fmean(s for c in CRITERIA if (s := judged(m, f, k, c)) is not None)
                                  for m, k, f in COMPLETED if rounds((m, k, f)) == 1)
    assert with_whole != pytest.approx(got[0].mean)


# --- the files ---

def test_every_figure_is_written_as_png_and_pdf_and_shown_in_compare_md(cohort: dict[str, Any]) -> None:
    from matplotlib.image import imread

    out = cohort["run_dir"] / "compare"
    for stem in FIGURES:
        png, pdf = out / f"{stem}.png", out / f"{stem}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", stem
        assert pdf.read_bytes()[:5] == b"%PDF-", stem
        pixels = imread(str(png))
        assert pixels.shape[0] > 400 and pixels.shape[1] > 800 and pixels.std() > 0.05, stem  # drawn, not blank
        assert f"]({stem}.png)" in (out / "compare.md").read_text(), stem
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_figure_without_data_is_not_drawn_and_its_old_file_is_removed(cohort: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    full = write_figures(data_of(cohort), tmp_path, bootstrap=200)
    assert [p.stem for p in full] == list(FIGURES)
    again = write_figures(data_of(cohort), tmp_path / "again", bootstrap=200)
    for first, second in zip(full, again, strict=True):  # the same cohort gives the same bytes
        for suffix in (".png", ".pdf"):
            assert first.with_suffix(suffix).read_bytes() == second.with_suffix(suffix).read_bytes(), first.name
    shutil.rmtree(tmp_path / "again")
    unjudged = write_figures(replace(data_of(cohort), judgements=[]), tmp_path, bootstrap=200)
    gone = {"fig6_score_distributions", "fig7_case_mean_scores", "fig8_scores_by_rounds"}
    assert [p.stem for p in unjudged] == [s for s in FIGURES if s not in gone]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{s}{x}" for s in FIGURES if s not in gone
                                                                for x in (".png", ".pdf"))


def test_a_figure_folder_that_cannot_be_made_is_a_user_error(cohort: dict[str, Any], tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(UserError, match="cannot write the figure"):
        write_figures(data_of(cohort), blocked, bootstrap=200)


# --- the boundaries, on a cohort made by hand ---

def hand_made() -> CohortData:
    """Three arms whose conclusion means sit on Fig. 7's bin edges and Fig. 8's threshold of 2."""
    arms = [{"case_id": case, "model": "m", "format": "structured", "status": "completed", "rounds": rounds,
             "stop_reason": "consensus", "r1_dissent": "0"} for case, rounds in (("a", "1"), ("b", "2"), ("c", "4"))]
    # output means 2.0, 3.0 and 0.5; b's c8 not evaluable
    per_output: dict[str, list[int | None]] = {"a": [2] * 8, "b": [3] * 7 + [None], "c": [0, 1] * 4}

    def row(case: str, criterion: str, value: int | None, whole_case: bool) -> dict[str, str]:
        return {"case_id": case, "model": "m", "format": "structured", "rubric": "ai-consilium",
                "component": "conclusion", "criterion": criterion, "score": "" if value is None else str(value),
                "not_evaluable": str(value is None), "whole_case": str(whole_case)}

    rows = [row(case, c, v, False) for case, values in per_output.items() for c, v in zip(PER_OUTPUT, values,
                                                                                            strict=True)]
    rows += [row(case, c, 0, True) for case in per_output for c in WHOLE_CASE]  # zeros would pull every mean down
    # the cells as arms.csv and judgements.csv hold them, read into their rows as a cohort folder's are
    return CohortData(arms=[ArmRow.model_validate(a) for a in arms],
                      judgements=[JudgementRow.model_validate(r) for r in rows])


def test_fig8_a_mean_of_exactly_2_is_not_below_2_and_4_rounds_are_in_the_last_group() -> None:
    got = [(g.rounds, g.outputs, g.mean, g.below_2, g.complexity_n, g.complexity_mean)
           for g in rounds_groups(hand_made())]
    assert got == [("1", 1, 2.0, 0, 1, 0.0), ("2", 1, 3.0, 0, 1, 0.0), ("≥3", 1, 0.5, 1, 1, 0.0)]


def test_fig7_bins_are_half_open_but_the_last_is_closed() -> None:
    c1, c8 = case_means(hand_made())[0], case_means(hand_made())[-1]
    assert c1.means == {"a": 2.0, "b": 3.0, "c": 0.0} and c1.bins == (1, 0, 0, 0, 1, 1)  # 3.0 in [2.5, 3]
    assert c8.means == {"a": 2.0, "c": 1.0} and c8.bins == (0, 0, 1, 0, 1, 0)  # b's c8 not evaluable: no mean
    assert c8.median == 1.5


# --- how a figure is saved (consilium/reports/figures/style.py: save_figure) ---

MARK = "partial: 8 of 40 planned arms, cohort aborted"


def sample_figure() -> Any:
    """What the constrained layout has to place: axes of varied content, short and long titles, a figure
    title and label (as Fig. 7 has)."""
    figure, axes = new_figure(6.0, 3.2, rows=2, columns=3, squeeze=False)
    for i, axis in enumerate(axes.flat):
        axis.bar(range(i + 2), [(i * 7 + j * 3) % 5 + 1 for j in range(i + 2)])
        axis.set_title(f"{i + 1}: Identification and Prioritization\nof Clinical Problems" if i % 2 else f"C{i + 1}")
    figure.suptitle("Case-level mean scores ≥ 2 (a figure title)")
    figure.supxlabel("case-level mean judge score")
    return figure


def pixels(path: Path) -> Any:
    import numpy as np
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGBA"))


@pytest.mark.parametrize("mark", [None, MARK])
def test_a_saved_figure_is_laid_out_once_then_drawn_once_per_format(mark: str | None, tmp_path: Path) -> None:
    """savefig lays a figure with a layout engine (or a tight area) out again before every file: a whole
    extra draw per format. Saved, a figure is drawn 1 + (one per format) times, not 2 per format."""
    draws: list[Any] = []
    with paper_style():
        figure = sample_figure()
        figure.canvas.mpl_connect("draw_event", draws.append)  # the figure's callbacks, whatever canvas prints
        with marked_figures(mark):
            save_figure(figure, tmp_path, "sample")
    assert len(draws) == 1 + len(SUFFIXES) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.pdf", "sample.png"]  # no temporary file left


@pytest.mark.parametrize("mark", [None, MARK])
def test_a_saved_figure_shows_matplotlibs_own_layout_in_both_formats(mark: str | None, tmp_path: Path) -> None:
    """The PNG is, pixel for pixel, what matplotlib's savefig lays out by itself (a mark: above the figure,
    in the tight area); the PDF's page is the PNG's size at 72 points an inch, with its fonts embedded
    as TrueType (Type 42: the text stays text)."""
    with paper_style():
        with marked_figures(mark):
            save_figure(sample_figure(), tmp_path, "ours")
        theirs = sample_figure()
        if mark is not None:
            theirs.text(0.5, 1.0, f"[{mark}]", ha="center", va="bottom", fontsize=8, color="#b22222")
        theirs.savefig(tmp_path / "theirs.png", bbox_inches="tight" if mark else None,
                       pad_inches=0.05 if mark else None)
    ours, expected = pixels(tmp_path / "ours.png"), pixels(tmp_path / "theirs.png")
    assert ours.shape == expected.shape and (ours == expected).all()
    pdf = (tmp_path / "ours.pdf").read_bytes()
    box = re.search(rb"/MediaBox \[ 0 0 ([\d.]+) ([\d.]+) \]", pdf)
    assert box is not None
    height, width = ours.shape[:2]
    assert float(box.group(1)) == pytest.approx(width * 72 / 200, abs=0.5)  # savefig.dpi 200
    assert float(box.group(2)) == pytest.approx(height * 72 / 200, abs=0.5)
    assert b"/FontFile2" in pdf and b"/Subtype /CIDFontType2" in pdf  # TrueType outlines, not Type 3 procedures
    assert mark is None or f"/Subject ({mark})".encode() in pdf


def test_a_pdfs_font_subsets_are_cut_once_per_process_and_are_matplotlibs_own(tmp_path: Path) -> None:
    """The same glyphs of the same font, asked for again by another PDF, are not cut from the font file
    again; every PDF, from a subset cut or kept, has the bytes matplotlib writes by itself."""
    import matplotlib

    with paper_style(), matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        figure = sample_figure()
        figure.set_layout_engine(None)  # one layout for every file below
        figure.text(0.5, 0.5, f"a text no other test draws: {tmp_path.name} ⊕", fontweight="bold")
        figure.savefig(tmp_path / "matplotlib.pdf", metadata={"CreationDate": None})
        before = subsets_cut()
        with cached_font_subsets():
            figure.savefig(tmp_path / "first.pdf", metadata={"CreationDate": None})
            cut = subsets_cut() - before
            figure.savefig(tmp_path / "second.pdf", metadata={"CreationDate": None})
    assert cut == 2  # DejaVu Sans and DejaVu Sans Bold (the titles and the bold text), each for its glyphs
    assert subsets_cut() - before == cut  # the second PDF cut none
    expected = (tmp_path / "matplotlib.pdf").read_bytes()
    assert b"/FontFile2" in expected
    assert (tmp_path / "first.pdf").read_bytes() == expected == (tmp_path / "second.pdf").read_bytes()
