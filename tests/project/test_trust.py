"""Results a researcher can trust: nothing leaked, nothing overwritten or mixed, no failure
passed off as a result, logs in the run's folder, records of every version readable.

Every test runs the real CLI (``main(argv)``) with the package's scripted backend or a real
OpenAI-compatible server on 127.0.0.1, and reads back what was written.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest
from support.localserver import scripted_server

from consilium.cli import main
from consilium.cohort.arms import model_folder
from consilium.cohort.lock import RunLock
from consilium.graphs.registry import read_trace
from consilium.models.factory import ModelOptions

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "v1.0"
SENTINEL = "sk-SENTINEL-4b1d2c9e0f7a6b5c"
PASSWORD = "hunter2-SENTINEL-pw"


def cases(tmp: Path, n: int = 2) -> Path:
    folder = tmp / "cases"
    folder.mkdir(exist_ok=True)
    text = CASE.read_text()
    for i in range(n):
        (folder / f"c{i}.yaml").write_text(text.replace("id: diagnostic-myocarditis", f"id: case-{i}"))
    return folder


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def everything_written(*roots: Path) -> str:
    """Every byte under ``roots`` (run folders, logs, caches), as text."""
    blobs = []
    for root in roots:
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        blobs += [p.read_bytes().decode("utf-8", "replace") for p in files]
    return "\n".join(blobs)


# --- 1, 2: secrets -------------------------------------------------------------------------------


def test_model_options_never_show_the_key_or_url_credentials() -> None:
    options = ModelOptions(api_key=SENTINEL, base_url=f"http://user:{PASSWORD}@127.0.0.1:9/v1")
    shown = repr(options) + str(options)
    assert SENTINEL not in shown and PASSWORD not in shown
    assert "api_key='***'" in shown and "http://***@127.0.0.1:9/v1" in shown


def test_an_internal_error_is_one_line_and_its_log_has_no_locals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    panel = tmp_path / "panel.yaml"  # answers role assignment, then crashes at the first opinion
    panel.write_text(PANEL.read_text().replace("rules:\n", "rules:\n  - stage: opinion\n    fail: internal\n", 1))
    out = tmp_path / "out"
    code = main(["simulate", "--case", str(CASE), "--model", f"scripted:{panel}", "--format", "free-form",
                 "--out", str(out), "--base-url", f"http://user:{PASSWORD}@127.0.0.1:9/v1"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert err[0].startswith("consilium: internal error: RuntimeError:") and "traceback in " in err[0]
    log = Path(err[0].rsplit("traceback in ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent.parent == out  # the run's own folder
    events = [json.loads(line) for line in log.read_text().splitlines()]
    crash = next(e for e in events if e["event"] == "internal_error")
    frames = [f for exc in crash["exception"] for f in exc["frames"]]
    assert frames and all("locals" not in f or not f["locals"] for f in frames)
    written = everything_written(out, tmp_path / "xdg") + "\n".join(err)
    assert SENTINEL not in written and PASSWORD not in written
    assert "A 24-year-old man" not in log.read_text()  # no case text in the log


@pytest.mark.localhost
def test_a_refused_key_stops_the_cohort_at_once_and_leaks_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    out = tmp_path / "runs"
    with scripted_server([("status", 401)] * 200) as server:
        code = main(["-v", "cohort", "--cases", str(cases(tmp_path, 6)), "--model", "openai:m", "--base-url",
                     server.base_url, "--concurrency", "2", "--out", str(out)])
        requests = server.requests
    captured = capsys.readouterr()
    assert code == 2
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("consilium: error: cohort stopped:") and "401" in last, last
    assert requests <= 4  # stopped at the first refusals, not after 12 arms × retries
    [run_dir] = list(out.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "aborted" and "401" in manifest["error"]
    written = everything_written(tmp_path) + captured.out + captured.err
    assert SENTINEL not in written


@pytest.mark.localhost
def test_server_errors_and_an_unwritable_output_leak_no_url_credentials(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # user:password@ is HTTP Basic auth for a server behind a gateway (no API key then).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with scripted_server([("status", 500)] * 50) as server:
        url = server.base_url.replace("http://", f"http://user:{PASSWORD}@")
        code = main(["-v", "simulate", "--case", str(CASE), "--model", "openai:m", "--base-url", url,
                     "--max-attempts", "2", "--retry-base-delay", "0", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1 and "HTTP 500" in captured.out  # a failed run, recorded with its stage
    assert server.bodies and "***@127.0.0.1" in captured.out
    code = main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(blocker / "x"),
                 "--base-url", url])
    unwritable = capsys.readouterr()
    assert code == 2 and "cannot create the output folder" in unwritable.err
    assert len(unwritable.err.strip().splitlines()) == 1
    written = everything_written(tmp_path) + captured.out + captured.err + unwritable.out + unwritable.err
    assert SENTINEL not in written and PASSWORD not in written


# --- 3: collision-free arm paths -----------------------------------------------------------------


def test_specs_that_slug_alike_get_their_own_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    nested, flat = tmp_path / "a" / "panel.yaml", tmp_path / "a_panel.yaml"
    nested.write_text(PANEL.read_text())
    flat.write_text(PANEL.read_text().replace("model: scripted-panel", "model: flat-panel"))
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases(tmp_path, 1)), "--model", f"scripted:{nested}",
                 "--extra-model", f"scripted:{flat}", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    rows = read_csv(run_dir / "arms.csv")
    assert len(rows) == 4 and len({r["trace"] for r in rows}) == 4
    models = {read_trace(run_dir / r["trace"]).model for r in rows}
    assert models == {"scripted-panel", "flat-panel"}
    # Long paths that share their first 60 characters, and openai names with / and _, stay apart too.
    long_a, long_b = "gguf:/" + "m" * 80 + "/a.gguf", "gguf:/" + "m" * 80 + "/b.gguf"
    assert model_folder(long_a) != model_folder(long_b)
    assert model_folder("openai:Qwen/Qwen2.5-7B-Instruct") != model_folder("openai:Qwen_Qwen2.5-7B-Instruct")


# --- 5, 6: resume takes its own settings; paths relative to the run folder -----------------------


def _cohort(tmp: Path, *extra: str) -> Path:
    out = tmp / "runs"
    assert main(["cohort", "--cases", str(cases(tmp, 3)), "--model", f"scripted:{PANEL}", "--out", str(out),
                 *extra]) == 0
    [run_dir] = list(out.iterdir())
    return run_dir


def test_resume_alone_finishes_the_cohort_with_its_own_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _cohort(tmp_path, "--formats", "structured", "--concurrency", "2")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["settings"]["variants"] == ["structured"]
    first = read_csv(run_dir / "arms.csv")[0]
    victim = run_dir / first["trace"]
    victim.unlink()  # as if killed before this arm finished: no trace, no progress line
    (victim.parent / f".{victim.name}.abc123.tmp").write_text("half")  # what a killed write leaves
    progress = run_dir / "arms.jsonl"
    jsonl_before = [line for line in progress.read_text().splitlines() if json.loads(line)["trace"] != first["trace"]]
    progress.write_text("".join(f"{line}\n" for line in jsonl_before))
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir)]) == 0  # no --cases, no --model: from the manifest
    assert "3 arms (3 completed, 0 failed, 2 resumed)" in capsys.readouterr().out
    assert victim.is_file() and not list(run_dir.rglob(".*.tmp"))
    rows = read_csv(run_dir / "arms.csv")
    assert [r["format"] for r in rows] == ["structured"] * 3
    assert read_trace(victim).model_spec == f"scripted:{PANEL}"  # the panel model, not the embedded default
    jsonl = (run_dir / "arms.jsonl").read_text().splitlines()
    keys = [(r["case_id"], r["model_spec"], r["format"], r["status"]) for r in map(json.loads, jsonl)]
    assert len(jsonl) == len(jsonl_before) + 1 and len(keys) == len(set(keys))  # no duplicate row


@pytest.mark.parametrize(("flags", "named"), [
    (["--cases", "OTHER"], "--cases"),
    (["--model", "embedded"], "--model"),
    (["--formats", "free-form"], "--formats"),
    (["--config", "CONFIG"], "--config"),
])
# A resume may change --concurrency and --out (the study spec's documented differences):
# tests/spec/test_study_spec.py::test_a_resume_may_change_concurrency_and_out.
def test_resume_refuses_a_conflicting_flag_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str) -> None:
    run_dir = _cohort(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(CASE, other / "x.yaml")
    config = tmp_path / "c.yaml"
    config.write_text("max_rounds: 2\n")
    flags = [str(other) if f == "OTHER" else str(config) if f == "CONFIG" else f for f in flags]
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"}
    capsys.readouterr()
    assert main(["cohort", "--resume", str(run_dir), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"consilium: error: {named}"), err
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before


def test_resume_accepts_the_same_flags_again(tmp_path: Path) -> None:
    run_dir = _cohort(tmp_path, "--concurrency", "2")
    assert main(["cohort", "--resume", str(run_dir), "--cases", str(tmp_path / "cases"), "--model",
                 f"scripted:{PANEL}", "--concurrency", "2", "--formats", "free-form,structured"]) == 0


def test_resume_refuses_changed_cases_and_traces_made_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _cohort(tmp_path)
    first = read_csv(run_dir / "arms.csv")[0]
    trace_file = run_dir / first["trace"]
    data = json.loads(trace_file.read_text())
    data["config"]["max_rounds"] = 1
    trace_file.write_text(json.dumps(data))
    assert main(["cohort", "--resume", str(run_dir)]) == 2
    assert "config.max_rounds" in capsys.readouterr().err
    case_file = tmp_path / "cases" / "c0.yaml"
    case_file.write_text(case_file.read_text().replace("24-year-old", "25-year-old"))
    assert main(["cohort", "--resume", str(run_dir)]) == 2
    assert "'case-0' changed since the cohort started" in capsys.readouterr().err


def test_a_locked_folder_and_a_symlinked_progress_log_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _cohort(tmp_path)
    with RunLock(run_dir):  # another cohort is writing here
        assert main(["cohort", "--resume", str(run_dir)]) == 2
    assert "in use by another cohort" in capsys.readouterr().err
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    jsonl = run_dir / "arms.jsonl"
    jsonl.unlink()
    jsonl.symlink_to(target)
    (run_dir / read_csv(run_dir / "arms.csv")[0]["trace"]).unlink()  # one arm to redo, so a row is appended
    assert main(["cohort", "--resume", str(run_dir)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert target.read_text() == "keep me\n"


def test_a_killed_cohort_has_a_manifest_from_the_start(tmp_path: Path) -> None:
    # The manifest is written before any call: a cohort whose every call crashes still has one.
    panel = tmp_path / "crash.yaml"
    panel.write_text(PANEL.read_text().replace("rules:\n", "rules:\n  - stage: opinion\n    fail: internal\n", 1))
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases(tmp_path, 1)), "--model", f"scripted:{panel}", "--out",
                 str(out)]) == 1
    [run_dir] = list(out.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["settings"]["models"] == [f"scripted:{panel}"]


def test_trace_paths_are_relative_so_a_moved_folder_still_compares(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _cohort(tmp_path, "--judge", "ai-consilium", "--judge-model", f"scripted:{PANEL}")
    for name in ("arms.csv", "judgements.csv"):
        column = "trace" if name == "arms.csv" else "judgement"
        paths = [r[column] for r in read_csv(run_dir / name)]
        assert paths and all(not Path(p).is_absolute() and p.startswith("arms/") for p in paths), paths
    moved = tmp_path / "copied" / run_dir.name
    shutil.copytree(run_dir, moved)
    shutil.rmtree(run_dir)
    monkeypatch.chdir(tmp_path / "copied")
    assert main(["compare", run_dir.name]) == 0
    assert "6 arms; 6 completed" in capsys.readouterr().out


# --- 9: exit codes --------------------------------------------------------------------------------


def test_a_cohort_whose_every_arm_failed_says_so_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    panel = tmp_path / "down.yaml"
    panel.write_text("model: down\nrules:\n  - fail: model\n")
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(cases(tmp_path, 2)), "--model", f"scripted:{panel}", "--out",
                 str(out)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "4 of 4 arms failed" in last and "arms.csv" in last


# --- 18: logs belong to the run ------------------------------------------------------------------


def test_the_log_goes_into_the_run_folder_and_nothing_outside_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    out = tmp_path / "out"
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    assert (run_dir / "consilium.log.jsonl").is_file()
    assert list(work.iterdir()) == []  # no ./runs/consilium.log.jsonl
    assert main(["cohort", "--cases", str(cases(tmp_path, 2)), "--model", f"scripted:{PANEL}", "--out",
                 str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    progress = [line for line in err if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[4/4] ")  # off a terminal: one line per arm
    cohort_dir = next(p for p in out.iterdir() if "cohort" in p.name)
    events = [json.loads(line)["event"] for line in (cohort_dir / "consilium.log.jsonl").read_text().splitlines()]
    assert events.count("arm_finished") == 4
    assert list(work.iterdir()) == []


# --- 19: records keep their meaning --------------------------------------------------------------


# The records written by schema 1.0 (tests/fixtures/v1.0) read as today's, and replaying them is refused in one
# line, as they ran modes this version no longer runs (tests/traces/test_old_records.py).


def test_an_unknown_record_version_is_refused_naming_the_versions_read(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "diagnostic-myocarditis.free-form.trace.json").read_text())
    data["schema_version"] = "7.0"
    path = tmp_path / "future.trace.json"
    path.write_text(json.dumps(data))
    refused = (r"schema_version: '7.0' is not supported "
               r"\(this consilium reads 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9\)")
    with pytest.raises(Exception, match=refused):
        read_trace(path)


def test_environment_key_is_masked_in_files_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from consilium.fileio import write_text_atomic

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    path = write_text_atomic(tmp_path / "x.txt", f"key={SENTINEL} url=https://u:{PASSWORD}@h/v1\n")
    assert path.read_text() == "key=*** url=https://***@h/v1\n"
    assert os.environ["OPENAI_API_KEY"] == SENTINEL


def test_a_cohort_shows_judging_coverage_and_warns_when_nothing_was_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A judge whose every answer is unusable: every item not evaluable, shown and warned, not silently absent.
    judge = tmp_path / "judge.yaml"
    judge.write_text("model: bad-judge\nrules:\n  - response: 'I would rather not say.'\n")
    _cohort(tmp_path, "--judge", "otb-conclusion-alignment", "--judge-model", f"scripted:{judge}")
    captured = capsys.readouterr()
    assert "otb-conclusion-alignment conclusion" in captured.out and "0 judged, 6 not evaluable" in captured.out
    assert "warning: rubric otb-conclusion-alignment: all 6 items not evaluable" in captured.err


def test_an_experiment_and_a_config_file_are_layered_not_dropped(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("formats: [free-form]\nrun: {max_rounds: 2, temperature: 0.5}\n")
    config = tmp_path / "c.yaml"
    config.write_text("max_rounds: 3\n")
    run_dir = _cohort(tmp_path, "--experiment", str(experiment), "--config", str(config))
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    config = settings["configs"]["consilium"]
    assert config["max_rounds"] == 3 and config["temperature"] == 0.5
    assert settings["variants"] == ["free-form"]


@pytest.mark.localhost
def test_bad_server_values_fail_the_run_and_leak_no_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from support.faultserver import BAD_TYPES, fault_server

    from consilium.models.backends.scripted import Script

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    out = tmp_path / "out"
    with fault_server(Script(model="served", default="An answer."), rate=1.0, faults=BAD_TYPES) as server:
        code = main(["-v", "simulate", "--case", str(CASE), "--model", "openai:m", "--base-url", server.base_url,
                     "--format", "free-form", "--max-attempts", "2", "--retry-base-delay", "0", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and "malformed response" in captured.out  # a model error, not an internal one
    assert "internal error" not in captured.err
    written = everything_written(tmp_path) + captured.out + captured.err
    assert SENTINEL not in written


def test_review_findings_on_resume_and_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A judged cohort resumes; the original command with --out and --resume added is accepted; a relative
    scripted spec is stored absolute, so a resume from elsewhere runs the same file; a bad model spec or an
    unwritable --out leaves nothing behind; the run log is never appended through a symlink."""
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    monkeypatch.chdir(tmp_path)
    shutil.copy(PANEL, tmp_path / "panel.yaml")
    folder = cases(tmp_path, 2)
    argv = ["cohort", "--cases", str(folder), "--model", "scripted:panel.yaml", "--judge", "ai-consilium",
            "--judge-model", "scripted:panel.yaml", "--out", "runs"]
    assert main(argv) == 0
    [run_dir] = list((tmp_path / "runs").iterdir())
    settings = json.loads((run_dir / "manifest.json").read_text())["settings"]
    assert settings["judges"] == ["ai-consilium"] and settings["models"] == [f"scripted:{tmp_path / 'panel.yaml'}"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "panel.yaml").write_text("model: other\nrules:\n  - response: other\n")
    monkeypatch.chdir(elsewhere)
    (run_dir / read_csv(run_dir / "arms.csv")[0]["trace"]).unlink()
    log = run_dir / "consilium.log.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("x\n")
    log.unlink()
    log.symlink_to(victim)
    assert main(["cohort", "--resume", str(run_dir)]) == 0  # judged, from another folder
    assert victim.read_text() == "x\n"
    assert {read_trace(run_dir / r["trace"]).model for r in read_csv(run_dir / "arms.csv")} == {"scripted-panel"}
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--resume", str(run_dir)]) == 0  # the original command, --resume added
    capsys.readouterr()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["cohort", "--cases", str(folder), "--model", f"scripted:{PANEL}", "--out", str(blocker / "x")]) == 2
    assert "cannot create the output folder" in capsys.readouterr().err
    empty = tmp_path / "fresh"
    assert main(["cohort", "--cases", str(folder), "--model", "scripted:nope.yaml", "--out", str(empty)]) == 2
    assert not empty.exists()


def test_a_password_holding_an_at_sign_is_masked_whole(tmp_path: Path) -> None:
    from consilium.redact import redact

    assert redact("http://bob:p@ss-SENTINEL@127.0.0.1:9/v1, https://h/a@b") == "http://***@127.0.0.1:9/v1, https://h/a@b"
