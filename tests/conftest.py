"""Test-wide guards: no accidental network model calls, no shared cache or log files.

Any socket connection fails unless the test is marked ``localhost`` (it then
may reach 127.0.0.1 / ::1 only, for servers the test itself started).
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.board_cohort import build_board_cohort
from support.cohort_fixture import build_cohort
from support.cohorts import cohort_fixture, copy_cohort
from support.isolation import isolate
from support.localserver import llama_server
from support.panel_judged_cohort import build_panel_judged_cohort

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


# --- the shared cohorts (tests/support/cohorts.py): each run once per session (per xdist worker) and only read;
# a test that writes into one takes copy_cohort(cohort, tmp_path) ---

#: tests/support/cohort_fixture.py's cohort: two scripted panels × both formats × six cases, one arm failed,
#: judged with the AI Consilium rubric (items not evaluable), for the compare, figures, export and run-folder tests.
fixture_cohort = cohort_fixture(build_cohort, name="fixture_cohort")
#: tests/support/board_cohort.py's board cohort judged with the four-decision rubric, for the viewer's and the
#: exports' tests.
four_decision_board = cohort_fixture(build_board_cohort, name="four_decision_board")
#: tests/support/panel_judged_cohort.py's cohort, as run; its tests write into it, so each takes a copy.
panel_judged_source = cohort_fixture(build_panel_judged_cohort, name="panel_judged_source")


@pytest.fixture
def panel_judged_cohort(panel_judged_source: Path, tmp_path: Path) -> Path:
    """A copy of the panel-judged cohort, for a test that judges it again or writes into it."""
    return copy_cohort(panel_judged_source, tmp_path / "copy")


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray of two CPUs, started once per session (per xdist worker) for the tests that run cohorts on
    it, and shut down at the end (unless something else had started it)."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 configure_logging=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def embedded_server_url() -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server running the embedded model on 127.0.0.1, started once per
    session (per xdist worker) for the openai: and LangChain backends' tests; its base URL."""
    if importlib.util.find_spec("llama_cpp.server") is None:
        pytest.skip("llama-cpp-python[server] is not installed")
    from consilium.models.backends.llama import embedded_model_path

    with llama_server(embedded_model_path(), n_ctx=2048) as url:
        yield url
