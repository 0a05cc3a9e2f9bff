"""A cohort of several protocols side by side (``--protocol consilium,single``), with the shipped scripted
panel: the arms of each, replay, resume, run settings shared out by protocol, and an older manifest."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
CASES = ("diagnostic-myocarditis.yaml", "consultation-afib-anticoagulation.yaml")


def two_cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in CASES:
        shutil.copy(ROOT / "examples" / "cases" / name, folder / name)
    return folder


def cohort(tmp_path: Path, *flags: str) -> Path:
    out = tmp_path / "runs"
    before = set(out.iterdir()) if out.exists() else set()
    assert main(["cohort", "--cases", str(two_cases(tmp_path) if not (tmp_path / "cases").exists()
                                         else tmp_path / "cases"), "--model", PANEL, "--out", str(out), *flags]) == 0
    [run_dir] = set(out.iterdir()) - before
    return run_dir


def arms(run_dir: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))


def manifest(run_dir: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run_dir / "manifest.json").read_text())
    return data


def test_consilium_and_single_run_side_by_side_replay_and_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path, "--protocol", "consilium,single")
    rows = arms(run_dir)
    assert all(r["status"] == "completed" for r in rows), rows
    by_protocol = {name: sorted((r["case_id"], r["format"]) for r in rows if r["protocol"] == name)
                   for name in ("consilium", "single")}
    ids = sorted(Path(name).stem for name in CASES)
    assert by_protocol == {"consilium": [(c, f) for c in ids for f in ("free-form", "structured")],
                           "single": [(c, f) for c in ids for f in ("single-free-form", "single-structured")]}
    # Each protocol's own columns: the single baseline has one role and no rounds.
    assert {r["roles"] for r in rows if r["protocol"] == "single"} == {"1"}
    assert all(r["rounds"] == "" for r in rows if r["protocol"] == "single")
    assert all(r["rounds"] == "2" for r in rows if r["protocol"] == "consilium")
    settings = manifest(run_dir)["settings"]
    assert isinstance(settings, dict) and manifest(run_dir)["schema_version"] == "1.4"
    assert settings["protocols"] == ["consilium", "single"]
    assert settings["variants"] == ["free-form", "structured"]  # each protocol runs those of its own
    assert "max_rounds" in settings["configs"]["consilium"] and "max_rounds" not in settings["configs"]["single"]
    # Every single trace replays identically from its recorded calls.
    singles = [run_dir / r["trace"] for r in rows if r["protocol"] == "single"]
    assert len(singles) == 4
    for trace in singles:
        capsys.readouterr()
        assert main(["replay", str(trace)]) == 0
        assert ": identical" in capsys.readouterr().out
    # A resume reuses all eight arms and touches none.
    stamps = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*.trace.json")}
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir), "--protocol", "consilium,single"]) == 0
    assert "8 arms (8 completed, 0 failed, 8 resumed)" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*.trace.json")} == stamps
    # Another protocol list is refused before anything runs.
    assert main(["cohort", "--resume", str(run_dir), "--protocol", "consilium"]) == 2
    err = capsys.readouterr().err
    assert "--protocol: 'consilium' differs from the resumed cohort's 'consilium,single'" in err
    assert len(err.strip().splitlines()) == 1


def test_formats_apply_to_every_protocol_run_in_formats(tmp_path: Path) -> None:
    rows = arms(cohort(tmp_path, "--protocol", "single,consilium", "--formats", "structured"))
    assert sorted({(r["protocol"], r["format"]) for r in rows}) == [("consilium", "structured"),
                                                                     ("single", "single-structured")]
    assert len(rows) == 4


def test_a_single_only_cohort_is_judged_under_its_own_variant_names(tmp_path: Path) -> None:
    run_dir = cohort(tmp_path, "--protocol", "single", "--judge", "ai-consilium", "--judge-model", PANEL)
    rows = arms(run_dir)
    assert sorted(r["format"] for r in rows) == ["single-free-form"] * 2 + ["single-structured"] * 2
    assert {r["protocol"] for r in rows} == {"single"} and all(r["status"] == "completed" for r in rows)
    judged = list(csv.DictReader((run_dir / "judgements.csv").read_text().splitlines()))
    assert judged and {j["protocol"] for j in judged} == {"single"}
    assert {j["format"] for j in judged} == {"single-free-form", "single-structured"}
    assert {j["component"] for j in judged} >= {"conclusion"}


def test_run_settings_go_to_the_protocols_that_have_them(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("max_rounds: 1\nreport_budget_chars: 1200\nseed: 3\n")
    run_dir = cohort(tmp_path, "--protocol", "consilium,single", "--formats", "free-form", "--config", str(config))
    configs = manifest(run_dir)["settings"]["configs"]  # type: ignore[index]
    assert configs["consilium"]["max_rounds"] == 1 and "max_rounds" not in configs["single"]
    assert configs["consilium"]["report_budget_chars"] == configs["single"]["report_budget_chars"] == 1200
    assert configs["consilium"]["seed"] == configs["single"]["seed"] == 3
    single = json.loads((run_dir / next(r["trace"] for r in arms(run_dir) if r["protocol"] == "single")).read_text())
    assert single["config"]["report_budget_chars"] == 1200 and "max_rounds" not in single["config"]


def test_an_experiment_names_several_protocols(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("protocol: [consilium, single]\nformats: [free-form]\nrun: {max_rounds: 2}\n")
    run_dir = cohort(tmp_path, "--experiment", str(experiment))
    assert sorted({(r["protocol"], r["format"]) for r in arms(run_dir)}) == [("consilium", "free-form"),
                                                                             ("single", "single-free-form")]
    assert manifest(run_dir)["settings"]["configs"]["consilium"]["max_rounds"] == 2  # type: ignore[index]


def test_a_one_protocol_manifest_of_version_1_2_reads_and_resumes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = cohort(tmp_path, "--formats", "free-form")
    data = json.loads((run_dir / "manifest.json").read_text())
    settings = data["settings"]
    [name] = settings.pop("protocols")
    settings.update(protocol=name, config=settings.pop("configs")[name])
    data["schema_version"] = "1.2"
    (run_dir / "manifest.json").write_text(json.dumps(data))
    victim = run_dir / arms(run_dir)[0]["trace"]
    victim.unlink()
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir)]) == 0
    assert "2 arms (2 completed, 0 failed, 1 resumed)" in capsys.readouterr().out
    assert victim.is_file()
    upgraded = manifest(run_dir)
    assert upgraded["schema_version"] == "1.4"
    assert upgraded["settings"]["protocols"] == ["consilium"]  # type: ignore[index]
    assert upgraded["settings"]["variants"] == ["free-form"]  # type: ignore[index]
    assert main(["cohort", "--resume", str(run_dir), "--protocol", "consilium,single"]) == 2
    assert "--protocol: 'consilium,single' differs" in capsys.readouterr().err


def test_shards_of_two_protocols_merge_into_the_local_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_shards import assert_same_run
    from test_shards import cohort as shard_cohort

    flags = ("--protocol", "consilium,single", "--limit", "3")
    local = shard_cohort(tmp_path / "local", *flags, "--cache-path", str(tmp_path / "local.sqlite"))
    one = shard_cohort(tmp_path / "s1", *flags, "--shard", "1/2", "--cache-path", str(tmp_path / "s1.sqlite"))
    two = shard_cohort(tmp_path / "s2", *flags, "--shard", "2/2", "--cache-path", str(tmp_path / "s2.sqlite"))
    merged = tmp_path / "merged"
    assert main(["cohort", "merge", str(two), str(one), "--out", str(merged)]) == 0
    assert_same_run(local, merged)
    assert {r["protocol"] for r in arms(merged)} == {"consilium", "single"} and len(arms(merged)) == 12
    # A shard of the same cases run with other protocols is another cohort.
    other = shard_cohort(tmp_path / "s2c", "--protocol", "consilium", "--limit", "3", "--shard", "2/2")
    capsys.readouterr()
    assert main(["cohort", "merge", str(one), str(other), "--out", str(tmp_path / "m2")]) == 2
    assert "settings.protocols differs" in capsys.readouterr().err


@pytest.mark.localhost
def test_two_protocols_on_ray_equal_the_local_run(ray_cluster: Any, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from test_shards import assert_same_run
    from test_shards import cohort as shard_cohort

    flags = ("--protocol", "consilium,single", "--limit", "3")
    local = shard_cohort(tmp_path / "local", *flags, "--cache-path", str(tmp_path / "local.sqlite"))
    on_ray = shard_cohort(tmp_path / "ray", *flags, "--ray", "--cache-path", str(tmp_path / "ray.sqlite"))
    assert "on Ray (2 partitions)" in capsys.readouterr().out
    assert_same_run(local, on_ray)
    assert {r["protocol"] for r in arms(on_ray)} == {"consilium", "single"}
