from __future__ import annotations

import pytest

from consilium.errors import BudgetExceededError
from consilium.models import Usage, UsageLedger


def test_usage_adds_field_by_field() -> None:
    a = Usage(input_tokens=10, output_tokens=3, cached_tokens=2, calls=1)
    b = Usage(input_tokens=5, output_tokens=7, calls=1, estimated=True)
    total = a + b
    assert (total.input_tokens, total.output_tokens, total.cached_tokens, total.calls) == (15, 10, 2, 2)
    assert total.estimated and total.total_tokens == 25
    assert sum([a, b]) == total
    assert Usage.total([]) == Usage()


def test_ledger_groups_by_stage_role_and_round() -> None:
    ledger = UsageLedger()
    ledger.add(Usage(input_tokens=10, output_tokens=1, calls=1), stage="opinion", role="cardiology", round=None)
    ledger.add(Usage(input_tokens=20, output_tokens=2, calls=1), stage="opinion", role="neurology", round=None)
    ledger.add(Usage(input_tokens=30, output_tokens=3, calls=1), stage="vote", role="cardiology", round=1)
    assert ledger.by_stage()["opinion"] == Usage(input_tokens=30, output_tokens=3, calls=2)
    assert ledger.by_role()["cardiology"].input_tokens == 40
    assert ledger.by_round() == {"-": Usage(input_tokens=30, output_tokens=3, calls=2),
                                 "1": Usage(input_tokens=30, output_tokens=3, calls=1)}
    assert Usage.total(ledger.by_stage().values()) == ledger.total == Usage(input_tokens=60, output_tokens=6, calls=3)


def test_budget_stops_before_the_call() -> None:
    ledger = UsageLedger(budget_tokens=50)
    ledger.check_budget("opinion", projected=50)
    ledger.add(Usage(input_tokens=30, output_tokens=5, calls=1), stage="opinion")
    ledger.check_budget("vote", projected=15)
    with pytest.raises(BudgetExceededError, match=r"budget of 50 would be exceeded by a 'vote' call \(35 tokens"):
        ledger.check_budget("vote", projected=16)
