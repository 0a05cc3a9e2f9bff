"""After a cohort's arms: judge the completed ones, mark the manifest completed, print the summary."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consilium import aio
from consilium.cohort.arms import relative
from consilium.cohort.rows import counts
from consilium.cohort.spend import recorded_costs, spend_lines, write_judge_columns
from consilium.cohort.tables import CsvLog, write_csv
from consilium.graphs.registry import protocol_of
from consilium.log import log_file
from consilium.models import ChatModel
from consilium.models.factory import build_ref
from consilium.models.refs import parse_model_ref
from consilium.runfolder.folder import RunFolder
from consilium.spec.manifest import CohortManifest, write_cohort_manifest

if TYPE_CHECKING:
    from consilium.cohort.plan import Plan
    from consilium.judges.cost import JudgeCost
    from consilium.judges.record import Judgement
    from consilium.judges.rubric import Rubric
    from consilium.judges.runner import AnyTrace

__all__ = ["JUDGEMENT_COLUMNS", "JURY_COLUMNS", "finish"]

#: judgements.csv's columns after those, for a jury: per verdict its judges, those not evaluable, its tie.
JURY_COLUMNS = ("jury_judges", "jury_not_evaluable", "jury_tie")
#: The columns of judgements.csv, in order.
JUDGEMENT_COLUMNS = ("case_id", "model", "protocol", "format", "rubric", "component", "criterion", "score",
                     "calibrated_score", "not_evaluable", "reason", "shortened_input", "judgement",
                     # the item's judge calls, tokens and dollars (consilium/judges/cost.py, item_spend)
                     "judge_calls", "judge_failed_calls", "judge_input_tokens", "judge_output_tokens", "judge_cost_usd")


def finish(plan: Plan, manifest: CohortManifest, table: Callable[[], list[dict[str, Any]]],
           judge: ChatModel | None, started: float, where: str = "") -> int:
    """After the arms (run here or on Ray, ``where`` says which): judge the completed ones, mark the
    manifest completed with its traces and counts, print the summary; 1 when some arm failed."""
    run_dir = plan.run_dir
    arms_csv = RunFolder(run_dir).arms_csv
    costs: dict[str, list[JudgeCost]] = {}  # each judged arm's judge calls, by its trace (as arms.csv names it)
    judged = _judge(table(), plan, run_dir, judge, costs) if judge is not None else []
    done_rows = table()
    if judge is not None:  # the judges' calls beside the panel's, in every arm's row and its sum, from the records
        write_judge_columns(arms_csv, done_rows, recorded_costs(run_dir, done_rows))
    tally = counts(done_rows)
    traces = [r["trace"] for r in done_rows if r.get("trace")]
    write_cohort_manifest(run_dir, manifest.model_copy(update={"status": "completed", "traces": traces,
                                                                "counts": tally}))
    elapsed = time.perf_counter() - started
    print(f"cohort {run_dir.name}: {len(done_rows)} arms ({tally['completed']} completed, {tally['failed']} "
          f"failed, {tally['resumed']} resumed) in {elapsed:.1f} s{where}; {len(done_rows) / elapsed:.2f} arms/s")
    print("\n".join(spend_lines(done_rows, [c for mine in costs.values() for c in mine])))
    print(f"arms: {arms_csv}" + (f"\njudgements: {judged[0]}" if judged else ""))
    if tally["failed"]:
        logged = log_file()
        print(f"consilium: {tally['failed']} of {len(done_rows)} arms failed; their errors are in {arms_csv} "
              f"(columns failed_stage, error)" + (f" and {logged}" if logged else ""), file=sys.stderr)
        return 1
    return 0


def _judge(rows: list[dict[str, Any]], plan: Plan, run_dir: Path, model: ChatModel,
           costs: dict[str, list[JudgeCost]]) -> list[Path]:
    """Every completed arm with every rubric, as many judgements at a time as the cohort's concurrency,
    each trace read as its judgement starts. Rows are appended to judgements.csv as judgements finish;
    at the end the file is rewritten atomically in rubric, then arms.csv, order."""
    # The judges' modules load here: a cohort without --judge starts its calls without them.
    from consilium.judges.board_reward import write_judged
    from consilium.judges.cost import item_spend, judge_costs
    from consilium.judges.coverage import judging_coverage, print_coverage, shortened_input
    from consilium.judges.many import judge_files
    from consilium.judges.runner import JudgeSetup

    # A jury (--judge-model given again): its other judges, built here and closed with the first.
    # Each judge as the manifest records it (a spec, SPEC@BASE_URL#KEY_VAR or a model config file:
    # consilium/models/refs.py), on its own server if it has one, and named by it.
    refs = [parse_model_ref(record) for record in [plan.settings.judge_model or "", *plan.settings.jury_models]]
    jury = [(ref.name, build_ref(ref, plan.options)) for ref in refs[1:]]
    decoding = plan.settings.judge_decoding
    setups = [JudgeSetup(model=model, scope=plan.scope, name=refs[0].name, decoding=decoding),
              *(JudgeSetup(model=other, scope=plan.scope, name=spec, decoding=decoding) for spec, other in jury)]
    paths = [run_dir / r["trace"] for r in rows if r.get("trace") and r["status"] == "completed"]
    # A cohort run in replicates names each judgement's replicate, after format, as arms.csv does.
    replicate = {run_dir / r["trace"]: {"replicate": r["replicate"]} for r in rows
                 if r.get("trace") and r.get("replicate") not in (None, "")}
    jobs = [(rubric, path) for rubric in plan.rubrics for path in paths]
    tables: dict[int, list[dict[str, Any]]] = {}
    judgements: list[Judgement] = []
    columns: tuple[str, ...] = (*JUDGEMENT_COLUMNS[:4], "replicate", *JUDGEMENT_COLUMNS[4:]) if replicate \
        else JUDGEMENT_COLUMNS
    columns += JURY_COLUMNS if jury else ()  # the verdict's judges, those left out, its tie (docs/judges.md, Juries)
    csv_log = CsvLog(RunFolder(run_dir).judgements_csv, columns)

    def done(position: int, path: Path, trace: AnyTrace, rubric: Rubric, judgement: Judgement) -> None:
        # the judgement, and a board's match and reward once the reward's rubrics judged it, as `judge` writes them
        out = write_judged(path, trace, rubric.name, judgement)
        costs.setdefault(relative(path, run_dir), []).extend(judge_costs(judgement))
        judgements.append(judgement.model_copy(update={"calls": []}))  # its calls are in its file
        protocol = protocol_of(trace)
        variant = protocol.arm_variant(judgement.variant) if judgement.variant is not None else ""
        tables[position] = [{"case_id": judgement.case_id, "model": trace.model, "protocol": protocol.name,
                             "format": variant, **replicate.get(path, {}), "rubric": rubric.name,
                             "component": item.component,
                             "criterion": item.criterion, "score": item.score,
                             "calibrated_score": item.calibrated_score,
                             "not_evaluable": item.not_evaluable, "reason": item.reason or "",
                             # kept/total characters of a whole-case record cut to fit the judge's context
                             "shortened_input": shortened_input(item.detail),
                             "judgement": relative(out, run_dir),
                             **spend,
                             **({"jury_judges": item.verdict.judges, "jury_not_evaluable": item.verdict.not_evaluable,
                                 "jury_tie": item.verdict.tie or ""} if jury and item.verdict else {})}
                            for item, spend in zip(judgement.items, item_spend(judgement), strict=True)]
        csv_log.append(tables[position])

    async def go() -> None:
        try:
            await judge_files(jobs, setups, done, limit=max(1, plan.settings.concurrency))
        finally:
            for judge in [model, *(other for _, other in jury)]:
                await judge.aclose()

    with csv_log:
        aio.run(go())
    path = write_csv(RunFolder(run_dir).judgements_csv,
                     [row for position in sorted(tables) for row in tables[position]], fields=columns)
    # Per rubric and component: judged, not evaluable, the commonest reasons; a rubric of which nothing
    # could be judged is a warning on stderr, never a rubric silently missing from the tables.
    print_coverage(judging_coverage(judgements, [r.name for r in plan.rubrics]))
    return [path]
