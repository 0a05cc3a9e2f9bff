"""Install a small plugin package for a test: its modules and a ``.dist-info`` with entry points, written into
a folder that a fresh interpreter gets on ``PYTHONPATH``, so ``importlib.metadata`` finds it exactly as it
finds an installed distribution."""

from __future__ import annotations

import json
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


PLUGINS = Path(__file__).resolve().parent / "plugins"


def install_plugin(root: Path, module: str, entry_points: str) -> Path:
    """Install the plugin package ``tests/support/plugins/<module>.py`` into ``root`` as ``name``'s distribution."""
    source = (PLUGINS / f"{module}.py").read_text(encoding="utf-8")
    return install(root, module.replace("_", "-"), {module: source}, entry_points)


def run_python(plugins: Path, code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a fresh interpreter that sees the plugin folder."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


#: Runs each command line of argv[1] (JSON) through consilium's main in this one interpreter, each with its own
#: stdout and stderr, and prints them as JSON: one interpreter start for a sequence of commands.
_COMMANDS = """
import contextlib, io, json, sys
from consilium.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def run_commands(plugins: Path, *argvs: list[str], cwd: Path = ROOT) -> list[subprocess.CompletedProcess[str]]:
    """Each of ``argvs`` as ``consilium ARGV`` would run it, one after the other in one fresh interpreter that
    sees the plugin folder (a command's files are written before the next starts)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", _COMMANDS, json.dumps([list(a) for a in argvs])],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"the commands' interpreter failed: {done.stderr}")
    return [subprocess.CompletedProcess(argv, code, out, err)
            for argv, (code, out, err) in zip(argvs, json.loads(done.stdout.splitlines()[-1]), strict=True)]
