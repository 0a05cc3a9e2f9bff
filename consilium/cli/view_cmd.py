"""``consilium view RUN_DIR|TRACE``: static HTML to read a run: for a cohort folder (one with arms.csv) an
index, a page per case and a page per arm in ``RUN_DIR/view/``; otherwise one self-contained file. The pages
of a partial cohort (arms missing from its plan, or not completed) are written and the exit status is 1."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from urllib.parse import quote

from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.registry import read_trace
from consilium.reports.networks.paths import ANALYSIS_FOLDER, arm_stem
from consilium.reports.partial import completeness_of
from consilium.reports.view_cohort import arm_judgements
from consilium.reports.view_html import check_ours, esc, page
from consilium.reports.view_site import write_cohort_view
from consilium.reports.viewer import arm_section
from consilium.runfolder.layout import trace_files

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("view", help="write a static HTML view of a run or a trace")
    parser.add_argument("path", type=Path, metavar="RUN_DIR|TRACE")
    parser.add_argument("--out", type=Path, default=None,
                        help="HTML file (default: view.html in the run folder, <trace>.view.html for a trace); for "
                             "a cohort folder, the folder of its pages (default: RUN_DIR/view/)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path: Path = args.path
    if path.is_dir() and (path / "arms.csv").is_file():
        done = completeness_of(path)
        index = write_cohort_view(path, args.out or path / "view", done)
        if done is not None and done.partial:  # the index page says so too, and lists the missing arms
            print(f"partial cohort: {done.summary()}; {len(done.missing)} planned arms missing (listed on the index)")
        print(index)
        return 1 if done is not None and done.partial else 0
    if path.is_dir():
        traces = trace_files(path)  # the run's own traces, not a run's nested in it
        out = args.out or path / "view.html"
    elif path.is_file():
        traces = [path]
        out = args.out or path.with_name(path.name.removesuffix(".trace.json") + ".view.html")
    else:
        raise UserError(f"{path}: no such run folder or trace")
    if not traces:
        raise UserError(f"{path}: no *.trace.json files")
    if out.suffix.lower() == ".json":
        raise UserError(f"--out {out}: a .json file is a trace or a record, not a page (give an .html file)")
    check_ours(out)  # a page this command wrote is replaced; any other file (a trace, a report) is refused
    title = f"consilium: {path.name}"
    body = [f"<h1>{esc(title)}</h1>"]  # render_page's, with a link to each arm's graph picture
    for trace_path in traces:
        body += [arm_section(str(trace_path), read_trace(trace_path), arm_judgements(trace_path)),
                 _graph_link(path if path.is_dir() else path.parent, trace_path, out)]
    written = write_text_atomic(out, page(title, "".join(body)))
    print(written)
    return 0


def _graph_link(run_dir: Path, trace: Path, out: Path) -> str:
    """A link to the picture ``consilium analyze`` drew of the trace's arm in ``RUN_DIR/analysis`` (the
    default --out; docs/networks.md), if it is there."""
    picture = run_dir / ANALYSIS_FOLDER / f"{arm_stem(run_dir, trace)}.png"
    if not picture.is_file():
        return ""
    href = Path(os.path.relpath(picture.resolve(), out.parent.resolve())).as_posix()
    return f"<p><a href=\"{esc(quote(href))}\">deliberation graph</a></p>"
