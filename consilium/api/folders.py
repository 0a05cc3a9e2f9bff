"""The library's readers of a run folder that write beside it: ``export`` (Inspect AI logs, JSONL / Parquet
tables), ``view`` (static HTML), ``jury`` (how a jury's judges agree), ``merge_shards`` (a sharded cohort
joined) and ``schema`` (a file format's JSON schema): what ``consilium export``, ``view``, ``jury``, ``cohort
merge`` and ``schema`` do, returned as typed results that the commands print (docs/api.md)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from consilium.api.options import as_path, options_of
from consilium.api.sync import off_loop, sync_twin
from consilium.errors import UserError

__all__ = ["ExportOptions", "Exported", "JuryOptions", "JuryReport", "MergeOptions", "Merged", "ViewOptions",
           "Viewed", "aexport", "ajury", "amerge_shards", "aschema", "aview", "export", "jury", "merge_shards",
           "schema", "schemas"]


@dataclass(frozen=True)
class ExportOptions:
    """``consilium export``'s options: what to write (``inspect``, ``jsonl``, ``parquet``), where (default
    ``RUN_DIR/export``), the Inspect log's file format, and whether to replace export files that exist."""

    to: Literal["inspect", "jsonl", "parquet"] = "jsonl"
    out: Path | None = None
    inspect_format: Literal["eval", "json"] = "eval"
    force: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))
        if self.to not in ("inspect", "jsonl", "parquet"):
            raise UserError(f"to: {self.to!r}: export writes inspect, jsonl or parquet")


@dataclass(frozen=True)
class Exported:
    """The files written, and the partial cohort's note (None: complete) — its rows are the finished arms'."""

    files: list[Path]
    partial_note: str | None


async def aexport(run_dir: str | Path, options: ExportOptions | None = None, **changes: Any) -> Exported:
    """``consilium export RUN_DIR --to …``: a run folder as Inspect AI eval logs or data tables (docs/export.md)."""
    return await off_loop(_export, Path(run_dir), options_of(ExportOptions, options, changes))


def _export(run_dir: Path, options: ExportOptions) -> Exported:
    from consilium.export import export_run
    from consilium.reports.partial import partial_note

    written = export_run(run_dir, options.to, options.out, force=options.force,
                         inspect_format=options.inspect_format)
    return Exported(files=list(written), partial_note=partial_note(run_dir))


export = sync_twin(aexport)


@dataclass(frozen=True)
class ViewOptions:
    """``consilium view``'s option: the HTML file (or, of a cohort, the folder of its pages) to write."""

    out: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))


@dataclass(frozen=True)
class Viewed:
    """The page written (a cohort's index), and the cohort's completeness (None: not a cohort, or one with no
    plan); ``partial``: the cohort lacks planned arms or did not complete (the index lists the missing)."""

    page: Path
    done: Any = None

    @property
    def partial(self) -> bool:
        return self.done is not None and bool(self.done.partial)


async def aview(path: str | Path, options: ViewOptions | None = None, **changes: Any) -> Viewed:
    """``consilium view RUN_DIR|TRACE``: static HTML to read a run: a cohort folder's index, a page per case and
    per arm (``RUN_DIR/view/``); otherwise one self-contained file (docs/traces.md)."""
    return await off_loop(_view, Path(path), options_of(ViewOptions, options, changes))


def _view(path: Path, options: ViewOptions) -> Viewed:
    from consilium.fileio import write_text_atomic
    from consilium.graphs.registry import read_trace
    from consilium.reports.partial import completeness_of
    from consilium.reports.view_cohort import arm_judgements
    from consilium.reports.view_html import check_ours, esc, page
    from consilium.reports.view_site import write_cohort_view
    from consilium.reports.viewer import arm_section
    from consilium.runfolder.folder import RunFolder
    from consilium.runfolder.layout import trace_files, trace_stem

    if path.is_dir() and RunFolder(path).is_cohort:
        done = completeness_of(path)
        return Viewed(page=write_cohort_view(path, options.out or path / "view", done), done=done)
    if path.is_dir():
        traces = trace_files(path)  # the run's own traces, not a run's nested in it
        out = options.out or path / "view.html"
    elif path.is_file():
        traces = [path]
        out = options.out or path.with_name(trace_stem(path.name) + ".view.html")
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
                 _graph_link(path if path.is_dir() else path.parent, trace_path, out, esc)]
    return Viewed(page=write_text_atomic(out, page(title, "".join(body))))


