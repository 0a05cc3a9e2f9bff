"""Install a small plugin package for a test: its modules and a ``.dist-info`` with entry points, written into
a folder that a fresh interpreter gets on ``PYTHONPATH``, so ``importlib.metadata`` finds it exactly as it
finds an installed distribution."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def install(root: Path, name: str, modules: dict[str, str], entry_points: str) -> Path:
    """Write ``modules`` (module name → source) and ``name``'s dist-info into ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        files.append(f"{module}.py")
    dist = name.replace("-", "_")
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points), encoding="utf-8")
    files += [f"{info.name}/{f}" for f in ("METADATA", "entry_points.txt", "RECORD")]
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files), encoding="utf-8")
    return root


def run_consilium(plugins: Path, *argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m consilium ARGV`` in a fresh interpreter that sees the plugin folder."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "consilium", *argv], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)
