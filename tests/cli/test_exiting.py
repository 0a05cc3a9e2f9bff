"""The process's end (consilium/cli/exiting.py): the command's code, every line it printed, every exit
function and every running thread are kept; only the interpreter's teardown is skipped, and ``-X dev`` keeps
it. Each case runs in a fresh interpreter, as the console entry does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# A module-level object whose finaliser writes a file: it runs only when the interpreter tears its modules
# down, which exit_process skips. The rest is what an ending process must still do.
_SCRIPT = """
import atexit, sys, threading, time
from pathlib import Path
from consilium.cli.exiting import exit_process

out, mode, code = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])

class Finalised:
    def __del__(self):
        (out / "teardown").write_text("ran")

kept = Finalised()
atexit.register(lambda: (out / "atexit").write_text("ran"))

def late():
    time.sleep(0.3)
    (out / "thread").write_text("done")

if mode == "thread":
    threading.Thread(target=late).start()
if mode == "exit-function-thread":
    atexit.register(lambda: threading.Thread(target=late).start())
if mode == "exit-function-closes-stderr":  # as absl's log handler does at logging's shutdown
    atexit.register(sys.stderr.close)
sys.stdout.write("printed without a newline, still in the buffer")
sys.stderr.write("and a warning")
exit_process(code)
"""


def _run(tmp_path: Path, mode: str, code: int, *flags: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "end.py"
    script.write_text(_SCRIPT)
    return subprocess.run([sys.executable, *flags, str(script), str(tmp_path), mode, str(code)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("code", [0, 1, 2])
def test_the_process_ends_with_its_code_its_output_and_its_exit_functions_but_no_teardown(
        tmp_path: Path, code: int) -> None:
    done = _run(tmp_path, "plain", code)
    assert done.returncode == code
    assert done.stdout == "printed without a newline, still in the buffer"
    assert done.stderr == "and a warning"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()  # the modules were not torn down


def test_a_thread_still_running_is_waited_for_by_the_interpreter(tmp_path: Path) -> None:
    done = _run(tmp_path, "thread", 3)
    assert done.returncode == 3
    assert (tmp_path / "thread").read_text() == "done"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert done.stdout.startswith("printed without")


def test_a_thread_an_exit_function_starts_is_waited_for_too(tmp_path: Path) -> None:
    done = _run(tmp_path, "exit-function-thread", 0)
    assert done.returncode == 0
    assert (tmp_path / "thread").read_text() == "done"


def test_a_standard_stream_an_exit_function_closed_is_left_alone(tmp_path: Path) -> None:
    done = _run(tmp_path, "exit-function-closes-stderr", 0)
    assert done.returncode == 0
    assert done.stdout.startswith("printed without") and done.stderr == "and a warning"


def test_python_dev_mode_keeps_the_full_teardown(tmp_path: Path) -> None:
    done = _run(tmp_path, "plain", 1, "-X", "dev")
    assert done.returncode == 1
    assert (tmp_path / "teardown").read_text() == "ran"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_python_m_consilium_ends_with_the_commands_code_and_whole_lines(tmp_path: Path) -> None:
    usage = subprocess.run([sys.executable, "-m", "consilium", "cohort", "--no-such-flag"],
                           capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2
    assert usage.stderr.strip().splitlines()[-1].endswith("unrecognized arguments: --no-such-flag")
    assert "Traceback" not in usage.stderr
    missing = tmp_path / "nowhere.yaml"
    failed = subprocess.run([sys.executable, "-m", "consilium", "simulate", "--case", str(missing)],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2
    assert str(missing.name) in failed.stderr and "Traceback" not in failed.stderr
    version = subprocess.run([sys.executable, "-m", "consilium", "--version"], capture_output=True, text=True,
                             timeout=120)
    assert version.returncode == 0 and version.stdout.strip()
