"""``cases import table``: a researcher's own JSON, JSONL or CSV table imported as case files by a mapping."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from consilium.cases import load_case
from consilium.cases.table_import import import_table
from consilium.cli import main

ROOT = Path(__file__).resolve().parents[1]
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
