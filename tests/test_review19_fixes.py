"""Review fixes of issue 19's ``analyze`` and ``simulate --human`` (docs/networks.md, docs/human.md): each test
fails without its fix."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest
import yaml
from networks_runs import cohort as _cohort
from networks_runs import simulate_varied as _simulate_varied

from consilium.cli import main
from consilium.reports.networks.metrics import category_metrics, dissenters

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "networks"
MYOCARDITIS = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"


def _check_graphml(path: Path) -> int:
    """The file's edge count; every edge id unique and every boolean ``true`` / ``false``."""
    root = ET.parse(path).getroot()
    ids = [e.get("id") for e in root.iter(f"{GRAPHML}edge")]
    assert len(ids) == len(set(ids)), f"{path}: repeated edge ids"
    booleans = {k.get("id") for k in root.iter(f"{GRAPHML}key") if k.get("attr.type") == "boolean"}
    values = {d.text for d in root.iter(f"{GRAPHML}data") if d.get("key") in booleans}
    assert values <= {"true", "false"} and values, f"{path}: booleans {values}"
    return len(ids)


def test_every_graphml_has_unique_edge_ids_and_lowercase_booleans(tmp_path: Path) -> None:
    run = _simulate_varied(tmp_path / "sim")
    board = _cohort(tmp_path / "board", [NSCLC], "--protocol", "board", "--modes", "agents,single",
                    "--model", f"scripted:{FIXTURES / 'board-panel.yaml'}")
    assert main(["analyze", str(run)]) == 0 and main(["analyze", str(board)]) == 0
    files = sorted([*(run / "analysis").rglob("*.graphml"), *(board / "analysis").rglob("*.graphml")])
    arms = [f for f in files if f.name != "coassignment.graphml"]
    assert len(arms) == 3
    # The varied arm: 4 opinions, 3 reviews, 12 votes, 2 revisions, 4 dissents, 8 transitions, all distinct.
    assert [_check_graphml(f) for f in arms if "board" not in f.name] == [33]
    for file in files:
        if file.name != "coassignment.graphml":
            _check_graphml(file)


