"""The deliberation graph of one consilium arm (docs/networks.md): roles, report versions and review rounds
as nodes; opinions, reviews, votes, dissents, revisions and vote transitions as typed edges of a
:class:`networkx.MultiDiGraph`, every attribute a string, number or boolean so that GraphML can hold it.
Every edge key is unique in its graph (``vote:r2:radiologist``): GraphML writes the key as the edge id, and
Gephi refuses a file whose edge ids repeat."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from consilium.graphs.consilium.trace import Trace
from consilium.reports.networks.uptake import Dissent, Uptake

__all__ = ["Change", "change_path", "deliberation_graph", "report_node", "role_node", "round_node"]


def role_node(role: str) -> str:
    return f"role:{role}"


def report_node(version: int) -> str:
    return f"report:v{version}"


def round_node(number: int) -> str:
    return f"round:{number}"


def deliberation_graph(trace: Trace, dissents: list[Dissent], uptakes: list[Uptake]) -> nx.MultiDiGraph:
    """The arm's graph. Edge kinds (``kind``):

    * ``opinion``: role → report v1 (its pre-consilium opinion went into the synthesis);
    * ``review``: report vN → round r (the round reviewed that version);
    * ``vote``: role → round r, with ``vote`` (accept / dissent), ``reason`` and ``requested_change``;
    * ``dissent``: role → the report version its round's revision made, with ``taken_up``, ``method``
      (judge / word_overlap) and ``overlap``; a dissent no revision followed has only its vote edge;
    * ``revision``: report vN → vN+1, with ``round`` and ``change_summary``;
    * ``vote_transition``: round r → round r+1, one per role (key ``transition:r<r>:<role>``), ``before`` and ``after``.
    """
    graph = nx.MultiDiGraph(case_id=trace.case_id, variant=trace.format, model=trace.model, run_id=trace.run_id,
                            stop_reason=trace.stop_reason or "", status=trace.status)
    for role in trace.roles:
        graph.add_node(role_node(role.id), kind="role", label=role.label, category=role.category,
                       category_name=role.category_name, primary=role.primary)
    final = trace.final_report.version if trace.final_report else 0
    for report in trace.reports:
        graph.add_node(report_node(report.version), kind="report", label=f"v{report.version}", version=report.version,
                       round=report.round, change_summary=report.change_summary or "", final=report.version == final)
    for opinion in trace.opinions:
        if trace.reports:
            graph.add_edge(role_node(opinion.role), report_node(1), key=f"opinion:{opinion.role}",
                           kind="opinion")
    for rnd in trace.rounds:
        graph.add_node(round_node(rnd.round), kind="round", label=f"R{rnd.round}", round=rnd.round,
                       report_version=rnd.report_version, dissent_fraction=rnd.dissent_fraction)
        graph.add_edge(report_node(rnd.report_version), round_node(rnd.round), key=f"review:r{rnd.round}",
                       kind="review")
        for vote in rnd.votes:
            graph.add_edge(role_node(vote.role), round_node(rnd.round), key=f"vote:r{rnd.round}:{vote.role}",
                           kind="vote", vote=vote.vote, reason=vote.reason,
                           requested_change=vote.requested_change or "")
    for report in trace.reports:
        if report.version > 1:
            graph.add_edge(report_node(report.version - 1), report_node(report.version),
                           key=f"revision:v{report.version}",
                           kind="revision", round=report.round, change_summary=report.change_summary or "")
    for dissent, uptake in zip(dissents, uptakes, strict=True):
        if dissent.after is not None:
            graph.add_edge(role_node(dissent.role), report_node(dissent.after.version),
                           key=f"dissent:r{dissent.round}:{dissent.role}", kind="dissent", round=dissent.round,
                           requested_change=dissent.request,
                           taken_up=uptake.taken_up, method=uptake.method, overlap=uptake.overlap,
                           rationale=uptake.rationale)
    votes = {(rnd.round, v.role): v.vote for rnd in trace.rounds for v in rnd.votes}
    for (number, voter), cast in sorted(votes.items()):
        following = votes.get((number + 1, voter))
        if following is not None:
            graph.add_edge(round_node(number), round_node(number + 1), key=f"transition:r{number}:{voter}",
                           kind="vote_transition", role=voter, before=cast, after=following)
    return graph


@dataclass(frozen=True)
class Change:
    """One step of an arm's change path: the report version it led from and to, and why."""

    step: int
    from_version: int  # 0: the opinions
    to_version: int
    round: int
    dissents: tuple[str, ...]  # the roles that dissented in the round before it
    caused_by: tuple[str, ...]  # where the version came from: the opinions' roles (v1), else the dissenters
    # whose requested change it took up
    change_summary: str


def change_path(trace: Trace, dissents: list[Dissent], uptakes: list[Uptake]) -> list[Change]:
    """From the opinions (in panel order) to report v1, then each revision with the dissents that caused it."""
    if not trace.reports:
        return []
    opined = {o.role for o in trace.opinions}
    steps = [Change(0, 0, 1, 0, (), tuple(r.id for r in trace.roles if r.id in opined),
                    "initial synthesis of the opinions")]
    for report in sorted(trace.reports, key=lambda r: r.version)[1:]:
        round_dissents = [(d, u) for d, u in zip(dissents, uptakes, strict=True)
                          if d.after is not None and d.after.version == report.version]
        steps.append(Change(len(steps), report.version - 1, report.version, report.round,
                            tuple(d.role for d, _ in round_dissents),
                            tuple(d.role for d, u in round_dissents if u.taken_up), report.change_summary or ""))
    return steps
