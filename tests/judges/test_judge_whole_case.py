"""Whole-case criteria are judged on every stage of the consilium (ai-consilium.txt,
Table 29 "Whole-case assessment" L260, Tables 41-43), shortened earliest stage first to fit the judge's
context, with a marker and a record of what was cut."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.scripts import Scripted

from consilium.cli import main
from consilium.judges.prompting import SECTIONS, load_judge_prompt
from consilium.judges.record import Judgement
from consilium.judges.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
WHOLE = ["panel_adequacy", "case_complexity", "overall_quality"]
MARKER = re.compile(r"\[… shortened: (\d+) of (\d+) characters kept …\]")


def panel_script(opinion: str = "WCQ-opinion {role} favours myocarditis.", report: str = "WCQ-report-v1 Myocarditis.",
                 revised: str = "WCQ-report-v2 Myocarditis; MRI within 48 h.") -> dict[str, Any]:
    """A free-form consilium: three roles, a dissent in round 1, a revision, consensus in round 2."""
    return (Scripted("scripted-panel")
            .roles("Cardiologist", "Cardiac radiologist", "Infectious disease specialist",
                   justification=("WCQ-just-cardio troponin rise", "WCQ-just-radio MRI confirms",
                                  "WCQ-just-id viral"))
            .opinion(opinion)
            .synthesis(report)
            .dissent("cardiac-radiologist", 1, reason="WCQ-dissent-reason MRI timing missing",
                     requested_change="WCQ-change MRI within 48 h")
            .accept(reason="WCQ-accept-r{round}")
            .revision(revised, summary="WCQ-summary added MRI timing")
            .build())


#: Every stage the physicians saw, as the prompt must carry it.
STAGES = ["Cardiologist: primary", "Cardiac radiologist: supporting", "Infectious disease specialist: supporting",
          "WCQ-just-cardio", "WCQ-just-radio", "WCQ-just-id", "WCQ-opinion cardiologist",
          "WCQ-opinion cardiac-radiologist", "WCQ-opinion infectious-disease-specialist", "WCQ-report-v1",
          "WCQ-report-v2", "WCQ-summary", "Cardiac radiologist (supporting): dissent", "WCQ-dissent-reason",
          "WCQ-change", "WCQ-accept-r1", "WCQ-accept-r2"]


def simulate(tmp_path: Path, script: dict[str, Any]) -> Path:
    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps(script))
    out = tmp_path / "runs"
    assert main(["simulate", "--case", str(CASE), "--model", f"scripted:{panel}", "--format", "free-form",
                 "--out", str(out)]) == 0
    [run_dir] = list(out.iterdir())
    return run_dir


def judge(tmp_path: Path, run_dir: Path, script: dict[str, Any], *extra: str) -> Judgement:
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(script))
    main(["judge", str(run_dir), "--rubric", "ai-consilium", "--judge-model", f"scripted:{path}", *extra])
    [record] = run_dir.glob("*.judge.ai-consilium.json")
    return Judgement.model_validate_json(record.read_text())


def sections(user: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for tag, text in re.findall(r"<(" + "|".join(SECTIONS) + r")>\n(.*?)\n</\1>", user, re.DOTALL):
        found.setdefault(tag, []).append(text)
    return found


def test_whole_case_criteria_see_the_panel_opinions_every_report_version_and_the_votes(tmp_path: Path) -> None:
    run_dir = simulate(tmp_path, panel_script())
    # The judge scores 3 only when the prompt holds every stage, 1 otherwise: the scores tell what it saw.
    record = judge(tmp_path, run_dir, {"model": "j", "rules": [
        {"stage": "judge", "contains_all": STAGES, "json": {"rationale": "saw all", "score": 3}},
        {"stage": "judge", "json": {"rationale": "saw less", "score": 1}}]})
    scores = {i.criterion: i.score for i in record.items}
    assert {c: scores[c] for c in WHOLE} == dict.fromkeys(WHOLE, 3.0)
    assert all(scores[c] == 1.0 for c in scores if c not in WHOLE)  # per-output criteria: the report alone
    assert record.aggregates["conclusion"]["whole_case"] == dict.fromkeys(WHOLE, 3.0)
    calls = {str(c.role).split(":")[1]: c.messages[-1].content for c in record.calls}
    whole = sections(calls["overall_quality"])
    assert len(whole["panel"]) == 1 and len(whole["opinion"]) == 3 and len(whole["review_round"]) == 2
    assert [v.split(",")[0] for v in whole["report_version"]] == ["Report version 1 of 2", "Report version 2 of 2"]
    assert "WCQ-report-v2" in whole["candidate"][0]  # the final report is the candidate, whole
    assert "1 of 3 dissent" in whole["review_round"][0] and "consensus" in whole["report_version"][1]
    for stage in ("WCQ-just", "WCQ-opinion", "WCQ-report-v1", "WCQ-dissent", "WCQ-accept"):
        assert stage not in calls["c1"], stage  # a per-output criterion judges the final report alone
    item = next(i for i in record.items if i.criterion == "panel_adequacy")
    assert item.detail["whole_case"] is True and item.detail["whole_case_input"]["shortened"] == []
    assert "c1" in calls and "whole_case_input" not in next(i for i in record.items if i.criterion == "c1").detail


LONG_OPINION = "WCQ-opinion {role} " + "The troponin curve and the MRI pattern favour myocarditis. " * 60
LONG_V1 = "WCQ-report-v1 " + "Initial synthesis: myocarditis is most likely, pericarditis less so. " * 40
FINAL = "WCQ-report-v2 " + "Final: acute viral myocarditis; cardiac MRI within 48 h; telemetry. " * 12 + "WCQ-END"
SCORE_2 = {"stage": "judge", "json": {"rationale": "r", "score": 2}}


def test_a_long_record_is_shortened_earliest_stages_first_marked_and_recorded(tmp_path: Path) -> None:
    from consilium.judges.whole_case import FLOOR_CHARS

    run_dir = simulate(tmp_path, panel_script(LONG_OPINION, LONG_V1, FINAL))
    # The whole record needs about 5,300 prompt tokens; a context of 3,400 leaves room for 2,760.
    record = judge(tmp_path, run_dir, {"model": "j", "n_ctx": 3400, "rules": [SCORE_2]},
                   "--max-tokens", "64", "--max-repairs", "3")
    whole = [i for i in record.items if i.criterion in WHOLE]
    assert [i.score for i in whole] == [2.0, 2.0, 2.0] and not any(i.not_evaluable for i in record.items)
    fitted = whole[0].detail["whole_case_input"]
    assert fitted["context_tokens"] == 3400 and fitted["prompt_room"] == 3400 - 64 - 3 * (64 + 128)
    assert fitted["fits"] is True and fitted["prompt_tokens_estimate"] <= fitted["prompt_room"]
    cut = {s["stage"]: (s["kept_chars"], s["total_chars"]) for s in fitted["shortened"]}
    # the opinions went first, to the floor; then the oldest report version, as far as needed; no more
    opinions = ["opinion of Cardiologist (primary)", "opinion of Cardiac radiologist (supporting)",
                "opinion of Infectious disease specialist (supporting)"]
    assert list(cut) == [*opinions, "report version 1"]
    assert all(0 < cut[o][0] <= FLOOR_CHARS < cut[o][1] for o in opinions)
    assert FLOOR_CHARS < cut["report version 1"][0] < cut["report version 1"][1]
    user = next(c for c in record.calls if c.role == "conclusion:overall_quality").messages[-1].content
    parts = sections(user)
    markers = [tuple(map(int, m.groups())) for text in parts["opinion"] + parts["report_version"]
               for m in MARKER.finditer(text)]
    assert markers == [cut[name] for name in cut]  # each cut is marked where it was made, with its numbers
    assert parts["candidate"] == [FINAL]  # the final report stays whole
    assert not MARKER.search(parts["panel"][0] + "".join(parts["review_round"]))
    assert "WCQ-just-id" in parts["panel"][0] and "WCQ-dissent-reason" in parts["review_round"][0]
    # every whole-case criterion saw the same record; the per-output ones never see it
    users = {c.role: sections(c.messages[-1].content) for c in record.calls}
    assert all(users[f"conclusion:{c}"]["opinion"] == parts["opinion"] for c in WHOLE)
    assert "opinion" not in users["conclusion:c1"]


def test_a_record_that_cannot_fit_is_not_evaluable_with_the_reason_never_sent(tmp_path: Path) -> None:
    run_dir = simulate(tmp_path, panel_script(LONG_OPINION, LONG_V1, FINAL))
    # Room for the case and the final report (the per-output calls) but not for the panel and the votes too.
    record = judge(tmp_path, run_dir, {"model": "j", "n_ctx": 2700, "rules": [SCORE_2]},
                   "--max-tokens", "64", "--max-repairs", "3")
    whole = [i for i in record.items if i.criterion in WHOLE]
    assert all(i.not_evaluable and i.score is None for i in whole)
    assert whole[0].reason and whole[0].reason.startswith("the whole case does not fit the judge's context of 2700")
    fitted = whole[0].detail["whole_case_input"]
    assert fitted["fits"] is False and all(s["kept_chars"] == 0 for s in fitted["shortened"])
    assert not [c for c in record.calls if str(c.role).split(":")[1] in WHOLE]  # never sent: no refusal voids the rest
    assert all(i.score == 2.0 for i in record.items if i.criterion not in WHOLE)


def test_the_preamble_names_every_data_section_and_the_rubric_describes_the_record() -> None:
    from consilium.judges.whole_case import SECTION_TAGS

    preamble = load_judge_prompt("preamble")
    assert set(SECTION_TAGS) <= set(SECTIONS) and all(f"<{tag}>" in preamble for tag in SECTIONS)
    rubric = load_rubric("ai-consilium")
    assert "pre-consilium opinions" in next(c for c in rubric.criteria if c.id == "overall_quality").definition


def test_a_refused_whole_case_call_voids_its_own_items_only(tmp_path: Path) -> None:
    """A served judge whose context is unknown gets the whole record; when it refuses that long prompt
    (a model error), only the three whole-case items are not evaluable, with the reason: the eight
    per-output criteria, whose prompts fit, are still scored."""
    run_dir = simulate(tmp_path, panel_script())
    record = judge(tmp_path, run_dir, {"model": "j", "rules": [
        {"stage": "judge", "contains": "<review_round>", "fail": "model"},
        {"stage": "judge", "json": {"rationale": "scored", "score": 2}}]})
    whole = [i for i in record.items if i.criterion in WHOLE]
    rest = [i for i in record.items if i.criterion not in WHOLE]
    assert len(whole) == 3 and all(i.not_evaluable and "judge call failed" in (i.reason or "") for i in whole)
    assert rest and all(i.score == 2.0 and not i.not_evaluable for i in rest)


def test_the_coverage_counts_items_judged_on_a_shortened_record(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A researcher sees the cut without opening the judgement files: the coverage printed by `judge`
    counts the items judged on a shortened whole-case record."""
    run_dir = simulate(tmp_path, panel_script(opinion="WCQ-opinion {role} " + "favours myocarditis. " * 150))
    capsys.readouterr()
    record = judge(tmp_path, run_dir, {"model": "j", "n_ctx": 3800, "rules": [
        {"stage": "judge", "json": {"rationale": "scored", "score": 2}}]})
    cut = [i for i in record.items if (i.detail.get("whole_case_input") or {}).get("shortened")]
    assert len(cut) == 3
    out = capsys.readouterr().out
    assert "3 on a shortened whole-case record" in out


