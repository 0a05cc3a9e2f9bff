"""``simulate --human ROLE``: a person takes a seat on the panel, answering at the terminal or from an answers
file (``--answers FILE``); ``simulate --resume RUN_DIR`` continues such a run where it stopped (docs/human.md).

The run is checkpointed in its folder (``human/``): the settings it was started with (``session.json``), the
LangGraph checkpoints and the model calls made so far, so a run paused at an answer the file lacks, or stopped
with Ctrl-C, resumes without running again what it had done.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from consilium import aio
from consilium.agents.records import FORMATS, Format
from consilium.cases import Case, load_case
from consilium.cli.human_prompt import TerminalAnswers
from consilium.cli.options import model_options, model_spec
from consilium.errors import UserError
from consilium.fileio import make_folder, write_text_atomic
from consilium.log import attach_run_log
from consilium.models.factory import build_model
from consilium.protocols.base import RunModels
from consilium.protocols.consilium.answers import AnswerRefused, AnswerSource, load_answers
from consilium.protocols.consilium.config import ConsiliumConfig
from consilium.protocols.consilium.human_run import HumanRun, check_config, run_with_person
from consilium.protocols.consilium.trace import Trace
from consilium.protocols.registry import get_protocol
from consilium.traces.io import new_run_id

__all__ = ["add_human_arguments", "run_human"]

SESSION = "session.json"
#: What a resumed run does not take from the run it resumes.
_NOT_SAVED = ("func", "resume")
#: What a resumed run may be given anew; any other flag must equal the run's own (or be left out).
_FREE = ("answers", "verbose", "log_file", "resume", "human", "func", "command", "model_default", "model_flag")
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
    from consilium.cli import simulate_cmd  # it hands human runs to this module

    if args.resume is not None:
        args, run_id, case = _resumed(args)
    else:
        if args.human is None:
            raise UserError("--answers: the answers are a person's: give --human ROLE too")
        if args.case is None:
            raise UserError("--case: a case file is required (or --resume RUN_DIR to continue a paused run)")
        case = load_case(args.case)
        run_id = new_run_id(case.id)
    protocol = get_protocol(args.protocol)
    if protocol.name != "consilium":
        raise UserError(f"--human: only the consilium protocol seats a person (not {protocol.name!r})")
    config = simulate_cmd._config(args, protocol)
    assert isinstance(config, ConsiliumConfig)
    check_config(config)
    folder: Path = args.out / run_id
    human = HumanRun(args.human, _source(args), folder / "human")
    formats: list[Format] = list(FORMATS) if args.format == "both" else [args.format]
    options = model_options(args)
    panel = build_model(model_spec(args), options)
    moderator = build_model(args.moderator_model, options) if args.moderator_model else panel
    attach_run_log(make_folder(folder))
    if not (folder / "human" / SESSION).exists():
        _save_session(folder / "human", args, case)
    resume = f"consilium simulate --resume {folder}"
    try:
        traces = aio.run(_run(case, formats, RunModels(panel=panel, moderator=moderator), config, run_id, human))
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
    return simulate_cmd.finish(args, protocol, run_id, case, list(traces), config)


def _source(args: argparse.Namespace) -> AnswerSource:
    if args.answers is not None:
        return load_answers(args.answers)  # its shape is checked before anything runs
    if not sys.stdin.isatty():
        raise UserError("--human: stdin is not a terminal: give the person's answers with --answers FILE")
    return TerminalAnswers(sys.stdin, sys.stderr)


async def _run(case: Case, formats: list[Format], models: RunModels, config: ConsiliumConfig, run_id: str,
               human: HumanRun) -> list[Trace]:
    try:
        return await run_with_person(case, formats, models, config, run_id=run_id, human=human)
    finally:
        await models.panel.aclose()
        if models.moderator is not models.panel:
            await models.moderator.aclose()


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
    """The run's settings (its command line, parsed, paths absolute) and its case, which ``--resume`` runs
    with."""
    values = {k: v for k, v in vars(args).items() if k not in _NOT_SAVED}
    paths = sorted(k for k, v in values.items() if isinstance(v, Path))
    saved = {"args": {k: _absolute(v) for k, v in values.items()}, "paths": paths,
             "case": case.model_dump(mode="json")}
    write_text_atomic(make_folder(folder) / SESSION, json.dumps(saved, indent=2) + "\n")


def _resumed(args: argparse.Namespace) -> tuple[argparse.Namespace, str, Case]:
    """The settings, run id and case of the run ``--resume`` names; ``--answers`` may name a new file."""
    run_dir: Path = args.resume
    path = run_dir / "human" / SESSION
    try:
        saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{run_dir}: --resume: not a run with a person at the table (no human/{SESSION})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read the run's settings ({exc})") from None
    values = dict(saved["args"])
    _check_unchanged(args, values)
    formats = list(FORMATS) if values.get("format") == "both" else [values.get("format")]
    if all(any(run_dir.glob(f"*.{fmt}.trace.json")) for fmt in formats):
        raise UserError(f"{run_dir}: --resume: the run is already finished (every format's trace is there); "
                        f"`consilium replay {run_dir}` reproduces it")
    for key in saved["paths"]:
        values[key] = Path(values[key])
    if args.human is not None and " ".join(args.human.split()) != " ".join(str(values["human"]).split()):
        raise UserError(f"--human: the resumed run's seat is {values['human']!r}; it cannot change")
    answers = args.answers if args.answers is not None else values.get("answers")  # else the run's own file
    resumed = argparse.Namespace(**{**vars(args), **values, "out": run_dir.parent, "resume": run_dir,
                                    "answers": answers})
    return resumed, run_dir.name, Case.model_validate(saved["case"])


def _check_unchanged(args: argparse.Namespace, saved: dict[str, Any]) -> None:
    """A flag given with ``--resume`` (any but --answers, --human, -v and --log-file) must equal the run's
    own setting: the resumed run keeps its settings, and a changed one would be ignored."""
    from consilium.cli import build_parser  # the parser of simulate, for its defaults and flag names

    simulate = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[
        "simulate"]
    flags = {a.dest: a.option_strings[0] for a in simulate._actions if a.option_strings}
    defaults = vars(simulate.parse_args([]))
    for key, given in vars(args).items():
        if key in _FREE or given == defaults.get(key) or _absolute(given) == saved.get(key):
            continue
        flag = flags.get(key, key)
        own = f"{flag} {saved[key]}" if saved.get(key) is not None else f"no {flag}"
        raise UserError(f"{flag}: --resume continues the run with its own settings (it was started with {own}); "
                        "give no other flags than --answers, -v and --log-file")
