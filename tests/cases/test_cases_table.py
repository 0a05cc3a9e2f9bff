"""``cases import table``: a researcher's own JSON, JSONL or CSV table imported as case files by a mapping."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from consilium.cases import load_case
from consilium.cases.table_import import import_table
from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
MAPPINGS = ROOT / "examples" / "mappings"
SHIPPED = [("medqa-jsonl.yaml", "medqa-sample.jsonl"), ("nejm-csv.yaml", "nejm-sample.csv")]

MAPPING = """\
fields:
  id: {from: Number, prefix: t-}
  presentation: Initial Presentation
  sections: {from: Sections JSON, decode: json}
  reference.diagnosis: Final Name
  metadata.year: Year
values:
  question: What is the diagnosis?
"""

RECORDS: list[dict[str, object]] = [
    {"Number": 1, "Initial Presentation": "A 50-year-old with chest pain.",
     "Sections JSON": json.dumps({"exam": "Diaphoretic", "labs": "Troponin raised"}), "Final Name": "NSTEMI",
     "Year": 2020},
    {"Number": 2, "Initial Presentation": "", "Sections JSON": "{}", "Final Name": "Unknown", "Year": 2021},
    {"Number": 3, "Initial Presentation": "A 30-year-old with a rash.", "Sections JSON": '{"exam": "Target lesions"',
     "Final Name": "Erythema multiforme", "Year": 2022},
    {"Number": 4, "Initial Presentation": "A 70-year-old with confusion.", "Sections JSON": "",
     "Final Name": "Hyponatraemia", "Year": 2023},
]


def write_mapping(tmp: Path, text: str = MAPPING, name: str = "map.yaml") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def write_table(tmp: Path, kind: str) -> Path:
    if kind == "csv":
        path = tmp / "cases.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(RECORDS[0]))
            writer.writeheader()
            writer.writerows(RECORDS)
    elif kind == "jsonl":
        path = tmp / "cases.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    elif kind == "json":
        path = tmp / "cases.json"
        path.write_text(json.dumps(RECORDS), encoding="utf-8")
    else:  # a list under a key
        path = tmp / "wrapped.json"
        path.write_text(json.dumps({"meta": {"n": 4}, "data": {"cases": RECORDS}}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("mapping", "sample"), SHIPPED)
def test_shipped_mappings_import_their_samples(mapping: str, sample: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(MAPPINGS / sample), "--mapping", str(MAPPINGS / mapping),
                 "--out", str(out)]) == 0
    assert "wrote 3 cases" in capsys.readouterr().out
    written = sorted(out.iterdir())
    assert len(written) == 3
    assert main(["cases", "validate", str(out)]) == 0
    for path in written:
        case = load_case(path)
        assert case.reference is not None and case.reference.diagnosis
        assert case.reference.diagnosis not in case.render()  # the answer stays judge-only
        assert case.metadata["source_file"] == sample
        assert path.name == f"{case.id}.json"


def test_nejm_sample_decodes_sections(tmp_path: Path) -> None:
    result = import_table(MAPPINGS / "nejm-sample.csv", MAPPINGS / "nejm-csv.yaml", tmp_path, fmt="yaml")
    case = load_case(tmp_path / "nejm-3.yaml")
    assert [p.name for p in result.written] == ["nejm-1.yaml", "nejm-2.yaml", "nejm-3.yaml"]
    assert case.sections.imaging == "Pelvic radiograph: bilateral sacroiliitis"
    assert case.metadata["year"] == "2020"


@pytest.mark.parametrize("kind", ["csv", "json", "json under a key", "jsonl"])
def test_failed_records_are_reported_and_the_rest_written(kind: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    table = write_table(tmp_path, kind)
    text = MAPPING if kind != "json under a key" else "records: data.cases\n" + MAPPING
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(table), "--mapping", str(write_mapping(tmp_path, text)),
                 "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    line = {"csv": (" (line 3, id t-2)", " (line 4, id t-3)"), "jsonl": (" (line 2, id t-2)", " (line 3, id t-3)")}
    where = line.get(kind, (" (id t-2)", " (id t-3)"))
    assert lines == [
        f"{table}: record 2{where[0]}: presentation: required, but 'Initial Presentation' is missing or empty "
        "in this record",
        f"{table}: record 3{where[1]}: sections: 'Sections JSON' is not valid JSON (line 1, column 26: "
        "Expecting ',' delimiter)",
    ]
    assert "wrote 2 cases" in captured.out and "2 records failed" in captured.out
    assert sorted(p.name for p in out.iterdir()) == ["t-1.json", "t-4.json"]
    first = load_case(out / "t-1.json")
    assert first.sections.labs == "Troponin raised"
    assert first.reference is not None and first.reference.diagnosis == "NSTEMI"
    assert first.metadata["source_record"] == 1
    assert main(["cases", "validate", str(out)]) == 0


def test_all_good_records_exit_0(tmp_path: Path) -> None:
    table = tmp_path / "ok.jsonl"
    table.write_text(json.dumps(RECORDS[0]) + "\n\n" + json.dumps(RECORDS[3]) + "\n", encoding="utf-8")
    assert main(["cases", "import", "table", str(table), "--mapping", str(write_mapping(tmp_path)),
                 "--out", str(tmp_path / "out")]) == 0
    assert load_case(tmp_path / "out" / "t-1.json").metadata["year"] == 2020  # a JSON number stays one


def test_bad_lines_and_rows_fail_alone(tmp_path: Path) -> None:
    jsonl = tmp_path / "mixed.jsonl"
    jsonl.write_text(json.dumps(RECORDS[0]) + "\n{oops\n[1, 2]\n" + json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    result = import_table(jsonl, write_mapping(tmp_path), tmp_path / "out")
    assert [p.name for p in result.written] == ["t-1.json"]
    assert [str(p).split(": ", 1)[1] for p in result.problems] == [
        "record 2 (line 2): (record): not valid JSON (column 2: Expecting property name enclosed in double quotes)",
        "record 3 (line 3): (record): a record must be an object of fields, not a list",
        "record 4 (line 4, id t-1): id: 't-1' is also the id of record 1",
    ]


def test_a_value_the_case_model_refuses_names_the_field(tmp_path: Path) -> None:
    table = tmp_path / "bad.csv"
    table.write_text('Number,Initial Presentation,Sections JSON,Final Name,Year\n'
                     '1,A cough.,"{""histroy"": ""x""}",Asthma,2020\n'
                     'a b,A cough.,,Asthma,2020\n', encoding="utf-8")
    result = import_table(table, write_mapping(tmp_path), tmp_path / "out")
    assert result.written == []
    assert [(p.field, p.reason.split(" (")[0].split(":")[0]) for p in result.problems] == [
        ("sections.histroy", "unknown field"),
        ("id", "'t-a b' is not a valid case id"),
    ]


def _line_of(text: str, start: str) -> int:
    """The 1-based line of ``text`` that starts (after its indent) with ``start``, found by hand."""
    return next(n for n, line in enumerate(text.splitlines(), start=1) if line.strip().startswith(start))


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_source_in_no_record_stops_the_import_naming_its_mapping_line_and_the_columns(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = write_table(tmp_path, kind)
    text = MAPPING.replace("reference.diagnosis: Final Name", "reference.diagnosis: Final name")
    mapping = write_mapping(tmp_path, text)
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(table), "--mapping", str(mapping), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    line = _line_of(text, "reference.diagnosis:")
    assert line == 5
    assert err == (f"consilium: error: {mapping}: line {line}: fields.reference.diagnosis: 'Final name' is in "
                   f"no record of {table.name} (columns: Number, Initial Presentation, Sections JSON, Final Name, "
                   "Year); nothing was written")
    assert not out.exists()


def test_a_source_some_records_lack_is_one_line_each_and_they_are_written_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [{"Number": n, "Initial Presentation": f"Patient {n}.", "Sections JSON": "{}", "Year": 2000 + n}
               for n in range(1, 6)]
    for record in (records[0], records[2], records[3]):
        record["Final Name"] = f"Diagnosis {record['Number']}"
    table = tmp_path / "partial.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(table), "--mapping", str(write_mapping(tmp_path)),
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"{table}: record {n} (line {n}, id t-{n}): reference.diagnosis: 'Final Name' is not in this record; "
        "written without it" for n in (2, 5)]
    assert captured.out.strip() == f"wrote 5 cases to {out}; 2 records lack a mapped source"
    diagnoses = {n: load_case(out / f"t-{n}.json").reference for n in range(1, 6)}
    assert {n: ref.diagnosis if ref else None for n, ref in diagnoses.items()} == {
        1: "Diagnosis 1", 2: None, 3: "Diagnosis 3", 4: "Diagnosis 4", 5: None}


NESTED_MAPPING = """\
fields:
  id: {from: case.id, prefix: n-}
  presentation: patient.story
  sections.history: patient.past.history
  sections.labs: patient.labs.1
  reference.diagnosis: outcome.dx.final
  metadata.site: Site.Name
