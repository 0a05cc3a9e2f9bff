"""Experiments as one file, and replicates.

An experiment file names the cases, two scripted panel models, both formats, ``replicates: 3``, the
run settings and a scripted judge; ``consilium cohort --experiment FILE`` alone runs it. The panels
answer by seed (the scripted backend's ``seed`` filter: another seed, another report), and the judge
scores each replicate's conclusion by the seed mark in it, so the scores vary between replicates.
The between-replicate SDs, the case-clustered intervals and the paired differences are worked out
here by hand from :func:`score` and compared with what ``compare`` and ``report`` write.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from support.scripts import STRUCTURED_REPORT, Scripted, sections

from consilium.cli import main

MODELS = ("panel-a", "panel-b")
CASES = ("k1", "k2")
FORMATS = ("free-form", "structured")
MARKERS = {"k1": "ZQALPHA", "k2": "ZQBRAVO"}
BASE_SEED = 5
REPLICATES = 3
SEEDS = tuple(BASE_SEED + i for i in range(REPLICATES))
CRITERIA = ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8")
WHOLE_CASE = ("panel_adequacy", "case_complexity", "overall_quality")
FALLBACK = 2  # every item the rules below do not name (the role components, the whole-case criteria)


def mark(model: str, fmt: str, seed: int) -> str:
    return f"ARM{model[-1].upper()}{'FF' if fmt == 'free-form' else 'ST'}SEED{seed}"


def score(model: str, case: str, fmt: str, seed: int, criterion: str) -> int:
    """The judge's score of a conclusion's C1–C8 criterion: varied over replicates, cases, models, formats."""
    m, k, f, r, i = MODELS.index(model), CASES.index(case), FORMATS.index(fmt), SEEDS.index(seed), \
        CRITERIA.index(criterion)
    return (m + 2 * k + f + r * (i + 1) + i) % 4


def panel_script(model: str) -> dict[str, Any]:
    script = Scripted(model).roles("Internal Medicine", "Cardiology", "Neurology")
    for seed in SEEDS:
        script.synthesis(sections(f"{mark(model, 'structured', seed)} report"),
                         where={"seed": seed, "contains": STRUCTURED_REPORT})
        script.synthesis(f"{mark(model, 'free-form', seed)} report", where={"seed": seed})
    script.synthesis(sections("report"), where={"contains": STRUCTURED_REPORT}).synthesis("report")  # other seeds
    return script.structured_opinion("A").opinion("opinion of {role}").accept().build()


def judge_script() -> dict[str, Any]:
    script = Scripted("replicate-judge")
    for model in MODELS:
        for case in CASES:
            for fmt in FORMATS:
                for seed in SEEDS:
                    for criterion in CRITERIA:
                        script.score(score(model, case, fmt, seed, criterion), item=f"conclusion:{criterion}",
                                     where={"contains_all": [MARKERS[case], mark(model, fmt, seed)]})
    return script.score(FALLBACK).build()


def write_study(root: Path, *, replicates: int = REPLICATES, extra: str = "") -> Path:
    """The cases, the scripts and the experiment file (paths relative to it) under ``root``."""
    cases = root / "study" / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        (cases / f"{case}.json").write_text(json.dumps({
            "id": case, "title": f"Case {case}", "kind": "diagnostic", "question": "What is the diagnosis?",
            "presentation": f"Case {MARKERS[case]}: fever and cough.", "reference": {"diagnosis": "Pneumonia"}}))
    for model in MODELS:
        (root / "study" / f"{model}.json").write_text(json.dumps(panel_script(model)))
    (root / "study" / "judge.json").write_text(json.dumps(judge_script()))
    experiment = root / "study" / "experiment.yaml"
    experiment.write_text(f"""description: two scripted panels, both formats, three replicates
cases: cases
models:
  - scripted:panel-a.json
  - {{spec: "scripted:panel-b.json"}}
protocol: consilium
formats: [free-form, structured]
run:
  max_rounds: 2
  seed: {BASE_SEED}
