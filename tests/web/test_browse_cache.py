"""What the browse pages keep and read quickly: the summary page is kept between requests and made again when a
file of the cohort changes (a judgement made again moves its model's mean at the next request), and the index reads
judgements.csv's cells as the typed reader does (tests/web/browse_cohort.py's cohort, read in this process, no
server)."""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
from browse_cohort import WHOLE_CASE, build_browse_cohort
from support.isolation import isolated

from consilium.cohort.lock import RunLock
from consilium.fileio import write_text_atomic
from consilium.runfolder import RunFolder
from consilium.web.browse_summary import summary_body
from consilium.web.browse_table import _items, table_of

MODEL, FORMAT, CASE = "panel-a", "free-form", "mac-1"


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browse-cache")
    with isolated(tmp):
        return build_browse_cohort(tmp)


def _records(folder: RunFolder) -> list[Path]:
    """The judgement records of MODEL's FORMAT arms."""
    return [file for row in folder.arms() if (row.model, row.format, row.status) == (MODEL, FORMAT, "completed")
            for file, _ in folder.judgements_of(folder.trace_location(row.trace))]


def _expected(folder: RunFolder) -> str:
    """MODEL × FORMAT's rubric cell worked out from its records: the mean of the per-output items' scores."""
    items = [item for file in _records(folder) for item in json.loads(file.read_text())["items"]
             if item["criterion"] not in WHOLE_CASE]
    scores = [item["score"] for item in items if item["score"] is not None]
    return f"{statistics.fmean(scores):.2f} ({len(scores)} scored, {len(items) - len(scores)} not evaluable)"


def _row(body: str) -> str:
    [row] = re.findall(rf"<tr><td>{MODEL}</td><td>{FORMAT}</td>.*?</tr>", body)
    return str(row)


def test_the_summary_is_kept_until_a_judgement_record_changes_then_shows_its_new_score(
        cohort: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir)
    folder = RunFolder(run_dir)
    before = summary_body(0, run_dir)
    assert _expected(folder) in _row(before)
    assert summary_body(0, run_dir) is before  # nothing changed: the page kept, not made again

    # The judge made again on one arm (a record rewritten as the judge writes it): every score now 3.
    [record] = [f for f in _records(folder) if json.loads(f.read_text())["case_id"] == CASE]
    data = json.loads(record.read_text())
    for item in data["items"]:
        if item["score"] is not None:
            item["score"] = 3
    write_text_atomic(record, json.dumps(data, indent=2) + "\n")
    changed = _expected(folder)
    assert changed not in _row(before)

    after = summary_body(0, run_dir)
    assert after is not before and changed in _row(after)
    assert summary_body(0, run_dir) is after


def test_the_kept_summary_says_whether_a_running_cohort_s_process_is_still_there(
        cohort: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir, ignore=shutil.ignore_patterns(".lock"))
    folder = RunFolder(run_dir)
    manifest = json.loads(folder.manifest_path.read_text())
    write_text_atomic(folder.manifest_path, json.dumps({**manifest, "status": "running"}))
    assert "(status: aborted" in summary_body(0, run_dir)  # no process holds its lock: it was killed
    with RunLock(run_dir):  # a cohort resumed in it
        assert "(status: running)" in summary_body(0, run_dir)
    # Its process gone (killed: the lock let go, no file changed): the kept page is not shown.
    assert "(status: aborted" in summary_body(0, run_dir)


def test_the_index_reads_judgements_csv_as_the_typed_reader_does_and_leaves_it_a_hand_edited_cell(
        cohort: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / cohort.name
    shutil.copytree(cohort, run_dir)
    folder = RunFolder(run_dir)
    typed = folder.judgements()
    items = _items(folder.judgements_csv.read_text(encoding="utf-8"))
    assert items is not None and len(items) == len(typed) > 0
    assert [tuple(i) for i in items] == [(r.rubric, r.case_id, r.model, r.protocol, r.format, r.replicate,
                                          r.criterion, r.score, r.not_evaluable, r.whole_case) for r in typed]
    table = table_of(folder)
    assert table is not None and table.scores

    # A cell as a person may write it ("true", which the typed reader takes): that reader reads the table.
    with folder.judgements_csv.open(newline="") as file:
        rows = list(csv.DictReader(file))
    rows[0]["not_evaluable"] = rows[0]["not_evaluable"].lower()
    folder.write_judgements(rows, tuple(rows[0]))
    assert _items(folder.judgements_csv.read_text(encoding="utf-8")) is None
    again = table_of(folder)
    assert again is not None and again.scores == table.scores
    # A score that is no number: the table is not read (the records are), as before.
    rows[1]["score"] = "many"
    folder.write_judgements(rows, tuple(rows[0]))
    assert table_of(folder) is None
