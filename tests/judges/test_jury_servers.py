"""Juries across servers: each judge of a jury may live on its own OpenAI-compatible server with its own key,
named ``SPEC@BASE_URL#KEY_VAR`` or by a model config file (docs/models.md, "Judges on their own servers").

Two stand-in servers on 127.0.0.1 serve the same model name and disagree by design on one trace (server A
says every diagnosis matches; server B says the free-form one does not), so each vote shows which server
answered it; every request is kept with its ``Authorization`` header, so each server's count and key are
checked against what was asked of it.
"""

from __future__ import annotations

import csv
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.localserver import HOST, JsonHandler, QuietServer, serving
from support.networks_runs import simulate_varied
from support.scripts import STRUCTURED_REPORT, Scripted, sections

from consilium.api.modelcheck import PROBE_CODE
from consilium.cli import main
from consilium.errors import UserError
from consilium.judges.record import read_judgement

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
RUBRIC = "nmb-diagnosis-match"
#: What the free-form trace's conclusion says (the structured one's is the bare diagnosis).
FREE_FORM = "Final opinion: acute viral myocarditis."
#: The keys each server is meant to get, and the command's own key, which no judge server may get.
KEY_A, KEY_B, KEY_SHARED = "sk-judge-a-0123456789abcdef", "sk-judge-b-fedcba9876543210", "sk-panel-shared-5555aaaa"

pytestmark = pytest.mark.localhost


class JudgeServer:
    """A stand-in judge server: answers every chat request with one match decision, keeps each request."""

    def __init__(self, match: Callable[[str], bool]) -> None:
        self.match = match  # the decision, from the request's messages
        self.seen: list[tuple[str, dict[str, Any]]] = []  # (Authorization header, body)
        self.lock = threading.Lock()
        self.base_url = ""


def _handler(state: JudgeServer) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            with state.lock:
                state.seen.append((self.headers.get("Authorization") or "", body))
            prompt = json.dumps(body.get("messages"))
            schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
            answer = _check_answer(prompt) or _decision(schema, state.match(prompt))
            self._send_json(200, {
                "id": "chatcmpl-judge", "object": "chat.completion", "created": int(time.time()),
                "model": str(body.get("model")),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer if isinstance(
                    answer, str) else json.dumps(answer)},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}})

    return Handler


def _decision(schema: dict[str, Any], yes: bool) -> dict[str, Any]:
    """A judge's answer to the request's schema: a match (the diagnosis rubric's, or no schema sent), a score at the
    top of its scale for yes and at the bottom for no (dissent uptake's 0/1, an ordinal criterion's 1-5, nested
    under the criterion's name)."""
    fields = schema.get("properties") or {}
    if "score" in fields:
        scale = fields["score"].get("enum") or [fields["score"].get("minimum", 0), fields["score"].get("maximum", 1)]
        return {"rationale": "compared with the reference", "score": scale[-1] if yes else scale[0]}
    if fields and "match" not in fields:
        return {name: _decision(field, yes) for name, field in fields.items()}
    return {"rationale": "compared with the reference diagnosis", "match": yes}


def _check_answer(prompt: str) -> dict[str, Any] | str | None:
    """What a well-behaved server answers to `models check`'s three calls (the plain one, the structured one,
    the enforcement probe); None for any other prompt (a judge's)."""
    if "You are a concise clinical assistant." not in prompt:  # models check's system message
        return None
    if "triage code" in prompt:
        return {"code": PROBE_CODE}
    if "Which specialty" in prompt:
        return {"specialty": "cardiology", "urgency": "emergency"}
    return "Inferior ST-elevation myocardial infarction."


class _QuietServerV6(QuietServer):
    address_family = socket.AF_INET6


@contextmanager
def judge_server(match: Callable[[str], bool], *, ipv6: bool = False) -> Iterator[JudgeServer]:
    """A stand-in judge server on 127.0.0.1, or with ``ipv6`` on ::1 (its URL ``http://[::1]:PORT/v1``)."""
    state = JudgeServer(match)
    httpd = _QuietServerV6(("::1", 0), _handler(state)) if ipv6 else QuietServer((HOST, 0), _handler(state))
    with serving(httpd) as url:
        state.base_url = f"http://[::1]:{httpd.server_address[1]}/v1" if ipv6 else url
        yield state


