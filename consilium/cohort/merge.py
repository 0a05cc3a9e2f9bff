"""``cohort merge``: the shard folders of one cohort (``cohort --shard I/N``) joined into one run folder.

The merged folder is what a local cohort of every case writes: arms.csv in the cohort's order (case
id, model spec, format), arms.jsonl, every trace and judgement at the relative path its shard wrote it,
judgements.csv in the order a local cohort judges (rubric, then arm), and a manifest without a shard,
``completed`` only when every shard is. Folders made with other settings, a shard given twice or one
missing are refused before anything is written; the folder is built under a temporary name beside
``--out`` and renamed into place, and an existing ``--out`` is never touched. The shards' response
caches fold with consilium/cohort/caches.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consilium.cohort.lock import RunLock
from consilium.cohort.rows import ARM_COLUMNS, counts
from consilium.cohort.shard import Shard
from consilium.cohort.spend import JUDGE_COLUMNS
from consilium.cohort.tables import write_csv
from consilium.errors import UserError
from consilium.fileio import write_text_atomic
from consilium.graphs.arms import arm_protocol
from consilium.runfolder.folder import RunFolder
from consilium.runfolder.layout import ARMS_CSV, ARMS_JSONL, JUDGEMENTS_CSV, own_files, trace_of_judgement
from consilium.spec.manifest import MANIFEST, CohortManifest, read_manifest, write_cohort_manifest

__all__ = ["ShardFolder", "merge_shards", "read_shards"]

#: The files of a run folder that the merge builds rather than copies.
BUILT = frozenset({MANIFEST, ARMS_CSV, ARMS_JSONL, JUDGEMENTS_CSV, ".lock", "consilium.log.jsonl"})
#: Settings that say where a shard ran, not what it ran: each worker keeps its own response cache.
WHERE = frozenset({"model.cache_path"})


@dataclass(frozen=True)
class ShardFolder:
    path: Path
    manifest: CohortManifest
    shard: Shard

    @property
    def run(self) -> RunFolder:
        return RunFolder(self.path)


def _read(path: Path) -> ShardFolder:
    file = path / MANIFEST
    if not path.is_dir():
        raise UserError(f"cohort merge: {path}: no such run folder")
    if not file.is_file():
        raise UserError(f"cohort merge: {file}: no manifest (not a cohort folder)")
    manifest = read_manifest(path)  # upgraded from an older version as a resume reads it
    if manifest.settings.shard is None:
        raise UserError(f"{file}: settings.shard: not a shard (made without cohort --shard I/N); nothing to merge")
    try:
        shard = Shard.parse(manifest.settings.shard)
    except ValueError as exc:
        raise UserError(f"{file}: settings.shard: {exc}") from None
    return ShardFolder(path, manifest, shard)


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out or {prefix: value}
    return {prefix: value}


def _first_difference(a: CohortManifest, b: CohortManifest) -> str | None:
    left = _flat(a.settings.model_dump(mode="json", exclude={"shard"}), "")
    right = _flat(b.settings.model_dump(mode="json", exclude={"shard"}), "")
    for key in dict.fromkeys([*left, *right]):
        if key not in WHERE and left.get(key) != right.get(key):
            return key
    return None


def read_shards(paths: list[Path]) -> list[ShardFolder]:
    """The shard folders in shard order, after refusing another cohort's, a repeat and a gap."""
    shards = [_read(path) for path in paths]
    first = shards[0]
    for other in shards[1:]:
        key = _first_difference(first.manifest, other.manifest)
        if key is not None:
            mine = _flat(first.manifest.settings.model_dump(mode="json"), "").get(key)
            theirs = _flat(other.manifest.settings.model_dump(mode="json"), "").get(key)
            raise UserError(f"cohort merge: settings.{key} differs: {theirs!r} in {other.path}, {mine!r} in "
                            f"{first.path}; only the shards of one cohort merge")
        if other.manifest.layout != first.manifest.layout:
            raise UserError(f"cohort merge: layout differs: {other.manifest.layout!r} in {other.path}, "
                            f"{first.manifest.layout!r} in {first.path}; only the shards of one cohort merge")
        if other.shard.count != first.shard.count:
            raise UserError(f"cohort merge: {other.path} is shard {other.shard} and {first.path} shard "
                            f"{first.shard}: shards of one cohort share N")
    seen: dict[int, ShardFolder] = {}
    for folder in shards:
        if folder.shard.index in seen:
            raise UserError(f"cohort merge: shard {folder.shard} given twice ({seen[folder.shard.index].path} and "
                            f"{folder.path})")
        seen[folder.shard.index] = folder
    missing = [f"{i}/{first.shard.count}" for i in range(1, first.shard.count + 1) if i not in seen]
    if missing:
        raise UserError(f"cohort merge: shard {', '.join(missing)} missing; give every shard of the cohort")
    return [seen[i] for i in sorted(seen)]


