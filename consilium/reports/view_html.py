"""The viewer's HTML primitives: escaping, plain tables, the page shell and its CSS.

Every text goes through :func:`esc` (quotes included); a page has no script, no event attribute and a
Content-Security-Policy that loads nothing, so case or model text such as ``<script>`` stays inert.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from html import escape
from pathlib import Path
from urllib.parse import quote

from consilium.errors import UserError
from consilium.fileio import in_the_way

__all__ = ["GENERATOR", "check_ours", "esc", "link", "page", "pre", "stamped", "table"]

#: The mark every page ``consilium view`` writes carries, so that re-running it replaces its own pages only.
GENERATOR = '<meta name="generator" content="consilium view">'
#: The cohort view's second mark: the run its pages show, so that a view of another run is never replaced.
_RUN_MARK = re.compile(rb'<meta name="consilium-run" content="([^"]*)">')

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
details{border:1px solid #ccc;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
summary{cursor:pointer;font-weight:600}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.6rem;border-radius:4px}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;
vertical-align:top}
.accept{color:#1a7f37}.dissent{color:#b42318}.diff_add{background:#e6ffec}.diff_sub{background:#ffebe9}
.diff_chg{background:#fff5b1}
.failed{color:#b42318;font-weight:600}.muted{color:#666}nav{margin:.5rem 0 1rem}nav a{margin-right:1rem}
.side{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.side>div{border:1px solid #ccc;border-radius:6px;
padding:.5rem 1rem}td pre{margin:0;max-height:24rem;overflow:auto}
"""


def esc(value: object) -> str:
    """Any text as HTML, quotes included (so it is inert in an attribute too)."""
    return escape(str(value), quote=True)


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def table(headers: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A table of plain cells, every one escaped."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def link(from_page: str, to_page: str, text: str) -> str:
    """A relative link between two pages of a view folder (posix paths from its root)."""
    href = posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")
    return f"<a href=\"{esc(quote(href))}\">{esc(text)}</a>"


def page(title: str, body: str) -> str:
    """A whole page: no script, a Content-Security-Policy that loads nothing, the CSS inline."""
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">{GENERATOR}<title>{esc(title)}</title>"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<style>{_CSS}</style></head><body>{body}</body></html>\n")


def stamped(html: str, run: str) -> str:
    """A page of a cohort's view, marked with the run it shows."""
    return html.replace(GENERATOR, f'{GENERATOR}<meta name="consilium-run" content="{esc(run)}">', 1)


def _page_mark(path: Path) -> dict[str, str] | None:
    """A page's mark: None without the viewer's generator mark; the run it shows, when it names one."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    if GENERATOR.encode("utf-8") not in head:
        return None
    found = _RUN_MARK.search(head)
    return {} if found is None else {"run": found.group(1).decode("utf-8", "replace")}


def check_ours(path: Path, run: str | None = None) -> None:
    """Refuse to replace a file the viewer did not write (one without its generator mark) or, given ``run``,
    a page of another run's view (its run mark names another run; a page with no run mark is ours):
    :func:`consilium.fileio.in_the_way`."""
    ours = {} if run is None else {"run": esc(run)}
    for found in in_the_way([path], ours, _page_mark):
        if found.why == "not a file":
            raise UserError(f"{path}: not a page `consilium view` wrote (a link or a folder); nothing was written "
                            "(move it, or give --out another path)")
        if found.why == "unreadable":
            error = found.error
            raise UserError(f"{path}: not readable ({getattr(error, 'strerror', None) or error})")
        if found.why == "unmarked":
            raise UserError(f"{path}: not a page `consilium view` wrote; nothing was written "
                            "(move it, or give --out another path)")
        other = (found.mark or {}).get("run")
        raise UserError(f"{path}: a page of the view of another run ({other}); nothing was written "
                        "(give --out another folder)")
