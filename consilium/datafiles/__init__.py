"""Reading a user's data file (YAML or JSON) into a pydantic model, with one-line errors.

Every settings file and every case file is parsed here (:mod:`.reading`), so a mistake always reads
``<file>: <field.path>: <reason>`` and exits 2. The rules every value keeps are in :mod:`.values`;
YAML goes through the alias-bounded loader of :mod:`.strict_yaml`.
"""

from __future__ import annotations

from consilium.datafiles.reading import (
    first_error,
    load_data_file,
    parse_data,
    parse_json,
    parse_yaml,
    read_data_file,
)
from consilium.datafiles.values import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_TEXT_CHARS,
    MAX_VALUES,
    DataError,
    DataSyntaxError,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_TEXT_CHARS",
    "MAX_VALUES",
    "DataError",
    "DataSyntaxError",
    "first_error",
    "load_data_file",
    "parse_data",
    "parse_json",
    "parse_yaml",
    "read_data_file",
]
