"""The judge's word on each dissent of an arm: one yes/no call per dissent a revision followed, with the
``dissent-uptake`` rubric, recorded as a judgement file in the analysis folder (never overwritten: a record
made by the same judge, rubric and prompts is read back instead of asked again, except its items whose call
failed, which are asked again and the record rewritten with them)."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from consilium.cases import Case
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.consilium.trace import Trace
from consilium.judges.answers import criterion_schema
from consilium.judges.asking import ask
from consilium.judges.decoding import decoding_models, resolve_decoding
from consilium.judges.prompting import criterion_task, judge_prompt_hash
from consilium.judges.record import Judgement, JudgementItem, read_judgement
from consilium.judges.rubric import Rubric, analysis_rubric
from consilium.judges.tasks import JudgeInputs
from consilium.models import CallRecorder, ChatModel, GenerationSettings
from consilium.reports.networks.uptake import Dissent, Uptake, overlap_share, word_overlap
from consilium.traces.schema import UsageSummary

__all__ = ["COMPONENT", "RUBRIC_NAME", "UptakeJudge", "failed", "judge_arm", "uptake_rubric"]

RUBRIC_NAME = "dissent-uptake"
#: The component the judgement's items name: the revision of the report.
COMPONENT = "revision"


def uptake_rubric() -> Rubric:
    """The ``dissent-uptake`` rubric (consilium/judges/rubrics/analysis/dissent-uptake.yaml)."""
    return analysis_rubric(RUBRIC_NAME)


@dataclass(frozen=True)
class UptakeJudge:
    model: ChatModel
    settings: GenerationSettings
    max_repairs: int = 2
    #: The judge as its judgements record it (``judge_model``): its model id, with its own server for a judge
    #: on one (consilium/models/refs.py), so one model on two servers is two judges. None: the model id.
    name: str | None = None

    @property
    def judge_model(self) -> str:
        return self.name or self.model.model_id


def _dissent_text(dissent: Dissent, label: str) -> str:
    return (f"Dissent of {label} in review round {dissent.round} on report version {dissent.before.version}.\n"
            f"Reason: {dissent.reason.strip()}\nRequested change: {dissent.request.strip()}")


def _item(dissent: Dissent, judged: JudgementItem | None) -> JudgementItem:
    detail = {"round": dissent.round, "role": dissent.role, "key": dissent.key,
              "from_version": dissent.before.version, "to_version": dissent.after.version if dissent.after else 0}
    if judged is None:
        return JudgementItem(component=COMPONENT, criterion="dissent_uptake", score=None, not_evaluable=True,
                             reason="no revision followed this dissent's round", detail=detail)
    return judged.model_copy(update={"detail": {**judged.detail, **detail}})


async def _ask(trace: Trace, dissents: list[Dissent], judge: UptakeJudge,
               recorder: CallRecorder) -> list[JudgementItem]:
    rubric = uptake_rubric()
    case = Case.model_validate(trace.case)
    inputs = JudgeInputs(rubric=rubric, case=case, case_text=case.render(), reference="", trace=trace,
                         model=judge.model, settings=judge.settings, max_repairs=judge.max_repairs, k=1, scope=None,
                         reference_answer=None)
    # The judge's decoding order, as every judge's (consilium/judges/decoding.py): its backend's default.
    relaxed, strict = decoding_models(judge.model, recorder, judge.max_repairs,
                                      resolve_decoding(judge.model, None, rubric.decoding))
    labels = {r.id: r.label for r in trace.roles}
    criterion = rubric.criteria[0]
    schema = criterion_schema(rubric)

    async def one(dissent: Dissent) -> JudgementItem | None:
        if dissent.after is None:
            return None
        task = inputs.task(COMPONENT, criterion.id, dissent.after.text, criterion_task(rubric, criterion, COMPONENT),
                           schema, {}, (("report_version", dissent.before.text),
                                        ("criterion", _dissent_text(dissent, labels.get(dissent.role, dissent.role)))))
        return await ask(rubric.kind, relaxed, strict, task)

    return [_item(d, j) for d, j in zip(dissents, await asyncio.gather(*(one(d) for d in dissents)), strict=True)]


def _decisions(dissents: list[Dissent], judgement: Judgement) -> list[Uptake]:
    by_key = {str(i.detail.get("key")): i for i in judgement.items}
    found = []
    for dissent in dissents:
        fallback = word_overlap(dissent)
        item = by_key.get(dissent.key)
        if dissent.after is None or item is None:
            found.append(fallback)
        elif item.not_evaluable or item.score is None:  # the judge failed: the fallback decides, and says so
            found.append(Uptake(fallback.taken_up, fallback.method, fallback.overlap,
                                f"judge gave no verdict ({item.reason}); word overlap decided"))
        else:
            share = overlap_share(dissent.request, dissent.before.text, dissent.after.text)
            found.append(Uptake(item.score >= 1, "judge", share, item.rationale or ""))
    return found


def failed(item: JudgementItem) -> bool:
    """Whether the judge gave no verdict on a dissent a revision followed (its call failed or its answer was
    not evaluable); such an item is asked again when its record is reused."""
    return bool(item.detail.get("to_version")) and (item.not_evaluable or item.score is None)


def _reusable(path: Path, trace: Trace, judge: UptakeJudge, force: bool) -> Judgement | None:
    """The record already at ``path`` when the same judge, rubric and prompts made it; another one is refused
    (or, with ``force``, asked again and replaced)."""
    if not path.exists():
        return None
    old = read_judgement(path)
    rubric = uptake_rubric()
    same = (old.judge_model == judge.judge_model and old.rubric_version == rubric.version
            and old.prompt_hash == judge_prompt_hash(rubric) and old.trace_run_id == trace.run_id)
    if not same:
        if force:
            return None
        raise UserError(f"{path}: a {RUBRIC_NAME} judgement by {old.judge_model} (rubric v{old.rubric_version}) is "
                        "already there and is never overwritten; give --out another folder")
    return old


async def judge_arm(trace: Trace, trace_file: Path, dissents: list[Dissent], judge: UptakeJudge,
                    record: Path, force: bool = False) -> list[Uptake]:
    """The judge's decisions on the arm's dissents, the judgement written to ``record`` (or read from it: the
    items whose call failed are asked again, the record then rewritten with the earlier calls kept)."""
    old = _reusable(record, trace, judge, force)
    if old is not None and not any(failed(i) for i in old.items):
        return _decisions(dissents, old)
    rubric = uptake_rubric()
    recorder = CallRecorder()
    kept: dict[str, JudgementItem] = {}
    if old is not None:
        for call in sorted(old.calls, key=lambda c: c.index):
            recorder.adopt(call)
        kept = {str(i.detail.get("key")): i for i in old.items if not failed(i)}
    started_at, started = datetime.now(UTC).isoformat(), time.perf_counter()
    asked = iter(await _ask(trace, [d for d in dissents if d.key not in kept], judge, recorder))
    items = [kept[d.key] if d.key in kept else next(asked) for d in dissents]
    judged = [i for i in items if i.detail.get("to_version")]
    judgement = Judgement(
        trace=os.path.relpath(trace_file, record.parent), trace_kind=trace.kind, trace_run_id=trace.run_id,
        case_id=trace.case_id, variant=trace.format, rubric=rubric.name, rubric_version=rubric.version,
        rubric_source=rubric.source, judge_model=judge.judge_model, settings=judge.settings,
        decoding=resolve_decoding(judge.model, None, rubric.decoding),
        prompt_hash=judge_prompt_hash(rubric), items=items,
        aggregates={COMPONENT: {"dissents": len(items), "judged": sum(not i.not_evaluable for i in judged),
                                "taken_up": sum(i.score == 1 for i in judged)}},
        usage=UsageSummary.from_ledger(recorder.ledger), calls=sorted(recorder.calls, key=lambda c: c.index),
        started_at=started_at, wall_s=round(time.perf_counter() - started, 3))
    write_text_atomic(record, judgement.model_dump_json(indent=2) + "\n")
    return _decisions(dissents, judgement)
