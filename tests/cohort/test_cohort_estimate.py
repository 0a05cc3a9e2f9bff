"""``consilium cohort --estimate [--like RUN_DIR]`` and ``consilium.api.estimate_cohort``: a cohort's calls and
tokens per stage before any model call, checked against what scripted cohorts then spent.

Two scripted panels of three roles, in both formats: ``agree`` accepts the first report (1 round,
consensus), ``dissent`` has its neurologist dissent in every round (``MAX_ROUNDS`` rounds, round_limit).
A prior cohort on three cases of different sizes is the ``--like`` source; the estimate is made for a
cohort on three other cases (other sizes, one outside the prior's range), which is then run, and its
traces' and judgements' calls are counted here. Calls must match exactly (the rounds are fixed); tokens
within ``TOLERANCE`` (see its comment).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from support.scripts import STRUCTURED_REPORT, STRUCTURED_REVISION, Scripted, sections

from consilium.api import estimate_cohort
from consilium.cli import main
from consilium.cohort.estimate import CohortEstimate, Span
from consilium.models.pricing import PER_TOKENS

MAX_ROUNDS = 3
ROLES = ("Internal Medicine", "Cardiology", "Neurology")
#: Case id → sentences of history: the case sizes differ several-fold.
PRIOR_CASES = {"p1": 1, "p2": 6, "p3": 14}
NEW_CASES = {"n1": 3, "n2": 10, "n3": 22}
#: The AI Consilium rubric's criteria per component (its file): the free-form trace offers the conclusion
#: (11 criteria, whole-case ones included), the structured one also role_reasoning (7) and role_opinion (5).
JUDGE_CALLS = {"free-form": 11, "structured": 11 + 7 + 5}
PRICES = {"input": 2.0, "output": 8.0}
#: Tokens, estimated against spent, per row. A scripted model's usage is counted with the project's tokenizer
#: on the very prompts and answers, and its answers do not depend on the case, so a stage's prompt is its
#: fixed text plus the case: the fitted line ``a + b · case tokens`` holds it exactly (0.00 % on every row
#: here, the largest case outside the prior's range). 1 % leaves room for the tokenizer's merges where the
#: case meets the prompt (a token or two in a call of 400 or more) and nothing more: a stage counted twice,
#: a case too few, or the case left out of the fit (89 tokens a call here), is 6.5 % of a row or more (measured:
#: 6.6 % and 6.8 % on the judge's rows, whose prompts are the longest; 16 % to 21 % on the panel's).
TOLERANCE = 0.01


def _sections(text: str) -> dict[str, str]:
    return sections(text, final_differential="1. A\n2. B")


def _panel(model: str, dissent: bool) -> dict[str, Any]:
    script = (Scripted(model)
              .roles(*ROLES, justification=("owns the question", "also needed"))
              .structured_opinion("pneumonia, as {role} reads it", clinical_data="data")
              .opinion("The {role} opinion: community-acquired pneumonia.")
              .synthesis(_sections("first report"), where={"contains": STRUCTURED_REPORT})
              .synthesis("First report: pneumonia."))
    if dissent:
        script.rule("vote", where={"role": "neurology"},
                    json={"vote": "dissent", "reason": "r", "requested_change": "exclude meningitis"})
    return (script.accept()
                  .revision(_sections("revised in round {round}"), where={"contains": STRUCTURED_REVISION})
                  .revision("Report revised in round {round}.")
                  .build())


def _case(case: str, sentences: int) -> dict[str, Any]:
    history = " ".join(f"On day {i} the fever rose to {38 + i % 3}.{i % 10} °C with a productive cough."
                       for i in range(1, sentences + 1))
    return {"id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the most likely diagnosis?",
            "presentation": f"A 60-year-old with fever. {history}", "reference": {"diagnosis": "Pneumonia"}}


def _write_cases(folder: Path, cases: dict[str, int]) -> Path:
    folder.mkdir()
    for case, sentences in cases.items():
        (folder / f"{case}.json").write_text(json.dumps(_case(case, sentences)), encoding="utf-8")
    return folder


class Setup:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.specs = []
        for model, dissent in (("agree", False), ("dissent", True)):
            path = root / f"{model}.json"
            path.write_text(json.dumps(_panel(model, dissent)), encoding="utf-8")
            self.specs.append(f"scripted:{path}")
        judge = root / "judge.json"
        judge.write_text(json.dumps({"model": "judge", "rules": [
            {"stage": "judge", "json": {"rationale": "r", "score": 3}}]}), encoding="utf-8")
        self.judge = f"scripted:{judge}"
        self.config = root / "run.yaml"
        self.config.write_text(f"max_rounds: {MAX_ROUNDS}\nmin_roles: 3\nmax_roles: 3\n", encoding="utf-8")
        self.prior_cases = _write_cases(root / "prior-cases", PRIOR_CASES)
        self.new_cases = _write_cases(root / "new-cases", NEW_CASES)

    def flags(self, cases: Path, out: Path) -> list[str]:
        return ["cohort", "--cases", str(cases), "--model", self.specs[0], "--extra-model", self.specs[1],
                "--config", str(self.config), "--judge", "ai-consilium", "--judge-model", self.judge,
                "--no-cache", "--out", str(out)]

    def run(self, cases: Path, out: Path) -> Path:
        assert main(self.flags(cases, out)) == 0
        [run_dir] = [p for p in out.iterdir() if p.is_dir()]
        return run_dir


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return Setup(tmp_path_factory.mktemp("estimate"))


@pytest.fixture(scope="module")
def prior(setup: Setup) -> Path:
    return setup.run(setup.prior_cases, setup.root / "prior")


@pytest.fixture(scope="module")
def new_run(setup: Setup) -> Path:
    return setup.run(setup.new_cases, setup.root / "new")


def _spend(run_dir: Path, spec: str | None = None) -> dict[tuple[str, str, str], list[int]]:
    """(part, variant, stage) → [calls, input tokens, output tokens] of a cohort's arms (``spec``'s alone if
    given), read from its traces (a role assignment copied into the second format's trace counted once)
    and judgements."""
    with (run_dir / "arms.csv").open(encoding="utf-8", newline="") as handle:
        traces = [run_dir / row["trace"] for row in csv.DictReader(handle) if spec in (None, row["model_spec"])]
    totals: dict[tuple[str, str, str], list[int]] = {}
    for path in traces:
        trace = json.loads(path.read_text(encoding="utf-8"))
        judgement = json.loads(path.with_name(path.name.replace(".trace.json", ".judge.ai-consilium.json"))
                               .read_text(encoding="utf-8"))
        made = [("panel", call) for call in trace["calls"]
                if not (call["stage"] == "role_assignment" and trace["role_assignment_shared"])]
        for part, call in [*made, *(("judge ai-consilium", call) for call in judgement["calls"])]:
            row = totals.setdefault((part, trace["format"], call["stage"]), [0, 0, 0])
            row[0] += 1
            row[1] += call["usage"]["input_tokens"]
            row[2] += call["usage"]["output_tokens"]
    return totals


@pytest.fixture(scope="module")
def spent(new_run: Path) -> dict[tuple[str, str, str], list[int]]:
    """What the new cohort spent, read from its files."""
    return _spend(new_run)


def _by_key(estimate: CohortEstimate) -> dict[tuple[str, str, str], tuple[Span, Span, Span]]:
    return {(row.part, row.variant, row.stage): (row.calls, row.input_tokens, row.output_tokens)
            for row in estimate.rows}


def _hand_calls() -> dict[tuple[str, str, str], int]:
    """Per (part, variant, stage) over the 3 new cases: agree (1 round) and dissent (3 rounds, a revision
    between rounds), 3 roles, the role assignment made once per case and model (by free-form, listed first)."""
    cases, roles = len(NEW_CASES), len(ROLES)
    calls = {("panel", "free-form", "role_assignment"): cases * 2}
    for fmt in ("free-form", "structured"):
        calls[("panel", fmt, "opinion")] = cases * 2 * roles
        calls[("panel", fmt, "synthesis")] = cases * 2
        calls[("panel", fmt, "vote")] = cases * (roles * 1 + roles * MAX_ROUNDS)
        calls[("panel", fmt, "revision")] = cases * (0 + MAX_ROUNDS - 1)
        calls[("judge ai-consilium", fmt, "judge")] = cases * 2 * JUDGE_CALLS[fmt]
    return calls


def test_the_estimate_like_a_prior_cohort_counts_the_calls_exactly_and_the_tokens_within_tolerance(
        setup: Setup, prior: Path, spent: dict[tuple[str, str, str], list[int]]) -> None:
    estimate = _by_key(estimate_cohort(setup.new_cases, models=setup.specs, config=setup.config,
                                       judges="ai-consilium", judge_model=setup.judge, like=prior))
    hand = _hand_calls()
    assert {key: calls for key, (calls, _, _) in spent.items()} == hand  # the fixture is what it says
    assert set(estimate) == set(hand)
    for key, (calls, inputs, outputs) in estimate.items():
        assert (calls.expected, calls.low, calls.high) == (hand[key],) * 3, key
        for figure, actual in ((inputs, spent[key][1]), (outputs, spent[key][2])):
            assert figure.expected is not None and figure.low == figure.high == figure.expected, key
            assert abs(figure.expected - actual) <= TOLERANCE * actual, (key, figure.expected, actual)


def test_the_protocols_bounds_hold_what_each_panel_spent(setup: Setup,
                                                          spent: dict[tuple[str, str, str], list[int]]) -> None:
    """Without --like: agree spends the fewest calls of every stage after the assignment (one round), dissent
    the most (every round); the tokens spent lie within the bounds."""
    estimate = _by_key(estimate_cohort(setup.new_cases, models=setup.specs, config=setup.config,
                                       judges="ai-consilium", judge_model=setup.judge))
    cases, roles = len(NEW_CASES), len(ROLES)
    for fmt in ("free-form", "structured"):
        vote, revision = estimate[("panel", fmt, "vote")][0], estimate[("panel", fmt, "revision")][0]
        # fewest: every arm agrees in round 1; most: every arm dissents to the cap, for both models, and every
        # answer (each checked against its schema) is sent back max_repairs (2) times
        assert (vote.low, vote.high) == (2 * cases * roles, 2 * cases * roles * MAX_ROUNDS * (1 + 2))
        assert (revision.low, revision.high) == (0, 2 * cases * (MAX_ROUNDS - 1) * (1 + 2))
        judged = estimate[("judge ai-consilium", fmt, "judge")][0]
        # one call per item; at most 2 + 2 each: ai-consilium pins no order, and a backend that does not
        # enforce schemas asks in the paper's (a schema-free attempt, two repairs, then
        # a constrained one)
        assert judged.expected == judged.low == 2 * cases * JUDGE_CALLS[fmt]
        assert judged.high == (2 + 2) * judged.low
    for key, (calls, inputs, outputs) in estimate.items():
        actual_calls, actual_in, actual_out = spent[key]
        assert calls.low is not None and calls.high is not None and calls.low <= actual_calls <= calls.high, key
        assert inputs.low is not None and inputs.high is not None and inputs.low <= actual_in <= inputs.high, key
        assert outputs.low is None and outputs.high is not None and actual_out <= outputs.high, key


def test_estimate_prints_a_priced_table_and_leaves_no_run_folder(setup: Setup, prior: Path, new_run: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Dollars for a priced model (its model config's prices) within the tolerance of what its arms of the
    new cohort cost at those prices, a dash for the unpriced judge and the total, and no folder made."""
    model_file = setup.root / "agree-priced.yaml"
    model_file.write_text(f"spec: {setup.specs[0]}\nprices: {json.dumps(PRICES)}\n", encoding="utf-8")
    out = setup.root / "never"
    capsys.readouterr()
    code = main(["cohort", "--cases", str(setup.new_cases), "--model-config", str(model_file), "--config",
                 str(setup.config), "--judge", "ai-consilium", "--judge-model", setup.judge, "--out", str(out),
                 "--estimate", "--like", str(prior)])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0 and not out.exists()
    usd = next(line for line in printed if line.startswith("part ")).index("USD")
    cell = {name: next(line for line in printed if line.startswith(name))[usd:].split()[0]
            for name in ("panel total", "judge ai-consilium total", "total")}
    assert cell["judge ai-consilium total"] == "—" and cell["total"] == "—"
    agree = [v for (part, _, _), v in _spend(new_run, setup.specs[0]).items() if part == "panel"]
    assert sum(calls for calls, _, _ in agree) == len(NEW_CASES) * (1 + 2 * (3 + 1 + 3))  # 1 round, 3 roles
    cost = sum(i * PRICES["input"] + o * PRICES["output"] for _, i, o in agree) / PER_TOKENS
    assert abs(float(cell["panel total"].lstrip("$")) - cost) <= TOLERANCE * cost


@pytest.mark.parametrize("like", ["not-a-cohort", "missing", "a-file"])
def test_like_on_a_folder_that_is_not_a_cohort_is_one_line_and_exit_2(
        setup: Setup, like: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = setup.root / like
    if like == "not-a-cohort":
        folder.mkdir(exist_ok=True)
        (folder / "notes.txt").write_text("hello", encoding="utf-8")
    said = {"not-a-cohort": "not a cohort folder", "missing": "no such folder",
            "a-file": "a file, not a cohort's folder"}[like]
    if like == "a-file":
        folder.write_text("hello", encoding="utf-8")
    out = setup.root / "never-bad"
    capsys.readouterr()
    code = main([*setup.flags(setup.new_cases, out), "--estimate", "--like", str(folder)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--like" in err[0] and str(folder) in err[0] and said in err[0]
    assert "Traceback" not in err[0] and not out.exists()


def test_like_without_estimate_is_refused_before_anything_runs(setup: Setup, prior: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = setup.root / "never-like"
    code = main([*setup.flags(setup.new_cases, out), "--like", str(prior)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--like: only with --estimate" in err[0] and not out.exists()


def test_a_protocol_the_prior_did_not_run_is_estimated_from_its_bounds(setup: Setup, prior: Path) -> None:
    """The single baseline beside the consilium: the consilium's rows from the prior, the baseline's from its
    structure (a role assignment shared by its formats, one answer a format), each case and model."""
    estimate = estimate_cohort(setup.new_cases, models=setup.specs, config=setup.config,
                               protocols=["consilium", "single"], like=prior)
    rows = {(row.protocol, row.variant, row.stage): row for row in estimate.rows}
    arms = len(NEW_CASES) * len(setup.specs)
    assert {row.source for key, row in rows.items() if key[0] == "consilium"} == {"like"}
    single = {key: row for key, row in rows.items() if key[0] == "single"}
    assert set(single) == {("single", "free-form", "role_assignment"), ("single", "free-form", "opinion"),
                           ("single", "structured", "opinion")}
    assert {row.source for row in single.values()} == {"bounds"}
    # one answer, at most repaired max_repairs (2) times
    assert (single[("single", "structured", "opinion")].calls.low,
            single[("single", "structured", "opinion")].calls.high) == (arms, arms * (1 + 2))
    # one assignment call, and one more per role short of min_roles (3): 1 to 3 a case and model, each repaired
    # at most twice
    assert (single[("single", "free-form", "role_assignment")].calls.low,
            single[("single", "free-form", "role_assignment")].calls.high) == (arms, 3 * arms * (1 + 2))


@pytest.mark.parametrize("flag", ["--resume", "--shard"])
def test_estimate_is_for_a_new_cohort_in_this_process(setup: Setup, prior: Path, flag: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    value = {"--resume": str(prior), "--shard": "1/2"}[flag]
    out = setup.root / "never-resume"
    code = main([*setup.flags(setup.new_cases, out), "--estimate", flag, value])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"not with {flag}" in err[0] and not out.exists()


#: A board meeting the scripted models hold every time (tests/cohort/test_cohort.py's): the moderator asks in turns 1
#: and 3 and closes in turn 5, two specialists answer: 3 moderator calls and 2 specialist calls a meeting.
BOARD_CASE = Path(__file__).resolve().parents[2] / "examples" / "cases" / "tumor-board-nsclc.yaml"


class Board:
    """A board cohort on one case in both modes: the panel ``chaired`` priced by its model config, its
    moderator (``--moderator-model``) another scripted model without prices."""

    def __init__(self, root: Path) -> None:
        from test_cohort import BOARD
        self.root = root
        panel, chair = root / "panel.json", root / "chair.json"
        panel.write_text(json.dumps({**BOARD, "model": "board-panel"}), encoding="utf-8")
        chair.write_text(json.dumps({**BOARD, "model": "board-chair"}), encoding="utf-8")
        self.panel, self.chair = f"scripted:{panel}", f"scripted:{chair}"
        self.priced = root / "panel.yaml"
        self.priced.write_text(f"spec: {self.panel}\nprices: {json.dumps(PRICES)}\n", encoding="utf-8")

    def flags(self, out: Path) -> list[str]:
        return ["cohort", "--protocol", "board", "--cases", str(BOARD_CASE), "--model-config", str(self.priced),
                "--moderator-model", self.chair, "--no-cache", "--out", str(out)]


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Board, Path]:
    made = Board(tmp_path_factory.mktemp("board"))
    out = made.root / "prior"
    assert main(made.flags(out)) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return made, run_dir


def _board_spent(run_dir: Path) -> dict[tuple[str, str, bool], list[int]]:
    """(mode, stage, answered by the moderator) → [calls, input tokens, output tokens], from the traces."""
    totals: dict[tuple[str, str, bool], list[int]] = {}
    for path in run_dir.glob("arms/**/*.trace.json"):
        trace = json.loads(path.read_text(encoding="utf-8"))
        for call in trace["calls"]:
            row = totals.setdefault((trace["mode"], call["stage"], call["role"] == "moderator"), [0, 0, 0])
            row[0] += 1
            row[1] += call["usage"]["input_tokens"]
            row[2] += call["usage"]["output_tokens"]
    return totals


@pytest.mark.parametrize("like", [False, True])
def test_a_boards_moderator_turns_are_priced_by_the_moderators_model(
        board: tuple[Board, Path], like: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """The moderator's turns (its model, unpriced here) are never priced at the panel's prices: the agents
    meeting's turns show a dash, as its role assignment and conclusion do; the single meeting (the panel's
    one call) is priced by hand at the panel's prices, and the turns split 3 moderator's to 2 specialists'."""
    made, prior = board
    spent = _board_spent(prior)
    assert {key: row[0] for key, row in spent.items() if key[1] == "board_turn"} == {
        ("agents", "board_turn", True): 3, ("agents", "board_turn", False): 2, ("single", "board_turn", False): 1}
    out = made.root / "never"
    capsys.readouterr()
    assert main([*made.flags(out), "--estimate", *(["--like", str(prior)] if like else [])]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert not out.exists()
    header = next(line for line in printed if line.startswith("part "))
    usd = header.index("USD")
    cells = {(line.split()[2], line.split()[3]): line[usd:].split()[0] for line in printed
             if line.startswith("panel ") and not line.startswith("panel total")}
    assert cells[("agents", "board_turn")] == "—"
    assert cells[("agents", "role_assignment")] == cells[("agents", "conclusion")] == "—"
    assert cells[("single", "board_turn")] != "—"
    estimate = estimate_cohort(BOARD_CASE, models=[made.panel], moderator=made.chair, protocols="board",
                               like=prior if like else None)
    turns = {row.variant: row.calls for row in estimate.rows if row.stage == "board_turn"}
    if like:
        assert (turns["agents"].expected, turns["single"].expected) == (5, 1)
        single = spent[("single", "board_turn", False)]
        cost = (single[1] * PRICES["input"] + single[2] * PRICES["output"]) / PER_TOKENS
        assert abs(float(cells[("single", "board_turn")].lstrip("$")) - cost) <= TOLERANCE * cost
    else:
        # 3..max_turns moderator calls, each repaired at most twice, and 2..max_turns - 1 specialist answers in
        # plain text, never repaired (max_turns 12 by default)
        assert (turns["agents"].low, turns["agents"].high) == (5, 12 * (1 + 2) + 11)


def test_a_boards_bounds_hold_what_its_meeting_spent(board: tuple[Board, Path]) -> None:
    """Each mode's stages, calls and input tokens, within the bounds: the specialists' turns counted with
    their own prompt, not the moderator's."""
    made, prior = board
    spent: dict[tuple[str, str], list[int]] = {}
    for (mode, stage, _), figures in _board_spent(prior).items():
        total = spent.setdefault((mode, stage), [0, 0, 0])
        total[:] = [a + b for a, b in zip(total, figures, strict=True)]
    estimate = estimate_cohort(BOARD_CASE, models=[made.panel], moderator=made.chair, protocols="board")
    rows = {(row.variant, row.stage): row for row in estimate.rows}
    assert set(rows) == set(spent)
    for key, row in rows.items():
        calls, inputs, outputs = spent[key]
        assert row.calls.low is not None and row.calls.high is not None
        assert row.calls.low <= calls <= row.calls.high, key
        assert row.input_tokens.low is not None and row.input_tokens.high is not None
        assert row.input_tokens.low <= inputs <= row.input_tokens.high, (key, row.input_tokens, inputs)
        assert row.output_tokens.high is not None and outputs <= row.output_tokens.high, key


def _figures(cell: str) -> tuple[float | None, float | None, float | None] | None:
    """A printed cell as (expected, low, high): ``1,234``, ``1,200 (1,000–1,500)``, ``1,000–1,500``,
    ``≤ 1,500``; None for "—"."""
    def number(text: str) -> float:
        return float(text.strip().lstrip("$").replace(",", ""))
    if cell == "—":
        return None
    if cell.startswith("≤ "):
        return None, None, number(cell[2:])
    if " (" in cell:
        expected, between = cell.rstrip(")").split(" (")
        low, high = between.split("–")
        return number(expected), number(low), number(high)
    if "–" in cell:
        low, high = cell.split("–")
        return None, number(low), number(high)
    return (number(cell),) * 3


def _table(printed: list[str]) -> list[list[str]]:
    """The printed table's lines as cells, cut at the header's column starts."""
    header = next(line for line in printed if line.startswith("part "))
    names = ["part", "protocol", "variant", "stage", "calls", "input tokens", "output tokens", "USD", "from"]
    starts = [header.index(name) for name in names]
    lines = printed[printed.index(header) + 1:]
    lines = lines[:next(i for i, line in enumerate(lines) if line.startswith("total"))+ 1]
    return [[line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)] for line in lines]


def _summed(cells: list[str]) -> tuple[float | None, float | None, float | None] | None:
    figures = [_figures(cell) for cell in cells]
    if any(f is None for f in figures):
        return None
    def add(i: int) -> float | None:
        values = [f[i] for f in figures if f is not None]
        return None if any(v is None for v in values) else round(sum(v for v in values if v is not None), 6)
    return add(0), add(1), add(2)


@pytest.mark.parametrize("like", [True, False])
def test_the_printed_totals_are_the_sums_of_the_printed_rows(setup: Setup, prior: Path, like: bool,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Every column of every part's total line, and of the cohort's, is the sum of the rows above it as they
    are printed (a row's figure is what the total adds: no total off by the rows' rounding); a dash in a row
    makes its total a dash. The panel is a model the prior did not run (every model's mean calls and tokens:
    fractions) priced by its model config, and the judge is not priced."""
    other = setup.root / "other.json"
    other.write_text(json.dumps(_panel("other", dissent=False)), encoding="utf-8")
    model_file = setup.root / "other-priced.yaml"
    model_file.write_text(f"spec: scripted:{other}\nprices: {json.dumps(PRICES)}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["cohort", "--cases", str(setup.new_cases), "--model-config", str(model_file), "--config",
                 str(setup.config), "--judge", "ai-consilium", "--judge-model", setup.judge, "--estimate",
                 *(["--like", str(prior)] if like else [])]) == 0
    table = _table(capsys.readouterr().out.splitlines())
    parts: dict[str, list[list[str]]] = {}
    for cells in table:
        if cells[0].endswith("total"):
            rows = parts.get(cells[0].removesuffix(" total")) if cells[0] != "total" else \
                [row for rows in parts.values() for row in rows]
            assert rows, cells
            for column in range(4, 8):
                assert _figures(cells[column]) == _summed([row[column] for row in rows]), (cells[0], column)
        else:
            parts.setdefault(cells[0], []).append(cells)
    assert set(parts) == {"panel", "judge ai-consilium"}
    assert all(_figures(row[7]) is not None for row in parts["panel"])
    assert _figures(table[-1][7]) is None  # the unpriced judge's


def test_a_judge_named_by_its_model_config_is_priced_by_its_file(setup: Setup, prior: Path, new_run: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``--judge-model judge.yaml`` with ``prices:``: the judge's rows in dollars at the file's prices, within
    the tolerance of what the new cohort's judgements cost at them (worked out here from their tokens)."""
    prices = {"input": 3.0, "output": 15.0}
    judge_file = setup.root / "judge-priced.yaml"
    judge_file.write_text(f"spec: {setup.judge}\nprices: {json.dumps(prices)}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["cohort", "--cases", str(setup.new_cases), "--model", setup.specs[0], "--extra-model",
                 setup.specs[1], "--config", str(setup.config), "--judge", "ai-consilium", "--judge-model",
                 str(judge_file), "--estimate", "--like", str(prior)]) == 0
    table = _table(capsys.readouterr().out.splitlines())
    judged = {row[2]: row[7] for row in table if row[0] == "judge ai-consilium"}
    spent = _spend(new_run)
    for fmt in ("free-form", "structured"):
        _, inputs, outputs = spent[("judge ai-consilium", fmt, "judge")]
        cost = (inputs * prices["input"] + outputs * prices["output"]) / PER_TOKENS
        shown = _figures(judged[fmt])
        assert shown is not None and shown[0] is not None, judged
        assert abs(shown[0] - cost) <= TOLERANCE * cost, (fmt, shown, cost)


MATCH = "nmb-diagnosis-match"


def _unreferenced(folder: Path, cases: dict[str, bool]) -> Path:
    """Cases (id → has a reference diagnosis) of varied sizes; those without one are not evaluable."""
    folder.mkdir()
    for i, (case, referenced) in enumerate(cases.items()):
        data = _case(case, 2 + 5 * i)
        if not referenced:
            del data["reference"]
        (folder / f"{case}.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def match_prior(setup: Setup) -> Path:
    """A free-form cohort judged by the diagnosis match on two cases, one without a reference diagnosis (its
    judgement made no call): 1 judge call on the one, none on the other."""
    judge = setup.root / "match.json"
    judge.write_text(json.dumps({"model": "match", "rules": [
        {"stage": "judge", "json": {"rationale": "r", "match": True}}]}), encoding="utf-8")
    cases = _unreferenced(setup.root / "match-prior-cases", {"m1": True, "m2": False})
    out = setup.root / "match-prior"
    assert main(["cohort", "--cases", str(cases), "--model", setup.specs[0], "--formats", "free-form", "--config",
                 str(setup.config), "--judge", MATCH, "--judge-model", f"scripted:{judge}",
                 "--allow-missing-reference", "--no-cache", "--out", str(out)]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_like_counts_no_judge_call_for_a_case_without_the_reference_the_rubric_needs(
        setup: Setup, match_prior: Path) -> None:
    """The prior's not-evaluable judgement (no call) does not halve the calls of an evaluable one, and a new
    case without the reference gets none: 2 of 3 new cases have it, a free-form trace offers the diagnosis
    match its conclusion alone: 2 calls, exactly (the prior's mean over both judgements: 1.5, from 0 to 3)."""
    cases = _unreferenced(setup.root / "match-new-cases", {"q1": True, "q2": False, "q3": True})
    estimate = estimate_cohort(cases, models=setup.specs[0], formats="free-form", config=setup.config,
                               judges=MATCH, judge_model=f"scripted:{setup.root / 'match.json'}",
                               allow_missing_reference=True, like=match_prior)
    [row] = [row for row in estimate.rows if row.part == f"judge {MATCH}"]
    assert (row.calls.expected, row.calls.low, row.calls.high) == (2, 2, 2) and row.source == "like"
    judgement = next(match_prior.glob(f"arms/**/m1.free-form.judge.{MATCH}.json"))
    per_call = json.loads(judgement.read_text(encoding="utf-8"))["calls"][0]["usage"]["output_tokens"]
    assert row.output_tokens.expected == 2 * per_call


def test_like_a_cohort_with_more_rounds_is_held_to_the_new_settings(setup: Setup, prior: Path) -> None:
    """The prior ran up to 3 review rounds (dissent: 9 votes and 2 revisions a trace); a cohort with
    ``max_rounds: 1`` and a panel of 2 can make one vote per role and no revision: 2 models × 3 cases × 2
    roles, an opinion per role, whatever the prior did. Its tokens per call stay the prior's."""
    config = setup.root / "one-round.yaml"
    config.write_text("max_rounds: 1\nmin_roles: 2\nmax_roles: 2\n", encoding="utf-8")
    estimate = estimate_cohort(setup.new_cases, models=setup.specs, config=config, formats="free-form",
                               like=prior)
    calls = {row.stage: (row.calls.expected, row.calls.low, row.calls.high) for row in estimate.rows}
    arms = len(setup.specs) * len(NEW_CASES)
    assert calls["vote"] == calls["opinion"] == (arms * 2,) * 3
    assert calls["revision"] == (0, 0, 0) and calls["synthesis"] == (arms,) * 3


@pytest.mark.parametrize("decoding, per_item", [("constrained", 1 + 2), ("paper", 2 + 2)])
def test_the_api_takes_the_judges_decoding_order_as_the_run_does(setup: Setup, decoding: str, per_item: int) -> None:
    """``judge_decoding`` as ``run_cohort`` takes it: the constrained order's items at most 1 + max_repairs (2)
    calls each, the paper's 2 + max_repairs; one call an item at the fewest (AI Consilium: 11 items on a
    free-form trace, 2 models × 3 cases)."""
    estimate = estimate_cohort(setup.new_cases, models=setup.specs, config=setup.config, formats="free-form",
                               judges="ai-consilium", judge_model=setup.judge, judge_decoding=decoding)
    [judged] = [row.calls for row in estimate.rows if row.part == "judge ai-consilium"]
    items = len(setup.specs) * len(NEW_CASES) * JUDGE_CALLS["free-form"]
    assert (judged.low, judged.high) == (items, per_item * items)


def test_an_experiment_files_replicates_run_every_arm_again(setup: Setup, prior: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``cohort --experiment FILE --estimate``: the file's cases, models, settings, rubric, judge and 2
    replicates: every arm twice, said in the first line; agree's calls by hand (1 round, 3 roles, an
    assignment per case and replicate, 11 + 23 judge items), from the prior's agree traces."""
    experiment = setup.root / "replicated.yaml"
    experiment.write_text(json.dumps({
        "cases": str(setup.new_cases), "models": [setup.specs[0]], "judges": ["ai-consilium"],
        "judge_model": setup.judge, "replicates": 2,
        "run": {"max_rounds": MAX_ROUNDS, "min_roles": 3, "max_roles": 3}}), encoding="utf-8")
    out = setup.root / "never-experiment"
    capsys.readouterr()
    assert main(["cohort", "--experiment", str(experiment), "--out", str(out), "--estimate", "--like",
                 str(prior)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"Estimate: {len(NEW_CASES)} case(s) × 1 model(s) × 2 replicates; no model was called"
    assert not out.exists()
    totals = {cells[0]: _figures(cells[4]) for cells in _table(printed) if cells[0].endswith("total")}
    arms = 2 * len(NEW_CASES)
    panel = arms * (1 + 2 * (len(ROLES) + 1 + len(ROLES)))
    judged = arms * (JUDGE_CALLS["free-form"] + JUDGE_CALLS["structured"])
    assert totals == {"panel total": (panel,) * 3, "judge ai-consilium total": (judged,) * 3,
                      "total": (panel + judged,) * 3}


def test_each_judge_of_a_jury_judges_every_trace_and_is_priced_apart(setup: Setup, prior: Path) -> None:
    """A jury of two (the prior's judge, and a second priced by its model config): each judges every trace,
    so twice the items' calls by hand; a row with the unpriced judge in it shows no dollars, never 0."""
    second = setup.root / "second-judge.json"
    second.write_text(json.dumps({"model": "second", "rules": [
        {"stage": "judge", "json": {"rationale": "r", "score": 4}}]}), encoding="utf-8")
    priced = setup.root / "second-judge.yaml"
    priced.write_text(f"spec: scripted:{second}\nprices: {json.dumps(PRICES)}\n", encoding="utf-8")
    estimate = estimate_cohort(setup.new_cases, models=setup.specs, config=setup.config, judges="ai-consilium",
                               judge_model=[setup.judge, str(priced)], like=prior)
    judged = {row.variant: row for row in estimate.rows if row.part == "judge ai-consilium"}
    for fmt, row in judged.items():
        assert row.calls.expected == 2 * len(setup.specs) * len(NEW_CASES) * JUDGE_CALLS[fmt]
        assert row.usd == Span(None, None, None)
    assert estimate.total("judge ai-consilium").usd.high is None


@pytest.fixture(scope="module")
def prose_board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A board in single mode whose model writes prose, never the transcript's format: the meeting's answer
    is sent back twice (max_repairs) and kept as it is, 3 calls."""
    root = tmp_path_factory.mktemp("prose")
    model = root / "prose.json"
    model.write_text(json.dumps({"model": "prose", "rules": [{"stage": "board_turn", "response": "Just prose."}]}),
                     encoding="utf-8")
    out = root / "runs"
    assert main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(BOARD_CASE), "--model",
                 f"scripted:{model}", "--no-cache", "--out", str(out)]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_the_bounds_and_like_count_every_repair_of_an_answer(prose_board: Path) -> None:
    """The single-mode meeting's one answer, repaired twice: 3 calls (1 + max_repairs), counted from the trace.
    The bounds reach them (1 to 3), and --like that cohort says 3, not the one answer it kept."""
    [trace] = [json.loads(p.read_text(encoding="utf-8")) for p in prose_board.glob("arms/**/*.trace.json")]
    assert [c["stage"] for c in trace["calls"]] == ["board_turn"] * (1 + 2)
    spec = f"scripted:{prose_board.parent.parent / 'prose.json'}"
    bounds = estimate_cohort(BOARD_CASE, models=spec, protocols="board", modes="single")
    like = estimate_cohort(BOARD_CASE, models=spec, protocols="board", modes="single", like=prose_board)
    [row] = bounds.rows
    assert (row.calls.low, row.calls.high) == (1, 3)
    [row] = like.rows
    assert (row.calls.expected, row.calls.low, row.calls.high) == (3, 3, 3)


# The alternating discussion's bounds went with it (a config asking for it is refused:
# tests/traces/test_old_records.py).
@pytest.mark.parametrize("max_turns", [5, 3])
def test_a_short_boards_fewest_turns_are_what_its_limit_allows(tmp_path: Path, max_turns: int) -> None:
    """A moderator that closes as soon as it may (tests/graphs/test_board.py's): the meeting its turn limit and floor
    allow, run here, spends within the bounds."""
    import asyncio

    from test_board import rotating_board

    from consilium.cases import load_case
    from consilium.graphs.base import RunModels
    from consilium.graphs.board.config import BoardConfig
    from consilium.graphs.board.run import run_board

    model = rotating_board(closes=True)
    trace = asyncio.run(run_board(load_case(BOARD_CASE), "agents", RunModels(panel=model, moderator=model),
                                  BoardConfig(max_turns=max_turns, discussion="open"), run_id="t"))
    spent = sum(call.stage == "board_turn" for call in trace.calls)
    config = tmp_path / "board.yaml"
    config.write_text(f"max_turns: {max_turns}\ndiscussion: open\n", encoding="utf-8")
    board = tmp_path / "board.json"
    board.write_text(json.dumps({"model": "board", "rules": []}), encoding="utf-8")
    estimate = estimate_cohort(BOARD_CASE, models=[f"scripted:{board}"], protocols="board", modes="agents",
                               config=config)
    [turns] = [row.calls for row in estimate.rows if row.stage == "board_turn"]
    assert turns.low is not None and turns.high is not None and turns.low <= spent <= turns.high, (turns, spent)


@pytest.mark.parametrize("flag, spec, said", [
    ("--model", "opnai:gpt-4o", "unknown model spec 'opnai:gpt-4o'"),
    ("--model", "scripted:{root}/missing-panel.json", "missing-panel.json: scripted model file not found"),
    ("--moderator-model", "gguf:{root}/missing.gguf", "gguf model file not found: "),
    ("--judge-model", "replay:{root}/missing.trace.json", "missing.trace.json: trace not found"),
])
def test_a_model_the_run_would_refuse_is_refused_by_the_estimate(setup: Setup, flag: str, spec: str, said: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A panel, moderator or judge model a run could not open: one line naming it, exit 2, no table, no folder
    (checked without loading a model or reaching a server)."""
    argv = setup.flags(setup.new_cases, setup.root / "never-model")
    given = spec.format(root=setup.root)
    if flag == "--moderator-model":
        argv += [flag, given]
    else:
        argv[argv.index(flag) + 1] = given
    capsys.readouterr()
    code = main([*argv, "--estimate"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and said in err[0] and "Traceback" not in captured.err, err
    assert captured.out == "" and not (setup.root / "never-model").exists()


def test_like_a_stopped_cohort_says_it_is_partial(setup: Setup, prior: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The prior as a killed cohort leaves it: dissent's 6 arms never finished (no row, trace or judgement),
    the manifest still ``running`` with no process holding it. The closing line says how much of its plan it
    holds (6 of 3 cases × 2 models × 2 formats), and dissent is estimated from agree's traces, the only ones:
    one round, so 2 models × 3 cases × 3 roles votes a format."""
    import shutil

    stopped = tmp_path / prior.name
    shutil.copytree(prior, stopped)
    manifest = json.loads((stopped / "manifest.json").read_text(encoding="utf-8"))
    (stopped / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    with (stopped / "arms.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    kept = [row for row in rows if row["model_spec"] == setup.specs[0]]
    for row in rows:
        if row not in kept:
            trace = stopped / row["trace"]
            for path in trace.parent.glob(trace.name.replace(".trace.json", ".*")):
                path.unlink()
    with (stopped / "arms.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    capsys.readouterr()
    assert main([*setup.flags(setup.new_cases, tmp_path / "never"), "--estimate", "--like", str(stopped)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith(f"from {stopped} (6 traces, 0 failed; partial: 6 of 12 planned arms, "
                                  "cohort aborted)")
    votes = {cells[2]: _figures(cells[4]) for cells in _table(printed) if cells[3] == "vote"}
    assert votes == {fmt: (2 * len(NEW_CASES) * len(ROLES),) * 3 for fmt in ("free-form", "structured")}


@pytest.fixture(scope="module")
def failing_prior(setup: Setup) -> tuple[str, Path]:
    """A free-form cohort of agree and ``mute``, a panel with no vote to give: each of mute's arms fails at the
    vote (after its opinions and report), agree's complete."""
    rules = [rule for rule in _panel("mute", dissent=False)["rules"] if rule["stage"] != "vote"]
    mute = setup.root / "mute.json"
    mute.write_text(json.dumps({"model": "mute", "rules": rules}), encoding="utf-8")
    out = setup.root / "failing-prior"
    main(["cohort", "--cases", str(setup.prior_cases), "--model", setup.specs[0], "--extra-model",
          f"scripted:{mute}", "--formats", "free-form", "--config", str(setup.config), "--judge", "ai-consilium",
          "--judge-model", setup.judge, "--no-cache", "--out", str(out)])
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    return f"scripted:{mute}", run_dir


def test_like_a_cohort_with_failed_arms_counts_them_with_the_calls_they_made(
        setup: Setup, failing_prior: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """mute's arms failed at the vote: it is estimated with the votes (and judge calls) its failed arms
    made, counted here from their files, never raised to a completed arm's fewest; agree's are its own
    (1 round, 3 roles, 11 judge items); the closing line counts the failed arms."""
    mute, prior = failing_prior
    with (prior / "arms.csv").open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle)]
    failed = [row for row in rows if row["model_spec"] == mute]
    assert len(failed) == len(PRIOR_CASES) and {row["status"] for row in failed} == {"failed"}
    traces = [json.loads((prior / row["trace"]).read_text(encoding="utf-8")) for row in failed]
    votes = sum(call["stage"] == "vote" for trace in traces for call in trace["calls"]) / len(traces)
    judged = [path for row in failed for path in (prior / row["trace"]).parent.glob(
        Path(row["trace"]).name.replace(".trace.json", ".judge.ai-consilium.json"))]
    judge_calls = sum(len(json.loads(p.read_text(encoding="utf-8"))["calls"]) for p in judged) / len(traces)
    capsys.readouterr()
    assert main(["cohort", "--cases", str(setup.new_cases), "--model", setup.specs[0], "--extra-model", mute,
                 "--formats", "free-form", "--config", str(setup.config), "--judge", "ai-consilium", "--judge-model",
                 setup.judge, "--estimate", "--like", str(prior)]) == 0
    printed = capsys.readouterr().out.splitlines()
    table = {(cells[0], cells[3]): _figures(cells[4]) for cells in _table(printed)}
    cases = len(NEW_CASES)
    assert table[("panel", "vote")] == (cases * len(ROLES) + cases * votes,) * 3
    assert table[("judge ai-consilium", "judge")] == (cases * JUDGE_CALLS["free-form"] + cases * judge_calls,) * 3
    assert f"({len(rows)} traces, {len(failed)} failed" in printed[-1]


def test_like_says_when_a_model_is_estimated_from_the_models_the_prior_ran(setup: Setup, prior: Path) -> None:
    """A panel model the prior did not run takes every model's figures (agree's and dissent's mean: 2 rounds,
    6 votes a trace) and its rows say so; beside agree (its own figures, 3 votes a trace) the row says both."""
    other = setup.root / "unseen.json"
    other.write_text(json.dumps(_panel("unseen", dissent=False)), encoding="utf-8")
    alone = estimate_cohort(setup.new_cases, models=f"scripted:{other}", config=setup.config, formats="free-form",
                            like=prior)
    both = estimate_cohort(setup.new_cases, models=[setup.specs[0], f"scripted:{other}"], config=setup.config,
                           formats="free-form", like=prior)
    assert {row.source for row in alone.rows} == {"like (all models)"}
    # agree never revised: the revision row is the unseen model's alone
    assert {row.stage: row.source for row in both.rows} == {
        "role_assignment": "like+like (all models)", "opinion": "like+like (all models)",
        "synthesis": "like+like (all models)", "vote": "like+like (all models)", "revision": "like (all models)"}
    votes = {row.stage: row.calls.expected for row in both.rows}["vote"]
    cases, roles = len(NEW_CASES), len(ROLES)
    assert votes == cases * roles * 1 + cases * roles * (1 + MAX_ROUNDS) / 2
