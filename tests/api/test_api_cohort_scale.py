"""A cohort beyond one process from the Python API (consilium/cohort/scale.py): ``run_cohort(shard="I/N")`` runs
the cases a hash of their id puts in shard I of N, records the shard, and resumes as that shard, as ``consilium
cohort --shard I/N`` does."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

import consilium
from consilium.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
EXAMPLE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
#: Case ids of varied length and form, so the shards they fall in are not a pattern of their names.
IDS = ("alpha", "b-2", "case-three", "d4", "echo-five-5", "f", "golf-seven")


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: Any) -> None:
    monkeypatch.setenv("CONSILIUM_CACHE", "off")


def case_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    source = EXAMPLE.read_text(encoding="utf-8")
    for case_id in IDS:
        (folder / f"{case_id}.yaml").write_text(source.replace("id: diagnostic-myocarditis", f"id: {case_id}"))
    return folder


def in_shard(case_id: str, index: int, count: int) -> bool:
    """Shard ``index`` of ``count`` by hand: the first 8 hex digits of the id's SHA-256, modulo the count."""
    return int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:8], 16) % count == index - 1


def test_run_cohort_with_a_shard_runs_that_shards_cases_and_resumes_as_it(tmp_path: Path) -> None:
    cases = case_folder(tmp_path)
    held = sorted(case_id for case_id in IDS if in_shard(case_id, 2, 3))
    assert 0 < len(held) < len(IDS)  # the fixture's ids spread over the shards
    result = consilium.run_cohort(cases, models=[PANEL], formats=["free-form"], shard="2/3", out=tmp_path / "runs")
    assert sorted(row["case_id"] for row in result.rows) == held
    assert result.counts == {"arms": len(held), "completed": len(held), "failed": 0, "resumed": 0}
    manifest = json.loads((result.run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["shard"] == "2/3"
    assert sorted(manifest["settings"]["case_hashes"]) == sorted(IDS)  # a resume checks the whole folder
    # A resume of the shard's folder is that shard again, every arm reused; another shard is refused.
    again = consilium.run_cohort(resume=result.run_dir)
    assert again.counts == {"arms": len(held), "completed": len(held), "failed": 0, "resumed": len(held)}
    with pytest.raises(UserError, match=r"^--shard: '1/3' differs from the resumed cohort's '2/3'"):
        consilium.run_cohort(resume=result.run_dir, shard="1/3")


def test_run_cohort_refuses_a_shard_that_is_not_i_of_n_and_writes_nothing(tmp_path: Path) -> None:
    cases = case_folder(tmp_path)
    for bad, says in (("3/2", "'3/2': I/N needs 1 ≤ I ≤ N"), ("two", "'two' is not I/N")):
        with pytest.raises(UserError, match=f"^--shard: {re.escape(says)}"):
            consilium.run_cohort(cases, models=[PANEL], shard=bad, out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_run_cohort_on_ray_refuses_a_moderator_of_its_own_before_ray_starts(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    with pytest.raises(UserError, match=r"^--moderator-model: not with --ray"):
        consilium.run_cohort(case_folder(tmp_path), models=[PANEL], moderator=PANEL, ray="", out=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
