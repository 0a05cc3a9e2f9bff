"""Case and settings files are parsed strictly, and one rule decides which files in a folder are cases.

Covered: YAML alias bombs and depth; NUL, lone surrogates, NaN/Infinity, duplicate keys, deep
JSON, a BOM; and ``cases validate`` and ``cohort`` seeing the same files. The refusals themselves,
through ``simulate --case``, are in the bad-input corpus (tests/support/corpus_cases.py).
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from pathlib import Path

import pytest
from support.corpus_cases import BAD_CASES, GOOD, GOOD_DATA, alias_bomb, case_file, with_metadata

from consilium.cases import case_files, load_case, read_agentclinic, validate_case_file
from consilium.cli import main
from consilium.cohort.cases import load_cohort
from consilium.datafiles import MAX_DEPTH, DataError, parse_data
from consilium.errors import UserError


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_cases_validate_reports_what_simulate_refuses(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file_name, content, expected = BAD_CASES[name]
    path = case_file(tmp_path, content, file_name)
    assert main(["cases", "validate", str(path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "1 file, 1 invalid"
    assert len(lines) == 2 and lines[0].startswith(f"{path}: ") and expected in lines[0], lines


def test_a_billion_laughs_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = case_file(tmp_path, with_metadata(alias_bomb(levels=10)))  # 9**10 values once expanded
    tracemalloc.start()
    started = time.perf_counter()
    try:
        [problem] = validate_case_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 2 and peak < 20_000_000
    assert problem.field == "" and "YAML aliases expand this file to more than 100,000 values" in problem.reason


def test_a_long_string_repeated_by_aliases_is_refused(tmp_path: Path) -> None:
    text = with_metadata('  a: &a "' + "x" * 20_000 + '"\n  b: [' + ", ".join(["*a"] * 600) + "]\n")
    [problem] = validate_case_file(case_file(tmp_path, text))
    assert "more than 10,000,000 characters" in problem.reason


def test_aliases_and_merge_keys_within_the_bounds_still_load(tmp_path: Path) -> None:
    extra = "  base: &base {site: Lyon, year: 2024}\n  copy: *base\n  local:\n    <<: *base\n    year: 2025\n"
    case = load_case(case_file(tmp_path, with_metadata(extra)))
    assert case.metadata["copy"] == {"site": "Lyon", "year": 2024}
    assert case.metadata["local"] == {"site": "Lyon", "year": 2025}


def test_a_duplicate_key_names_its_path_and_both_lines(tmp_path: Path) -> None:
    [problem] = validate_case_file(case_file(tmp_path, "id: x\nsections:\n  labs: a\n  exam: b\n  labs: c\n"))
    assert str(problem) == f"{tmp_path / 'case.yaml'}: sections.labs: duplicate key (set at lines 3 and 5)"
    [problem] = validate_case_file(case_file(tmp_path, '{"id": "x", "id": "y"}', "case.json"))
    assert problem.field == "id" and problem.reason.startswith("duplicate key")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_nesting_is_bounded_the_same_in_json_and_yaml(suffix: str) -> None:
    def nested(levels: int) -> str:
        return "[" * levels + "]" * levels

    assert parse_data(nested(MAX_DEPTH), json_format=suffix == ".json") is not None
    with pytest.raises(DataError, match=f"nested more than {MAX_DEPTH} levels deep"):
        parse_data(nested(MAX_DEPTH + 1), json_format=suffix == ".json")


def test_a_byte_order_mark_is_skipped_in_json_and_yaml_alike(tmp_path: Path) -> None:
    plain = load_case(case_file(tmp_path, json.dumps(GOOD_DATA), "plain.json"))
    assert load_case(case_file(tmp_path, "\ufeff" + json.dumps(GOOD_DATA), "bom.json")) == plain
    assert load_case(case_file(tmp_path, "\ufeff" + GOOD, "bom.yaml")) == load_case(case_file(tmp_path, GOOD))
    record = {"OSCE_Examination": {"Objective_for_Doctor": "Diagnose", "Correct_Diagnosis": "Flu",
                                   "Patient_Actor": {"History": "Cough"}}}
    [case] = read_agentclinic(case_file(tmp_path, "\ufeff" + json.dumps(record) + "\n", "a.jsonl"))
    assert case.reference is not None and case.reference.diagnosis == "Flu"


def test_a_surrogate_pair_escape_is_text_not_a_lone_surrogate(tmp_path: Path) -> None:
    data = {**GOOD_DATA, "title": "\U0001f600"}
    case = load_case(case_file(tmp_path, json.dumps(data), "case.json"))  # json.dumps writes "\ud83d\ude00"
    assert case.title == "\U0001f600"


def _case(case_id: str) -> str:
    return GOOD.replace("id: diagnostic-myocarditis", f"id: {case_id}")


def test_cases_validate_and_cohort_read_the_same_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cases"
    (folder / "more").mkdir(parents=True)
    (folder / ".git").mkdir()
    (folder / "CASE.YAML").write_text(_case("upper"))
    (folder / "b.Json").write_text(json.dumps({**GOOD_DATA, "id": "mixed"}))
    (folder / "more" / "c.yml").write_text(_case("nested"))
    # Not cases: hidden files and folders, an editor's lock link, backups, other suffixes.
    (folder / ".draft.yaml").write_text("not: a case")
    (folder / ".git" / "x.yaml").write_text("not: a case")
    os.symlink("user@host.1234", folder / ".#CASE.YAML")
    (folder / "CASE.YAML~").write_text("not: a case")
    (folder / "notes.txt").write_text("not a case")

    # Natural order: letters compare ignoring case (and digit runs as numbers), as a person reads the folder.
    assert [p.relative_to(folder).as_posix() for p in case_files(folder)] == ["b.Json", "CASE.YAML", "more/c.yml"]
    assert main(["cases", "validate", str(folder)]) == 0
    assert capsys.readouterr().out.splitlines() == ["3 files, 0 invalid"]
    assert sorted(case.id for case in load_cohort(folder)) == ["mixed", "nested", "upper"]


def test_a_broken_link_named_like_a_case_is_reported_not_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "a.yaml").write_text(GOOD)
    os.symlink(tmp_path / "gone.yaml", folder / "b.yaml")
    assert main(["cases", "validate", str(folder)]) == 2
    assert f"{folder / 'b.yaml'}: no such file" in capsys.readouterr().out
    with pytest.raises(UserError, match=r"b\.yaml: no such file"):
        load_cohort(folder)


def test_settings_files_use_the_same_strict_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An upper-case .JSON suffix is read as JSON too (where YAML would have taken NaN as the text "NaN").
    config = case_file(tmp_path, '{"spec": "scripted:a.yaml", "timeout_s": NaN}', "m.JSON")
    assert main(["models", "check", "--model-config", str(config)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"{config}: timeout_s: nan is not a number this file may hold (NaN and Infinity are refused)")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_integer_of_5000_digits_is_one_line_in_every_reader(
        suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    digits = "7" * 5000  # Python refuses to convert more than 4,300 decimal digits to an int
    text = (with_metadata(f"  count: {digits}\n") if suffix == ".yaml"
            else json.dumps({**GOOD_DATA, "metadata": {"count": 0}}).replace('"count": 0', f'"count": {digits}'))
    folder = tmp_path / "cases"
    folder.mkdir()
    path = case_file(folder, text, f"big{suffix}")
    expected = f"{path}: metadata.count: an integer of 5,000 digits; at most 4,300 are allowed"
    assert main(["cases", "validate", str(path)]) == 2
    assert capsys.readouterr().out.splitlines() == [expected, "1 file, 1 invalid"]
    for argv in (["simulate", "--case", str(path), "--model", "scripted:x.json", "--out", str(tmp_path / "o1")],
                 ["cohort", "--cases", str(folder), "--model", "scripted:x.json", "--out", str(tmp_path / "o2")]):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"consilium: error: {expected}"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "consilium.log.jsonl") == ["cases"]
    # Just under the limit is a number like any other.
    case_file(folder, text.replace(digits, "7" * 4300), f"big{suffix}")
    assert load_case(path).metadata["count"] == int("7" * 4300)


def test_only_decimal_integers_have_a_digit_limit_in_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML's binary, hex and octal literals convert at any length: their value, not their text, is held to
    4,300 decimal digits (2**5000 has 1,506 digits, 8**4000 3,613; 16**3600 and 8**4800 have 4,335)."""
    path = case_file(tmp_path, with_metadata(f"  bits: 0b{'1' * 5000}\n  octal: 0{'7' * 4000}\n"), "base2.yaml")
    metadata = load_case(path).metadata
    assert metadata["bits"] == 2**5000 - 1 and metadata["octal"] == 8**4000 - 1
    assert len(str(2**5000 - 1)) == 1506 and len(str(8**4000 - 1)) == 3613
    for name, literal in (("hex", f"0x{'f' * 3600}"), ("octal", f"0{'7' * 4800}")):
        path = case_file(tmp_path, with_metadata(f"  {name}: {literal}\n"), f"{name}.yaml")
        assert main(["cases", "validate", str(path)]) == 2
        assert capsys.readouterr().out.splitlines()[0] == (
            f"{path}: metadata.{name}: an integer of more than 4,300 digits; at most 4,300 are allowed")


def test_a_case_made_in_code_holds_its_metadata_to_the_case_file_rules() -> None:
    """A Case built in Python (the library's run(case) takes one) cannot carry what no case file may: an
    integer past 4,300 digits would fail hashing and writing the trace, deep inside a run."""
    from pydantic import ValidationError

    from consilium.cases import Case

    base = {"id": "made-in-code", "question": "What is it?", "presentation": "A cough."}
    big = 7 * 10**4300  # 4,301 digits, made without converting any text
    for metadata, reason in (({"scores": [1, big]}, "scores.1: an integer of more than 4,300 digits"),
                             ({"weight": float("nan")}, "weight: nan is not a number this file may hold")):
        with pytest.raises(ValidationError) as refused:
            Case.model_validate({**base, "metadata": metadata})
        assert refused.value.errors()[0]["loc"] == ("metadata",) and reason in str(refused.value)
    held = Case.model_validate({**base, "metadata": {"n": 10**4300 - 1}})
    assert len(held.content_hash()) == 16
