"""``cohort --ray``: a scripted cohort run as Ray tasks equals the local run arm for arm, and resumes
(docs/scale.md, "Ray"). One local Ray instance for the module, two CPUs, no dashboard; Ray turns the
loopback address it is given into this machine's own address, so its traffic never leaves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_shards import PANEL, arms_csv, assert_same_run, cohort, manifest, traces

from consilium.cli import main

ray = pytest.importorskip("ray")


@pytest.mark.localhost
def test_a_cohort_on_ray_equals_the_local_run(ray_cluster: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    judged = ("--judge", "ai-consilium", "--judge-model", PANEL)  # the driver judges, as a local cohort does
    local = cohort(tmp_path / "local", "--cache-path", str(tmp_path / "local.sqlite"), *judged)
    on_ray = cohort(tmp_path / "ray", "--ray", "--cache-path", str(tmp_path / "ray.sqlite"), *judged)
    assert "on Ray (2 partitions)" in capsys.readouterr().out
    assert_same_run(local, on_ray)
    assert arms_csv(on_ray)[0] == arms_csv(local)[0]  # the same columns, in the same order
    assert manifest(on_ray)["status"] == "completed"


@pytest.mark.localhost
def test_a_cohort_on_ray_resumes(ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    on_ray = cohort(tmp_path / "ray", "--ray")
    before = traces(on_ray)
    # As a killed cohort leaves it: one format's trace gone, the other's role assignment reused.
    lost = sorted((on_ray / "arms").rglob("diagnostic-myocarditis.structured.trace.json"))
    assert len(lost) == 1
    lost[0].unlink()
    data = manifest(on_ray)
    (on_ray / "manifest.json").write_text(json.dumps({**data, "status": "running"}))
    capsys.readouterr()
    assert main(["cohort", "--resume", str(on_ray), "--ray"]) == 0
    assert "9 resumed" in capsys.readouterr().out
    assert traces(on_ray) == before
    assert manifest(on_ray)["status"] == "completed"
    rows = arms_csv(on_ray)[1]
    assert [r["resumed"] for r in rows].count("True") == 9
    # An ordinary cohort folder: it resumes without Ray too, every arm reused.
    assert main(["cohort", "--resume", str(on_ray)]) == 0
    assert "10 resumed" in capsys.readouterr().out


@pytest.mark.localhost
def test_a_shard_on_ray_is_the_shard(ray_cluster: Any, tmp_path: Path) -> None:
    local = cohort(tmp_path / "local", "--shard", "2/2")
    on_ray = cohort(tmp_path / "ray", "--shard", "2/2", "--ray")
    assert arms_csv(on_ray) == arms_csv(local)
    assert manifest(on_ray)["settings"]["shard"] == "2/2"
