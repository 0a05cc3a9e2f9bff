"""The studio refuses what it cannot honour, in one line and at once: a ``--database`` that names no database
at start, a revoked link on its next request (saying so, not blaming the page), a folder number that is not one
of the served folders, a form's number that is not a whole number. Each against a real server, in process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from consilium.errors import UserError

pytestmark = pytest.mark.localhost  # the studio, on 127.0.0.1


@pytest.mark.parametrize("database", ["bogus://host/db", "{tmp}/no-such-folder/study.sqlite3", "{tmp}"])
async def test_serve_refuses_a_database_that_names_none_before_it_listens(tmp_path: Path, database: str) -> None:
    from consilium.api.serving import ServeOptions, running_studio

    run = tmp_path / "run"
    run.mkdir()
    chosen = database.format(tmp=tmp_path)
    with pytest.raises(UserError, match=r"^--database: "):
        async with running_studio([run], ServeOptions(port=0, database=chosen)):
            pass
    # As users run it: one line naming the flag, exit 2, and no server left listening.
    done = subprocess.run([sys.executable, "-m", "consilium", "serve", str(run), "--port", "0", "--database", chosen],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("consilium: error: --database: ") and "Traceback" not in done.stderr
