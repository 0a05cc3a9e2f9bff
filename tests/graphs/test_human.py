"""A physician at the table (docs/human.md): ``simulate --human ROLE`` with an answers file and at a terminal
(under a pseudo-terminal), pausing and resuming from the run's checkpoint, replay, and bad input."""

from __future__ import annotations

import collections
import contextlib
import copy
import io
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.isolation import isolated

import consilium
from consilium.cli import main
from consilium.errors import UserError
from consilium.graphs.consilium.seat import SEAT_JUSTIFICATION, HumanPrompt, seat_human
from consilium.roles.catalogue import load_catalogue

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
ANSWERS = ROOT / "examples" / "answers" / "cardiologist-myocarditis.yaml"
FORMATS = ("free-form", "structured")
#: What differs between two runs of the same answers: when they ran.
TIMES = ("started_at", "wall_s", "run_id")


def simulate(tmp_path: Path, *extra: str, out: str = "runs") -> int:
    return main(["simulate", "--case", str(CASE), "--model", PANEL, "--out", str(tmp_path / out), *extra])


def run_dir(tmp_path: Path, out: str = "runs") -> Path:
    [folder] = (tmp_path / out).iterdir()
    return folder


def traces(folder: Path) -> dict[str, dict[str, Any]]:
    return {fmt: json.loads(next(folder.glob(f"*.{fmt}.trace.json")).read_text()) for fmt in FORMATS
            if any(folder.glob(f"*.{fmt}.trace.json"))}


def untimed(trace: dict[str, Any]) -> dict[str, Any]:
    trace = {k: v for k, v in trace.items() if k not in TIMES}
    trace["calls"] = [{k: v for k, v in c.items() if k != "started_at"} for c in trace["calls"]]
    return trace


