"""``consilium view RUN_DIR`` on a cohort: the index (a row per arm), a page per arm and per case, the
reference beside the conclusion; script-free, escaped, relative links, its own pages only.

The fixture is a scripted cohort with varied values: models a and b, both formats, cases k1 and k2,
a judge score per (model, format, case), one criterion not evaluable, and model b's synthesis failing
on k2 (both its k2 arms fail). Every expected cell is worked out here from the trace and judgement
files (and the fixture's own tables), never by the viewer's code."""

from __future__ import annotations

import csv
import json
import posixpath
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from support.board_cohort import WEIGHTED, nsclc_agents_trace
from support.cohorts import copy_cohort
from support.scripts import STRUCTURED_REVISION, Scripted, sections

from consilium.cli import main

ROOT = Path(__file__).resolve().parents[2]
AFIB = ROOT / "examples" / "cases" / "consultation-afib-anticoagulation.yaml"
HOSTILE = '<script>alert(1)</script> "onload=alert(2) javascript:alert(3)'
CASES = ("k1", "k2")
FORMATS = ("free-form", "structured")
# (model, format, case) -> the judge's score of each conclusion criterion (the role components get 1)
SCORE = {("a", "free-form", "k1"): 3, ("a", "structured", "k1"): 2, ("a", "free-form", "k2"): 0,
         ("a", "structured", "k2"): 1, ("b", "free-form", "k1"): 2, ("b", "structured", "k1"): 3}
NOT_EVALUABLE = ("a", "free-form", "k1", "c3")  # the judge answers "not_evaluable"
NONE = "—"
PRICES = {"input": 2.5, "cached_input": 1.25, "output": 10.0}  # USD per 1M tokens


def expected_cost(trace: dict[str, Any]) -> str:
    """Σ over the calls of (uncached input · input + cached · cached_input + output · output) / 1e6, as
    docs/models.md prices them; unknown ("—") when a call has no prices."""
    calls = trace["calls"]
    if not calls or any(c["prices"] is None for c in calls):
        return NONE
    total = sum(((u["input_tokens"] - min(u["cached_tokens"], u["input_tokens"])) * c["prices"]["input"]
                 + min(u["cached_tokens"], u["input_tokens"]) * c["prices"]["cached_input"]
                 + u["output_tokens"] * c["prices"]["output"]) / 1e6 for c in calls for u in [c["usage"]])
    return f"${total:,.4f}" if total >= 0.01 else f"${total:.6f}"


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


def verdict(model: str, case: str) -> str:
    return f"Verdict {model}{case} {HOSTILE}"


def in_text(model: str, fmt: str, case: str) -> str:
    """How the final opinion starts in the judged conclusion (a free-form report keeps the JSON as text; the
    judge's prompt escapes the hostile part, so only the verdict's start is matched)."""
    start = f"Verdict {model}{case} "
    return f"Final opinion: {start}" if fmt == "structured" else f'"final_opinion": "{start}'


def panel(model: str) -> dict[str, Any]:
    script = (Scripted(f"model-{model}")
              .roles("Cardiologist", "Haematologist", "Geriatrician", justification=("x", "y", "z"))
              .structured_opinion("Anticoagulate.")
              .opinion("Anticoagulate, says the {role}.")
              .dissent("haematologist", 1, reason="bleeding", requested_change="HAS-BLED")
              .accept()
              .revision(sections("kept", final_differential="1. AF"), changed=False, summary="kept",
                        where={"contains": STRUCTURED_REVISION})
              .revision("kept", changed=False, summary="kept"))
    for case in CASES:
        if (model, case) == ("b", "k2"):
            script.fail("synthesis", where={"contains": f"casemark-{case}"})
            continue
        script.synthesis(sections(verdict(model, case), final_differential="1. AF"),
                         where={"contains": f"casemark-{case}"})
    return script.build()


def judge() -> dict[str, Any]:
    model, fmt, case, criterion = NOT_EVALUABLE
    script = Scripted("judge").score("not_evaluable", item=f"conclusion:{criterion}", rationale="nothing to judge",
                                     where={"contains": in_text(model, fmt, case)})
    for key, score in SCORE.items():
        for c in ("c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "panel_adequacy", "case_complexity",
                  "overall_quality"):
            script.score(score, item=f"conclusion:{c}", where={"contains": in_text(*key)})
    return script.score(1).build()


def cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    base = yaml.safe_load(AFIB.read_text())
    for case_id in CASES:
        case = {**base, "id": case_id, "title": f"Case {case_id} {HOSTILE}",
                "presentation": f"{base['presentation']} Marker casemark-{case_id}. {HOSTILE}",
                "reference": {"diagnosis": f"Atrial fibrillation {case_id}", "conclusion": f"Anticoagulate. {HOSTILE}",
                              "decisions": {"therapy": "apixaban", "surgery": None}}}
        (folder / f"{case_id}.yaml").write_text(yaml.safe_dump(case))
    return folder


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("viewer")
    out = tmp_path / "runs"
    config = tmp_path / "a.yaml"  # model a has prices, model b none (its cost is unknown)
    config.write_text(json.dumps({"spec": write(tmp_path, "a.json", panel("a")), "prices": PRICES}))
    code = main(["cohort", "--cases", str(cases(tmp_path)), "--model-config", str(config),
                 "--extra-model", write(tmp_path, "b.json", panel("b")), "--judge", "ai-consilium",
                 "--judge-model", write(tmp_path, "j.json", judge()), "--out", str(out)])
    assert code == 1  # model b's two k2 arms failed
    [found] = [p for p in out.iterdir() if p.is_dir()]
    assert main(["view", str(found)]) == 0
    return found


class Page(HTMLParser):
    """Every tag with its attributes; the rows (cell texts, cell links) of each table by its class."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.tables: dict[str, list[list[tuple[str, list[str]]]]] = {}
        self._table = ""
        self._cell: list[str] | None = None
        self._links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self._table = dict(attrs).get("class") or ""
            self.tables.setdefault(self._table, [])
        elif tag == "tr":
            self.tables[self._table].append([])
        elif tag in ("td", "th"):
            self._cell, self._links = [], []
        elif tag == "a" and self._cell is not None:
            self._links.append(dict(attrs)["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append(("".join(self._cell), self._links))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def index_rows(run_dir: Path) -> tuple[list[str], list[dict[str, tuple[str, list[str]]]]]:
    [header, *rows] = parse(run_dir / "view" / "index.html").tables["arms"]
    names = [text for text, _ in header]
    return names, [dict(zip(names, row, strict=True)) for row in rows]


def expected_score(record: dict[str, Any]) -> str:
    """The mean of the per-output items scored (whole-case criteria left out), with the counts."""
    scores = [i["score"] for i in record["items"] if not i["detail"].get("whole_case") and not i["not_evaluable"]]
    not_evaluable = sum(i["not_evaluable"] for i in record["items"])
    mean = f"{sum(scores) / len(scores):.2f}" if scores else NONE
    return f"{mean} ({len(scores)} scored, {not_evaluable} not evaluable)"


def test_each_row_is_its_arm_as_the_trace_and_judgement_files_say(run_dir: Path) -> None:
    names, rows = index_rows(run_dir)
    assert names == ["case", "protocol", "model", "format", "status", "stop reason", "rounds", "panel tokens",
                     "panel cost", "judge tokens", "judge cost", "total cost", "score: ai-consilium", "page"]
    traces = sorted(run_dir.rglob("*.trace.json"))
    assert len(rows) == len(traces) == 8
    costs = {r["model"][0]: r["panel cost"][0] for r in rows}
    assert costs["model-a"].startswith("$") and costs["model-b"] == NONE
    by_arm = {(r["case"][0], r["model"][0], r["format"][0]): r for r in rows}
    for path in traces:
        trace = json.loads(path.read_text())
        row = by_arm[(trace["case_id"], trace["model"], trace["format"])]
        usage = trace["usage"]["total"]
        status = trace["status"] if trace["status"] == "completed" else \
            f"{trace['status']} at {trace['failed_stage']}: {trace['error']}"
        shown = {k: v[0] for k, v in row.items() if k not in ("case", "model", "format", "page", "score: ai-consilium")}
        record = path.with_name(path.name.replace(".trace.json", ".judge.ai-consilium.json"))
        # the judge's calls as its record keeps them (none: not judged, nothing spent); its judge is unpriced
        judged = json.loads(record.read_text())["calls"] if record.is_file() else []
        assert shown == {
            "protocol": trace["kind"], "status": status, "stop reason": trace["stop_reason"] or NONE,
            "rounds": str(len(trace["rounds"])),
            "panel tokens": f"{usage['input_tokens'] + usage['output_tokens']:,}", "panel cost": expected_cost(trace),
            "judge tokens": f"{sum(c['usage']['input_tokens'] + c['usage']['output_tokens'] for c in judged):,}",
            "judge cost": expected_cost({"calls": judged}) if judged else "$0.000000",
            "total cost": expected_cost(trace) if not judged else NONE}
        if record.is_file():
            assert row["score: ai-consilium"][0] == expected_score(json.loads(record.read_text()))
        else:
            assert trace["status"] == "failed" and row["score: ai-consilium"][0] == NONE
        [link] = row["page"][1]
        page = (run_dir / "view" / unquote(link)).resolve()
        assert page.is_file() and path.name.removesuffix(".trace.json") + ".html" == page.name


def test_the_scores_differ_as_the_judge_gave_them(run_dir: Path) -> None:
    """Worked out from the fixture: a free-form arm's per-output items are the conclusion's c1-c8, all scored
    SCORE; one of a/free-form/k1's is not evaluable, so its mean is over 7."""
    _, rows = index_rows(run_dir)
    cells = {(r["model"][0], r["format"][0], r["case"][0]): r["score: ai-consilium"][0] for r in rows}
    assert cells[("model-a", "free-form", "k1")] == "3.00 (7 scored, 1 not evaluable)"
    assert cells[("model-a", "free-form", "k2")] == "0.00 (8 scored, 0 not evaluable)"
    assert cells[("model-b", "free-form", "k1")] == "2.00 (8 scored, 0 not evaluable)"
    # structured: role_reasoning (7 items) and role_opinion (5) get 1, the conclusion's 8 get SCORE
    assert cells[("model-a", "structured", "k2")] == "1.00 (20 scored, 0 not evaluable)"
    assert cells[("model-b", "structured", "k1")] == f"{(12 * 1 + 8 * 3) / 20:.2f} (20 scored, 0 not evaluable)"
    assert cells[("model-b", "free-form", "k2")] == NONE  # failed, not judged


