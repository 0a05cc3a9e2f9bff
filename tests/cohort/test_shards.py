"""``cohort --shard I/N`` and ``cohort merge``: shards of one cohort joined equal one local run
(docs/scale.md, "Shards and merge")."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main
from consilium.cohort.lock import RunLock
from consilium.cohort.shard import Shard, partition_of

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "examples" / "cases"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
#: What differs between two runs of the same arms: timing, and the run id a trace carries.
VOLATILE = {"wall_s", "run_id", "trace_run_id", "started_at", "latency_ms", "versions", "trace_sha256"}


def cohort(out: Path, *flags: str, cases: Path = CASES) -> Path:
    assert main(["cohort", "--cases", str(cases), "--model", PANEL, "--out", str(out), *flags]) == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def arms_csv(run_dir: Path) -> tuple[list[str], list[dict[str, str]]]:
    with (run_dir / "arms.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [{k: v for k, v in row.items() if k not in VOLATILE} for row in reader]
        return list(reader.fieldnames or []), rows


def steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def traces(run_dir: Path) -> dict[str, Any]:
    """Every trace's results, by its path relative to the run folder."""
    return {p.relative_to(run_dir).as_posix(): steady(json.loads(p.read_text()))
            for p in sorted((run_dir / "arms").rglob("*.trace.json"))}


def judgements(run_dir: Path) -> tuple[str, dict[str, Any]]:
    """judgements.csv as text (its rows in order) and every judgement file's results."""
    table = run_dir / "judgements.csv"
    return (table.read_text() if table.is_file() else "",
            {p.relative_to(run_dir).as_posix(): steady(json.loads(p.read_text()))
             for p in sorted((run_dir / "arms").rglob("*.judge.*.json"))})


def jsonl(run_dir: Path) -> dict[tuple[str, str, str], Any]:
    rows = [json.loads(line) for line in (run_dir / "arms.jsonl").read_text().splitlines()]
    return {(r["case_id"], r["model_spec"], r["format"]): steady(r) for r in rows}


def manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return data


def assert_same_run(left: Path, right: Path) -> None:
    assert arms_csv(left) == arms_csv(right)
    assert traces(left) == traces(right)
    assert judgements(left) == judgements(right)
    assert jsonl(left) == jsonl(right)
    a, b = manifest(left), manifest(right)
    assert (a["status"], a["counts"], a["traces"], a["layout"]) == (b["status"], b["counts"], b["traces"], b["layout"])
    for data in (a, b):  # where each run kept its response cache is not what it ran
        data["settings"]["model"].pop("cache_path")
    assert {k: v for k, v in a["settings"].items() if k != "shard"} == \
        {k: v for k, v in b["settings"].items() if k != "shard"}


def test_a_case_always_lands_in_the_same_shard(tmp_path: Path) -> None:
    ids = [p.stem for p in CASES.glob("*.yaml")]
    for count in (1, 2, 3, 7):
        homes = [[i for i in range(1, count + 1) if Shard(i, count).holds(case_id)] for case_id in ids]
        assert all(len(h) == 1 for h in homes)  # each case in exactly one shard
    # By the case id's hash, not its place: the first of four shards is the same from a folder of two cases.
    assert [partition_of(i, 2) for i in ids] == [int(__import__("hashlib").sha256(i.encode()).hexdigest()[:8], 16) % 2
                                               for i in ids]
    few = tmp_path / "few"
    few.mkdir()
    for name in sorted(CASES.glob("*.yaml"))[:2]:
        (few / name.name).write_text(name.read_text())
    shard = cohort(tmp_path / "s", "--shard", "1/2", cases=few)
    held = {row["case_id"] for row in arms_csv(shard)[1]}
    assert held == {p.stem for p in few.glob("*.yaml") if Shard(1, 2).holds(p.stem)}
    assert manifest(shard)["settings"]["shard"] == "1/2"
    # The manifest keeps every case's hash: a resume checks the whole folder of cases.
    assert len(manifest(shard)["settings"]["case_hashes"]) == 2


def test_shards_merged_equal_one_local_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged = ("--judge", "ai-consilium", "--judge-model", PANEL)
    local = cohort(tmp_path / "local", "--cache-path", str(tmp_path / "local.sqlite"), *judged)
    one = cohort(tmp_path / "s1", "--shard", "1/2", "--cache-path", str(tmp_path / "s1.sqlite"), *judged)
    two = cohort(tmp_path / "s2", "--shard", "2/2", "--cache-path", str(tmp_path / "s2.sqlite"), *judged)
    assert arms_csv(one)[1] and arms_csv(two)[1]  # both shards hold cases
    assert judgements(local)[0].count("\n") > 100  # judged: the merge must order judgements.csv as local does
    merged = tmp_path / "merged"
    assert main(["cohort", "merge", str(two), str(one), "--out", str(merged)]) == 0
    assert_same_run(local, merged)
    data = manifest(merged)
    assert data["settings"]["shard"] is None and data["run_id"] == "merged"
    assert not list(tmp_path.glob(".merged.*"))  # the temporary folder was renamed into place
    # The merged folder is an ordinary cohort: it resumes, every arm reused.
    capsys.readouterr()
    assert main(["cohort", "--resume", str(merged)]) == 0
    assert "10 resumed" in capsys.readouterr().out
    assert judgements(merged) == judgements(local)
    # A shard folder resumes as its shard; another shard of it is refused.
    assert main(["cohort", "--resume", str(one)]) == 0
    assert f"{len(arms_csv(one)[1])} resumed" in capsys.readouterr().out
    assert main(["cohort", "--resume", str(one), "--shard", "2/2"]) == 2
    assert "--shard: '2/2' differs from the resumed cohort's '1/2'" in capsys.readouterr().err
    # Never over an existing folder.
    assert main(["cohort", "merge", str(one), str(two), "--out", str(merged)]) == 2
    assert "exists" in capsys.readouterr().err