def write_answers(path: Path, answers: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(answers), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def seated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run in both formats with the person in the cardiologist's seat, every answer from ANSWERS: its folder,
    made once; the tests only read it."""
    tmp = tmp_path_factory.mktemp("seated")
    with isolated(tmp):
        assert simulate(tmp, "--human", "Cardiologist", "--answers", str(ANSWERS)) == 0
    return run_dir(tmp)


def copy_of(folder: Path, tmp_path: Path) -> Path:
    """A copy of a run folder under ``tmp_path``/runs, for a test that resumes or damages it."""
    copy = tmp_path / "runs" / folder.name
    shutil.copytree(folder, copy)
    return copy


def test_the_answers_file_seats_a_person_in_both_formats(seated: Path) -> None:
    given = yaml.safe_load(ANSWERS.read_text())
    for fmt, trace in traces(seated).items():
        human = trace["human"]
        # Not on the scripted panel (internist, neurologist, radiologist): added as a supporting member.
        assert human["role"] == "cardiologist" and human["added"]
        assert {i["source"] for i in human["inputs"]} == {"file"}
        assert trace["roles"][-1] == {"id": "cardiologist", "label": "Cardiologist", "category": "cardiology",
                                      "category_name": "Cardiology", "primary": False,
                                      "justification": SEAT_JUSTIFICATION}
        [opinion] = [o for o in trace["opinions"] if o["role"] == "cardiologist"]
        if fmt == "free-form":
            assert opinion["text"] == given[fmt]["opinion"].strip() and opinion["sections"] is None
        else:
            assert opinion["sections"] == given[fmt]["opinion"]
        assert [(i["stage"], i["round"]) for i in human["inputs"]] == [("opinion", None), ("vote", 1), ("vote", 2)]
        for rnd in trace["rounds"]:
            [vote] = [v for v in rnd["votes"] if v["role"] == "cardiologist"]
            wanted = given[fmt]["votes"][rnd["round"]]
            assert (vote["vote"], vote["reason"]) == (wanted["vote"], wanted["reason"])
            assert vote["requested_change"] == wanted.get("requested_change")
        # A person's answer is not a model call: no call, no tokens, for the seat.
        assert all(c["role"] != "cardiologist" for c in trace["calls"])
        assert trace["usage"]["total"]["calls"] == len(trace["calls"]) == 12
        assert "cardiologist" not in trace["usage"]["by_role"]
    free = traces(seated)["free-form"]
    assert [r["dissent_fraction"] for r in free["rounds"]] == [0.5, 0.0]  # the radiologist and the person
    # The person's opinion reached the moderator's synthesis under the seat's label.
    [synthesis] = [c for c in free["calls"] if c["stage"] == "synthesis"]
    assert f"[Cardiologist]\n{given['free-form']['opinion'].strip()}" in synthesis["messages"][-1]["content"]


def test_replay_reproduces_a_run_with_a_person_without_a_prompt_or_a_model(seated: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted(seated.glob("*.trace.json"))
    capsys.readouterr()
    assert main(["replay", *map(str, paths)]) == 0
    said = capsys.readouterr()
    assert said.out.count("identical (12 recorded calls served, 0 model calls") == 2
    assert "Your turn" not in said.out + said.err
    check = consilium.replay(paths[0])
    assert check.identical and check.served == 12 and check.replayed.human is not None


def test_a_paused_run_resumes_where_it_stopped_and_matches_an_uninterrupted_one(
        seated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    partial = yaml.safe_load(ANSWERS.read_text())
    del partial["free-form"]["votes"][2]
    capsys.readouterr()
    assert simulate(tmp_path, "--human", "Cardiologist", "--answers",
                    str(write_answers(tmp_path / "partial.yaml", partial))) == 2
    err = capsys.readouterr().err.strip()
    folder = run_dir(tmp_path)
    assert "\n" not in err and "partial.yaml: free-form.votes.2: missing" in err
    assert f"consilium simulate --resume {folder}" in err
    assert not list(folder.glob("*.trace.json"))  # nothing written until the run is whole
    before = json.loads((folder / "human" / "free-form.calls.json").read_text())
    assert [(c["stage"], c["round"]) for c in before][-3:] == [("vote", 2)] * 3  # the panel's round-2 votes

    assert main(["simulate", "--resume", str(folder), "--answers", str(ANSWERS)]) == 0
    resumed, whole = traces(folder), traces(seated)
    for fmt in FORMATS:
        assert untimed(resumed[fmt]) == untimed(whole[fmt])
    # The calls made before the pause were not made again: the trace holds them as first made (same times).
    assert resumed["free-form"]["calls"][:len(before)] == before
    # Only the person's round-2 vote was left: it completes the consensus, and no model is asked again.
    assert len(resumed["free-form"]["calls"]) == len(before) == 12


def test_the_persons_dissent_drives_a_revision(tmp_path: Path) -> None:
    # The person takes the radiologist's seat, the one member of the scripted panel that dissents; the
    # models accept, so whether the report is revised is the person's doing.
    vote = {"vote": "dissent", "reason": "The confirming test is missing.",
            "requested_change": "Add cardiac MRI with late gadolinium enhancement."}
    dissent = {"free-form": {"opinion": "Myocarditis; confirm with cardiac MRI.",
                             "votes": {1: vote, 2: {"vote": "accept", "reason": "Now complete."}}}}
    accept = copy.deepcopy(dissent)
    accept["free-form"]["votes"] = {1: {"vote": "accept", "reason": "Fine as it stands."}}
    for name, answers in (("dissent", dissent), ("accept", accept)):
        assert simulate(tmp_path, "--formats", "free-form", "--human", "radiology", "--answers",
                        str(write_answers(tmp_path / f"{name}.yaml", answers)), out=name) == 0
    [revised] = traces(run_dir(tmp_path, "dissent")).values()
    [accepted] = traces(run_dir(tmp_path, "accept")).values()
    assert revised["human"]["role"] == "radiologist" and not revised["human"]["added"]  # by its category
    assert [r["dissent_fraction"] for r in revised["rounds"]] == [0.333333, 0.0]  # 1 of 3
    assert revised["stop_reason"] == "consensus" and len(revised["reports"]) == 2
    [revision] = [c for c in revised["calls"] if c["stage"] == "revision"]
    assert vote["requested_change"] in revision["messages"][-1]["content"]
    assert [r["dissent_fraction"] for r in accepted["rounds"]] == [0.0]
    assert accepted["stop_reason"] == "consensus" and not [c for c in accepted["calls"] if c["stage"] == "revision"]


def test_the_seat_is_a_label_then_a_category_else_an_added_member() -> None:
    catalogue = load_catalogue()

    def role(label: str) -> Any:
        from consilium.agents.records import AssignedRole
        category = catalogue.map_label(label)
        return AssignedRole(id=label.lower().replace(" ", "-"), label=label, category=category.id,
                            category_name=category.name, primary=False, justification="j")

    panel = [role("Cardiologist"), role("Interventional cardiologist"), role("Radiologist")]
    assert seat_human(panel, "  interventional   CARDIOLOGIST ") == (panel, "interventional-cardiologist")
    assert seat_human(panel, "Cardiology") == (panel, "cardiologist")  # the first member of the category
    assert seat_human(panel, "Cardiac imaging specialist") == (panel, "radiologist")  # mapped to radiology
    roles, seat = seat_human(panel, "Wound care nurse")  # category "other" matches no one: added
    assert seat == "wound-care-nurse" and roles[:3] == panel and roles[3].category == "other"
    assert roles[3].justification == SEAT_JUSTIFICATION and not roles[3].primary


def test_the_api_takes_answers_as_a_mapping_or_a_callback() -> None:
    given = yaml.safe_load(ANSWERS.read_text())
    [by_mapping] = consilium.run(CASE, variants=["structured"], model=PANEL, human="Cardiologist", answers=given)
    assert by_mapping.human is not None and {i.source for i in by_mapping.human.inputs} == {"api"}
    seen: list[HumanPrompt] = []

    def answer(prompt: HumanPrompt) -> Any:
        seen.append(prompt)
        fmt = given[prompt.format]
        return fmt["opinion"] if prompt.stage == "opinion" else fmt["votes"][prompt.round]

    [by_callback] = consilium.run(CASE, variants=["structured"], model=PANEL, human="Cardiologist", answers=answer)
    assert [(p.stage, p.round) for p in seen] == [("opinion", None), ("vote", 1), ("vote", 2)]
    assert "24-year-old man" in seen[0].case_text and seen[0].sections is not None
    assert seen[0].sections["final_conclusion"] == 800  # the structured opinion's section caps at the default
    assert seen[1].report_version == 1 and seen[1].report_text == by_callback.reports[0].text
    assert seen[2].report_version == 2 and seen[2].report_text == by_callback.reports[1].text
    assert by_callback.rounds == by_mapping.rounds and by_callback.opinions == by_mapping.opinions


@pytest.mark.parametrize(("answers", "message"), [
    ({"free-form": {"votes": {1: {"vote": "maybe", "reason": "x"}}}},
     "bad.yaml: free-form.votes.1.vote: accept or dissent, not 'maybe'"),
    ({"free-form": {"opinoin": "x"}}, "bad.yaml: free-form.opinoin: not a field (give opinion and votes)"),
    ({"freeform": {}}, "bad.yaml: freeform: not a format (give free-form or structured)"),
    ({"free-form": {"votes": {"first": {"vote": "accept", "reason": "x"}}}},
     "bad.yaml: free-form.votes.first: a review round is a positive integer"),
    ({"structured": {"opinion": {"clinical_data": "d"}}},
     "bad.yaml: structured.opinion.syndromes: missing (a structured opinion has clinical_data"),
    ({"free-form": {"opinion": "x" * 4801}},
     "bad.yaml: free-form.opinion: the answer is 4801 characters long, over its length budget of 4800"),
])
def test_a_malformed_answers_file_is_one_line_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             answers: dict[str, Any], message: str) -> None:
    path = write_answers(tmp_path / "bad.yaml", answers)
    assert simulate(tmp_path, "--human", "Cardiologist", "--answers", str(path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err.replace(str(tmp_path) + "/", ""), err


@pytest.mark.parametrize(("args", "message"), [
    (["--answers", str(ANSWERS)], "--answers: the answers are a person's: give --human ROLE too"),
    (["--human", "Cardiologist"], "--human: stdin is not a terminal: give the person's answers with --answers"),
    (["--human", " ", "--answers", str(ANSWERS)], "--human: give the role the person plays"),
    (["--human", "Cardiologist", "--answers", str(ANSWERS), "--protocol", "single"],
     "--human: protocol 'single' lacks what a person's seat needs"),
])
def test_bad_human_flags_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert simulate(tmp_path, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_resume_needs_a_run_with_a_person(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--resume", str(tmp_path)]) == 2
    assert "--resume: not a run with a person at the table (no human/session.json)" in capsys.readouterr().err


class Terminal:
    """``python -m consilium ARGS`` on a pseudo-terminal: read what it shows, type answers."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command, its stdin, stdout and stderr the terminal
            os.chdir(cwd)
            os.execv(sys.executable, [sys.executable, "-m", "consilium", *args])
        self.seen = ""  # shown and not yet consumed
        self.log = ""  # everything shown

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Everything shown up to ``text`` (consumed), failing after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"timed out waiting for {text!r}; the terminal shows:\n{self.seen[-2000:]}")
            try:
                chunk = os.read(self.fd, 65536).decode(errors="replace")
            except OSError:  # the child has exited
                chunk = ""
            if not chunk:
                raise AssertionError(f"the command ended before {text!r}:\n{self.seen[-2000:]}")
            self.seen += chunk.replace("\r\n", "\n")
            self.log += chunk.replace("\r\n", "\n")
        shown, _, self.seen = self.seen.partition(text)
        return shown

    def close(self) -> None:
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def type(self, *lines: str) -> None:
        os.write(self.fd, "".join(f"{line}\n" for line in lines).encode())

    def rest(self, timeout: float = 120.0) -> tuple[int, str]:
        """Its exit status and what it showed until it ended, failing after ``timeout`` seconds: a command
        that never ends (one that missed its Ctrl-C, say) fails its test instead of holding the test run."""
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"the command did not end within {timeout:.0f} s; the terminal shows:\n"
                                     f"{self.log[-2000:]}")
            try:
                chunk = os.read(self.fd, 65536).decode(errors="replace")
            except OSError:
                break
            if not chunk:
                break
            self.log += chunk.replace("\r\n", "\n")
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status), self.log


