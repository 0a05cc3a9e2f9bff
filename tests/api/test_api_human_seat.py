"""A person's seat from the Python API (consilium/api/runs.py): whether a protocol seats a person is asked of its
declaration (``Protocol.analyses``, ``human_seat``), as ``simulate --human`` asks it, not of its name."""

from __future__ import annotations

from pathlib import Path

import pytest

import consilium
from consilium.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "examples" / "cases" / "diagnostic-myocarditis.yaml"
PANEL = f"scripted:{ROOT / 'examples' / 'models' / 'scripted-panel.yaml'}"
NEEDS = ("lacks what a person's seat needs: a panel member whose opinion and votes a person can write instead "
         "(its Protocol.analyses does not list 'human_seat')")


@pytest.mark.parametrize("protocol, given", [("single", {"human": "Internist", "answers": {}}),
                                             ("board", {"human": "Cardiologist"}),
                                             ("single", {"answers": {"opinion": "x"}})])
def test_a_protocol_that_declares_no_seat_is_refused_by_its_declaration(tmp_path: Path, protocol: str,
                                                                        given: dict[str, object]) -> None:
    with pytest.raises(UserError) as refused:
        consilium.run(CASE, protocol=protocol, model=PANEL, out=tmp_path / "out", **given)  # type: ignore[arg-type]
    assert str(refused.value) == f"human: protocol {protocol!r} {NEEDS}"
    assert not (tmp_path / "out").exists()


def test_the_consilium_declares_a_seat_and_still_asks_for_both_role_and_answers(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^human: give both the role \(human=\) and the person's answers"):
        consilium.run(CASE, model=PANEL, human="Cardiologist", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
