"""The judge's decoding order: constrained from the first attempt where the backend enforces schemas,
the paper's order (schema-free attempts and repairs, then one constrained attempt) where it does not or
where the rubric pins it, and the order recorded in every judgement (consilium/judges/decoding.py).

Counts are worked out by hand from the fixture: the structured myocarditis trace has 5 diagnosis-match
items (its conclusion; the final opinion as rank 1; the 3 entries of the panel's final differential as
ranks 2-4), the afibrillation case 10 signed criteria (its YAML), and ``--max-repairs`` is 2, so an item
asked in the paper's order costs 1 + 2 relaxed calls and 1 constrained one, in the constrained order 1.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_judges import CASES, PANEL

from consilium.api import judge_run
from consilium.cli import main
from consilium.judges.record import Judgement, read_judgement

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from workload import fake_server  # noqa: E402  (benchmarks/workload.py: benchmarks/fakeserver.py, its own process)

MYOCARDITIS, AFIB = "diagnostic-myocarditis", "consultation-afib-anticoagulation"
REPAIRS = 2
DIFFERENTIAL = PANEL["rules"][3]["json"]["final_differential"].splitlines()  # type: ignore[index]
MATCH_ITEMS = 1 + 1 + len(DIFFERENTIAL)  # conclusion; rank 1 (the final opinion); one per differential entry
CRITERIA = len(yaml.safe_load((CASES / f"{AFIB}.yaml").read_text())["reference"]["rubric"])
PROSE = "It matches, I think."  # what the judge writes without a schema holding it: never valid JSON

#: A judge that keeps the schema only under it (a small model on a grammar): prose unconstrained, JSON
#: constrained, except that its first constrained answer on rank 2 is still unusable.
JUDGE: dict[str, Any] = {"model": "grammar-judge", "enforces_schemas": True, "rules": [
    {"stage": "judge", "constrained": False, "response": PROSE},
    {"stage": "judge", "constrained": True, "contains": "ranked 2", "times": 1, "response": '{"match": maybe}'},
    {"stage": "judge", "constrained": True, "contains": '"criteria_met"',
     "json": {"explanation": "stated", "criteria_met": True}},
    {"stage": "judge", "constrained": True, "json": {"rationale": "same disease", "match": True}},
]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Structured traces of two cases: one with a reference diagnosis, one with signed criteria."""
    folder = tmp_path_factory.mktemp("decoding")
    panel = folder / "panel.json"
    panel.write_text(json.dumps(PANEL))
    for case in (MYOCARDITIS, AFIB):
        assert main(["simulate", "--case", str(CASES / f"{case}.yaml"), "--model", f"scripted:{panel}",
                     "--out", str(folder / "runs"), "--format", "structured"]) == 0
    return folder / "runs"


def _judge(runs: Path, rubric: str, judge: dict[str, Any], *extra: str, rc: int | None = None) -> Judgement:
    script = runs.parent / f"judge-{judge['model']}.json"
    script.write_text(json.dumps(judge))
    code = main(["judge", str(runs), "--rubric", rubric, "--judge-model", f"scripted:{script}", "--force", *extra])
    assert rc is None or code == rc
    case = MYOCARDITIS if rubric == "nmb-diagnosis-match" else AFIB
    [path] = runs.glob(f"*/{case}.structured.judge.{rubric}.json")
    return read_judgement(path)


def _invalid(judgement: Judgement) -> int:
    return sum(1 for call in judgement.calls if call.error is not None)


def test_a_judge_whose_backend_enforces_schemas_asks_each_item_under_the_schema_from_the_first_attempt(
        runs: Path) -> None:
    judged = _judge(runs, "nmb-diagnosis-match", JUDGE)
    assert judged.decoding == "constrained"
    assert len(judged.items) == MATCH_ITEMS
    # One call per item; rank 2's first answer unusable, repaired once under the schema.
    assert (len(judged.calls), _invalid(judged)) == (MATCH_ITEMS + 1, 1)
    assert all(call.messages[-1].role == "user" for call in judged.calls)
    assert not any(item.not_evaluable for item in judged.items)