def _csv_rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed shard; its arm is in arms.csv or ran again
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    return "" if value is None else str(value)


def _key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return _cell(row, "case_id"), _cell(row, "model_spec"), _cell(row, "format"), _cell(row, "replicate")


def _arm_rows(shards: list[ShardFolder]) -> list[dict[str, Any]]:
    """Every shard's arms.csv rows, in the local cohort's order. Each row keeps the columns its arm had
    (from arms.jsonl's last line for it), then the judge columns its shard's judging added (written after the
    arm's line), so the columns come out in the order a local cohort's do."""
    rows = []
    for folder in shards:
        had = {_key(row): list(row) for row in _jsonl_rows(folder.run.arms_jsonl)}
        typed = folder.run.arms(named=False) if folder.run.is_cohort else []
        for row in (arm.cells() for arm in typed):  # typed, written back as the same text
            keys = had.get(_key(row))  # arms.jsonl's own fields are not arms.csv columns
            keys = [*keys, *JUDGE_COLUMNS] if keys else keys
            rows.append(with_protocol({k: row[k] for k in keys if k in row} if keys else row))
    return sorted(rows, key=_key)


def with_protocol(row: dict[str, Any]) -> dict[str, Any]:
    """A row of a shard written before arms.csv and judgements.csv had a ``protocol`` column, given one
    after ``model`` (told by its format: consilium/graphs/arms.py), as a cohort writes
    it today; a row that has one, unchanged."""
    if "protocol" in row:
        return row
    protocol = arm_protocol(row)
    out: dict[str, Any] = {}
    for key, value in row.items():
        out[key] = value
        if key == "model":
            out["protocol"] = protocol
    return out if "protocol" in out else {**out, "protocol": protocol}


def _judgement_rows(shards: list[ShardFolder],
                    arms: list[dict[str, Any]]) -> tuple[tuple[str, ...], list[dict[str, str]]] | None:
    """judgements.csv as a local cohort writes it: by rubric (the cohort's order), then by arm."""
    found = [(folder, _csv_rows(folder.run.judgements_csv)) for folder in shards if folder.run.judgements_csv.is_file()]
    if not found:
        return None
    from consilium.judges.rubric import load_rubric

    rubrics = [load_rubric(ref, flag="--judge").name for ref in shards[0].manifest.settings.judges]
    place = {row["trace"]: i for i, row in enumerate(arms) if row.get("trace")}
    rows = [with_protocol(row) for _, part in found for row in part]
    with found[0][0].run.judgements_csv.open(encoding="utf-8", newline="") as handle:
        header = tuple(next(csv.reader(handle), []))
    if "protocol" not in header:  # a shard from before the column: placed as a cohort writes it today
        header = tuple(rows[0]) if rows else (*header, "protocol")

    def order(row: dict[str, str]) -> tuple[int, int]:
        rubric = row.get("rubric", "")
        trace = trace_of_judgement(row.get("judgement", ""), rubric)
        return (rubrics.index(rubric) if rubric in rubrics else len(rubrics), place.get(trace, len(place)))

    return header, sorted(rows, key=order)