def test_the_header_counts_arms_failures_and_not_evaluable_items(run_dir: Path) -> None:
    records = [json.loads(p.read_text()) for p in run_dir.rglob("*.judge.*.json")]
    items = sum(len(r["items"]) for r in records)
    not_evaluable = sum(i["not_evaluable"] for r in records for i in r["items"])
    assert not_evaluable == 1
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    failed = sum(a["status"] != "completed" for a in arms)
    assert failed == 2
    page = (run_dir / "view" / "index.html").read_text()
    assert (f"{len(arms)} arms · {len(arms) - failed} completed · {failed} failed · {items} judge items, "
            f"{not_evaluable} not evaluable") in page


def _pages(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "view").rglob("*.html"))


def test_every_link_is_relative_and_resolves_and_pages_link_both_ways(run_dir: Path) -> None:
    pages = _pages(run_dir)
    assert len(pages) == 1 + 2 + 8  # index, two cases, eight arms
    linked: dict[Path, set[Path]] = {}
    for path in pages:
        hrefs = [a["href"] or "" for tag, a in parse(path).tags if tag == "a"]
        assert hrefs, path
        for href in hrefs:
            assert "://" not in href and not href.startswith("/") and ":" not in href.split("/")[0], href
            target = (path.parent / unquote(href)).resolve()
            assert target.is_file(), (path, href)
            linked.setdefault(path.resolve(), set()).add(target)
    index = (run_dir / "view" / "index.html").resolve()
    for path in pages:
        if path.resolve() != index:
            assert index in linked[path.resolve()] and path.resolve() in linked[index]
    arm = next(p for p in pages if p.name == "k1.free-form.html" and "model-a" in p.read_text())
    assert arm.with_name("k1.structured.html").resolve() in linked[arm.resolve()]  # its other format