def test_judgements_csv_shows_which_items_saw_a_shortened_record(tmp_path: Path) -> None:
    """judgements.csv, what a researcher filters on, says for each whole-case item how much of the
    record the judge saw (kept/total characters of the stages cut); per-output items stay empty."""
    import csv

    panel = tmp_path / "panel.json"
    panel.write_text(json.dumps(panel_script(opinion="WCQ-opinion {role} " + "favours myocarditis. " * 150)))
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(json.dumps({"model": "j", "n_ctx": 3800, "rules": [
        {"stage": "judge", "json": {"rationale": "scored", "score": 2}}]}))
    out = tmp_path / "runs"
    assert main(["cohort", "--cases", str(CASE), "--formats", "free-form", "--model", f"scripted:{panel}",
                 "--judge", "ai-consilium", "--judge-model", f"scripted:{judge_file}", "--out", str(out)]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    rows = list(csv.DictReader((run_dir / "judgements.csv").read_text().splitlines()))
    [record] = run_dir.rglob("*.judge.ai-consilium.json")
    judgement = Judgement.model_validate_json(record.read_text())
    assert len(rows) == len(judgement.items) and sum(bool(r["shortened_input"]) for r in rows) == 3
    for row in rows:
        item = next(i for i in judgement.items if (i.component, i.criterion) == (row["component"], row["criterion"]))
        cuts = (item.detail.get("whole_case_input") or {}).get("shortened") or []
        expected = f"{sum(c['kept_chars'] for c in cuts)}/{sum(c['total_chars'] for c in cuts)}" if cuts else ""
        assert row["shortened_input"] == expected
        assert bool(expected) == (row["criterion"] in WHOLE)
