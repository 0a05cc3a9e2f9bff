"""``consilium cases``: validate case files and import external case collections.

``cases validate PATH...`` prints one ``file: field.path: reason`` line per
problem and a summary, and exits 2 if any file is invalid; ``cases import
agentclinic FILE.jsonl --out DIR`` converts AgentClinic OSCE vignettes into
case files; ``cases import table FILE --mapping MAP.yaml --out DIR`` converts a
researcher's own JSON, JSONL or CSV table.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from consilium.cli.options import show_help
from consilium.cli.table import SUMMARIES

__all__ = ["register", "run_import_agentclinic", "run_import_table", "run_validate"]


def register(subparsers: Any) -> None:
    """Add the ``cases`` command and its subcommands to the top-level parser."""
    cases = subparsers.add_parser(
        "cases",
        help=SUMMARIES["cases"],
        description="Validate case files and import external case collections as case files.",
    )
    cases.set_defaults(func=show_help(cases))
    sub = cases.add_subparsers(dest="cases_command", metavar="SUBCOMMAND")

    validate = sub.add_parser(
        "validate",
        help="check case files and print every problem as 'file: field.path: reason'",
        description="Check case files (.json, .yaml, .yml, any letter case); directories are searched "
        "recursively, skipping hidden files and folders, exactly as cohort --cases reads them.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="case file or directory of case files")
    validate.set_defaults(func=run_validate)

    importer = sub.add_parser("import", help="convert an external case collection into case files")
    importer.set_defaults(func=show_help(importer))
    sources = importer.add_subparsers(dest="import_source", metavar="SOURCE")
    agentclinic = sources.add_parser(
        "agentclinic",
        help="AgentClinic OSCE JSONL (one vignette per line) -> one diagnostic case file each",
        description="Convert AgentClinic OSCE JSONL records into diagnostic case files.",
    )
    agentclinic.add_argument("file", metavar="FILE.jsonl", help="AgentClinic OSCE JSONL file")
    agentclinic.add_argument("--out", required=True, metavar="DIR", help="directory for the case files")
    agentclinic.add_argument(
        "--format", dest="fmt", choices=("json", "yaml"), default="json", help="case file format (default: json)"
    )
    _add_force(agentclinic)
    agentclinic.set_defaults(func=run_import_agentclinic)
    otb = sources.add_parser(
        "opentumorboard",
        help="OpenTumorBoard's released data (task1, task2, test_inputs; gzip or not) -> one tumor-board case each",
        description="Convert OpenTumorBoard's released data folder (or one of its files) into tumor-board case "
        "files: each recorded case with its summary, slides, the board's conclusion and every answered question "
        "as reference answers (docs/opentumorboard.md).",
    )
    otb.add_argument("source", metavar="DATA", help="the dataset's data/ folder, or one of its .jsonl(.gz) files")
    otb.add_argument("--out", required=True, metavar="DIR", help="directory for the case files")
    otb.add_argument("--slides", metavar="DIR", help="folder of the slide images (the README's 'slides' link); "
                                                     "without it the slides are captions only")
    otb.add_argument(
        "--format", dest="fmt", choices=("json", "yaml"), default="yaml", help="case file format (default: yaml)"
    )
    _add_force(otb)
    otb.set_defaults(func=run_import_opentumorboard)
    table = sources.add_parser(
        "table",
        help="your own JSON, JSONL or CSV table -> one case file per good record, as a mapping file says",
        description="Convert the records of a JSON (a list, or a list under a key), JSONL or CSV file into case "
        "files, mapping columns to case fields as MAP.yaml says (docs/cases.md). A record that fails is one line "
        "'file: record N (...): field: reason' and is not written; the exit status is 2 if any record failed. A "
        "mapped source that no record has stops the import with nothing written; a record that lacks one is "
        "written without it, with a line saying so.",
    )
    table.add_argument("file", metavar="FILE", help="data file: .json, .jsonl or .csv")
    table.add_argument("--mapping", required=True, metavar="MAP.yaml", help="mapping file (docs/cases.md)")
    table.add_argument("--out", required=True, metavar="DIR", help="directory for the case files")
    table.add_argument(
        "--format", dest="fmt", choices=("json", "yaml"), default="json", help="case file format (default: json)"
    )
    _add_force(table)
    table.set_defaults(func=run_import_table)


def _add_force(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="overwrite case files of the same ids in DIR (an earlier import); without it, "
                             "an import into a folder that has one is refused with nothing written")


def run_validate(args: argparse.Namespace) -> int:
    """Validate every case file named or found under the given paths; 0 if all are valid, else 2."""
    from consilium.api.casefiles import validate_cases

    done = validate_cases(args.paths)
    for problem in done.problems:
        print(problem)
    print(f"{done.checked} file{'' if done.checked == 1 else 's'}, {done.invalid} invalid")
    return 0 if done.valid else 2


def run_import_agentclinic(args: argparse.Namespace) -> int:
    """Import an AgentClinic JSONL file; a malformed line stops the import before anything is written."""
    from consilium.api.casefiles import ImportOptions, import_agentclinic

    written = import_agentclinic(args.file, ImportOptions(out=args.out, fmt=args.fmt, force=args.force))
    print(f"wrote {len(written)} case{'' if len(written) == 1 else 's'} to {args.out}")
    return 0


def run_import_table(args: argparse.Namespace) -> int:
    """Import a table by a mapping; each failed record, and each record written without a mapped source, is one
    line on stderr (in record order), and any failure makes it exit 2."""
    from consilium.api.casefiles import ImportOptions, import_table

    result = import_table(args.file, args.mapping, ImportOptions(out=args.out, fmt=args.fmt, force=args.force))
    for line in sorted([*result.problems, *result.notes], key=lambda p: p.record):
        print(line, file=sys.stderr)
    written, failed = len(result.written), len(result.problems)
    lacking = len({note.record for note in result.notes})
    tail = f"; {lacking} record{' lacks' if lacking == 1 else 's lack'} a mapped source" if lacking else ""
    tail += f"; {failed} record{'' if failed == 1 else 's'} failed" if failed else ""
    print(f"wrote {written} case{'' if written == 1 else 's'} to {args.out}{tail}")
    return 2 if failed else 0


def run_import_opentumorboard(args: argparse.Namespace) -> int:
    """Import OpenTumorBoard's released data; a malformed record stops the import before anything is written."""
    from consilium.api.casefiles import ImportOptions, import_opentumorboard

    written = import_opentumorboard(args.source, ImportOptions(out=args.out, fmt=args.fmt, force=args.force),
                                    slides=args.slides)
    print(f"wrote {len(written)} case{'' if len(written) == 1 else 's'} to {args.out}")
    return 0
