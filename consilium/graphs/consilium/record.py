"""The consilium's whole record, as the whole-case criteria are judged on it: the assigned panel, the
pre-consilium opinions, each report version and the review rounds (ai-consilium.txt, Table 29, "Whole-case
assessment" row, L260; anchors Tables 41-43, L376-405), each stage its own section."""

from __future__ import annotations

from consilium.graphs.consilium.trace import Trace
from consilium.graphs.record import RecordSection

__all__ = ["whole_case_record"]

#: How the run stopped, in the paper's words (ai-consilium.txt, Figure 4 caption, L63).
_STOPS = {"consensus": "consensus, every member accepting the reviewed report",
          "no_change": "no substantive change, the moderator finding no further clinically meaningful revision",
          "round_limit": "the round limit, with dissent persisting through the last review round"}


def _vote_line(label: str, vote: str, reason: str, change: str | None) -> str:
    line = f"- {label}: {vote}. Reason: {reason.strip()}"
    return f"{line.rstrip('.')}. Requested change: {change.strip()}" if change and change.strip() else line


def whole_case_record(trace: Trace) -> list[RecordSection]:
    """The panel, every pre-consilium opinion, and each report version followed by its review round, in
    the order they happened; none for a run without a final report."""
    final = trace.final_report
    if final is None:
        return []
    roles = {r.id: r for r in trace.roles}
    order = {r.id: n for n, r in enumerate(trace.roles)}  # opinions in panel order, the primary first

    def who(role_id: str) -> str:
        role = roles.get(role_id)
        return f"{role.label} ({'primary' if role.primary else 'supporting'})" if role else role_id

    shared = " The roles were assigned in the other format's run of this case." if trace.role_assignment_shared else ""
    panel = "\n".join(f"- {r.label}: {'primary' if r.primary else 'supporting'} specialist "
                      f"(catalogue category: {r.category_name}). Justification: {r.justification.strip()}"
                      for r in trace.roles)
    head = f"The panel assigned to this case ({len(trace.roles)} specialists).{shared}"
    stages = [RecordSection("panel", "panel", head, panel, None)]
    stages += [RecordSection("opinion", f"opinion of {who(o.role)}", f"Pre-consilium opinion of {who(o.role)}:",
                     o.text.strip(), 0) for o in sorted(trace.opinions, key=lambda o: order.get(o.role, len(order)))]
    versions = sorted(trace.reports, key=lambda r: r.version)
    last = versions[-1].version if versions else final.version
    for group, report in enumerate(versions, 1):
        made = ("the moderator's initial synthesis" if report.version == 1
                else f"revised after review round {report.round}")
        change = f"\nChange summary: {report.change_summary.strip()}" if report.change_summary else ""
        if report.version == final.version:
            stop = f" The consilium stopped at {_STOPS[trace.stop_reason]}." if trace.stop_reason else ""
            stages.append(RecordSection("report_version", f"report version {report.version}",
                                f"Report version {report.version} of {last}, {made}: the final report, given "
                                f"whole in the candidate section.{stop}{change}", "", None))
        else:
            stages.append(RecordSection("report_version", f"report version {report.version}",
                                f"Report version {report.version} of {last}, {made}:{change}",
                                report.text.strip(), group))
        for rnd in (r for r in trace.rounds if r.report_version == report.version):
            dissent = sum(v.vote == "dissent" for v in rnd.votes)
            votes = "\n".join(_vote_line(who(v.role), v.vote, v.reason, v.requested_change) for v in rnd.votes)
            stages.append(RecordSection("review_round", f"review round {rnd.round}",
                                f"Review round {rnd.round}, on report version {rnd.report_version}: {dissent} of "
                                f"{len(rnd.votes)} dissent (dissent fraction {rnd.dissent_fraction:.2f}).",
                                votes, len(versions) + 1))
    return stages
