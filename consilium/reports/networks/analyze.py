"""``consilium analyze RUN_DIR``: every arm's graph, the cohort's co-assignment network, the tables and the
pictures (docs/networks.md). Every trace is read and checked before anything is written.

Files, under the analysis folder (``RUN_DIR/analysis`` by default), each arm's named like its trace's path
under RUN_DIR without ``.trace.json`` (``arms/<model>/<shard>/<case>.<variant>``):

* ``<arm>.graphml`` and ``<arm>.png`` (+ ``.pdf``): the deliberation graph of a consilium arm, the
  turn-taking graph of a board meeting; ``<arm>.dissent-uptake.judgement.json`` when a judge decided uptake;
* ``coassignment.graphml``, ``coassignment.png``; ``categories.csv``, ``change_paths.csv``, ``dissents.csv``,
  ``centralities.csv``, ``coassignment_nodes.csv``, ``coassignment_edges.csv``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from consilium import aio
from consilium.agents.records import AssignedRole
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.arms import require
from consilium.graphs.board.trace import BoardTrace
from consilium.graphs.consilium.trace import Trace
from consilium.graphs.registry import read_trace
from consilium.reports.consilium.data import replicate_key
from consilium.reports.consilium.files import read_arms
from consilium.reports.networks.coassign import coassignment_graph, edge_rows, node_rows
from consilium.reports.networks.deliberation import change_path, deliberation_graph
from consilium.reports.networks.draw import draw_coassignment, draw_deliberation, draw_turns
from consilium.reports.networks.graphml import graphml_text
from consilium.reports.networks.judging import RUBRIC_NAME, UptakeJudge, judge_arm, uptake_rubric
from consilium.reports.networks.metrics import CATEGORY_COLUMNS, category_metrics
from consilium.reports.networks.paths import ANALYSIS_FOLDER, arm_stem
from consilium.reports.networks.stamp import check_out, check_stamp, stamp_of, write_stamp
from consilium.reports.networks.turns import turn_graph
from consilium.reports.networks.uptake import Uptake, dissents_of, word_overlap
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import trace_files
from consilium.traces.schema import TraceBase

__all__ = ["Analysis", "analyze", "graphml_text"]

_PATH_COLUMNS = ["arm", "case_id", "variant", "model", "step", "from_version", "to_version", "round", "dissents",
                 "caused_by", "change_summary"]
_DISSENT_COLUMNS = ["arm", "case_id", "variant", "model", "round", "role", "category", "requested_change",
                    "from_version", "to_version", "taken_up", "method", "overlap", "rationale"]
_CENTRALITY_COLUMNS = ["arm", "case_id", "variant", "model", "speaker", "category", "turns", "degree_centrality",
                       "betweenness_centrality"]


@dataclass
class Analysis:
    """What one ``analyze`` run wrote and counted."""

    out: Path
    arms: int = 0
    skipped: list[str] = field(default_factory=list)  # arms not analysed: not completed
    other: list[str] = field(default_factory=list)  # arms not analysed: neither a consilium nor a board meeting
    files: list[Path] = field(default_factory=list)
    methods: dict[str, int] = field(default_factory=dict)  # how each dissent's uptake was decided
    judge_failed: int = 0  # dissents the judge gave no verdict on (word overlap decided them)


def _trace_files(run_dir: Path, out: Path) -> list[tuple[Path, str]]:
    """Every trace with its replicate ("" outside a cohort with replicates)."""
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    folder = RunFolder(run_dir)
    if folder.is_cohort:
        rows = [r for r in read_arms(run_dir, check=False) if r.trace]
        files = [(folder.trace_location(r.trace), replicate_key(r)) for r in rows]
        missing = [f for f, _ in files if not f.is_file()]
        if missing:
            raise UserError(f"{folder.arms_csv}: trace: {missing[0]}: no such trace file")
    else:
        inside = out.resolve()
        files = sorted((p, "") for p in trace_files(run_dir) if inside not in p.resolve().parents)
    if not files:
        raise UserError(f"{run_dir}: no traces (no arms.csv naming any, and no *.trace.json in the folder)")
    return files


def _assignment(trace: TraceBase, replicate: str) -> tuple[str, str, str, str]:
    """What makes a role assignment distinct: the case, model, replicate and its request's hash (a
    consilium's formats, and a cohort's protocols, share one assignment; each is counted once)."""
    calls = getattr(trace, "calls", None) or []
    hashes = [c.request_hash for c in calls if c.stage == "role_assignment"]
    return trace.case_id, trace.model, replicate, hashes[0] if hashes else trace.run_id


def _csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> Path:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: "" if r.get(c) is None else r[c] for c in columns} for r in rows)
    return write_text_atomic(path, buffer.getvalue())


async def _judge_all(arms: list[tuple[str, Path, Trace]], out: Path, judge: UptakeJudge,
                     result: Analysis, force: bool) -> dict[str, list[Uptake]]:
    """The judge's decisions for every arm with a dissent a revision followed, one arm at a time (its
    dissents at once); the judge's model is closed at the end."""
    decided = {}
    try:
        for stem, file, trace in arms:
            dissents = dissents_of(trace)
            if any(d.after is not None for d in dissents):
                record = out / f"{stem}.{RUBRIC_NAME}.judgement.json"
                decided[stem] = await judge_arm(trace, file, dissents, judge, record, force)
                result.files.append(record)
                result.judge_failed += sum(d.after is not None and u.method != "judge"
                                           for d, u in zip(dissents, decided[stem], strict=True))
    finally:
        await judge.model.aclose()
    return decided


