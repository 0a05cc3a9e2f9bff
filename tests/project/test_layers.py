"""The package's layers: no module imports from a layer above its own (docs/architecture.md, "Layers").

Each top-level part of ``consilium`` has a rank; a module may import its own part and any part of a lower
rank, never one above. Within ``graphs``, each protocol's package may import only the shared protocol
modules (base, bounds, view, record, and the LangGraph glue: reducers, running, checkpoint_serde, studio) and
itself: a protocol never reaches into another's package; the registry, arms, replay and the Studio entry (dev),
which know them all, sit above them. Imports inside functions count as well (a lazy import is still an edge).

A layer may name one module of a part (``runfolder.layout``): that module has the layer's rank, the rest of its
part keeps the part's. The run folder's layout, its file names and where each lies, imports nothing of the
package, so it sits in the lowest layer and every writer below the run folder places its files by it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "consilium"

#: Lowest first. A part's modules may import parts of the same or a lower rank.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "redact", "natural", "version", "stages", "runfolder.layout"),
    ("fileio", "log", "aio", "datafiles", "stats"),
    ("models", "observe", "otb"),
    ("roles", "cases"),
    ("agents", "traces"),
    ("graphs",),
    ("judges",),
    ("spec", "runfolder"),
    ("calibration", "reports", "cohort", "study"),
    ("ablation",),
    ("export", "web"),
    ("api", "cli", "__main__", "__init__"),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
#: Parts of the same rank that may import each other, lower → higher (a DAG inside a rank).
SAME_RANK_ALLOWED = {("fileio", "redact"), ("log", "redact"), ("cases", "roles"), ("traces", "agents"),
                     ("reports", "cohort"), ("fileio", "errors"), ("log", "errors"),
                     ("aio", "errors"), ("datafiles", "errors"), ("redact", "errors"), ("datafiles", "fileio"),
                     ("__main__", "cli"), ("__init__", "api"), ("cli", "api"),
                     ("runfolder", "spec"), ("study", "calibration"), ("study", "reports"),
                     ("web", "export")}
#: Inside protocols: the shared modules every protocol builds on; the ones above every protocol.
PROTOCOL_SHARED = {"base", "bounds", "view", "record", "reducers", "running", "checkpoint_serde", "studio"}
PROTOCOL_TOP = {"registry", "replay", "arms", "dev"}


def _part(module: str) -> str:
    """The part of the package a module (or a name imported from one) is in: its module's own layer where
    LAYERS names that module, else its top-level part's."""
    parts = module.split(".")
    if len(parts) < 2:
        return "__init__"
    own = ".".join(parts[1:3])
    return own if own in RANK else parts[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    return _imports_of(path, PACKAGE.parent)


def _imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = ".".join(path.relative_to(root).with_suffix("").parts)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("consilium")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("consilium"):
                # ``from consilium.graphs.board import agents`` imports a submodule: count it as such.
                found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and _imported_by_name(node):
            found.append((node.lineno, node.args[0].value))  # type: ignore[attr-defined]
    return found


def _imported_by_name(call: ast.Call) -> bool:
    """``importlib.import_module("consilium.x")``, ``import_module(...)`` or ``__import__(...)`` with a
    constant name: an import the statements above do not show."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = call.args[0] if call.args else None
    return name in ("import_module", "__import__") and isinstance(first, ast.Constant) \
        and isinstance(first.value, str) and first.value.startswith("consilium")


def _edges() -> list[tuple[str, int, str]]:
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        edges += [(module, line, target) for line, target in _imports(path)]
    return edges


def _violation(source: str, target: str) -> str | None:
    src, dst = _part(source), _part(target)
    if target == "consilium" or target.startswith("consilium.__version__"):
        return None
    if src not in RANK or dst not in RANK:
        return f"{src if src not in RANK else dst} is in no layer (add it to LAYERS)"
    if src == dst:
        return _protocol_violation(source, target) if src == "graphs" else None
    if RANK[dst] > RANK[src]:
        return f"{src} (layer {RANK[src]}) imports {dst} (layer {RANK[dst]}), a layer above"
    if RANK[dst] == RANK[src] and (src, dst) not in SAME_RANK_ALLOWED:
        return f"{src} imports {dst}, a part of its own layer not listed in SAME_RANK_ALLOWED"
    return None


def _protocol_violation(source: str, target: str) -> str | None:
    src, dst = source.split(".")[2:3], target.split(".")[2:3]
    if not src or not dst:
        return None
    src_part, dst_part = src[0], dst[0]
    if src_part == dst_part or dst_part in PROTOCOL_SHARED:
        return None
    if src_part in PROTOCOL_TOP:
        return None
    if src_part in PROTOCOL_SHARED:
        return f"graphs.{src_part} (shared) imports graphs.{dst_part}"
    return f"protocol package {src_part} imports graphs.{dst_part} (a protocol needs nothing but base and view)"


def test_no_module_imports_from_a_layer_above() -> None:
    problems = [f"{source}:{line}: {why}" for source, line, target in _edges()
                if (why := _violation(source, target)) is not None]
    assert problems == []


@pytest.mark.parametrize(("source", "target", "expected"), [
    ("consilium.models.factory", "consilium.graphs.base", "a layer above"),
    ("consilium.traces.io", "consilium.graphs.registry", "a layer above"),
    ("consilium.graphs.single.run", "consilium.graphs.consilium.config", "needs nothing but base and view"),
    ("consilium.graphs.base", "consilium.graphs.board.trace", "(shared) imports"),
    ("consilium.judges.runner", "consilium.reports.summary", "a layer above"),
    ("consilium.reports.viewer", "consilium.graphs.registry", None),
    ("consilium.graphs.registry", "consilium.graphs.single.protocol", None),
    ("consilium.traces.io", "consilium.runfolder.layout.trace_name", None),
    ("consilium.traces.io", "consilium.runfolder.folder", "a layer above"),
    ("consilium.runfolder.layout", "consilium.runfolder.rows", "a layer above"),
    ("consilium.runfolder.folder", "consilium.runfolder.layout", None),
])
def test_the_rule_catches_an_upward_edge(source: str, target: str, expected: str | None) -> None:
    found = _violation(source, target)
    assert (found is None) if expected is None else (found is not None and expected in found)


def test_an_import_by_name_is_an_edge_too(tmp_path: Path) -> None:
    source = tmp_path / "consilium" / "models" / "lazy.py"
    source.parent.mkdir(parents=True)
    source.write_text("import importlib\n\ndef f():\n    importlib.import_module('consilium.cli')\n"
                      "    __import__('consilium.reports.viewer')\n", encoding="utf-8")
    tree_imports = [target for _, target in _imports_of(source, tmp_path)]
    assert tree_imports == ["consilium.cli", "consilium.reports.viewer"]
    assert all(_violation("consilium.models.lazy", t) for t in tree_imports)


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_cycles(package: Path) -> list[list[str]]:
    """Every cycle among ``package``'s modules, each as its sorted module names (a strongly connected
    component of more than one module). An import names a module or an attribute of one: the longest
    prefix that is a module is the edge's end, so ``from pkg import submodule`` is an edge to the submodule
    and ``from pkg import name`` an edge to the package's ``__init__``."""
    root = package.parent
    modules = {_module_name(path, root): path for path in package.rglob("*.py")}
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for _, target in _imports_of(path, root):
            parts = target.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != module:
                graph.add_edge(module, ".".join(parts))
    return sorted(sorted(component) for component in nx.strongly_connected_components(graph)
                  if len(component) > 1)


def test_the_package_has_no_import_cycles() -> None:
    assert import_cycles(PACKAGE) == []


def test_the_cycle_detector_finds_a_made_up_cycle(tmp_path: Path) -> None:
    package = tmp_path / "consilium"
    (package / "inner").mkdir(parents=True)
    files = {"__init__.py": "", "a.py": "from consilium.inner import b\n",  # a → inner.b (a submodule)
             "inner/__init__.py": "from consilium import c\n",  # inner → c
             "inner/b.py": "def f():\n    from consilium.inner import NAME\n",  # inner.b → inner (the package)
             "c.py": "import importlib\nimportlib.import_module('consilium.inner.b')\n",  # c → inner.b
             "d.py": "from consilium.a import thing\n",  # d → a: outside every cycle
             "e.py": "from . import d\n"}
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    assert import_cycles(package) == [["consilium.c", "consilium.inner", "consilium.inner.b"]]


def test_no_module_passes_300_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300}
    assert long == {}
