"""``simulate --human ROLE``: a person takes a seat on the panel, answering at the terminal or from an answers
file (``--answers FILE``); ``simulate --resume RUN_DIR`` continues such a run where it stopped (docs/human.md).

The run is checkpointed in its folder (``human/``): the settings it was started with (``session.json``), the
LangGraph checkpoints and the model calls made so far, so a run paused at an answer the file lacks, or stopped
with Ctrl-C, resumes without running again what it had done.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, cast

from consilium import aio
from consilium.agents.records import FORMATS
from consilium.cases import Case, load_case
from consilium.cli.human_prompt import TerminalAnswers
from consilium.cli.simulate_run import finish, with_defaults
from consilium.cohort.lock import RunLock
from consilium.cohort.resume import url_given_again
from consilium.cohort.seated import SeatedRun, SeatedSettings
from consilium.cohort.seated_session import HOLDER, SESSION, finished, read_session
from consilium.errors import UserError
from consilium.fileio import make_folder, write_text_atomic
from consilium.graphs.consilium.answers import AnswerRefused, AnswerSource, load_answers
from consilium.log import attach_run_log
from consilium.redact import redact_url
from consilium.traces.io import new_run_id

__all__ = ["add_human_arguments", "run_human"]

#: What a resumed run does not take from the run it resumes.
_NOT_SAVED = ("func", "resume")
#: What a resumed run may be given anew; any other flag must equal the run's own (or be left out).
_FREE = ("answers", "verbose", "log_file", "resume", "human", "func", "command", "model_default", "model_flag")
#: What the parser sets beside the flags (not a flag's value), saved as it is.
_INTERNAL = ("command", "model_default", "model_flag")
#: Model specs that name a file, saved with the file's absolute path.
_FILE_SPECS = ("scripted:", "gguf:", "replay:")


def add_human_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a person at the table (docs/human.md)")
    group.add_argument("--human", metavar="ROLE", default=None,
                       help="a person plays this panel member (a label or category of the assigned panel; a role "
                            "not on it is added): the run pauses for their opinion and votes")
    group.add_argument("--answers", type=Path, metavar="FILE", default=None,
                       help="the person's answers (YAML or JSON: per format, the opinion and the votes by round) "
                            "instead of the terminal")
    group.add_argument("--resume", type=Path, metavar="RUN_DIR", default=None,
                       help="continue a paused or interrupted run with a person at the table (with its settings and "
                            "answers file; --answers names another)")


def run_human(args: argparse.Namespace) -> int:
    """A run with a person at the table, new or resumed. Its folder is locked while it runs (the lock of
    ``cohort``'s folders), so a second ``--resume`` of it, or one of a run still going, is refused at once
    instead of making the same calls twice into one trace."""
    if args.resume is not None:
        run_dir: Path = args.resume
        if not (run_dir / "human" / SESSION).is_file():
            raise UserError(f"{run_dir}: --resume: not a run with a person at the table (no human/{SESSION})")
        with RunLock(run_dir, holder=HOLDER):
            resumed, case = _resumed(args, run_dir)
            return _seated(resumed, case, run_dir, new=False)
    if args.human is None:
        raise UserError("--answers: the answers are a person's: give --human ROLE too")
    if args.case is None:
        raise UserError("--case: a case file is required (or --resume RUN_DIR to continue a paused run)")
    args = with_defaults(args)
    case = load_case(args.case)
    return _seated(args, case, args.out / new_run_id(case.id), new=True)


def _seated(args: argparse.Namespace, case: Case, folder: Path, *, new: bool) -> int:
    from consilium.graphs.consilium.human_run import CHECKPOINTS, HumanRun  # LangGraph on use

    seated = SeatedRun.prepare(SeatedSettings.of(vars(args)))  # as the studio's resume runs it (cohort/seated.py)
    human = HumanRun(args.human, _source(args), folder / "human")
    with contextlib.ExitStack() as held:
        if new:  # a resumed run's folder is locked already
            held.enter_context(RunLock(make_folder(folder), holder=HOLDER))
        attach_run_log(make_folder(folder))
        if new:  # the checkpoint database first: a run whose settings are saved always has one
            (make_folder(folder / "human") / CHECKPOINTS).touch()
            _save_session(folder / "human", args, case)
        resume = f"consilium simulate --resume {folder}"
        try:
            traces = aio.run(seated.run(case, folder, human))
        except KeyboardInterrupt:
            print(f"consilium: interrupted; the run is checkpointed: resume it with `{resume}`", file=sys.stderr)
            return 130
        except AnswerRefused as exc:  # over its length budget: the run waits at that prompt, checkpointed
            fix = f"correct {args.answers} and " if args.answers else ""
            raise UserError(f"{exc}; the run is paused there: {fix}resume it with `{resume}`") from None
        if human.paused:
            fill = f"add the answer to {args.answers} and " if args.answers else ""
            more = f" (and {len(human.paused) - 1} more)" if len(human.paused) > 1 else ""
            raise UserError(f"{human.paused[0]}{more}; the run is paused there: {fill}resume it with `{resume}`")
        return finish(args, seated.protocol, folder.name, case, list(traces), seated.config)


def _source(args: argparse.Namespace) -> AnswerSource:
    if args.answers is not None:
        return load_answers(args.answers)  # its shape is checked before anything runs
    if not sys.stdin.isatty():
        raise UserError("--human: stdin is not a terminal: give the person's answers with --answers FILE")
    return TerminalAnswers(sys.stdin, sys.stderr)


def _absolute(value: Any) -> Any:
    """A path, or a model spec naming an existing file, with the file's absolute path (so that a resume from
    another folder finds it); anything else as it is."""
    if isinstance(value, Path):
        return str(value.expanduser().resolve())
    if isinstance(value, str):
        for prefix in _FILE_SPECS:
            named = Path(value.removeprefix(prefix)).expanduser()
            if value.startswith(prefix) and named.exists():
                return prefix + str(named.resolve())
    return value


def _save_session(folder: Path, args: argparse.Namespace, case: Case) -> None:
    """The run's settings (its command line, parsed, paths absolute, a server URL's credentials masked: they are
    given again on resume) and its case, which ``--resume`` runs with."""
    values = {k: v for k, v in vars(args).items() if k not in _NOT_SAVED}
    if values.get("base_url"):
        values["base_url"] = redact_url(values["base_url"])
    paths = sorted(k for k, v in values.items() if isinstance(v, Path))
    saved = {"args": {k: _absolute(v) for k, v in values.items()}, "paths": paths,
             "case": case.model_dump(mode="json"), "case_hash": case.content_hash()}
    write_text_atomic(make_folder(folder) / SESSION, json.dumps(saved, indent=2) + "\n")


def _simulate_parser() -> argparse.ArgumentParser:
    from consilium.cli import build_parser  # the parser of simulate, for its flags, types and defaults

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return cast(argparse.ArgumentParser, sub.choices["simulate"])


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """simulate's options by their ``args`` name (the first of two that share one)."""
    flags: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if action.option_strings:
            flags.setdefault(action.dest, action)
    return flags


