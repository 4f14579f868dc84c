"""The plugin installs as a command and generates for a project outside this repo.

``pip install ./plugin`` into a fresh virtual environment installs
``sqlc-gen-jobtable``; a project in a temporary directory, with its own
sqlc.yaml, schema and queries, generates with that command alone (plugin/
is not on PATH), and the output imports and runs under the environment's
own Python, which has nothing but the standard library.
"""

import os
import pathlib
import subprocess
import sys

import pytest
from plugin_harness import PLUGIN_DIR, tool

SQLC_YAML = """\
version: "2"
plugins:
  - name: py
    process:
      cmd: sqlc-gen-jobtable
      format: json
sql:
  - engine: sqlite
    schema: db/schema.sql
    queries: db/queries.sql
    codegen:
      - plugin: py
        out: app/db
        options:
          emit_schema: true
"""
SCHEMA = """\
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    pinned BOOLEAN NOT NULL DEFAULT 0
);
"""
QUERIES = """\
-- name: AddNote :execlastid
INSERT INTO notes (body, pinned) VALUES (?, ?);

-- name: PinnedNotes :many
SELECT * FROM notes WHERE pinned ORDER BY id;

-- name: NotesIn :many
SELECT body FROM notes WHERE id IN (sqlc.slice(ids)) ORDER BY id;
"""
PROGRAM = """\
import sqlite3
from app.db import models, queries, schema

conn = sqlite3.connect(":memory:")
conn.executescript(schema.SCHEMA)
q = queries.Querier(conn)
first = q.add_note(body="a", pinned=True)
second = q.add_note(body="b", pinned=False)
assert q.pinned_notes() == [models.Note(id=first, body="a", pinned=True)]
assert q.notes_in(ids=[second, first]) == ["a", "b"]
print("ok")
"""


def _run(args: list[str], cwd: pathlib.Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_installed_command_generates_a_project_outside_the_repo(tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    _run([str(venv / "bin" / "pip"), "install", "--quiet", str(PLUGIN_DIR)], tmp_path, env)
    command = venv / "bin" / "sqlc-gen-jobtable"
    assert command.is_file()
    # The command runs under the environment's Python, not whatever python3 is on PATH.
    assert command.read_text().startswith(f"#!{venv / 'bin' / 'python'}")
    project = tmp_path / "project"
    (project / "db").mkdir(parents=True)
    (project / "sqlc.yaml").write_text(SQLC_YAML)
    (project / "db" / "schema.sql").write_text(SCHEMA)
    (project / "db" / "queries.sql").write_text(QUERIES)
    (project / "app").mkdir()
    (project / "app" / "__init__.py").write_text("")
    # Only the environment's bin holds the command: plugin/ is not on PATH.
    path_env = {**env, "PATH": os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])}
    _run([tool("sqlc"), "generate"], project, path_env)
    assert sorted(p.name for p in (project / "app" / "db").iterdir()) == [
        "__init__.py",
        "models.py",
        "queries.py",
        "schema.py",
    ]
    (project / "main.py").write_text(PROGRAM)
    assert _run([str(venv / "bin" / "python"), "main.py"], project, path_env) == "ok\n"
