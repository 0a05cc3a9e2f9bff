"""``consilium analyze`` (docs/networks.md): deliberation graphs, board turn-taking graphs, the co-assignment
network and the per-category metrics, on scripted runs whose numbers are worked out by hand below."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest
from support.networks_runs import cohort as _cohort
from support.networks_runs import simulate_varied as _simulate_varied

from consilium.cli import main
from consilium.reports.networks.metrics import category_metrics, dissenters
from consilium.reports.networks.uptake import content_words, overlap_share

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "networks"
MYOCARDITIS = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"
GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _by(rows: list[dict[str, str]], key: str) -> dict[str, dict[str, str]]:
    return {r[key]: r for r in rows}


def _metrics(out: Path) -> dict[str, tuple[str, str, str]]:
    return {c: (r["influence"], r["persistence"], r["conformity"])
            for c, r in _by(_rows(out / "categories.csv"), "category").items()}


def test_the_scripted_cohort_graph_has_the_ct_dissent_taken_up(tmp_path: Path) -> None:
    run = _cohort(tmp_path, [MYOCARDITIS], "--model", f"scripted:{PANEL}")
    assert main(["analyze", str(run)]) == 0
    out = run / "analysis"
    (graphml,) = sorted(out.rglob("*.free-form.graphml"))
    graph = nx.read_graphml(graphml, force_multigraph=True)
    assert set(graph.nodes) == {"role:internist", "role:neurologist", "role:radiologist", "report:v1", "report:v2",
                                "round:1", "round:2"}
    kinds = sorted((u, v, d["kind"]) for u, v, d in graph.edges(data=True) if d["kind"] != "vote")
    assert kinds == sorted([
        ("role:internist", "report:v1", "opinion"), ("role:neurologist", "report:v1", "opinion"),
        ("role:radiologist", "report:v1", "opinion"), ("report:v1", "round:1", "review"),
        ("report:v2", "round:2", "review"), ("report:v1", "report:v2", "revision"),
        ("role:radiologist", "report:v2", "dissent"),
        *[("round:1", "round:2", "vote_transition")] * 3])
    (dissent,) = [d for *_, d in graph.edges(data=True) if d["kind"] == "dissent"]
    # "add CT": content word {ct}, new in "Report: A; CT." against "Report: A is most likely." → 1/1.
    assert dissent["taken_up"] is True and dissent["method"] == "word_overlap" and dissent["overlap"] == 1.0
    votes = {(u, v): d["vote"] for u, v, d in graph.edges(data=True) if d["kind"] == "vote"}
    assert votes[("role:radiologist", "round:1")] == "dissent" and votes[("role:radiologist", "round:2")] == "accept"
    assert graph.nodes["report:v2"]["final"] is True and graph.nodes["round:1"]["dissent_fraction"] == 0.333333
    # Both formats: the radiologist dissents once in each and is taken up both times, then accepts.
    assert _metrics(out)["radiology"] == ("1.0", "1.0", "0.0")
    assert _metrics(out)["neurology"] == ("", "", "")
    paths = [r for r in _rows(out / "change_paths.csv") if r["variant"] == "structured"]
    assert [(r["from_version"], r["to_version"], r["caused_by"]) for r in paths] == [
        ("opinions", "1", "internist;neurologist;radiologist"), ("1", "2", "radiologist")]
    assert sorted(p.suffix for p in graphml.parent.iterdir() if "free-form" in p.name) == [".graphml", ".pdf", ".png"]


def test_several_dissenters_fallback_counts_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _simulate_varied(tmp_path / "sim")
    assert main(["analyze", str(run)]) == 0
    assert "4 by word overlap" in capsys.readouterr().out
    out = run / "analysis"
    (graphml,) = [p for p in out.rglob("*.graphml") if p.name != "coassignment.graphml"]
    graph = nx.read_graphml(graphml, force_multigraph=True)
    assert len(graph) == 10  # 4 roles, 3 report versions, 3 rounds
    counts: dict[str, int] = {}
    for *_, d in graph.edges(data=True):
        counts[d["kind"]] = counts.get(d["kind"], 0) + 1
    assert counts == {"opinion": 4, "review": 3, "vote": 12, "revision": 2, "dissent": 4, "vote_transition": 8}
    dissents = {(r["round"], r["role"]): (r["taken_up"], r["overlap"]) for r in _rows(out / "dissents.csv")}
    # v1 → v2 adds {ct, scan, first}; v2 → v3 adds {lumbar, puncture, after}.
    assert dissents == {("1", "radiologist"): ("True", "1.0"), ("1", "neurologist"): ("False", "0.0"),
                        ("1", "cardiologist"): ("False", "0.0"), ("2", "neurologist"): ("True", "1.0")}
    # influence, persistence, conformity: radiology 1/1, run 1, took up → 0/1; neurology 1 of 2 taken up,
    # dissented rounds 1-2 → 2, its round-2 request was taken up before it accepted → 0/1; cardiology 0/1,
    # 1, accepted in round 2 with its echocardiogram not taken up → 1/1.
    assert _metrics(out) == {"radiology": ("1.0", "1.0", "0.0"), "neurology": ("0.5", "2.0", "0.0"),
                             "cardiology": ("0.0", "1.0", "1.0"), "internal_medicine": ("", "", "")}
    path = _rows(out / "change_paths.csv")
    assert [(r["to_version"], r["dissents"], r["caused_by"]) for r in path] == [
        ("1", "", "internist;neurologist;radiologist;cardiologist"),
        ("2", "neurologist;radiologist;cardiologist", "radiologist"), ("3", "neurologist", "neurologist")]


def test_a_scripted_judge_decides_and_its_judgement_is_kept(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    run = _simulate_varied(tmp_path / "sim")
    judge = f"scripted:{FIXTURES / 'judge.yaml'}"
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 0
    assert "4 by judge" in capsys.readouterr().out
    out = run / "analysis"
    (record,) = sorted(out.rglob("*.dissent-uptake.judgement.json"))
    judgement = json.loads(record.read_text(encoding="utf-8"))
    assert judgement["rubric"] == "dissent-uptake" and judgement["judge_model"] == "uptake-judge"
    scores = {i["detail"]["key"]: i["score"] for i in judgement["items"]}
    assert scores == {"r1:radiologist": 1, "r1:neurologist": 0, "r1:cardiologist": 1, "r2:neurologist": 0}
    assert len(judgement["calls"]) == 4 and all(c["stage"] == "judge" for c in judgement["calls"])
    methods = {(r["round"], r["role"]): (r["method"], r["taken_up"]) for r in _rows(out / "dissents.csv")}
    assert set(methods.values()) == {("judge", "True"), ("judge", "False")}
    # By the judge: radiology 1/1, 1, 0/1; neurology 0/2, 2, accepted in round 3 with the round-2 request
    # not taken up → 1/1; cardiology 1/1 (the judge said yes), 1, so its accept is no conformity → 0/1.
    assert _metrics(out) == {"radiology": ("1.0", "1.0", "0.0"), "neurology": ("0.0", "2.0", "1.0"),
                             "cardiology": ("1.0", "1.0", "0.0"), "internal_medicine": ("", "", "")}
    before = record.read_bytes()
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 0  # read back, not asked again
    assert record.read_bytes() == before
    capsys.readouterr()
    assert main(["analyze", str(run), "--judge-model", f"scripted:{PANEL}", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "never overwritten" in err and record.read_bytes() == before


def test_the_board_turn_graph_and_its_centralities_by_hand(tmp_path: Path) -> None:
    run = _cohort(tmp_path, [NSCLC], "--protocol", "board", "--modes", "agents",
                  "--model", f"scripted:{FIXTURES / 'board-panel.yaml'}")
    assert main(["analyze", str(run)]) == 0
    out = run / "analysis"
    (graphml,) = [p for p in out.rglob("*.graphml") if p.name != "coassignment.graphml"]
    graph = nx.read_graphml(graphml, force_multigraph=True)
    m, o, r, s, p = "Moderator", "Medical oncologist", "Radiologist", "Thoracic surgeon", "Pathologist"
    edges = {(u, v, d["kind"]): d["weight"] for u, v, d in graph.edges(data=True)}
    # Turns: 1 M→R, 2 R, 3 M→S, 4 S (on turn 2), 5 O passed (on 4), 6 R passed (on 5), 7 M→P, 8 P, 9 M.
    assert edges == {(m, r, "after"): 1, (r, m, "after"): 2, (m, s, "after"): 1, (s, o, "after"): 1,
                     (o, r, "after"): 1, (m, p, "after"): 1, (p, m, "after"): 1,
                     (m, r, "asked"): 1, (m, s, "asked"): 1, (m, p, "asked"): 1,
                     (m, o, "passed"): 1, (m, r, "passed"): 1,
                     (r, s, "responds"): 1, (s, o, "responds"): 1, (o, r, "responds"): 1}
    # Simple graph: M→R, M→S, M→P, M→O, R→M, R→S, S→O, O→R, P→M (n = 5). Degree: (in + out) / 4.
    # Betweenness, by the shortest paths through each node, over (n−1)(n−2) = 12: M lies on R→P, half of
    # R→O (R→M→O and R→S→O), S→P, O→P, P→R, P→S, P→O: 6.5; R on S→M, S→P, O→M, O→S, O→P: 5; O on S→R,
    # S→M, S→P: 3; S on the other half of R→O: 0.5; P on none.
    expected = {m: (6 / 4, 6.5 / 12), r: (4 / 4, 5 / 12), s: (3 / 4, 0.5 / 12), o: (3 / 4, 3 / 12), p: (2 / 4, 0.0)}
    rows = _by(_rows(out / "centralities.csv"), "speaker")
    for speaker, (degree, between) in expected.items():
        assert float(rows[speaker]["degree_centrality"]) == pytest.approx(degree, abs=1e-6)
        assert float(rows[speaker]["betweenness_centrality"]) == pytest.approx(between, abs=1e-6)
        assert graph.nodes[speaker]["betweenness_centrality"] == pytest.approx(between, abs=1e-6)
    assert rows[m]["category"] == "moderator" and rows[r]["turns"] == "2"


def test_the_coassignment_network_across_two_models(tmp_path: Path) -> None:
    run = _cohort(tmp_path, [MYOCARDITIS], "--formats", "free-form", "--model",
                  f"scripted:{FIXTURES / 'varied-panel.yaml'}", "--extra-model", f"scripted:{PANEL}")
    assert main(["analyze", str(run)]) == 0
    out = run / "analysis"
    network = nx.read_graphml(out / "coassignment.graphml")
    weights = {frozenset((a, b)): d["weight"] for a, b, d in network.edges(data=True)}
    im, ne, ra, ca = "internal_medicine", "neurology", "radiology", "cardiology"
    # Panels: {IM, NE, RA, CA} and {IM, NE, RA}.
    assert weights == {frozenset((im, ne)): 2, frozenset((im, ra)): 2, frozenset((ne, ra)): 2,
                       frozenset((im, ca)): 1, frozenset((ne, ca)): 1, frozenset((ra, ca)): 1}
    nodes = _by(_rows(out / "coassignment_nodes.csv"), "category")
    # Fig. 2c's denominators: 2 primary assignments (both IM), 5 supporting (NE 2, RA 2, CA 1).
    assert (nodes[im]["primary"], nodes[im]["primary_share"], nodes[im]["supporting"]) == ("2", "1.0", "0")
    assert [(nodes[c]["supporting"], nodes[c]["supporting_share"]) for c in (ne, ra, ca)] == [
        ("2", "0.4"), ("2", "0.4"), ("1", "0.2")]
    assert nodes[ca]["weighted_degree"] == "3" and nodes[ne]["weighted_degree"] == "5"
    assert (out / "coassignment.png").is_file()


def test_the_arm_page_links_the_graph_picture(tmp_path: Path) -> None:
    run = _cohort(tmp_path, [MYOCARDITIS], "--model", f"scripted:{PANEL}")
    assert main(["view", str(run)]) == 0
    (page,) = sorted((run / "view").rglob("*.free-form.html"))
    assert "deliberation graph" not in page.read_text(encoding="utf-8")
    assert main(["analyze", str(run)]) == 0
    assert main(["view", str(run)]) == 0
    html = page.read_text(encoding="utf-8")
    href = html.split('">deliberation graph</a>')[0].rsplit('<a href="', 1)[1]
    assert href.startswith("../") and href.endswith("diagnostic-myocarditis.free-form.png")
    assert (page.parent / href).resolve().is_file()


def test_word_overlap_rule() -> None:
    assert content_words("Please add a CT scan of the chest") == {"ct", "scan", "chest"}
    assert overlap_share("add a CT scan of the chest", "Report: A.", "Report: A; chest CT.") == pytest.approx(2 / 3,
                                                                                                              abs=1e-4)
    assert overlap_share("add CT", "Report: CT pending.", "Report: CT done.") == 0.0  # CT was already there
    assert overlap_share("add the", "x", "the") == 0.0  # nothing but stop words


@pytest.mark.parametrize("make", ["missing", "empty", "broken"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str) -> None:
    run = tmp_path / "run"
    if make != "missing":
        run.mkdir()
    if make == "broken":
        (run / "x.trace.json").write_text("{not json", encoding="utf-8")
    assert main(["analyze", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(run) in err
    assert not (run / "analysis").exists()


def test_graphml_is_valid_xml_whatever_the_role_labels_hold(tmp_path: Path) -> None:
    """A role label and a requested change with characters XML forbids (control characters): every GraphML
    file analyze writes reads back with networkx (an XML parser), each such character written as its escape;
    DEL, which XML allows, is kept."""
    text = (FIXTURES / "varied-panel.yaml").read_text(encoding="utf-8")
    text = text.replace("{label: Neurologist,", '{label: "Neuro\\x01logist \\x1b[31mon call\\x7f",')
    text = text.replace("requested_change: add a CT scan}", 'requested_change: "add a CT\\x0b scan"}')
    panel = tmp_path / "panel.yaml"
    panel.write_text(text, encoding="utf-8")
    assert main(["simulate", "--case", str(MYOCARDITIS), "--format", "free-form", "--no-cache", "--out",
                 str(tmp_path / "sim"), "--model", f"scripted:{panel}"]) == 0
    (run,) = (tmp_path / "sim").iterdir()
    assert main(["analyze", str(run)]) == 0
    written = sorted((run / "analysis").rglob("*.graphml"))
    assert [p.name for p in written] == ["coassignment.graphml", "diagnostic-myocarditis.free-form.graphml"]
    strings: list[str] = []
    for path in written:
        graph = nx.read_graphml(path, force_multigraph=True)
        strings += [str(n) for n in graph] + [str(v) for _, d in graph.nodes(data=True) for v in d.values()]
        strings += [str(v) for *_, d in graph.edges(data=True) for v in d.values()]
    assert "Neuro\\x01logist \\x1b[31mon call\x7f" in strings
    assert "add a CT\\x0b scan" in strings
    assert not [s for s in strings if any(ord(c) < 0x20 and c not in "\t\n\r" for c in s)]


@pytest.mark.parametrize("value", ["97.0", "-5.0", "NaN"])
def test_a_dissent_uptake_judgement_edited_off_its_scale_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    """analyze reads its own uptake judgements back (scale 0-1) through the checked reader: a score edited by hand
    is one line naming the file and field, exit 2, and the analysis is not rewritten."""
    run = _simulate_varied(tmp_path / "sim")
    judge = f"scripted:{FIXTURES / 'judge.yaml'}"
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 0
    (record,) = sorted((run / "analysis").rglob("*.dissent-uptake.judgement.json"))
    data = json.loads(record.read_text(encoding="utf-8"))
    data["items"][1]["score"] = "SENTINEL"
    record.write_text(json.dumps(data, indent=2).replace('"SENTINEL"', value), encoding="utf-8")
    before = {p: p.read_bytes() for p in (run / "analysis").rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["analyze", str(run), "--judge-model", judge, "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{record}: items.1.score: " in err
    assert ("not a finite number" in err) if value == "NaN" else (
        "is not a score of rubric dissent-uptake (scale 0, 1; null when not evaluable)" in err)
    assert {p: p.read_bytes() for p in (run / "analysis").rglob("*") if p.is_file()} == before


# ---- the files analyze writes, its reruns, failed judge calls, and the metrics' edge cases ------------------------


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
    failing = f"scripted:{FIXTURES / 'failing-judge.yaml'}"
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
