"""BERTScore's encoder loaded from a model folder on disk, as the leaderboard's is (never downloaded).

The official encoder (microsoft/deberta-xlarge-mnli, layer 40) is 3 GB and cannot ship with the tests; this
test builds a tiny BERT of its own in a temporary folder (a hand-written vocabulary, random weights, two layers)
and loads it through :func:`consilium.otb.bertscore.local_encoder` exactly as the leaderboard's would be loaded.
It needs the ``bertscore`` extra (transformers and torch) and is skipped, saying so, without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consilium.errors import UserError
from consilium.otb.bertscore import bertscore_f1, local_encoder

WORDS = ["surgery", "now", "later", "chemotherapy", "radiotherapy", "first"]


def _tiny_model(folder: Path) -> Path:
    transformers = pytest.importorskip(
        "transformers", reason="the bertscore extra (transformers, torch) is not installed: "
                               "pip install 'consilium[bertscore]'")
    pytest.importorskip("torch", reason="the bertscore extra needs torch: pip install 'consilium[bertscore]'")
    vocab = folder / "vocab.txt"
    folder.mkdir()
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    transformers.BertTokenizer(str(vocab)).save_pretrained(folder)
    config = transformers.BertConfig(vocab_size=5 + len(WORDS), hidden_size=8, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=16, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def test_a_model_folder_on_disk_encodes_each_word_token_and_scores_as_the_matching_does(tmp_path: Path) -> None:
    encode = local_encoder(_tiny_model(tmp_path / "tiny-bert"), layer=2)
    vectors = encode(["surgery now", "chemotherapy first later"])
    # One vector per word token ([CLS] and [SEP] left out), of the model's hidden size.
    assert [v.shape for v in vectors] == [(2, 8), (3, 8)]
    same, different = bertscore_f1(["surgery now", "surgery now"], ["surgery now", "radiotherapy later"], encode)
    assert same == pytest.approx(1.0)  # each token's best match is itself
    # The other pair by hand from the same vectors: greedy cosine matching each way, then F1.
    cand, ref = encode(["surgery now"])[0], encode(["radiotherapy later"])[0]
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    sim = unit(cand) @ unit(ref).T
    p, r = sim.max(axis=1).mean(), sim.max(axis=0).mean()
    assert different == pytest.approx(2 * p * r / (p + r))


def test_a_missing_model_folder_is_named(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the bertscore extra (transformers, torch) is not installed")
    pytest.importorskip("torch", reason="the bertscore extra needs torch")
    with pytest.raises(UserError, match="no such model folder"):
        local_encoder(tmp_path / "absent")
