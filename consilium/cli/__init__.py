"""Thin command line: each subcommand is its own module with ``register`` and ``run``.

``main(argv) -> int`` is what the tests and in-process callers call; ``run()``, the console entry and
``python -m consilium``, ends the process with its code without the interpreter's teardown
(:mod:`consilium.cli.exiting`). A
:class:`~consilium.errors.UserError` prints one line and returns 2; argparse
errors also return 2 (argparse's own convention). A command line that names a
subcommand builds that subcommand's parser alone, so it imports that command's
module and what it needs, not every other command's (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from consilium.cli.exiting import exit_process
from consilium.cli.table import COMMANDS, SUMMARIES
from consilium.errors import ConsiliumError, UserError
from consilium.log import configure_logging, ensure_log_file, get_logger
from consilium.observe import reset_otel, use_otel
from consilium.redact import RedactingStream
from consilium.version import __version__

__all__ = ["COMMANDS", "SUMMARIES", "build_parser", "command_of", "main", "run", "top_parser"]

#: The top-level options that take a value (the command is the first word that is neither one nor its value).
_VALUED = ("--log-file",)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"consilium.cli.{name}")


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand a command line names (its first word that is not a top-level option or an option's
    value), or None when it names none or one not known."""
    words = iter(argv)
    for word in words:
        if word in _VALUED:
            next(words, None)
        elif word == "--":
            return None
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (a name in :data:`COMMANDS`), that subcommand's alone, so
    no other command's module is imported; without, every command's, each module imported."""
    parser, sub = _top()
    names = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in names:
        _module(name).register(sub)
    _on_every_subcommand(parser)
    return parser


def top_parser() -> argparse.ArgumentParser:
    """The parser of a command line that names no command (``consilium --help``, ``consilium``, a usage error
    before the command): every command by its name and one-line help from :data:`SUMMARIES`, none of their
    modules imported."""
    parser, sub = _top()
    for name, summary in SUMMARIES.items():
        sub.add_parser(name, help=summary, add_help=False)
    return parser


def _top() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    parser = _Parser(
        prog="consilium",
        description="Simulate multidisciplinary clinical deliberation with LLM agents and measure it.",
    )
    parser.add_argument("--version", action="version", version=f"consilium {__version__}")
    _logging_options(parser, top=True)
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)


def _logging_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``-v`` and ``--log-file``: on the top parser with their defaults, and on every subcommand's with no
    default at all (``SUPPRESS``), so ``consilium -v judge …`` and ``consilium judge … -v`` both work and a
    value given before the subcommand is never reset by the subcommand's parser."""
    if any(flag in parser._option_string_actions for flag in ("-v", "--verbose", "--log-file")):
        return  # a subcommand that has its own (none does today) keeps them
    parser.add_argument("-v", "--verbose", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="show info and debug logs on the console")
    parser.add_argument("--log-file", default=None if top else argparse.SUPPRESS,
                        help="JSON-lines log file (default: $CONSILIUM_LOG_FILE, else consilium.log.jsonl in the "
                             "run's folder)")


def _on_every_subcommand(parser: argparse.ArgumentParser) -> None:
    """The logging options on each subcommand's parser, nested ones included (``calibrate agreement``)."""
    seen: set[int] = set()
    todo = [parser]
    while todo:
        for action in todo.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    if id(child) not in seen:  # an alias names the same parser
                        seen.add(id(child))
                        _logging_options(child, top=False)
                        todo.append(child)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Everything it prints passes through :class:`RedactingStream` (no key, no
    URL credentials on the terminal, whatever the path)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)  # type: ignore[assignment]
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def run() -> NoReturn:
    """The ``consilium`` console entry and ``python -m consilium``: :func:`main` on ``sys.argv``, then the
    process ends with its code (:func:`~consilium.cli.exiting.exit_process`)."""
    exit_process(main())


def _main(argv: Sequence[str] | None) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    command = command_of(words)
    try:
        parser = build_parser(command) if command is not None else top_parser()
    except UserError as exc:  # e.g. a plugin that cannot be loaded
        print(f"consilium: error: {_one_line(exc, None)}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code) if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure_logging(verbose=args.verbose, log_file=args.log_file)
    otel = None
    try:
        otel = use_otel(bool(getattr(args, "otel", False)))  # --otel, for this command's runs
        return int(args.func(args))
    except UserError as exc:
        print(f"consilium: error: {_one_line(exc, None)}", file=sys.stderr)
        return 2
    except ConsiliumError as exc:
        print(f"consilium: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("consilium: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away; stop quietly, as Unix tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug or an unforeseen failure: one line here, the traceback in the log
        get_logger("consilium.cli").error("internal_error", command=args.command, exc_info=True, file_only=True)
        where = ensure_log_file()
        logged = f"traceback in {where}" if where is not None else "no log file could be opened"
        print(f"consilium: internal error: {type(exc).__name__}: {_one_line(exc)} ({logged})", file=sys.stderr)
        return 1
    finally:
        if otel is not None:
            reset_otel(otel)


def _one_line(exc: BaseException, limit: int | None = 300) -> str:
    """The first line of an exception's message, cut to ``limit`` characters (pydantic's messages
    run to many lines and quote their input)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return first if limit is None or len(first) <= limit else first[: limit - 1] + "…"