def test_the_papers_order_asks_schema_free_with_repairs_then_once_constrained(runs: Path) -> None:
    judged = _judge(runs, "nmb-diagnosis-match", JUDGE, "--judge-decoding", "paper", rc=0)
    assert judged.decoding == "paper"
    # 1 + 2 relaxed calls and 1 constrained per item; every relaxed one prose, and rank 2's one constrained
    # answer unusable: with no repair left, rank 2 is not evaluable.
    assert len(judged.calls) == MATCH_ITEMS * (1 + REPAIRS + 1)
    assert _invalid(judged) == MATCH_ITEMS * (1 + REPAIRS) + 1
    [lost] = [item for item in judged.items if item.not_evaluable]
    assert lost.criterion == "rank_2"
    assert lost.reason is not None and lost.reason.startswith("invalid judge output, also under schema-constrained")


def test_a_judge_whose_backend_does_not_enforce_schemas_keeps_the_papers_order(runs: Path) -> None:
    plain = {**JUDGE, "model": "plain-judge", "enforces_schemas": False}
    judged = _judge(runs, "nmb-diagnosis-match", plain)
    assert judged.decoding == "paper"
    assert len(judged.calls) == MATCH_ITEMS * (1 + REPAIRS + 1)
    # rank 2 stays invalid; its reason does not claim a constrained decoding this backend never did
    [lost] = [item for item in judged.items if item.not_evaluable]
    assert (lost.criterion, (lost.reason or "").split(": ")[0]) == (
        "rank_2", "invalid judge output, also with the schema requested (this backend does not enforce it)")
    # Asked constrained from the first attempt, the same backend's repairs stay bounded: at most 1 + 2 calls.
    told = _judge(runs, "nmb-diagnosis-match", plain, "--judge-decoding", "constrained")
    assert (told.decoding, len(told.calls)) == ("constrained", MATCH_ITEMS + 1)


def test_the_npc_rubric_is_pinned_to_the_papers_order_which_the_flag_still_overrides(runs: Path) -> None:
    pinned = _judge(runs, "npc-signed-criteria", JUDGE, rc=0)
    assert pinned.decoding == "paper"
    assert len(pinned.items) == CRITERIA
    assert (len(pinned.calls), _invalid(pinned)) == (CRITERIA * (1 + REPAIRS + 1), CRITERIA * (1 + REPAIRS))
    told = _judge(runs, "npc-signed-criteria", JUDGE, "--judge-decoding", "constrained", rc=0)
    assert (told.decoding, len(told.calls), _invalid(told)) == ("constrained", CRITERIA, 0)
    assert [i.score for i in told.items] == [i.score for i in pinned.items]


