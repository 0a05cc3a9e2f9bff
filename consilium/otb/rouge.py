"""ROUGE-L as the OpenTumorBoard leaderboard computes it (AnqiLi24/OpenTumorBoard
``scripts/evaluation/metrics/text_metrics.py``): the sentence-level longest-common-subsequence F1 over the
lower-cased runs of ``[a-z0-9]``, with no stemming; an empty side scores 0. consilium's own similarity
(judges/similarity.py) stems with Porter and is labelled as the stemmed variant."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def lcs_length(left: list[str], right: list[str]) -> int:
    if len(left) > len(right):
        left, right = right, left
    previous = [0] * (len(left) + 1)
    for token in right:
        current = [0]
        for i, other in enumerate(left, 1):
            current.append(previous[i - 1] + 1 if other == token else max(current[-1], previous[i]))
        previous = current
    return previous[-1]


def rouge_l(candidate: str, reference: str) -> float:
    cand, ref = tokens(candidate), tokens(reference)
    overlap = lcs_length(cand, ref) if cand and ref else 0
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(cand), overlap / len(ref)
    return 2 * precision * recall / (precision + recall)