def _read_session(path: Path) -> tuple[dict[str, Any], dict[str, Any], Case]:
    """The saved settings as saved and each read as its flag would read it on a command line, and the case: one
    line naming the file and field if the file was edited into something the run could not have saved."""
    saved, case = read_session(path)  # its shape and case (cohort/seated_session.py)
    flags = _flags(_simulate_parser())
    values: dict[str, Any] = {}
    for key, value in saved.items():
        if key in _INTERNAL:
            values[key] = value
            continue
        action = flags.get(key)
        if action is None:
            raise UserError(f"{path}: args.{key}: not a setting of simulate")
        values[key] = _setting(action, value, f"{path}: args.{key}")
    # Every setting is saved: one left out would be taken from the defaults (a server URL from the environment)
    missing = sorted(key for key, action in flags.items()
                     if key not in saved and key not in _FREE and action.default is not argparse.SUPPRESS)
    if missing:
        raise UserError(f"{path}: args.{missing[0]}: missing (the run saved every setting it was started with; "
                        "edited since?)")
    if not isinstance(values.get("human"), str) or not values["human"].strip():
        raise UserError(f"{path}: args.human: the role the person plays is missing")
    return saved, values, case


def _setting(action: argparse.Action, value: Any, where: str) -> Any:
    """A saved setting as its flag reads it (a path as a Path): refused if the flag would refuse it."""
    if value is None or value == action.default:
        return value
    if action.nargs == 0:  # --no-cache, --otel: on or off
        if not isinstance(value, bool):
            raise UserError(f"{where}: true or false, not {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise UserError(f"{where}: not a value {action.option_strings[0]} takes ({value!r})")
    convert = action.type if callable(action.type) else str
    try:
        typed = convert(str(value))
    except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
        raise UserError(f"{where}: {exc}") from None
    if action.choices is not None and typed not in action.choices:
        raise UserError(f"{where}: {value!r} is not one of {', '.join(map(str, action.choices))}")
    return typed


def _resumed(args: argparse.Namespace, run_dir: Path) -> tuple[argparse.Namespace, Case]:
    """The settings and case of the run ``--resume`` names; ``--answers`` may name a new file, and a server URL
    whose credentials were masked takes them from ``--base-url`` or ``$OPENAI_BASE_URL`` again."""
    from consilium.graphs.consilium.human_run import CHECKPOINTS  # LangGraph on use

    path = run_dir / "human" / SESSION
    saved, values, case = _read_session(path)
    database = run_dir / "human" / CHECKPOINTS
    if not database.is_file():
        raise UserError(f"{database}: missing: without the run's checkpoint, resuming would make its model calls "
                        "again; start the run again")
    _check_unchanged(args, saved)
    formats = list(FORMATS) if values.get("format") in (None, "both") else [values["format"]]
    if finished(run_dir, formats):
        raise UserError(f"{run_dir}: --resume: the run is already finished (every format's trace is there); "
                        f"`consilium replay {run_dir}` reproduces it")
    if args.human is not None and " ".join(args.human.split()) != " ".join(str(values["human"]).split()):
        raise UserError(f"--human: the resumed run's seat is {values['human']!r}; it cannot change")
    answers = args.answers if args.answers is not None else values.get("answers")  # else the run's own file
    base_url = url_given_again(values.get("base_url"), args.base_url, os.environ.get("OPENAI_BASE_URL"),
                               "the run's")
    resumed = argparse.Namespace(**{**vars(args), **values, "out": run_dir.parent, "resume": run_dir,
                                    "answers": answers, "base_url": base_url})
    return with_defaults(resumed), case


def _check_unchanged(args: argparse.Namespace, saved: dict[str, Any]) -> None:
    """A flag typed with ``--resume`` (any but --answers, --human, -v and --log-file) must say what the run's
    own setting says: the resumed run keeps its settings, and a changed one would be ignored. Every flag of
    simulate is left unset when not typed (``simulate_run.DEFAULTS``), so a flag typed with its default value
    is compared too. A server URL is compared as saved, its credentials masked."""
    flags = _flags(_simulate_parser())
    for key, given in vars(args).items():
        action = flags.get(key)
        if key in _FREE or action is None or given == action.default:
            continue
        as_saved = redact_url(given) if key == "base_url" else _absolute(given)
        if as_saved == saved.get(key):
            continue
        flag = action.option_strings[0]
        if action.nargs == 0:  # --no-cache, --otel: on or off
            own = flag if saved.get(key) else f"no {flag}"
        else:
            own = f"{flag} {saved[key]}" if saved.get(key) is not None else f"no {flag}"
        raise UserError(f"{flag}: --resume continues the run with its own settings (it was started with {own}); "
                        "give no other flags than --answers, -v and --log-file")