def test_a_jury_records_each_judges_decoding_order(runs: Path) -> None:
    grammar, plain = runs.parent / "jury-grammar.json", runs.parent / "jury-plain.json"
    grammar.write_text(json.dumps(JUDGE))
    plain.write_text(json.dumps({**JUDGE, "model": "plain-judge", "enforces_schemas": False}))
    main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--force",
          "--judge-model", f"scripted:{grammar}", "--judge-model", f"scripted:{plain}"])
    [path] = runs.glob(f"*/{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
    judged = read_judgement(path)
    assert judged.jury is not None
    assert [(m.model, m.decoding) for m in judged.jury] == [("grammar-judge", "constrained"), ("plain-judge", "paper")]
    assert len(judged.calls) == (MATCH_ITEMS + 1) + MATCH_ITEMS * (1 + REPAIRS + 1)


def test_the_api_takes_the_decoding_order(runs: Path) -> None:
    script = runs.parent / "api-judge.json"
    script.write_text(json.dumps(JUDGE))
    judged = {j.case_id: j for j in judge_run(runs, "nmb-diagnosis-match", judge_model=f"scripted:{script}",
                                                force=True, judge_decoding="paper")}
    assert judged[MYOCARDITIS].decoding == "paper"
    assert len(judged[MYOCARDITIS].calls) == MATCH_ITEMS * (1 + REPAIRS + 1)
    assert judged[AFIB].calls == []  # no reference diagnosis: not evaluable, no call made


def test_a_cohort_keeps_its_decoding_order_in_the_manifest_and_refuses_another_on_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / f"{MYOCARDITIS}.yaml").write_text((CASES / f"{MYOCARDITIS}.yaml").read_text())
    panel, judge = tmp_path / "panel.json", tmp_path / "judge.json"
    panel.write_text(json.dumps(PANEL))
    judge.write_text(json.dumps(JUDGE))
    argv = ["cohort", "--cases", str(tmp_path / "cases"), "--model", f"scripted:{panel}", "--formats", "structured",
            "--judge", "nmb-diagnosis-match", "--judge-model", f"scripted:{judge}"]
    assert main([*argv, "--judge-decoding", "paper", "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert json.loads((run_dir / "manifest.json").read_text())["settings"]["judge_decoding"] == "paper"
    [path] = run_dir.rglob(f"{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
    judged = read_judgement(path)
    # the grammar judge's default would be constrained; the cohort's --judge-decoding paper holds
    assert (judged.decoding, len(judged.calls)) == ("paper", MATCH_ITEMS * (1 + REPAIRS + 1))
    capsys.readouterr()
    assert main([*argv, "--resume", str(run_dir), "--judge-decoding", "constrained"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "consilium: error: --judge-decoding: 'constrained' differs from the resumed cohort's 'paper'")


def test_a_judgement_recorded_before_the_order_was_reads_as_the_papers_order(runs: Path, tmp_path: Path) -> None:
    judged = _judge(runs, "nmb-diagnosis-match", JUDGE)
    data = json.loads(judged.model_dump_json())
    del data["decoding"]
    old = tmp_path / "old.judge.nmb-diagnosis-match.json"
    old.write_text(json.dumps(data))
    assert read_judgement(old).decoding == "paper"


# --- against a stand-in OpenAI-compatible server on 127.0.0.1 --------------------------------------------------


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """benchmarks/fakeserver.py twice: one honouring response_format (a schema's simplest value), one ignoring it;
    both answer prose otherwise, and the check's structured call with its JSON."""
    rules = [{"contains": ["Which specialty"], "json": {"specialty": "cardiology", "urgency": "emergency"}},
             {"contains": [], "response": PROSE}]
    with fake_server(0.0, rules, ("--schemas", "honour")) as honour, \
            fake_server(0.0, rules, ("--schemas", "ignore")) as ignore:
        yield {"honour": honour, "ignore": ignore}


def _requests(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=5) as response:
        return int(json.loads(response.read())["requests"])


@pytest.mark.localhost
def test_a_server_that_honours_response_format_gets_one_request_per_item(runs: Path,
                                                                        servers: dict[str, str]) -> None:
    url = servers["honour"]
    before = _requests(url)
    assert main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--judge-model", "openai:fake",
                 "--base-url", url, "--no-cache", "--force"]) == 0
    [path] = runs.glob(f"*/{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
    judged = read_judgement(path)
    assert (judged.decoding, _requests(url) - before, _invalid(judged)) == ("constrained", MATCH_ITEMS, 0)
    before = _requests(url)
    assert main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--judge-model", "openai:fake",
                 "--base-url", url, "--no-cache", "--force", "--judge-decoding", "paper"]) == 0
    paper = read_judgement(path)
    assert (paper.decoding, _requests(url) - before) == ("paper", MATCH_ITEMS * (1 + REPAIRS + 1))
    assert _invalid(paper) == MATCH_ITEMS * (1 + REPAIRS)
    assert paper.usage.total.input_tokens > 4 * judged.usage.total.input_tokens  # repairs carry the answers back


@pytest.mark.localhost
def test_a_server_that_ignores_response_format_is_repaired_a_bounded_number_of_times(
        runs: Path, servers: dict[str, str]) -> None:
    url = servers["ignore"]
    before = _requests(url)
    assert main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--judge-model", "openai:fake",
                 "--base-url", url, "--no-cache", "--force"]) == 1  # nothing could be judged
    [path] = runs.glob(f"*/{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
    judged = read_judgement(path)
    assert (judged.decoding, _requests(url) - before) == ("constrained", MATCH_ITEMS * (1 + REPAIRS))
    assert all(i.not_evaluable and (i.reason or "").startswith(
        "invalid judge output, under schema-constrained decoding from the first attempt") for i in judged.items)


def test_the_prompt_hash_names_the_prompt_and_not_the_decoding_order(runs: Path) -> None:
    """A judgement's prompt_hash is of what the judge was asked (docs/judges.md); how its calls were decoded is
    its ``decoding``. So a rubric's pin moves no hash, and a record made before the pin existed is not refused
    as one made with another prompt."""
    from consilium.judges.prompting import judge_prompt_hash
    from consilium.judges.rubric import builtin_rubric_names, load_rubric

    for name in builtin_rubric_names():
        rubric = load_rubric(name)
        hashes = {judge_prompt_hash(rubric.model_copy(update={"decoding": pin})) for pin in (None, "paper",
                                                                                              "constrained")}
        assert hashes == {judge_prompt_hash(rubric)}, name
    # npc-signed-criteria's pin changed no prompt: a record hashed without it is this judge's own, replaced as is.
    pinned = _judge(runs, "npc-signed-criteria", JUDGE, rc=0)
    unpinned = load_rubric("npc-signed-criteria").model_copy(update={"decoding": None})
    assert pinned.prompt_hash == judge_prompt_hash(unpinned)


def _rule(grammar: str, name: str) -> str:
    [line] = [line for line in grammar.splitlines() if line.startswith(f"{name} ::= ")]
    return line.removeprefix(f"{name} ::= ")


def _grammar_values(grammar: str, prop: str) -> set[str] | None:
    """The JSON texts the grammar lets ``prop``'s value be, when its rule is a list of literals; else None."""
    value = _rule(grammar, f"{prop.replace('_', '-')}-kv").rsplit(" space ", 1)[-1]
    alternatives = [a.strip() for a in _rule(grammar, value).split(" | ")]
    if not all(a.startswith('"') and a.endswith('"') for a in alternatives):
        return None
    return {json.loads(a) for a in alternatives}


def test_every_shipped_rubrics_judge_schema_becomes_a_grammar_that_allows_only_its_values() -> None:
    """The embedded/gguf judge asks under llama.cpp's grammar of the rubric's schema from its first attempt: each
    shipped rubric's judge schemas (every scope of the four-decision one) convert, and where the schema allows a
    fixed set of values (an enum, a bounded integer score) the grammar allows exactly those, written as JSON."""
    pytest.importorskip("llama_cpp")
    from consilium.judges.answers import MATCH, SIGNED, criterion_schema, decisions_schema
    from consilium.judges.consistency_answer import consistency_schema
    from consilium.judges.rubric import (
        Rubric,
        analysis_rubric,
        analysis_rubric_names,
        builtin_rubric_names,
        load_rubric,
    )
    from consilium.models.backends.llama_grammar import json_grammar

    def schemas(rubric: Rubric) -> list[dict[str, Any]]:
        first = frozenset({c.id for c in rubric.criteria[:1]})
        if rubric.kind.name == "weighted_decisions":
            return [decisions_schema(rubric, locked, frozen).json_schema
                    for locked in (frozenset(), first) for frozen in (False, True)]
        if rubric.kind.name == "consistency":  # always under a frozen scope, with or without an absent decision
            return [consistency_schema(rubric, locked).json_schema for locked in (frozenset(), first)]
        return {"signed_criteria": [SIGNED.json_schema], "diagnosis_match": [MATCH.json_schema],
                "mean": [criterion_schema(rubric).json_schema],
                "single": [criterion_schema(rubric).json_schema]}[rubric.kind.name]

    rubrics = [load_rubric(n) for n in builtin_rubric_names()] + [analysis_rubric(n) for n in analysis_rubric_names()]
    checked: dict[str, list[set[str]]] = {}
    for rubric in rubrics:
        for schema in schemas(rubric):
            grammar = json_grammar(schema)._grammar
            for prop, spec in schema["properties"].items():
                if "enum" in spec:
                    allowed = {json.dumps(v) for v in spec["enum"]}
                elif spec.get("type") == "integer":
                    allowed = {str(v) for v in range(spec["minimum"], spec["maximum"] + 1)}
                else:
                    continue
                assert _grammar_values(grammar, prop) == allowed, (rubric.name, prop)
                checked.setdefault(rubric.name, []).append(allowed)
    # The 1-5 scores of the two OpenTumorBoard single-score rubrics are bounded integers, not enums, in their schema.
    assert checked["otb-clinical-equivalence"] == [{"1", "2", "3", "4", "5"}]
    assert {"-1"} in checked["otb-four-decision"] and '"not_evaluable"' in checked["ai-consilium"][0]
    assert {"-1"} in checked["otb-consistency"] and {"0", "1", "2", "3", "4", "5"} in checked["otb-consistency"]


def test_a_cohort_made_before_the_order_was_kept_resumes_in_the_papers_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest without ``settings.judge_decoding`` is of a cohort whose judges all asked in the paper's order:
    its arms judged on resume are asked so too, not in the grammar judge's constrained default; a cohort made
    since keeps its null (the backend's default) and resumes with it."""
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / f"{MYOCARDITIS}.yaml").write_text((CASES / f"{MYOCARDITIS}.yaml").read_text())
    panel, judge = tmp_path / "panel.json", tmp_path / "judge.json"
    panel.write_text(json.dumps(PANEL))
    judge.write_text(json.dumps(JUDGE))
    assert main(["cohort", "--cases", str(tmp_path / "cases"), "--model", f"scripted:{panel}", "--formats",
                 "structured", "--judge", "nmb-diagnosis-match", "--judge-model", f"scripted:{judge}",
                 "--out", str(tmp_path / "runs")]) == 0
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    [path] = run_dir.rglob(f"{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
    assert (manifest["settings"]["judge_decoding"], read_judgement(path).decoding) == (None, "constrained")
    for when, expected, calls in (("now", "constrained", MATCH_ITEMS + 1),
                                  ("before", "paper", MATCH_ITEMS * (1 + REPAIRS + 1))):
        if when == "before":
            del manifest["settings"]["judge_decoding"]
            (run_dir / "manifest.json").write_text(json.dumps(manifest))
        path.unlink()
        assert main(["cohort", "--resume", str(run_dir)]) == 0, capsys.readouterr().err
        judged = read_judgement(path)
        assert (judged.decoding, len(judged.calls)) == (expected, calls), when


def test_a_judgement_replayed_from_its_recording_is_asked_in_the_order_it_was_recorded(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``replay:JUDGEMENT`` serves the recorded calls: a judgement recorded in either order is made again, call
    for call, in that order; one asked in another order than recorded diverges, said in one line (exit 1), not as
    an internal error."""
    for order in ("constrained", "paper"):
        made = _judge(runs, "nmb-diagnosis-match", JUDGE, "--judge-decoding", order, rc=0)
        recording = runs.parent / f"recorded-{order}.json"
        recording.write_text(made.model_dump_json())
        assert main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--judge-model",
                     f"replay:{recording}", "--force"]) == 0
        [path] = runs.glob(f"*/{MYOCARDITIS}.structured.judge.nmb-diagnosis-match.json")
        again = read_judgement(path)
        assert (again.decoding, len(again.calls)) == (order, len(made.calls)), order
        assert [(i.criterion, i.score) for i in again.items] == [(i.criterion, i.score) for i in made.items]
    capsys.readouterr()
    assert main(["judge", str(runs), "--rubric", "nmb-diagnosis-match", "--judge-model",
                 f"replay:{runs.parent / 'recorded-constrained.json'}", "--force", "--judge-decoding", "paper"]) == 1
    [err] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("consilium:")]
    assert err.startswith("consilium: ReplayDivergenceError: ") and "differs from recorded call" in err
