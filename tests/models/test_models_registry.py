"""The backend registry (models/backends/registry.py): built-in declarations, and plugins added by an
installed package's ``consilium.backends`` entry points.

The plugin package is written into ``tmp_path`` with its ``.dist-info`` and put on ``PYTHONPATH`` of a
fresh interpreter, so ``importlib.metadata`` finds it exactly as it finds an installed distribution.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from consilium.errors import UserError
from consilium.models import ModelOptions, build_model
from consilium.models.backends.registry import BUILTIN_BACKENDS, SPEC_HELP, Backend, find_backend, resolve_spec
from consilium.models.backends.scripted import ScriptedModel
from consilium.models.wrappers import CachedModel, RetryingModel

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = ROOT / "examples" / "models" / "scripted-panel.yaml"

PLUGIN = '''
"""A third-party backend: the scripted backend under its own name and model id."""
from consilium.models.backends.registry import Backend
from consilium.models.backends.scripted import ScriptedModel


def _open(arg, options):
    model = ScriptedModel.from_file(arg)
    model.model_id = "plugin:" + model.model_id
    return model


CACHED = Backend("playback", _open, "a script, cached like a served model", argument="FILE")
FRESH = Backend("freshplay", _open, "a script, never cached", argument="FILE", cacheable=False)
WRONG_NAME = Backend("othername", _open, "declared under another prefix", argument="FILE")
NOT_A_BACKEND = object()
'''

ENTRY_POINTS = """
[consilium.backends]
playback = consilium_plugin_demo:CACHED
freshplay = consilium_plugin_demo:FRESH
misnamed = consilium_plugin_demo:WRONG_NAME
notbackend = consilium_plugin_demo:NOT_A_BACKEND
broken = consilium_plugin_broken:BACKEND
scripted = consilium_plugin_broken:BACKEND
"""


def install_plugin(root: Path) -> Path:
    """Write the plugin package and its dist-info into ``root``; returns ``root`` (the PYTHONPATH entry)."""
    root.mkdir()
    (root / "consilium_plugin_demo.py").write_text(textwrap.dedent(PLUGIN))
    (root / "consilium_plugin_broken.py").write_text('raise RuntimeError("this plugin is broken on purpose")\n')
    info = root / "consilium_plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: consilium-plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("consilium_plugin_demo.py,,\nconsilium_plugin_broken.py,,\n"
                                 "consilium_plugin_demo-0.1.dist-info/METADATA,,\n"
                                 "consilium_plugin_demo-0.1.dist-info/entry_points.txt,,\n"
                                 "consilium_plugin_demo-0.1.dist-info/RECORD,,\n")
    return root


def consilium(plugins: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "consilium", *argv], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def simulate(plugins: Path, model: str, out: Path) -> list[dict[str, object]]:
    """Run a consilium on the example case; returns the recorded calls of both formats."""
    done = consilium(plugins, "simulate", "--case", str(CASE), "--model", model, "--out", str(out))
    assert done.returncode == 0, done.stderr
    [run_dir] = list(out.iterdir())
    traces = sorted(run_dir.glob("*.trace.json"))
    assert len(traces) == 2
    return [call for path in traces for call in json.loads(path.read_text(encoding="utf-8"))["calls"]]


def test_the_built_in_backends_declare_themselves() -> None:
    assert SPEC_HELP == ("embedded, gguf:PATH, openai:MODEL, vllm:MODEL, langchain:MODULE:FACTORY, scripted:FILE "
                         "or replay:TRACE")
    assert {p for p, b in BUILTIN_BACKENDS.items() if not b.cacheable} == {"scripted", "replay"}
    assert BUILTIN_BACKENDS["vllm"].extra == "vllm" and BUILTIN_BACKENDS["embedded"].argument is None
    assert resolve_spec("scripted:a:b.yaml") == (BUILTIN_BACKENDS["scripted"], "a:b.yaml")
    for spec in ("embedded:x", "gguf:", "nope:x"):
        with pytest.raises(UserError, match=f"unknown model spec '{spec}' \\(expected {SPEC_HELP}\\)"):
            resolve_spec(spec)


async def test_caching_follows_the_backends_flag(tmp_path: Path) -> None:
    options = ModelOptions(base_url="http://127.0.0.1:9/v1", cache_path=tmp_path / "c.sqlite")
    assert isinstance(build_model(f"scripted:{PANEL}", options), RetryingModel)  # not cacheable: no cache layer
    served = build_model("openai:m", options)
    assert isinstance(served, CachedModel)
    await served.aclose()
    assert find_backend("nothing-installed-by-this-name") is None


def test_a_missing_extra_is_named() -> None:
    backend = Backend("needy", lambda arg, options: ScriptedModel(), "needs a package", argument="X",
                      extra="needy", requires="consilium_no_such_module")
    with pytest.raises(UserError, match=r"^needy:X needs the needy extra: pip install 'consilium\[needy\]'$"):
        backend.check_installed()


def test_a_plugin_backend_answers_a_whole_run_cached_or_not_by_its_flag(tmp_path: Path) -> None:
    plugins = install_plugin(tmp_path / "site")
    first = simulate(plugins, f"playback:{PANEL}", tmp_path / "one")
    assert first and {c["model"] for c in first} == {"plugin:scripted-panel"}
    assert not any(c["cached"] for c in first)
    again = simulate(plugins, f"playback:{PANEL}", tmp_path / "two")
    assert len(again) == len(first) and all(c["cached"] for c in again)
    # The same model and endpoint, so the cache holds every answer; a backend that may not be cached is
    # asked all the same.
    fresh = simulate(plugins, f"freshplay:{PANEL}", tmp_path / "three")
    assert [c["response"] for c in fresh] == [c["response"] for c in first]
    assert not any(c["cached"] for c in fresh)


PROBE = """
import json, sys
from consilium.errors import UserError
from consilium.models.factory import open_backend
said = []
for spec in sys.argv[1:]:
    try:
        open_backend(spec)
    except UserError as exc:
        said.append(str(exc))
