"""Juries of judges: three scripted judges that disagree by design score two panel
models' answers to three cases in both formats; the verdicts, α, κ, self-preference and Spearman's ρ are
worked out here by hand (a coincidence-matrix α, κ from the confusion matrix, ranks by hand), and
calibration reads the jury's verdicts or one judge's scores."""

from __future__ import annotations

import csv
import json
import math
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.jury_fixture import (
    BASE_CASE,
    BINARY,
    CASES,
    EXTRA,
    JUDGES,
    MATCHES,
    ORDINAL,
    PANELS,
    ROOT,
    SCORES,
    judge_script,
    panel_script,
)
from support.scripts import Scripted

from consilium.cli import main
from consilium.graphs.registry import read_trace
from consilium.judges.components import component_texts
from consilium.judges.jury import family
from consilium.judges.record import Judgement, JudgementItem, JuryVerdict, read_judgement
from consilium.models.tokens import count_tokens


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three cases × two panel models × both formats, judged by the jury with both rubrics."""
    tmp = tmp_path_factory.mktemp("jury")
    base = yaml.safe_load(BASE_CASE.read_text())
    out = tmp / "runs"
    for case in CASES:
        data = {**base, "id": f"jury-{case.lower()}", "presentation": f"CASE-{case}. {base['presentation']}"}
        (tmp / f"case-{case}.yaml").write_text(yaml.safe_dump(data))
    for key in PANELS:
        (tmp / f"panel-{key}.json").write_text(json.dumps(panel_script(key)))
        for case in CASES:
            assert main(["simulate", "--case", str(tmp / f"case-{case}.yaml"), "--model",
                         f"scripted:{tmp / f'panel-{key}.json'}", "--out", str(out)]) == 0
    for rubric, binary in ((ORDINAL, False), (BINARY, True)):
        specs = []
        for name in JUDGES:
            path = tmp / f"{name}.{rubric}.json"
            path.write_text(json.dumps(judge_script(name, binary)))
            specs += ["--judge-model", f"scripted:{path}"]
        extra = ["--component", "conclusion"] if binary else []
        code = main(["judge", str(out), "--rubric", rubric, *specs, "--max-repairs", "1", *extra, "--no-cache"])
        assert code == 0
    return out


def _judgements(run: Path, rubric: str) -> list[tuple[str, str, str | None, Judgement]]:
    """(case letter, panel key, format, judgement) of every jury judgement of ``rubric``."""
    found = []
    for path in sorted(run.rglob(f"*.judge.{rubric}.json")):
        judgement = read_judgement(path)
        trace = json.loads((path.parent / judgement.trace).read_text())
        panel = next(k for k, v in PANELS.items() if v == trace["model"])
        found.append((judgement.case_id[-1].upper(), panel, judgement.variant, judgement))
    return found


def _verdict(item: JudgementItem) -> JuryVerdict:
    assert item.verdict is not None and item.votes is not None
    return item.verdict


def _specs(judgement: Judgement) -> list[str]:
    assert judgement.jury is not None
    return [m.judge for m in judgement.jury]


def test_ordinal_verdicts_are_medians_and_an_even_split_takes_the_lower_middle(run: Path) -> None:
    found = _judgements(run, ORDINAL)
    assert len(found) == 12  # 3 cases x 2 panels x 2 formats
    for case, panel, _, judgement in found:
        [item] = judgement.items
        verdict = _verdict(item)
        votes = [SCORES[j][(case, panel)] for j in JUDGES]
        assert [v.score for v in item.votes or []] == votes
        assert [spec.rsplit("/", 1)[-1].split(".")[0] for spec in _specs(judgement)] == list(JUDGES)
        counted = sorted(v for v in votes if v is not None)
        expected = counted[(len(counted) - 1) // 2]  # the median, or the lower middle of two
        assert item.score == expected and judgement.aggregates["conclusion"]["score"] == expected
        assert verdict.rule == "median" and verdict.evaluable == len(counted)
        assert verdict.not_evaluable == 3 - len(counted)
        if (case, panel) == ("C", "claude"):  # 4 and 3 left: stated, the lower middle
            assert item.score == 3 and "lower middle" in (verdict.tie or "")
            assert (item.votes or [])[2].not_evaluable
        else:
            assert verdict.tie is None
        assert [m.model for m in judgement.jury or []] == list(JUDGES.values())
        assert judgement.judge_model == "jury[" + ", ".join(JUDGES.values()) + "]"
    assert {(c, p): j.items[0].score for c, p, _, j in found} == {
        ("A", "gpt"): 2, ("A", "claude"): 2, ("B", "gpt"): 3, ("B", "claude"): 3, ("C", "gpt"): 5, ("C", "claude"): 3}


def test_binary_verdicts_are_majorities_and_a_tie_is_not_evaluable(run: Path) -> None:
    for case, panel, _, judgement in _judgements(run, BINARY):
        [item] = judgement.items
        verdict = _verdict(item)
        votes = [MATCHES[j][(case, panel)] for j in JUDGES]
        counted = [v for v in votes if v is not None]
        assert verdict.rule == "majority" and verdict.evaluable == len(counted)
        if (case, panel) == ("C", "claude"):  # j1 yes, j2 no, j3 not evaluable
            assert item.not_evaluable and item.score is None and "tie" in (verdict.tie or "")
            assert "split" in (item.reason or "")
        else:
            assert item.score == float(sum(counted) * 2 > len(counted)) and verdict.tie is None


def test_one_judge_judgement_is_as_before_and_an_old_record_still_reads(run: Path, tmp_path: Path) -> None:
    [trace] = [p for p in run.rglob("*.free-form.trace.json") if "jury-a" in p.name
               and read_trace(p).model == PANELS["gpt"]]
    judge = next(run.parent.glob("j1.otb-conclusion-alignment.json"))
    copy = tmp_path / trace.name
    copy.write_text(trace.read_text())
    assert main(["judge", str(copy), "--rubric", ORDINAL, "--judge-model", f"scripted:{judge}", "--no-cache"]) == 0
    record = json.loads(next(tmp_path.glob("*.judge.*.json")).read_text())
    assert record["jury"] is None and record["judge_model"] == JUDGES["j1"]
    assert record["items"][0]["score"] == 5 and record["items"][0]["votes"] is None
    record["schema_version"] = "1.0"
    for key in ("jury",):
        record.pop(key)
    for item in record["items"]:
        item.pop("votes"), item.pop("verdict")
    old = tmp_path / "old.judge.otb-conclusion-alignment.json"
    old.write_text(json.dumps(record))
    assert read_judgement(old).items[0].score == 5


# ---- statistics worked out by hand ------------------------------------------------------------------------


def _ordinal_alpha(units: list[list[int]], scale: list[int]) -> float:
    """Krippendorff's α, ordinal metric, from the coincidence matrix (Krippendorff 2011, eqs. for
    ordinal data): units with fewer than two values are not pairable."""
    index = {v: i for i, v in enumerate(scale)}
    size = len(scale)
    o = [[0.0] * size for _ in range(size)]
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    o[index[a]][index[b]] += 1 / (m - 1)
    n_c = [sum(row) for row in o]
    n = sum(n_c)

    def delta(c: int, k: int) -> float:
        low, high = min(c, k), max(c, k)
        return (sum(n_c[low:high + 1]) - (n_c[low] + n_c[high]) / 2) ** 2

    observed = sum(o[c][k] * delta(c, k) for c in range(size) for k in range(size))
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in range(size) for k in range(size)) / (n - 1)
    return 1 - observed / expected


def _nominal_alpha(units: list[list[float]]) -> float:
    values = sorted({v for u in units for v in u})
    o = {(a, b): 0.0 for a in values for b in values}
    for u in units:
        if len(u) < 2:
            continue
        for i, a in enumerate(u):
            for j, b in enumerate(u):
                if i != j:
                    o[(a, b)] += 1 / (len(u) - 1)
    n_c = {v: sum(o[(v, b)] for b in values) for v in values}
    n = sum(n_c.values())
    d_o = sum(o[(a, b)] for a in values for b in values if a != b)
    d_e = sum(n_c[a] * n_c[b] for a in values for b in values if a != b) / (n - 1)
    return 1 - d_o / d_e


def _quadratic_kappa(x: list[int], y: list[int], labels: list[int]) -> float:
    size = len(labels)
    confusion = [[0] * size for _ in range(size)]
    for a, b in zip(x, y, strict=True):
        confusion[labels.index(a)][labels.index(b)] += 1
    n = len(x)
    rows = [sum(r) for r in confusion]
    cols = [sum(confusion[i][j] for i in range(size)) for j in range(size)]
    weight = [[(i - j) ** 2 / (size - 1) ** 2 for j in range(size)] for i in range(size)]
    observed = sum(weight[i][j] * confusion[i][j] for i in range(size) for j in range(size))
    expected = sum(weight[i][j] * rows[i] * cols[j] / n for i in range(size) for j in range(size))
    return 1 - observed / expected


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # ties share their mean rank
        i = j + 1
    return ranks


def _spearman(x: list[float], y: list[float]) -> float:
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def report(run: Path) -> Path:
    for rubric in (ORDINAL, BINARY):
        assert main(["jury", str(run), "--rubric", rubric]) == 0
    return run / "jury"


def test_alpha_per_criterion_matches_a_hand_computation(run: Path, report: Path) -> None:
    units = [[v for v in (SCORES[j][(c, p)] for j in JUDGES) if v is not None]
             for c, p, _, _ in _judgements(run, ORDINAL)]
    [row, pooled] = _csv(report / f"jury.{ORDINAL}.alpha.csv")
    assert row["criterion"] == "conclusion/conclusion_alignment" and row["level"] == "ordinal"
    assert float(row["alpha"]) == pytest.approx(_ordinal_alpha(units, [1, 2, 3, 4, 5]), abs=1e-4)
    assert pooled["criterion"] == "all" and row["units"] == "12" and row["pairable_units"] == "12"
    binary = [[float(v) for v in (MATCHES[j][(c, p)] for j in JUDGES) if v is not None]
              for c, p, _, _ in _judgements(run, BINARY)]
    [row, _] = _csv(report / f"jury.{BINARY}.alpha.csv")
    assert row["level"] == "nominal"
    assert float(row["alpha"]) == pytest.approx(_nominal_alpha(binary), abs=1e-4)


@pytest.mark.parametrize(("rubric", "criterion", "scale"),
                         [(ORDINAL, "conclusion/conclusion_alignment", [1, 2, 3, 4, 5]),
                          (BINARY, "conclusion/final_conclusion", [0, 1])])
def test_pairwise_kappa_matches_the_confusion_matrix(run: Path, report: Path, rubric: str, criterion: str,
                                                     scale: list[int]) -> None:
    found = _judgements(run, rubric)
    rows = {(r["judge_a"], r["judge_b"]): r for r in _csv(report / f"jury.{rubric}.kappa.csv")
            if r["criterion"] == criterion}
    table: dict[str, dict[tuple[str, str], Any]] = {**(MATCHES if rubric == BINARY else SCORES)}
    names = list(JUDGES)
    specs = _specs(found[0][3])
    for a, b in combinations(range(3), 2):
        pairs = [(table[names[a]][(c, p)], table[names[b]][(c, p)]) for c, p, _, _ in found]
        both = [(int(x), int(y)) for x, y in pairs if x is not None and y is not None]
        row = rows[(specs[a], specs[b])]
        assert int(row["n"]) == len(both)
        expected = _quadratic_kappa([x for x, _ in both], [y for _, y in both], scale)
        assert float(row["kappa"]) == pytest.approx(expected, abs=1e-4)
        assert float(row["kappa"]) != 0 or rubric == ORDINAL  # varied by design (j1, j2 ordinal: 0 exactly)


def test_self_preference_of_the_judge_of_the_panels_family(run: Path, report: Path) -> None:
    assert family("openai:gpt-4o-mini") == family("openai:gpt-4o") == "gpt-4o"
    assert family("meta-llama/Llama-3-8B-Instruct") == "llama-3"
    rows = {r["family"]: r for r in _csv(report / f"jury.{ORDINAL}.self_preference.csv")}
    gpt = rows["gpt-4o"]
    # j1 on the 6 gpt-4o answers: 5 each; the others' mean per answer: (2+1)/2, (2+3)/2, (3+5)/2, twice.
    others = [(2 + 1) / 2, (2 + 3) / 2, (3 + 5) / 2] * 2
    differences = [5 - o for o in others]
    mean = sum(differences) / 6
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 5)
    half = 2.5705818366147395 * sd / math.sqrt(6)  # t(0.975, 5)
    assert int(gpt["answers"]) == 6 and int(gpt["items"]) == 6
    assert float(gpt["self_mean"]) == pytest.approx(5.0) and float(gpt["others_mean"]) == pytest.approx(
        sum(others) / 6, abs=1e-4)
    assert float(gpt["difference"]) == pytest.approx(mean, abs=1e-4)
    assert float(gpt["ci_low"]) == pytest.approx(mean - half, abs=1e-4)
    assert float(gpt["ci_high"]) == pytest.approx(mean + half, abs=1e-4)
    assert rows["llama-3"]["answers"] == "0" and rows["llama-3"]["difference"] == ""


def test_length_bias_is_spearman_of_score_with_length(run: Path, report: Path) -> None:
    rows = {r["judge"]: r for r in _csv(report / f"jury.{ORDINAL}.length_bias.csv")}
    found = _judgements(run, ORDINAL)
    texts = [component_texts(read_trace(path.parent / read_judgement(path).trace))["conclusion"]
             for path in sorted(run.rglob(f"*.judge.{ORDINAL}.json"))]  # in _judgements' order
    chars = [float(len(t)) for t in texts]
    tokens = [float(count_tokens(t)) for t in texts]
    specs = _specs(found[0][3])
    for name, spec in zip(JUDGES, specs, strict=True):
        scored = [(s, i) for i, (c, p, _, _) in enumerate(found) if (s := SCORES[name][(c, p)]) is not None]
        row = rows[spec]
        assert int(row["n"]) == len(scored)
        x = [float(s) for s, _ in scored]
        assert float(row["rho_chars"]) == pytest.approx(_spearman(x, [chars[i] for _, i in scored]), abs=1e-4)
        assert float(row["rho_tokens"]) == pytest.approx(_spearman(x, [tokens[i] for _, i in scored]), abs=1e-4)
    verdicts = [float(j.items[0].score or 0) for _, _, _, j in found]  # every ordinal verdict has a score
    assert float(rows["jury"]["rho_chars"]) == pytest.approx(_spearman(verdicts, chars), abs=1e-4)
    assert len(set(chars)) >= 6  # answers of different lengths


def test_report_files_and_figure(report: Path) -> None:
    names = {p.name for p in report.iterdir()}
    for rubric in (ORDINAL, BINARY):
        assert {f"jury.{rubric}.md", f"jury.{rubric}.png", f"jury.{rubric}.alpha.csv", f"jury.{rubric}.kappa.csv",
                f"jury.{rubric}.self_preference.csv", f"jury.{rubric}.length_bias.csv"} <= names
    text = (report / f"jury.{ORDINAL}.md").read_text()
    assert "Krippendorff" in text and "2 verdicts met a tie" in text  # case C's claude answer, in each format


# ---- calibration on jury judgements ------------------------------------------------------------------------


def test_calibrate_reads_the_verdict_or_one_judge(run: Path, tmp_path: Path) -> None:
    found = _judgements(run, ORDINAL)
    physician = {("A", "gpt"): 2, ("A", "claude"): 1, ("B", "gpt"): 3, ("B", "claude"): 4, ("C", "gpt"): 5,
                 ("C", "claude"): 3}
    lines = ["case_id,component,criterion,rater,score,variant,model"]
    for case, panel, fmt, judgement in found:
        lines.append(f"{judgement.case_id},conclusion,conclusion_alignment,dr-a,{physician[(case, panel)]},{fmt},"
                     f"{PANELS[panel]}")
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("\n".join(lines) + "\n")
    verdict = {(c, p): float(j.items[0].score or 0) for c, p, _, j in found}
    specs = _specs(found[0][3])
    for judge, scores in ((None, verdict), ("j1", {k: float(SCORES["j1"][k] or 0) for k in physician})):
        out = tmp_path / (judge or "jury")
        flags = ["--judge", specs[0]] if judge else []
        assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(run), "--rubric",
                     ORDINAL, "--bootstrap", "20", "--out", str(out), *flags]) == 0
        [row] = [r for r in _csv(out / "agreement.csv") if r["criterion"] != "pooled"][:1]
        mae = sum(abs(physician[k] - scores[k]) for k in physician) / 6
        assert float(row["mae"]) == pytest.approx(mae, abs=1e-3)
    assert main(["calibrate", "isotonic", "--ratings", str(ratings), "--judgements", str(run), "--rubric", ORDINAL,
                 "--out", str(tmp_path / "iso"), "--judge", specs[2]]) == 0
    assert (tmp_path / "iso" / f"isotonic.{ORDINAL}.json").is_file()


# ---- bad input ---------------------------------------------------------------------------------------------


def test_a_judge_given_twice_and_an_unknown_rubric_exit_2(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = next(run.parent.glob("j1.*.json"))
    capsys.readouterr()
    assert main(["judge", str(run), "--rubric", ORDINAL, "--judge-model", f"scripted:{judge}",
                 "--judge-model", f"scripted:{judge}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "given twice" in err and len(err.splitlines()) == 1
    assert main(["jury", str(run), "--rubric", "no-such-rubric"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    case_id = _judgements(run, ORDINAL)[0][3].case_id
    ratings = run.parent / "one-rating.csv"
    ratings.write_text(f"case_id,component,criterion,rater,score\n{case_id},conclusion,conclusion_alignment,dr,3\n")
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(run), "--rubric", ORDINAL,
                 "--judge", "scripted:nobody"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--judge: scripted:nobody is not on the jury" in err


# ---- a cohort judged by a jury -----------------------------------------------------------------------------


def test_a_cohort_is_judged_by_a_jury_and_its_table_holds_the_verdicts(run: Path, tmp_path: Path) -> None:
    folder = run.parent
    cases = tmp_path / "cases"
    cases.mkdir()
    for case in CASES:
        (cases / f"case-{case}.yaml").write_text((folder / f"case-{case}.yaml").read_text())
    out = tmp_path / "cohort"
    judges = [arg for name in JUDGES for arg in ("--judge-model", f"scripted:{folder / f'{name}.{ORDINAL}.json'}")]
    assert main(["cohort", "--cases", str(cases), "--model", f"scripted:{folder / 'panel-gpt.json'}", "--judge",
                 ORDINAL, *judges, "--out", str(out)]) == 0
    [manifest] = out.rglob("manifest.json")
    settings = json.loads(manifest.read_text())["settings"]
    assert [settings["judge_model"], *settings["jury_models"]] == judges[1::2]
    rows = _csv(next(out.rglob("judgements.csv")))
    assert len(rows) == 6  # 3 cases x 2 formats, one item each
    for row in rows:
        case = row["case_id"][-1].upper()
        votes = sorted(v for j in JUDGES if (v := SCORES[j][(case, "gpt")]) is not None)
        assert float(row["score"]) == votes[(len(votes) - 1) // 2]
    for path in out.rglob(f"*.judge.{ORDINAL}.json"):
        assert read_judgement(path).jury is not None
    assert main(["jury", str(manifest.parent), "--rubric", ORDINAL]) == 0
    assert (manifest.parent / "jury" / f"jury.{ORDINAL}.alpha.csv").is_file()


# ---- a jury on the four-decision rubric: "out of scope" is no point of the scale -----------------------------

FOUR = "otb-four-decision"
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
DIMS = ("therapy", "surgery", "next_action", "clinical_trial")
#: Each judge's four scores per (case, panel); −1: out of scope; None: the judge's answer on that dimension
#: is never valid (not evaluable). j1 (gpt-4o's family) favours gpt answers; most judges put the clinical
#: trial out of scope, and they disagree on scope for some items.
FOUR_SCORES: dict[str, dict[tuple[str, str], tuple[int | None, ...]]] = {
    "j1": {("A", "gpt"): (5, 4, 5, -1), ("A", "claude"): (3, 3, 4, -1), ("B", "gpt"): (4, 5, 4, -1),
           ("B", "claude"): (2, 3, 3, -1), ("C", "gpt"): (5, 5, 3, 3), ("C", "claude"): (3, 2, 4, 3)},
    "j2": {("A", "gpt"): (3, 3, 2, -1), ("A", "claude"): (4, 2, 3, -1), ("B", "gpt"): (2, 4, 3, -1),
           ("B", "claude"): (3, -1, 2, -1), ("C", "gpt"): (4, 3, 4, -1), ("C", "claude"): (2, 3, 3, 1)},
    "j3": {("A", "gpt"): (2, 4, 3, -1), ("A", "claude"): (3, 4, 2, -1), ("B", "gpt"): (4, 3, -1, -1),
           ("B", "claude"): (1, 2, 3, -1), ("C", "gpt"): (3, 4, 2, 3), ("C", "claude"): (4, None, 3, 3)}}
PLANS = {"A": "Lobectomy.", "B": "Staging first, then lobectomy and adjuvant chemotherapy.",
         "C": "Brain MRI and EBUS staging, lobectomy with nodal dissection, then chemotherapy and osimertinib."}


def _board_panel(key: str) -> dict[str, Any]:
    script = Scripted(PANELS[key]).roles("Medical oncologist", "Radiologist", justification=("x", "y"))
    for case, plan in PLANS.items():
        script.rule("board_turn", where={"role": "board", "contains": f"CASE-{case}"}, response=(
            "<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>\n"
            f"<conclusion>{plan}{EXTRA[key]} ({key}-answer)</conclusion>"))
    return script.build()


def _four_judge(name: str) -> dict[str, Any]:
    script = Scripted(JUDGES[name])
    for (case, panel), scores in FOUR_SCORES[name].items():
        answer: dict[str, Any] = {d: "high" if s is None else s for d, s in zip(DIMS, scores, strict=True)}
        script.judge({**answer, "rationale": "r"}, where={"contains_all": [f"CASE-{case}", f"{panel}-answer"]})
        if None in scores:  # the repair requests quote neither marker: the same invalid dimension again
            script.judge({**answer, "rationale": "r"})
    return script.build()


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three board cases × two panel models, judged by the three judges on the four-decision rubric with
    the judge deciding scope; then `consilium jury`."""
    tmp = tmp_path_factory.mktemp("jury-four")
    base = yaml.safe_load(NSCLC.read_text())
    out = tmp / "runs"
    for key in PANELS:
        (tmp / f"panel-{key}.json").write_text(json.dumps(_board_panel(key)))
        for case in PLANS:
            data = {**base, "id": f"four-{case.lower()}", "presentation": f"CASE-{case}. {base['presentation']}"}
            (tmp / f"case-{case}.yaml").write_text(yaml.safe_dump(data))
            assert main(["board", "--case", str(tmp / f"case-{case}.yaml"), "--mode", "single", "--model",
                         f"scripted:{tmp / f'panel-{key}.json'}", "--out", str(out)]) == 0
    specs = []
    for name in JUDGES:
        (tmp / f"{name}.{FOUR}.json").write_text(json.dumps(_four_judge(name)))
        specs += ["--judge-model", f"scripted:{tmp / f'{name}.{FOUR}.json'}"]
    assert main(["judge", str(out), "--rubric", FOUR, "--scope", "judge", *specs, "--no-cache"]) == 0
    assert main(["jury", str(out), "--rubric", FOUR]) == 0
    return out


