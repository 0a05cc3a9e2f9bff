"""Bad mapping files and tables for ``cases import table`` (tests/cli/test_bad_inputs.py merges ``CORPUS``).

Each stops the import before anything is written, with one line naming the mapping or data file and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Builder = Callable[[Path], tuple[list[str], str]]

GOOD_MAPPING = "fields:\n  id: N\n  question: Q\n  presentation: P\n"
GOOD_ROWS = "N,Q,P\n1,What is it?,A cough.\n"


def _file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _run(mapping: str, table: str = GOOD_ROWS, table_name: str = "t.csv") -> Builder:
    def build(tmp: Path) -> tuple[list[str], str]:
        return (["cases", "import", "table", str(_file(tmp, table_name, table)), "--mapping",
                 str(_file(tmp, "map.yaml", mapping)), "--out", str(tmp / "imported")], "")
    return build


def _expect(builder: Builder, expected: str) -> Builder:
    return lambda tmp: (builder(tmp)[0], expected)


CORPUS: dict[str, Builder] = {
    "table mapping unknown key": _expect(_run(GOOD_MAPPING + "record: data\n"),
                                         "map.yaml: record: unknown key in a mapping file"),
    "table mapping unknown case field": _expect(_run(GOOD_MAPPING + "  reference.diagnoses: D\n"),
                                                "map.yaml: fields: 'reference.diagnoses': reference has no field"),
    "table mapping path below a value": _expect(_run(GOOD_MAPPING + "  title.text: T\n"),
                                                "'title.text': title is a single value"),
    "table mapping without id": _expect(_run("fields:\n  question: Q\n  presentation: P\n"),
                                        "map.yaml: fields: id is required"),
    "table mapping without question": _expect(_run("fields:\n  id: N\n  presentation: P\n"),
                                              "no source for the required case field 'question'"),
    "table mapping unknown decode": _expect(_run(GOOD_MAPPING + "  sections: {from: S, decode: yaml}\n"),
                                            "map.yaml: fields.sections.decode: Input should be 'json'"),
    "table mapping source without from": _expect(_run(GOOD_MAPPING + "  sections: {decode: json}\n"),
                                                 "map.yaml: fields.sections.from: Field required"),
    "table mapping unknown source key": _expect(_run(GOOD_MAPPING + "  title: {form: T}\n"),
                                                "map.yaml: fields.title.form: unknown key"),
    "table mapping unknown format": _expect(_run("format: xlsx\n" + GOOD_MAPPING),
                                            "map.yaml: format: Input should be 'json', 'jsonl' or 'csv'"),
    "table mapping not yaml": _expect(_run("fields: [unclosed\n"), "map.yaml: YAML syntax error"),
    "table mapping empty": _expect(_run(""), "map.yaml: the mapping file is empty"),
    "table mapping in fields and values": _expect(_run(GOOD_MAPPING + "values:\n  question: Why?\n"),
                                                  "'question' is in both fields and values"),
    "table missing mapping file": lambda t: (["cases", "import", "table", str(_file(t, "t.csv", GOOD_ROWS)),
                                              "--mapping", str(t / "none.yaml"), "--out", str(t / "imported")],
                                             "none.yaml: mapping file not found"),
    "table unknown suffix": _expect(_run(GOOD_MAPPING, table_name="t.xlsx"), "t.xlsx: cannot tell the table format"),
    "table json object without records": _expect(_run(GOOD_MAPPING, '{"data": []}', "t.json"),
                                                 "t.json: the top level must be a list of records, not a dict"),
    "table json records key missing": _expect(_run("records: cases\n" + GOOD_MAPPING, '{"data": []}', "t.json"),
                                              "t.json: cases: no such key"),
    "table records key on csv": _expect(_run("records: cases\n" + GOOD_MAPPING),
                                        "t.csv: the mapping's records key applies to JSON files"),
    "table csv repeated column": _expect(_run(GOOD_MAPPING, "N,Q,Q\n1,a,b\n"), "t.csv: line 1: column 'Q' appears"),
    "table with no records": _expect(_run(GOOD_MAPPING, "N,Q,P\n"), "t.csv: no records found"),
}
