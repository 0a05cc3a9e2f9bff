"""Test-wide guards: no accidental network model calls, no shared cache or log files.

Any socket connection fails unless the test is marked ``localhost`` (it then
may reach 127.0.0.1 / ::1 only, for servers the test itself started).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.isolation import isolate

SHARED = Path(__file__).resolve().parents[2] / "shared"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class NetworkBlocked(RuntimeError):
    """Raised by the conftest guard when a test reaches for the network."""


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture(autouse=True)
def _network_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    allow_loopback = request.node.get_closest_marker("localhost") is not None
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = address[0] if isinstance(address, tuple) else str(address)
        if allow_loopback and host in _LOOPBACK:
            return
        raise NetworkBlocked(f"network call to {address!r} blocked by tests/conftest.py "
                             "(mark the test 'localhost' to reach a server it started on 127.0.0.1)")

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        original_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return original_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield


def shared_data(name: str) -> Path:
    """A file from ../shared/data, or skip the test with the reason."""
    path = SHARED / "data" / name
    if not path.is_file():
        pytest.skip(f"../shared/data/{name} is not present beside the repository")
    return path


@pytest.fixture(scope="session")
def four_decision_board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/support/board_cohort.py's board cohort, run once for the viewer's and the exports' tests; a test that
    writes into it works on ``board_cohort.copy_run``'s copy."""
    from support.board_cohort import build_board_cohort

    return build_board_cohort(tmp_path_factory.mktemp("four-decision-board"))


@pytest.fixture
def panel_judged_cohort(tmp_path: Path) -> Path:
    """tests/support/panel_judged_cohort.py's cohort, a fresh one for each test (the tests write into it)."""
    from support.panel_judged_cohort import build_panel_judged_cohort

    return build_panel_judged_cohort(tmp_path)