judges: [ai-consilium]
judge_model: scripted:judge.json
replicates: {replicates}
{extra}""")
    return experiment


def run_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    experiment = write_study(tmp_path)
    monkeypatch.chdir(tmp_path)  # --out defaults to runs/ here
    assert main(["cohort", "--experiment", str(experiment)]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    return experiment, run_dir


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("replicates")
    with pytest.MonkeyPatch.context() as patch:
        return run_study(root, patch)


def test_experiment_alone_runs_every_arm_of_every_replicate(study: tuple[Path, Path]) -> None:
    experiment, run_dir = study
    manifest = json.loads((run_dir / "manifest.json").read_text())
    record = manifest["settings"]["experiment"]
    import hashlib

    assert record["path"] == str(experiment.resolve())
    assert record["sha256"] == hashlib.sha256(experiment.read_bytes()).hexdigest()
    assert record["content"]["replicates"] == REPLICATES and record["overridden"] == []
    assert record["content"]["cases"] == str((experiment.parent / "cases").resolve())
    assert manifest["settings"]["seeds"] == list(SEEDS)
    assert manifest["settings"]["judges"] == ["ai-consilium"]
    assert [Path(m.removeprefix("scripted:")).name for m in manifest["settings"]["models"]] == \
        ["panel-a.json", "panel-b.json"]
    rows = read_csv(run_dir / "arms.csv")
    assert len(rows) == len(CASES) * len(MODELS) * len(FORMATS) * REPLICATES
    assert {(r["case_id"], r["model"], r["format"], r["replicate"], r["seed"]) for r in rows} == {
        (c, m, f, str(i), str(s)) for c in CASES for m in MODELS for f in FORMATS for i, s in enumerate(SEEDS)}
    traces = [run_dir / r["trace"] for r in rows]
    assert len(set(traces)) == len(traces) and all(p.is_file() for p in traces)
    for row, path in zip(rows, traces, strict=True):
        assert path.name == f"{row['case_id']}.{row['format']}.r{row['replicate']}.trace.json"
        trace = json.loads(path.read_text())
        assert trace["config"]["seed"] == int(row["seed"])
        assert mark(row["model"], row["format"], int(row["seed"])) in json.dumps(trace)
        assert path.with_name(path.name.removesuffix(".trace.json") + ".judge.ai-consilium.json").is_file()


def _by_hand() -> dict[tuple[str, str, str], list[float]]:
    """(model, format, case) → the C1–C8 output mean of the conclusion of each replicate."""
    return {(m, f, k): [sum(score(m, k, f, s, c) for c in CRITERIA) / len(CRITERIA) for s in SEEDS]
            for m in MODELS for f in FORMATS for k in CASES}


def _sample_sd(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _check_replicate_sd(rows: list[dict[str, str]]) -> None:
    means = _by_hand()
    for model in (*MODELS, "pooled"):
        for fmt in FORMATS:
            [row] = [r for r in rows if (r["model"], r["format"], r["rubric"], r["component"], r["criterion"]) ==
                     (model, fmt, "ai-consilium", "conclusion", "mean")]
            models = MODELS if model == "pooled" else (model,)
            cells = [means[(m, fmt, k)] for m in models for k in CASES]
            sds = [_sample_sd(c) for c in cells]
            # Each case's replicates averaged first; a case's cluster holds one mean per model.
            case_means = {k: [sum(means[(m, fmt, k)]) / REPLICATES for m in models] for k in CASES}
            clusters = [sum(v) / len(v) for v in case_means.values()]
            assert int(row["cases"]) == len(CASES) and int(row["replicates"]) == len(cells) * REPLICATES
            assert float(row["mean"]) == pytest.approx(sum(clusters) / len(clusters), abs=1e-6)
            assert float(row["sd_mean"]) == pytest.approx(sum(sds) / len(sds), abs=1e-6)
            assert float(row["sd_pooled"]) == pytest.approx(math.sqrt(sum(s * s for s in sds) / len(sds)), abs=1e-6)
            # Two cases, equal clusters: a quarter of the resamples draw the lower case twice, a quarter the
            # higher, so the 2.5th and 97.5th percentiles are the two cases' means.
            assert float(row["ci_low"]) == pytest.approx(min(clusters), abs=1e-6)
            assert float(row["ci_high"]) == pytest.approx(max(clusters), abs=1e-6)
    assert any(float(r["sd_pooled"]) > 0 for r in rows if r["criterion"] == "mean")


def _check_case_sd(rows: list[dict[str, str]]) -> None:
    means = _by_hand()
    for (model, fmt, case), values in means.items():
        [row] = [r for r in rows if (r["model"], r["format"], r["case_id"], r["criterion"], r["component"]) ==
                 (model, fmt, case, "mean", "conclusion")]
        assert int(row["replicates"]) == REPLICATES
        assert float(row["sd"]) == pytest.approx(_sample_sd(values), abs=1e-6)
    [c1] = [r for r in rows if (r["model"], r["format"], r["case_id"], r["criterion"], r["component"]) ==
            ("panel-b", "structured", "k2", "c1", "conclusion")]
    assert float(c1["sd"]) == pytest.approx(_sample_sd([score("panel-b", "k2", "structured", s, "c1") for s in SEEDS]),
                                            abs=1e-6)


def _check_paired(rows: list[dict[str, str]]) -> None:
    means = _by_hand()
    for model in (*MODELS, "pooled"):
        [row] = [r for r in rows if (r["model"], r["rubric"], r["component"], r["criterion"]) ==
                 (model, "ai-consilium", "conclusion", "mean")]
        models = MODELS if model == "pooled" else (model,)
        diffs = {k: [sum(means[(m, "structured", k)]) / REPLICATES - sum(means[(m, "free-form", k)]) / REPLICATES
                     for m in models] for k in CASES}
        flat = [d for v in diffs.values() for d in v]
        clusters = [sum(v) / len(v) for v in diffs.values()]
        assert int(row["cases"]) == len(flat)
        assert float(row["mean_difference"]) == pytest.approx(sum(flat) / len(flat), abs=1e-6)
        assert float(row["ci_low"]) == pytest.approx(min(clusters), abs=1e-6)
        assert float(row["ci_high"]) == pytest.approx(max(clusters), abs=1e-6)


def test_compare_gives_the_between_replicate_sd_and_intervals(study: tuple[Path, Path]) -> None:
    _, run_dir = study
    assert main(["compare", str(run_dir), "--bootstrap", "2000"]) == 0
    out = run_dir / "compare"
    _check_replicate_sd(read_csv(out / "replicate_sd.csv"))
    _check_case_sd(read_csv(out / "replicate_sd_cases.csv"))
    _check_paired(read_csv(out / "paired_differences.csv"))
    assert "Between-replicate SD" in (out / "compare.md").read_text()


def test_report_gives_the_same_replicate_tables(study: tuple[Path, Path]) -> None:
    _, run_dir = study
    assert main(["report", str(run_dir), "--bootstrap", "2000"]) == 0
    _check_replicate_sd(read_csv(run_dir / "report" / "replicate_sd.csv"))
    _check_case_sd(read_csv(run_dir / "report" / "replicate_sd_cases.csv"))


def test_resume_reuses_every_replicate_and_refuses_a_changed_experiment(study: tuple[Path, Path],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    experiment, run_dir = study
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    rows = read_csv(run_dir / "arms.csv")
    assert len(rows) == len(CASES) * len(MODELS) * len(FORMATS) * REPLICATES
    assert all(r["resumed"] == "True" for r in rows)
    original = experiment.read_text()
    try:
        experiment.write_text(original.replace(f"replicates: {REPLICATES}", "replicates: 4"))
        capsys.readouterr()
        assert main(["cohort", "--resume", str(run_dir)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(experiment) in err and "changed since the cohort started" in err
        assert main(["cohort", "--resume", str(run_dir), "--experiment", str(experiment)]) == 2
        assert "changed since the cohort started" in capsys.readouterr().err
    finally:
        experiment.write_text(original)


def test_a_flag_beside_the_file_overrides_it_and_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = write_study(tmp_path, replicates=2)
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(experiment), "--formats", "free-form", "--limit", "1",
                 "--seed", "40"]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["experiment"]["overridden"] == ["--formats", "--seed"]
    assert manifest["settings"]["seeds"] == [40, 41]  # the replicates' seeds start at the --seed given
    rows = read_csv(run_dir / "arms.csv")
    assert len(rows) == 1 * len(MODELS) * 1 * 2 and {r["seed"] for r in rows} == {"40", "41"}


def test_the_first_model_mapping_gives_the_model_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = write_study(tmp_path, replicates=1)
    text = experiment.read_text().replace("  - scripted:panel-a.json",
                                          '  - {spec: "scripted:panel-a.json", max_concurrency: 3, timeout_s: 30}')
    experiment.write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(experiment), "--limit", "1", "--formats", "free-form"]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    assert (settings["concurrency"], settings["model"]["timeout"]) == (3, 30)
    assert settings["seeds"] == [BASE_SEED] and settings["experiment"]["overridden"] == ["--formats"]
    [trace] = {r["trace"] for r in read_csv(run_dir / "arms.csv") if r["model"] == "panel-a"}
    assert trace.endswith("k1.free-form.r0.trace.json")


def test_cases_by_glob_and_a_moderator_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = write_study(tmp_path, replicates=1, extra="moderator_model: scripted:panel-a.json\n")
    experiment.write_text(experiment.read_text().replace("cases: cases", "cases: cases/k*.json"))
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(experiment), "--formats", "free-form"]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    assert settings["cases"] == str(experiment.parent.resolve() / "cases" / "k*.json")
    assert settings["moderator_model"] == f"scripted:{(experiment.parent / 'panel-a.json').resolve()}"
    assert sorted(settings["case_hashes"]) == list(CASES)
    assert len(read_csv(run_dir / "arms.csv")) == len(CASES) * len(MODELS)
    assert main(["cohort", "--resume", str(run_dir)]) == 0  # the pattern finds the same cases again


def test_explicit_seeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment = write_study(tmp_path, replicates=2, extra="seeds: [5, 7]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(experiment), "--limit", "1", "--formats", "free-form"]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    assert json.loads((run_dir / "manifest.json").read_text())["settings"]["seeds"] == [5, 7]
    rows = read_csv(run_dir / "arms.csv")
    assert sorted({(r["replicate"], r["seed"]) for r in rows}) == [("0", "5"), ("1", "7")]


@pytest.mark.parametrize(("edit", "field"), [
    ({"replace": ("description:", "descripton:")}, "descripton"),
    ({"replace": ("replicates: 3", "replicates: 0")}, "replicates"),
    ({"replace": ("cases: cases", "cases: no-such-folder")}, "cases"),
    ({"replace": ("cases: cases", "cases: cases/*.nothing")}, "cases"),
    ({"replace": ("judge_model: scripted:judge.json", "judge_model: {spec: scripted:judge.json, timeout_s: 3}")},
     "judge_model.timeout_s"),
    ({"replace": ("judges: [ai-consilium]", "judges: [no-such-rubric]")}, "judges.0"),
    ({"replace": ("replicates: 3", "replicates: 3\nseeds: [1, 2]")}, "seeds"),
    ({"replace": ('{spec: "scripted:panel-b.json"}', '{spec: "scripted:panel-b.json", base_url: "http://x"}')},
     "models.1.base_url"),
    ({"replace": ("scripted:panel-a.json", "{schema_dialect: yaml, spec: scripted:panel-a.json}")},
     "models.0.schema_dialect"),
])
def test_a_bad_experiment_file_is_one_line_naming_file_and_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        edit: dict[str, tuple[str, str]], field: str) -> None:
    experiment = write_study(tmp_path)
    old, new = edit["replace"]
    text = experiment.read_text()
    assert old in text
    experiment.write_text(text.replace(old, new))
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(experiment)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"consilium: {experiment}: {field}") or f"{experiment}: {field}" in err, err
    assert not (tmp_path / "runs").exists()


def test_the_shipped_replicates_example_runs_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "replicates-scripted.yaml"
    monkeypatch.chdir(tmp_path)
    assert main(["cohort", "--experiment", str(example), "--limit", "1"]) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    rows = read_csv(run_dir / "arms.csv")
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    assert len(rows) == len(settings["models"]) * 2 * len(settings["seeds"]) and settings["judges"]
    assert all(r["status"] == "completed" for r in rows)


def test_the_shipped_experiments_still_load() -> None:
    from consilium.cohort.experiment import load_experiment

    folder = Path(__file__).resolve().parents[2] / "configs" / "experiments"
    for path in sorted(folder.glob("*.yaml")):
        assert load_experiment(path).protocols