def test_a_rerun_with_another_method_or_run_is_refused_unless_forced(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = _simulate_varied(tmp_path / "sim")
    other = _simulate_varied(tmp_path / "other")
    judge = f"scripted:{FIXTURES / 'judge.yaml'}"
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 0
    out = run / "analysis"
    stamp = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    assert (stamp["run_id"], stamp["method"], stamp["judge_model"], stamp["rubric_version"]) == (
        run.name, "judge", "uptake-judge", 1)
    (record,) = out.rglob("*.judgement.json")
    before = (out / "dissents.csv").read_bytes()
    capsys.readouterr()
    for argv in (["analyze", str(run)], ["analyze", str(other), "--out", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "analysis.json" in err and "--force" in err, err
        assert (out / "dissents.csv").read_bytes() == before
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 0  # the same analysis again
    assert main(["analyze", str(run), "--force"]) == 0  # word overlap replaces it, the judge's record goes
    assert not record.exists() and "judge" not in (out / "dissents.csv").read_text(encoding="utf-8")
    assert json.loads((out / "analysis.json").read_text(encoding="utf-8"))["method"] == "word_overlap"
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["analyze", str(run), "--out", str(stray)]) == 2
    assert "not an analysis folder" in capsys.readouterr().err


def test_failed_judge_calls_are_counted_exit_1_and_asked_again(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = _simulate_varied(tmp_path / "sim")
    failing = f"scripted:{ROOT / 'tests' / 'fixtures' / 'review19' / 'failing-judge.yaml'}"
    assert main(["analyze", str(run), "--judge-model", failing, "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "2 judge calls failed; word overlap decided them" in out and "2 by judge, 2 by word overlap" in out
    (record,) = (run / "analysis").rglob("*.judgement.json")
    first = json.loads(record.read_text(encoding="utf-8"))
    scores = {i["detail"]["key"]: i["score"] for i in first["items"]}
    assert scores["r1:neurologist"] is None and scores["r2:neurologist"] is None and scores["r1:radiologist"] == 1
    # The same judge (same model id), answering now: only the two failed items are asked again.
    assert main(["analyze", str(run), "--judge-model", f"scripted:{FIXTURES / 'judge.yaml'}", "--no-cache"]) == 0
    assert "judge calls failed" not in capsys.readouterr().out
    again = json.loads(record.read_text(encoding="utf-8"))
    assert {i["detail"]["key"]: i["score"] for i in again["items"]} == {
        "r1:radiologist": 1, "r1:neurologist": 0, "r1:cardiologist": 1, "r2:neurologist": 0}
    new = again["calls"][len(first["calls"]):]
    assert again["calls"][:len(first["calls"])] == first["calls"] and len(new) == 2
    assert all("lumbar puncture" in json.dumps(c["messages"]) for c in new)
    assert [c["index"] for c in again["calls"]] == list(range(len(again["calls"])))


def test_an_out_at_or_above_the_run_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _simulate_varied(tmp_path / "sim")
    for out in (run, run.parent):
        assert main(["analyze", str(run), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("consilium: error: --out:") and "above" in err


def test_coassignment_counts_each_assignment_once_and_names_left_out_arms(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _cohort(tmp_path, [MYOCARDITIS], "--model", f"scripted:{PANEL}", "--protocol", "consilium,single")
    capsys.readouterr()
    assert main(["analyze", str(run)]) == 0
    out = capsys.readouterr().out
    assert "left out 2 arms neither a consilium nor a board meeting" in out and ".single-free-form" in out
    network = nx.read_graphml(run / "analysis" / "coassignment.graphml")
    # One assignment {IM primary, NE, RA} shared by both formats (and the single arms, left out): counted once.
    assert network.graph["panels"] == 1
    assert {n: (d["primary"], d["supporting"], d["arms"]) for n, d in network.nodes(data=True)} == {
        "internal_medicine": (1, 0, 1), "neurology": (0, 1, 1), "radiology": (0, 1, 1)}
    assert {d["weight"] for *_, d in network.edges(data=True)} == {1}


# --- simulate --human (docs/human.md) ------------------------------------------------------------------------

CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
ANSWERS = ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"


def _paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A run with the Cardiologist at the table, paused at the free-form round-2 vote, started from
    ``tmp_path`` with relative paths."""
    partial = yaml.safe_load(ANSWERS.read_text(encoding="utf-8"))
    del partial["free-form"]["votes"][2]
    (tmp_path / "partial.yaml").write_text(yaml.safe_dump(partial), encoding="utf-8")
    (tmp_path / "panel.yaml").write_text(PANEL.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "case.yaml").write_text(CASE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "--case", "case.yaml", "--model", "scripted:panel.yaml", "--out", "runs",
                 "--human", "Cardiologist", "--answers", "partial.yaml"]) == 2
    capsys.readouterr()
    (folder,) = (tmp_path / "runs").iterdir()
    return folder.resolve()


def test_the_session_keeps_absolute_paths_and_resume_refuses_changed_flags(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _paused(tmp_path, monkeypatch, capsys)
    saved = json.loads((folder / "human" / "session.json").read_text(encoding="utf-8"))["args"]
    assert saved["answers"] == str(tmp_path.resolve() / "partial.yaml")
    assert saved["case"] == str(tmp_path.resolve() / "case.yaml")
    assert saved["model"] == f"scripted:{tmp_path.resolve() / 'panel.yaml'}"
    for flags, named in ((["--max-rounds", "2"], "--max-rounds"), (["--format", "free-form"], "--formats"),
                         (["--model", f"scripted:{PANEL}"], "--model"), (["--seed", "7"], "--seed")):
        assert main(["simulate", "--resume", str(folder), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"consilium: error: {named}: --resume"), err
    # The same settings again, the model as typed from the same folder, are not a change; nor is -v.
    monkeypatch.chdir(tmp_path / "runs")  # from another folder: the session's absolute paths still hold
    assert main(["simulate", "--resume", str(folder), "--model", f"scripted:{tmp_path / 'panel.yaml'}", "-v",
                 "--answers", str(ANSWERS)]) == 0
    assert len(list(folder.glob("*.trace.json"))) == 2
    manifest = {p: p.read_bytes() for p in folder.glob("*.json")}
    capsys.readouterr()
    assert main(["simulate", "--resume", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "already finished" in err
    assert {p: p.read_bytes() for p in folder.glob("*.json")} == manifest


def test_wall_limit_is_refused_with_a_person_at_the_table(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / "runs"),
                 "--human", "Cardiologist", "--answers", str(ANSWERS), "--wall-limit", "60"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("consilium: error: --wall-limit:")
    assert not (tmp_path / "runs").exists()


def test_the_simulate_view_links_the_graph_picture(tmp_path: Path) -> None:
    run = _simulate_varied(tmp_path / "sim")
    assert main(["view", str(run)]) == 0
    assert "deliberation graph" not in (run / "view.html").read_text(encoding="utf-8")
    assert main(["analyze", str(run)]) == 0 and main(["view", str(run)]) == 0
    html = (run / "view.html").read_text(encoding="utf-8")
    href = html.split('">deliberation graph</a>')[0].rsplit('<a href="', 1)[1]
    assert href == "analysis/diagnostic-myocarditis.free-form.png" and (run / href).is_file()


def test_single_mode_speakers_get_their_catalogue_category(tmp_path: Path) -> None:
    run = _cohort(tmp_path, [NSCLC], "--protocol", "board", "--modes", "single", "--model", f"scripted:{PANEL}")
    assert main(["analyze", str(run)]) == 0
    with (run / "analysis" / "centralities.csv").open(encoding="utf-8") as handle:
        rows = {r["speaker"]: r["category"] for r in csv.DictReader(handle)}
    # The one model's transcript: Moderator, Radiologist, Medical Oncologist, Moderator (no roles at the table).
    assert rows == {"Moderator": "moderator", "Radiologist": "radiology", "Medical Oncologist": "medical_oncology"}


def test_persistence_is_the_mean_length_of_every_dissent_run() -> None:
    # Built by hand: a neurologist dissents in rounds 1, 2 and 4 (runs of 2 and 1), a second arm's neurologist
    # in round 3 only (a run of 1): neurology's persistence (2 + 1 + 1) / 3; the first run alone gave 1.5.
    graphs = []
    for votes in ({1: "dissent", 2: "dissent", 3: "accept", 4: "dissent", 5: "accept"},
                  {1: "accept", 2: "accept", 3: "dissent", 4: "accept"}):
        graph = nx.MultiDiGraph()
        graph.add_node("role:neurologist", kind="role", category="neurology", category_name="Neurology")
        for number, vote in votes.items():
            graph.add_node(f"round:{number}", kind="round", round=number)
            graph.add_edge("role:neurologist", f"round:{number}", key=f"vote:r{number}:neurologist", kind="vote",
                           vote=vote)
        graphs.append(graph)
    (row,) = category_metrics(graphs)
    assert (row["dissenters"], row["dissents"], row["persistence"]) == (2, 4, round(4 / 3, 4))
    assert dissenters(graphs[0])["role:neurologist"]["runs"] == [2, 1]


def test_answers_content_is_checked_at_load_and_a_budget_refusal_says_how_to_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def simulate(answers: str, out: str) -> str:
        (tmp_path / f"{out}.yaml").write_text(answers, encoding="utf-8")
        assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{PANEL}", "--out", str(tmp_path / out),
                     "--human", "Cardiologist", "--answers", str(tmp_path / f"{out}.yaml")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        return err

    # A vote for round 5 (never reached) with an over-long reason, and an empty opinion: refused before the run.
    err = simulate(yaml.safe_dump({"free-form": {"votes": {5: {"vote": "accept", "reason": "x" * 401}}}}), "long")
    assert "long.yaml: free-form.votes.5.reason:" in err and not (tmp_path / "long").exists()
    err = simulate(yaml.safe_dump({"free-form": {"opinion": "  "}}), "empty")
    assert "empty.yaml: free-form.opinion: give the opinion as text" in err and not (tmp_path / "empty").exists()
    err = simulate("free-form:\n  votes:\n    1: {vote: yes, reason: fine}\n", "yes")
    assert "yes.yaml: free-form.votes.1.vote: accept or dissent, not yes" in err and "write accept or dissent" in err
    # Over the run's length budget: found at the prompt; the run waits there and the message says how to go on.
    err = simulate(yaml.safe_dump({"free-form": {"opinion": "x" * 4801}}), "budget")
    (folder,) = (tmp_path / "budget").iterdir()
    assert "over its length budget of 4800" in err and f"resume it with `consilium simulate --resume {folder}`" in err
    assert main(["simulate", "--resume", str(folder), "--answers", str(ANSWERS)]) == 0
    assert len(list(folder.glob("*.trace.json"))) == 2
