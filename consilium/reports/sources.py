"""What ``consilium report`` reads: the cohort folders under RUN_DIR (RUN_DIR itself when it holds an
``arms.csv``, else each folder in it that does), and each cohort's arms split by protocol, so that a
folder of several cohorts, or an ``arms.csv`` holding arms of both protocols, reports every part."""

from __future__ import annotations

import csv
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

from consilium.errors import UserError
from consilium.judges.record import read_judgement
from consilium.reports.compare import CohortData, load_cohort_data, protocol_of, read_arms, trace_location

__all__ = ["CohortPart", "cohort_folders", "cohort_parts"]


@dataclass
class CohortPart:
    """The arms of one protocol in one cohort folder, loaded as the consilium tables read them."""

    name: str  # the cohort folder's name
    folder: Path
    protocol: str  # "consilium" or "board"
    data: CohortData


def cohort_folders(run_dir: Path) -> list[Path]:
    if (run_dir / "arms.csv").is_file():
        return [run_dir]
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such folder")
    found = sorted(p for p in run_dir.iterdir() if p.is_dir() and (p / "arms.csv").is_file())
    if not found:
        raise UserError(f"{run_dir}: no arms.csv, and no cohort folder with one in it (run `consilium cohort` first)")
    return found


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _records_of(folder: Path, arms: list[dict[str, str]]) -> list[dict[str, str]]:
    """judgements.csv rows, with absolute paths, of the records beside the traces of these completed arms."""
    by_trace = {trace_location(folder, a["trace"]).resolve(): a for a in arms
                if a.get("status") == "completed" and a.get("trace")}
    rows = []
    for file in sorted(folder.rglob("*.judge.*.json")):
        if file.name.endswith(".trace.json") or not file.is_file():
            continue
        judgement = read_judgement(file)
        arm = by_trace.get((file.parent / judgement.trace).resolve())
        if arm is None:
            continue
        rows += [{"case_id": arm["case_id"], "model": arm.get("model") or arm.get("model_spec", ""),
                  "format": arm["format"], "rubric": judgement.rubric, "component": item.component,
                  "criterion": item.criterion, "score": "" if item.score is None else str(item.score),
                  "not_evaluable": str(item.not_evaluable), "reason": item.reason or "",
                  "judgement": str(file.resolve())} for item in judgement.items]
    return rows


# What a completed arm of each protocol needs in a mixed arms.csv (checked here, so that an error names
# the line of the real file; the scratch folder's own check then finds nothing more).
_NEEDS: dict[str, dict[str, type | None]] = {
    "consilium": {"model": None, "trace": None, "stop_reason": None, "rounds": int},
    "board": {"trace": None, "stop_reason": None, "turns": float, "input_tokens": int, "output_tokens": int},
}


def _check(folder: Path, arms: list[dict[str, str]]) -> None:
    for line, arm in enumerate(arms, 2):
        if arm.get("status") != "completed":
            continue
        for column, kind in _NEEDS[protocol_of([arm])].items():
            value = arm.get(column)
            if not value:
                raise UserError(f"{folder / 'arms.csv'}: line {line}: {column}: missing in a completed "
                                f"{protocol_of([arm])} arm")
            if kind is not None:
                try:
                    kind(value)
                except ValueError:
                    raise UserError(f"{folder / 'arms.csv'}: line {line}: {column}: {value!r} is not a number") \
                        from None


def _one_protocol(folder: Path, arms: list[dict[str, str]]) -> CohortData:
    """The cohort data of a subset of an arms.csv, read by :func:`load_cohort_data` from a scratch
    folder holding that subset (trace paths made absolute) and the judge items of its records."""
    arms = [dict(arm) for arm in arms]
    for arm in arms:
        if arm.get("trace"):
            arm["trace"] = str(trace_location(folder, arm["trace"]).resolve())
    records = _records_of(folder, arms)
    with tempfile.TemporaryDirectory(prefix="consilium-report-") as scratch:
        _write(Path(scratch) / "arms.csv", arms)
        if records:
            _write(Path(scratch) / "judgements.csv", records)
        try:
            data = load_cohort_data(Path(scratch))
        except UserError as exc:  # name the real file, not the scratch copy
            raise UserError(str(exc).replace(str(Path(scratch) / "arms.csv"), f"{folder / 'arms.csv'} (its "
                                             f"{protocol_of(arms[:1])} arms)").replace(scratch, str(folder))) from None
    if records:
        data.judgements_from = "records"
    return data


def cohort_parts(run_dir: Path) -> list[CohortPart]:
    """Every (cohort, protocol) part under RUN_DIR, each loaded and checked before anything is written."""
    parts = []
    for folder in cohort_folders(run_dir):
        arms = read_arms(folder, check=False)
        protocols = {protocol_of([arm]) for arm in arms}
        if len(protocols) == 1:
            parts.append(CohortPart(folder.name, folder, protocols.pop(), load_cohort_data(folder)))
            continue
        _check(folder, arms)
        for protocol in sorted(protocols):
            subset = [arm for arm in arms if protocol_of([arm]) == protocol]
            parts.append(CohortPart(folder.name, folder, protocol, _one_protocol(folder, subset)))
    return parts