def test_no_page_has_a_script_or_an_event_and_all_text_is_escaped(run_dir: Path) -> None:
    for path in _pages(run_dir):
        text = path.read_text(encoding="utf-8")
        for tag, attrs in parse(path).tags:
            assert tag not in ("script", "img", "iframe", "object", "embed", "link"), (path, tag)
            assert not any(name.lower().startswith("on") for name in attrs), (path, tag, attrs)
            assert not any((v or "").strip().lower().startswith("javascript:") for v in attrs.values())
        assert "<script" not in text.lower() and '"onload=' not in text
        assert "Content-Security-Policy" in text
    case = (run_dir / "view" / "cases" / "k1.html").read_text(encoding="utf-8")
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;onload=alert(2) javascript:alert(3)"
    assert case.count(escaped) >= 3  # the title, the reference conclusion, the arms' conclusions
    arm = next(p for p in _pages(run_dir) if p.name == "k1.structured.html").read_text(encoding="utf-8")
    assert f"Verdict ak1 {escaped}" in arm or f"Verdict bk1 {escaped}" in arm


def test_the_case_page_puts_the_formats_side_by_side_with_the_reference(run_dir: Path) -> None:
    page = parse(run_dir / "view" / "cases" / "k1.html")
    [header, *rows] = page.tables["variants"]
    assert [t for t, _ in header] == ["model", "free-form", "structured"]
    assert {r[0][0] for r in rows} == {"model-a", "model-b"}
    for row in rows:
        model = row[0][0].removeprefix("model-")
        for (text, _), fmt in zip(row[1:], FORMATS, strict=True):
            trace = json.loads(next(p for p in run_dir.rglob(f"k1.{fmt}.trace.json")
                                    if json.loads(p.read_text())["model"] == f"model-{model}").read_text())
            assert f"Verdict {model}k1" in text and f"rounds: {len(trace['rounds'])}" in text
            assert f"stop_reason: {trace['stop_reason']}" in text
            assert f"ai-consilium: {'3.00 (7' if (model, fmt) == ('a', 'free-form') else ''}" in text
    text = (run_dir / "view" / "cases" / "k1.html").read_text(encoding="utf-8")
    assert "Atrial fibrillation k1" in text and "apixaban" in text and "out of scope" in text
    failed = parse(run_dir / "view" / "cases" / "k2.html").tables["variants"]
    b_row = next(r for r in failed[1:] if r[0][0] == "model-b")
    assert all(cell[0].startswith("failed at synthesis") for cell in b_row[1:])


def test_the_arm_page_has_the_reference_beside_the_conclusion(run_dir: Path) -> None:
    arm = next(p for p in _pages(run_dir) if p.name == "k2.structured.html" and "model-a" in p.read_text())
    text = arm.read_text(encoding="utf-8")
    reference, concluded = text.split("Reference (judge-only)")[1].split("What the consilium concluded")
    assert "Atrial fibrillation k2" in reference and "apixaban" in reference
    assert "Verdict ak2" in concluded and "Leading diagnosis" in concluded
    assert "Review round 1" in text and "Tokens by stage" in text and "Judge: ai-consilium" in text
    trace = json.loads(next(p for p in run_dir.rglob("k2.structured.trace.json")
                            if json.loads(p.read_text())["model"] == "model-a").read_text())
    assert f"<td>{expected_cost(trace)}</td></tr></table>" in text  # the total row of tokens by stage