def _copy_tree(shards: list[ShardFolder], into: Path) -> None:
    """Every trace, judgement and other file of the shards at its relative path. Two shards holding the
    same file under arms/ are refused (a case lives in one shard); any other file they both hold (one
    every run folder has) is taken from the first shard."""
    owner: dict[str, Path] = {}
    for folder in shards:
        for path in own_files(folder.path, "*"):  # the shard's own: not a run nested in it (an ablation's)
            rel = path.relative_to(folder.path)
            if path.is_dir() or path.is_symlink() or (len(rel.parts) == 1 and rel.name in BUILT):
                continue
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                continue  # a write a killed shard left half done
            name = rel.as_posix()
            if name in owner:
                if rel.parts[0] != "arms":
                    continue
                raise UserError(f"cohort merge: {name} is in both {owner[name]} and {folder.path}")
            owner[name] = folder.path
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / rel)


def merge_shards(paths: list[Path], out: Path, command: list[str]) -> CohortManifest:
    """Join the shard folders ``paths`` into the new run folder ``out``; returns its manifest."""
    shards = read_shards(paths)
    if out.exists() or out.is_symlink():
        raise UserError(f"--out: {out} exists; cohort merge writes a new folder and never overwrites one")
    with ExitStack() as locks:
        for folder in shards:  # a shard still running is refused, never copied half written
            locks.enter_context(RunLock(folder.path))
        return _write_merged(shards, out, command)


def _write_merged(shards: list[ShardFolder], out: Path, command: list[str]) -> CohortManifest:
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
        mask = os.umask(0)
        os.umask(mask)
        scratch.chmod(0o777 & ~mask)  # as make_folder's, not mkdtemp's 0700
    except OSError as exc:
        raise UserError(f"--out: {out}: cannot create the folder ({exc.strerror or exc})") from None
    try:
        _copy_tree(shards, scratch)
        rows, merged = _arm_rows(shards), RunFolder(scratch)
        write_csv(merged.arms_csv, rows, fields=ARM_COLUMNS)
        lines = [line for f in shards if f.run.arms_jsonl.is_file()
                 for line in f.run.arms_jsonl.read_text(encoding="utf-8").splitlines(keepends=True)]
        if lines:
            write_text_atomic(merged.arms_jsonl, "".join(lines))
        logs = [(f.path / "consilium.log.jsonl").read_text(encoding="utf-8") for f in shards
                if (f.path / "consilium.log.jsonl").is_file()]
        if logs:
            write_text_atomic(scratch / "consilium.log.jsonl", "".join(logs))
        judged = _judgement_rows(shards, rows)
        if judged is not None:
            write_csv(merged.judgements_csv, judged[1], fields=judged[0])
        manifest = _merged_manifest(shards, out.name, command, rows)
        write_cohort_manifest(scratch, manifest)
        os.rename(scratch, out)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return manifest


def _merged_manifest(shards: list[ShardFolder], run_id: str, command: list[str],
                     rows: list[dict[str, Any]]) -> CohortManifest:
    first = shards[0].manifest
    unfinished = [f for f in shards if f.manifest.status != "completed"]
    error = None
    if unfinished:
        f = unfinished[0]
        error = (f"shard {f.shard} ({f.path}) is {f.manifest.status}" + (f": {f.manifest.error}" if f.manifest.error
                 else "") + "; resume this folder (cohort --resume) or the shard, and merge again")
    return first.model_copy(update={
        "run_id": run_id, "status": "aborted" if unfinished else "completed", "error": error, "command": command,
        "created_at": min(f.manifest.created_at for f in shards),
        "settings": first.settings.model_copy(update={"shard": None}),
        "traces": [r["trace"] for r in rows if r.get("trace")], "counts": counts(rows)})