STRUCTURED = ("clinical data", "syndromes", "differential diagnosis", "diagnostic strategy",
              "management strategy", "final conclusion")


def _answer_turn(term: Terminal) -> tuple[str, str]:
    """Answer whichever turn comes next: (format, stage), from its heading."""
    term.expect("== Your turn: Radiologist (supporting) · ")
    heading = term.expect("\n")
    fmt, _, what = heading.partition(" · ")
    if what == "opinion" and fmt == "free-form":
        term.expect("opinion (end with a blank line):\n")
        term.type("Myocarditis is most likely;", "confirm it with cardiac MRI.", "")
    elif what == "opinion":
        for section in STRUCTURED:
            term.expect(f"{section} (at most ")
            term.type(f"my {section}", "")
    else:
        term.expect("The moderator's shared report, version ")
        term.expect("vote (accept/dissent): ")
        if what.endswith("round 1"):
            term.type("maybe")  # not a vote: asked again
            term.expect("vote (accept/dissent): ")
            term.type("dissent", "No confirming test.")
            term.expect("requested change (blank for none): ")
            term.type("Add cardiac MRI.")
        else:
            term.type("accept", "Complete now.")
    return fmt, what


def test_the_terminal_prompts_for_each_format_under_a_pseudo_terminal(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "--case", str(CASE), "--model", PANEL, "--out", str(tmp_path / "runs"),
            "--human", "Radiologist", "--no-cache"]
    term = Terminal(args, ROOT)
    try:
        turns = {_answer_turn(term) for _ in range(6)}  # an opinion and two votes in each format
        status, shown = term.rest()
    finally:
        term.close()
    assert status == 0, shown
    # The case and the member's brief, shown once at the first turn; each vote shows the report under review.
    assert shown.count("CASE\n") == 1 and "hs-troponin T 410 ng/L" in shown
    assert shown.count("Your brief: imaging decides") == 1
    assert "The moderator's shared report, version 2:\n\nReport: A; CT." in shown
    assert "not accepted" not in shown
    assert turns == {(fmt, what) for fmt in FORMATS
                     for what in ("opinion", "vote, review round 1", "vote, review round 2")}
    done = traces(run_dir(tmp_path))
    for fmt, trace in done.items():
        assert {i["source"] for i in trace["human"]["inputs"]} == {"terminal"} and not trace["human"]["added"]
        r1 = trace["rounds"][0]
        [mine] = [v for v in r1["votes"] if v["role"] == "radiologist"]
        assert mine == {"round": 1, "role": "radiologist", "vote": "dissent", "reason": "No confirming test.",
                        "requested_change": "Add cardiac MRI."}
        [opinion] = [o for o in trace["opinions"] if o["role"] == "radiologist"]
        if fmt == "free-form":
            assert opinion["text"] == "Myocarditis is most likely;\nconfirm it with cardiac MRI."
        else:
            assert opinion["sections"]["final_conclusion"] == "my final conclusion"
    capsys.readouterr()
    code = main(["replay", *map(str, sorted(run_dir(tmp_path).glob("*.trace.json")))])
    replayed = capsys.readouterr()
    assert code == 0 and replayed.out.count("identical") == 2, replayed.out + replayed.err