def test_rerunning_replaces_its_own_pages_and_never_a_file_of_someone_else(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = run_dir / "view" / "index.html"
    before = index.read_text(encoding="utf-8")
    assert main(["view", str(run_dir)]) == 0 and index.read_text(encoding="utf-8") == before
    out = tmp_path / "pages"
    out.mkdir()
    (out / "cases").mkdir()
    mine = out / "cases" / "k2.html"
    mine.write_text("<p>my notes</p>")
    capsys.readouterr()
    assert main(["view", str(run_dir), "--out", str(out)]) == 2
    assert "k2.html: not a page `consilium view` wrote" in capsys.readouterr().err
    assert mine.read_text() == "<p>my notes</p>" and not (out / "index.html").exists()  # nothing written
    mine.unlink()
    assert main(["view", str(run_dir), "--out", str(out)]) == 0 and (out / "index.html").is_file()


def test_a_replicate_column_is_shown_when_arms_csv_has_one(run_dir: Path, tmp_path: Path) -> None:
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    copy = tmp_path / "cohort"
    copy.mkdir()
    with (copy / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, [*arms[0], "replicate"])
        writer.writeheader()
        for n, arm in enumerate(arms):
            writer.writerow({**arm, "trace": str(run_dir / arm["trace"]) if arm["trace"] else "",
                             "replicate": str(n % 2 + 1)})
    assert main(["view", str(copy)]) == 0
    names, rows = index_rows(copy)
    assert names[4] == "replicate" and [r["replicate"][0] for r in rows] == [str(n % 2 + 1) for n in range(8)]
    for row in rows:
        [href] = row["page"][1]
        assert (copy / "view" / posixpath.normpath(unquote(href))).is_file()


def test_zeros_empty_cells_a_missing_column_and_a_failed_arm_show_as_arms_csv_writes_them(
        run_dir: Path, tmp_path: Path) -> None:
    """arms.csv's cells are read into their types (0 a count, an empty cell unknown) and shown as written: a
    0 of rounds and tokens is "0" on the index and "rounds: 0" on the case page, an empty one "—" and left
    out; a folder without a stop_reason column shows "—"; a replicate 0 is shown; a failed arm arms.csv names
    no model of, nor a trace, is shown by its spec, without a page."""
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    done = [n for n, arm in enumerate(arms) if arm["status"] == "completed"]
    zero, empty = done[0], done[1]
    failed = next(n for n, arm in enumerate(arms) if arm["status"] == "failed")
    edits = {zero: {"rounds": "0", "input_tokens": "0", "output_tokens": "0"},
             empty: {"rounds": "", "input_tokens": ""}, failed: {"model": "", "trace": ""}}
    copy = tmp_path / "cohort"
    copy.mkdir()
    with (copy / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, [c for c in arms[0] if c != "stop_reason"] + ["replicate"],
                                extrasaction="ignore")
        writer.writeheader()
        for n, arm in enumerate(arms):
            arm = {**arm, **edits.get(n, {}), "replicate": str(n % 2)}
            writer.writerow({**arm, "trace": str(run_dir / arm["trace"]) if arm["trace"] else ""})
    assert main(["view", str(copy)]) == 0
    names, rows = index_rows(copy)
    assert names[4] == "replicate"

    def shown(arm: dict[str, str]) -> dict[str, Any]:
        model = arm["model"] or arm["model_spec"]
        [row] = [r for r in rows if (r["case"][0], r["model"][0], r["format"][0], r["replicate"][0])
                 == (arm["case_id"], model, arm["format"], arm["replicate"])]
        return row

    written = [{**arm, **edits.get(n, {}), "replicate": str(n % 2)} for n, arm in enumerate(arms)]
    assert all(row["stop reason"][0] == NONE for row in rows)
    assert (shown(written[zero])["rounds"][0], shown(written[zero])["panel tokens"][0]) == ("0", "0")
    assert (shown(written[empty])["rounds"][0], shown(written[empty])["panel tokens"][0]) == (NONE, NONE)
    lost = shown(written[failed])
    assert lost["model"][0] == arms[failed]["model_spec"] and lost["page"] == (NONE, [])
    assert lost["status"][0] == f"failed at {arms[failed]['failed_stage']}: {arms[failed]['error']}"
    assert {row["replicate"][0] for row in rows} == {"0", "1"}
    assert "rounds: 0" in (copy / "view" / "cases" / f"{arms[zero]['case_id']}.html").read_text()
    for case in CASES:  # an empty rounds cell is left out of its arm's facts; a 0 is not
        page = (copy / "view" / "cases" / f"{case}.html").read_text()
        assert page.count("rounds: ") == sum(arm["case_id"] == case and arm["rounds"] != "" for arm in written)


def test_no_page_path_leaves_the_view_folder() -> None:
    """An edited arms.csv (a trace path with ``..``, a case id that is no case id) still writes inside view/."""
    from consilium.reports.view_cohort import arm_page, case_page

    assert arm_page("arms/m-1/ab/k1.free-form.trace.json") == "arms/m-1/ab/k1.free-form.html"
    assert arm_page("") is None
    for recorded in ("arms/../../evil.trace.json", "/tmp/x/k1.trace.json", "arms/a b/<k>.trace.json",
                     "..\\..\\arms\\..\\k.trace.json"):
        page = arm_page(recorded)
        assert page is not None and page.startswith("arms/other/") and ".." not in page.split("/"), page
    assert case_page("k1") == "cases/k1.html"
    assert case_page("../../etc/passwd").startswith("cases/case-") and case_page("a/b").count("/") == 1


def test_the_index_lists_cases_in_natural_order(run_dir: Path, tmp_path: Path) -> None:
    """Case ids with numbers (mac-0 … mac-10) in the index as a person reads them, not in string order
    (mac-0, mac-1, mac-10, mac-2): the fixture's arms, k1's under mac-10 and mac-1, k2's under mac-2 and mac-0,
    written to arms.csv in string order."""
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))
    renamed = {"mac-10": "k1", "mac-2": "k2", "mac-1": "k1", "mac-0": "k2"}
    copy = tmp_path / "natural"
    copy.mkdir()
    with (copy / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(arms[0]))
        writer.writeheader()
        for case in sorted(renamed):  # string order: mac-0, mac-1, mac-10, mac-2
            for arm in arms:
                if arm["case_id"] == renamed[case]:
                    writer.writerow({**arm, "case_id": case,
                                     "trace": str(run_dir / arm["trace"]) if arm["trace"] else ""})
    assert main(["view", str(copy)]) == 0
    _, rows = index_rows(copy)
    order = ["mac-0", "mac-1", "mac-2", "mac-10"]
    assert [r["case"][0] for r in rows] == [case for case in order for _ in range(4)]
    page = (copy / "view" / "index.html").read_text(encoding="utf-8")
    cases = page.split("<p>Cases: ")[1].split("</p>")[0]
    assert [cases.index(f">{case}<") for case in order] == sorted(cases.index(f">{case}<") for case in order)


