"""Secrets coming back from outside (docs/reliability.md, "Secrets"): a server that echoes what it was sent
— the API key, a URL's password as the HTTP Basic header it becomes — in an error or in a successful answer,
and a LangChain model's own credential header. Each test runs the real CLI or API against an echoing server
on 127.0.0.1 (tests/support/keyecho.py) or a LangChain fake, then searches everything written, printed, stored in a
database or sent to LangSmith for every form of the secret.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tracers.langchain import wait_for_all_tracers
from pydantic import Field, SecretStr
from support.keyecho import SECRET, echo_server, key_echo_server
from support.langchain_fakes import ANSWERS, ORDER
from support.langsmith_capture import langsmith_capture

import consilium
from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PERSON = ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"
PASSWORD = "hunter2-SENTINEL-pw"


def sqlite_dump(path: Path) -> str:
    """Every value of every table of the SQLite file ``path``, blobs decoded as text."""
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        values = [value for table in tables for row in db.execute(f'SELECT * FROM "{table}"') for value in row]
    return "\n".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values)


def everything(root: Path, *printed: str, besides: tuple[Path, ...] = ()) -> str:
    """Every byte of every file under ``root`` (but ``besides``, the test's own input) and every SQLite database
    there dumped, as text, and ``printed``."""
    files = [p for p in root.rglob("*") if p.is_file() and p not in besides]
    blobs = [p.read_bytes().decode("utf-8", "replace") for p in files]
    blobs += [sqlite_dump(p) for p in files if p.read_bytes()[:16] == b"SQLite format 3\x00"]
    return "\n".join([*blobs, *printed])


def forms(secret: str) -> list[str]:
    """What would give ``secret`` away: itself, its base64, either half of it."""
    half = len(secret) // 2
    return [secret, base64.b64encode(secret.encode()).decode(), secret[:half], secret[half:]]


def one_trace(out: Path) -> dict[str, Any]:
    (path,) = out.glob("*/*.trace.json")
    return dict(json.loads(path.read_text()))


# --- a URL's password, sent as HTTP Basic ----------------------------------------------------------------


@pytest.mark.localhost
@pytest.mark.parametrize("answer", [True, False], ids=["in-an-answer", "in-an-error"])
def test_a_url_password_is_masked_as_its_basic_header_token_and_decoded_login(
        answer: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONSILIUM_LOG_FILE")  # the log goes into the run's folder, searched below
    login = f"alice:{PASSWORD}"
    token = base64.b64encode(login.encode()).decode()
    out = tmp_path / "runs"
    with echo_server(answer=answer) as server:
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        code = main(["-v", "simulate", "--case", str(CASE), "--model", "openai:echo", "--base-url", url,
                     "--format", "free-form", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == (0 if answer else 1) and server.echoed > 0
    trace = json.dumps(one_trace(out))
    # The server's words are kept, the credential in each of its forms masked.
    assert "Authorization: ***; token ***; login ***; password ***" in trace
    written = everything(tmp_path, captured.out, captured.err)
    assert "consilium.log.jsonl" in "".join(p.name for p in out.rglob("*"))
    for secret in (f"Basic {token}", token, login, PASSWORD):
        assert secret not in written, secret


@pytest.mark.localhost
def test_a_langchain_models_url_password_is_masked_as_its_basic_header_token_and_decoded_login(
        tmp_path: Path) -> None:
    from langchain_openai import ChatOpenAI

    login = f"bob:{PASSWORD}-lc"
    token = base64.b64encode(login.encode()).decode()
    with echo_server(answer=True) as server:
        url = server.base_url.replace("http://", f"http://{login}@")
        chat = ChatOpenAI(base_url=url, api_key=SecretStr("not-needed"), model="echo", max_retries=0)
        (trace,) = consilium.run(CASE, variants=["structured"], model=chat, out=tmp_path / "runs")
    assert trace.status == "completed" and server.echoed == len(trace.calls) == 8
    assert "Authorization: ***; token ***; login ***; password ***" in trace.calls[0].response
    written = everything(tmp_path, trace.model_dump_json())
    for secret in (f"Basic {token}", token, login, f"{PASSWORD}-lc"):
        assert secret not in written, secret



def spellings(authorization: str) -> str:
    """What a server that re-encodes the Basic token may echo of it: unpadded, URL-safe, both."""
    token = authorization.split()[-1]
    urlsafe = token.replace("+", "-").replace("/", "_")
    return f"(you sent {token.rstrip('=')}; {urlsafe}; {urlsafe.rstrip('=')})"


@pytest.mark.localhost
def test_a_url_password_is_masked_in_every_base64_spelling_of_its_basic_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The password is percent-encoded in the URL (a space, ">" and "?"), and the base64 of its login has
    padding and a "+" and "/": each spelling of the token a server may echo (unpadded as in a JWT, URL-safe)
    is masked, and the password as written in the URL."""
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    password, written_as = "pa ss~SENTINEL>?", "pa%20ss~SENTINEL%3E%3F"
    token = base64.b64encode(f"carol:{password}".encode()).decode()
    urlsafe = base64.urlsafe_b64encode(f"carol:{password}".encode()).decode()
    assert token.endswith("==") and "+" in token and urlsafe != token  # every spelling differs
    spelt = (token.rstrip("="), urlsafe, urlsafe.rstrip("="), written_as)
    out = tmp_path / "runs"
    with echo_server(answer=True, said=lambda header: spellings(header)[:-1] + f"; {written_as})") as server:
        url = server.base_url.replace("http://", f"http://carol:{written_as}@")
        code = main(["-v", "simulate", "--case", str(CASE), "--model", "openai:echo", "--base-url", url,
                     "--format", "free-form", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and server.echoed > 0
    assert "(you sent ***; ***; ***; ***)" in json.dumps(one_trace(out))
    written = everything(tmp_path, captured.out, captured.err)
    for secret in spelt:
        assert secret not in written, secret

# --- a key across the place an error message is cut ------------------------------------------------------


@pytest.mark.localhost
def test_a_key_across_the_cut_of_a_server_error_is_masked_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # The server's message is cut at 500 characters: the key starts 20 characters before the cut.
    opening = "bad request (you sent Authorization: Bearer "
    with echo_server(padding=480 - len(opening)) as server:
        code = main(["simulate", "--case", str(CASE), "--model", "openai:echo", "--base-url", server.base_url,
                     "--format", "free-form", "--out", str(tmp_path / "runs")])
    captured = capsys.readouterr()
    assert code == 1
    error = one_trace(tmp_path / "runs")["error"]
    assert "HTTP 400" in error and "bad request (you sent Authorization: ***; token ***)" in error
    written = everything(tmp_path, captured.out, captured.err)
    for secret in forms(SECRET):
        assert secret not in written, secret


class Refusing(BaseChatModel):
    """A provider whose SDK refuses every call with a long message that quotes the model's own key."""

    api_key: SecretStr
    before_key: int = 0

    @property
    def _llm_type(self) -> str:
        return "refusing-fake"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        raise ValueError("x" * self.before_key + f"key {self.api_key.get_secret_value()} refused")


def test_a_key_across_the_cut_of_a_langchain_models_error_is_masked_whole(tmp_path: Path) -> None:
    key = "sk-langchain-SENTINEL-0123456789abcdef"
    # The error is shortened to 500 characters as "ValueError: <message>": the key starts 20 before the cut.
    model = Refusing(api_key=SecretStr(key), before_key=480 - len("ValueError: ") - len("key "))
    (trace,) = consilium.run(CASE, variants=["free-form"], model=model, out=tmp_path / "runs")
    assert trace.status == "failed" and "ValueError: xxx" in (trace.error or "")
    assert (trace.error or "").endswith("key *** refused")
    written = everything(tmp_path, trace.model_dump_json())
    for secret in forms(key):
        assert secret not in written, secret


# --- a LangChain model's credential header ---------------------------------------------------------------


class HeaderEcho(FakeMessagesListChatModel):
    """A chat model with a credential header, whose server echoes the token alone in its first answer."""

    default_headers: dict[str, str] = Field(default_factory=dict)


def test_the_token_of_a_langchain_models_authorization_header_is_masked_alone(tmp_path: Path) -> None:
    token = "sk-header-SENTINEL-9876543210fedcba"
    answers = [json.loads(json.dumps(ANSWERS[name])) for name in ORDER]
    answers[0]["primary"]["justification"] += f" (the gateway saw {token})"
    model = HeaderEcho(responses=[AIMessage(content=json.dumps(a)) for a in answers],
                       default_headers={"Authorization": f"Bearer {token}"})
    (trace,) = consilium.run(CASE, variants=["structured"], model=model, out=tmp_path / "runs")
    assert trace.status == "completed"
    assert "(the gateway saw ***)" in trace.calls[0].response
    written = everything(tmp_path, trace.model_dump_json())
    for secret in forms(token):
        assert secret not in written, secret



def test_every_string_of_an_answer_is_masked_its_finish_reason_too(tmp_path: Path) -> None:
    """Not only the answer's text: every string a server returns with it (here the finish reason, which
    the trace, the API's traces and OpenTelemetry's spans carry) is masked as it arrives."""
    token = "sk-finish-SENTINEL-0123456789abcdef"
    answers: list[BaseMessage] = [
        AIMessage(content=json.dumps(ANSWERS[name]), response_metadata={"finish_reason": f"stop {token}"})
        for name in ORDER]
    model = HeaderEcho(responses=answers, default_headers={"Authorization": f"Bearer {token}"})
    (trace,) = consilium.run(CASE, variants=["structured"], model=model, out=tmp_path / "runs")
    assert trace.status == "completed"
    assert {call.finish_reason for call in trace.calls} == {"stop ***"}
    written = everything(tmp_path, trace.model_dump_json())
    for secret in forms(token):
        assert secret not in written, secret

# --- a key echoed in a successful answer -------------------------------------------------------------------


@pytest.mark.localhost
def test_a_key_echoed_in_answers_is_in_no_file_database_or_langsmith_payload(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's run (its checkpoint database), the response cache, the log, the traces, the terminal and
    LangSmith's multipart payload: the key the server echoes in every answer is in none of them, nor the key
    the person pasted into their own answer."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    person = tmp_path / "answers.yaml"
    answers = yaml.safe_load(PERSON.read_text())
    answers["structured"]["votes"][1]["reason"] = f"Agreed; my key is {SECRET} if you need it."
    person.write_text(yaml.safe_dump(answers))
    out = tmp_path / "runs"
    with langsmith_capture(multipart=True) as capture, echo_server(answer=True) as server:
        code = main(["-v", "simulate", "--case", str(CASE), "--model", "openai:echo", "--base-url", server.base_url,
                     "--format", "structured", "--human", "Cardiologist", "--answers", str(person),
                     "--out", str(out)])
        wait_for_all_tracers()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert server.echoed == 6  # role assignment, two opinions, synthesis, two votes (the person has the rest)
    databases = sorted(p.name for p in tmp_path.rglob("*.sqlite"))
    assert databases == ["cache.sqlite", "checkpoints.sqlite"]
    assert any(p.startswith("/runs/multipart") for p in capture.paths)
    sent = b"\n".join(capture.bodies).decode("utf-8", "replace")
    assert "(you sent Authorization: ***; token ***)" in sent  # the answers went to LangSmith, masked
    cache = sqlite_dump(tmp_path / "cache.sqlite")
    assert "(you sent Authorization: ***; token ***)" in cache  # a cache hit is the masked answer
    assert "my key is *** if you need it" in sqlite_dump(next(out.rglob("checkpoints.sqlite")))
    written = everything(tmp_path, captured.out, captured.err, sent, besides=(person,))
    for secret in forms(SECRET):
        assert secret not in written, secret



@pytest.mark.localhost
def test_a_key_echoed_to_a_model_object_the_api_was_given_is_masked_in_the_traces_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model object handed to ``consilium.run`` as it is (a bare backend, outside the shared layers that
    mask answers): the traces the call returns hold the echoed key masked, as the files it wrote do."""
    from consilium.models import ModelOptions, open_backend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key = "sk-object-SENTINEL-0123456789abcdef"
    with echo_server(answer=True) as server:
        model = open_backend("openai:echo", ModelOptions(base_url=server.base_url, api_key=key, cache=False))
        try:
            traces = consilium.run(CASE, variants=["free-form", "structured"], model=model, out=tmp_path / "runs")
        finally:
            consilium.aio.run(model.aclose())
    assert [t.status for t in traces] == ["completed", "completed"] and server.echoed > 0
    returned = "\n".join(t.model_dump_json() for t in traces)
    assert "(you sent Authorization: ***; token ***)" in returned
    written = everything(tmp_path, returned)
    for secret in forms(key):
        assert secret not in written, secret


@pytest.mark.localhost
def test_a_key_a_judges_server_echoes_is_in_no_judgement_table_export_or_view(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A cohort judged by an ``openai:`` judge whose server echoes the key in every rationale, judged again
    by ``judge``, then exported (tables and Inspect logs) and viewed: the key is in no file."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("CONSILIUM_LOG_FILE")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / CASE.name).write_text(CASE.read_text())
    out = tmp_path / "runs"
    panel = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
    with echo_server(answer=True) as server:
        assert main(["cohort", "--cases", str(cases), "--model", panel, "--formats", "free-form,structured",
                     "--judge", "ai-consilium", "--judge-model", "openai:echo", "--base-url", server.base_url,
                     "--out", str(out)]) == 0
        (run_dir,) = out.iterdir()
        assert main(["judge", str(run_dir), "--rubric", "nmb-diagnosis-match", "--judge-model", "openai:echo",
                     "--base-url", server.base_url]) == 0
    for command in (["export", str(run_dir), "--to", "jsonl", "--out", str(tmp_path / "tables")],
                    ["export", str(run_dir), "--to", "inspect", "--inspect-format", "json",
                     "--out", str(tmp_path / "inspect")],
                    ["view", str(run_dir), "--out", str(tmp_path / "view")]):
        assert main(command) == 0, command
    captured = capsys.readouterr()
    judgements = sorted(run_dir.rglob("*.judge.*.json"))
    assert len(judgements) == 4 and server.echoed > 0  # two formats × two rubrics
    assert all("(you sent Authorization: ***; token ***)" in p.read_text() for p in judgements)
    written = everything(tmp_path, captured.out, captured.err, besides=(cases / CASE.name,))
    for secret in forms(SECRET):
        assert secret not in written, secret

# --- a key pasted with a newline ---------------------------------------------------------------------------


@pytest.mark.parametrize(("variable", "key", "said"), [
    ("OPENAI_API_KEY", "sk-pasted-SENTINEL-0123456789\n", "$OPENAI_API_KEY ends with a line feed (\\n)"),
    ("OPENAI_API_KEY", "sk-pasted-SENTINEL-0123456789\r\n", "$OPENAI_API_KEY ends with a carriage return (\\r)"),
    ("GATEWAY_KEY", " sk-pasted-SENTINEL-0123456789", "$GATEWAY_KEY starts with a space"),
    # Each word of a key is registered as a secret for the rest of the process: no word here may be text
    # that a later test's model answers with (a bare "0123456789" was, in the vLLM tests).
    ("GATEWAY_KEY", "sk-pasted-SENTINEL\tsk-pasted-SENTINEL-tail", "$GATEWAY_KEY holds a tab (\\t)"),
])
def test_an_api_key_with_whitespace_is_refused_naming_the_variable_and_the_character(
        variable: str, key: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, key)
    extra: list[str] = []
    if variable != "OPENAI_API_KEY":  # a model config names the variable its key is in
        config = tmp_path / "gateway.yaml"
        config.write_text(f"spec: openai:m\napi_key_env: {variable}\n")
        extra = ["--model-config", str(config)]
    out = tmp_path / "runs"
    code = main(["simulate", "--case", str(CASE), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                 "--format", "free-form", "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"consilium: error: {said}; an API key has no whitespace or control characters "
                                "(a paste mistake?): set it again without it"]
    assert "SENTINEL" not in err and not out.exists()



@pytest.mark.localhost
def test_a_langchain_models_key_with_a_newline_is_refused_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ChatOpenAI`` reads OPENAI_API_KEY itself: a pasted newline is refused in one line naming the variable
    when consilium is given the model, before any call (not five connection failures, retried)."""
    from langchain_openai import ChatOpenAI

    from consilium.errors import UserError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-pasted-SENTINEL-0123456789\n")
    out = tmp_path / "runs"
    with echo_server(answer=True) as server:
        chat = ChatOpenAI(base_url=server.base_url, model="echo", max_retries=0)
        with pytest.raises(UserError) as refused:
            consilium.run(CASE, variants=["free-form"], model=chat, out=out)
    assert str(refused.value) == ("$OPENAI_API_KEY ends with a line feed (\\n); an API key has no whitespace or "
                                  "control characters (a paste mistake?): set it again without it")
    assert server.echoed == 0 and not out.exists()


# --- a LangChain model's own key (not the environment's) and a factory's failure, masked; credentials in a
# URL's query masked -----------------------------------------------------------------------------------------


_FACTORY_SOURCE = '''
import os
from langchain_openai import ChatOpenAI

def chat():
    return ChatOpenAI(model="stub", api_key=os.environ["FACTORY_KEY"], base_url=os.environ["FACTORY_URL"],
                      max_retries=0)

def broken():
    raise RuntimeError("no model for key " + os.environ["FACTORY_KEY"])
'''


#: The chat model's own key: new in each test process, so no other test has registered it for masking.
FACTORY_SECRET = f"sk-langchain-factory-{uuid.uuid4().hex}"


@pytest.fixture
def factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module ``langchain_key_factory`` whose ``chat()`` is a ChatOpenAI holding FACTORY_SECRET as its own key."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "langchain_key_factory.py").write_text(_FACTORY_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key is the chat model's own, not the environment's
    monkeypatch.setenv("FACTORY_KEY", FACTORY_SECRET)
    return "langchain_key_factory"


@pytest.mark.localhost
def test_a_langchain_models_own_key_is_in_no_output(factory: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out, log = tmp_path / "out", tmp_path / "run.log"
    with key_echo_server() as url:
        monkeypatch.setenv("FACTORY_URL", url)
        code = main(["simulate", "--case", str(CASE), "--model", f"langchain:{factory}:chat", "--format",
                     "free-form", "--out", str(out), "--log-file", str(log), "-v"])
    assert code == 1
    captured = capsys.readouterr()
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "400" in written  # the echoed error was recorded, masked
    for text in (written, log.read_text(), captured.out, captured.err):
        assert FACTORY_SECRET not in text
    sys.modules.pop(factory, None)


def test_a_langchain_factorys_failure_message_is_masked(factory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from consilium.errors import UserError
    from consilium.models.backends.langchain_chat import load_chat_model
    from consilium.redact import register_secret

    monkeypatch.setenv("FACTORY_URL", "http://127.0.0.1:9/v1")
    register_secret(FACTORY_SECRET)  # known (as from an earlier model), yet the factory's own message would show it
    with pytest.raises(UserError) as info:
        load_chat_model(f"{factory}:broken")
    assert FACTORY_SECRET not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize(("text", "masked"), [
    ("https://h/v1?api_key=abc123secret", "https://h/v1?api_key=***"),
    ("GET https://h/v1/chat?x=1&key=K99&token=t0k&sig=s1g#f", "GET https://h/v1/chat?x=1&key=***&token=***&sig=***#f"),
    ("https://u:p@h/v1?Password=pw&max_tokens=5&model=m", "https://***@h/v1?Password=***&max_tokens=5&model=m"),
    ("https://h/v1?X-Amz-Signature=abc&access_token=zz", "https://h/v1?X-Amz-Signature=***&access_token=***"),
    ("a = b and x=1", "a = b and x=1"),
])
def test_secret_query_values_are_masked(text: str, masked: str) -> None:
    from consilium.redact import redact, redact_url

    assert redact_url(text) == masked
    assert redact(text) == masked