def _stopped_at_the_first_vote(folder: Path) -> tuple[Path, str]:
    """A free-form run at the terminal, the radiologist's opinion typed and Ctrl-C at the round-1 vote: its run
    folder (under ``folder``) and what the terminal showed."""
    term = Terminal(["simulate", "--case", str(CASE), "--model", PANEL, "--out", str(folder), "--formats",
                     "free-form", "--human", "Radiologist", "--no-cache"], ROOT)
    try:
        term.expect("opinion (end with a blank line):\n")
        term.type("Typed at the terminal.", "")
        term.expect("vote (accept/dissent): ")
        os.kill(term.pid, signal.SIGINT)  # Ctrl-C at the round-1 vote
        status, shown = term.rest()
    finally:
        term.close()
    assert status == 130, shown
    [run] = folder.iterdir()
    return run, shown


@pytest.fixture(scope="module")
def ctrl_c_at_the_vote(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """_stopped_at_the_first_vote once for the module: the run's folder and what the terminal showed; each
    test resumes its own copy (``copy_of``)."""
    tmp = tmp_path_factory.mktemp("ctrl-c")
    with isolated(tmp):
        return _stopped_at_the_first_vote(tmp / "runs")


def test_ctrl_c_at_a_prompt_leaves_a_run_that_resumes_from_its_checkpoint(
        ctrl_c_at_the_vote: tuple[Path, str], tmp_path: Path) -> None:
    stopped, shown = ctrl_c_at_the_vote
    assert f"interrupted; the run is checkpointed: resume it with `consilium simulate --resume {stopped}`" in shown
    run = copy_of(stopped, tmp_path)
    made = json.loads((run / "human" / "free-form.calls.json").read_text())
    votes = {1: {"vote": "accept", "reason": "Fine."}}
    answers = write_answers(tmp_path / "rest.yaml", {"free-form": {"votes": votes}})  # no opinion: it was given
    assert main(["simulate", "--resume", str(run), "--answers", str(answers)]) == 0
    [trace] = traces(run).values()
    assert [(i["stage"], i["source"]) for i in trace["human"]["inputs"]] == [("opinion", "terminal"),
                                                                           ("vote", "file")]
    [opinion] = [o for o in trace["opinions"] if o["role"] == "radiologist"]
    assert opinion["text"] == "Typed at the terminal." and trace["stop_reason"] == "consensus"
    assert trace["calls"][:len(made)] == made  # kept as made before Ctrl-C, not made again


# --- a person's run, resumed safely ------------------------------------------------------------------------------

def _paused(tmp_path: Path, answers: dict[str, Any], *extra: str) -> Path:
    """A free-form run with the person's answers file short of what the run needs: paused (exit 2); its folder."""
    path = write_answers(tmp_path / "partial.yaml", answers)
    assert simulate(tmp_path, "--formats", "free-form", "--human", "Cardiologist", "--answers", str(path),
                    *extra) == 2
    return run_dir(tmp_path)


@pytest.fixture(scope="module")
def paused_at_the_vote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A free-form run paused at the round-1 vote (the person's opinion given, no vote): made once; each test
    resumes or damages its own copy (``copy_of``)."""
    tmp = tmp_path_factory.mktemp("paused")
    with isolated(tmp):
        return _paused(tmp, {"free-form": {"opinion": "Myocarditis; cardiac MRI."}})


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("consilium: error: "), err
    return err


class _Heard:
    """A stand-in OpenAI-compatible server on 127.0.0.1 that plays a panel which accepts at once, and keeps what
    each request carried: its path and its Authorization header."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        self.url = ""

    def answer(self, body: dict[str, Any]) -> str:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        if schema == "RoleAssignment":
            return json.dumps({"primary": {"label": "Internist", "justification": "medical"},
                               "supporting": [{"label": "Neurologist", "justification": "nerves"},
                                              {"label": "Radiologist", "justification": "imaging"}]})
        if "vote" in schema.lower():
            return json.dumps({"vote": "accept", "reason": "fine", "requested_change": None})
        return "Myocarditis is most likely; confirm it with cardiac MRI."


@contextlib.contextmanager
def _heard_server(given: _Heard | None = None) -> Any:
    from support.localserver import JsonHandler, QuietServer, serving

    heard = given if given is not None else _Heard()

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            heard.requests.append((self.path, self.headers.get("Authorization")))
            text = heard.answer(body)
            self._send_json(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "stand-in",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})

    with serving(QuietServer(("127.0.0.1", 0), Handler)) as url:
        heard.url = url
        yield heard


@pytest.mark.localhost
def test_a_resumed_run_takes_the_servers_credentials_from_the_user_never_from_its_saved_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # user:password@ is the Authorization header
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    password = "pw-2718-not-in-any-file"
    basic = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    full = write_answers(tmp_path / "full.yaml", {"free-form": {"opinion": "Myocarditis; cardiac MRI.",
                                                                "votes": {1: {"vote": "accept", "reason": "ok"}}}})
    with _heard_server() as server:
        url = server.url.replace("http://", f"http://alice:{password}@")
        model = ("--model", "openai:stand-in", "--base-url", url, "--no-cache")
        folder = _paused(tmp_path, {}, *model)  # paused at the person's opinion
        # The role assignment and the three models' opinions (the person's seat is added), with the credentials.
        assert server.requests == [("/v1/chat/completions", basic)] * 4
        for path in folder.rglob("*"):
            assert not path.is_file() or password.encode() not in path.read_bytes(), path
        capsys.readouterr()

        # Without the credentials (no --base-url, no $OPENAI_BASE_URL): refused, nothing sent.
        assert main(["simulate", "--resume", str(folder), "--answers", str(full)]) == 2
        masked = server.url.replace("http://", "http://***@")
        assert f"--base-url: the run's server URL {masked} held credentials" in _one_line(capsys)
        # With another server's URL: refused too.
        other = server.url.replace("127.0.0.1", "127.0.0.2")
        assert main(["simulate", "--resume", str(folder), "--answers", str(full), "--base-url", other]) == 2
        assert "--base-url: --resume continues the run with its own settings" in _one_line(capsys)
        assert len(server.requests) == 4

        # Given again: the synthesis and the three models' votes go with the user's credentials, never '***'.
        assert main(["simulate", "--resume", str(folder), "--answers", str(full), "--base-url", url]) == 0
    assert server.requests == [("/v1/chat/completions", basic)] * 8
    [trace] = traces(folder).values()
    assert trace["status"] == "completed" and trace["stop_reason"] == "consensus" and len(trace["calls"]) == 8
    for path in folder.rglob("*"):
        assert not path.is_file() or password.encode() not in path.read_bytes(), path


def test_a_second_resume_while_one_runs_is_refused_and_the_trace_holds_each_call_once(
        ctrl_c_at_the_vote: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy_of(ctrl_c_at_the_vote[0], tmp_path)
    votes = write_answers(tmp_path / "votes.yaml", {"free-form": {"votes": {1: {"vote": "accept", "reason": "Fine."}}}})
    first = Terminal(["simulate", "--resume", str(run)], ROOT)  # back at the terminal: waits at the vote
    try:
        first.expect("vote (accept/dissent): ")
        capsys.readouterr()
        assert main(["simulate", "--resume", str(run), "--answers", str(votes)]) == 2
        err = _one_line(capsys)
        assert f"{run}: in use by this run or a resume of it, still going (pid {first.pid})" in err
        first.type("accept", "Complete.")
        status, shown = first.rest()
    finally:
        first.close()
    assert status == 0, shown
    [trace] = traces(run).values()
    # Each call once: the role assignment, the internist's and the neurologist's opinions, the synthesis and
    # their two round-1 votes (the person is the radiologist; everyone accepts: consensus in round 1).
    assert [(c["stage"], c["role"], c["round"]) for c in trace["calls"]] == [
        ("role_assignment", "moderator", None), ("opinion", "internist", None), ("opinion", "neurologist", None),
        ("synthesis", "moderator", None), ("vote", "internist", 1), ("vote", "neurologist", 1)]
    assert trace["usage"]["total"]["calls"] == 6
    assert main(["replay", str(next(run.glob("*.trace.json")))]) == 0


@pytest.mark.parametrize(("damage", "message"), [
    (lambda h: (h / "checkpoints.sqlite").unlink(), "checkpoints.sqlite: missing: without the run's checkpoint"),
    (lambda h: (h / "checkpoints.sqlite").write_bytes(b"not a database, just bytes " * 64),
     "checkpoints.sqlite: not a readable checkpoint of this run (DatabaseError"),
    (lambda h: (h / "checkpoints.sqlite").write_bytes(b""),  # an empty (valid) database: the steps are gone
     "checkpoints.sqlite: holds no step of the free-form format, while free-form.calls.json records 8 model calls"),
    (lambda h: (h / "free-form.calls.json").unlink(),
     "free-form.calls.json: missing, while"),
    (lambda h: (h / "free-form.calls.json").write_text('[{"index": 0}]'),
     "free-form.calls.json: 0.stage: Field required"),
    (lambda h: (h / "free-form.calls.json").write_text('{"calls": []}'),
     "free-form.calls.json: (root): a list of the run's model calls"),
    (lambda h: (h / "free-form.calls.json").write_text("[" * 100_000 + "]" * 100_000),
     "free-form.calls.json: nested more than 64 levels deep"),
    (lambda h: (h / "free-form.calls.json").write_text("[]\n"),  # emptied: the checkpoint's steps lose their calls
     "free-form.calls.json: records no role_assignment call of the moderator, while checkpoints.sqlite holds"),
    (lambda h: _edit_json(h / "free-form.calls.json", lambda calls: calls.pop()),  # the last vote cut off
     "free-form.calls.json: records no vote call of the radiologist in round 1, while checkpoints.sqlite holds"),
    (lambda h: _edit_json(h / "session.json", lambda s: s["args"].update(max_rounds="many")),
     "session.json: args.max_rounds: "),
    (lambda h: _edit_json(h / "session.json", lambda s: s["args"].update(format="all")),
     "session.json: args.format: 'all' is not one of free-form, structured, both"),
    (lambda h: _edit_json(h / "session.json", lambda s: s["args"].update(rounds=3)),
     "session.json: args.rounds: not a setting of simulate"),
    # A setting left out would be today's default: the free-form run would resume in both formats.
    (lambda h: _edit_json(h / "session.json", lambda s: s["args"].pop("format")),
     "session.json: args.format: missing (the run saved every setting it was started with"),
    (lambda h: _edit_json(h / "session.json", lambda s: s["case"].update(question="Another question?")),
     "session.json: case: does not match its case_hash"),
    (lambda h: _edit_json(h / "session.json", lambda s: s["case"].pop("id")), "session.json: case.id: "),
    # The case edited and its hash taken out with it.
    (lambda h: _edit_json(h / "session.json", lambda s: (s.pop("case_hash"), s["case"].update(question="Other?"))),
     "session.json: case_hash: Field required"),
    (lambda h: (h / "session.json").write_text('{"args": {}, "args": {}}'), "session.json: "),
])
def test_a_damaged_checkpoint_or_an_edited_session_is_refused_in_one_line_before_any_call(
        paused_at_the_vote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any,
        message: str) -> None:
    full = write_answers(tmp_path / "full.yaml", yaml.safe_load(ANSWERS.read_text()))
    folder = copy_of(paused_at_the_vote, tmp_path)  # paused at the r1 vote
    human = folder / "human"
    made = json.loads((human / "free-form.calls.json").read_text())
    # The role assignment, the three models' opinions, the synthesis and their three round-1 votes.
    assert [c["stage"] for c in made] == ["role_assignment", *["opinion"] * 3, "synthesis", *["vote"] * 3]
    damage(human)
    kept = {p: p.read_bytes() for p in human.iterdir() if p.name != "checkpoints.sqlite"}
    capsys.readouterr()
    assert main(["simulate", "--resume", str(folder), "--answers", str(full)]) == 2
    assert message in _one_line(capsys).replace(str(human) + "/", "")
    assert not list(folder.glob("*.trace.json"))
    assert {p: p.read_bytes() for p in human.iterdir() if p.name != "checkpoints.sqlite"} == kept


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


#: A YAML "billion laughs" in a vote: nine nested levels of nine aliases, a few hundred bytes that expand to 9**9
#: strings (a reader that builds and shows the value takes gigabytes).
ALIAS_BOMB = ("free-form:\n  votes:\n    1:\n      reason: x\n"
              "      vote: [&a [lol, lol, lol, lol, lol, lol, lol, lol, lol], "
              + ", ".join(f"&{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)) + "]\n")


def test_an_alias_bomb_answers_file_is_refused_in_one_line(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    assert len(ALIAS_BOMB.encode()) < 1000
    # In a process of its own, so that a reader that expands the aliases fails this test by its timeout
    # instead of taking the test run's memory.
    done = subprocess.run([sys.executable, "-m", "consilium", "simulate", "--case", str(CASE), "--model", PANEL,
                           "--out", str(tmp_path / "runs"), "--human", "Cardiologist", "--answers", str(bomb)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{bomb}: " in done.stderr and "alias" in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("content", "message"), [
    ("free-form:\n  opinion: Myocarditis, caf\xe9 au lait spots aside.\n".encode("latin-1"),
     "bad.yaml: cannot read the answers file (not UTF-8 text, byte "),
    (("free-form:\n  opinion: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nested more than 64 levels deep"),
    # The second vote of round 1 would silently replace the first: a dissent read as an accept.
    (b"free-form:\n  votes:\n    1: {vote: dissent, reason: No MRI., requested_change: Add cardiac MRI.}\n"
     b"    1: {vote: accept, reason: Fine.}\n", "duplicate key"),
])
def test_an_answers_file_goes_through_the_strict_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        content: bytes, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    assert simulate(tmp_path, "--human", "Cardiologist", "--answers", str(path)) == 2
    err = _one_line(capsys)
    assert message in err.replace(str(tmp_path) + "/", "") and "internal error" not in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("flags", "refused"), [
    (["--formats", "both"], "--formats: --resume continues the run with its own settings (it was started with "
                            "--formats free-form)"),
    (["--protocol", "consilium", "--out", "runs"], "--out: --resume continues the run with its own settings (it "
                                                   "was started with --out /"),
    # Typed with simulate's own defaults (5 rounds, seed 0), which the run was started without.
    (["--max-rounds", "5"], "--max-rounds: --resume continues the run with its own settings (it was started with "
                            "no --max-rounds)"),
    (["--seed", "0"], "--seed: --resume continues the run with its own settings (it was started with no --seed)"),
    (["--no-cache"], "--no-cache: --resume continues the run with its own settings (it was started with no "
                     "--no-cache)"),
])
def test_a_flag_typed_with_its_default_value_on_resume_is_compared_with_the_runs_own(
        paused_at_the_vote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        refused: str) -> None:
    folder = copy_of(paused_at_the_vote, tmp_path)
    full = write_answers(tmp_path / "full.yaml", yaml.safe_load(ANSWERS.read_text()))
    capsys.readouterr()
    assert main(["simulate", "--resume", str(folder), "--answers", str(full), *flags]) == 2
    assert refused in _one_line(capsys)
    assert not list(folder.glob("*.trace.json"))
    # A flag typed with the run's own value is no change: the run resumes and finishes.
    assert main(["simulate", "--resume", str(folder), "--answers", str(full), "--formats", "free-form",
                 "--protocol", "consilium"]) == 0
    assert list(traces(folder)) == ["free-form"]


@pytest.mark.parametrize("role", ["moderator", "  MODERATOR "])
def test_the_moderator_is_not_a_seat_a_person_can_take(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       role: str) -> None:
    assert simulate(tmp_path, "--human", role, "--answers", str(ANSWERS)) == 2
    assert "--human: 'moderator' is the moderator, who chairs the panel and holds no seat on it" in \
        _one_line(capsys).replace("MODERATOR", "moderator")
    assert not (tmp_path / "runs").exists()
    with pytest.raises(UserError, match="is the moderator"):
        consilium.run(CASE, variants=["free-form"], model=PANEL, human=role,
                      answers=yaml.safe_load(ANSWERS.read_text()))


def _simulate_in_a_process(*args: str) -> subprocess.Popen[str]:
    """``consilium simulate --case CASE ARGS`` in a process of its own, which the test stops as a user would
    (Ctrl-C, a kill); the stand-in server needs no key, so none is passed on."""
    return subprocess.Popen([sys.executable, "-m", "consilium", "simulate", "--case", str(CASE), *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"})


class _Cut(_Heard):
    """The stand-in panel in the structured format, whose models' first opinions fail the schema: each opinion
    needs a repair, and while ``hold`` is set every repair request waits (a run stopped there is cut off in
    the middle of its opinions' tasks). Counts each request by its content."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.release = threading.Event()
        self.seen: collections.Counter[str] = collections.Counter()
        self.held = 0

    def answer(self, body: dict[str, Any]) -> str:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        self.seen[json.dumps(body.get("messages"), sort_keys=True)] += 1
        if "pinion" not in schema:
            if "eport" in schema:
                return json.dumps({"final_opinion": "Myocarditis", "summary": "s", "final_differential": "1. M",
                                   "diagnostic_plan": "MRI", "management_plan": "m", "safety_warnings": "w"})
            return super().answer(body)
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return "not an opinion"  # fails the schema: repaired
        if self.hold.is_set():
            self.held += 1
            self.release.wait(30)
        return json.dumps(dict.fromkeys(("clinical_data", "syndromes", "differential_diagnosis",
                                         "diagnostic_strategy", "management_strategy"), "x")
                          | {"final_conclusion": "Myocarditis"})


@pytest.mark.localhost
def test_a_task_cut_off_by_ctrl_c_takes_its_calls_made_before_again_as_made_never_making_them_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    folder = tmp_path / "runs"
    cut = _Cut()
    cut.hold.set()
    with _heard_server(cut) as server:
        model = ["--model", "openai:stand-in", "--base-url", server.url, "--no-cache", "--formats", "structured"]
        run = _simulate_in_a_process(*model, "--out", str(folder), "--human", "Cardiologist", "--answers", str(ANSWERS))
        try:
            deadline = time.monotonic() + 60
            while cut.held < 3 and time.monotonic() < deadline and run.poll() is None:
                time.sleep(0.05)
            assert cut.held == 3, run.communicate(timeout=30)  # the three models' repairs, all waiting
            run.send_signal(signal.SIGINT)  # Ctrl-C: the three opinions' tasks are cut off after one call each
            _, err = run.communicate(timeout=60)
        finally:
            cut.release.set()
            if run.poll() is None:
                run.kill()
        assert run.returncode == 130, err
        [stopped] = folder.iterdir()
        made = json.loads((stopped / "human" / "structured.calls.json").read_text())
        assert [(c["stage"], c["error"] is not None) for c in made] == [
            ("role_assignment", False), *[("opinion", True)] * 3]  # the first, failed, attempts
        cut.hold.clear()
        assert main(["simulate", "--resume", str(stopped), *model[:5]]) == 0
    [trace] = traces(stopped).values()
    # Each opinion's first attempt was sent once: on resume it was answered as made, and only its repair was
    # asked; the trace holds each call once, as an uninterrupted run's would.
    firsts = [c for c in trace["calls"] if c["stage"] == "opinion" and c["error"] is not None]
    assert len(firsts) == 3
    for call in firsts:
        assert cut.seen[json.dumps([{"role": m["role"], "content": m["content"]} for m in call["messages"]],
                                   sort_keys=True)] == 1
    assert [c["stage"] for c in trace["calls"]] == ["role_assignment", *["opinion"] * 6, "synthesis", *["vote"] * 3]
    assert trace["calls"][:4] == made
    assert main(["replay", str(next(stopped.glob("*.trace.json")))]) == 0


class _Third(_Heard):
    """The stand-in panel whose third opinion request waits while ``release`` is not set: the other two
    models' opinions are answered and their tasks finish, in the same step as the one still waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.opinions = 0
        self.held = threading.Event()

    def answer(self, body: dict[str, Any]) -> str:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
        if schema == "" and not self.release.is_set():  # the free-form opinions, the only text calls before
            self.opinions += 1
            if self.opinions == 3:
                self.held.set()
                self.release.wait(30)
        return super().answer(body)


@pytest.mark.localhost
def test_a_run_killed_in_the_middle_of_a_step_resumes_with_the_calls_of_every_task_its_checkpoint_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    folder = tmp_path / "runs"
    third = _Third()
    full = write_answers(tmp_path / "full.yaml", {"free-form": {"opinion": "Myocarditis; cardiac MRI.",
                                                                "votes": {1: {"vote": "accept", "reason": "ok"}}}})
    with _heard_server(third) as server:
        model = ["--model", "openai:stand-in", "--base-url", server.url, "--no-cache"]
        run = _simulate_in_a_process(*model, "--out", str(folder), "--formats", "free-form", "--human",
                                     "Cardiologist", "--answers", str(full))
        try:
            assert third.held.wait(60), run.communicate(timeout=30)
            time.sleep(1.0)  # the two answered opinions' tasks finish; their writes reach the checkpoint
            run.kill()  # SIGKILL (or a closed terminal): no cleanup runs
            run.communicate(timeout=30)
        finally:
            third.release.set()
            if run.poll() is None:
                run.kill()
        sent = len(third.requests)  # the role assignment and three opinions
        [stopped] = folder.iterdir()
        assert main(["simulate", "--resume", str(stopped), *model[:4], "--answers", str(full)]) == 0
    [trace] = traces(stopped).values()
    # The two opinions the checkpoint kept are not asked again (the resume asks the third opinion, the synthesis
    # and three votes), and their calls are in the trace: three models' opinions, each once, all counted.
    assert (sent, len(third.requests) - sent) == (4, 5)
    assert [c["stage"] for c in trace["calls"]] == ["role_assignment", *["opinion"] * 3, "synthesis", *["vote"] * 3]
    assert sorted(c["role"] for c in trace["calls"] if c["stage"] == "opinion") == [
        "internist", "neurologist", "radiologist"]
    assert [c["index"] for c in trace["calls"]] == list(range(8))
    assert trace["usage"]["total"]["calls"] == 8
    assert main(["replay", str(next(stopped.glob("*.trace.json")))]) == 0
