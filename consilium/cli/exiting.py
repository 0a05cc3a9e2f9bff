"""Ending the ``consilium`` process without the interpreter's teardown.

A command that has run LangGraph, LangChain core, LangSmith, pydantic and aiohttp holds about 1,300
modules and 140,000 objects. When it returns, CPython clears every module and frees every object one by
one before the process ends: about 0.45 s of CPU on the 2-core reference machine, after the command's
last file was written and its last line printed (docs/performance.md, "The cohort command as a process").
Nothing of it is seen: the process has said and written everything.

:func:`exit_process` does what the interpreter's exit does that can matter, in its order, then ends the
process at once: when another (non-daemon) thread still runs, it leaves by ``sys.exit`` so the interpreter
waits for that thread as it always does; otherwise it runs the ``atexit`` functions (logging's flush and
close, the response cache's last flush, weakref finalizers such as temporary folders' clean-up, a
coverage tool's save), flushes standard output and error, and calls ``os._exit`` with the command's code.
Under ``python -X dev`` the full teardown is kept, so its ResourceWarnings still show. Only the console
entry and ``python -m consilium`` end this way; :func:`consilium.cli.main` returns as before, for tests and
callers that run a command in their own process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

__all__ = ["exit_process"]


def _threads_still_running() -> bool:
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` once every thread, exit function and output stream is done."""
    if sys.flags.dev_mode or _threads_still_running():
        sys.exit(code)
    atexit._run_exitfuncs()
    if _threads_still_running():  # an exit function started one: let the interpreter wait for it
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:  # e.g. absl's log handler closes stderr at logging's shutdown
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away: as the interpreter does, the exit status is 120
            code = 120
    os._exit(code)