def _consilium_arm(trace: Trace, stem: str, decided: dict[str, list[Uptake]],
                   result: Analysis) -> tuple[nx.MultiDiGraph, list[dict[str, Any]], list[dict[str, Any]]]:
    dissents = dissents_of(trace)
    uptakes = decided.get(stem) or [word_overlap(d) for d in dissents]
    graph = deliberation_graph(trace, dissents, uptakes)
    arm = {"arm": stem, "case_id": trace.case_id, "variant": trace.format, "model": trace.model}
    categories = {r.id: r.category for r in trace.roles}
    rows = [{**arm, "round": d.round, "role": d.role, "category": categories.get(d.role, "other"),
             "requested_change": d.request, "from_version": d.before.version,
             "to_version": d.after.version if d.after else "", "taken_up": u.taken_up, "method": u.method,
             "overlap": u.overlap, "rationale": u.rationale} for d, u in zip(dissents, uptakes, strict=True)]
    for u in uptakes:
        result.methods[u.method] = result.methods.get(u.method, 0) + 1
    path = [{**arm, "step": c.step, "from_version": c.from_version or "opinions", "to_version": c.to_version,
             "round": c.round, "dissents": ";".join(c.dissents), "caused_by": ";".join(c.caused_by),
             "change_summary": c.change_summary} for c in change_path(trace, dissents, uptakes)]
    return graph, rows, path


def analyze(run_dir: Path, out: Path | None = None, judge: UptakeJudge | None = None,
            progress: Callable[[str], None] | None = None, force: bool = False) -> Analysis:
    """Analyse every arm under ``run_dir`` into ``out`` (default ``RUN_DIR/analysis``); with ``judge``, its
    model decides uptake (and is closed when it has), else the word-overlap rule does. A folder holding
    another analysis (stamp.py) is refused unless ``force``."""
    out = out or run_dir / ANALYSIS_FOLDER
    check_out(run_dir, out)
    files = _trace_files(run_dir, out)
    traces = [(f, read_trace(f), replicate) for f, replicate in files]  # all checked before writing
    require([str(getattr(t, "kind", "")) for _, t, _ in traces], "networks", f"analyze {run_dir}")
    stamp = stamp_of(run_dir, judge.judge_model if judge else None, uptake_rubric().version if judge else None)
    try:
        previous = check_stamp(out, stamp, force)
    except UserError:
        if judge is not None:
            aio.run(judge.model.aclose())
        raise
    result = Analysis(out)
    graphs: list[nx.MultiDiGraph] = []
    panels: list[list[AssignedRole]] = []
    dissent_rows: list[dict[str, Any]] = []
    path_rows: list[dict[str, Any]] = []
    centrality_rows: list[dict[str, Any]] = []
    consilium_arms = [(arm_stem(run_dir, f), f, t) for f, t, _ in traces
                      if isinstance(t, Trace) and t.status == "completed"]
    decided = aio.run(_judge_all(consilium_arms, out, judge, result, force)) if judge is not None else {}
    assignments: set[tuple[str, str, str, str]] = set()
    for file, trace, replicate in traces:
        stem = arm_stem(run_dir, file)
        if trace.status != "completed":
            result.skipped.append(stem)
            continue
        if not isinstance(trace, Trace | BoardTrace):
            result.other.append(stem)
            continue
        if trace.roles and _assignment(trace, replicate) not in assignments:
            assignments.add(_assignment(trace, replicate))
            panels.append(list(trace.roles))
        if isinstance(trace, Trace):
            graph, rows, path = _consilium_arm(trace, stem, decided, result)
            graphs.append(graph)
            dissent_rows += rows
            path_rows += path
            picture = draw_deliberation(graph, (out / stem).parent, Path(stem).name)
        else:
            graph = turn_graph(trace)
            centrality_rows += [{"arm": stem, "case_id": trace.case_id, "variant": graph.graph["variant"],
                                 "model": trace.model, "speaker": n, **{c: d[c] for c in _CENTRALITY_COLUMNS[5:]}}
                                for n, d in graph.nodes(data=True)]
            picture = draw_turns(graph, (out / stem).parent, Path(stem).name)
        result.arms += 1
        result.files += [write_text_atomic(out / f"{stem}.graphml", graphml_text(graph)), picture]
        if progress is not None:
            progress(stem)
    network = coassignment_graph(panels)
    result.files += [write_text_atomic(out / "coassignment.graphml", graphml_text(network)),
                     _csv(out / "categories.csv", CATEGORY_COLUMNS, category_metrics(graphs)),
                     _csv(out / "change_paths.csv", _PATH_COLUMNS, path_rows),
                     _csv(out / "dissents.csv", _DISSENT_COLUMNS, dissent_rows),
                     _csv(out / "centralities.csv", _CENTRALITY_COLUMNS, centrality_rows),
                     _csv(out / "coassignment_nodes.csv", list(node_rows(network)[0]) if len(network) else
                          ["category"], node_rows(network)),
                     _csv(out / "coassignment_edges.csv", ["category_a", "category_b", "arms"], edge_rows(network))]
    if len(network):
        result.files.append(draw_coassignment(network, out, "coassignment"))
    write_stamp(out, stamp, result.files, previous)
    return result