def _four_units() -> dict[str, list[list[int | None]]]:
    """Per criterion, each answer's votes (j1, j2, j3); the order of the answers matters to no statistic
    below."""
    return {d: [[FOUR_SCORES[j][key][i] for j in JUDGES] for key in FOUR_SCORES["j1"]] for i, d in enumerate(DIMS)}


def _fleiss_agreement(units: list[list[Any]]) -> float:
    """Percent agreement by hand: per item of two values or more, agreeing pairs / all pairs; the mean."""
    shares = []
    for values in units:
        if len(values) < 2:
            continue
        pairs = [(a, b) for i, a in enumerate(values) for b in values[i + 1:]]
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return float(sum(shares) / len(shares))


def _row(rows: list[dict[str, str]], **where: str) -> dict[str, str]:
    [row] = [r for r in rows if all(r[k] == v for k, v in where.items())]
    return row


def test_jury_statistics_read_in_scope_scores_and_report_scope_agreement_apart(four: Path) -> None:
    report = four / "jury"
    units = _four_units()
    pooled = [u for d in DIMS for u in units[d]]
    in_scope = {d: [[v for v in u if v is not None and v != -1] for u in units[d]] for d in DIMS}
    all_in = [u for d in DIMS for u in in_scope[d]]
    alpha = _csv(report / f"jury.{FOUR}.alpha.csv")
    for name, scored in [*((f"conclusion/{d}", in_scope[d]) for d in DIMS), ("all", all_in)]:
        row = _row(alpha, criterion=name)
        assert row["level"] == "ordinal" and int(row["pairable_units"]) == sum(len(v) >= 2 for v in scored)
        assert float(row["alpha"]) == pytest.approx(_ordinal_alpha(scored, [1, 2, 3, 4, 5]), abs=1e-4)
        assert float(row["percent_agreement"]) == pytest.approx(_fleiss_agreement(scored), abs=1e-4)
    # The defect this guards against: −1 read as the lowest ordinal point inflates the pooled α.
    before = _ordinal_alpha([[v for v in u if v is not None] for u in pooled], [-1, 1, 2, 3, 4, 5])
    after = _ordinal_alpha(all_in, [1, 2, 3, 4, 5])
    assert float(_row(alpha, criterion="all")["alpha"]) == pytest.approx(after, abs=1e-4)
    assert before - after > 0.3
    # κ and percent agreement per pair, on the items both judges scored in scope; n/a says why.
    kappa = _csv(report / f"jury.{FOUR}.kappa.csv")
    specs = [kappa[0]["judge_a"], kappa[0]["judge_b"], kappa[1]["judge_b"]]  # pairs (j1, j2), (j1, j3), …
    for name, groups in [*((f"conclusion/{d}", [units[d]]) for d in DIMS), ("all", [units[d] for d in DIMS])]:
        for a, b in combinations(range(3), 2):
            row = _row(kappa, criterion=name, judge_a=specs[a], judge_b=specs[b])
            both = [(u[a], u[b]) for g in groups for u in g
                    if u[a] not in (None, -1) and u[b] not in (None, -1)]
            assert int(row["n"]) == len(both)
            if len(both) >= 2 and len({x for p in both for x in p}) > 1:
                expected = _quadratic_kappa([int(x or 0) for x, _ in both], [int(y or 0) for _, y in both],
                                            [1, 2, 3, 4, 5])
                assert float(row["kappa"]) == pytest.approx(expected, abs=1e-4) and row["note"] == ""
            else:
                assert row["kappa"] == "" and row["note"].startswith("n/a: ")
            if both:
                assert float(row["percent_agreement"]) == pytest.approx(
                    sum(x == y for x, y in both) / len(both), abs=1e-4)
    trial = "conclusion/clinical_trial"
    # j1 and j3 both gave 3 to both answers of case C: no variation; j2 scored one of them in scope.
    assert _row(kappa, criterion=trial, judge_a=specs[0], judge_b=specs[2])["note"] == (
        "n/a: no variation (both judges gave every common item 3)")
    assert _row(kappa, criterion=trial, judge_a=specs[0], judge_b=specs[1])["note"] == (
        "n/a: 1 item both scored in scope, fewer than 2")
    # Scope agreement apart: in or out of scope, over the items two judges or more decided.
    scope = _csv(report / f"jury.{FOUR}.scope.csv")
    for name, values in [*((f"conclusion/{d}", units[d]) for d in DIMS), ("all", pooled)]:
        decided = [[v != -1 for v in u if v is not None] for u in values]
        row = _row(scope, criterion=name)
        assert float(row["percent_agreement"]) == pytest.approx(_fleiss_agreement(decided), abs=1e-4)
        assert int(row["out_of_scope_votes"]) == sum(u.count(-1) for u in values)
        assert int(row["unanimous_units"]) == sum(len(set(d)) == 1 for d in decided if len(d) >= 2)
    assert float(_row(scope, criterion=trial)["percent_agreement"]) == pytest.approx((5 + 1 / 3) / 6, abs=1e-4)
    text = (report / f"jury.{FOUR}.md").read_text()
    assert "## Scope agreement" in text and "n/a: no variation" in text