def test_merge_refuses_other_settings_a_missing_and_a_repeated_shard(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    one = cohort(tmp_path / "s1", "--shard", "1/2")
    two = cohort(tmp_path / "s2", "--shard", "2/2", "--formats", "free-form")
    again = cohort(tmp_path / "s1b", "--shard", "1/2")
    three = cohort(tmp_path / "s3", "--shard", "1/3")
    out = tmp_path / "m"
    capsys.readouterr()
    cases = {
        "settings.variants differs": [one, two],
        "shard 2/2 missing": [one],
        "shard 1/2 given twice": [one, again],
        "share N": [one, three],
    }
    for expected, folders in cases.items():
        assert main(["cohort", "merge", *map(str, folders), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert expected in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and not list(tmp_path.glob(".m.*"))
    assert str(one) in err and str(three) in err  # both folders named
    assert main(["cohort", "merge", str(one), str(two), "--out", str(out)]) == 2
    assert str(one) in capsys.readouterr().err
    local = cohort(tmp_path / "local")
    assert main(["cohort", "merge", str(local), "--out", str(out)]) == 2
    assert "not a shard" in capsys.readouterr().err


def test_merge_of_an_unfinished_shard_is_not_completed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = cohort(tmp_path / "s1", "--shard", "1/2")
    two = cohort(tmp_path / "s2", "--shard", "2/2")
    with RunLock(two):  # a shard still writing is refused
        assert main(["cohort", "merge", str(one), str(two), "--out", str(tmp_path / "m")]) == 2
    assert "in use by another cohort" in capsys.readouterr().err and not (tmp_path / "m").exists()
    data = manifest(two)
    (two / "manifest.json").write_text(json.dumps({**data, "status": "running"}))  # as a killed shard leaves it
    assert main(["cohort", "merge", str(one), str(two), "--out", str(tmp_path / "m")]) == 1
    assert "shard 2/2" in capsys.readouterr().err
    assert manifest(tmp_path / "m")["status"] == "aborted"


def test_merge_copies_each_shards_own_files_not_an_ablation_nested_in_it(tmp_path: Path) -> None:
    """Each shard holds an ablation of its own arms (ablate/…/run-1, marked by its ablation.json) and another
    put by --out in a folder of the shard: neither is the merged cohort's, so neither is copied (the first
    shard's was copied and the second's dropped without a word, both under the same name)."""
    one = cohort(tmp_path / "s1", "--shard", "1/2")
    two = cohort(tmp_path / "s2", "--shard", "2/2")
    for shard in (one, two):
        for folder in (shard / "ablate" / "single" / "run-1", shard / "mine"):
            (folder / "arms").mkdir(parents=True)
            (folder / "ablation.json").write_text(json.dumps({"kind": "single", "cohort": str(shard)}))
            (folder / "arms" / f"{shard.name}.free-form.single.trace.json").write_text("{}")
    merged = tmp_path / "merged"
    assert main(["cohort", "merge", str(one), str(two), "--out", str(merged)]) == 0
    assert not (merged / "ablate").exists() and not (merged / "mine").exists()
    assert len(traces(merged)) == len(traces(one)) + len(traces(two)) > 0  # the shards' own arms, all of them


def _cache(path: Path, rows: list[tuple[str, str]]) -> Path:
    from consilium.models.wrappers.cache import _SCHEMA

    with sqlite3.connect(path) as db:
        db.execute(_SCHEMA)
        db.executemany("INSERT INTO responses VALUES (?, 'm', ?, 0)", rows)
    return path


def test_merge_folds_shard_caches_into_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = cohort(tmp_path / "s1", "--shard", "1/2")
    two = cohort(tmp_path / "s2", "--shard", "2/2")
    a = _cache(tmp_path / "a.sqlite", [("k1", "one"), ("k2", "two")])
    b = _cache(tmp_path / "b.sqlite", [("k2", "other"), ("k3", "three")])
    target = tmp_path / "all.sqlite"
    argv = ["cohort", "merge", str(one), str(two), "--out", str(tmp_path / "m"), "--caches", str(a), str(b),
            "--cache-out", str(target)]
    assert main(argv) == 0
    with sqlite3.connect(target) as db:
        assert dict(db.execute("SELECT key, response FROM responses")) == {"k1": "one", "k2": "two", "k3": "three"}
    capsys.readouterr()
    argv[5] = str(tmp_path / "m2")
    assert main(argv) == 2  # an existing cache is never overwritten, and nothing else is written
    assert "--cache-out" in capsys.readouterr().err and not (tmp_path / "m2").exists()


def test_ray_without_ray_installed_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as on a machine without it
    out = tmp_path / "out"
    assert main(["cohort", "--cases", str(CASES), "--model", PANEL, "--out", str(out), "--ray"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install consilium[ray]" in err[0]
    assert not out.exists()
