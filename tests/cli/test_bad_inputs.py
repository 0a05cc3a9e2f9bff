"""A corpus of bad inputs: each exits 2 with one line naming the file, field or flag, no traceback,
and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
GOOD = CASE.read_text()


def case_file(tmp: Path, text: str | bytes, name: str = "case.yaml") -> Path:
    path = tmp / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


Builder = Callable[[Path], tuple[list[str], str]]

CORPUS: dict[str, Builder] = {
    "empty case": lambda t: (["simulate", "--case", str(case_file(t, ""))], "file is empty"),
    "invalid yaml": lambda t: (["simulate", "--case", str(case_file(t, "id: [unclosed"))], "case.yaml"),
    "invalid json": lambda t: (["simulate", "--case", str(case_file(t, "{nope", "case.json"))], "case.json"),
    "wrong type": lambda t: (["simulate", "--case", str(case_file(t, GOOD.replace(
        "question: What", "question: [1, 2]\nx: What")))], "question"),
    "missing question": lambda t: (["simulate", "--case", str(case_file(t, GOOD.replace(
        "question: What is the most likely diagnosis, and which test would confirm it?\n", "")))], "question"),
    "unknown field": lambda t: (["simulate", "--case", str(case_file(t, GOOD + "histroy: x\n"))], "histroy"),
    "non-utf8 case": lambda t: (["simulate", "--case", str(case_file(t, b"id: \xff\xfe\n"))], "not UTF-8"),
    "50 MB case": lambda t: (["simulate", "--case", str(case_file(t, b"#" * 50_000_000))], "at most 5 MB"),
    "unknown extension": lambda t: (["simulate", "--case", str(case_file(t, GOOD, "case.txt"))], ".txt"),
    "unknown model spec": lambda t: (["simulate", "--case", str(CASE), "--model", "gpt"], "unknown model spec"),
    "unknown role": lambda t: (["turn", "--case", str(CASE), "--role", "Astrologer", "--question", "?"],
                               "'Astrologer' is not a specialty"),
    "unknown rubric": lambda t: (["judge", str(t), "--rubric", "vibes", "--judge-model", "embedded"],
                                 "unknown rubric 'vibes'"),
    "bad flag value": lambda t: (["simulate", "--case", str(CASE), "--max-rounds", "0"], "--max-rounds"),
    "bad format": lambda t: (["simulate", "--case", str(CASE), "--format", "prose"], "--format"),
    "bad concurrency": lambda t: (["cohort", "--cases", str(t), "--concurrency", "-1"], "--concurrency"),
    "negative wall limit": lambda t: (["simulate", "--case", str(CASE), "--model", "scripted:x.json",
                                       "--wall-limit", "-1"], "--wall-limit"),
    "duplicate case ids": lambda t: (["cohort", "--cases", str(_twins(t)), "--model", "scripted:x.json"],
                                     "duplicate case ids"),
    "slide outside folder": lambda t: (["board", "--case", str(_escaping_slide(t)), "--model", "scripted:x.json"],
                                       "points outside the case's folder"),
    "ratings unknown criterion": lambda t: (["calibrate", "agreement", "--ratings", str(case_file(
        t, "case_id,component,criterion,rater,score\nc,conclusion,c99,a,1\n", "r.csv")), "--judgements", str(t),
        "--rubric", "ai-consilium"], "c99"),
    "ratings bad extension": lambda t: (["calibrate", "agreement", "--ratings", str(case_file(t, "x", "r.xlsx")),
                                         "--judgements", str(t), "--rubric", "ai-consilium"], ".csv or .jsonl"),
    "bad run config": lambda t: (["simulate", "--case", str(CASE), "--config", str(case_file(
        t, "max_round: 3\n", "c.yaml"))], "max_round"),
    "bad http client": lambda t: (["simulate", "--case", str(CASE), "--model", "openai:x", "--http-client",
                                   "curl"], "--http-client"),
    "bad http client in model config": lambda t: (["models", "check", "--model-config", str(case_file(
        t, "spec: openai:x\nhttp_client: curl\n", "m.yaml"))], "http_client"),
    "bad model config": lambda t: (["models", "check", "--model-config", str(case_file(t, "spec: 5\n", "m.yaml"))],
                                   "spec"),
    "bad experiment": lambda t: (["cohort", "--cases", str(CASE), "--experiment", str(case_file(
        t, "protocol: poetry\n", "e.yaml")), "--model", "scripted:x.json"], "protocol"),
    "bad script": lambda t: (["models", "check", "--model",
                              f"scripted:{case_file(t, 'rules: [{stage: x}]', 's.yaml')}"], "rules.0"),
    "malformed trace": lambda t: (["replay", str(case_file(t, "{}", "x.trace.json"))], "x.trace.json"),
    "unsupported trace version": lambda t: (["replay", str(case_file(t, json.dumps({"schema_version": "9"}),
                                                                     "y.trace.json"))], "schema_version"),
    "missing judge path": lambda t: (["judge", str(t / "none"), "--rubric", "ai-consilium", "--judge-model",
                                      "embedded"], "no such trace file"),
    "malformed agentclinic line": lambda t: (["cases", "import", "agentclinic", str(case_file(
        t, "{not json}\n", "a.jsonl")), "--out", str(t / "imported")], "a.jsonl"),
}


def _twins(tmp: Path) -> Path:
    folder = tmp / "twins"
    folder.mkdir()
    (folder / "a.yaml").write_text(GOOD)
    (folder / "b.yaml").write_text(GOOD)
    return folder


def _escaping_slide(tmp: Path) -> Path:
    folder = tmp / "cases"
    folder.mkdir()
    path = folder / "case.yaml"
    path.write_text(GOOD + "slides:\n  - caption: x\n    image: ../../etc/passwd\n")
    return path


def _more_corpora() -> dict[str, Builder]:
    """Entries from the ``tests/support/corpus_*.py`` modules (one per area: cases, configs, cohorts, …)."""
    import importlib

    import support

    more: dict[str, Builder] = {}
    for path in sorted(Path(support.__file__).parent.glob("corpus_*.py")):
        module = importlib.import_module(f"support.{path.stem}")
        clash = set(module.CORPUS) & (set(CORPUS) | set(more))
        assert not clash, f"{path.name}: corpus names already used: {sorted(clash)}"
        more.update(module.CORPUS)
    return more


CORPUS.update(_more_corpora())


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 25


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bad_input_exits_2_with_one_line(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, expected = CORPUS[name](tmp_path)
    out = tmp_path / "out"
    if argv[0] in ("simulate", "board", "turn", "cohort"):
        argv = [*argv, "--out", str(out)]
    def files() -> list[str]:  # the log file (conftest puts it here) is expected to grow
        return sorted(p.name for p in tmp_path.rglob("*") if p.name != "consilium.log.jsonl")

    before = files()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists() and files() == before