values:
  question: What is the diagnosis?
"""


def test_nested_sources_reach_into_records_and_a_dotted_key_is_still_one_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        {"case.id": "a7", "Site.Name": "North", "patient": {"story": "A cough for a week.", "labs": ["Hb 12", "CRP 80"],
                                                         "past": {"history": "Smoker"}},
         "outcome": {"dx": {"final": "Pneumonia"}}},
        {"case.id": "b2", "Site.Name": "South", "patient": {"story": "Chest pain.", "labs": ["Trop 0.4"],
                                                         "past": {}},
         "outcome": {"dx": {"final": "NSTEMI"}}},
    ]
    table = tmp_path / "nested.json"
    table.write_text(json.dumps(records), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(table), "--mapping",
                 str(write_mapping(tmp_path, NESTED_MAPPING)), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"{table}: record 2 (id n-b2): sections.history: 'patient.past.history' is not in this record; written "
        "without it",
        f"{table}: record 2 (id n-b2): sections.labs: 'patient.labs.1' is not in this record; written without it"]
    first, second = load_case(out / "n-a7.json"), load_case(out / "n-b2.json")
    assert (first.presentation, first.sections.history, first.sections.labs) == ("A cough for a week.", "Smoker",
                                                                                "CRP 80")
    assert first.reference is not None and first.reference.diagnosis == "Pneumonia"
    assert second.reference is not None and second.reference.diagnosis == "NSTEMI"
    assert (first.metadata["site"], second.metadata["site"]) == ("North", "South")
    assert (second.sections.history, second.sections.labs) == (None, None)
    # A nested path misspelt below an existing key names the keys found there.
    text = NESTED_MAPPING.replace("outcome.dx.final", "outcome.dx.finale")
    misspelt = write_mapping(tmp_path, text, "bad.yaml")
    assert main(["cases", "import", "table", str(table), "--mapping", str(misspelt),
                 "--out", str(tmp_path / "out2")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"consilium: error: {misspelt}: line {_line_of(text, 'reference.diagnosis')}: fields.reference.diagnosis: "
        "'outcome.dx.finale' is in no record of nested.json "
        "(keys under outcome.dx: final); nothing was written")


JSON_CELL_MAPPING = """\
fields:
  id: N
  presentation: P
  sections.history: {from: Case JSON, decode: json, select: History}
  sections.exam: {from: Case JSON, decode: json, select: Exam.findings}
  reference.diagnosis: {from: Case JSON, decode: json, select: Answer}