def _graph_link(run_dir: Path, trace: Path, out: Path, esc: Any) -> str:
    """A link to the picture ``consilium analyze`` drew of the trace's arm in ``RUN_DIR/analysis`` (the
    default --out; docs/networks.md), if it is there."""
    from consilium.reports.networks.paths import ANALYSIS_FOLDER, arm_stem

    picture = run_dir / ANALYSIS_FOLDER / f"{arm_stem(run_dir, trace)}.png"
    if not picture.is_file():
        return ""
    href = Path(os.path.relpath(picture.resolve(), out.parent.resolve())).as_posix()
    return f"<p><a href=\"{esc(quote(href))}\">deliberation graph</a></p>"


view = sync_twin(aview)


@dataclass(frozen=True)
class JuryOptions:
    """``consilium jury``'s options: the rubric judged (a name or a YAML file) and the report folder (default
    ``RUN_DIR/jury``)."""

    rubric: str = ""
    out: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", as_path(self.out))
        if not self.rubric:
            raise UserError("rubric: required (the rubric the jury judged, by name or file)")


@dataclass(frozen=True)
class JuryReport:
    """The jury read (``data``: members, answers, items, ties, votes left out), the files written, and the
    cohort's completeness when it is partial (its agreement is of the finished arms)."""

    data: Any
    files: list[Path]
    done: Any = None


async def ajury(run_dir: str | Path, options: JuryOptions | None = None, **changes: Any) -> JuryReport:
    """``consilium jury RUN_DIR --rubric NAME``: Krippendorff's α, pairwise κ, scope agreement, self-preference
    and length bias of the jury judgements of one rubric (docs/judges.md, Juries)."""
    return await off_loop(_jury, Path(run_dir), options_of(JuryOptions, options, changes))


def _jury(run_dir: Path, options: JuryOptions) -> JuryReport:
    from consilium.judges.rubric import load_rubric
    from consilium.reports.jury import load_jury
    from consilium.reports.jury_tables import write_jury
    from consilium.reports.partial import partial_of

    data = load_jury(run_dir, load_rubric(options.rubric))
    done = partial_of(run_dir)
    return JuryReport(data=data, files=list(write_jury(options.out or run_dir / "jury", data, done)), done=done)


jury = sync_twin(ajury)


@dataclass(frozen=True)
class MergeOptions:
    """``consilium cohort merge``'s options: the merged folder (must not exist), and the shards' response caches
    to fold into ``cache_out`` (both or neither); ``command`` is recorded in the merged manifest."""

    out: Path = Path()
    caches: tuple[Path, ...] = ()
    cache_out: Path | None = None
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "caches", tuple(Path(c) for c in self.caches))
        object.__setattr__(self, "cache_out", as_path(self.cache_out))
        if bool(self.caches) != (self.cache_out is not None):
            raise UserError("--cache-out: --caches and --cache-out go together (the shard caches, and the new "
                            "file)")


@dataclass(frozen=True)
class Merged:
    """The merged cohort's manifest, and the responses folded into the merged cache (None: no caches given)."""

    manifest: Any
    responses: int | None = None


async def amerge_shards(run_dirs: list[str | Path], options: MergeOptions | None = None,
                        **changes: Any) -> Merged:
    """``consilium cohort merge RUN_DIR… --out OUT``: the shard folders of one cohort joined into one run folder
    (docs/scale.md); the caches are checked before the folder is written."""
    return await off_loop(_merge, [Path(p) for p in run_dirs], options_of(MergeOptions, options, changes))


def _merge(run_dirs: list[Path], options: MergeOptions) -> Merged:
    from consilium.cohort.caches import check_caches, merge_caches
    from consilium.cohort.merge import merge_shards as merge

    if options.cache_out is not None:
        check_caches(list(options.caches), options.cache_out)  # before the folder is written
    manifest = merge(run_dirs, options.out, list(options.command or sys.argv))
    count = merge_caches(list(options.caches), options.cache_out) if options.cache_out is not None else None
    return Merged(manifest=manifest, responses=count)


merge_shards = sync_twin(amerge_shards)


def schemas() -> dict[str, Any]:
    """``trace`` (the consilium's), ``<protocol>-trace`` for every other protocol, and ``case``: each format's
    pydantic model."""
    from consilium.cases import Case
    from consilium.graphs.registry import protocols

    found: dict[str, Any] = {
        "trace" if name == "consilium" else f"{name}-trace": p.trace_model for name, p in protocols().items()}
    return {**found, "case": Case}


async def aschema(name: str) -> dict[str, Any]:
    """``consilium schema NAME``: the JSON schema of a file format (see :func:`schemas`)."""
    known = schemas()
    if name not in known:
        raise UserError(f"name: unknown format {name!r} (known: {', '.join(sorted(known))})")
    return dict(known[name].model_json_schema())


schema = sync_twin(aschema)
