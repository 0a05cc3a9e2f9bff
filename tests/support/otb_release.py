"""OpenTumorBoard's released files, written in their exact released format (AnqiLi24/OpenTumorBoard
``src/build_benchmark.py``) for the importer's and the end-to-end tests."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

ROLES = ["Medical Oncologist", "Moderator", "Clinical Trial Specialist", "Nurse Navigator", "Radiation Oncologist"]


def board_record(n: int, *, slides: int) -> dict[str, Any]:
    captions = "\n".join(f"<image> Slide {s} of case {n}: CT image." for s in range(1, slides + 1))
    return {"schema_version": 1, "benchmark_version": "v1", "task_name": "tumor_board_simulation",
            "simulation_id": f"sim_{n:06d}", "video_uid": f"video_{(n + 1) // 2:04d}",
            "video_dir": f"rec{(n + 1) // 2}",
            "case_id": f"case_{n}", "case_start_sec": 10.0 * n, "case_end_sec": None,
            "case_summary": f"Summary of case {n}: a patient with a tumour.",
            "slides": captions or "", "reference_conclusion": f"Conclusion {n}. Treat and follow up." if n != 4 else "",
            "source_task": f"rec{(n + 1) // 2}/task_case_{n}_rephrased.json"}


def question_record(q: int, case: int, *, answer: str | None = None, question: str | None = None) -> dict[str, Any]:
    board = board_record(case, slides=0)
    return {"schema_version": 1, "benchmark_version": "v1", "qa_id": f"qa_{q:06d}", "video_uid": board["video_uid"],
            "video_dir": board["video_dir"], "case_id": board["case_id"], "qa_index": q,
            "qa_type": ["why", "what"][q % 2],
            "qa_type_candidates": ["why"], "utterance_id": f"u{q}", "target_specialist_role": ROLES[q % 5],
            "case_summary": board["case_summary"], "slides": board["slides"],
            "question": question or f"Question {q} for case {case}?",
            "reference_answer": f"Answer {q}." if answer is None else answer,
            "source_task": board["source_task"], "source_aliases": []}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def sharegpt(record: dict[str, Any], record_id: str, images: list[str] | None = None) -> dict[str, Any]:
    row = {"schema_version": 1, "format": "sharegpt", "id": record_id, "prompt_version": "board_simulation_caption",
           "metadata": record, "conversations": [{"from": "system", "value": "(prompt)"},
                                                 {"from": "human", "value": "CASE SUMMARY:\n..."}]}
    return {**row, "images": images} if images is not None else row


def write_release(root: Path) -> Path:
    """A data folder in the released format: five Board Simulation records (gzip), six Specialist Turn
    questions (one for a case task1 does not know, one asked twice of one role, one with an empty recorded
    answer), and the caption and image manifests of test_inputs/."""
    boards = [board_record(n, slides=n % 3) for n in range(1, 6)]
    write_jsonl(root / "task1_test.jsonl.gz", boards)
    questions = [question_record(1, 1), question_record(2, 1), question_record(3, 2), question_record(4, 3, answer=""),
                 question_record(5, 1, question="question 1 for CASE 1?"), question_record(6, 6)]
    questions[4]["target_specialist_role"] = questions[0]["target_specialist_role"]  # asked twice of one role
    write_jsonl(root / "task2_test.jsonl", questions)
    meta = [{k: v for k, v in b.items() if k != "reference_conclusion"} for b in boards]
    write_jsonl(root / "test_inputs" / "board_simulation.caption.jsonl.gz",
                [sharegpt(m, m["simulation_id"]) for m in meta])
    write_jsonl(root / "test_inputs" / "specialist_turn.caption.jsonl", [sharegpt(q, q["qa_id"]) for q in questions])
    write_jsonl(root / "test_inputs" / "board_simulation.image.jsonl",
           [sharegpt(m, m["simulation_id"], [f"slides/{m['video_dir']}/frames/{s}.jpg"
                                              for s in range(1, m["slides"].count("<image>") + 1)]) for m in meta])
    return root