print(json.dumps(said))
"""


def test_a_bad_plugin_is_refused_naming_it(tmp_path: Path) -> None:
    plugins = install_plugin(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", PROBE, "broken:x", "notbackend:x", "misnamed:x", "bogus"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    where = "from consilium-plugin-demo"
    assert json.loads(done.stdout) == [
        f"backend plugin 'broken' (consilium_plugin_broken:BACKEND {where}): could not be loaded: "
        "RuntimeError: this plugin is broken on purpose",
        f"backend plugin 'notbackend' (consilium_plugin_demo:NOT_A_BACKEND {where}): "
        "consilium_plugin_demo:NOT_A_BACKEND is not a consilium Backend (it is a object)",
        f"backend plugin 'misnamed' (consilium_plugin_demo:WRONG_NAME {where}): declares the prefix 'othername'; "
        "the entry point's name must be it",
        f"unknown model spec 'bogus' (expected {SPEC_HELP}; installed backend plugins: broken, freshplay, "
        "misnamed, notbackend, playback)",
    ]


def test_the_cli_says_a_broken_plugin_in_one_line(tmp_path: Path) -> None:
    done = consilium(install_plugin(tmp_path / "site"), "models", "check", "--model", "broken:x")
    assert done.returncode == 2
    assert done.stderr.strip() == ("consilium: error: backend plugin 'broken' (consilium_plugin_broken:BACKEND "
                                   "from consilium-plugin-demo): could not be loaded: RuntimeError: this plugin "
                                   "is broken on purpose")


def test_a_plugin_never_replaces_a_built_in_prefix(tmp_path: Path) -> None:
    """The plugin named ``scripted`` is never loaded (loading it would fail): the built-in answers, and a
    warning says the plugin is ignored."""
    script = tmp_path / "check.yaml"
    script.write_text("model: demo\nrules:\n  - role: structured\n    json: {specialty: cardiology, "
                      "urgency: emergency}\ndefault: Acute inferior myocardial infarction.\n")
    done = consilium(install_plugin(tmp_path / "site"), "models", "check", "--model", f"scripted:{script}")
    assert done.returncode == 0, done.stderr
    assert "model: demo" in done.stdout
    assert "backend_plugin_ignored" in done.stderr and "consilium_plugin_broken:BACKEND" in done.stderr
