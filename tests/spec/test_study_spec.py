"""The study spec (consilium/spec/study.py): one typed description of a cohort study, built alike from the
command line's flags, an experiment file and the API's keywords, checked once, stored in the manifest with its
hash, and the one thing a resume compares (docs/cohorts.md, "The study spec")."""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import consilium
from consilium.cli import build_parser, main
from consilium.cli.cohort_study import SOURCES, study_from_args
from consilium.cohort.study_sources import study_from_experiment
from consilium.errors import UserError
from consilium.spec.manifest import load_manifest
from consilium.spec.study import MAY_DIFFER, StudySpec, option_of, study_of

PANEL = {"model": "spec-panel", "rules": [
    {"stage": "role_assignment", "json": {"primary": {"label": "Internist", "justification": "x"}, "supporting": [
        {"label": "Neurologist", "justification": "y"}, {"label": "Radiologist", "justification": "z"}]}},
    {"stage": "opinion", "response": "Opinion of {role}."},
    {"stage": "synthesis", "response": "Report: A."},
    {"stage": "vote", "json": {"vote": "accept", "reason": "ok", "requested_change": None}},
]}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two cases, two scripted panels and an experiment file naming a varied study."""
    root = tmp_path_factory.mktemp("study").resolve()
    (root / "cases").mkdir()
    for n, diagnosis in ((1, "Pneumonia"), (2, "Myocarditis")):
        (root / "cases" / f"s{n}.json").write_text(json.dumps({
            "id": f"s{n}", "title": f"Case {n}", "kind": "diagnostic", "question": "What is the diagnosis?",
            "presentation": f"Patient {n}: fever.", "reference": {"diagnosis": diagnosis}}))
    for name in ("a", "b"):
        (root / f"{name}.json").write_text(json.dumps({**PANEL, "model": f"spec-panel-{name}"}))
    (root / "study.yaml").write_text(yaml.safe_dump({
        "cases": "cases", "protocol": ["consilium", "board"], "formats": ["structured"], "modes": ["single"],
        "models": ["scripted:a.json", "scripted:b.json"], "judges": ["ai-consilium", "nmb-diagnosis-match"],
        "judge_model": ["scripted:a.json", "scripted:b.json"],
        "run": {"seed": 7, "temperature": 0.25, "max_rounds": 2, "min_roles": 2}}))
    return root


def _flags(root: Path, *more: str) -> StudySpec:
    return study_from_args(build_parser().parse_args([
        "cohort", "--cases", str(root / "cases"), "--protocol", "consilium,board", "--formats", "structured",
        "--modes", "single", "--model", f"scripted:{root / 'a.json'}", "--extra-model", f"scripted:{root / 'b.json'}",
        "--judge", "ai-consilium", "--judge", "nmb-diagnosis-match", "--judge-model", f"scripted:{root / 'a.json'}",
        "--judge-model", f"scripted:{root / 'b.json'}", "--seed", "7", "--temperature", "0.25", "--max-rounds", "2",
        *more]))


def test_the_same_study_from_flags_an_experiment_file_and_keywords_is_one_spec(study: Path) -> None:
    from consilium.api.cohorts import study_keywords

    from_flags = _flags(study)
    from_file, _ = study_from_experiment(study / "study.yaml")
    from_keywords = study_keywords(study / "cases", {
        "protocols": ["consilium", "board"], "formats": "structured", "modes": ["single"],
        "models": [f"scripted:{study / 'a.json'}", f"scripted:{study / 'b.json'}"],
        "judges": ["ai-consilium", "nmb-diagnosis-match"],
        "judge_model": [f"scripted:{study / 'a.json'}", f"scripted:{study / 'b.json'}"],
        "seed": 7, "temperature": 0.25, "max_rounds": 2})
    # The file's min_roles has no field of its own: it stays in run, the only difference.
    assert from_file.run == {"min_roles": 2}
    from_file = from_file.model_copy(update={"run": {}})
    expected = {"cases": study / "cases", "protocols": ["consilium", "board"], "formats": ["structured"],
                "modes": ["single"], "models": [f"scripted:{study}/a.json", f"scripted:{study}/b.json"],
                "judges": ["ai-consilium", "nmb-diagnosis-match"],
                "judge_model": [f"scripted:{study}/a.json", f"scripted:{study}/b.json"],
                "seed": 7, "temperature": 0.25, "max_rounds": 2}
    for spec in (from_flags, from_file, from_keywords):
        assert {name: getattr(spec, name) for name in expected} == expected
        assert spec.limit is None and spec.concurrency is None and spec.scope is None
    assert from_flags == from_file == from_keywords
    assert from_flags.digest() == from_file.digest() == from_keywords.digest()
    # What a resume may change is not the study: another concurrency or out is the same hash, another seed not.
    assert from_flags.model_copy(update={"concurrency": 3, "out": study}).digest() == from_flags.digest()
    assert from_flags.model_copy(update={"seed": 8}).digest() != from_flags.digest()


def test_a_jury_names_each_judge_once_whichever_way_it_is_given(study: Path) -> None:
    twice = f"scripted:{study / 'a.json'}"
    with pytest.raises(UserError, match=r"^--judge-model: .*a\.json given twice \(each judge of a jury once\)$"):
        study_from_args(build_parser().parse_args(["cohort", "--judge-model", twice, "--judge-model", twice]))
    with pytest.raises(UserError, match=r"^judge_model: .*a\.json given twice"):
        study_of({"judge_model": [twice, "scripted:other.json", twice]})
    path = study / "twice.yaml"
    path.write_text(yaml.safe_dump({"judge_model": ["scripted:b.json", "scripted:a.json", "scripted:a.json"]}))
    with pytest.raises(UserError, match=rf"^{path}: judge_model\.2: .*a\.json given twice"):
        study_from_experiment(path)


def test_every_option_is_derived_from_the_spec(study: Path) -> None:
    """A new option is a new field of the spec: the command line's flags, the API's keywords and the experiment
    file's keys are each the spec's fields (a flag or key with no field would be an option the spec misses)."""
    fields = set(StudySpec.model_fields)
    parser = build_parser()
    cohort = next(a for a in parser._subparsers._group_actions[0].choices.values()  # type: ignore[union-attr]
                  if a.prog.endswith(" cohort"))
    dests = {action.dest for action in cohort._actions if action.dest not in ("help", "func")}
    dests -= {"model_default", "model_flag", "cohort_command"} | {a.dest for a in parser._actions}  # every command's
    flags = {option_of(name).flag.removeprefix("--").replace("-", "_") for name in fields  # type: ignore[union-attr]
             if option_of(name).flag is not None}
    assert dests - set(SOURCES) == flags
    # The API's keywords: cases, the sources, then every field (the signature is made from the spec).
    for function in (consilium.run_cohort, consilium.arun_cohort, consilium.estimate_cohort):
        keywords = set(inspect.signature(function).parameters)
        assert fields <= keywords and keywords - fields <= {"experiment", "resume", "like"}
    # The experiment file's keys: each names the field it sets (description says what the file is).
    from consilium.cohort.experiment import Experiment

    keys = {option_of(name).experiment.split(".")[0]: name for name in fields  # type: ignore[union-attr]
            if option_of(name).experiment is not None}
    assert set(Experiment.model_fields) - {"description"} == set(keys)
    assert set(MAY_DIFFER) == {"concurrency", "out", "ray"}


def _cohort_parser() -> Any:
    parser = build_parser()
    return next(a for a in parser._subparsers._group_actions[0].choices.values()  # type: ignore[union-attr]
                if a.prog.endswith(" cohort"))


def test_a_cohort_flag_of_its_own_is_made_from_its_field_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """A field that declares its flag with help is the flag (its help, type, metavar, action): no line besides."""
    cohort = _cohort_parser()
    by_flag = {flag: action for action in cohort._actions for flag in action.option_strings}
    own = {option_of(name).flag: option_of(name).help for name in StudySpec.model_fields if option_of(name).help}
    assert len(own) == 18 and {flag: by_flag[flag].help for flag in own} == own  # type: ignore[index]
    given = cohort.parse_args(["--sample", "2", "--ray", "--shard", "1/2", "--judge", "a", "--judge", "b",
                               "--allow-missing-reference", "--wall-limit", "1.5", "--protocol", "single",
                               "--format", "free-form", "--temperature", "0.25", "--config", "c.yaml"])
    assert (given.sample, given.ray, str(given.shard), given.judge, given.judge_model) == (2, "", "1/2", ["a", "b"],
                                                                                             None)
    assert (given.allow_missing_reference, given.wall_limit, given.protocol, given.formats) == (
        True, 1.5, ["single"], "free-form")
    assert (given.temperature, given.config, given.seed) == (0.25, Path("c.yaml"), None)
    bare = cohort.parse_args([])
    assert (bare.judge, bare.judge_model, bare.allow_missing_reference, bare.ray, bare.out) == ([], None, False,
                                                                                                None, None)
    assert [by_flag["--sample"].metavar, by_flag["--shard"].metavar, by_flag["--ray"].metavar] == ["N", "I/N",
                                                                                                   "ADDRESS"]
    for argv, said in ((["--sample", "0"], "argument --sample: expected a positive integer, got '0'"),
                       (["--wall-limit", "inf"], "argument --wall-limit: expected a positive number, got 'inf'"),
                       (["--temperature", "nan"], "argument --temperature: expected a number, got 'nan'"),
                       (["--shard", "3/2"], "argument --shard: '3/2': I/N needs 1 ≤ I ≤ N")):
        assert main(["cohort", *argv]) == 2
        assert said in capsys.readouterr().err


@pytest.fixture(scope="module")
def cohort(study: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished cohort of two cases and one panel, with its spec in the manifest."""
    out = tmp_path_factory.mktemp("runs")
    assert main(["cohort", "--cases", str(study / "cases"), "--model", f"scripted:{study / 'a.json'}",
                 "--formats", "free-form", "--seed", "3", "--concurrency", "2", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    return run_dir


def test_the_manifest_stores_the_spec_with_its_hash(cohort: Path, study: Path) -> None:
    manifest = load_manifest(cohort / "manifest.json")
    assert manifest.schema_version == "1.4" and manifest.spec is not None
    assert manifest.spec.seed == 3 and manifest.spec.concurrency == 2 and manifest.spec.formats == ["free-form"]
    assert manifest.spec.models == [f"scripted:{study}/a.json"]
    assert manifest.spec_hash == manifest.spec.digest()
    edited = json.loads((cohort / "manifest.json").read_text())
    edited["spec"]["seed"] = 4
    (cohort.parent / "edited.json").write_text(json.dumps(edited))
    with pytest.raises(UserError, match="spec_hash: does not match the spec"):
        load_manifest(cohort.parent / "edited.json")


def test_a_resume_with_a_changed_study_is_refused_naming_its_flag(cohort: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    for flags, named in ((["--temperature", "0.5"], "--temperature: 0.5 differs from the resumed cohort's 0.0"),
                         (["--seed", "4"], "--seed: 4 differs from the resumed cohort's 3"),
                         (["--max-rounds", "2"], "--max-rounds: 2 differs from the resumed cohort's 5")):
        assert main(["cohort", "--resume", str(cohort), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and named in err, err


def test_a_resume_may_change_concurrency_and_out(cohort: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / cohort.name
    shutil.copytree(cohort, copy)
    capsys.readouterr()
    assert main(["cohort", "--resume", str(copy), "--concurrency", "1", "--out", str(tmp_path / "elsewhere"),
                 "--seed", "3"]) == 0
    assert "2 arms (2 completed, 0 failed, 2 resumed)" in capsys.readouterr().out
    manifest = load_manifest(copy / "manifest.json")
    assert manifest.settings.concurrency == 1 and manifest.spec is not None and manifest.spec.concurrency == 2


def test_an_old_manifest_upgrades_with_no_spec_and_still_resumes(cohort: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / cohort.name
    shutil.copytree(cohort, copy)
    data: dict[str, Any] = json.loads((copy / "manifest.json").read_text())
    data = {k: v for k, v in data.items() if k not in ("spec", "spec_hash")} | {"schema_version": "1.3"}
    (copy / "manifest.json").write_text(json.dumps(data))
    manifest = load_manifest(copy / "manifest.json")
    assert manifest.schema_version == "1.4" and manifest.spec is None and manifest.spec_hash is None
    capsys.readouterr()
    assert main(["cohort", "--resume", str(copy), "--seed", "4"]) == 2  # held to the settings it ran with
    assert "--seed: 4 differs from the resumed cohort's 3" in capsys.readouterr().err
    assert main(["cohort", "--resume", str(copy)]) == 0
