"""OpenTumorBoard's deterministic scores as the authors' code computes them (AnqiLi24/OpenTumorBoard,
``training/verl_otb/reward.py`` and ``scripts/evaluation``): the App. E.2 format score, its failure reasons
and penalties, the lenient conclusion extraction, official ROUGE-L, and ``consilium otb score``.

Every expected value below is worked out by hand from the official rules (weights .25/.1875/.1875/.1875/
.125/.0625; score = .25·dense + .75·exact; failures −1 / −0.75; repetition and overlength ramps)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from consilium.cli import main
from consilium.otb.bertscore import bertscore_f1
from consilium.otb.extract import conclusion_text
from consilium.otb.format_score import format_score
from consilium.otb.penalties import repetition
from consilium.otb.reward import Judged, reward
from consilium.otb.rouge import rouge_l

TURNS = ["<turn 1> Moderator: We review a woman of 62 with breast cancer that is HER2 positive.",
         "<turn 2> Medical Oncologist: I recommend neoadjuvant chemotherapy with dual blockade.",
         "<turn 3> Surgeon: Surgery should follow the systemic therapy."]
CONCLUSION = "Start neoadjuvant chemotherapy with dual HER2 blockade. Plan surgery afterwards."


def board(turns: list[str] = TURNS, conclusion: str = CONCLUSION) -> str:
    return "<discussion>\n" + "\n".join(turns) + "\n</discussion>\n<conclusion>" + conclusion + "</conclusion>"


WELL = board()
# (name, response, flags, dense, exact, score, failure reason): dense by hand from the weights.
CORPUS = [
    ("well formed", WELL, {}, 1.0, 1.0, 1.0, 0),
    ("outer whitespace (and so no envelope)", " " + WELL + "\n", {}, 0.75, 0.0, 0.25 * 0.75, 0),
    ("a turn numbered out of order", board([*TURNS[:2], TURNS[2].replace("turn 3", "turn 4")]), {},
     1 - 0.1875 / 3, 0.0, 0.25 * (1 - 0.1875 / 3), 0),
    ("a line that is no turn", board([*TURNS[:2], "Everyone agrees.", TURNS[2]]), {},
     1 - 0.1875 / 4, 0.0, 0.25 * (1 - 0.1875 / 4), 0),
    ("a turn without the space after its tag", board([TURNS[0], TURNS[1].replace("> ", ">"), TURNS[2]]), {},
     1 - 0.1875 / 3 - 0.1875 / 2, 0.0, 0.25 * (1 - 0.1875 / 3 - 0.1875 / 2), 0),
    ("a one-sentence conclusion", board(conclusion="Start chemotherapy."), {}, 1 - 0.0625, 0.0,
     0.25 * (1 - 0.0625), 0),
    ("a five-sentence conclusion", board(conclusion="A. b. c. d. e. ".replace(". ", "x. ").strip()), {},
     1 - 0.0625, 0.0, 0.25 * (1 - 0.0625), 0),
    ("a six-sentence conclusion", board(conclusion=" ".join(["Do this."] * 6)), {}, 1 - 0.125, 0.0,
     0.25 * (1 - 0.125), 0),
    ("titles and initials end no sentence", board(conclusion="Dr. Smith and J. Doe agree. Start chemotherapy."),
     {}, 1.0, 1.0, 1.0, 0),
    ("a conclusion over two lines (no envelope)", board(conclusion="Start chemotherapy.\nPlan surgery."), {},
     1 - 0.1875, 0.0, 0.25 * (1 - 0.1875), 0),
    ("no conclusion block", "<discussion>\n" + "\n".join(TURNS) + "\n</discussion>", {},
     0.125 + 0.1875 + 0.1875 + 0.0625, 0.0, -0.75, 4),
    ("two discussion blocks", WELL.replace("<conclusion>", "<discussion>\nx\n</discussion>\n<conclusion>"), {},
     None, 0.0, -0.75, 4),
    ("no blocks at all", "Just treat the patient.", {}, 0.0625, 0.0, -1.0, 3),
    ("truncated", WELL, {"truncated": True}, 1.0, 1.0, -1.0, 1),
    ("overlong, half way up the ramp", WELL, {"length": 6144 + 1024}, 1.0, 1.0, 1.0 - 0.5, 0),
    ("overlong past a limit below the ramp", WELL, {"length": 6000, "limit": 6000}, 1.0, 1.0, 0.0, 0),
    ("under a limit below the ramp", WELL, {"length": 5999, "limit": 6000}, 1.0, 1.0, 1.0, 0),
]


@pytest.mark.parametrize(("response", "flags", "dense", "exact", "score", "reason"),
                         [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_the_format_score_follows_the_official_weights_and_failures(
        response: str, flags: dict[str, int | bool], dense: float | None, exact: float, score: float,
        reason: int) -> None:
    fields = format_score(response, **flags).fields()  # type: ignore[arg-type]
    if dense is not None:
        assert fields["format_dense_score"] == pytest.approx(dense, abs=1e-12)
    assert fields["format_exact"] == exact
    assert fields["format_score"] == pytest.approx(score, abs=1e-12)
    assert fields["format_failure_reason"] == reason


def test_roles_and_the_moderator_first_are_reported_but_not_scored() -> None:
    no_moderator = board([t.replace("Moderator", "Radiologist") for t in TURNS])
    one_role = board([re.sub(r"> [A-Za-z ]+:", "> Surgeon:", t) for t in TURNS])
    for text, roles, first in ((no_moderator, 3, 0.0), (one_role, 1, 0.0), (WELL, 3, 1.0)):
        fields = format_score(text).fields()
        assert (fields["format_score"], fields["format_role_count"], fields["format_moderator_first"]) == \
            (1.0, roles, first)


def _tokens(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9]+", text))  # the fixtures have no apostrophe, hyphen or CJK character


def test_a_loop_that_is_not_severe_is_penalised_by_the_larger_ramp() -> None:
    looped = board([*TURNS, "<turn 4> Pathologist: " + " ".join(["agreed"] * 10) + "."])
    total = _tokens(looped)
    share = 7 * 4 / total  # "agreed agreed agreed agreed" occurs 10 − 3 times
    assert 0.15 < share < 0.5  # detected, not severe
    penalty = max((10 - 8) / 120, (share - 0.15) / 0.35)
    fields = format_score(looped).fields()
    assert (fields["format_repetition_detected"], fields["format_repetition_max_run"]) == (1.0, 10.0)
    assert fields["format_repetition_ngram_fraction"] == pytest.approx(share)
    assert fields["format_repetition_penalty"] == pytest.approx(penalty)
    assert fields["format_score"] == pytest.approx(1.0 - penalty)


def test_a_severe_loop_fails_closed() -> None:
    loop = repetition("go " * 10 + "stop")  # 11 tokens; "go go go go" 7 times: share min(1, 28/11)
    assert (loop.longest_run, loop.ngram_share, loop.severe, loop.penalty) == (10, 1.0, True, 1.0)
    looped = board([*TURNS, "<turn 4> Nurse: " + "again " * 200 + "done"])
    assert format_score(looped).fields()["format_failure_reason"] == 2
    assert format_score(looped).fields()["format_score"] == -1.0


def test_normal_reuse_is_no_loop() -> None:
    loop = repetition(" ".join(["yes"] * 7 + ["no"]))  # a run of 7, 8 tokens
    assert (loop.detected, loop.longest_run) == (False, 7)


@pytest.mark.parametrize(("response", "expected"), [
    (WELL, CONCLUSION),
    ("<think>plan it</think>\n```\n" + WELL + "\n```", CONCLUSION),
    ("<discussion>\n" + "\n".join(TURNS) + "\n</discussion>\n<conclusion>Start chemo", "Start chemo"),
    ("< TURN 1 > Moderator: hello\n<Conclusion> Give it. </CONCLUSION>", "Give it."),
    ("| Role | Response |\n|---|---|\n| Surgeon | Operate |\nConclusion: Operate now.", "Operate now."),
    ("**Conclusion:** Give the drug.", "Give the drug."),
    ("| Role | Response |\n|---|---|\nConclusion: nobody spoke", ""),
    ("Nothing here.", ""),
    # An empty closed block falls through to the open-tag rule, which takes the closing tag as the text: the
    # official code's behaviour, kept so the scores agree.
    ("<conclusion>  </conclusion>", "</conclusion>"),
])
def test_the_conclusion_is_found_as_the_official_evaluation_finds_it(response: str, expected: str) -> None:
    assert conclusion_text(response) == expected


@pytest.mark.parametrize(("candidate", "reference", "expected"), [
    ("The patient needs surgery", "Surgery is what the patient needs", 2 * 0.75 * 0.5 / 1.25),  # LCS 3 of 4, 6
    ("treatments", "treatment", 0.0),  # no stemming
    ("HER2+ disease", "her2 disease", 1.0),  # lower-cased, [a-z0-9]+ tokens
    ("", "anything", 0.0),
])
def test_rouge_l_is_the_unstemmed_lcs_f1(candidate: str, reference: str, expected: float) -> None:
    assert rouge_l(candidate, reference) == pytest.approx(expected)


def _jsonl(path: Path, rows: list[dict[str, object]], *, packed: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if packed:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("packed", [False, True], ids=["jsonl", "jsonl.gz"])
def test_otb_score_prints_one_object_per_line_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       packed: bool) -> None:
    rows: list[dict[str, object]] = [
        {"response": WELL, "reference_conclusion": "Start chemotherapy then surgery."},
        {"response": "Just treat the patient.", "reference_conclusion": "Start chemotherapy."},
        {"response": WELL, "response_truncated": True, "valid_response_length": 7168},
        {"response": WELL, "valid_response_length": 7168, "response_length_limit": 8192}]
    path = _jsonl(tmp_path / ("r.jsonl.gz" if packed else "r.jsonl"), rows, packed=packed)
    assert main(["otb", "score", str(path)]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # Row 1: LCS of [start, neoadjuvant, chemotherapy, with, dual, her2, blockade, plan, surgery, afterwards]
    # and [start, chemotherapy, then, surgery] is 3 (start, chemotherapy, surgery): P 3/10, R 3/4.
    assert [o["format_score"] for o in out] == [1.0, -1.0, -1.0, 0.5]
    assert [o["format_failure_reason"] for o in out] == [0, 3, 1, 0]
    assert out[0]["rouge_l"] == pytest.approx(2 * 0.3 * 0.75 / 1.05)
    assert out[1]["rouge_l"] == 0.0 and out[1]["conclusion"] == ""
    assert "rouge_l" not in out[2] and out[3]["format_overlong_penalty"] == 0.5


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "r.jsonl:2: not JSON"),
    ('["a list"]', "r.jsonl:2: each line must be a JSON object"),
    ('{"reference_conclusion": "x"}', "r.jsonl:2: field 'response' must be a string"),
    ('{"response": "x", "valid_response_length": "12"}', "r.jsonl:2: field 'valid_response_length' must be int"),
    ('{"response": "x", "response_truncated": 1}', "r.jsonl:2: field 'response_truncated' must be bool"),
])
def test_otb_score_refuses_a_bad_line_naming_it_and_prints_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"response": WELL}) + "\n" + line + "\n", encoding="utf-8")
    assert main(["otb", "score", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and "Traceback" not in captured.err


def test_otb_score_names_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["otb", "score", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: cannot be read" in capsys.readouterr().err


# BERTScore's matching, on a hand-made embedding table: each token is a fixed vector, so every cosine and
# hence P, R and F1 can be worked out by hand. (The leaderboard's encoder, deberta-xlarge-mnli at layer 40,
# is 3 GB and cannot ship with the tests; local_encoder loads it from a folder, docs/opentumorboard.md.)
_VECTORS = {"surgery": [1.0, 0.0], "operation": [0.6, 0.8], "now": [0.0, 1.0], "later": [0.0, 2.0]}


def _table_encoder(texts: Sequence[str]) -> list[np.ndarray]:
    return [np.array([_VECTORS[w] for w in t.split()], dtype=float).reshape(-1, 2) for t in texts]


def test_bertscore_matches_each_token_greedily_by_cosine() -> None:
    # candidate "surgery now" vs reference "operation later":
    # cos(surgery, operation) = .6, cos(surgery, later) = 0, cos(now, operation) = .8, cos(now, later) = 1.
    # P = mean(max(.6, 0), max(.8, 1)) = .8; R = mean(max(.6, .8), max(0, 1)) = .9; F1 = 2·.72 / 1.7.
    scores = bertscore_f1(["surgery now", "surgery", ""], ["operation later", "surgery", "now"], _table_encoder)
    assert scores == pytest.approx([2 * 0.8 * 0.9 / 1.7, 1.0, 0.0])


def test_the_reward_combines_the_three_judges_and_the_format_score() -> None:
    # alignment 4 → .75; decisions therapy 5, surgery 2 in scope: (1·1 + 1.25·.4) / 2.25 = 1.5 / 2.25;
    # consistency 3 → .6; match = .4·.75 + .35·(1.5/2.25)·.6 + .25·(1.5/2.25); format 1 → reward + .1.
    decisions = 1.5 / 2.25
    match = 0.4 * 0.75 + 0.35 * decisions * 0.6 + 0.25 * decisions
    got = reward(format_score(WELL), Judged(alignment=4, decisions={"therapy": 5, "surgery": 2}, consistency=3))
    assert (got.decisions, got.match, got.reward) == (pytest.approx(decisions), pytest.approx(match),
                                                      pytest.approx(match + 0.1))
    no_scope = reward(format_score(WELL), Judged(alignment=1, decisions={}, consistency=5))
    assert (no_scope.decisions, no_scope.match) == (0.0, 0.0)
    # A response with one block is never judged: match −.2, reward −.2 + .1·(−.75).
    failed = reward(format_score("<conclusion>Treat.</conclusion>"), None)
    assert (failed.judged, failed.match, failed.reward) == (False, -0.2, pytest.approx(-0.2 - 0.075))
    with pytest.raises(ValueError, match="needs its judges"):
        reward(format_score(WELL), None)