def test_self_preference_and_length_bias_leave_out_of_scope_scores_out(four: Path) -> None:
    report = four / "jury"
    names = list(JUDGES)
    # j1 on the gpt answers: per answer, the items j1 and another judge scored in scope.
    differences, mine, theirs = [], [], []
    for case in PLANS:
        pairs = []
        for i in range(4):
            own = FOUR_SCORES["j1"][(case, "gpt")][i]
            others = [s for j in names[1:] if (s := FOUR_SCORES[j][(case, "gpt")][i]) not in (None, -1)]
            if own not in (None, -1) and others:
                pairs.append((float(own or 0), sum(others) / len(others)))
        mine.append(sum(p[0] for p in pairs) / len(pairs))
        theirs.append(sum(p[1] for p in pairs) / len(pairs))
        differences.append(mine[-1] - theirs[-1])
    row = {r["family"]: r for r in _csv(report / f"jury.{FOUR}.self_preference.csv")}["gpt-4o"]
    assert int(row["answers"]) == 3 and int(row["items"]) == 3 + 3 + 4
    assert float(row["self_mean"]) == pytest.approx(sum(mine) / 3, abs=1e-4)
    assert float(row["difference"]) == pytest.approx(sum(differences) / 3, abs=1e-4)
    # Length bias: an answer's score is the mean of its in-scope items (j1, and the jury's verdicts).
    texts = {}
    for path in sorted(four.rglob(f"*.judge.{FOUR}.json")):
        judgement = read_judgement(path)
        trace = read_trace(path.parent / judgement.trace)
        key = (judgement.case_id[-1].upper(), next(k for k, v in PANELS.items() if v == trace.model))
        texts[key] = component_texts(trace)["conclusion"]
    keys = sorted(texts)

    def verdict(key: tuple[str, str], i: int) -> int | None:
        votes = sorted(v for j in names if (v := FOUR_SCORES[j][key][i]) is not None)
        return votes[(len(votes) - 1) // 2]  # the median, or the lower middle (−1 sorts lowest)

    def answer_score(score: Any, key: tuple[str, str]) -> float:
        kept = [float(s) for i in range(4) if (s := score(key, i)) not in (None, -1)]
        return sum(kept) / len(kept)

    rows = {r["judge"]: r for r in _csv(report / f"jury.{FOUR}.length_bias.csv")}
    chars = [float(len(texts[k])) for k in keys]
    j1 = [answer_score(lambda k, i: FOUR_SCORES["j1"][k][i], k) for k in keys]
    jury = [answer_score(verdict, k) for k in keys]
    spec = _csv(report / f"jury.{FOUR}.kappa.csv")[0]["judge_a"]  # j1
    assert float(rows[spec]["rho_chars"]) == pytest.approx(_spearman(j1, chars), abs=1e-4)
    assert float(rows["jury"]["rho_chars"]) == pytest.approx(_spearman(jury, chars), abs=1e-4)


def test_the_viewer_shows_out_of_scope_for_a_verdict_and_a_vote_of_minus_one(four: Path, tmp_path: Path) -> None:
    """An arm's page names the four-decision rubric's −1 "out of scope", for the verdict and each judge's vote,
    never as the score −1.0 (which reads as a point below 1)."""
    import re
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(four, runs)
    assert main(["view", str(runs)]) == 0
    pages = {p: p.read_text(encoding="utf-8") for p in runs.rglob("*.html")}
    text = "\n".join(pages.values())
    assert "-1.0" not in text and "−1.0" not in text
    # Case A's gpt answer: every judge put the clinical trial out of scope, so the verdict is out of scope.
    votes = re.findall(r"Votes: ([^<]*)", text)
    assert any(v.count("out of scope") == 3 for v in votes)
    # Case C's claude answer: j2 alone gave the clinical trial 1, j1 and j3 gave 3.
    assert any(re.search(r": 3\.0; [^;]*: 1\.0; [^;]*: 3\.0", v) for v in votes)
    assert ">out of scope<" in text


#: Two physicians' four scores per (case, panel), as FOUR_SCORES (−1: out of scope). They disagree with j3
#: (whose scores calibrate reads below) and with each other on scope for some items; j3 cannot judge case
#: C's claude surgery, so those two ratings pair with no judge score.
PHYSICIANS: dict[str, dict[tuple[str, str], tuple[int, ...]]] = {
    "dr-a": {("A", "gpt"): (3, 4, -1, -1), ("A", "claude"): (3, 5, 2, -1), ("B", "gpt"): (4, 2, 3, -1),
             ("B", "claude"): (2, 2, 3, 2), ("C", "gpt"): (3, 5, 2, -1), ("C", "claude"): (5, 3, 3, 3)},
    "dr-b": {("A", "gpt"): (2, 3, 3, -1), ("A", "claude"): (4, 4, -1, -1), ("B", "gpt"): (5, 3, -1, -1),
             ("B", "claude"): (1, 1, 4, -1), ("C", "gpt"): (2, 4, 1, 3), ("C", "claude"): (4, 2, 2, 4)}}


def _physician_ratings(path: Path) -> Path:
    """PHYSICIANS as a ratings file (one row per rater, output and decision; −1 as rated) at ``path``."""
    lines = ["case_id,component,criterion,rater,score,model"]
    for rater, scores in PHYSICIANS.items():
        for (case, panel), values in scores.items():
            lines += [f"four-{case.lower()},conclusion,{d},{rater},{s},{PANELS[panel]}"
                      for d, s in zip(DIMS, values, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_reads_in_scope_scores_and_reports_scope_agreement_apart(four: Path, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`calibrate agreement --judge j3` on the four-decision rubric: α, MAE, κ and the physician baseline read
    the in-scope scores only (−1 is no point below 1), agreement on scope is its own table, and an isotonic map
    is fitted on in-scope pairs and never maps −1. Every expected value is worked out here from the scores."""
    ratings = _physician_ratings(tmp_path / "ratings.csv")
    judgement = read_judgement(next(four.rglob(f"*.judge.{FOUR}.json")))
    spec = _specs(judgement)[2]  # j3
    out = tmp_path / "agreement"
    capsys.readouterr()
    assert main(["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(four), "--rubric", FOUR,
                 "--judge", spec, "--bootstrap", "20", "--out", str(out)]) == 0
    assert "46 paired with judge scores, 2 without" in capsys.readouterr().out
    # Per criterion: each rated output's (dr-a, dr-b, j3) scores; the output j3 could not judge is no unit.
    units: dict[str, list[tuple[int, int, int]]] = {
        d: [(PHYSICIANS["dr-a"][k][i], PHYSICIANS["dr-b"][k][i], j)
            for k in PHYSICIANS["dr-a"] if (j := FOUR_SCORES["j3"][k][i]) is not None] for i, d in enumerate(DIMS)}
    rows = {r["criterion"]: r for r in _csv(out / "agreement.csv")}
    scope = {r["criterion"]: r for r in _csv(out / "agreement.scope.csv")}
    for name, group in [*((d, units[d]) for d in DIMS), ("pooled", [u for d in DIMS for u in units[d]])]:
        pairs = [(h, u[2]) for u in group for h in u[:2]]
        scored = [(h, j) for h, j in pairs if -1 not in (h, j)]
        row = rows[name]
        assert int(row["n"]) == len(scored), name
        assert float(row["mae"]) == pytest.approx(sum(abs(h - j) for h, j in scored) / len(scored), abs=1e-9), name
        assert float(row["exact"]) == pytest.approx(sum(int(h == j) for h, j in scored) / len(scored), abs=1e-9), name
        in_scope = [[int(v) for v in u if v != -1] for u in group]
        assert float(row["alpha"]) == pytest.approx(_ordinal_alpha(in_scope, [1, 2, 3, 4, 5]), abs=1e-9), name
        if len({v for p in scored for v in p}) > 1:
            assert float(row["qwk"]) == pytest.approx(_quadratic_kappa(
                [int(h) for h, _ in scored], [int(j) for _, j in scored], [1, 2, 3, 4, 5]), abs=1e-9), name
        # Scope apart: does the physician put it in scope as the judge does, over every pair.
        assert int(scope[name]["n"]) == len(pairs)
        assert float(scope[name]["percent_agreement"]) == pytest.approx(
            sum((h != -1) == (j != -1) for h, j in pairs) / len(pairs), abs=1e-9), name
        assert int(scope[name]["physician_out_of_scope"]) == sum(h == -1 for h, _ in pairs)
        assert int(scope[name]["judge_out_of_scope"]) == sum(j == -1 for _, j in pairs)
    pooled = [u for d in DIMS for u in units[d]]
    # The defect this guards against: −1 read as the lowest point of the scale (MAE 33/46 = 0.717 over every
    # pair, 15/33 = 0.455 over in-scope pairs; next_action's α 0.239, 0.692 in scope).
    pairs = [(h, u[2]) for u in pooled for h in u[:2]]
    assert float(rows["pooled"]["mae"]) == pytest.approx(15 / 33, abs=1e-9)
    assert sum(abs(h - j) for h, j in pairs) / len(pairs) == pytest.approx(33 / 46)
    before = _ordinal_alpha([[int(v) for v in u] for u in units["next_action"]], [-1, 1, 2, 3, 4, 5])
    assert float(rows["next_action"]["alpha"]) - before > 0.4
    # The physician baseline: each in-scope rating against the other physician's, where both rated in scope;
    # its α among the physicians alone; their scope agreement within each output (two raters: agree or not).
    both = [(a, b) for a, b, _ in pooled if -1 not in (a, b)]
    baseline = rows["physician baseline (pooled)"]
    assert int(baseline["n"]) == 2 * len(both)
    assert float(baseline["mae"]) == pytest.approx(sum(abs(a - b) for a, b in both) / len(both), abs=1e-9)
    assert float(baseline["alpha"]) == pytest.approx(
        _ordinal_alpha([[int(v) for v in u[:2] if v != -1] for u in pooled], [1, 2, 3, 4, 5]), abs=1e-9)
    assert float(scope["physician baseline (pooled)"]["percent_agreement"]) == pytest.approx(
        sum((a != -1) == (b != -1) for a, b, _ in pooled) / len(pooled), abs=1e-9)
    assert "## Scope agreement" in (out / "agreement.md").read_text()
    # An isotonic map: fitted on the pairs both scored in scope, onto the scale's points; −1 is never mapped.
    assert main(["calibrate", "isotonic", "--ratings", str(ratings), "--judgements", str(four), "--rubric", FOUR,
                 "--judge", spec, "--out", str(tmp_path / "iso")]) == 0
    from consilium.calibration.isotonic import load_calibration

    calibration = load_calibration(tmp_path / "iso" / f"isotonic.{FOUR}.json", FOUR)
    assert calibration.criteria
    for key, mapping in calibration.criteria.items():
        dim = key.split("/")[1]
        assert mapping.train_n + mapping.test_n == sum(-1 not in (h, u[2]) for u in units[dim] for h in u[:2])
        assert min(mapping.y) >= 1 and max(mapping.y) <= 5
        assert calibration.apply("conclusion", dim, -1) is None


def test_evolve_aims_at_the_physicians_in_scope_mean_and_counts_a_judge_out_of_scope_as_the_worst_error(
        four: Path, tmp_path: Path) -> None:
    """`calibrate evolve` on the four-decision rubric: an output's target is the mean of the physicians' in-scope
    ratings (an output every physician put out of scope is no item), and a judge putting a rated output out of
    scope counts as the largest error on 1-5 (4), as a not-evaluable judgement does."""
    import asyncio

    from consilium.calibration.evolve import evolve_criterion, rated_items
    from consilium.calibration.isotonic import split_cases
    from consilium.calibration.pairs import load_judgements
    from consilium.calibration.ratings import load_ratings
    from consilium.judges.rubric import load_rubric
    from consilium.judges.runner import JudgeSetup
    from consilium.judges.scope import out_of_scope_score
    from consilium.models.backends.scripted import Script, ScriptedModel

    rubric = load_rubric(FOUR)
    path = _physician_ratings(tmp_path / "ratings.csv")
    items, unmatched = rated_items(load_ratings(path, rubric), load_judgements(four, FOUR), path,
                                   out_of_scope_score(rubric))
    assert unmatched == 0
    for i, dim in enumerate(DIMS):
        targets = {}
        for key in PHYSICIANS["dr-a"]:
            kept = [s[key][i] for s in PHYSICIANS.values() if s[key][i] != -1]
            if kept:
                targets[(f"four-{key[0].lower()}", PANELS[key[1]])] = sum(kept) / len(kept)
        assert {(item.case_id, item.trace.model): item.target for item in items.get(dim, [])} == targets, dim
    # The judge, on next_action: out of scope on case A's claude answer (physicians: 2 and out of scope), else 3.
    judge = tmp_path / "evolve-judge.json"
    judge.write_text(json.dumps({"model": "evolve-judge", "rules": [
        {"stage": "judge", "contains_all": ["CASE-A", "claude-answer"], "json": {"next_action": -1, "rationale": "r"}},
        {"stage": "judge", "json": {"next_action": 3, "rationale": "r"}}]}))
    optimiser = tmp_path / "evolve-optimiser.json"
    optimiser.write_text(json.dumps({"model": "optimiser", "rules": [
        {"stage": "calibration", "json": {"instruction": "Score the next action against the reference only."}}]}))
    criterion = next(c for c in rubric.criteria if c.id == "next_action")
    result = asyncio.run(evolve_criterion(
        rubric, criterion, items["next_action"], judge=JudgeSetup(model=ScriptedModel(Script.load(judge)),
                                                                  scope="judge"),
        optimiser=ScriptedModel(Script.load(optimiser)), population=2, generations=1, repeats=1))
    [repeat] = result.repeats
    train, _ = split_cases([item.case_id for item in items["next_action"]], 0.5, 0)
    errors: dict[bool, list[float]] = {True: [], False: []}  # in training or not
    for item in items["next_action"]:
        out = item.case_id == "four-a" and item.trace.model == PANELS["claude"]
        errors[item.case_id in train].append(4.0 if out else abs(3 - item.target))
    assert repeat.train_initial.mae == pytest.approx(sum(errors[True]) / len(errors[True]))
    assert repeat.val_initial is not None
    assert repeat.val_initial.mae == pytest.approx(sum(errors[False]) / len(errors[False]))
    worst = [*repeat.train_initial.worst, *repeat.val_initial.worst]
    assert any(w.startswith("- judge -1.0, physicians 2:") for w in worst)  # judged out of scope, not refused


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("votes", "97.0", "97 is not a score of rubric"), ("votes", "-1", "-1 is not a score of rubric"),
    ("votes", "Infinity", "is not a finite number"), ("calibrated_score", "5.5", "is outside rubric")])
def test_a_jury_vote_or_calibrated_score_edited_off_the_scale_is_refused(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: str, problem: str) -> None:
    """A judge's own vote in a jury record is checked as the verdict is (the 1-5 rubric has no out-of-scope
    −1), and a calibrated score must lie within the scale: one line naming the file and field, exit 2."""
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(run, runs)
    record = sorted(runs.rglob(f"*.judge.{ORDINAL}.json"))[2]
    data = json.loads(record.read_text())
    at = next(i for i, item in enumerate(data["items"]) if item["votes"])
    where = f"items.{at}.votes.1.score" if field == "votes" else f"items.{at}.calibrated_score"
    if field == "votes":
        data["items"][at]["votes"][1]["score"] = "SENTINEL"
    else:
        data["items"][at]["calibrated_score"] = "SENTINEL"
    record.write_text(json.dumps(data).replace('"SENTINEL"', value))
    before = {p: p.read_bytes() for p in (runs / "jury").rglob("*") if p.is_file()}  # an earlier report, if any
    capsys.readouterr()
    assert main(["jury", str(runs), "--rubric", ORDINAL]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{record}: {where}: " in err and problem in err
    assert {p: p.read_bytes() for p in (runs / "jury").rglob("*") if p.is_file()} == before  # nothing written


def test_a_length_bias_p_below_1e_4_is_kept_in_the_csv_and_never_shown_as_zero(tmp_path: Path) -> None:
    """Twelve answers whose scores rise with their length for both judges: Spearman's p is about 1e-8, which
    four decimals printed as 0.0000 in the markdown and the CSV alike; the CSV keeps it as computed and the
    markdown says < 1e-4."""
    from scipy.stats import spearmanr

    from consilium.judges.record import JuryMember
    from consilium.judges.rubric import load_rubric
    from consilium.reports.jury import Answer, JuryData, Unit
    from consilium.reports.jury_tables import write_jury

    scores = [1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5]  # answer i: judge a's and b's score, its length 100 + 37 i
    lengths = [100 + 37 * i for i in range(12)]
    data = JuryData(load_rubric("otb-conclusion-alignment"),
                    [JuryMember(judge="a", model="gpt-4o", family="gpt"),
                     JuryMember(judge="b", model="claude-3", family="claude")])
    for i, (score, length) in enumerate(zip(scores, lengths, strict=True)):
        data.answers.append(Answer(f"c{i}.judge.json", f"c{i}", "llama", "conclusion", length, length // 4))
        data.units.append(Unit(i, "conclusion/conclusion_alignment", (float(score), float(score)), float(score)))
    p = float(spearmanr(scores, lengths).pvalue)
    assert p < 1e-4
    write_jury(tmp_path, data)
    rows = list(csv.DictReader((tmp_path / "jury.otb-conclusion-alignment.length_bias.csv").open()))
    assert [float(r["p_chars"]) for r in rows] == [pytest.approx(p, rel=1e-9)] * 3  # judges a, b, the jury
    lines = [line for line in (tmp_path / "jury.otb-conclusion-alignment.md").read_text().splitlines()
             if line.startswith("| a |") or line.startswith("| b |") or line.startswith("| jury |")]
    assert lines and all("< 1e-4" in line and "0.0000" not in line for line in lines[-3:]), lines
