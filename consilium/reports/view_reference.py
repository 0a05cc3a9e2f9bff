"""The case's reference (judge-only: diagnosis, differential, conclusion, board decisions, …) beside what the
arm concluded, as its protocol names it (:meth:`~consilium.graphs.base.Protocol.components` and
:meth:`~consilium.graphs.base.Protocol.leading_diagnosis`), so a reader sees both at once."""

from __future__ import annotations

from consilium.cases import Case
from consilium.cases.reference import Reference
from consilium.graphs.registry import protocol_of
from consilium.reports.view_html import esc, pre, table
from consilium.traces.schema import TraceBase

__all__ = ["concluded", "reference_html", "reference_section"]

_DIMENSIONS = {"therapy": "Therapy", "surgery": "Surgery", "next_action": "Next action",
               "clinical_trial": "Clinical trial"}


def reference_html(reference: Reference | None) -> str:
    """Everything the reference holds, each part under its own heading; a case without one says so."""
    if reference is None:
        return "<p class=\"muted\">This case has no reference.</p>"
    parts = []
    if reference.diagnosis:
        parts.append("<h5>Diagnosis</h5>" + pre(reference.diagnosis))
    if reference.differential:
        parts.append("<h5>Differential</h5>" + pre("\n".join(f"{n}. {d}" for n, d in
                                                              enumerate(reference.differential, 1))))
    if reference.conclusion:
        parts.append("<h5>Conclusion</h5>" + pre(reference.conclusion))
    if reference.decisions is not None:
        parts.append("<h5>Decisions</h5>" + table(("dimension", "reference decision"), [
            (label, getattr(reference.decisions, name) or "out of scope") for name, label in _DIMENSIONS.items()]))
    if reference.rubric:
        parts.append("<h5>Rubric</h5>" + table(("id", "kind", "weight", "criterion"),
                                               [(c.id, c.kind, f"{c.weight:g}", c.text) for c in reference.rubric]))
    if reference.answers:
        parts.append("<h5>Reference answers</h5>" + table(("question", "role", "answer"),
                                                          [(a.question, a.role or "any", a.answer)
                                                           for a in reference.answers]))
    return "".join(parts) or "<p class=\"muted\">The reference is empty.</p>"


#: The components that are the arm's own conclusion; a protocol with none of them shows all its components.
_CONCLUDING = ("conclusion", "differential", "answer")


def concluded(trace: TraceBase) -> dict[str, str]:
    """What the arm concluded: its leading diagnosis (when its protocol names one), then its conclusion,
    differential or answer (the components the judges score; the primary role's own opinion is on the
    page below, not here). A protocol whose components have other names shows them all."""
    protocol = protocol_of(trace)
    texts: dict[str, str] = {}
    leading = protocol.leading_diagnosis(trace)
    if leading:
        texts["leading diagnosis"] = leading
    components = protocol.components(trace)
    own = {name: components[name] for name in _CONCLUDING if name in components}
    texts.update(own or components)
    return texts


def reference_section(case: Case, trace: TraceBase) -> str:
    """Two columns: the reference, and what the arm concluded."""
    texts = concluded(trace)
    ours = "".join(f"<h5>{esc(name.replace('_', ' ').capitalize())}</h5>" + pre(text) for name, text in texts.items())
    ours = ours or f"<p class=\"muted\">Nothing concluded (status {esc(trace.status)}).</p>"
    return (f"<h3>Reference and conclusion</h3><div class=\"side\"><div><h4>Reference (judge-only)</h4>"
            f"{reference_html(case.reference)}</div><div><h4>What the {esc(protocol_of(trace).name)} concluded</h4>"
            f"{ours}</div></div>")
