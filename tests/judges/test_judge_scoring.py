"""Score formulas against hand-computed examples."""

from __future__ import annotations

import pytest

from consilium.judges.scoring import mean_score, pass_at_k, signed_score, weighted_decisions
from consilium.stats import wilson

WEIGHTS = {"therapy": 1.00, "surgery": 1.25, "next_action": 1.15, "clinical_trial": 2.00}


def test_four_decision_weighted_mean_excludes_out_of_scope() -> None:
    # (1.00·4/5 + 1.15·3/5) / (1.00 + 1.15) = (0.8 + 0.69) / 2.15
    assert weighted_decisions({"therapy": 4, "surgery": -1, "next_action": 3, "clinical_trial": -1}, WEIGHTS) == \
        pytest.approx(1.49 / 2.15)
    # All four in scope: (0.2 + 1.25 + 0.23 + 2.0) / 5.4
    assert weighted_decisions({"therapy": 1, "surgery": 5, "next_action": 1, "clinical_trial": 5}, WEIGHTS) == \
        pytest.approx(3.68 / 5.4)
    assert weighted_decisions({k: -1 for k in WEIGHTS}, WEIGHTS) is None


def test_signed_score_eq_a7_with_floor() -> None:
    assert signed_score([3, 2, 1.5], majors_present=0, minors_present=1) == pytest.approx(55.0)
    assert signed_score([3, 2, 2, 1.5, 1.5], 0, 0) == pytest.approx(100.0)
    assert signed_score([3], majors_present=2, minors_present=0) == 0.0  # 3 - 4 floored at 0
    assert signed_score([], 0, 0) == 0.0


def test_pass_at_k_and_mean() -> None:
    assert not pass_at_k([False, True, False], 1)
    assert pass_at_k([False, True, False], 2) and pass_at_k([False, True], 5)
    with pytest.raises(ValueError):
        pass_at_k([True], 0)
    assert mean_score([3, None, 2, 1]) == pytest.approx(2.0) and mean_score([None]) is None


def test_wilson_interval_matches_the_formula() -> None:
    low, high = wilson(8, 10)
    assert low is not None and high is not None and (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson(0, 10)[0] == 0.0 and wilson(0, 0) == (None, None)
    low, high = wilson(50, 100)
    assert low is not None and high is not None
    assert (round(low, 4), round(high, 4)) == (0.4038, 0.5962)