values:
  question: What is it?
"""


def test_parts_of_a_json_cell_are_mapped_into_sections(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells = [{"History": "Two days of fever", "Exam": {"findings": "Neck stiffness"}, "Answer": "Meningitis"},
             {"History": "A fall", "Exam": {"findings": "Shortened, rotated leg"}, "Answer": "Hip fracture"},
             {"History": "Wheeze", "Answer": "Asthma"}]
    table = tmp_path / "cells.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["N", "P", "Case JSON"])
        writer.writerows([[f"c{n}", f"Patient {n}.", json.dumps(cell)] for n, cell in enumerate(cells, start=1)])
    out = tmp_path / "out"
    assert main(["cases", "import", "table", str(table), "--mapping",
                 str(write_mapping(tmp_path, JSON_CELL_MAPPING)), "--out", str(out)]) == 0
    assert capsys.readouterr().err.strip() == (
        f"{table}: record 3 (line 4, id c3): sections.exam: 'Case JSON' (decoded, at Exam.findings) is not in this "
        "record; written without it")
    got = {n: load_case(out / f"c{n}.json") for n in (1, 2, 3)}
    assert [(c.sections.history, c.sections.exam, c.reference.diagnosis if c.reference else None)
            for c in got.values()] == [(cell["History"], cell.get("Exam", {}).get("findings"), cell["Answer"])
                                       for cell in cells]
    # A key no decoded cell has is refused at its mapping line, naming the keys the cells decode to.
    bad = write_mapping(tmp_path, JSON_CELL_MAPPING.replace("select: History", "select: history"), "bad.yaml")
    assert main(["cases", "import", "table", str(table), "--mapping", str(bad), "--out", str(tmp_path / "o2")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"consilium: error: {bad}: line 4: fields.sections.history: 'Case JSON' (decoded, at history) is in no "
        "record of cells.csv "
        "('Case JSON' decodes to keys: History, Exam, Answer); nothing was written")


def test_a_json_cell_that_is_not_an_object_of_sections_is_one_plain_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t.csv"
    table.write_text('Number,Initial Presentation,Sections JSON,Final Name,Year\n'
                     '1,A cough.,"[""history: smoker""]",Asthma,2020\n'
                     '2,A rash.,"""exam: target lesions""",Erythema multiforme,2021\n', encoding="utf-8")
    assert main(["cases", "import", "table", str(table), "--mapping", str(write_mapping(tmp_path)),
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"{table}: record 1 (line 2, id t-1): sections: must be a mapping of fields, not a list",
        f"{table}: record 2 (line 3, id t-2): sections: must be a mapping of fields, not a string"]
    assert "ClinicalSections" not in err


def test_reimporting_into_a_folder_with_the_same_cases_is_refused_unless_forced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "ok.jsonl"
    table.write_text(json.dumps(RECORDS[0]) + "\n" + json.dumps(RECORDS[3]) + "\n", encoding="utf-8")
    argv = ["cases", "import", "table", str(table), "--mapping", str(write_mapping(tmp_path)),
            "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    (tmp_path / "out" / "t-4.json").write_text("edited by hand", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"consilium: error: {tmp_path / 'out'}: already holds t-1.json and 1 more case file of the ids being "
        "imported; nothing was written (import into another folder, or pass --force to overwrite them)")
    assert (tmp_path / "out" / "t-4.json").read_text(encoding="utf-8") == "edited by hand"
    assert main([*argv, "--force"]) == 0
    assert load_case(tmp_path / "out" / "t-4.json").reference is not None
    # The same case in the other format would sit in the folder twice: refused even when forced.
    assert main([*argv, "--format", "yaml", "--force"]) == 2
    assert "already holds t-1.json, case 't-1' in another file" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["t-1.json", "t-4.json"]


def test_a_tumor_board_mapping_needs_no_question_and_a_gzipped_table_reads(tmp_path: Path) -> None:
    """A board meets on the case: a mapping that makes tumor-board cases needs no question source; and a
    table shipped as .jsonl.gz reads like the plain file."""
    import gzip

    rows = [r for r in RECORDS if r["Initial Presentation"]][:2]
    table = tmp_path / "boards.jsonl.gz"
    table.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    mapping = write_mapping(tmp_path, "fields:\n  id: {from: Number, prefix: b-}\n"
                                      "  presentation: Initial Presentation\nvalues:\n  kind: tumor_board\n")
    result = import_table(table, mapping, tmp_path / "out", fmt="yaml")
    assert not result.problems
    cases = [load_case(p) for p in sorted(result.written)]
    assert [(c.id, c.kind, c.question) for c in cases] == [("b-1", "tumor_board", None), ("b-3", "tumor_board", None)]
