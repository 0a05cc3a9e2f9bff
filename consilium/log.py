"""structlog setup: JSON lines into the run's folder, short readable lines on the console.

Where the JSON log goes (docs/reliability.md, "Logs"):

* ``--log-file PATH`` or ``$CONSILIUM_LOG_FILE``: that file, from the start;
* otherwise the run's own folder, ``<run folder>/consilium.log.jsonl``, once the command knows it
  (:func:`attach_run_log`); what was logged before is kept in memory and written there first;
* a command with no run folder keeps no log file, unless it fails with an internal error: its
  traceback then goes to a crash log beside the response cache (:func:`ensure_log_file`).

Nothing in a log carries a frame's local variables, an API key or a URL's credentials
(consilium/redact.py), and no log event carries prompt or case text (traces do, by design).
The console never shows a traceback: an internal error is one line that says where it was logged.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from consilium.redact import redact_value

# structlog imports rich (about 0.15 s of a command's start) for two things consilium never uses: pretty
# tracebacks on the console, which never shows one, and the repr of a frame's locals, which are never logged.
# Where nothing has loaded rich or structlog yet, structlog is imported as if rich were absent, so its plain
# fallbacks are what it has; our output is the same either way (the renderers are configured below).
_WITHOUT_RICH = "rich" not in sys.modules and "structlog" not in sys.modules
if _WITHOUT_RICH:
    sys.modules["rich"] = None  # type: ignore[assignment]  # an import of it raises ImportError
try:
    import structlog
    from structlog.tracebacks import ExceptionDictTransformer
finally:
    if _WITHOUT_RICH:
        del sys.modules["rich"]

__all__ = ["LOG_NAME", "attach_run_log", "configure_logging", "ensure_log_file", "get_logger", "log_file"]

LOG_NAME = "consilium.log.jsonl"
#: Records kept in memory until a run folder (or a crash) gives them a file.
_BUFFER_RECORDS = 20_000


class _State:
    explicit: bool = False
    file_handler: logging.Handler | None = None
    path: Path | None = None
    buffer: logging.handlers.BufferingHandler | None = None
    file_formatter: logging.Formatter | None = None


_state = _State()


def _resolve_exc_info(logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``exc_info=True`` becomes the exception itself now, while it is current (records may be
    formatted later, from the in-memory buffer)."""
    if event.get("exc_info") is True:
        event["exc_info"] = sys.exc_info()
    return event


def _drop_exception(logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The console shows the event, never the traceback (it is in the log file)."""
    for key in ("exc_info", "exception", "stack", "stack_info"):
        event.pop(key, None)
    return event


class _ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record is emitted (the CLI swaps in a redacting stream
    for each command, and tests capture it), never to a stream that has since been closed."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler's __init__ assigns it
        pass


def _console_filter(record: logging.LogRecord) -> bool:
    """Events logged with ``file_only=True`` (an internal error's traceback) stay off the console."""
    return not (isinstance(record.msg, dict) and record.msg.get("file_only"))


def _redact(logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {key: redact_value(value) for key, value in event.items()}


def _file_formatter(shared: list[Any]) -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # Frames without their local variables: locals hold keys, prompts and case text.
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            _redact,
            structlog.processors.JSONRenderer(),
        ],
        foreign_pre_chain=shared,
    )


class _AppendHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A log file opened by us (without following links); closing the handler closes the file."""

    def close(self) -> None:
        try:
            self.flush()
            self.stream.close()
        finally:
            super().close()


def _open_file(path: Path) -> logging.Handler | None:
    """A handler appending to ``path``; None when it cannot be opened, or is a symbolic link (never
    followed: it could point anywhere)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError:
        print(f"consilium: warning: {path}: cannot log there (a symbolic link, or not writable); "
              "logging to the console only", file=sys.stderr)
        return None
    handler = _AppendHandler(os.fdopen(fd, "a", encoding="utf-8"))
    assert _state.file_formatter is not None
    handler.setFormatter(_state.file_formatter)
    return handler


def configure_logging(*, verbose: bool = False, log_file: str | None = None) -> Path | None:
    """Route structlog through stdlib logging: JSON to the log file, console lines to stderr.

    The console shows warnings and errors unless ``verbose``; the file gets everything at INFO and
    above (DEBUG with ``verbose``). Returns the log file when one was named; otherwise records wait
    in memory for :func:`attach_run_log`. A log file is never a reason to fail a run.
    """
    target = log_file or os.environ.get("CONSILIUM_LOG_FILE") or None
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _resolve_exc_info,
    ]
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)

    console = _ConsoleHandler()
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _drop_exception,
                _redact,
                # Its traceback formatter is never reached (_drop_exception): named so that it is rich's nowhere.
                structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
            ],
            foreign_pre_chain=shared,
        )
    )
    console.addFilter(_console_filter)
    root.addHandler(console)

    _state.file_formatter = _file_formatter(shared)
    _state.explicit, _state.path, _state.file_handler, _state.buffer = bool(target), None, None, None
    opened = _open_file(Path(target)) if target else None
    if opened is not None:
        _state.path, _state.file_handler = Path(target or ""), opened
        root.addHandler(opened)
    elif not target:
        _state.buffer = logging.handlers.BufferingHandler(_BUFFER_RECORDS)
        root.addHandler(_state.buffer)
    # Quiet chatty libraries unless asked.
    for name in ("httpx", "httpcore", "openai"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    return _state.path


def _move_to(path: Path) -> Path | None:
    handler = _open_file(path)
    if handler is None:
        return None
    root = logging.getLogger()
    buffer = _state.buffer
    if buffer is not None:
        for record in buffer.buffer:
            handler.handle(record)
        root.removeHandler(buffer)
        buffer.buffer.clear()
        _state.buffer = None
    root.addHandler(handler)
    _state.path, _state.file_handler = path, handler
    return path


def attach_run_log(folder: Path) -> Path | None:
    """Log into ``folder/consilium.log.jsonl`` from now on (with what was logged so far), unless a
    log file was named (``--log-file``, ``$CONSILIUM_LOG_FILE``) or one is already attached. Where logging
    was never configured (the Python API: the caller's logging is its own), nothing is attached."""
    if _state.explicit or _state.file_handler is not None:
        return _state.path
    if _state.file_formatter is None:
        return None
    return _move_to(folder / LOG_NAME)


def log_file() -> Path | None:
    """The log file in use, if any."""
    return _state.path


def crash_log_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "consilium" / "logs"


def ensure_log_file() -> Path | None:
    """The log file, opening a crash log beside the response cache when the command has none yet."""
    if _state.file_handler is not None:
        return _state.path
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return _move_to(crash_log_dir() / f"{stamp}-{os.getpid()}.{LOG_NAME}")


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)  # type: ignore[no-any-return]
