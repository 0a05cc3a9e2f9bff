"""structlog setup: JSON lines to a file, short readable lines on the console."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import structlog

__all__ = ["configure_logging", "get_logger"]

DEFAULT_LOG_FILE = "runs/consilium.log.jsonl"


def configure_logging(*, verbose: bool = False, log_file: str | None = None) -> Path | None:
    """Route structlog through stdlib logging: JSON to ``log_file``, console to stderr.

    The console shows warnings and errors unless ``verbose``; the file gets
    everything at INFO and above (DEBUG with ``verbose``). Returns the log
    file path, or None when it could not be opened (logging then goes on to
    the console only; a log file is never a reason to fail a run).
    """
    target = log_file or os.environ.get("CONSILIUM_LOG_FILE") or DEFAULT_LOG_FILE
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)

    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(colors=False),
            ],
            foreign_pre_chain=shared,
        )
    )
    root.addHandler(console)

    path: Path | None = Path(target)
    try:
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        path = None
    else:
        file_handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.dict_tracebacks,
                    structlog.processors.JSONRenderer(),
                ],
                foreign_pre_chain=shared,
            )
        )
        root.addHandler(file_handler)
    # Quiet chatty libraries unless asked.
    for name in ("httpx", "httpcore", "openai"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)

    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    return path


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)  # type: ignore[no-any-return]
