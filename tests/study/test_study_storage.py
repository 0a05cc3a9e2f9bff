"""The study database: versioned migrations (an older database migrated on opening, a newer one refused) and
PostgreSQL, a real local server started here (skipped, with the reason, where it cannot start)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from study_fixture import rows

from consilium.cli import main
from consilium.errors import UserError
from consilium.study import Study, create_study
from consilium.study.schema import migrate, migrations


def test_an_older_database_is_migrated_when_opened(fixture_cohort: Path, tmp_path: Path) -> None:
    db = tmp_path / "study.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=["ana"], sample=3, database=str(db))
    latest = len(migrations())
    assert latest >= 2 and rows(db, "SELECT version FROM schema_version ORDER BY version") == [
        (v,) for v in range(1, latest + 1)]
    with sqlite3.connect(db) as conn:  # back to version 1: made before the exports table and the stored rubric
        conn.execute("DROP TABLE exports")
        conn.execute("ALTER TABLE studies DROP COLUMN rubric_definition")
        conn.execute("DELETE FROM schema_version WHERE version > 1")
    study = Study.open(fixture_cohort, str(db))
    assert rows(db, "SELECT MAX(version) FROM schema_version") == [(latest,)]
    # Its rubric was not stored whole: it is the shipped rubric of the stored name.
    assert rows(db, "SELECT rubric, rubric_definition FROM studies") == [("ai-consilium", None)]
    assert study.rubric.name == "ai-consilium"
    item = study.queue("ana")[0].item
    study.answer("ana", item, study.item("ana", item).criteria[0].id, score=2)
    assert study.export(tmp_path / "r.csv").is_file()
    assert rows(db, "SELECT COUNT(*) FROM exports") == [(1,)]


def test_a_newer_database_is_refused_and_left_alone(
        fixture_cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "study.sqlite3"
    create_study(fixture_cohort, rubric="ai-consilium", raters=["ana"], sample=3, database=str(db))
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version (version, name, applied_at) VALUES (99, '0099_future.sql', 'x')")
    before = rows(db, "SELECT * FROM studies"), rows(db, "SELECT version FROM schema_version")
    with pytest.raises(UserError, match=r"schema version 99, newer than this consilium knows \(\d+\); upgrade"):
        Study.open(fixture_cohort, str(db))
    assert main(["study", "status", str(fixture_cohort), "--database", str(db)]) == 2
    assert "newer than this consilium knows" in capsys.readouterr().err
    assert (rows(db, "SELECT * FROM studies"), rows(db, "SELECT version FROM schema_version")) == before
    with pytest.raises(UserError, match="newer than this consilium knows"):
        migrate(__import__("consilium.study.database", fromlist=["Database"]).Database("sqlite", str(db)))


def test_a_study_in_the_run_folder_by_default(fixture_cohort: Path, tmp_path: Path) -> None:
    run = tmp_path / fixture_cohort.name
    shutil.copytree(fixture_cohort, run)
    made = create_study(run, rubric="ai-consilium", raters=["ana", "ben"], sample=4)
    assert made.database == str(run / "study.sqlite3") and (run / "study.sqlite3").is_file()
    assert Study.open(run).id == made.study_id
    with pytest.raises(UserError, match=r"no rating study \(no .*study.sqlite3; run `consilium study create` first\)"):
        Study.open(fixture_cohort)
    assert not (fixture_cohort / "study.sqlite3").exists()


# ---- PostgreSQL ----------------------------------------------------------------------------------------------

PASSWORD = "pg-Secret-9f31c2"
BIN = Path("/usr/local/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 and a free port, its data in a temporary folder; the URL with a
    password (scram-sha-256). As root, the server runs as the ``postgres`` user (it refuses root)."""
    tools = [BIN / name for name in ("initdb", "pg_ctl", "postgres")]
    if not all(t.exists() for t in tools):
        pytest.skip(f"PostgreSQL binaries not found in {BIN} (initdb, pg_ctl, postgres)")
    pytest.importorskip("psycopg", reason="psycopg (the postgres extra) is not installed")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="consilium-pg-"))
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: PostgreSQL will not start as root")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    (folder / "pw").write_text(PASSWORD + "\n", encoding="utf-8")
    os.chmod(folder / "pw", 0o644)
    port = _free_port()
    data = folder / "data"
    try:
        subprocess.run([*as_user, str(BIN / "initdb"), "-D", str(data), "-U", "consilium", "-A", "scram-sha-256",
                        f"--pwfile={folder / 'pw'}", "-E", "UTF8"], check=True, capture_output=True, timeout=120)
        subprocess.run([*as_user, str(BIN / "pg_ctl"), "-D", str(data), "-o", f"-h 127.0.0.1 -p {port} -k {folder}",
                        "-l", str(folder / "log"), "-w", "start"], check=True, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        log = (folder / "log").read_text(errors="replace")[-500:] if (folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL could not start here ({exc}; {log})")
    try:
        yield f"postgresql://consilium:{PASSWORD}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                       capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.localhost
def test_a_study_in_postgresql_creates_answers_and_exports(
        postgres: str, fixture_cohort: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["study", "create", str(fixture_cohort), "--rubric", "ai-consilium", "--raters", "ana,ben",
                 "--per-output", "2", "--sample", "5", "--database", postgres])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "5 outputs, 10 assignments" in printed.out and PASSWORD not in printed.out + printed.err
    study = Study.open(fixture_cohort, postgres)
    assert PASSWORD not in study.db.display and PASSWORD not in repr(study)

    def answer_all(rater: str, value: int) -> None:
        for entry in study.queue(rater):
            for criterion in study.item(rater, entry.item).criteria:
                study.answer(rater, entry.item, criterion.id, score=value)

    threads = [threading.Thread(target=answer_all, args=(r, v)) for r, v in (("ana", 1), ("ben", 2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    per_rater = {r: sum(len(study.item(r, e.item).criteria) for e in study.queue(r)) for r in ("ana", "ben")}
    assert per_rater["ana"] == per_rater["ben"]  # K = 2 of 2 raters: both rate every output
    answer_all("ana", 3)  # answering again replaces, never adds
    reopened = Study.open(fixture_cohort, postgres)
    assert [(p.rater, p.assigned, p.done) for p in reopened.progress()] == [("ana", 5, 5), ("ben", 5, 5)]
    live = reopened.agreement()
    assert (live.items, live.percent) == (per_rater["ana"], 0.0)  # every unit: ana 3, ben 2
    out = tmp_path / "ratings.csv"
    assert main(["study", "export", str(fixture_cohort), "--out", str(out), "--database", postgres]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 2 * per_rater["ana"]
    assert {line.split(",")[4] for line in lines[1:]} == {"3", "2"}
    assert main(["calibrate", "agreement", "--ratings", postgres, "--judgements", str(fixture_cohort),
                 "--rubric", "ai-consilium", "--bootstrap", "10", "--out", str(tmp_path / "cal")]) == 0
    printed = capsys.readouterr()
    assert f"{2 * per_rater['ana']} ratings, 2 raters" in printed.out and PASSWORD not in printed.out + printed.err
    assert rows_pg(postgres, "SELECT MAX(version) FROM schema_version") == [(len(migrations()),)]


@pytest.mark.localhost
def test_a_wrong_postgresql_password_is_one_line_without_it(
        postgres: str, fixture_cohort: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = postgres.replace(PASSWORD, "Wrong-Pass-77aa")
    assert main(["study", "status", str(fixture_cohort), "--database", wrong]) == 2
    err = capsys.readouterr().err
    assert "cannot connect" in err and "Wrong-Pass-77aa" not in err and len(err.strip().splitlines()) == 1


def rows_pg(url: str, sql: str) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