def test_a_running_cohorts_arms_read_in_natural_order_on_the_index_and_case_pages(
        run_dir: Path, tmp_path: Path) -> None:
    """arms.csv of a running or killed cohort is in the order its arms finished (rewritten sorted only at the
    end): the index and each case page still list them by case, model, format and replicate, replicate 2
    before 10. Each fixture arm as three replicates (0, 10, 2), written last-finished first."""
    arms = list(csv.DictReader((run_dir / "arms.csv").read_text().splitlines()))  # sorted: case, model, format
    copy = tmp_path / "running"
    copy.mkdir()
    expected = [(arm["case_id"], arm["model"] or arm["model_spec"], arm["format"], r)
                for arm in arms for r in ("0", "2", "10")]
    finished = [{**arm, "trace": str(run_dir / arm["trace"]) if arm["trace"] else "", "replicate": r}
                for arm in arms for r in ("10", "0", "2")]
    with (copy / "arms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, [*arms[0], "replicate"])
        writer.writeheader()
        writer.writerows(reversed(finished))
    assert main(["view", str(copy)]) == 0
    _, rows = index_rows(copy)
    assert [(r["case"][0], r["model"][0], r["format"][0], r["replicate"][0]) for r in rows] == expected
    models = len({arm["model_spec"] for arm in arms})
    for case in dict.fromkeys(arm["case_id"] for arm in arms):
        [header, *lines] = parse(copy / "view" / "cases" / f"{case}.html").tables["variants"]
        assert [text for text, _ in header][:2] == ["model", "replicate"]
        assert [line[1][0] for line in lines] == ["0", "2", "10"] * models, case


# ---- the four-decision rubric: the weighted mean the viewer shows is read from the items ----------------------

NSCLC = ROOT / "examples" / "cases" / "tumor-board-nsclc.yaml"
DIMS = ("therapy", "surgery", "next_action", "clinical_trial")
WEIGHTS = {"therapy": 1.00, "surgery": 1.25, "next_action": 1.15, "clinical_trial": 2.00}  # App. E.2
#: The judge's four scores per case: −1 out of scope, None never valid (not evaluable).
DECISIONS: dict[str, tuple[int | None, ...]] = {"t1": (4, 5, 3, -1), "t2": (2, None, 5, 3)}


def weighted_mean(scores: dict[str, int | None]) -> float:
    """App. E.2 by hand: Σ w·(s/5) / Σ w over the dimensions in scope and judged."""
    kept = {d: s for d, s in scores.items() if s is not None and s != -1}
    return sum(WEIGHTS[d] * s / 5 for d, s in kept.items()) / sum(WEIGHTS[d] for d in kept)


def test_the_viewer_shows_the_weighted_mean_of_the_items_not_the_stored_aggregate(tmp_path: Path) -> None:
    """A four-decision judgement whose therapy score was corrected by hand within the scale (4 → 2): the index
    and the case page show App. E.2's weighted mean of the items as they now are, as compare and report do,
    not the mean stored when it was judged; the arm page shows the corrected item."""
    (tmp_path / "cases").mkdir()
    base = yaml.safe_load(NSCLC.read_text())
    for case in DECISIONS:
        data = {**base, "id": case, "presentation": f"CASE-{case}. {base['presentation']}"}
        (tmp_path / "cases" / f"{case}.yaml").write_text(yaml.safe_dump(data))
    board = {"model": "scripted-board", "rules": [{"stage": "board_turn", "role": "board", "response": (
        "<discussion>\n<turn 1> Moderator: Staging?\n<turn 2> Radiologist: Early.\n</discussion>\n"
        "<conclusion>Lobectomy after staging.</conclusion>")}]}
    rules: list[dict[str, Any]] = []
    for case, scores in DECISIONS.items():
        answer = {d: "high" if s is None else s for d, s in zip(DIMS, scores, strict=True)}
        rules.append({"stage": "judge", "contains": f"CASE-{case}.", "json": {**answer, "rationale": "r"}})
    rules.append({"stage": "judge", "json": {**answer, "rationale": "r"}})  # t2's repair: invalid again
    out = tmp_path / "runs"
    assert main(["cohort", "--protocol", "board", "--modes", "single", "--cases", str(tmp_path / "cases"),
                 "--model", write(tmp_path, "board.json", board), "--judge", "otb-four-decision", "--scope", "judge",
                 "--judge-model", write(tmp_path, "judge.json", {"model": "scripted-judge", "rules": rules}),
                 "--out", str(out)]) == 0
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    [record] = [p for p in run_dir.rglob("*.judge.otb-four-decision.json") if json.loads(p.read_text())["case_id"]
                == "t1"]
    data = json.loads(record.read_text())
    stored = data["aggregates"]["conclusion"]["weighted_mean"]
    assert stored == pytest.approx(weighted_mean(dict(zip(DIMS, DECISIONS["t1"], strict=True))))
    [therapy] = [i for i in data["items"] if i["criterion"] == "therapy"]
    therapy["score"] = 2.0  # corrected by hand, within the 1-5 scale; the stored aggregate is left as it was
    record.write_text(json.dumps(data))
    assert main(["view", str(run_dir)]) == 0
    corrected = weighted_mean({"therapy": 2, "surgery": 5, "next_action": 3, "clinical_trial": -1})  # 2.34 / 3.4
    assert f"{corrected:.2f}" == "0.69" and f"{stored:.2f}" == "0.81"
    expected = {"t1": f"{corrected:.2f} weighted mean (3 scored, 1 out of scope, 0 not evaluable)",
                "t2": f"{weighted_mean(dict(zip(DIMS, DECISIONS['t2'], strict=True))):.2f} weighted mean "
                      "(3 scored, 1 not evaluable)"}
    _, rows = index_rows(run_dir)
    assert {r["case"][0]: r["score: otb-four-decision"][0] for r in rows} == expected
    for case, cell in expected.items():
        assert f"otb-four-decision: {cell}" in (run_dir / "view" / "cases" / f"{case}.html").read_text()
    [arm] = [p for p in (run_dir / "view" / "arms").rglob("t1*.html")]
    assert "<td>therapy</td><td>2.0</td>" in arm.read_text(encoding="utf-8")


# --- a board cohort judged with the four-decision rubric (tests/support/board_cohort.py): clinical trial out of scope
# (−1) is no score; the single-page view's --out never replaces a file it did not write and reads only its own
# trace's judgements; the cohort view never writes over another run's pages ----------------------------------


def test_the_viewer_shows_the_weighted_mean_and_leaves_out_of_scope_out(four_decision_board: Path,
                                                                        tmp_path: Path) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
    assert main(["view", str(run_dir)]) == 0
    nsclc = (run_dir / "view" / "cases" / "tumor-board-nsclc.html").read_text(encoding="utf-8")
    assert f"otb-four-decision: {WEIGHTED:.2f} weighted mean (3 scored, 1 out of scope, 0 not evaluable)" in nsclc
    her2 = (run_dir / "view" / "cases" / "tumor-board-her2-breast.html").read_text(encoding="utf-8")
    assert f"otb-four-decision: {WEIGHTED:.2f} weighted mean (3 scored, 1 not evaluable)" in her2
    index = (run_dir / "view" / "index.html").read_text(encoding="utf-8")
    assert "2.25" not in index  # (4 + 3 + 3 − 1) / 4, the −1 averaged as a score
    assert index.count(f"{WEIGHTED:.2f} weighted mean") == 10


def test_the_single_page_view_never_replaces_a_file_it_did_not_write(
        four_decision_board: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = copy_cohort(four_decision_board, tmp_path)
    trace = nsclc_agents_trace(run_dir)
    before = trace.read_bytes()
    assert main(["view", str(trace), "--out", str(trace)]) == 2  # the trace itself
    assert trace.read_bytes() == before
    assert "a .json file is a trace or a record, not a page" in capsys.readouterr().err
    assert main(["view", str(trace), "--out", str(tmp_path / "new.JSON")]) == 2
    assert not (tmp_path / "new.JSON").exists()
    capsys.readouterr()
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my own notes</p>", encoding="utf-8")
    assert main(["view", str(trace), "--out", str(notes)]) == 2
    assert notes.read_text(encoding="utf-8") == "<p>my own notes</p>"
    err = capsys.readouterr().err
    assert "notes.html: not a page `consilium view` wrote; nothing was written" in err and err.count("\n") == 1
    page = tmp_path / "page.html"
    assert main(["view", str(trace), "--out", str(page)]) == 0
    assert main(["view", str(trace), "--out", str(page)]) == 0  # its own page: replaced
    assert "Judge: otb-four-decision" in page.read_text(encoding="utf-8")


def test_the_single_page_view_reads_only_the_judgements_of_its_trace(four_decision_board: Path, tmp_path: Path) -> None:
    """A stem with glob characters is matched as it is, and a record that names another trace is left out."""
    trace = nsclc_agents_trace(four_decision_board)
    [judged] = trace.parent.glob("tumor-board-nsclc.board-agents.judge.*.json")
    folder = tmp_path / "odd"
    folder.mkdir()
    shutil.copy(trace, folder / "nsclc[1].board-agents.trace.json")
    record = json.loads(judged.read_text(encoding="utf-8"))
    own = {**record, "trace": "nsclc[1].board-agents.trace.json", "judge_model": "own-judge"}
    (folder / "nsclc[1].board-agents.judge.otb-four-decision.json").write_text(json.dumps(own), encoding="utf-8")
    decoy = {**record, "trace": "nsclc1.board-agents.trace.json", "judge_model": "decoy-judge"}
    (folder / "nsclc1.board-agents.judge.otb-four-decision.json").write_text(json.dumps(decoy), encoding="utf-8")
    stray = {**record, "trace": "elsewhere.trace.json", "judge_model": "stray-judge"}
    (folder / "nsclc[1].board-agents.judge.otb-conclusion-alignment.json").write_text(json.dumps(stray),
                                                                                        encoding="utf-8")
    out = tmp_path / "odd.html"
    assert main(["view", str(folder / "nsclc[1].board-agents.trace.json"), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "own-judge" in text and "decoy-judge" not in text and "stray-judge" not in text


def test_the_cohort_view_refuses_the_pages_of_another_run(four_decision_board: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    first = copy_cohort(four_decision_board, tmp_path / "a")
    second = copy_cohort(four_decision_board, tmp_path / "b")
    manifest = json.loads((second / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_id"] = "20261201-000000-cohort-other1"
    (second / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    shared = tmp_path / "shared"
    assert main(["view", str(first), "--out", str(shared)]) == 0
    index = (shared / "index.html").read_bytes()
    assert f'<meta name="consilium-run" content="{four_decision_board.name}">'.encode() in index
    assert main(["view", str(first), "--out", str(shared)]) == 0  # its own pages: replaced
    capsys.readouterr()
    assert main(["view", str(second), "--out", str(shared)]) == 2
    err = capsys.readouterr().err
    assert f"a page of the view of another run ({four_decision_board.name}); nothing was written" in err
    assert err.count("\n") == 1
    assert (shared / "index.html").read_bytes() == index
