"""BERTScore F1 as the OpenTumorBoard leaderboard computes it (AnqiLi24/OpenTumorBoard
``scripts/evaluation/metrics/text_metrics.py``): microsoft/deberta-xlarge-mnli, the hidden states after
layer 40, no idf weighting, no baseline rescaling, inputs cut at 512 positions.

The score of a candidate against its reference: each token's embedding (special tokens left out) is
normalised; precision is the mean over candidate tokens of the best cosine with a reference token, recall
the mean over reference tokens of the best cosine with a candidate token, F1 their harmonic mean. Only
responses with text are scored (the leaderboard's mean is over them).

The encoder is loaded from a local folder holding the model (``--bertscore-model PATH``): nothing is
downloaded at run time. It needs the ``bertscore`` extra (transformers and PyTorch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from consilium.errors import UserError

#: One text → its tokens' embeddings, one row per token, special tokens left out.
Encoder = Callable[[Sequence[str]], list[np.ndarray]]
OFFICIAL_MODEL, OFFICIAL_LAYER, MAX_POSITIONS = "microsoft/deberta-xlarge-mnli", 40, 512


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], encoder: Encoder) -> list[float]:
    if len(candidates) != len(references):
        raise ValueError("one reference per candidate")
    scores = []
    for cand, ref in zip(encoder(candidates), encoder(references), strict=True):
        if len(cand) == 0 or len(ref) == 0:
            scores.append(0.0)
            continue
        sim = _unit(cand) @ _unit(ref).T
        precision, recall = float(sim.max(axis=1).mean()), float(sim.max(axis=0).mean())
        scores.append(0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
    return scores


def local_encoder(path: Path, *, layer: int = OFFICIAL_LAYER, batch_size: int = 16) -> Encoder:
    """The encoder of a model saved in ``path`` (the official one is microsoft/deberta-xlarge-mnli)."""
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise UserError("BERTScore needs the bertscore extra: pip install 'consilium[bertscore]'") from exc
    if not path.is_dir():
        raise UserError(f"{path}: no such model folder (BERTScore loads its model from a local folder)")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model: Any = AutoModel.from_pretrained(path, local_files_only=True).eval()

    def encode(texts: Sequence[str]) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(list(texts[start:start + batch_size]), padding=True, truncation=True,
                              max_length=MAX_POSITIONS, return_tensors="pt", return_special_tokens_mask=True)
            special = batch.pop("special_tokens_mask")
            with torch.no_grad():
                hidden = model(**batch, output_hidden_states=True).hidden_states[layer]
            keep = (batch["attention_mask"] == 1) & (special == 0)
            out += [hidden[i][keep[i]].float().numpy() for i in range(hidden.shape[0])]
        return out

    return encode
