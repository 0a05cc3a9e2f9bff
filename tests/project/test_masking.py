"""One masking choke point (consilium/redact.py): every writer of files, logs, traces, manifests and the
terminal masks through it, and a secret told by its name is told by one rule, whether the name is a URL's
query key, a LangChain model's parameter or a field shown in a repr. The pipelines themselves (a key echoed
by a server into answers, errors, traces, judgements, exports, views, logs) are tests/project/test_secrets.py's and
tests/project/test_trust.py's; this file holds the choke point's shape and the writers it gained.
"""

from __future__ import annotations

import ast
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from support.keyecho import SECRET

from consilium.fileio import write_text_atomic
from consilium.log import configure_logging, get_logger
from consilium.models.backends.langchain_chat import chat_model_identity
from consilium.models.options import ModelOptions
from consilium.redact import RedactingStream, redact_url, register_secret

PACKAGE = Path(__file__).resolve().parents[2] / "consilium"

#: Calls that write bytes out of the process other than through consilium.fileio (which masks).
WRITERS = {"fdopen", "savefig", "write_table", "write_eval_log", "write_bytes", "write_text"}
#: Where masking may be defined: the choke point itself.
CHOKE_POINT = "redact.py"


def _calls(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _imports_redact(tree: ast.AST) -> bool:
    return any(isinstance(node, ast.ImportFrom) and node.module == "consilium.redact" for node in ast.walk(tree))


def test_every_module_that_writes_out_masks_through_redact() -> None:
    """A module that writes a file or a stream itself (not through consilium.fileio's atomic writer) imports
    consilium.redact: a cohort's appended tables, an export, a checkpoint, the log, a figure."""
    unmasked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        writes = _calls(tree) & WRITERS
        if writes and path.name != CHOKE_POINT and not _imports_redact(tree):
            unmasked.append(f"{path.relative_to(PACKAGE)}: {sorted(writes)}")
    # fileio's own writer masks (it calls redact); the log's file handler gets masked events (log.py's
    # processors); cohort/index.py reads (fdopen for reading a lock-held file).
    allowed = {"fileio.py", "log.py", "cohort/index.py"}
    assert [u for u in unmasked if u.split(":")[0] not in allowed] == []


def _patterns(tree: ast.AST) -> list[str]:
    """The literal patterns a module compiles or searches with (``re.compile("…")``, ``re.search("…", …)``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "re":
            found += [c.value for c in ast.walk(node.args[0])
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    return found


def test_a_secrets_name_is_told_by_redact_alone() -> None:
    """No module but redact.py has a pattern of what a secret's name looks like (key|secret|passw…)."""
    spelled = [f"{path.relative_to(PACKAGE)}: {pattern}" for path in sorted(PACKAGE.rglob("*.py"))
               if path.name != CHOKE_POINT
               for pattern in _patterns(ast.parse(path.read_text(encoding="utf-8")))
               if any(word in pattern.lower() for word in ("secret", "passw", "credential"))]
    assert spelled == []


#: name → whether it names a secret, by the one rule.
NAMES = {"api_key": True, "x-api-key": True, "Authorization": True, "access_token": True, "client_secret": True,
         "password": True, "pwd": True, "request_signature": True, "credentials": True, "max_tokens": False,
         "token_param": False, "temperature": False, "model_name": False}


@pytest.mark.parametrize(("name", "secret"), NAMES.items())
def test_one_rule_tells_a_secret_by_its_name_in_a_query_a_model_parameter_and_a_repr(name: str,
                                                                                      secret: bool) -> None:
    value = "v4lue-0f-the-parameter"
    # A URL's query value
    assert (value not in redact_url(f"https://h.example/v1?{name}={value}&x=1")) is secret

    # A LangChain model's identifying parameter (its cache identity): dropped when it names a secret
    class WithParameter(FakeListChatModel):
        @property
        def _identifying_params(self) -> dict[str, Any]:
            return {"model_name": "fake", name: value}

    identity = chat_model_identity(WithParameter(responses=["x"]))
    assert identity is not None and (f'"{name}"' not in identity) is secret
    assert (value not in identity) is secret


def test_model_options_show_the_key_masked_and_the_url_without_credentials() -> None:
    shown = repr(ModelOptions(api_key="sk-options-key-0123", base_url="https://me:pa55word-xyz@h.example/v1",
                              token_param="max_completion_tokens"))
    assert "sk-options-key-0123" not in shown and "pa55word-xyz" not in shown
    assert "api_key='***'" in shown and "https://***@h.example/v1" in shown
    assert "token_param='max_completion_tokens'" in shown  # a parameter's name, no secret
    assert "api_key=None" in repr(ModelOptions())


def test_a_secret_in_a_figures_texts_is_masked_before_it_is_saved(tmp_path: Path) -> None:
    """A figure is a file consilium writes: its title, labels, ticks and legend are masked as a CSV's cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from consilium.reports.figures.style import save_figure

    register_secret(SECRET)
    figure, axis = plt.subplots()
    axis.plot([0, 1], [0, 1], label=f"model {SECRET}")
    axis.set_title(f"by https://user:fig-pa55word@h.example/v1 and {SECRET}")
    axis.set_xticks([0, 1], ["a", SECRET])
    axis.legend()
    save_figure(figure, tmp_path, "fig")
    texts = [t.get_text() for t in figure.findobj(Text)]
    assert any("***" in t for t in texts)
    assert not any(SECRET in t or "fig-pa55word" in t for t in texts)
    assert (tmp_path / "fig.png").is_file() and (tmp_path / "fig.pdf").is_file()
    plt.close(figure)


def test_each_writer_path_masks_a_registered_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file writer, the terminal stream and the log file each mask a registered key and a URL's password."""
    register_secret(SECRET)
    text = f"key {SECRET} at https://me:wr1ter-pa55@h.example/v1"
    written = write_text_atomic(tmp_path / "out.txt", text).read_text()
    RedactingStream(sys.stdout).write(text + "\n")
    printed = capsys.readouterr().out
    log = configure_logging(log_file=str(tmp_path / "consilium.log.jsonl"))
    assert log is not None
    get_logger("test").warning("an event", detail=text)
    for handler in logging.getLogger().handlers:  # flush, never close: pytest's capture shares the stream
        handler.flush()
    logged = log.read_text()
    assert "an event" in logged
    for out in (written, printed, logged):
        assert SECRET not in out and "wr1ter-pa55" not in out and "***" in out, out
