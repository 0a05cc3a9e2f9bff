"""The studio as users run it: ``python -m consilium serve … --port 0`` in its own process on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Served", "served"]

_LINE = re.compile(r"^consilium serve: (?P<url>http://\S+/) \(administrator: (?P<admin>\S+)\)$")


@dataclass(frozen=True)
class Served:
    url: str
    admin_link: str
    process: subprocess.Popen[str]
    log: Path


@contextmanager
def served(*runs: Path, database: str | None = None, log: Path | None = None,
           extra: tuple[str, ...] = ()) -> Iterator[Served]:
    """A running ``consilium serve`` over ``runs``; its stderr goes to ``log`` (checked for secrets by tests)."""
    log = log or runs[0].parent / "serve.log"
    argv = [sys.executable, "-m", "consilium", "serve", *map(str, runs), "--port", "0", *extra]
    if database:
        argv += ["--database", database]
    with log.open("a") as err:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            assert process.stdout is not None
            first = process.stdout.readline().strip()
            found = _LINE.match(first)
            if found is None:
                process.kill()
                raise AssertionError(f"serve did not start: {first!r}; {log.read_text()[-2000:]}")
            yield Served(found["url"], found["admin"], process, log)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