def _panel() -> dict[str, Any]:
    report = sections("Acute viral myocarditis", final_differential="1. Pericarditis", diagnostic_plan="MRI")
    return (Scripted("scripted-panel")
            .roles("Cardiologist", "Radiologist", "Internist", justification=("x", "y", "z"))
            .structured_opinion("myocarditis", clinical_data="c", differential_diagnosis="d", diagnostic_strategy="d")
            .opinion("Myocarditis.")
            .synthesis(report, where={"contains": STRUCTURED_REPORT})
            .synthesis(FREE_FORM)
            .accept()
            .build())


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One case in both formats by a scripted panel: two traces to judge."""
    tmp = tmp_path_factory.mktemp("jury-servers")
    (tmp / "panel.json").write_text(json.dumps(_panel()))
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{tmp / 'panel.json'}",
                 "--out", str(tmp / "runs")]) == 0
    return tmp / "runs"


def _every_file(folder: Path) -> Iterator[tuple[Path, bytes]]:
    for path in folder.rglob("*"):
        if path.is_file():
            yield path, path.read_bytes()


def test_each_judge_of_a_jury_gets_only_its_own_calls_and_its_own_key(
        traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_SHARED)  # the command's key: for neither judge's server
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: FREE_FORM not in prompt) as b:
        config = tmp_path / "judge-b.yaml"  # the same model name, on the other server, by a config file
        config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": b.base_url + "/",
                                          "api_key_env": "JUDGE_B_KEY"}))
        code = main(["judge", str(traces), "--rubric", RUBRIC, "--component", "conclusion", "--no-cache",
                     "--judge-model", f"openai:judge@{a.base_url}#JUDGE_A_KEY", "--judge-model", str(config)])
    captured = capsys.readouterr()
    judgements = [read_judgement(p) for p in sorted(traces.rglob(f"*.judge.{RUBRIC}.json"))]
    assert len(judgements) == 2  # free-form and structured: one conclusion item each
    # Each judge answers each item in one call (every answer is valid at once): one per trace and server.
    assert len(a.seen) == len(b.seen) == sum(len(j.items) for j in judgements) == 2
    assert sum(j.usage.total.calls for j in judgements) == len(a.seen) + len(b.seen)
    assert {auth for auth, _ in a.seen} == {f"Bearer {KEY_A}"}
    assert {auth for auth, _ in b.seen} == {f"Bearer {KEY_B}"}
    assert {body["model"] for _, body in a.seen + b.seen} == {"judge"}
    judge_a, judge_b = f"openai:judge@{a.base_url}", f"openai:judge@{b.base_url}"
    # B's answers differ by trace: it saw the free-form conclusion once, and answered it "no match".
    assert sorted(FREE_FORM in json.dumps(body["messages"]) for _, body in b.seen) == [False, True]
    by_variant = {j.variant: j for j in judgements}
    for variant, b_says in (("free-form", 0), ("structured", 1)):
        judgement = by_variant[variant]
        # The same model on two servers is two judges, each named by its server; each vote is its server's.
        assert [m.judge for m in judgement.jury or []] == [judge_a, judge_b]
        assert judgement.judge_model == f"jury[judge@{a.base_url}, judge@{b.base_url}]"
        [item] = judgement.items
        assert [(v.judge, v.score) for v in item.votes or []] == [(judge_a, 1), (judge_b, b_says)]
        assert item.verdict is not None
        if b_says:  # both say 1: the majority
            assert item.score == 1 and not item.not_evaluable and item.verdict.tie is None
        else:  # 1 against 1: an even split is not evaluable, and says so
            assert item.not_evaluable and item.score is None and "tie: 1 of 2" in (item.verdict.tie or "")
    assert code == 0
    for key in (KEY_A, KEY_B, KEY_SHARED):
        assert key not in captured.out + captured.err
        for path, data in _every_file(traces.parent):
            assert key.encode() not in data, path


def test_a_judge_named_twice_by_a_config_file_and_its_url_is_refused(
        traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    url = "http://127.0.0.1:9/v1"  # never reached: refused before any call
    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": url, "api_key_env": "JUDGE_B_KEY"}))
    code = main(["judge", str(traces), "--rubric", RUBRIC, "--judge-model", f"openai:judge@{url}/",
                 "--judge-model", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"consilium: error: --judge-model: openai:judge@{url}/ and {config} are the same judge "
        f"(openai:judge@{url}) (each judge of a jury once)"]


@pytest.mark.parametrize(("given", "says"), [
    ("openai:judge@127.0.0.1:8001/v1", "a model on its own server is named SPEC@BASE_URL"),
    ("openai:judge@ftp://127.0.0.1/v1", "must be one http:// or https:// URL"),
    ("scripted:x.yaml@http://127.0.0.1:8001/v1", "only a served model (openai:MODEL)"),
    ("openai:judge@http://127.0.0.1:8001/v1#UNSET_JUDGE_KEY", "$UNSET_JUDGE_KEY is not set"),
    ("missing-judge.yaml", "missing-judge.yaml: model config not found"),
    ("unset-key.yaml", "unset-key.yaml: api_key_env: $UNSET_JUDGE_KEY is not set"),
    ("no-scheme.yaml", "no-scheme.yaml: base_url: '127.0.0.1:9/v1' is not one http:// or https:// URL with a host"),
    ("bad-port.yaml", "bad-port.yaml: base_url: 'http://127.0.0.1:x9/v1…' is not one http:// or https:// URL"),
])
def test_a_bad_judge_reference_is_one_line_naming_the_flag(
        given: str, says: str, traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UNSET_JUDGE_KEY", raising=False)
    (tmp_path / "unset-key.yaml").write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": "http://127.0.0.1:9/v1",
                                                             "api_key_env": "UNSET_JUDGE_KEY"}))
    # A config file's server is checked as a URL's is (credentials may stay in a file: never repeated).
    (tmp_path / "no-scheme.yaml").write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": "127.0.0.1:9/v1"}))
    (tmp_path / "bad-port.yaml").write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": [
        "http://127.0.0.1:9/v1", "http://127.0.0.1:x9/v1?key=sk-in-a-file-0000aaaa"]}))
    before = sorted(p.name for p in traces.rglob("*"))
    code = main(["judge", str(traces), "--rubric", RUBRIC, "--judge-model", "openai:other@http://127.0.0.1:9/v1",
                 "--judge-model", given])
    err = capsys.readouterr().err
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith("consilium: error: --judge-model: ") and says in line and "Traceback" not in err
    assert sorted(p.name for p in traces.rglob("*")) == before  # nothing written


def test_a_cohort_records_each_judges_server_but_no_key_and_a_resume_holds_its_jury_to_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_SHARED)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / CASE.name).write_text(CASE.read_text())
    (tmp_path / "panel.json").write_text(json.dumps(_panel()))
    out = tmp_path / "out"
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        Path("judge-b.yaml").write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": b.base_url,
                                                        "api_key_env": "JUDGE_B_KEY"}))
        first = f"openai:judge@{a.base_url}#JUDGE_A_KEY"
        jury = ["--judge-model", first, "--judge-model", "judge-b.yaml"]
        common = ["--model", f"scripted:{tmp_path / 'panel.json'}", "--formats", "structured", "--judge", RUBRIC,
                  "--no-cache"]
        assert main(["cohort", "--cases", "cases", *common, *jury, "--out", str(out)]) == 0
        [manifest] = out.rglob("manifest.json")
        settings = json.loads(manifest.read_text())["settings"]
        # What builds each judge again: the URL and the key's variable, a config file by its absolute path.
        assert [settings["judge_model"], *settings["jury_models"]] == [first, str(tmp_path / "judge-b.yaml")]
        [judgement] = [read_judgement(p) for p in out.rglob(f"*.judge.{RUBRIC}.json")]
        # One structured trace: its conclusion and two ranked candidates (the final opinion, the differential's
        # one), each asked once of each judge, on its own server.
        assert [(i.component, i.criterion) for i in judgement.items] == [
            ("conclusion", "final_conclusion"), ("differential", "rank_1"), ("differential", "rank_2")]
        assert (len(a.seen), len(b.seen)) == (3, 3)
        assert {auth for auth, _ in a.seen} == {f"Bearer {KEY_A}"} and {auth for auth, _ in b.seen} == {
            f"Bearer {KEY_B}"}
        assert [(v.judge, v.score) for v in judgement.items[0].votes or []] == [
            (f"openai:judge@{a.base_url}", 1), (f"openai:judge@{b.base_url}", 0)]
        run_dir = str(manifest.parent)
        # The same jury, the file named another way: the same judges, resumed.
        same = ["--judge-model", first, "--judge-model", str(tmp_path / "judge-b.yaml")]
        assert main(["cohort", "--resume", run_dir, *same]) == 0
        # An experiment file naming the same jury its own way (a mapping with the server and the key's variable,
        # the config file relative to the experiment's folder) is the same jury too.
        (tmp_path / "study").mkdir()
        experiment = tmp_path / "study" / "jury.yaml"
        experiment.write_text(yaml.safe_dump({
            "cases": "../cases", "models": [f"scripted:{tmp_path / 'panel.json'}"], "formats": ["structured"],
            "judges": [RUBRIC], "judge_model": [{"spec": "openai:judge", "base_url": a.base_url,
                                                 "api_key_env": "JUDGE_A_KEY"}, "../judge-b.yaml"]}))
        assert main(["cohort", "--resume", run_dir, "--experiment", str(experiment)]) == 0
        capsys.readouterr()
        # The first judge moved to the other server: another judge, refused in one line.
        moved = ["--judge-model", f"openai:judge@{b.base_url}#JUDGE_A_KEY", "--judge-model", "judge-b.yaml"]
        assert main(["cohort", "--resume", run_dir, *moved]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("consilium: error: --judge-model: ")
        # The key's variable unset when the cohort is resumed: one line naming the manifest's judge and the variable.
        monkeypatch.delenv("JUDGE_A_KEY")
        assert main(["cohort", "--resume", run_dir]) == 2
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == [f"consilium: error: --resume: {run_dir}/manifest.json: judge: {first}: "
                                    "$JUDGE_A_KEY is not set"]
    captured = capsys.readouterr()
    for key in (KEY_A, KEY_B, KEY_SHARED):
        assert key not in captured.out + captured.err
        for path, data in _every_file(tmp_path):
            assert key.encode() not in data, path


def test_the_api_judges_with_a_jury_across_servers(traces: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import consilium

    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_SHARED)
    [trace] = list(traces.rglob("*.structured.trace.json"))
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        config = tmp_path / "judge-b.json"
        config.write_text(json.dumps({"spec": "openai:judge", "base_url": b.base_url, "api_key_env": "JUDGE_B_KEY"}))
        jury = [f"openai:judge@{a.base_url}#JUDGE_A_KEY", str(config)]
        judgement = consilium.judge(trace, RUBRIC, judge_model=jury, components=["conclusion"])
    assert (len(a.seen), len(b.seen)) == (1, 1)  # the conclusion, once by each judge
    assert {auth for auth, _ in a.seen} == {f"Bearer {KEY_A}"} and {auth for auth, _ in b.seen} == {
        f"Bearer {KEY_B}"}
    [item] = judgement.items
    assert [(v.judge, v.score) for v in item.votes or []] == [(f"openai:judge@{a.base_url}", 1),
                                                              (f"openai:judge@{b.base_url}", 0)]


#: A key pasted where a server's URL goes, in each place a malformed reference may carry it.
PASTED = "sk-pasted-by-mistake-77aa88bb99cc"


@pytest.mark.parametrize(("given", "says"), [
    (f"openai:judge@https://judge.example.com:8443/v1?code={PASTED}", "no credentials or query in the URL"),
    (f"openai:judge@http://127.0.0.1:9/v1 {PASTED}", "must be one http:// or https:// URL"),
    (f"openai:judge@http://127.0.0.1:9/v1,http://127.0.0.1:9/{PASTED}", "must be one http:// or https:// URL"),
    (f"openai:judge@judge.example.com:8443/v1#{PASTED}", "a model on its own server is named SPEC@BASE_URL"),
    (f"openai:judge@judge.example.com/v1?key={PASTED}", "a model on its own server is named SPEC@BASE_URL"),
    (f"openai:judge@http://127.0.0.1:9/v1#{PASTED}", "after '#' comes the name of the environment variable"),
])
def test_a_malformed_judge_reference_never_repeats_a_key_pasted_into_it(
        given: str, says: str, traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["judge", str(traces), "--rubric", RUBRIC, "--judge-model", given])
    captured = capsys.readouterr()
    assert code == 2
    [line] = captured.err.strip().splitlines()
    assert line.startswith("consilium: error: --judge-model: ") and says in line
    assert PASTED not in captured.out + captured.err


@pytest.mark.parametrize(("first", "second", "same"), [
    ("openai:judge@HTTP://Judge.Example.COM:443/v1", "openai:judge@http://judge.example.com:443/v1/",
     "openai:judge@http://judge.example.com:443/v1"),
    ("openai:judge@https://judge.example.com:443/a/v1//", "openai:judge@https://JUDGE.example.com/a/v1",
     "openai:judge@https://judge.example.com/a/v1"),
    ("openai:judge@http://[0:0:0:0:0:0:0:1]:8001/v1", "openai:judge@http://[::1]:8001/v1/",
     "openai:judge@http://[::1]:8001/v1"),
    ("openai:judge@http://127.0.0.1:80/v1#JUDGE_A_KEY", "openai:judge@http://127.0.0.1/v1#JUDGE_B_KEY",
     "openai:judge@http://127.0.0.1/v1"),
])
def test_one_server_written_two_ways_is_the_same_judge(
        first: str, second: str, same: str, traces: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The scheme's and host's case, the scheme's default port, an IPv6 address's spelling and trailing slashes
    # do not make another server: the second is the first judge again, refused before any call.
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    code = main(["judge", str(traces), "--rubric", RUBRIC, "--judge-model", first, "--judge-model", second])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"consilium: error: --judge-model: {first} and {second} are the same judge ({same}) "
        "(each judge of a jury once)"]


@pytest.mark.parametrize("form", ["url", "config file"])
def test_models_check_reaches_a_judges_own_server_with_its_own_key(
        form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # A judge's server is checked before a cohort by naming the judge as --judge-model names it; the command's
    # own server and key (here a third stand-in) are never asked.
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_SHARED)
    with judge_server(lambda prompt: True) as judge, judge_server(lambda prompt: True) as command:
        monkeypatch.setenv("OPENAI_BASE_URL", command.base_url)
        config = tmp_path / "judge.yaml"
        config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": judge.base_url,
                                          "api_key_env": "JUDGE_A_KEY"}))
        ref = f"openai:judge@{judge.base_url}/#JUDGE_A_KEY" if form == "url" else str(config)
        code = main(["models", "check", "--model", ref])
    out = capsys.readouterr().out
    assert code == 0
    assert command.seen == []
    # The plain call, the structured one and the probe, each once, each with the judge's own key.
    assert len(judge.seen) == 3 and {auth for auth, _ in judge.seen} == {f"Bearer {KEY_A}"}
    assert {body["model"] for _, body in judge.seen} == {"judge"}
    assert out.splitlines()[0] == f"model: judge  (spec {ref})"
    assert "schema enforced: yes" in out
    assert KEY_A not in out and KEY_SHARED not in out


def test_two_servers_of_one_model_name_never_share_cached_answers(
        traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The response cache is keyed by the server: server B is asked though A answered the same requests for the
    # same model name a moment before, and a judge asked again on its own server is served from the cache.
    cache = ["--cache-path", str(tmp_path / "responses.sqlite")]
    judge = ["judge", str(traces), "--rubric", RUBRIC, "--component", "conclusion", "--force", *cache]
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        assert main([*judge, "--judge-model", f"openai:judge@{a.base_url}"]) == 0
        assert main([*judge, "--judge-model", f"openai:judge@{b.base_url}/"]) == 0
        b_scores = {j.variant: j.items[0].score for j in map(read_judgement, traces.rglob(f"*.judge.{RUBRIC}.json"))}
        assert main([*judge, "--judge-model", f"openai:judge@{a.base_url}"]) == 0
        a_scores = {j.variant: j.items[0].score for j in map(read_judgement, traces.rglob(f"*.judge.{RUBRIC}.json"))}
    capsys.readouterr()
    assert (len(a.seen), len(b.seen)) == (2, 2)  # each trace's conclusion once per server; A's third run: cached
    assert b_scores == {"free-form": 0, "structured": 0} and a_scores == {"free-form": 1, "structured": 1}


def test_the_apis_cohort_resumes_with_its_jury_named_as_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # run_cohort(judge_model=[...]) takes the forms --judge-model takes, and a resume naming the jury exactly as the
    # cohort was started (a relative config file, a URL with a trailing slash) is the same jury.
    import consilium

    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / CASE.name).write_text(CASE.read_text())
    (tmp_path / "panel.json").write_text(json.dumps(_panel()))
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        Path("judge-b.yaml").write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": b.base_url,
                                                        "api_key_env": "JUDGE_B_KEY"}))
        common: dict[str, Any] = {"models": f"scripted:{tmp_path / 'panel.json'}", "formats": "structured",
                                  "judges": RUBRIC, "judge_model": [f"openai:judge@{a.base_url}/#JUDGE_A_KEY",
                                                                    "judge-b.yaml"]}
        first = consilium.run_cohort("cases", out="out", **common)
        settings = json.loads((first.run_dir / "manifest.json").read_text())["settings"]
        assert [settings["judge_model"], *settings["jury_models"]] == [
            f"openai:judge@{a.base_url}#JUDGE_A_KEY", str(tmp_path / "judge-b.yaml")]
        again = consilium.run_cohort(resume=first.run_dir, **common)
        assert again.run_dir == first.run_dir and again.counts == {**first.counts, "resumed": 1}
        # A judge named twice (its file and its URL) is refused as on the command line.
        with pytest.raises(UserError, match="are the same judge"):
            consilium.run_cohort("cases", out="out2", **{**common, "judge_model": [
                f"openai:judge@{b.base_url}#JUDGE_B_KEY", "judge-b.yaml"]})
    assert (len(a.seen), len(b.seen)) == (3, 3)  # the first run's three items; the resume judged nothing again


def test_a_resume_whose_judge_config_file_now_names_another_server_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The manifest keeps a config-file judge by its path and reads the file again on resume: a file edited to name
    # another server (or model) would judge the rest of the cohort by another judge than its first arms. The
    # manifest keeps each judge's name as it started, and a resume (and an ablation of the cohort) holds the file
    # to it; the key's variable in the file may change (it is not the judge).
    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    monkeypatch.setenv("JUDGE_C_KEY", KEY_A)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / CASE.name).write_text(CASE.read_text())
    (tmp_path / "panel.json").write_text(json.dumps(_panel()))
    config = tmp_path / "judge.yaml"
    with judge_server(lambda prompt: True) as b, judge_server(lambda prompt: False) as c:
        config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": b.base_url,
                                          "api_key_env": "JUDGE_B_KEY"}))
        common = ["--model", f"scripted:{tmp_path / 'panel.json'}", "--formats", "structured", "--judge", RUBRIC,
                  "--no-cache", "--judge-model", "judge.yaml"]
        assert main(["cohort", "--cases", "cases", *common, "--out", "out"]) == 0
        [manifest] = Path("out").rglob("manifest.json")
        assert json.loads(manifest.read_text())["settings"]["judge_names"] == [f"openai:judge@{b.base_url}"]
        config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": b.base_url + "/",
                                          "api_key_env": "JUDGE_C_KEY"}))
        assert main(["cohort", "--resume", str(manifest.parent)]) == 0  # its key's variable renamed: the same judge
        capsys.readouterr()
        # A resume judges its arms again (from the cache, here off): on B, with the renamed variable's key.
        assert [auth for auth, _ in b.seen] == [f"Bearer {KEY_B}"] * 3 + [f"Bearer {KEY_A}"] * 3
        config.write_text(yaml.safe_dump({"spec": "openai:judge", "base_url": c.base_url,
                                          "api_key_env": "JUDGE_C_KEY"}))
        for command in (["cohort", "--resume", str(manifest.parent)], ["cohort", "--resume", str(manifest.parent),
                                                                       "--judge-model", "judge.yaml"]):
            assert main(command) == 2
            assert capsys.readouterr().err.strip().splitlines() == [
                f"consilium: error: --resume: {manifest.parent}/manifest.json: judge: {config} now names "
                f"openai:judge@{c.base_url}, not the cohort's judge openai:judge@{b.base_url} (a resumed cohort "
                "keeps its judges: restore the file, or start a new cohort)"]
        assert main(["ablate", str(manifest.parent), "--kind", "no-deliberation", "--out", "ablated"]) == 2
        assert "now names" in capsys.readouterr().err
    assert len(b.seen) == 6 and c.seen == []  # nothing judged after the file named C


def test_analyze_tells_one_model_on_two_servers_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # An uptake judgement made by a judge on server A is not read back as server B's (the same model name):
    # analyze names its judge with its server, refuses to reuse or overwrite A's decisions for B's, and with
    # --force asks B.
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    run = simulate_varied(tmp_path / "sim")
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        analyze = ["analyze", str(run), "--no-cache", "--judge-model"]
        assert main([*analyze, f"openai:judge@{a.base_url}#JUDGE_A_KEY"]) == 0
        (record,) = sorted((run / "analysis").rglob("*.dissent-uptake.judgement.json"))
        judged_by_a = json.loads(record.read_text())
        assert judged_by_a["judge_model"] == f"judge@{a.base_url}"
        assert {i["score"] for i in judged_by_a["items"] if i["detail"]["to_version"]} == {1}
        capsys.readouterr()
        assert main([*analyze, f"openai:judge@{b.base_url}"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "never overwritten" in err
        assert f"by judge judge@{a.base_url} (rubric v1), not run {run.name} by judge judge@{b.base_url}" in err
        assert b.seen == []
        assert main([*analyze, f"openai:judge@{b.base_url}", "--force"]) == 0
        judged_by_b = json.loads(record.read_text())
    assert judged_by_b["judge_model"] == f"judge@{b.base_url}"
    assert {i["score"] for i in judged_by_b["items"] if i["detail"]["to_version"]} == {0}
    assert len(a.seen) == len(b.seen) == 4  # the four dissents a revision followed, once on each server
    assert {auth for auth, _ in a.seen} == {f"Bearer {KEY_A}"}
    assert {auth for auth, _ in b.seen} == {"Bearer not-needed"}


def test_a_resume_takes_a_judges_key_from_a_renamed_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The key's variable is how a judge is reached, not who it is: a resume naming the same judge with another
    # variable is the same jury, sends the new variable's key to that server only, and the manifest keeps the new
    # name for the next resume; the same variable on another server is still another judge.
    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / CASE.name).write_text(CASE.read_text())
    (tmp_path / "panel.json").write_text(json.dumps(_panel()))
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: False) as b:
        common = ["--model", f"scripted:{tmp_path / 'panel.json'}", "--formats", "structured", "--judge", RUBRIC,
                  "--no-cache"]
        assert main(["cohort", "--cases", "cases", *common, "--out", "out",
                     "--judge-model", f"openai:judge@{a.base_url}#JUDGE_A_KEY"]) == 0
        [manifest] = Path("out").rglob("manifest.json")
        monkeypatch.delenv("JUDGE_A_KEY")
        monkeypatch.setenv("JUDGE_ROTATED_KEY", KEY_B)
        renamed = f"openai:judge@{a.base_url}/#JUDGE_ROTATED_KEY"
        assert main(["cohort", "--resume", str(manifest.parent), "--judge-model", renamed]) == 0
        settings = json.loads(manifest.read_text())["settings"]
        assert (settings["judge_model"], settings["judge_names"]) == (
            f"openai:judge@{a.base_url}#JUDGE_ROTATED_KEY", [f"openai:judge@{a.base_url}"])
        assert main(["cohort", "--resume", str(manifest.parent)]) == 0  # the manifest's variable is the new one
        capsys.readouterr()
        assert main(["cohort", "--resume", str(manifest.parent),
                     "--judge-model", f"openai:judge@{b.base_url}#JUDGE_ROTATED_KEY"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "differs from the resumed cohort's" in err
    # The first run's three items with the first key, each resume's with the renamed variable's; none on B.
    assert [auth for auth, _ in a.seen] == [f"Bearer {KEY_A}"] * 3 + [f"Bearer {KEY_B}"] * 6 and b.seen == []


def test_calibrate_finds_a_lone_judge_on_its_own_server_by_its_reference(
        traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Judgements by one judge on its own server: --judge names it as --judge-model did (any form), and its scores
    # are read (the one judge's own); a judge of another server is not it.
    import shutil

    run = tmp_path / "runs"
    shutil.copytree(traces, run, ignore=shutil.ignore_patterns("*.judge.*", "judgements.csv"))
    rubric = "otb-conclusion-alignment"  # an ordinal scale: the server answers its top, or its bottom for free text
    with judge_server(lambda prompt: FREE_FORM not in prompt) as a:
        assert main(["judge", str(run), "--rubric", rubric, "--no-cache",
                     "--judge-model", f"openai:judge@{a.base_url}"]) == 0
    judged = {j.variant: j for j in map(read_judgement, run.rglob(f"*.judge.{rubric}.json"))}
    ratings = tmp_path / "ratings.csv"  # the physician says 2 and 4 where the judge says 1 and 5
    ratings.write_text("case_id,component,criterion,rater,score,variant\n" + "".join(
        f"{j.case_id},conclusion,conclusion_alignment,dr-a,{score},{variant}\n"
        for variant, j, score in (("free-form", judged["free-form"], 2), ("structured", judged["structured"], 4))))
    calibrate = ["calibrate", "agreement", "--ratings", str(ratings), "--judgements", str(run), "--rubric", rubric,
                 "--bootstrap", "10", "--out", str(tmp_path / "agreement")]
    capsys.readouterr()
    assert main([*calibrate, "--judge", f"openai:judge@{a.base_url}/"]) == 0
    [row] = [r for r in csv.DictReader((tmp_path / "agreement" / "agreement.csv").open()) if r["criterion"] != "pooled"]
    assert [(i.score, i.component) for j in (judged["free-form"], judged["structured"]) for i in j.items] == [
        (1, "conclusion"), (5, "conclusion")]
    assert (row["n"], float(row["mae"])) == ("2", 1.0)  # |2 - 1| and |4 - 5|
    capsys.readouterr()
    assert main([*calibrate, "--judge", "openai:judge@http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"judged by judge@{a.base_url} alone" in err


def test_a_judge_on_an_ipv6_server_is_reached_and_named_by_its_short_address(
        traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    monkeypatch.setenv("JUDGE_B_KEY", KEY_B)
    run = tmp_path / "runs"
    shutil.copytree(traces, run, ignore=shutil.ignore_patterns("*.judge.*", "judgements.csv"))
    with judge_server(lambda prompt: True) as a, judge_server(lambda prompt: FREE_FORM not in prompt, ipv6=True) as b:
        port = b.base_url.rsplit(":", 1)[1].removesuffix("/v1")
        long_form = f"openai:judge@http://[0:0:0:0:0:0:0:1]:{port}/v1/#JUDGE_B_KEY"
        assert main(["judge", str(run), "--rubric", RUBRIC, "--component", "conclusion", "--no-cache",
                     "--judge-model", f"openai:judge@{a.base_url}", "--judge-model", long_form]) == 0
    capsys.readouterr()
    assert (len(a.seen), len(b.seen)) == (2, 2) and {auth for auth, _ in b.seen} == {f"Bearer {KEY_B}"}
    for judgement in map(read_judgement, run.rglob(f"*.judge.{RUBRIC}.json")):
        assert [m.judge for m in judgement.jury or []] == [f"openai:judge@{a.base_url}",
                                                           f"openai:judge@http://[::1]:{port}/v1"]
        assert [v.score for v in judgement.items[0].votes or []] == [1, int(judgement.variant == "structured")]


@pytest.mark.parametrize("answer", [True, False])
def test_a_judge_key_its_server_echoes_back_is_masked_everywhere(
        answer: bool, traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A server that echoes the Authorization header, in its answers or in its errors: the key a judge took from its
    # own variable (never the command's) reaches no judgement, CSV, log or output.
    import shutil

    from support.keyecho import echo_server

    monkeypatch.setenv("JUDGE_A_KEY", KEY_A)
    run = tmp_path / "runs"
    shutil.copytree(traces, run, ignore=shutil.ignore_patterns("*.judge.*", "judgements.csv"))
    with echo_server(answer=answer) as server:
        code = main(["judge", str(run), "--rubric", RUBRIC, "--component", "conclusion", "--no-cache",
                     "--max-attempts", "1", "--judge-model", f"openai:judge@{server.base_url}#JUDGE_A_KEY"])
    captured = capsys.readouterr()
    assert code in (0, 1)  # answered (judged), or every call refused (not evaluable, said)
    assert list(run.rglob(f"*.judge.{RUBRIC}.json"))
    assert KEY_A not in captured.out + captured.err
    everything = b"".join(data for _, data in _every_file(tmp_path)) + (captured.out + captured.err).encode()
    assert b"(you sent Authorization: ***; token ***)" in everything  # the echo came back, masked
    for path, data in _every_file(tmp_path):
        assert KEY_A.encode() not in data, path
